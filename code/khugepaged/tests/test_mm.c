/* test_mm.c: the model's building blocks -- layouts, iterator, lock, contention source. */
#include "helpers.h"

static void setup(void) { khugepaged_model_reset(); }

TestSuite(mm, .init = setup);

Test(mm, layout_addresses)
{
	struct mm_struct *mm = mm_alloc();

	mm_add_ineligible(mm, 3);
	cr_assert_eq(mm_add_eligible(mm, "cuH"), eligible_start(3));
	cr_assert_eq(mm->nr_vmas, 4);
	cr_assert_eq(mm->vmas[2].vm_start, 4 * MiB + 4 * PAGE_SIZE);
	cr_assert_eq(mm->nr_collapsible, 1);
	cr_assert_eq(mm_pmd_state(mm, eligible_start(3) + HPAGE_PMD_SIZE),
		     PMD_UNCOLLAPSIBLE);
	cr_assert_eq(mm_pmd_state(mm, eligible_start(3) + 2 * HPAGE_PMD_SIZE),
		     PMD_HUGE);
	mm_free(mm);
}

Test(mm, iterator_starts_at_vma_containing_address)
{
	struct mm_struct *mm = mm_alloc();
	struct vma_iterator vmi;
	struct vm_area_struct *vma;

	mm_add_ineligible(mm, 10);
	mm->read_locked = true;
	vma_iter_init(&vmi, mm, 4 * MiB + 5 * 2 * PAGE_SIZE + 100);
	vma = vma_next(&vmi);
	cr_assert_eq(vma->vm_start, 4 * MiB + 5 * 2 * PAGE_SIZE);
	mm->read_locked = false;
	mm_free(mm);
}

Test(mm, stale_iterator_is_counted)
{
	struct mm_struct *mm = mm_alloc();
	struct vma_iterator vmi;

	mm_add_ineligible(mm, 10);
	mm->read_locked = true;
	vma_iter_init(&vmi, mm, 0);
	vma_next(&vmi);
	mm_unmap(mm, 4 * MiB, 4 * MiB + 4 * PAGE_SIZE);
	vma_next(&vmi);
	cr_assert_eq(model_stats.stale_iter, 1);
	vma_iter_set(&vmi, 0);
	vma_next(&vmi);
	cr_assert_eq(model_stats.stale_iter, 1);
	mm->read_locked = false;
	mm_free(mm);
}

Test(mm, plain_read_lock_steals_from_queued_writer)
{
	struct mm_struct *mm = mm_alloc();

	mmap_writer_arrives(mm);
	mmap_read_lock(mm);
	cr_assert_eq(model_stats.steals, 1);
	cr_assert(mm->writer_queued);
	mmap_read_unlock(mm);
	mmap_read_lock_nosteal(mm);
	cr_assert_eq(model_stats.writer_runs, 1);
	cr_assert_not(mm->writer_queued);
	mmap_read_unlock(mm);
	mm_free(mm);
}

Test(mm, trylock_script_then_probability)
{
	struct mm_struct *mm = mm_alloc();

	model_trylock_script("FSF");
	cr_assert_not(mmap_read_trylock(mm));
	cr_assert(mmap_read_trylock(mm));
	mmap_read_unlock(mm);
	cr_assert_not(mmap_read_trylock(mm));
	model_contention = 1.0;
	cr_assert_not(mmap_read_trylock(mm));
	model_contention = 0.0;
	cr_assert(mmap_read_trylock(mm));
	mmap_read_unlock(mm);
	cr_assert_eq(model_stats.trylock_fails, 3);
	mm_free(mm);
}

Test(mm, contention_probability_is_respected)
{
	unsigned int fails = 0;

	model_contention = 0.25;
	model_seed(7);
	for (int i = 0; i < 100000; i++)
		fails += !model_trylock_outcome();
	cr_assert(fails > 24000 && fails < 26000, "fails = %u", fails);
}

Test(mm, hold_is_measured_on_the_model_clock)
{
	struct mm_struct *mm = mm_alloc();

	cr_assert(mmap_read_trylock(mm));
	model_clock_advance(1234);
	mmap_read_unlock(mm);
	cr_assert_eq(model_stats.longest_hold_ns, 1234);
	mm_free(mm);
}
