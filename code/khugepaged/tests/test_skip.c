/* test_skip.c: patch 5's skip batch bounds the read-lock hold and retakes without stealing. */
#include "helpers.h"

static void setup(void)
{
	khugepaged_model_reset();
	khugepaged_cursor_policy = CURSOR_PER_SLOT;	/* patch 5 sits on patch 2 */
}

TestSuite(skip, .init = setup);

Test(skip, without_batch_one_hold_covers_every_vma)
{
	struct mm_struct *mm = one_mm(5000, "c", NULL);

	khugepaged_do_scan();
	cr_assert_eq(model_stats.longest_hold_vmas, 5001);
	/* 5001 visits and the PTE scan; the collapse runs unlocked */
	cr_assert_eq(model_stats.longest_hold_ns, 5001 * 90 + 5000);
	cr_assert_eq(model_stats.skip_batches, 0);
	mm_free(mm);
}

Test(skip, batch_bounds_hold_to_batch_vmas)
{
	struct mm_struct *mm = one_mm(5000, "c", NULL);

	khugepaged_max_skip_batch = KHUGEPAGED_MAX_SKIP_BATCH;
	khugepaged_do_scan();
	cr_assert_eq(model_stats.skip_batches, 4, "5000 / 1024 retakes");
	cr_assert_eq(model_stats.nosteal_locks, 4);
	cr_assert_eq(model_stats.read_locks, 0);
	cr_assert_eq(model_stats.longest_hold_vmas, 1024);
	cr_assert_eq(model_stats.longest_hold_ns, 1024 * 90);
	cr_assert_eq(model_stats.vma_visits, 5001, "no VMA walked twice");
	cr_assert_eq(mm->nr_collapsible, 0);
	mm_free(mm);
}

Test(skip, batch_counts_skips_across_eligible_vmas)
{
	struct mm_struct *mm = one_mm(1000, "H", NULL);

	khugepaged_max_skip_batch = KHUGEPAGED_MAX_SKIP_BATCH;
	mm_add_ineligible(mm, 1000);
	khugepaged_do_scan();	/* 1000 + 1000 skipped in one call: one retake */
	cr_assert_eq(model_stats.skip_batches, 1);
	mm_free(mm);
}

Test(skip, queued_writer_goes_first_on_retake)
{
	struct mm_struct *mm = one_mm(3000, "c", NULL);

	khugepaged_max_skip_batch = KHUGEPAGED_MAX_SKIP_BATCH;
	mm->writer_arrives_at = 100;
	khugepaged_do_scan();
	cr_assert_eq(model_stats.steals, 0);
	cr_assert_eq(model_stats.writer_runs, 1);
	/* it waited for the rest of the first batch only */
	cr_assert_eq(model_stats.longest_writer_wait_ns, (1024 - 100) * 90);
	mm_free(mm);
}

Test(skip, retake_resumes_at_next_pmd_boundary)
{
	struct mm_struct *mm = mm_alloc();

	/* 4 one-page VMAs inside one 2 MiB range, then a huge one */
	mm_add_ineligible(mm, 4);
	mm_add_eligible(mm, "c");
	khugepaged_enter(mm);
	khugepaged_max_skip_batch = 2;
	khugepaged_do_scan();
	/* after the 2nd, address = ALIGN(vm_end, 2 MiB): the 3rd and 4th
	 * are never visited -- patch 5 resumes at mm_slot->address */
	cr_assert_eq(model_stats.vma_visits, 2 + 1);
	cr_assert_eq(mm->nr_collapsible, 0);
	mm_free(mm);
}

static void unmap_some(struct mm_struct *mm, void *arg)
{
	(void)arg;
	/* munmap ineligible VMAs 1500..1999 (addresses from mm_add_ineligible) */
	cr_assert_eq(mm_unmap(mm, 4 * MiB + 1500 * 2 * PAGE_SIZE,
			      4 * MiB + 2000 * 2 * PAGE_SIZE), 500);
}

Test(skip, walk_is_revalidated_after_a_writer_changed_the_tree)
{
	struct mm_struct *mm = one_mm(3000, "c", NULL);

	khugepaged_max_skip_batch = KHUGEPAGED_MAX_SKIP_BATCH;
	mm->writer_arrives_at = 10;
	mm->writer = unmap_some;
	khugepaged_do_scan();
	cr_assert_eq(model_stats.writer_runs, 1);
	cr_assert_eq(model_stats.stale_iter, 0);
	/*
	 * 2500 VMAs left + the eligible one, less 12: the second retake
	 * follows VMA 2547, in the middle of a 2 MiB range, and resumes at
	 * the next boundary (VMA 2560), as patch 5 does.
	 */
	cr_assert_eq(model_stats.vma_visits, 2500 + 1 - 12, "visits %llu",
		     (unsigned long long)model_stats.vma_visits);
	cr_assert_eq(mm->nr_collapsible, 0);
	mm_free(mm);
}
