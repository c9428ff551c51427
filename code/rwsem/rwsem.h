/* rwsem.h - a userspace rw_semaphore running the algorithm of Linux 6.12 kernel/locking/rwsem.c. */
#ifndef MMLOCKS_RWSEM_H
#define MMLOCKS_RWSEM_H

/*
 * The whole lock state lives in one word, sem->count, changed with atomic
 * add/cmpxchg; a spinlock-protected FIFO of sleeping waiters takes over
 * when the fast paths fail. Readers that find the lock briefly free may
 * "steal" it ahead of a queued writer (6.12's reader optimistic lock
 * stealing); a writer that has waited RWSEM_WAIT_TIMEOUT sets the HANDOFF
 * bit, which stops stealing and reserves the lock for it.
 *
 * Model extras, not in the kernel: a steal policy per lock and per call
 * (STEAL = stock 6.12, NOSTEAL = down_read_nosteal() from the khugepaged
 * series, WRITER_FIRST = the reviewer's "never steal past a queued
 * writer"), a configurable wait timeout, test hooks and per-lock
 * lock_event counters.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/list.h"

#define BITS_PER_LONG ((int)(8 * sizeof(long)))

/* region: count-bits */
/*
 * sem->count on 64-bit:
 *   bit 0      RWSEM_WRITER_LOCKED   a writer owns the lock
 *   bit 1      RWSEM_FLAG_WAITERS    the wait list is not empty
 *   bit 2      RWSEM_FLAG_HANDOFF    the first waiter reserved the lock
 *   bits 3-7   reserved
 *   bits 8-62  reader count, in units of RWSEM_READER_BIAS
 *   bit 63     RWSEM_FLAG_READFAIL   reader count overflow guard
 */
#define RWSEM_WRITER_LOCKED	(1UL << 0)
#define RWSEM_FLAG_WAITERS	(1UL << 1)
#define RWSEM_FLAG_HANDOFF	(1UL << 2)
#define RWSEM_FLAG_READFAIL	(1UL << (BITS_PER_LONG - 1))

#define RWSEM_READER_SHIFT	8
#define RWSEM_READER_BIAS	(1UL << RWSEM_READER_SHIFT)
#define RWSEM_READER_MASK	(~(RWSEM_READER_BIAS - 1))
#define RWSEM_WRITER_MASK	RWSEM_WRITER_LOCKED
#define RWSEM_LOCK_MASK		(RWSEM_WRITER_MASK|RWSEM_READER_MASK)
#define RWSEM_READ_FAILED_MASK	(RWSEM_WRITER_MASK|RWSEM_FLAG_WAITERS|\
				 RWSEM_FLAG_HANDOFF|RWSEM_FLAG_READFAIL)

#define RWSEM_UNLOCKED_VALUE	0UL
/* endregion: count-bits */

/*
 * 6.12: DIV_ROUND_UP(HZ, 250) jiffies, 1 jiffy at our kernel's HZ=250. The
 * kernel tests time_after(jiffies, timeout) on a tick count, so the
 * effective wait is 4-8 ms; the model's deadline is exactly 4 ms after
 * queueing, on a nanosecond clock: a simplification.
 */
#define RWSEM_WAIT_TIMEOUT_NS	4000000LL

/* Counters named after kernel/locking/lock_events_list.h. */
#define RWSEM_LOCK_EVENTS(X)						\
	X(rwsem_sleep_reader)	/* # of reader sleeps */		\
	X(rwsem_sleep_writer)	/* # of writer sleeps */		\
	X(rwsem_wake_reader)	/* # of reader wakeups */		\
	X(rwsem_wake_writer)	/* # of writer wakeups */		\
	X(rwsem_rlock)		/* # of read locks acquired (slowpath) */ \
	X(rwsem_rlock_steal)	/* # of read locks by lock stealing */	\
	X(rwsem_rlock_nosteal)	/* # of steals declined, reader queued (patch 3) */ \
	X(rwsem_rlock_fast)	/* # of fast read locks acquired */	\
	X(rwsem_rlock_handoff)	/* # of read lock handoffs */		\
	X(rwsem_wlock)		/* # of write locks acquired (slowpath) */ \
	X(rwsem_wlock_handoff)	/* # of write lock handoffs */

