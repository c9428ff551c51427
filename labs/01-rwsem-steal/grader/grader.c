/* grader.c - lab 01 grader: forced interleavings that tell each steal policy apart (tests todoN_*). */
#define _GNU_SOURCE	/* RTLD_NEXT */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "harness.h"
#include "rwsem_internal.h"
#include "stress.h"

/*
 * Scenarios (code/rwsem/tests/scenarios.c) stop threads at hook points
 * inside the rwsem, so each outcome below is decided by your code alone,
 * never by timing. r_seq/w_seq give the order in which the reader and
 * the writer obtained the lock (smaller = first).
 */

/* Test names start with todoN_: the skeleton checker maps them to steps. */
TestSuite(lab01, .init = harness_watchdog);

/* No writer in these tests waits long enough to set HANDOFF. */
#define NO_HANDOFF_NS (3600LL * 1000000000LL)

/*
 * The test thread itself holds the write lock and releases it in two
 * halves, as up_write() does: first the count (the lock is free from
 * here on), then rwsem_wake(). Between the halves the waiters are still
 * queued: the window in which a reader can find WAITERS set and no
 * writer. Returns the count before the release.
 */
static long up_write_count_only(struct rw_semaphore *sem)
{
	rwsem_clear_owner(sem);
	return atomic_fetch_sub(&sem->count, RWSEM_WRITER_LOCKED);
}

/* Reader R's down_read() returned without queueing (true) or queued. */
static bool took_without_queueing(struct actor *r)
{
	return actor_wait(r, EVBIT(EV_DONE) | EVBIT(RWSEM_HOOK_READ_QUEUED)) == EV_DONE;
}

/* Q: a reader queued behind the test thread's write lock. */
static void queue_reader_behind_test_writer(struct harness *h, struct actor *q)
{
	down_write(&h->sem);
	actor_do(q, CMD_DOWN_READ);
	actor_expect(q, RWSEM_HOOK_READ_QUEUED);
}

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

/*
 * A1 and A2 hold the lock, W queued, B arrives: rcnt is 3. The guard is
 * for every count of readers inside but B itself, not just for one more.
 */
Test(lab01, todo1_third_reader_queues_behind_writer)
{
	struct harness h;
	struct actor a1, a2, w, b;
	bool stole;

	harness_init(&h, RWSEM_STEAL, NO_HANDOFF_NS);
	actor_start(&a1, &h, "A1");
	actor_start(&a2, &h, "A2");
	actor_start(&w, &h, "W");
	actor_start(&b, &h, "B");
	actor_do(&a1, CMD_DOWN_READ);
	actor_expect(&a1, EV_DONE);
	actor_do(&a2, CMD_DOWN_READ);
	actor_expect(&a2, EV_DONE);			/* two readers inside */
	actor_do(&w, CMD_DOWN_WRITE);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);	/* W queued */

	actor_do(&b, CMD_DOWN_READ);			/* rcnt == 3 */
	stole = took_without_queueing(&b);
	cr_assert(!stole, "two readers inside and W queued: B (rcnt = 3) stole the lock past W. "
		  "The guard holds for any number of other readers (rcnt > 1), not only for one");

	actor_do(&a1, CMD_UP_READ);
	actor_expect(&a1, EV_DONE);
	actor_do(&a2, CMD_UP_READ);			/* last reader out: W */
	actor_expect(&a2, EV_DONE);
	actor_expect(&w, EV_DONE);
	actor_do(&w, CMD_UP_WRITE);
	actor_expect(&w, EV_DONE);
	actor_expect(&b, EV_DONE);			/* B after W */
	cr_assert_lt(w.acquired_at, b.acquired_at);
	actor_do(&b, CMD_UP_READ);
	actor_expect(&b, EV_DONE);
	actor_stop(&a1);
	actor_stop(&a2);
	actor_stop(&w);
	actor_stop(&b);
	harness_fini(&h);
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

