/* harness.h - test actors: threads that run rwsem calls on request and stop at hook points, to force interleavings. */
#ifndef MMLOCKS_HARNESS_H
#define MMLOCKS_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "../rwsem.h"

/*
 * An actor is a thread that owns its own locks. The test (main thread)
 * sends it one command at a time and waits for events: the hook points
 * the actor passed, and EV_DONE when its command returned. An armed hook
 * point makes the actor stop there until actor_release(). Every wait is
 * bounded (HARNESS_WAIT_S), so a wrong interleaving fails, never hangs.
 */
enum actor_cmd {
	CMD_DOWN_READ,		/* down_read(): the lock's default policy */
	CMD_DOWN_READ_NOSTEAL,	/* down_read_nosteal() */
	CMD_UP_READ,
	CMD_DOWN_WRITE,
	CMD_UP_WRITE,
	CMD_EXIT,
};

#define EV_DONE		RWSEM_NR_HOOKS	/* the command returned */
#define EV_TIMEOUT	(-1)
#define EVBIT(e)	(1u << (e))
#define HARNESS_WAIT_S	10
#define ACTOR_MAX_EV	256

struct harness {
	struct rw_semaphore sem;
	atomic_long seq;		/* acquisition order, shared by actors */
};

struct actor {
	struct harness *h;
	const char *name;
	pthread_t thread;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool has_cmd;
	enum actor_cmd cmd;
	int ev[ACTOR_MAX_EV];		/* event log, read by actor_wait() */
	int nev, rd;
	unsigned armed;			/* hook points that stop the actor */
	bool released;
	long acquired_at;		/* h->seq at its last lock acquisition */
};

/*
 * Criterion's own --timeout / .timeout can deadlock its runner (Criterion
 * issue #345), so tests bound themselves: use this as a suite's .init.
 */
#define HARNESS_WATCHDOG_S 60
void harness_watchdog(void);

void harness_init(struct harness *h, enum rwsem_steal_policy policy,
		  long long wait_timeout_ns);
void harness_fini(struct harness *h);	/* asserts the lock is idle */

void actor_start(struct actor *a, struct harness *h, const char *name);
void actor_stop(struct actor *a);
void actor_do(struct actor *a, enum actor_cmd cmd);
int actor_wait(struct actor *a, unsigned mask);
void actor_expect(struct actor *a, int ev);	/* actor_wait + assert */
void actor_arm(struct actor *a, enum rwsem_hook_point point);
void actor_release(struct actor *a);
const char *ev_name(int ev);

/* Scenarios shared by code/rwsem tests and the lab 01 grader. */
struct order_result {
	bool reader_stole;	/* R's re-take did not queue */
	long r_seq, w_seq;	/* acquisition order of R's re-take and W */
	long steals;		/* rwsem_rlock_steal */
	long wlock_handoffs;	/* rwsem_wlock_handoff */
	long nosteals;		/* rwsem_rlock_nosteal */
	long rlock_handoffs;	/* rwsem_rlock_handoff */
	int writers_queued;	/* writers on the list when R decided */
};
void scenario_drop_retake(enum rwsem_steal_policy lock_policy,
			  enum actor_cmd retake, struct order_result *res);
void scenario_second_reader(enum rwsem_steal_policy lock_policy,
			    enum actor_cmd second, struct order_result *res);
void scenario_handoff(struct order_result *res);
void scenario_writer_wins_race(enum actor_cmd retake, struct order_result *res);
void scenario_reader_handoff(struct order_result *res);

#endif