#define RWSEM_EVENT_ENUM(name) LOCKEVENT_##name,
enum lock_events {
	RWSEM_LOCK_EVENTS(RWSEM_EVENT_ENUM)
	lockevent_num
};
#undef RWSEM_EVENT_ENUM

/* How a reader in the slowpath treats a lock it could steal. */
enum rwsem_steal_policy {
	RWSEM_STEAL,		/* stock 6.12 */
	RWSEM_NOSTEAL,		/* down_read_nosteal(): always queue */
	RWSEM_WRITER_FIRST,	/* steal unless a writer is first in the queue */
};

/*
 * Test hooks: called, when sem->hook is set, in the thread that reaches
 * the point. A test blocks there to force an interleaving.
 */
enum rwsem_hook_point {
	RWSEM_HOOK_READ_SLOWPATH,	/* reader in slowpath, before steal decision */
	RWSEM_HOOK_READ_QUEUED,		/* reader on wait_list, before first sleep */
	RWSEM_HOOK_WRITE_SLEEP,		/* queued writer failed to lock, about to sleep */
	RWSEM_HOOK_WRITE_WOKEN,		/* writer back from schedule(), before retry */
	RWSEM_HOOK_UP_READ_WAKE,	/* last reader out left waiters, before rwsem_wake() */
	RWSEM_NR_HOOKS
};

struct rw_semaphore;
typedef void (*rwsem_hook_fn)(struct rw_semaphore *sem,
			      enum rwsem_hook_point point, void *arg);

/* region: struct-rw-semaphore */
struct rw_semaphore {
	atomic_long count;		/* the bits above */
	atomic_long owner;		/* task pointer | RWSEM_READER_OWNED ... */
	pthread_mutex_t wait_lock;	/* protects wait_list */
	struct list_head wait_list;	/* struct rwsem_waiter, FIFO */

	/* Model only: */
	enum rwsem_steal_policy policy;	/* what down_read() does */
	long long wait_timeout_ns;	/* RWSEM_WAIT_TIMEOUT */
	rwsem_hook_fn hook;
	void *hook_arg;
	atomic_long events[lockevent_num];
};
/* endregion: struct-rw-semaphore */

enum rwsem_waiter_type {
	RWSEM_WAITING_FOR_WRITE,
	RWSEM_WAITING_FOR_READ
};

void init_rwsem(struct rw_semaphore *sem);
void rwsem_destroy(struct rw_semaphore *sem);
void rwsem_set_policy(struct rw_semaphore *sem, enum rwsem_steal_policy policy);
void rwsem_set_wait_timeout_ns(struct rw_semaphore *sem, long long ns);
void rwsem_set_hook(struct rw_semaphore *sem, rwsem_hook_fn fn, void *arg);

void down_read(struct rw_semaphore *sem);
void down_read_nosteal(struct rw_semaphore *sem);
void down_read_policy(struct rw_semaphore *sem, enum rwsem_steal_policy policy);
int down_read_trylock(struct rw_semaphore *sem);
void up_read(struct rw_semaphore *sem);

void down_write(struct rw_semaphore *sem);
int down_write_trylock(struct rw_semaphore *sem);
void up_write(struct rw_semaphore *sem);
void downgrade_write(struct rw_semaphore *sem);

/* Introspection for tests and benchmarks. */
long rwsem_event(struct rw_semaphore *sem, enum lock_events ev);
const char *rwsem_event_name(enum lock_events ev);
void rwsem_reset_events(struct rw_semaphore *sem);
int rwsem_count_waiters(struct rw_semaphore *sem, enum rwsem_waiter_type type);
const char *rwsem_policy_name(enum rwsem_steal_policy policy);

#endif
