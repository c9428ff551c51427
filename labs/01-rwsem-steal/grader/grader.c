/* grader.c - lab 01 grader: forced interleavings that tell each steal policy apart (tests todoN_*). */
#include <criterion/criterion.h>

#include "harness.h"
#include "stress.h"

/*
 * Scenarios (code/rwsem/tests/scenarios.c) stop threads at hook points
 * inside the rwsem, so each outcome below is decided by your code alone,
 * never by timing. r_seq/w_seq give the order in which the reader and
 * the writer obtained the lock (smaller = first).
 */

/* Test names start with todoN_: the skeleton checker maps them to steps. */
TestSuite(lab01, .init = harness_watchdog);

/* A holds the lock, W queued, B arrives: B would be the second reader. */
Test(lab01, todo1_second_reader_queues_behind_writer)
{
	struct order_result res;

	scenario_second_reader(RWSEM_STEAL, CMD_DOWN_READ, &res);
	cr_assert_eq(res.writers_queued, 1);
	cr_assert(!res.reader_stole,
		  "with another reader inside, B stole the lock past the queued writer");
	cr_assert_eq(res.steals, 0, "rwsem_rlock_steal = %ld, want 0", res.steals);
	cr_assert_lt(res.w_seq, res.r_seq, "the writer should get the lock before B");
}

/* The guard must not forbid 6.12's legitimate steal by a lone reader. */
Test(lab01, todo1_lone_reader_still_steals)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_STEAL, CMD_DOWN_READ, &res);
	cr_assert(res.reader_stole, "a lone re-taking reader should steal under STEAL");
	cr_assert_eq(res.steals, 1);
	cr_assert_lt(res.r_seq, res.w_seq);
}

Test(lab01, todo2_nosteal_retake_lets_writer_go_first)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_STEAL, CMD_DOWN_READ_NOSTEAL, &res);
	cr_assert(!res.reader_stole, "down_read_nosteal() stole the lock");
	cr_assert_eq(res.steals, 0, "rwsem_rlock_steal = %ld, want 0", res.steals);
	cr_assert_lt(res.w_seq, res.r_seq, "the writer should get the lock first");
}

Test(lab01, todo2_nosteal_stress_has_no_steals)
{
	struct stress_cfg cfg = {
		.readers = 3, .writers = 2, .iters = 1500,
		.policy = RWSEM_NOSTEAL, .wait_timeout_ns = 4000000,
	};
	struct stress_result res;

	cr_assert_eq(stress_run(&cfg, &res), 0);
	cr_assert_eq(res.violations + res.torn_reads, 0, "mutual exclusion broken");
	cr_assert_eq(res.final_count, 0);
	cr_assert_eq(res.events[LOCKEVENT_rwsem_rlock_steal], 0,
		     "%ld steals under NOSTEAL", res.events[LOCKEVENT_rwsem_rlock_steal]);
}

Test(lab01, todo3_writer_first_retake_queues)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_WRITER_FIRST, CMD_DOWN_READ, &res);
	cr_assert(!res.reader_stole, "WRITER_FIRST stole past a queued writer");
	cr_assert_eq(res.steals, 0, "rwsem_rlock_steal = %ld, want 0", res.steals);
	cr_assert_lt(res.w_seq, res.r_seq, "the writer should get the lock first");
}

Test(lab01, todo3_writer_first_keeps_mutual_exclusion)
{
	struct stress_cfg cfg = {
		.readers = 3, .writers = 2, .iters = 1500,
		.policy = RWSEM_WRITER_FIRST, .wait_timeout_ns = 4000000,
	};
	struct stress_result res;

	cr_assert_eq(stress_run(&cfg, &res), 0);
	cr_assert_eq(res.violations + res.torn_reads, 0, "mutual exclusion broken");
	cr_assert_eq(res.final_count, 0);
	cr_assert_eq(res.waiters_left, 0);
}