/*
 * A writer has just released the lock (owner cleared), reader B is in the
 * slowpath with its bias counted, Q is queued. C arrives: rcnt is 2 but
 * the owner is not RWSEM_READER_OWNED, so 6.12's guard does not apply
 * and C steals.
 */
Test(lab01, todo1_guard_needs_a_reader_owner)
{
	struct harness h;
	struct actor q, b, c;
	long steals;

	harness_init(&h, RWSEM_STEAL, NO_HANDOFF_NS);
	actor_start(&q, &h, "Q");
	actor_start(&b, &h, "B");
	actor_start(&c, &h, "C");
	queue_reader_behind_test_writer(&h, &q);
	up_write_count_only(&h.sem);

	actor_arm(&b, RWSEM_HOOK_READ_SLOWPATH);
	actor_do(&b, CMD_DOWN_READ);
	actor_expect(&b, RWSEM_HOOK_READ_SLOWPATH);	/* B's bias is in, no decision yet */
	cr_assert_not(atomic_load(&h.sem.owner) & RWSEM_READER_OWNED);

	actor_do(&c, CMD_DOWN_READ);			/* rcnt == 2, owner not a reader */
	cr_assert(took_without_queueing(&c),
		  "C queued: the guard must only fire when sem->owner has RWSEM_READER_OWNED");
	steals = rwsem_event(&h.sem, LOCKEVENT_rwsem_rlock_steal);
	cr_assert_eq(steals, 1, "rwsem_rlock_steal = %ld, want 1", steals);

	actor_release(&b);				/* B: a lone reader again, steals */
	actor_expect(&b, EV_DONE);
	rwsem_wake(&h.sem);				/* the rest of up_write() */
	actor_expect(&q, EV_DONE);
	actor_do(&b, CMD_UP_READ);
	actor_do(&c, CMD_UP_READ);
	actor_do(&q, CMD_UP_READ);
	actor_expect(&b, EV_DONE);
	actor_expect(&c, EV_DONE);
	actor_expect(&q, EV_DONE);
	actor_stop(&q);
	actor_stop(&b);
	actor_stop(&c);
	harness_fini(&h);
}

Test(lab01, todo2_nosteal_retake_lets_writer_go_first)
{
	struct order_result res;

	scenario_drop_retake(RWSEM_STEAL, CMD_DOWN_READ_NOSTEAL, &res);
	cr_assert(!res.reader_stole, "down_read_nosteal() stole the lock");
	cr_assert_eq(res.steals, 0, "rwsem_rlock_steal = %ld, want 0", res.steals);
	cr_assert_lt(res.w_seq, res.r_seq, "the writer should get the lock first");
}

/*
 * The stress starts with a forced window (code/rwsem/tests/stress.h):
 * every thread queued, a writer first, the lock just released but nobody
 * woken, and a probe reader arriving with the run's policy. Whatever the
 * host's load, that reader must queue; then the threads run free.
 */
Test(lab01, todo2_nosteal_stress_has_no_steals)
{
	struct stress_cfg cfg = {
		.readers = 3, .writers = 2, .iters = 1500,
		.policy = RWSEM_NOSTEAL, .wait_timeout_ns = 4000000,
	};
	struct stress_result res;

	cr_assert_eq(stress_run(&cfg, &res), 0);
	cr_assert(res.probe_queued && !res.window_steals,
		  "a NOSTEAL reader arrived while the lock was free and a writer was queued "
		  "(forced at the start of the run): it stole the lock");
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
	cr_assert(res.probe_queued && !res.window_steals,
		  "a WRITER_FIRST reader arrived while the lock was free and a writer was first "
		  "in the queue (forced at the start of the run): it stole the lock");
	cr_assert_eq(res.violations + res.torn_reads, 0, "mutual exclusion broken");
	cr_assert_eq(res.final_count, 0);
	cr_assert_eq(res.waiters_left, 0);
}

