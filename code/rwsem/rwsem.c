/* rwsem.c - rw_semaphore fast paths, slow paths and release, after Linux 6.12 kernel/locking/rwsem.c. */
#include "rwsem_internal.h"

#include <stdlib.h>

/* No lockdep map and no CONFIG_DEBUG_RWSEMS magic in the model. */
void init_rwsem(struct rw_semaphore *sem)
{
	atomic_init(&sem->count, RWSEM_UNLOCKED_VALUE);
	atomic_init(&sem->owner, 0L);
	if (pthread_mutex_init(&sem->wait_lock, NULL) != 0)
		abort();
	INIT_LIST_HEAD(&sem->wait_list);
	sem->policy = RWSEM_STEAL;
	sem->wait_timeout_ns = RWSEM_WAIT_TIMEOUT_NS;
	sem->hook = NULL;
	sem->hook_arg = NULL;
	for (int i = 0; i < lockevent_num; i++)
		atomic_init(&sem->events[i], 0);
}

void rwsem_destroy(struct rw_semaphore *sem)
{
	pthread_mutex_destroy(&sem->wait_lock);
}

/* Configuration: call while no thread uses the lock. */
void rwsem_set_policy(struct rw_semaphore *sem, enum rwsem_steal_policy policy)
{
	sem->policy = policy;
}

void rwsem_set_wait_timeout_ns(struct rw_semaphore *sem, long long ns)
{
	sem->wait_timeout_ns = ns;
}

void rwsem_set_hook(struct rw_semaphore *sem, rwsem_hook_fn fn, void *arg)
{
	sem->hook = fn;
	sem->hook_arg = arg;
}

/* region: read-fastpath */
/*
 * Optimistically add a reader bias. It sticks (we hold the lock) unless
 * a writer, a waiter, a handoff or overflow is flagged; then the slowpath
 * starts with the bias already in the count.
 */
static inline bool rwsem_read_trylock(struct rw_semaphore *sem, long *cntp)
{
	*cntp = atomic_fetch_add_explicit(&sem->count, RWSEM_READER_BIAS,
					  memory_order_acquire) + RWSEM_READER_BIAS;
	if (!(*cntp & RWSEM_READ_FAILED_MASK)) {
		rwsem_set_reader_owned(sem);
		return true;
	}
	return false;
}
/* endregion: read-fastpath */

/* region: write-fastpath */
/* A writer gets the lock only if the whole count is zero: no flags at all. */
static inline bool rwsem_write_trylock(struct rw_semaphore *sem)
{
	long tmp = RWSEM_UNLOCKED_VALUE;

	if (atomic_compare_exchange_strong_explicit(&sem->count, &tmp,
			RWSEM_WRITER_LOCKED, memory_order_acquire,
			memory_order_relaxed)) {
		rwsem_set_owner(sem);
		return true;
	}
	return false;
}
/* endregion: write-fastpath */

/*
 * Would stock 6.12 let this reader steal? Not if the lock looks owned by
 * other readers (the guard) or a writer or HANDOFF is set. The kernel's
 * patch 3 counts rwsem_rlock_nosteal inside the steal decision; the model
 * counts here, so that lab 01's own rwsem_steal.c is counted the same.
 */
static bool rwsem_stock_would_steal(struct rw_semaphore *sem, long count)
{
	long rcnt = count >> RWSEM_READER_SHIFT;

	if ((atomic_load_explicit(&sem->owner, memory_order_relaxed) &
	     RWSEM_READER_OWNED) && rcnt > 1 && !(count & RWSEM_WRITER_LOCKED))
		return false;
	return !(count & (RWSEM_WRITER_LOCKED | RWSEM_FLAG_HANDOFF));
}

/* Wait for the read lock to be granted. */
static void rwsem_down_read_slowpath(struct rw_semaphore *sem, long count,
				     enum rwsem_steal_policy policy)
{
	long adjustment = -RWSEM_READER_BIAS;
	struct rwsem_waiter waiter;
	bool stock_steal;
	DEFINE_WAKE_Q(wake_q);

	rwsem_hook(sem, RWSEM_HOOK_READ_SLOWPATH);
	stock_steal = rwsem_stock_would_steal(sem, count);
	if (rwsem_read_steal(sem, count, policy, &wake_q)) {
		wake_up_q(&wake_q);
		return;
	}
	/* Patch 3's lock event: a steal stock 6.12 would take, declined. */
	if (stock_steal)
		lockevent_inc(sem, rwsem_rlock_nosteal);

/* region: read-slowpath-queue */
	waiter.task = current;
	waiter.type = RWSEM_WAITING_FOR_READ;
	waiter.timeout = jiffies + sem->wait_timeout_ns;
	waiter.handoff_set = false;

