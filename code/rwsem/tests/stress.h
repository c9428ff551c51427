/* stress.h - N readers and M writers hammer one rwsem; the critical sections check mutual exclusion. */
#ifndef MMLOCKS_STRESS_H
#define MMLOCKS_STRESS_H

#include "../rwsem.h"

struct stress_cfg {
	int readers, writers, iters;
	enum rwsem_steal_policy policy;
	long long wait_timeout_ns;
};

struct stress_result {
	long violations;	/* a writer saw company, or a reader saw a writer */
	long torn_reads;	/* a reader saw half of a writer's update */
	long reads, writes;	/* critical sections completed */
	long final_count;	/* sem->count after all threads joined */
	int waiters_left;	/* wait list length after all threads joined */
	long events[lockevent_num];
	long window_steals;	/* rwsem_rlock_steal by the probe (below) */
	bool probe_queued;	/* ... which queued instead */
};

/*
 * Runs to completion; a lost wakeup shows up as a hang (test timeout).
 *
 * Contention is forced, not hoped for: the caller's thread holds the
 * write lock while every thread starts and queues (the first writer
 * first, so a writer heads the queue), then releases it as up_write()
 * does, in two halves. Between them the lock is free and the waiters
 * are still queued: a probe reader arrives with cfg->policy there and
 * either steals (STEAL) or queues (NOSTEAL; WRITER_FIRST, a writer being
 * first; no waiter can have set HANDOFF, its deadline is an hour away).
 * Then the wakeup, and the threads run free. So every run has
 * readers + writers slowpath acquisitions and one steal decision in the
 * window that matters, whatever the host's load.
 */
int stress_run(const struct stress_cfg *cfg, struct stress_result *res);

#endif