/*
 * Queue [Q reader, W writer]; the test thread's write lock is released
 * but not yet woken (see up_write_count_only()). B arrives: the first
 * waiter is a reader, not a writer, so WRITER_FIRST steals, and B, the
 * first reader in, takes Q along.
 */
Test(lab01, todo3_writer_first_steals_when_a_reader_is_first)
{
	struct harness h;
	struct actor q, w, b;
	long steals;
	bool stole;

	harness_init(&h, RWSEM_WRITER_FIRST, NO_HANDOFF_NS);
	actor_start(&q, &h, "Q");
	actor_start(&w, &h, "W");
	actor_start(&b, &h, "B");
	queue_reader_behind_test_writer(&h, &q);
	actor_do(&w, CMD_DOWN_WRITE);
	actor_expect(&w, RWSEM_HOOK_WRITE_SLEEP);	/* queue: Q, W */
	cr_assert(up_write_count_only(&h.sem) & RWSEM_FLAG_WAITERS);

	actor_do(&b, CMD_DOWN_READ);
	stole = took_without_queueing(&b);
	steals = rwsem_event(&h.sem, LOCKEVENT_rwsem_rlock_steal);
	cr_assert(stole, "B queued, but the first waiter is a reader: only a writer "
		  "at the head of the queue stops a WRITER_FIRST steal");
	cr_assert_eq(steals, 1, "rwsem_rlock_steal = %ld, want 1", steals);

	actor_expect(&q, EV_DONE);			/* B took Q along */
	rwsem_wake(&h.sem);				/* the rest of up_write(): W retries, fails */
	actor_do(&b, CMD_UP_READ);
	actor_expect(&b, EV_DONE);
	actor_do(&q, CMD_UP_READ);			/* last reader out: W */
	actor_expect(&q, EV_DONE);
	actor_expect(&w, EV_DONE);
	cr_assert_lt(b.acquired_at, w.acquired_at);
	actor_do(&w, CMD_UP_WRITE);
	actor_expect(&w, EV_DONE);
	actor_stop(&q);
	actor_stop(&w);
	actor_stop(&b);
	harness_fini(&h);
}

/*
 * B sees RWSEM_FLAG_WAITERS, then (stopped at the READ_SLOWPATH hook,
 * before it decides) the only waiter, Q, is granted the lock and leaves
 * the queue. When B looks under wait_lock the list is empty: nothing to
 * queue behind, so B steals.
 *
 * On an empty list rwsem_first_waiter() points into the rw_semaphore
 * itself (the list head). A solution that reads it there reads the low
 * half of sem->wait_timeout_ns as the waiter's type; this test sets that
 * to 2^40 ns, whose low half reads as RWSEM_WAITING_FOR_WRITE, so such a
 * solution queues and loses the steal.
 */
#define GHOST_WRITER_NS (1LL << 40)

Test(lab01, todo3_writer_first_steals_when_the_queue_empties_first)
{
	struct harness h;
	struct actor q, b;
	long steals, fast;
	bool empty;

	harness_init(&h, RWSEM_WRITER_FIRST, GHOST_WRITER_NS);
	cr_assert_eq(rwsem_first_waiter(&h.sem)->type, RWSEM_WAITING_FOR_WRITE,
		     "grader premise: an empty list's 'first waiter' reads as a writer");
	actor_start(&q, &h, "Q");
	actor_start(&b, &h, "B");
	queue_reader_behind_test_writer(&h, &q);
	up_write_count_only(&h.sem);

	actor_arm(&b, RWSEM_HOOK_READ_SLOWPATH);
	actor_do(&b, CMD_DOWN_READ);
	actor_expect(&b, RWSEM_HOOK_READ_SLOWPATH);	/* B saw WAITERS */
	rwsem_wake(&h.sem);				/* Q is granted, leaves the list */
	actor_expect(&q, EV_DONE);
	pthread_mutex_lock(&h.sem.wait_lock);
	empty = list_empty(&h.sem.wait_list);
	pthread_mutex_unlock(&h.sem.wait_lock);
	cr_assert(empty);

	actor_release(&b);
	actor_expect(&b, EV_DONE);
	steals = rwsem_event(&h.sem, LOCKEVENT_rwsem_rlock_steal);
	fast = rwsem_event(&h.sem, LOCKEVENT_rwsem_rlock_fast);
	cr_assert_eq(steals, 1, "rwsem_rlock_steal = %ld, rwsem_rlock_fast = %ld: B did not "
		     "steal from an empty queue (check the list before its first waiter)",
		     steals, fast);

	actor_do(&b, CMD_UP_READ);
	actor_do(&q, CMD_UP_READ);
	actor_expect(&b, EV_DONE);
	actor_expect(&q, EV_DONE);
	actor_stop(&q);
	actor_stop(&b);
	harness_fini(&h);
}

