/* test_stress.c - a short stress run per switch position under the sanitizers. */
#include <criterion/criterion.h>

#include "stress.h"
#include "ttest.h"

TestSuite(stress, .init = tt_watchdog);

static void run(bool early_check)
{
	struct stress_cfg cfg = { .threads = 2, .folios = 3, .order = 4, .hits = 4,
				  .ops = 2000, .early_check = early_check, .shrinker = true };
	struct stress_result r;

	stress_run(&cfg, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert_eq(r.zaps, 2 * 2000);
	/* At least the warm-up's two partial unmaps (stress.h), the second bailing early. */
	cr_assert_gt(r.partial_unmaps, 0);
	/* The shrinker's first scan checks the queue (a do-while: at least one). */
	cr_assert_gt(r.checks, 0, "the shrinker checked the queue while it ran");
	if (!early_check)
		cr_assert_eq(r.lock_partial, r.partial_unmaps);
	else
		cr_assert_lt(r.lock_partial, r.partial_unmaps);
}

Test(stress, early_check_on) { run(true); }
Test(stress, early_check_off) { run(false); }
