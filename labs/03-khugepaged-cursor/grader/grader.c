/* grader.c: lab 03 -- tests for patch 2's per-slot cursor (TODO 1: save; TODO 2: restore). */
#include "helpers.h"

static void setup(void)
{
	khugepaged_model_reset();
	khugepaged_cursor_policy = CURSOR_PER_SLOT;
}

TestSuite(lab03, .init = setup, .timeout = 20);

#define PMD HPAGE_PMD_SIZE

/* ---- TODO 1: saving the position in the mm's slot --------------------- */

Test(lab03, todo1_saved_when_the_budget_runs_out)
{
	struct khugepaged_mm_slot *slot;
	struct mm_struct *mm = one_mm(0, "HHHHHHHHHH", &slot);

	khugepaged_do_scan();	/* 1 + 8 * 512 >= 4096: stops after 8 PMDs */
	cr_assert_eq(slot->address, eligible_start(0) + 8 * PMD,
		     "slot->address = %#lx", slot->address);
	mm_free(mm);
}

Test(lab03, todo1_saved_when_a_collapse_drops_the_lock)
{
	struct khugepaged_mm_slot *slot;
	struct mm_struct *mm = one_mm(1000, "cccc", &slot);

	khugepaged_scan_mm_slot(4096, &(int){ 0 });	/* one call: one collapse */
	cr_assert_eq(mm->nr_collapsible, 3);
	cr_assert_eq(slot->address, eligible_start(1000) + PMD,
		     "slot->address = %#lx", slot->address);
	mm_free(mm);
}

Test(lab03, todo1_each_mm_keeps_its_own_position)
{
	struct khugepaged_mm_slot *sa, *sb;
	struct mm_struct *a = one_mm(0, "HHHHHHHHHH", &sa);
	struct mm_struct *b = one_mm(100, "HHHHHHHHHH", &sb);

	khugepaged_scan_mm_slot(4096, &(int){ 0 });	/* a: 8 PMDs */
	khugepaged_scan.mm_slot = sb;			/* move on to b */
	khugepaged_scan_mm_slot(4096, &(int){ 0 });	/* b: 101 + 8 PMDs */
	cr_assert_eq(sa->address, eligible_start(0) + 8 * PMD);
	cr_assert_eq(sb->address, eligible_start(100) + 8 * PMD);
	mm_free(a);
	mm_free(b);
}

Test(lab03, todo1_per_slot_policy_leaves_the_global_cursor_alone)
{
	struct mm_struct *mm = one_mm(0, "HHHHHHHHHH", NULL);

	khugepaged_do_scan();
	cr_assert_eq(khugepaged_scan.address, 0,
		     "CURSOR_PER_SLOT must not use khugepaged_scan.address");
	mm_free(mm);
}

/* ---- TODO 2: resuming from it ------------------------------------------ */

Test(lab03, todo2_resumes_after_a_failed_trylock)
{
	struct khugepaged_mm_slot *slot;
	struct mm_struct *mm = one_mm(1000, "cccccccc", &slot);
	uint64_t visits;

	model_trylock_script("SSF");
	khugepaged_do_scan();	/* 2 collapses, then contention */
	cr_assert_eq(slot->address, eligible_start(1000) + 2 * PMD,
		     "a failed trylock must not lose the position");
	visits = model_stats.vma_visits;
	khugepaged_do_scan();
	cr_assert_eq(model_stats.vma_visits - visits, 6,
		     "%llu VMA visits: the 1000 ineligible VMAs were walked again?",
		     (unsigned long long)(model_stats.vma_visits - visits));
	cr_assert_eq(mm->nr_collapsible, 0);
	mm_free(mm);
}

Test(lab03, todo2_two_passes_instead_of_three)
{
	struct mm_struct *mm = one_mm(1000, "cccccccc", NULL);
	struct model_result r;

	model_trylock_script("SSF");
	r = khugepaged_run(10, NULL, NULL);
	cr_assert(r.collapsed);
	cr_assert_eq(r.passes, 2, "%llu passes (6.12's global cursor needs 3)",
		     (unsigned long long)r.passes);
	mm_free(mm);
}

Test(lab03, todo2_resumes_each_mm_after_rotation)
{
	struct khugepaged_mm_slot *sa;
	struct mm_struct *a = one_mm(0, "HHHHHHHHHHHc", &sa);
	struct mm_struct *b = one_mm(0, "c", NULL);

	khugepaged_do_scan();	/* a: 8 huge PMDs, budget spent */
	model_trylock_script("F");
	/*
	 * a: contention, rotate to b; b: collapse, end of b; back to a from
	 * the list head: PMDs 8..11 (not 0..11), end of a; b once more.
	 */
	khugepaged_do_scan();
	cr_assert_eq(b->nr_collapsible, 0);
	cr_assert_eq(a->nr_collapsible, 0, "a restarted from 0 and ran out of budget");
	cr_assert_eq(model_stats.pmds_scanned, 8 + 1 + 4 + 1,
		     "%llu PMDs scanned", (unsigned long long)model_stats.pmds_scanned);
	mm_free(a);
	mm_free(b);
}

Test(lab03, todo2_random_contention_walks_the_small_vmas_rarely)
{
	struct mm_struct *mm = one_mm(2000, "cccccccccccccccccccccccccccccccc", NULL);
	struct model_result r;

	model_contention = 0.5;
	model_seed(3);
	r = khugepaged_run(100000, NULL, NULL);
	cr_assert(r.collapsed);
	/* once at the start and once at the end of the mm, not per failure */
	cr_assert_lt(model_stats.vma_visits, 2 * 2000 + 1000,
		     "%llu VMA visits for %llu failed trylocks",
		     (unsigned long long)model_stats.vma_visits,
		     (unsigned long long)model_stats.trylock_fails);
	mm_free(mm);
}