/*
 * The queue is read under wait_lock. The grader stands in for
 * pthread_mutex_lock() and pthread_mutex_unlock() (the model's
 * raw_spin_lock_irq() and raw_spin_unlock_irq()): when the reader takes
 * the watched wait_lock, or is about to release it, the test's function
 * changes the queue, as another CPU holding wait_lock next would. A read of
 * the queue before the lock or after the unlock sees the other queue.
 */
static pthread_mutex_t *watched;
static void (*after_lock)(void), (*before_unlock)(void);

int pthread_mutex_lock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);
	void (*fn)(void) = after_lock;
	int r;

	if (!real)
		real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	r = real(m);
	if (m == watched && fn) {
		after_lock = NULL;
		fn();
	}
	return r;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);
	void (*fn)(void) = before_unlock;

	if (!real)
		real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	if (m == watched && fn) {
		before_unlock = NULL;
		fn();
	}
	return real(m);
}

/*
 * W's waiter lives on W's stack in the kernel: once W left the queue
 * (granted the lock, or gone), that memory is W's again. Here it is
 * heap memory, freed as W leaves, so a read of it after that is an
 * AddressSanitizer report, whatever value it would have read.
 */
static struct rw_semaphore qsem;
static struct rwsem_waiter *qwriter;

static void writer_leaves_the_queue(void)
{
	list_del_init(&qwriter->list);
	free(qwriter);
	qwriter = NULL;
}

/* The test thread is a reader in the slowpath; writer W is first in the queue. */
static bool decide_with_writer_queued(void)
{
	DEFINE_WAKE_Q(wake_q);

	init_rwsem(&qsem);
	qwriter = calloc(1, sizeof(*qwriter));
	cr_assert(qwriter);
	qwriter->type = RWSEM_WAITING_FOR_WRITE;
	list_add_tail(&qwriter->list, &qsem.wait_list);
	watched = &qsem.wait_lock;
	return rwsem_read_steal(&qsem, RWSEM_READER_BIAS | RWSEM_FLAG_WAITERS,
				RWSEM_WRITER_FIRST, &wake_q);
}

Test(lab01, todo3_writer_first_reads_the_queue_after_taking_wait_lock)
{
	bool stole;

	after_lock = writer_leaves_the_queue;
	stole = decide_with_writer_queued();
	cr_assert(!after_lock, "WRITER_FIRST with WAITERS set never took wait_lock");
	cr_assert(stole, "W left the queue while the reader waited for wait_lock; the reader "
		  "then found the queue empty and must steal. It queued: it read the queue "
		  "before it held wait_lock");
	free(qwriter);
}

Test(lab01, todo3_writer_first_reads_the_queue_before_releasing_wait_lock)
{
	bool stole;

	before_unlock = writer_leaves_the_queue;
	stole = decide_with_writer_queued();
	cr_assert(!before_unlock, "WRITER_FIRST with WAITERS set never released wait_lock");
	cr_assert(!stole, "W was first in the queue all the time the reader held wait_lock: "
		  "it must queue. It stole: it read the queue after releasing wait_lock, when "
		  "W had left");
	free(qwriter);	/* still queued if the reader never released wait_lock */
}