	raw_spin_lock_irq(&sem->wait_lock);
	if (list_empty(&sem->wait_list)) {
		/* Nobody queued and no writer: our bias already is a read lock. */
		if (!(atomic_load_explicit(&sem->count, memory_order_acquire) &
		      RWSEM_WRITER_MASK)) {
			raw_spin_unlock_irq(&sem->wait_lock);
			rwsem_set_reader_owned(sem);
			lockevent_inc(sem, rwsem_rlock_fast);
			return;
		}
		adjustment += RWSEM_FLAG_WAITERS;
	}
	list_add_tail(&waiter.list, &sem->wait_list);

	/* Now waiting, no longer actively locking: drop our bias. */
	count = atomic_fetch_add(&sem->count, adjustment) + adjustment;
	rwsem_cond_wake_waiter(sem, count, &wake_q);
	raw_spin_unlock_irq(&sem->wait_lock);
	wake_up_q(&wake_q);
	rwsem_hook(sem, RWSEM_HOOK_READ_QUEUED);

	/* rwsem_mark_wake() clears waiter.task once it granted us the lock. */
	for (;;) {
		set_current_state(TASK_UNINTERRUPTIBLE);
		if (!atomic_load_explicit(&waiter.task, memory_order_acquire))
			break;
		schedule();
		lockevent_inc(sem, rwsem_sleep_reader);
	}
	__set_current_state(TASK_RUNNING);
	lockevent_inc(sem, rwsem_rlock);
/* endregion: read-slowpath-queue */
}

/* region: write-slowpath */
static void rwsem_down_write_slowpath(struct rw_semaphore *sem)
{
	struct rwsem_waiter waiter;
	DEFINE_WAKE_Q(wake_q);

	/* 6.12 spins on the owner first; the model has no spinning: it queues. */
	waiter.task = current;
	waiter.type = RWSEM_WAITING_FOR_WRITE;
	waiter.timeout = jiffies + sem->wait_timeout_ns;
	waiter.handoff_set = false;

	raw_spin_lock_irq(&sem->wait_lock);
	list_add_tail(&waiter.list, &sem->wait_list);
	if (rwsem_first_waiter(sem) != &waiter) {
		/* Not first: readers may be able to run, let them. */
		rwsem_cond_wake_waiter(sem, atomic_load(&sem->count), &wake_q);
		if (!wake_q_empty(&wake_q)) {
			raw_spin_unlock_irq(&sem->wait_lock);
			wake_up_q(&wake_q);
			raw_spin_lock_irq(&sem->wait_lock);
		}
	} else {
		atomic_fetch_or(&sem->count, RWSEM_FLAG_WAITERS);
	}

	set_current_state(TASK_UNINTERRUPTIBLE);
	for (;;) {
		if (rwsem_try_write_lock(sem, &waiter))
			break;
		raw_spin_unlock_irq(&sem->wait_lock);
		rwsem_hook(sem, RWSEM_HOOK_WRITE_SLEEP);
		schedule();
		lockevent_inc(sem, rwsem_sleep_writer);
		rwsem_hook(sem, RWSEM_HOOK_WRITE_WOKEN);
		set_current_state(TASK_UNINTERRUPTIBLE);
		raw_spin_lock_irq(&sem->wait_lock);
	}
	__set_current_state(TASK_RUNNING);
	raw_spin_unlock_irq(&sem->wait_lock);
	lockevent_inc(sem, rwsem_wlock);
}
/* endregion: write-slowpath */

/* region: nosteal-api */
/*
 * 6.12's __down_read_common() with the series' extra argument (a bool
 * steal there; a policy here, so that WRITER_FIRST fits too), minus
 * preempt_disable() (userspace cannot) and the state argument: the model
 * has no signals, so no _killable variants and no out_nolock paths.
 */
static inline void __down_read_common(struct rw_semaphore *sem,
				      enum rwsem_steal_policy policy)
{
	long count;

	if (!rwsem_read_trylock(sem, &count))
		rwsem_down_read_slowpath(sem, count, policy);
}

void down_read(struct rw_semaphore *sem)
{
	__down_read_common(sem, sem->policy);
}

