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
	cr_assert_gt(r.events[VMA_LOCK_SUCCESS], 0, "not even the warm-up's fault (stress.h)");
}

Test(stress, faulters_writers_and_both_walkers_seed_1) { run(1); }
Test(stress, faulters_writers_and_both_walkers_seed_2) { run(2); }

/* Remote readers of both styles against a mapper and faulters. */
Test(stress, faulters_writers_and_both_remote_readers)
{
	struct stress_cfg cfg = { .faulters = 1, .writers = 1, .remote = 2,
				  .ops = 1500, .seed = 3 };
	struct stress_result r;

	stress_run(&cfg, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert_geq(r.remote_reads[0], 10);
	cr_assert_geq(r.remote_reads[1], 10);
	/* At least the warm-up's two reads (stress.h). */
	cr_assert_gt(r.remote_events[ACCESS_REMOTE_VM_VMA_LOCKED], 0);
	cr_assert_gt(r.remote_events[ACCESS_REMOTE_VM_FALLBACK], 0);
}
