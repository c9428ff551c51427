/* test_stress.c - mutual exclusion and no lost wakeups, for every steal policy, with and without quick handoff; contention forced at the start. */
#include <criterion/criterion.h>

#include "harness.h"
#include "stress.h"

TestSuite(stress, .init = harness_watchdog);

static void check(enum rwsem_steal_policy policy, long long timeout_ns)
{
	struct stress_cfg cfg = {
		.readers = 4, .writers = 2, .iters = 3000,
		.policy = policy, .wait_timeout_ns = timeout_ns,
	};
	struct stress_result res;

	cr_assert_eq(stress_run(&cfg, &res), 0);
	cr_assert_eq(res.violations, 0, "%ld exclusion violations", res.violations);
	cr_assert_eq(res.torn_reads, 0, "%ld torn reads", res.torn_reads);
	cr_assert_eq(res.final_count, 0, "count 0x%lx after the run", res.final_count);
	cr_assert_eq(res.waiters_left, 0);
	cr_assert_gt(res.writes, 0);
	cr_assert_gt(res.reads, 0);
	/*
	 * The run starts with every thread queued behind a writer (stress.h):
	 * each of them gets the lock once through a slowpath, whatever the
	 * host's load, and leaves a trace in the counters.
	 */
	cr_assert_geq(res.events[LOCKEVENT_rwsem_wlock] + res.events[LOCKEVENT_rwsem_rlock],
		      cfg.readers + cfg.writers,
		      "%d threads were queued at the start, %ld slowpath acquisitions counted",
		      cfg.readers + cfg.writers,
		      res.events[LOCKEVENT_rwsem_wlock] + res.events[LOCKEVENT_rwsem_rlock]);
	/* The probe, in the window where the lock is free and a writer heads the queue. */
	if (policy == RWSEM_NOSTEAL || policy == RWSEM_WRITER_FIRST)
		cr_assert(res.probe_queued && !res.window_steals,
			  "%s: the probe stole the free lock past the queued writer",
			  rwsem_policy_name(policy));
	else	/* no HANDOFF in the window: stock 6.12 steals */
		cr_assert_eq(res.window_steals, 1, "STEAL: the probe did not steal the free lock");
	if (policy == RWSEM_NOSTEAL)
		cr_assert_eq(res.events[LOCKEVENT_rwsem_rlock_steal], 0);
}

Test(stress, steal)			{ check(RWSEM_STEAL, 4000000); }
Test(stress, nosteal)			{ check(RWSEM_NOSTEAL, 4000000); }
Test(stress, writer_first)		{ check(RWSEM_WRITER_FIRST, 4000000); }
Test(stress, steal_instant_handoff)	{ check(RWSEM_STEAL, 0); }
Test(stress, nosteal_instant_handoff)	{ check(RWSEM_NOSTEAL, 0); }
Test(stress, writer_first_instant_handoff) { check(RWSEM_WRITER_FIRST, 0); }
