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
