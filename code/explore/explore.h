/* explore.h - the schedule explorer's interface: scenarios, yield points, the search and its results. */
#ifndef MMLOCKS_EXPLORE_H
#define MMLOCKS_EXPLORE_H

#include <stdbool.h>
#include <stdio.h>

/*
 * A scenario is 2 or 3 threads running the models' own code. The explorer
 * runs them one at a time: a thread runs until it reaches a yield point
 * (a model hook, a point in the scenario's thread body, or a sleep in
 * schedule()), then the explorer picks who runs next. A schedule is the
 * sequence of those picks; a step is what one thread ran between two of
 * its yield points.
 *
 * Objects: every step names the shared objects it may touch, as a bit
 * mask. Two steps with disjoint masks commute (the sleep-set reduction
 * relies on that, see search.c). EX_MODEL is "the model's state": every
 * step that resumes inside model code touches it.
 */
#define EX_MAX_THREADS	3
#define EX_MAX_STEPS	256
#define EX_MODEL	(1u << 0)
#define EX_OBJ(n)	(1u << (n))	/* scenario-defined, n >= 1 */

struct ex_scenario {
	const char *name;		/* "rwsem-steal": what --replay names */
	const char *summary;		/* one line for --list */
	const char *bug;		/* what FOUND means */
	bool expect_found;		/* the broken variant: a failure exists */
	int default_bound;		/* preemption bound for `make explore` */
	int nthreads;
	const char *thread_name[EX_MAX_THREADS];
	unsigned start_mask[EX_MAX_THREADS]; /* objects of each first step */

	/* Fresh state for one schedule, built on the explorer's own thread. */
	void *(*setup)(const struct ex_scenario *sc);
	void (*body[EX_MAX_THREADS])(void *ctx);
	/* After all threads ended: NULL if fine, else what went wrong. */
	const char *(*check)(void *ctx, char *buf, size_t len);
	/* The shared state after a step, one short line ("count=0x102"). */
	void (*state)(void *ctx, char *buf, size_t len);
	void (*teardown)(void *ctx);
};

/* Called from threads under the explorer; no-ops on any other thread. */
void ex_yield(const char *label, unsigned next_mask);
void ex_touch(unsigned mask);		/* this step also touches mask */
bool ex_in_thread(void);
/* The task layer (task_coop.c) calls these. */
struct task_struct;
void ex_block(void);			/* current thread cannot run */
void ex_wake(struct task_struct *t);	/* t's thread can run again */
void ex_bind_task(struct task_struct *t);

/* One step as run. */
struct ex_step {
	int thread;
	char label[64];			/* where the thread stopped */
	char state[96];			/* sc->state() after the step */
};

struct ex_opts {
	int bound;			/* max preemptions; < 0: none */
	bool reduce;			/* sleep sets (only when bound < 0) */
	bool all;			/* do not stop at the first failure */
	double max_seconds;		/* give up after this long; 0: never */
	long max_schedules;		/* give up after this many; 0: never */
};

struct ex_result {
	long explored;			/* schedules run to the end and checked */
	long failures;
	long pruned_bound;		/* alternatives the bound cut */
	long pruned_sleep;		/* alternatives the sleep sets cut */
	long sleep_blocked;		/* runs that ended in an all-asleep state */
	bool complete;			/* the search space was exhausted */
	double seconds;
	/* The first failing schedule. */
	bool found;
	char why[200];
	int nsteps;
	struct ex_step steps[EX_MAX_STEPS];
	char replay[EX_MAX_STEPS + 64];
};

/* search.c */
void ex_search(const struct ex_scenario *sc, const struct ex_opts *o,
	       struct ex_result *r);
/* Run one schedule from a replay string; 0 ok, 1 fails, 2 bad string. */
int ex_replay(const char *replay, struct ex_result *r, char *err, size_t errlen);

/* engine.c: run one schedule. choices[0..n) are fixed; see search.c. */
struct ex_frame {
	unsigned enabled;		/* threads that could run at this point */
	int last;			/* thread that ran the step before, or -1 */
	int chosen;
	unsigned fp;			/* objects the chosen step touched */
};
typedef int (*ex_chooser)(void *cookie, int depth, unsigned enabled, int last);
struct ex_run_out {
	int nsteps;
	struct ex_frame frame[EX_MAX_STEPS];
	struct ex_step *steps;		/* if not NULL: labels and states */
	const char *why;		/* failure, or NULL */
	char whybuf[200];
	bool abandoned;			/* the chooser returned -1 */
};
void ex_run(const struct ex_scenario *sc, ex_chooser choose, void *cookie,
	    struct ex_run_out *out);

/* scenarios.c */
extern const struct ex_scenario *const ex_scenarios[];
const struct ex_scenario *ex_find(const char *name);

/* output.c */
void ex_print_timeline(FILE *f, const struct ex_scenario *sc,
		       const struct ex_result *r);
int ex_write_dot(const char *path, const struct ex_scenario *sc,
		 const struct ex_result *r);

#endif
