/* grader.c: lab 02 -- tests for the skip batch (TODO 1: when; TODO 2: drop and retake). */
#include "helpers.h"

static void setup(void)
{
	khugepaged_model_reset();
	khugepaged_cursor_policy = CURSOR_PER_SLOT;	/* patch 5 sits on patch 2 */
	khugepaged_max_skip_batch = KHUGEPAGED_MAX_SKIP_BATCH;
}

TestSuite(lab02, .init = setup, .timeout = 20);

/* ---- TODO 1: counting skipped VMAs ---------------------------------- */

Test(lab02, todo1_due_after_exactly_batch_skips)
{
	unsigned int skipped = 0;

	khugepaged_max_skip_batch = 4;
	for (int round = 0; round < 3; round++) {
		for (int i = 1; i < 4; i++)
			cr_assert_not(khugepaged_skip_batch_due(&skipped),
				      "round %d: due after only %d skips", round, i);
		cr_assert(khugepaged_skip_batch_due(&skipped),
			  "round %d: not due after 4 skips with a batch of 4", round);
	}
}

/* The knob may be lowered between two calls (it is a sysfs file in the kernel). */
Test(lab02, todo1_batch_lowered_below_the_count_is_due_at_once)
{
	unsigned int skipped = 0;

	khugepaged_max_skip_batch = 8;
	for (int i = 1; i <= 5; i++)
		cr_assert_not(khugepaged_skip_batch_due(&skipped), "due after only %d of 8 skips", i);
	khugepaged_max_skip_batch = 2;
	cr_assert(khugepaged_skip_batch_due(&skipped),
		  "6 VMAs skipped and the batch is now 2: due at once (count up to the batch "
		  "or beyond it, not exactly to it)");
	cr_assert_not(khugepaged_skip_batch_due(&skipped), "the count did not restart");
}

/*
 * Lowered to 4 after 5 skips: the 6th is due at once, and the count
 * restarts there. A count that never restarts, taken modulo the batch,
 * would be due only at multiples of 4 (8, 12, ...).
 */
Test(lab02, todo1_batch_lowered_to_a_non_divisor_restarts_the_count)
{
	unsigned int skipped = 0;

	khugepaged_max_skip_batch = 8;
	for (int i = 1; i <= 5; i++)
		cr_assert_not(khugepaged_skip_batch_due(&skipped), "due after only %d of 8 skips", i);
	khugepaged_max_skip_batch = 4;
	cr_assert(khugepaged_skip_batch_due(&skipped),
		  "6 VMAs skipped and the batch is now 4: due at once (the count is at or past "
		  "the batch; a running count taken modulo the batch is not due until 8)");
	for (int i = 1; i <= 3; i++)
		cr_assert_not(khugepaged_skip_batch_due(&skipped),
			      "due again after %d skips: the count did not restart at 0 when the "
			      "batch was due", i);
	cr_assert(khugepaged_skip_batch_due(&skipped), "not due 4 skips after the last batch");
}

Test(lab02, todo1_batch_of_one_is_due_every_time)
{
	unsigned int skipped = 0;

	khugepaged_max_skip_batch = 1;
	for (int i = 0; i < 10; i++)
		cr_assert(khugepaged_skip_batch_due(&skipped));
}

Test(lab02, todo1_batch_zero_means_off)
{
	unsigned int skipped = 0;

	khugepaged_max_skip_batch = 0;
	for (int i = 0; i < 100000; i++)
		cr_assert_not(khugepaged_skip_batch_due(&skipped),
			      "batch 0 (6.12 behaviour) must never drop the lock");
}

Test(lab02, todo1_walk_of_5000_ineligible_vmas_makes_4_batches)
{
	struct mm_struct *mm = one_mm(5000, "c", NULL);

	khugepaged_do_scan();
	cr_assert_eq(model_stats.skip_batches, 4, "5000 / 1024 = 4, got %llu",
		     (unsigned long long)model_stats.skip_batches);
	mm_free(mm);
}

/* ---- TODO 2: dropping and retaking the lock --------------------------- */

Test(lab02, todo2_hold_is_bounded_by_the_batch)
{
	struct mm_struct *mm = one_mm(5000, "c", NULL);

	khugepaged_do_scan();
	cr_assert_eq(model_stats.longest_hold_vmas, 1024,
		     "longest hold %llu VMA visits, want 1024",
		     (unsigned long long)model_stats.longest_hold_vmas);
	cr_assert_eq(model_stats.longest_hold_ns, 1024 * 90);
	cr_assert_eq(mm->nr_collapsible, 0, "the eligible VMA was still collapsed");
	mm_free(mm);
}

Test(lab02, todo2_retake_does_not_steal_from_a_queued_writer)
{
	struct mm_struct *mm = one_mm(5000, "c", NULL);

	mm->writer_arrives_at = 100;	/* a writer queues during the walk */
	khugepaged_do_scan();
	cr_assert_eq(model_stats.read_locks, 0,
		     "mmap_read_lock() may steal: use mmap_read_lock_nosteal()");
	cr_assert_eq(model_stats.nosteal_locks, 4);
	cr_assert_eq(model_stats.steals, 0);
	cr_assert_eq(model_stats.writer_runs, 1, "the writer never got in");
	cr_assert_eq(model_stats.longest_writer_wait_ns, (1024 - 100) * 90);
	mm_free(mm);
}

Test(lab02, todo2_walk_continues_where_it_stopped)
{
	struct mm_struct *mm = one_mm(5000, "c", NULL);

	khugepaged_do_scan();
	cr_assert_eq(model_stats.runaway_walks, 0, "the walk went round in circles");
	cr_assert_eq(model_stats.vma_visits, 5001,
		     "each VMA once: got %llu visits",
		     (unsigned long long)model_stats.vma_visits);
	cr_assert_eq(model_stats.nosteal_locks, 4);
	mm_free(mm);
}

static void munmap_500(struct mm_struct *mm, void *arg)
{
	(void)arg;
	mm_unmap(mm, 4 * MiB + 1500 * 2 * PAGE_SIZE, 4 * MiB + 2000 * 2 * PAGE_SIZE);
}

Test(lab02, todo2_walk_is_revalidated_after_the_writer)
{
	struct mm_struct *mm = one_mm(3000, "c", NULL);

	mm->writer_arrives_at = 10;
	mm->writer = munmap_500;	/* munmap()s VMAs 1500..1999 */
	khugepaged_do_scan();
	cr_assert_eq(model_stats.writer_runs, 1);
	cr_assert_eq(model_stats.stale_iter, 0,
		     "the VMA walk went on with a walk state from before the writer");
	/* 2500 left + the eligible one, less 12 VMAs skipped by the ALIGN */
	cr_assert_eq(model_stats.vma_visits, 2500 + 1 - 12);
	cr_assert_eq(mm->nr_collapsible, 0);
	mm_free(mm);
}

Test(lab02, todo2_million_vmas_hold_stays_short)
{
	struct mm_struct *mm = one_mm(1000000, "c", NULL);

	khugepaged_do_scan();
	/* 6.12: ~90 ms in this model; patch 5: ~92 us */
	cr_assert_leq(model_stats.longest_hold_ns, 1024 * 90);
	cr_assert_eq(model_stats.skip_batches, 976);
	mm_free(mm);
}