/* For callers that drop the lock *so that* a queued writer can go first. */
void down_read_nosteal(struct rw_semaphore *sem)
{
	__down_read_common(sem, RWSEM_NOSTEAL);
}
/* endregion: nosteal-api */

void down_read_policy(struct rw_semaphore *sem, enum rwsem_steal_policy policy)
{
	__down_read_common(sem, policy);
}

int down_read_trylock(struct rw_semaphore *sem)
{
	long tmp = atomic_load_explicit(&sem->count, memory_order_relaxed);

	while (!(tmp & RWSEM_READ_FAILED_MASK)) {
		if (atomic_compare_exchange_weak_explicit(&sem->count, &tmp,
				tmp + RWSEM_READER_BIAS, memory_order_acquire,
				memory_order_relaxed)) {
			rwsem_set_reader_owned(sem);
			return 1;
		}
	}
	return 0;
}

void down_write(struct rw_semaphore *sem)
{
	if (unlikely(!rwsem_write_trylock(sem)))
		rwsem_down_write_slowpath(sem);
}

int down_write_trylock(struct rw_semaphore *sem)
{
	return rwsem_write_trylock(sem);
}

/* region: up-read */
/*
 * The last reader out wakes the queue, but only if no writer holds the
 * lock (a stealing writer) and there are waiters. The owner field keeps
 * this reader's pointer: the RWSEM_READER_OWNED hint outlives the lock.
 */
void up_read(struct rw_semaphore *sem)
{
	long tmp;

	tmp = atomic_fetch_sub_explicit(&sem->count, RWSEM_READER_BIAS,
					memory_order_release) - RWSEM_READER_BIAS;
	if (unlikely((tmp & (RWSEM_LOCK_MASK|RWSEM_FLAG_WAITERS)) ==
		     RWSEM_FLAG_WAITERS)) {
		rwsem_hook(sem, RWSEM_HOOK_UP_READ_WAKE);
		rwsem_wake(sem);
	}
}
/* endregion: up-read */

/* region: up-write */
void up_write(struct rw_semaphore *sem)
{
	long tmp;

	rwsem_clear_owner(sem);
	tmp = atomic_fetch_sub_explicit(&sem->count, RWSEM_WRITER_LOCKED,
					memory_order_release);
	if (unlikely(tmp & RWSEM_FLAG_WAITERS))
		rwsem_wake(sem);
}
/* endregion: up-write */

/* Exchange the writer bit for a reader bias in one add; wake readers. */
void downgrade_write(struct rw_semaphore *sem)
{
	long tmp;

	tmp = atomic_fetch_add_explicit(&sem->count,
			-RWSEM_WRITER_LOCKED + RWSEM_READER_BIAS,
			memory_order_release);
	rwsem_set_reader_owned(sem);
	if (tmp & RWSEM_FLAG_WAITERS)
		rwsem_downgrade_wake(sem);
}

long rwsem_event(struct rw_semaphore *sem, enum lock_events ev)
{
	return atomic_load(&sem->events[ev]);
}

void rwsem_reset_events(struct rw_semaphore *sem)
{
	for (int i = 0; i < lockevent_num; i++)
		atomic_store(&sem->events[i], 0);
}

const char *rwsem_event_name(enum lock_events ev)
{
#define RWSEM_EVENT_NAME(name) #name,
	static const char *const names[] = { RWSEM_LOCK_EVENTS(RWSEM_EVENT_NAME) };
#undef RWSEM_EVENT_NAME
	return (ev >= 0 && ev < lockevent_num) ? names[ev] : "?";
}

/* Takes wait_lock: for tests, to see who is queued. */
int rwsem_count_waiters(struct rw_semaphore *sem, enum rwsem_waiter_type type)
{
	struct rwsem_waiter *w, *tmp;
	int n = 0;

	raw_spin_lock_irq(&sem->wait_lock);
	list_for_each_entry_safe(w, tmp, &sem->wait_list, list)
		n += (w->type == type);
	raw_spin_unlock_irq(&sem->wait_lock);
	return n;
}

const char *rwsem_policy_name(enum rwsem_steal_policy policy)
{
	switch (policy) {
	case RWSEM_STEAL:		return "STEAL";
	case RWSEM_NOSTEAL:		return "NOSTEAL";
	case RWSEM_WRITER_FIRST:	return "WRITER_FIRST";
	}
	return "?";
}
