/* test_scan.c: budget, passes and rotation of the 6.12 scanner on hand-checked layouts. */
#include "helpers.h"

static void setup(void) { khugepaged_model_reset(); }

TestSuite(scan, .init = setup);

/*
 * Budget: progress starts at 1 (trylock taken), +1 per ineligible VMA,
 * +512 per PMD; compared with pages_to_scan (4096) only after a PMD.
 */
static uint64_t pmds_in_one_pass(unsigned long k)
{
	struct mm_struct *mm = one_mm(k, "HHHHHHHHHHHHHHHH", NULL);

	khugepaged_do_scan();
	cr_assert_eq(model_stats.scan_calls, 1);
	cr_assert_eq(model_stats.vma_visits, k + 1);
	mm_free(mm);
	return model_stats.pmds_scanned;
}

Test(scan, budget_8_pmds_without_ineligible_vmas)
{
	/* 1 + 7*512 = 3585 < 4096 <= 1 + 8*512 */
	cr_assert_eq(pmds_in_one_pass(0), 8);
	cr_assert_eq(khugepaged_scan.address, eligible_start(0) + 8 * HPAGE_PMD_SIZE);
	cr_assert_not_null(khugepaged_scan.mm_slot, "budget stop keeps the mm");
}

Test(scan, budget_3582_ineligible_leave_two_pmds)
{
	/* 1 + 3582 + 512 = 4095: one more PMD fits */
	cr_assert_eq(pmds_in_one_pass(3582), 2);
}

Test(scan, budget_3583_ineligible_leave_one_pmd)
{
	/* 1 + 3583 + 512 = 4096: the budget is spent */
	cr_assert_eq(pmds_in_one_pass(3583), 1);
}

Test(scan, budget_not_checked_while_skipping)
{
	/* 10001 > 4096 long before the eligible VMA: still one PMD scanned */
	cr_assert_eq(pmds_in_one_pass(10000), 1);
}

Test(scan, ineligible_only_mm_is_one_full_scan)
{
	struct mm_struct *mm = one_mm(100, NULL, NULL);

	khugepaged_do_scan();
	cr_assert_eq(model_stats.scan_calls, 1, "head passed twice: stop");
	cr_assert_eq(khugepaged_full_scans, 1);
	cr_assert_null(khugepaged_scan.mm_slot);
	mm_free(mm);
}

Test(scan, collapse_drops_lock_and_ends_the_call)
{
	struct mm_struct *mm = one_mm(0, "cccc", NULL);
	struct model_result r;

	r = khugepaged_run(10, NULL, NULL);
	cr_assert(r.collapsed);
	cr_assert_eq(r.passes, 1);
	/* 4 collapses (one call each) + 1 call that finds no VMA left */
	cr_assert_eq(model_stats.scan_calls, 5);
	cr_assert_eq(model_stats.trylocks, 5);
	/* each collapse: visit 90 + scan 5000 + collapse 200000 ns */
	cr_assert_eq(r.collapse_ns, 4 * (90 + 5000 + 200000));
	cr_assert_eq(khugepaged_pages_collapsed, 4);
	mm_free(mm);
}

Test(scan, eight_collapses_per_pass)
{
	struct mm_struct *mm = one_mm(0, "cccccccccccccccccccc", NULL);
	struct model_result r;

	/* 7 * 513 = 3591 < 4096 <= 8 * 513: 8, 8, then 4 */
	r = khugepaged_run(10, NULL, NULL);
	cr_assert(r.collapsed);
	cr_assert_eq(r.passes, 3);
	cr_assert_eq(r.collapse_ns, 2 * 10000000000ULL + 20 * 205090ULL);
	mm_free(mm);
}

Test(scan, uncollapsible_ranges_cost_budget_but_keep_the_lock)
{
	struct mm_struct *mm = one_mm(0, "uuuuuuuuuc", NULL);

	khugepaged_do_scan();	/* 8 'u' use the budget under one hold */
	cr_assert_eq(model_stats.pmds_scanned, 8);
	cr_assert_eq(model_stats.trylocks, 1);
	cr_assert_eq(model_stats.longest_hold_ns, 90 + 8 * 5000);
	cr_assert_eq(mm->nr_collapsible, 1);
	khugepaged_do_scan();	/* resumes at the 9th range */
	cr_assert_eq(mm->nr_collapsible, 0);
	mm_free(mm);
}

Test(scan, trylock_failure_rotates_to_next_mm)
{
	struct mm_struct *a = one_mm(0, "cc", NULL);
	struct mm_struct *b = one_mm(0, "cc", NULL);

	model_trylock_script("F");
	khugepaged_do_scan();
	cr_assert_eq(a->nr_collapsible, 2, "a was skipped on contention");
	cr_assert_eq(b->nr_collapsible, 0);
	cr_assert_eq(model_stats.trylock_fails, 1);
	mm_free(a);
	mm_free(b);
}

Test(scan, exiting_mm_slot_is_collected)
{
	struct mm_struct *mm = one_mm(0, "cc", NULL);

	mm->exiting = true;
	khugepaged_do_scan();
	cr_assert(list_empty(&khugepaged_scan.mm_head));
	cr_assert_null(khugepaged_scan.mm_slot);
	cr_assert_eq(model_stats.collapses, 0);
	mm_free(mm);
}

Test(scan, full_contention_never_collapses)
{
	struct mm_struct *mm = one_mm(10, "cc", NULL);
	struct model_result r;

	model_contention = 1.0;
	r = khugepaged_run(50, NULL, NULL);
	cr_assert_not(r.collapsed);
	cr_assert_eq(r.passes, 50);
	cr_assert_eq(model_stats.trylocks, model_stats.trylock_fails);
	mm_free(mm);
}
