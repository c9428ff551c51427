/* test_cursor.c: 6.12's global cursor restarts an mm at 0 after contention; patch 2's per-slot cursor resumes. */
#include "helpers.h"

static void setup(void) { khugepaged_model_reset(); }

TestSuite(cursor, .init = setup);

/*
 * Layout: 1000 ineligible VMAs, then 8 collapsible ranges; the third
 * mmap_read_trylock() fails.  Worked by hand in README.md.
 */
static struct model_result run_sff(enum khugepaged_cursor_policy policy,
				   struct khugepaged_mm_slot **slotp,
				   struct mm_struct **mmp)
{
	khugepaged_cursor_policy = policy;
	*mmp = one_mm(1000, "cccccccc", slotp);
	model_trylock_script("SSF");
	khugepaged_do_scan();
	/* pass 1: two collapses, then the failed trylock ends the pass */
	cr_assert_eq((*mmp)->nr_collapsible, 6);
	cr_assert_eq(model_stats.trylock_fails, 1);
	cr_assert_null(khugepaged_scan.mm_slot, "contention rotated the cursor");
	return khugepaged_run(10, NULL, NULL);
}

Test(cursor, global_cursor_restarts_from_zero_after_trylock_failure)
{
	struct khugepaged_mm_slot *slot;
	struct mm_struct *mm;
	struct model_result r;
	uint64_t visits;

	khugepaged_cursor_policy = CURSOR_GLOBAL_RESET;
	mm = one_mm(1000, "cccccccc", &slot);
	model_trylock_script("SSF");
	khugepaged_do_scan();
	/* the next pass picks the mm from the list head: address = 0 */
	visits = model_stats.vma_visits;
	khugepaged_do_scan();
	/* re-walks all 1000 ineligible VMAs and re-scans 2 huge PMDs */
	cr_assert_eq(model_stats.vma_visits - visits, 1000 + 5);
	cr_assert_eq(model_stats.pmds_scanned, 2 + 2 + 5);
	cr_assert_eq(mm->nr_collapsible, 1);
	r = khugepaged_run(10, NULL, NULL);
	cr_assert(r.collapsed);
	cr_assert_eq(model_stats.passes, 3);
	mm_free(mm);
}

Test(cursor, per_slot_cursor_resumes_after_trylock_failure)
{
	struct khugepaged_mm_slot *slot;
	struct mm_struct *mm;
	uint64_t visits;

	khugepaged_cursor_policy = CURSOR_PER_SLOT;
	mm = one_mm(1000, "cccccccc", &slot);
	model_trylock_script("SSF");
	khugepaged_do_scan();
	cr_assert_eq(slot->address, eligible_start(1000) + 2 * HPAGE_PMD_SIZE);
	visits = model_stats.vma_visits;
	khugepaged_do_scan();
	/* 6 calls that each visit the eligible VMA, 1 that finds no VMA */
	cr_assert_eq(model_stats.vma_visits - visits, 6);
	cr_assert_eq(mm->nr_collapsible, 0, "done in the second pass");
	cr_assert_eq(slot->address, 0, "every VMA examined: reset");
	mm_free(mm);
}

Test(cursor, passes_to_collapse_global_vs_per_slot)
{
	struct khugepaged_mm_slot *slot;
	struct mm_struct *mm;
	struct model_result r;

	r = run_sff(CURSOR_GLOBAL_RESET, &slot, &mm);
	cr_assert_eq(model_stats.passes, 3);
	cr_assert(r.collapsed);
	mm_free(mm);

	khugepaged_model_reset();
	r = run_sff(CURSOR_PER_SLOT, &slot, &mm);
	cr_assert_eq(model_stats.passes, 2);
	cr_assert(r.collapsed);
	mm_free(mm);
}

Test(cursor, per_slot_skips_to_next_candidate)
{
	struct khugepaged_mm_slot *slot;
	struct mm_struct *mm;

	khugepaged_cursor_policy = CURSOR_PER_SLOT;
	mm = one_mm(3, NULL, &slot);
	mm_add_eligible(mm, "HHHHHHHHHH");
	mm_add_ineligible(mm, 1);
	khugepaged_do_scan();	/* budget ends the pass inside the VMA */
	cr_assert_eq(slot->address, eligible_start(3) + 8 * HPAGE_PMD_SIZE);
	/* 2 PMDs, the ineligible VMA, end of the mm: reset */
	cr_assert_eq(khugepaged_scan_mm_slot(4096, &(int){ 0 }), 1 + 1024 + 1);
	cr_assert_eq(slot->address, 0);
	mm_free(mm);
}

Test(cursor, cursors_are_per_mm)
{
	struct khugepaged_mm_slot *sa, *sb;
	struct mm_struct *a, *b;

	khugepaged_cursor_policy = CURSOR_PER_SLOT;
	a = one_mm(0, "HHHHHHHHHH", &sa);
	b = one_mm(0, "HHHHHHHHHH", &sb);
	khugepaged_do_scan();	/* a: 8 PMDs, budget spent */
	model_trylock_script("F");
	khugepaged_do_scan();	/* a: trylock fails, b: 8 PMDs */
	cr_assert_eq(sa->address, eligible_start(0) + 8 * HPAGE_PMD_SIZE);
	cr_assert_eq(sb->address, eligible_start(0) + 8 * HPAGE_PMD_SIZE);
	mm_free(a);
	mm_free(b);
}

Test(cursor, deterministic_for_a_seed)
{
	struct model_result r1, r2;
	uint64_t t1, t2;

	for (int i = 0; i < 2; i++) {
		struct mm_struct *mm;

		khugepaged_model_reset();
		khugepaged_cursor_policy = CURSOR_GLOBAL_RESET;
		model_contention = 0.3;
		model_seed(42);
		mm = one_mm(2000, "cccccccccccccccccccccccccccccccc", NULL);
		if (i == 0) {
			r1 = khugepaged_run(100000, NULL, NULL);
			t1 = model_stats.trylock_fails;
		} else {
			r2 = khugepaged_run(100000, NULL, NULL);
			t2 = model_stats.trylock_fails;
		}
		mm_free(mm);
	}
	cr_assert(r1.collapsed);
	cr_assert_eq(r1.passes, r2.passes);
	cr_assert_eq(r1.collapse_ns, r2.collapse_ns);
	cr_assert_eq(t1, t2);
	cr_assert_gt(t1, 0);
}
