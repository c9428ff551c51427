/* task.c - tasks, sleeping and wake_q for the userspace rwsem (futex based). */
#define _GNU_SOURCE
#include "task.h"
#include "../common/list.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread struct task_struct *current_task;

static pthread_key_t task_key;
static pthread_once_t task_key_once = PTHREAD_ONCE_INIT;
static atomic_int next_pid = 1;

/* Thread exit drops the thread's own reference; a waker may still hold one. */
static void task_exit(void *arg)
{
	put_task_struct(arg);
}

static void task_key_init(void)
{
	if (pthread_key_create(&task_key, task_exit) != 0)
		abort();
}

struct task_struct *sched_alloc_current(void)
{
	struct task_struct *t = calloc(1, sizeof(*t));

	if (!t) {
		perror("calloc");
		abort();
	}
	atomic_init(&t->__state, TASK_RUNNING);
	atomic_init(&t->usage, 1);
	atomic_init(&t->wake_q.next, NULL);
	t->pid = atomic_fetch_add(&next_pid, 1);
	pthread_once(&task_key_once, task_key_init);
	pthread_setspecific(task_key, t);
	current_task = t;
	return t;
}

void get_task_struct(struct task_struct *t)
{
	atomic_fetch_add_explicit(&t->usage, 1, memory_order_relaxed);
}

void put_task_struct(struct task_struct *t)
{
	if (atomic_fetch_sub_explicit(&t->usage, 1, memory_order_acq_rel) == 1)
		free(t);
}

static long futex(atomic_int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

/*
 * Sleep until someone has set our state back to TASK_RUNNING. Returns at
 * once if that already happened; may also return spuriously (a stale
 * wakeup from an earlier wake_q), which every caller's loop tolerates.
 */
void schedule(void)
{
	struct task_struct *t = current;
	int state;

	while ((state = atomic_load_explicit(&t->__state,
					     memory_order_acquire)) != TASK_RUNNING) {
		if (futex(&t->__state, FUTEX_WAIT_PRIVATE, state) < 0 &&
		    errno != EAGAIN && errno != EINTR) {
			perror("futex wait");
			abort();
		}
	}
}

/* try_to_wake_up() in miniature: only a sleeping-state task needs a kick. */
bool wake_up_process(struct task_struct *t)
{
	int state = atomic_load_explicit(&t->__state, memory_order_relaxed);

	smp_mb();
	while (state != TASK_RUNNING) {
		if (atomic_compare_exchange_weak(&t->__state, &state,
						 TASK_RUNNING)) {
			futex(&t->__state, FUTEX_WAKE_PRIVATE, 1);
			return true;
		}
	}
	return false;
}

/* A task sits on at most one wake_q; a second adder relies on the first. */
static bool __wake_q_add(struct wake_q_head *head, struct task_struct *task)
{
	struct wake_q_node *node = &task->wake_q;
	struct wake_q_node *expected = NULL;

	smp_mb();
	if (!atomic_compare_exchange_strong_explicit(&node->next, &expected,
						     WAKE_Q_TAIL,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return false;
	/* Atomic stores only because another waker may CAS this word. */
	atomic_store_explicit(head->lastp, node, memory_order_relaxed);
	head->lastp = &node->next;
	return true;
}

void wake_q_add(struct wake_q_head *head, struct task_struct *task)
{
	if (__wake_q_add(head, task))
		get_task_struct(task);
}

/* The caller already holds a reference; it passes to the wake_q. */
void wake_q_add_safe(struct wake_q_head *head, struct task_struct *task)
{
	if (!__wake_q_add(head, task))
		put_task_struct(task);
}

void wake_up_q(struct wake_q_head *head)
{
	struct wake_q_node *node = head->first;

	while (node != WAKE_Q_TAIL) {
		struct task_struct *task =
			container_of(node, struct task_struct, wake_q);

		node = atomic_load_explicit(&node->next, memory_order_relaxed);
		atomic_store_explicit(&task->wake_q.next, NULL,
				      memory_order_relaxed);
		wake_up_process(task);
		put_task_struct(task);
	}
	wake_q_init(head);	/* reusable, unlike the kernel's one-shot use */
}

long long sched_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
