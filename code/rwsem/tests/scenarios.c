/* scenarios.c - forced interleavings of readers and a writer, shared by the order tests and the lab grader. */
#define _GNU_SOURCE
#include "harness.h"
#include "../task.h"

#include <criterion/criterion.h>
#include <time.h>

/* Long enough that no writer times out and sets HANDOFF during a scenario. */
#define NO_HANDOFF_NS (3600LL * 1000000000LL)

static void finish(struct harness *h, struct order_result *res,
		   struct actor *r, struct actor *w)
{
	res->steals = rwsem_event(&h->sem, LOCKEVENT_rwsem_rlock_steal);
	res->wlock_handoffs = rwsem_event(&h->sem, LOCKEVENT_rwsem_wlock_handoff);
	res->nosteals = rwsem_event(&h->sem, LOCKEVENT_rwsem_rlock_nosteal);
	res->rlock_handoffs = rwsem_event(&h->sem, LOCKEVENT_rwsem_rlock_handoff);
	res->w_seq = w->acquired_at;
	actor_stop(r);
	actor_stop(w);
	harness_fini(h);
}

/*
 * R holds the read lock; W queues and sleeps. R drops the lock (waking
 * W) and takes it again with `retake` while W is held between its wakeup
 * and its retry: the khugepaged drop-and-retake, at its worst moment.
 */
void scenario_drop_retake(enum rwsem_steal_policy lock_policy,
			  enum actor_cmd retake, struct order_result *res)
{
	struct harness h;
	struct actor r, w;

	*res = (struct order_result){ 0 };
	harness_init(&h, lock_policy, NO_HANDOFF_NS);
	actor_start(&r, &h, "R");
	actor_start(&w, &h, "W");

/* region: test-steal-order */
	actor_do(&r, CMD_DOWN_READ);
	actor_expect(&r, EV_DONE);			/* R holds the lock */

	actor_arm(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_do(&w, CMD_DOWN_WRITE);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);	/* W queued, going to sleep */
	res->writers_queued = rwsem_count_waiters(&h.sem, RWSEM_WAITING_FOR_WRITE);

	actor_do(&r, CMD_UP_READ);			/* last reader out wakes W, */
	actor_expect(&r, EV_DONE);
	actor_expect(&w, RWSEM_HOOK_WRITE_WOKEN);	/* which stops before retrying */

	actor_do(&r, retake);				/* R re-takes: steal or queue? */
	res->reader_stole =
		actor_wait(&r, EVBIT(EV_DONE) | EVBIT(RWSEM_HOOK_READ_QUEUED)) == EV_DONE;
	actor_release(&w);				/* now W retries */
/* endregion: test-steal-order */

	if (res->reader_stole) {
		res->r_seq = r.acquired_at;
		actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);	/* W lost: sleeps again */
		actor_do(&r, CMD_UP_READ);
		actor_expect(&r, EV_DONE);
		actor_expect(&w, EV_DONE);
		actor_do(&w, CMD_UP_WRITE);
		actor_expect(&w, EV_DONE);
	} else {
		actor_expect(&w, EV_DONE);		/* W has the lock */
		actor_do(&w, CMD_UP_WRITE);
		actor_expect(&w, EV_DONE);
		actor_expect(&r, EV_DONE);		/* R was granted after W */
		res->r_seq = r.acquired_at;
		actor_do(&r, CMD_UP_READ);
		actor_expect(&r, EV_DONE);
	}
	finish(&h, res, &r, &w);
}

/*
 * A holds the read lock, W queues and sleeps, then a second reader B
 * arrives (rcnt would be 2). 6.12's guard makes B queue behind W.
 * Here "R" in the result is B.
 */
void scenario_second_reader(enum rwsem_steal_policy lock_policy,
			    enum actor_cmd second, struct order_result *res)
{
	struct harness h;
	struct actor a, b, w;

	*res = (struct order_result){ 0 };
	harness_init(&h, lock_policy, NO_HANDOFF_NS);
	actor_start(&a, &h, "A");
	actor_start(&b, &h, "B");
	actor_start(&w, &h, "W");

