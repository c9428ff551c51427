/* rwsem_internal.h - what rwsem.c, rwsem_wait.c and rwsem_steal.c share: owner word, waiters, wake types. */
#ifndef MMLOCKS_RWSEM_INTERNAL_H
#define MMLOCKS_RWSEM_INTERNAL_H

#include "rwsem.h"
#include "task.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* region: owner */
/*
 * sem->owner holds the owning task pointer; its low bits are flags.
 * A writer stores itself there. A reader stores itself with
 * RWSEM_READER_OWNED and nobody clears it on up_read(), so for a free or
 * reader-held lock it only says "last taken by a reader": a hint.
 * RWSEM_NONSPINNABLE tells optimistic spinners not to spin on readers.
 */
#define RWSEM_READER_OWNED	(1UL << 0)
#define RWSEM_NONSPINNABLE	(1UL << 1)
#define RWSEM_OWNER_FLAGS_MASK	(RWSEM_READER_OWNED | RWSEM_NONSPINNABLE)

static inline void rwsem_set_owner(struct rw_semaphore *sem)
{
	atomic_store_explicit(&sem->owner, (long)current, memory_order_relaxed);
}

static inline void rwsem_clear_owner(struct rw_semaphore *sem)
{
	atomic_store_explicit(&sem->owner, 0, memory_order_relaxed);
}

static inline void __rwsem_set_reader_owned(struct rw_semaphore *sem,
					    struct task_struct *owner)
{
	unsigned long val = (unsigned long)owner | RWSEM_READER_OWNED |
		(atomic_load_explicit(&sem->owner, memory_order_relaxed) &
		 RWSEM_NONSPINNABLE);

	atomic_store_explicit(&sem->owner, (long)val, memory_order_relaxed);
}

static inline void rwsem_set_reader_owned(struct rw_semaphore *sem)
{
	__rwsem_set_reader_owned(sem, current);
}
/* endregion: owner */

struct rwsem_waiter {
	struct list_head list;
	struct task_struct *_Atomic task;	/* NULL once a reader is granted */
	enum rwsem_waiter_type type;
	long long timeout;			/* sched_clock_ns() deadline */
	bool handoff_set;
};
#define rwsem_first_waiter(sem) \
	list_first_entry(&(sem)->wait_list, struct rwsem_waiter, list)

enum rwsem_wake_type {
	RWSEM_WAKE_ANY,		/* Wake whatever's at head of wait list */
	RWSEM_WAKE_READERS,	/* Wake readers only */
	RWSEM_WAKE_READ_OWNED	/* Waker thread holds the read lock */
};

/* Batch limit for readers woken by one rwsem_mark_wake() call. */
#define MAX_READERS_WAKEUP	0x100

/*
 * The wait_lock is a pthread mutex: userspace has no interrupts to mask
 * and cannot disable preemption, so a spinning wait_lock holder that gets
 * preempted would stall everyone; the names stay the kernel's.
 */
#define raw_spin_lock_irq(l)	pthread_mutex_lock(l)
#define raw_spin_unlock_irq(l)	pthread_mutex_unlock(l)

/* jiffies and time_after(), in nanoseconds. */
#define jiffies			sched_clock_ns()
#define time_after(a, b)	((long long)((b) - (a)) < 0)

#define lockevent_inc(sem, ev) \
	atomic_fetch_add_explicit(&(sem)->events[LOCKEVENT_##ev], 1, \
				  memory_order_relaxed)
#define lockevent_cond_inc(sem, ev, n) \
	atomic_fetch_add_explicit(&(sem)->events[LOCKEVENT_##ev], (n), \
				  memory_order_relaxed)

/* TEST HOOK: one NULL check when no test is attached. */
#define rwsem_hook(sem, point) do {					\
	if (unlikely((sem)->hook))					\
		(sem)->hook((sem), (point), (sem)->hook_arg);		\
} while (0)

/* rwsem_wait.c */
void rwsem_mark_wake(struct rw_semaphore *sem, enum rwsem_wake_type wake_type,
		     struct wake_q_head *wake_q);
bool rwsem_try_write_lock(struct rw_semaphore *sem, struct rwsem_waiter *waiter);
void rwsem_cond_wake_waiter(struct rw_semaphore *sem, long count,
			    struct wake_q_head *wake_q);
void rwsem_wake(struct rw_semaphore *sem);
void rwsem_downgrade_wake(struct rw_semaphore *sem);

/* rwsem_steal.c: true if the reader took the lock without queueing. */
bool rwsem_read_steal(struct rw_semaphore *sem, long count,
		      enum rwsem_steal_policy policy, struct wake_q_head *wake_q);

#endif
