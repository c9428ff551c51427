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
};

/* Runs to completion; a lost wakeup shows up as a hang (test timeout). */
int stress_run(const struct stress_cfg *cfg, struct stress_result *res);

#endif
