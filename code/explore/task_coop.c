/* task_coop.c - code/rwsem/task.h for the explorer: schedule() gives the baton back instead of sleeping on a futex. */
#define _GNU_SOURCE
#include "task.h"
#include "../common/list.h"
#include "explore.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * The explorer links this file instead of code/rwsem/task.c. Every sleep
 * in the rwsem (and so in mmap_lock and the VMA locks built on it) is a
 * wait loop around schedule(); here schedule() marks the thread "cannot
 * run" and hands the baton back, and wake_up_process() makes it runnable
 * again. A wakeup that lands between set_current_state() and schedule()
 * is kept in the state word, as with the futex: schedule() then returns
 * at once. Time stands still (sched_clock_ns() is 0), so no waiter ever
 * times out: RWSEM_FLAG_HANDOFF is out of the explorer's reach.
 *
 * The wake_q functions are task.c's, unchanged in meaning.
 */
__thread struct task_struct *current_task;

static pthread_key_t task_key;
static pthread_once_t task_key_once = PTHREAD_ONCE_INIT;
static atomic_int next_pid = 1;

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
	ex_bind_task(t);
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

void schedule(void)
{
	struct task_struct *t = current;

	while (atomic_load(&t->__state) != TASK_RUNNING) {
		if (!ex_in_thread()) {
			/* Setup and teardown run alone: nobody could wake them. */
			fprintf(stderr, "explore: a scenario's setup or teardown would sleep "
				"(a lock left held by the schedule before?)\n");
			exit(3);
		}
		ex_block();
	}
}

bool wake_up_process(struct task_struct *t)
{
	int state = atomic_load(&t->__state);

	if (state == TASK_RUNNING)
		return false;
	atomic_store(&t->__state, TASK_RUNNING);
	ex_wake(t);
	return true;
}

static bool __wake_q_add(struct wake_q_head *head, struct task_struct *task)
{
	struct wake_q_node *node = &task->wake_q;
	struct wake_q_node *expected = NULL;

	if (!atomic_compare_exchange_strong(&node->next, &expected, WAKE_Q_TAIL))
		return false;
	atomic_store(head->lastp, node);
	head->lastp = &node->next;
	return true;
}

void wake_q_add(struct wake_q_head *head, struct task_struct *task)
{
	if (__wake_q_add(head, task))
		get_task_struct(task);
}

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

		node = atomic_load(&node->next);
		atomic_store(&task->wake_q.next, NULL);
		wake_up_process(task);
		put_task_struct(task);
	}
	wake_q_init(head);
}

long long sched_clock_ns(void)
{
	return 0;
}
