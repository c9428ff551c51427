/* task.h - just enough of the scheduler for rwsem: task_struct, current, schedule(), wake_q. */
#ifndef MMLOCKS_TASK_H
#define MMLOCKS_TASK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A task is a pthread. It sleeps in schedule() on a futex word that holds
 * its state, so a wake_up_process() that lands between set_current_state()
 * and schedule() is not lost: schedule() sees TASK_RUNNING and returns at
 * once, exactly the guarantee the kernel's wait loops are written against.
 */
#define TASK_RUNNING		0
#define TASK_UNINTERRUPTIBLE	2

struct wake_q_node {
	struct wake_q_node *_Atomic next;
};

struct task_struct {
	atomic_int __state;		/* futex word */
	atomic_int usage;		/* get_task_struct()/put_task_struct() */
	struct wake_q_node wake_q;
	int pid;			/* small id, for debugging output */
};

/*
 * A wake_q collects tasks to wake while a spinlock is held; the wakeups
 * are issued after the lock is dropped (wake_up_q()).
 */
struct wake_q_head {
	struct wake_q_node *_Atomic first;
	struct wake_q_node *_Atomic *lastp;
};

#define WAKE_Q_TAIL ((struct wake_q_node *)0x01)
#define DEFINE_WAKE_Q(name) \
	struct wake_q_head name = { WAKE_Q_TAIL, &name.first }

static inline void wake_q_init(struct wake_q_head *head)
{
	head->first = WAKE_Q_TAIL;
	head->lastp = &head->first;
}

static inline bool wake_q_empty(struct wake_q_head *head)
{
	return head->first == WAKE_Q_TAIL;
}

/* Full barrier, as the kernel's smp_mb(). */
#define smp_mb() atomic_thread_fence(memory_order_seq_cst)

extern __thread struct task_struct *current_task;
struct task_struct *sched_alloc_current(void);

static inline struct task_struct *get_current(void)
{
	struct task_struct *t = current_task;

	if (__builtin_expect(t == NULL, 0))
		t = sched_alloc_current();
	return t;
}
#define current get_current()

/* smp_store_mb(): the state store is ordered before the waiter's next load. */
static inline void set_current_state(int state)
{
	atomic_store_explicit(&current->__state, state, memory_order_relaxed);
	smp_mb();
}

static inline void __set_current_state(int state)
{
	atomic_store_explicit(&current->__state, state, memory_order_relaxed);
}

void get_task_struct(struct task_struct *t);
void put_task_struct(struct task_struct *t);
void schedule(void);
bool wake_up_process(struct task_struct *t);
void wake_q_add(struct wake_q_head *head, struct task_struct *task);
void wake_q_add_safe(struct wake_q_head *head, struct task_struct *task);
void wake_up_q(struct wake_q_head *head);

/* Monotonic time in nanoseconds: the model's jiffies. */
long long sched_clock_ns(void);

#endif
