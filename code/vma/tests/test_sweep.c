/* test_sweep.c - seeded forced schedules: faults and per-VMA walks with a writer's change inside them, two seeds each. */
#include <criterion/criterion.h>

#include "sweep.h"

TestSuite(sweep, .init = harness_watchdog);

static void faults(unsigned seed)
{
	struct sweep_result r;

	scn_sweep_faults(seed, 300, &r);
	cr_assert(r.s.ok, "%s", r.s.why);
	cr_assert_eq(r.rounds, 300);
	cr_assert_gt(r.changed, 100, "only %d of 300 changes ran inside a fault", r.changed);
}

static void walks(unsigned seed)
{
	struct sweep_result r;

	scn_sweep_walks(seed, 300, &r);
	cr_assert(r.s.ok, "%s", r.s.why);
	cr_assert_eq(r.rounds, 300);
	cr_assert_gt(r.changed, 100, "only %d of 300 changes ran inside a walk", r.changed);
	cr_assert_gt(r.resumed, 0, "no walk resumed inside a VMA that grew");
	cr_assert_gt(r.fallbacks, 0, "no walk fell back to mmap_lock");
}

Test(sweep, faults_seed_1) { faults(1); }
Test(sweep, faults_seed_2) { faults(2); }
Test(sweep, walks_seed_1) { walks(1); }
Test(sweep, walks_seed_2) { walks(2); }