	actor_do(&a, CMD_DOWN_READ);
	actor_expect(&a, EV_DONE);
	actor_do(&w, CMD_DOWN_WRITE);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);
	res->writers_queued = rwsem_count_waiters(&h.sem, RWSEM_WAITING_FOR_WRITE);

	actor_do(&b, second);
	res->reader_stole =
		actor_wait(&b, EVBIT(EV_DONE) | EVBIT(RWSEM_HOOK_READ_QUEUED)) == EV_DONE;

	actor_do(&a, CMD_UP_READ);
	actor_expect(&a, EV_DONE);
	if (res->reader_stole) {
		res->r_seq = b.acquired_at;
		actor_do(&b, CMD_UP_READ);
		actor_expect(&b, EV_DONE);
		actor_expect(&w, EV_DONE);
		actor_do(&w, CMD_UP_WRITE);
		actor_expect(&w, EV_DONE);
	} else {
		actor_expect(&w, EV_DONE);
		actor_do(&w, CMD_UP_WRITE);
		actor_expect(&w, EV_DONE);
		actor_expect(&b, EV_DONE);
		res->r_seq = b.acquired_at;
		actor_do(&b, CMD_UP_READ);
		actor_expect(&b, EV_DONE);
	}
	actor_stop(&a);
	finish(&h, res, &b, &w);
}

