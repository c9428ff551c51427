/* test_walk.c - smaps_rollup walkers in both styles against writers at the resume point, fallback, and a waiting writer. */
#include <criterion/criterion.h>

#include "walk_scenarios.h"

TestSuite(walk, .init = harness_watchdog);

#define OK(r) cr_assert((r).s.ok, "%s", (r).s.why)

static void resume(enum walk_style style, enum walk_change change,
		   unsigned long size, unsigned long resident, unsigned long inside)
{
	struct walk_result r;

	scn_walk_resume(style, change, &r);
	OK(r);
	cr_assert_eq(r.mss.size, PG(size), "%s: size %lu pages, want %lu",
		     walk_style_name(style), r.mss.size / PAGE_SIZE, size);
	cr_assert_eq(r.mss.resident, PG(resident), "%s: resident %lu pages, want %lu",
		     walk_style_name(style), r.mss.resident / PAGE_SIZE, resident);
	cr_assert_eq(r.mss.nr_resumed_inside, inside);
	cr_assert_eq(r.mss.last_vma_end, r.recount.last_vma_end);
}

/* E A [hole->A] B C D: A grows over the hole and B, 8 pages reported once. */
Test(walk, mmap_lock_walk_resumes_inside_a_grown_vma)
{
	resume(WALK_MMAP, CHANGE_GROW, 24, 20, 1);
}

Test(walk, vma_walk_resumes_inside_a_grown_vma)
{
	resume(WALK_VMA, CHANGE_GROW, 24, 20, 1);
}

Test(walk, mmap_lock_walk_skips_an_unmapped_next_vma)
{
	resume(WALK_MMAP, CHANGE_UNMAP, 16, 16, 0);
}

Test(walk, vma_walk_skips_an_unmapped_next_vma)
{
	resume(WALK_VMA, CHANGE_UNMAP, 16, 16, 0);
}

Test(walk, mmap_lock_walk_sees_a_split_next_vma_whole)
{
	resume(WALK_MMAP, CHANGE_SPLIT, 20, 20, 0);
}

Test(walk, vma_walk_sees_a_split_next_vma_whole)
{
	resume(WALK_VMA, CHANGE_SPLIT, 20, 20, 0);
}

Test(walk, vma_walk_falls_back_to_mmap_lock_for_a_write_locked_vma)
{
	struct walk_result r;

	scn_walk_fallback(false, &r);
	OK(r);
	cr_assert_eq(r.mss.size, r.recount.size);
	cr_assert_eq(r.mss.resident, r.recount.resident);
	cr_assert_eq(r.mss.nr_fallbacks, 1);
	cr_assert_eq(r.mss.nr_vma_locked, 2);	/* E, A */
	cr_assert_eq(r.mss.nr_mmap_locked, 3);	/* B, C, D */
}

Test(walk, vma_walk_takes_vma_locks_again_after_dropping_mmap_lock)
{
	struct walk_result r;

	scn_walk_fallback(true, &r);
	OK(r);
	cr_assert(r.walker_first);
	cr_assert_eq(r.mss.size, r.recount.size);
	cr_assert_eq(r.mss.nr_drops, 1);
	cr_assert_eq(r.mss.nr_vma_locked, 4);	/* E, A, C, D */
	cr_assert_eq(r.mss.nr_mmap_locked, 1);	/* B */
}

Test(walk, vma_walk_does_not_skip_a_vma_split_off_below_the_one_it_locks)
{
	struct walk_result r;

	scn_walk_split_below(&r);
	OK(r);
	cr_assert_eq(r.mss.size, PG(20), "reported %lu pages, want 20",
		     r.mss.size / PAGE_SIZE);
	cr_assert_eq(r.mss.resident, r.recount.resident);
	cr_assert_eq(r.mss.nr_fallbacks, 1, "lock_next_vma() should send the walk to mmap_lock");
}

Test(walk, writer_waits_for_the_vma_the_walker_holds)
{
	struct walk_result r;

	scn_walk_writer_waits(&r);
	OK(r);
	cr_assert(r.writer_blocked);
	cr_assert_eq(r.mss.size, r.recount.size);
	cr_assert_eq(r.mss.resident, r.recount.resident);
	cr_assert_eq(r.mss.nr_mmap_locked, 0);
}
