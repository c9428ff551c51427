/* vtest.h - deterministic interleavings for the VMA model: gates at hook points, threads with bounded joins, death tests. */
#ifndef MMLOCKS_VTEST_H
#define MMLOCKS_VTEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "../vma.h"

/*
 * A gate counts the threads that reached a hook point and holds each one
 * until the test opens the gate for it. Every wait is bounded (VT_WAIT_S;
 * a grader may lower it with vt_wait_s), so a wrong interleaving fails a
 * test instead of hanging it. No sleeps: tests wait for events.
 */
#define VT_WAIT_S 10
extern int vt_wait_s;

struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int arrived, opened;
	bool stop;		/* arrivals wait for gate_open() */
};

void gate_init(struct gate *g, bool stop);
void gate_arrive(struct gate *g);
bool gate_wait(struct gate *g, int n);	/* until n arrivals; false on timeout */
void gate_open(struct gate *g);		/* lets the next arrival through */
void gate_open_all(struct gate *g);	/* and every later one */
int gate_arrivals(struct gate *g);

/*
 * A test's mm with a gate per hook point. A point stops its thread only
 * when armed (vt_stop_at), optionally only for one VMA. An action runs
 * in the hooked thread instead (single-threaded interleavings).
 */
struct vtest;
typedef void (*vt_action_fn)(struct vtest *t, struct vm_area_struct *vma);

struct vtest {
	struct mm_struct mm;
	struct gate at[NR_VMA_HOOKS];
	struct vm_area_struct *stop_vma[NR_VMA_HOOKS];
	vt_action_fn action[NR_VMA_HOOKS];
	int action_left[NR_VMA_HOOKS];
	/* rwsem hook points, for whichever rwsem vt_watch_rwsem() chose */
	struct gate read_queued, write_sleep;
	void *arg;		/* for actions */
};

void vt_init(struct vtest *t);
void vt_fini(struct vtest *t);
void vt_stop_at(struct vtest *t, enum vma_hook_point p, struct vm_area_struct *only);
void vt_count_at(struct vtest *t, enum vma_hook_point p); /* arrivals only */
void vt_act_at(struct vtest *t, enum vma_hook_point p, vt_action_fn fn, int times);
void vt_watch_rwsem(struct vtest *t, struct rw_semaphore *sem);

/* Map [start, start + pages) with flags and fault every page in it. */
void vt_map(struct vtest *t, unsigned long start, unsigned long pages,
	    vm_flags_t flags, bool populate);
struct vm_area_struct *vt_vma(struct vtest *t, unsigned long addr);

struct vthread {
	pthread_t th;
	void (*fn)(struct vtest *t, void *arg);
	struct vtest *t;
	void *arg;
	atomic_bool done;
	bool joined;
};
void vt_spawn(struct vthread *th, struct vtest *t,
	      void (*fn)(struct vtest *t, void *arg), void *arg);
bool vt_join(struct vthread *th);	/* false if it did not end in time */

/*
 * Run fn(arg) in a child process; true if it died of SIGABRT with a
 * message containing `expect` on stderr.
 */
bool vt_dies_with(void (*fn)(void *arg), void *arg, const char *expect);

/* Criterion suites' .init: harness_watchdog() from code/rwsem's harness. */
#include "harness.h"

#define RW	(VM_READ | VM_WRITE)

#endif
