/* test_sweep.c - seeded forced schedules of unmaps, frees, faults and the shrinker, two seeds. */
#include <criterion/criterion.h>

#include "sweep.h"
#include "ttest.h"

TestSuite(sweep, .init = tt_watchdog);

static void run(unsigned seed)
{
	struct thp_sweep_result r;

	thp_sweep(seed, 500, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert_eq(r.rounds, 500);
	/* What these seeds reach (the same on every run). */
	cr_assert_gt(r.inside, 100, "only %d steps ran inside another", r.inside);
	cr_assert_gt(r.underused_splits, 0, "no underused THP was split");
	cr_assert_gt(r.frees, 0, "no queued folio was freed");
}

Test(sweep, seed_1) { run(1); }
Test(sweep, seed_2) { run(2); }
