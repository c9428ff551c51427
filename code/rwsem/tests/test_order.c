/* test_order.c - who gets the lock first when a reader drops and re-takes it past a queued writer. */
#include <criterion/criterion.h>

#include "harness.h"

TestSuite(order, .init = harness_watchdog);

Test(order, steal_reader_retakes_before_queued_writer)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_STEAL, CMD_DOWN_READ, &res);
	cr_assert_eq(res.writers_queued, 1, "the writer was not on the wait list");
	cr_assert(res.reader_stole, "under STEAL the re-take should not queue");
	cr_assert_eq(res.steals, 1, "rwsem_rlock_steal = %ld", res.steals);
	cr_assert_lt(res.r_seq, res.w_seq, "reader (%ld) should beat writer (%ld)",
		     res.r_seq, res.w_seq);
}

Test(order, nosteal_call_lets_queued_writer_go_first)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_STEAL, CMD_DOWN_READ_NOSTEAL, &res);
	cr_assert_eq(res.writers_queued, 1);
	cr_assert(!res.reader_stole, "down_read_nosteal() stole the lock");
	cr_assert_eq(res.steals, 0);
	cr_assert_lt(res.w_seq, res.r_seq, "writer (%ld) should beat reader (%ld)",
		     res.w_seq, res.r_seq);
}

Test(order, nosteal_lock_policy_lets_queued_writer_go_first)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_NOSTEAL, CMD_DOWN_READ, &res);
	cr_assert(!res.reader_stole);
	cr_assert_eq(res.steals, 0);
	cr_assert_lt(res.w_seq, res.r_seq);
}

Test(order, writer_first_lets_queued_writer_go_first)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_WRITER_FIRST, CMD_DOWN_READ, &res);
	cr_assert(!res.reader_stole, "WRITER_FIRST stole past a queued writer");
	cr_assert_eq(res.steals, 0);
	cr_assert_lt(res.w_seq, res.r_seq);
}

/* 6.12's guard: a reader that would be the second one queues. */
Test(order, second_reader_queues_behind_writer_under_steal)
{
	struct order_result res;

	scenario_second_reader(RWSEM_STEAL, CMD_DOWN_READ, &res);
	cr_assert_eq(res.writers_queued, 1);
	cr_assert(!res.reader_stole, "second reader stole past the writer");
	cr_assert_eq(res.steals, 0);
	cr_assert_lt(res.w_seq, res.r_seq);
}

/* The writer's way out under STEAL: timeout, HANDOFF, then it wins. */
Test(order, writer_gets_lock_through_handoff)
{
	struct order_result res;

	scenario_handoff(&res);
	cr_assert_eq(res.steals, 1, "round 1 should have been a steal");
	cr_assert_eq(res.wlock_handoffs, 1, "rwsem_wlock_handoff = %ld",
		     res.wlock_handoffs);
	cr_assert_lt(res.w_seq, res.r_seq, "writer should win round 2");
}

/* The race the writer wins: it retries between R's drop and R's re-take. */
Test(order, writer_wins_race_reader_queues)
{
	struct order_result res;

	scenario_writer_wins_race(CMD_DOWN_READ, &res);
	cr_assert_eq(res.writers_queued, 1);
	cr_assert(!res.reader_stole);
	cr_assert_eq(res.steals, 0, "rwsem_rlock_steal = %ld", res.steals);
	cr_assert_eq(res.nosteals, 0, "no steal was possible, none declined");
	cr_assert_lt(res.w_seq, res.r_seq, "writer (%ld) should beat reader (%ld)",
		     res.w_seq, res.r_seq);
}

/* rwsem_rlock_nosteal counts the steals a policy declined, as patch 3 does. */
Test(order, nosteal_counts_declined_steal)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_STEAL, CMD_DOWN_READ_NOSTEAL, &res);
	cr_assert_eq(res.nosteals, 1, "rwsem_rlock_nosteal = %ld", res.nosteals);
	scenario_drop_retake(RWSEM_WRITER_FIRST, CMD_DOWN_READ, &res);
	cr_assert_eq(res.nosteals, 1, "rwsem_rlock_nosteal = %ld", res.nosteals);
	scenario_drop_retake(RWSEM_STEAL, CMD_DOWN_READ, &res);
	cr_assert_eq(res.nosteals, 0, "stock stole: nothing declined");
}

/* A timed-out reader at the head sets HANDOFF when a writer got in first. */
Test(order, reader_handoff_after_writer_wins_gap)
{
	struct order_result res;

	scenario_reader_handoff(&res);
	cr_assert_eq(res.rlock_handoffs, 1, "rwsem_rlock_handoff = %ld",
		     res.rlock_handoffs);
	cr_assert_eq(res.wlock_handoffs, 0, "the writer never needed a handoff");
	cr_assert_lt(res.w_seq, res.r_seq, "B is granted after W");
}
