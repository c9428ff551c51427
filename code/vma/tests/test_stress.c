/* test_stress.c - the stress run under ASan+UBSan, two seeds. */
#include <criterion/criterion.h>

#include "stress.h"
#include "vtest.h"

TestSuite(stress, .init = harness_watchdog);

static void run(unsigned seed)
{
	struct stress_cfg cfg = { .faulters = 2, .writers = 2, .readers = 2,
				  .ops = 1500, .seed = seed };
	struct stress_result r;

	stress_run(&cfg, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert_geq(r.writes, 3000);
	cr_assert_geq(r.rollups[0] + r.rollups[1], 20);
	cr_assert_gt(r.events[VMA_LOCK_SUCCESS], 0);
}

Test(stress, faulters_writers_and_both_walkers_seed_1) { run(1); }
Test(stress, faulters_writers_and_both_walkers_seed_2) { run(2); }