/* Wait until the clock passes t: the thing under test is a timeout. */
static void wait_until_ns(long long t)
{
	struct timespec ts = { .tv_sec = t / 1000000000LL,
			       .tv_nsec = t % 1000000000LL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

/*
 * STEAL policy, a reader that keeps dropping and re-taking the lock, a
 * writer that wants it. Round 1: R steals (W stopped after its wakeup).
 * Then W's wait exceeds the timeout: its next failed retry sets HANDOFF.
 * Round 2: R's re-take must queue, and W gets the lock first.
 */
void scenario_handoff(struct order_result *res)
{
	const long long timeout = 100LL * 1000000;	/* 100 ms */
	struct harness h;
	struct actor r, w;
	long long queued_by;

	*res = (struct order_result){ 0 };
	harness_init(&h, RWSEM_STEAL, timeout);
	actor_start(&r, &h, "R");
	actor_start(&w, &h, "W");

	actor_do(&r, CMD_DOWN_READ);
	actor_expect(&r, EV_DONE);
	actor_arm(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_do(&w, CMD_DOWN_WRITE);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);
	queued_by = sched_clock_ns();		/* W's deadline is before this + timeout */
	cr_assert_eq(rwsem_event(&h.sem, LOCKEVENT_rwsem_wlock_handoff), 0,
		     "W set HANDOFF on its first try: machine stalled > 100 ms?");

	/* Round 1: drop, W woken but held, re-take: a steal. */
	actor_do(&r, CMD_UP_READ);
	actor_expect(&r, EV_DONE);
	actor_expect(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_do(&r, CMD_DOWN_READ);
	actor_expect(&r, EV_DONE);
	cr_assert_eq(rwsem_event(&h.sem, LOCKEVENT_rwsem_rlock_steal), 1);

	wait_until_ns(queued_by + timeout + 1000000);
	actor_arm(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_release(&w);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);	/* failed again, set HANDOFF */
	cr_assert(atomic_load(&h.sem.count) & RWSEM_FLAG_HANDOFF,
		  "HANDOFF bit not set after the writer's timeout");

	/* Round 2: drop, W woken but held, re-take must queue now. */
	actor_do(&r, CMD_UP_READ);
	actor_expect(&r, EV_DONE);
	actor_expect(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_do(&r, CMD_DOWN_READ);
	res->reader_stole =
		actor_wait(&r, EVBIT(EV_DONE) | EVBIT(RWSEM_HOOK_READ_QUEUED)) == EV_DONE;
	cr_assert(!res->reader_stole, "reader stole despite HANDOFF");
	actor_release(&w);
	actor_expect(&w, EV_DONE);
	actor_do(&w, CMD_UP_WRITE);
	actor_expect(&w, EV_DONE);
	actor_expect(&r, EV_DONE);
	res->r_seq = r.acquired_at;
	actor_do(&r, CMD_UP_READ);
	actor_expect(&r, EV_DONE);
	finish(&h, res, &r, &w);
}

/*
 * The race the reader loses: R drops the lock, and W, woken by that drop,
 * reaches rwsem_try_write_lock() before R's re-take. W gets the lock at
 * this drop; R's re-take finds a writer owner and queues (no steal, and
 * nothing for a no-steal policy to decline).
 */
void scenario_writer_wins_race(enum actor_cmd retake, struct order_result *res)
{
	struct harness h;
	struct actor r, w;

	*res = (struct order_result){ 0 };
	harness_init(&h, RWSEM_STEAL, NO_HANDOFF_NS);
	actor_start(&r, &h, "R");
	actor_start(&w, &h, "W");

	actor_do(&r, CMD_DOWN_READ);
	actor_expect(&r, EV_DONE);
	actor_arm(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_do(&w, CMD_DOWN_WRITE);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);
	res->writers_queued = rwsem_count_waiters(&h.sem, RWSEM_WAITING_FOR_WRITE);

	actor_do(&r, CMD_UP_READ);			/* the drop wakes W */
	actor_expect(&r, EV_DONE);
	actor_expect(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_release(&w);				/* W retries first ... */
	actor_expect(&w, EV_DONE);			/* ... and wins */

	actor_do(&r, retake);				/* R's re-take comes late */
	res->reader_stole =
		actor_wait(&r, EVBIT(EV_DONE) | EVBIT(RWSEM_HOOK_READ_QUEUED)) == EV_DONE;
	cr_assert(!res->reader_stole, "R got the lock while W held it for writing");
	actor_do(&w, CMD_UP_WRITE);
	actor_expect(&w, EV_DONE);
	actor_expect(&r, EV_DONE);			/* granted by W's up_write() */
	res->r_seq = r.acquired_at;
	actor_do(&r, CMD_UP_READ);
	actor_expect(&r, EV_DONE);
	finish(&h, res, &r, &w);
}

/*
 * A reader's handoff (rwsem_rlock_handoff in rwsem_mark_wake()). A holds
 * the lock, W queues; A drops (waking W, held after its wakeup) and steals
 * the lock back; B arrives as a second reader and the guard queues it
 * behind W. After B's timeout, A drops again and is held before its
 * rwsem_wake(); W retries in that gap and takes the lock, which makes B
 * the first waiter. A's rwsem_wake() then tries to grant B, finds a
 * writer owner, and, B having waited past its timeout, sets
 * RWSEM_FLAG_HANDOFF on B's behalf. W's up_write() grants B.
 */
void scenario_reader_handoff(struct order_result *res)
{
	const long long timeout = 100LL * 1000000;	/* 100 ms */
	struct harness h;
	struct actor a, b, w;
	long long b_queued_by;

	*res = (struct order_result){ 0 };
	harness_init(&h, RWSEM_STEAL, timeout);
	actor_start(&a, &h, "A");
	actor_start(&b, &h, "B");
	actor_start(&w, &h, "W");

	actor_do(&a, CMD_DOWN_READ);
	actor_expect(&a, EV_DONE);
	actor_arm(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_do(&w, CMD_DOWN_WRITE);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);

	actor_do(&a, CMD_UP_READ);			/* drop: W woken, held */
	actor_expect(&a, EV_DONE);
	actor_expect(&w, RWSEM_HOOK_WRITE_WOKEN);
	actor_do(&a, CMD_DOWN_READ);			/* A steals it back */
	actor_expect(&a, EV_DONE);
	cr_assert_eq(rwsem_event(&h.sem, LOCKEVENT_rwsem_rlock_steal), 1);

	actor_do(&b, CMD_DOWN_READ);			/* rcnt 2: the guard queues B */
	actor_expect(&b, RWSEM_HOOK_READ_QUEUED);
	b_queued_by = sched_clock_ns();
	cr_assert_eq(rwsem_count_waiters(&h.sem, RWSEM_WAITING_FOR_READ), 1);

	wait_until_ns(b_queued_by + timeout + 1000000);
	actor_arm(&a, RWSEM_HOOK_UP_READ_WAKE);
	actor_do(&a, CMD_UP_READ);			/* drop again, held before rwsem_wake() */
	actor_expect(&a, RWSEM_HOOK_UP_READ_WAKE);
	actor_release(&w);				/* W wins the gap */
	actor_expect(&w, EV_DONE);
	actor_release(&a);				/* rwsem_wake(): B is first, W owns */
	actor_expect(&a, EV_DONE);
	cr_assert(atomic_load(&h.sem.count) & RWSEM_FLAG_HANDOFF,
		  "HANDOFF not set for the timed-out reader (count 0x%lx)",
		  atomic_load(&h.sem.count));

	actor_do(&w, CMD_UP_WRITE);
	actor_expect(&w, EV_DONE);
	actor_expect(&b, EV_DONE);			/* granted by W's up_write() */
	res->r_seq = b.acquired_at;
	cr_assert_eq(atomic_load(&h.sem.count), RWSEM_READER_BIAS,
		     "B alone should hold it, flags clear (count 0x%lx)",
		     atomic_load(&h.sem.count));
	actor_do(&b, CMD_UP_READ);
	actor_expect(&b, EV_DONE);
	actor_stop(&a);
	finish(&h, res, &b, &w);
}
