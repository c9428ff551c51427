/* spinlock.h - a ticket spinlock that reports whether it had to wait: the model's split_queue_lock. */
#ifndef MMLOCKS_THP_SPINLOCK_H
#define MMLOCKS_THP_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

/*
 * FIFO like the kernel's queued spinlock (first come, first served), but
 * a plain ticket lock: take a ticket, wait until it is served. A kernel
 * CPU holds a spinlock with preemption off; a userspace thread can be
 * preempted while holding or waiting for one, and with more threads than
 * CPUs the next ticket's owner may not be running at all. So a waiter
 * yields its CPU after spinning for a while (the kernel never does).
 */
typedef struct {
	atomic_uint next;	/* the next ticket to hand out */
	atomic_uint owner;	/* the ticket being served */
} spinlock_t;

#define SPIN_BEFORE_YIELD 256

static inline void spin_lock_init(spinlock_t *lock)
{
	atomic_init(&lock->next, 0);
	atomic_init(&lock->owner, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Returns true when the lock was held by someone else on arrival. */
static inline bool spin_lock(spinlock_t *lock)
{
	unsigned int me = atomic_fetch_add_explicit(&lock->next, 1, memory_order_relaxed);
	unsigned int spins = 0;

	if (atomic_load_explicit(&lock->owner, memory_order_acquire) == me)
		return false;
	while (atomic_load_explicit(&lock->owner, memory_order_acquire) != me) {
		cpu_relax();
		if (++spins % SPIN_BEFORE_YIELD == 0)
			sched_yield();
	}
	return true;
}

static inline void spin_unlock(spinlock_t *lock)
{
	unsigned int me = atomic_load_explicit(&lock->owner, memory_order_relaxed);

	atomic_store_explicit(&lock->owner, me + 1, memory_order_release);
}

static inline bool spin_is_locked(spinlock_t *lock)
{
	return atomic_load_explicit(&lock->owner, memory_order_relaxed) !=
	       atomic_load_explicit(&lock->next, memory_order_relaxed);
}

#endif
