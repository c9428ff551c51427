/* ttest.h - deterministic interleavings for the deferred split model: a queue, folios, threads stopped at hook points. */
#ifndef MMLOCKS_THP_TTEST_H
#define MMLOCKS_THP_TTEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "../thp.h"

/*
 * A test owns one queue and a few folios. A thread with a given CPU
 * number (thp_set_cpu()) can be stopped at a hook point until the test
 * releases it; every wait is bounded (tt_wait_s seconds), so a wrong
 * interleaving fails a test instead of hanging it. No sleeps: the test
 * waits for the thread to arrive.
 */
#define TT_FOLIOS 4
#define TT_WAIT_S 10
extern int tt_wait_s;

struct ttest {
	struct deferred_split ds;
	struct folio folio[TT_FOLIOS];
	pthread_mutex_t m;
	pthread_cond_t c;
	int stop_point, stop_cpu;	/* -1: none */
	bool stopped, released;
	bool thread_done;		/* the thread of tt_spawn_for() returned */
};

/* Queue switches as in 6.12 unless told: early check on; queue at fault? */
void tt_init(struct ttest *t, bool early_check, bool split_underused_thp);
void tt_fini(struct ttest *t);		/* frees the model's memory only */
void tt_stop_at(struct ttest *t, enum thp_hook_point p, int cpu);
/* false if nobody came in time, or tt_spawn_for()'s thread returned first */
bool tt_wait_stopped(struct ttest *t);
void tt_release(struct ttest *t);
int tt_queued(struct ttest *t);		/* folios on split_queue (under the lock) */
bool tt_on_queue(struct ttest *t, struct folio *f);

/* Put a folio on the queue as deferred_split_folio(f, true) would. */
void tt_queue_partially_mapped(struct ttest *t, struct folio *f);

struct tthread {
	pthread_t th;
	int cpu;
	void (*fn)(void *arg);
	void *arg;
	atomic_bool done;
	bool joined;
	struct ttest *t;	/* tt_spawn_for(): tells t when it returns */
};
void tt_spawn(struct tthread *th, int cpu, void (*fn)(void *arg), void *arg);
/*
 * The same, for a thread that should stop at t's hook point: if it
 * returns without stopping there, tt_wait_stopped() says so at once
 * instead of waiting out tt_wait_s.
 */
void tt_spawn_for(struct ttest *t, struct tthread *th, int cpu, void (*fn)(void *arg),
		  void *arg);
bool tt_join(struct tthread *th);	/* false if it did not end in time */

/* Criterion suites' .init: end a stuck test process after a minute. */
void tt_watchdog(void);

#endif
