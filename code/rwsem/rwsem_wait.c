/* rwsem_wait.c - who gets the rwsem next: waking queued waiters and the writer's handoff. */
#include "rwsem_internal.h"

/*
 * Called with wait_lock held and a non-empty wait_list. Marks for wakeup
 * the writer at the head of the queue, or grants the read lock to the
 * readers in the queue (up to MAX_READERS_WAKEUP, skipping writers: the
 * phase-fair part). The caller issues the wakeups with wake_up_q() after
 * dropping wait_lock.
 */
/* region: mark-wake */
void rwsem_mark_wake(struct rw_semaphore *sem, enum rwsem_wake_type wake_type,
		     struct wake_q_head *wake_q)
{
	struct rwsem_waiter *waiter, *tmp;
	long oldcount, woken = 0, adjustment = 0;
	struct list_head wlist;

	waiter = rwsem_first_waiter(sem);
	if (waiter->type == RWSEM_WAITING_FOR_WRITE) {
		/* A woken writer still has to win rwsem_try_write_lock(). */
		if (wake_type == RWSEM_WAKE_ANY) {
			wake_q_add(wake_q, waiter->task);
			lockevent_inc(sem, rwsem_wake_writer);
		}
		return;
	}

	if (unlikely(atomic_load_explicit(&sem->count, memory_order_relaxed) < 0))
		return;		/* too many readers already */

	/* Grant the first reader before counting, in case a writer stole it. */
	if (wake_type != RWSEM_WAKE_READ_OWNED) {
		adjustment = RWSEM_READER_BIAS;
		oldcount = atomic_fetch_add(&sem->count, adjustment);
		if (unlikely(oldcount & RWSEM_WRITER_MASK)) {
			/* A writer got in first; waited too long? Ask for handoff. */
			if (time_after(jiffies, waiter->timeout)) {
				if (!(oldcount & RWSEM_FLAG_HANDOFF)) {
					adjustment -= RWSEM_FLAG_HANDOFF;
					lockevent_inc(sem, rwsem_rlock_handoff);
				}
				waiter->handoff_set = true;
			}
			atomic_fetch_add_explicit(&sem->count, -adjustment,
						  memory_order_relaxed);
			return;
		}
		__rwsem_set_reader_owned(sem, waiter->task);
	}
/* endregion: mark-wake */

	/*
	 * Two passes: first count the readers and add all their biases to
	 * the count, then clear waiter->task. A reader that sees its task
	 * cleared may run and up_read() at once, so its bias must be in.
	 */
	INIT_LIST_HEAD(&wlist);
	list_for_each_entry_safe(waiter, tmp, &sem->wait_list, list) {
		if (waiter->type == RWSEM_WAITING_FOR_WRITE)
			continue;
		woken++;
		list_move_tail(&waiter->list, &wlist);
		if (unlikely(woken >= MAX_READERS_WAKEUP))
			break;
	}

	adjustment = woken * RWSEM_READER_BIAS - adjustment;
	lockevent_cond_inc(sem, rwsem_wake_reader, woken);

	oldcount = atomic_load_explicit(&sem->count, memory_order_relaxed);
	if (list_empty(&sem->wait_list)) {
		/* Implies rwsem_del_waiter() for the last waiter. */
		adjustment -= RWSEM_FLAG_WAITERS;
		if (oldcount & RWSEM_FLAG_HANDOFF)
			adjustment -= RWSEM_FLAG_HANDOFF;
	} else if (woken) {
		/* Readers got the lock: no need to force writers out any more. */
		if (oldcount & RWSEM_FLAG_HANDOFF)
			adjustment -= RWSEM_FLAG_HANDOFF;
	}
	if (adjustment)
		atomic_fetch_add_explicit(&sem->count, adjustment,
					  memory_order_relaxed);

	list_for_each_entry_safe(waiter, tmp, &wlist, list) {
		struct task_struct *tsk = waiter->task;

		/* Our reference keeps tsk valid even if it returns and exits. */
		get_task_struct(tsk);
		atomic_store_explicit(&waiter->task, NULL, memory_order_release);
		wake_q_add_safe(wake_q, tsk);
	}
}

/*
 * Called with wait_lock held by a queued writer. Takes the lock if it is
 * free (and nobody else holds the handoff), or sets RWSEM_FLAG_HANDOFF if
 * this writer has waited longer than its timeout. On success the waiter
 * is off the list (it implies rwsem_del_waiter()).
 */
/* region: try-write-lock */
bool rwsem_try_write_lock(struct rw_semaphore *sem, struct rwsem_waiter *waiter)
{
	struct rwsem_waiter *first = rwsem_first_waiter(sem);
	long count, new;

	count = atomic_load_explicit(&sem->count, memory_order_relaxed);
	do {
		bool has_handoff = !!(count & RWSEM_FLAG_HANDOFF);

		/* The handoff belongs to the first waiter that set it. */
		if (has_handoff && first->handoff_set && waiter != first)
			return false;

		new = count;
		if (count & RWSEM_LOCK_MASK) {
			/* Held: a timed-out waiter requests handoff (no RT tasks here). */
			if (has_handoff || !time_after(jiffies, waiter->timeout))
				return false;
			new |= RWSEM_FLAG_HANDOFF;
		} else {
			new |= RWSEM_WRITER_LOCKED;
			new &= ~RWSEM_FLAG_HANDOFF;
			if (list_is_singular(&sem->wait_list))
				new &= ~RWSEM_FLAG_WAITERS;
		}
	} while (!atomic_compare_exchange_weak_explicit(&sem->count, &count, new,
			memory_order_acquire, memory_order_relaxed));

	if (new & RWSEM_FLAG_HANDOFF) {
		first->handoff_set = true;
		lockevent_inc(sem, rwsem_wlock_handoff);
		return false;
	}
	list_del(&waiter->list);
	rwsem_set_owner(sem);
	return true;
}
/* endregion: try-write-lock */

/*
 * A waiter just queued: if the lock is not writer-held, wake whoever can
 * run now (readers at the front if readers hold it, anyone if it is free).
 * Called from both slowpaths with wait_lock held.
 */
void rwsem_cond_wake_waiter(struct rw_semaphore *sem, long count,
			    struct wake_q_head *wake_q)
{
	enum rwsem_wake_type wake_type;

	if (count & RWSEM_WRITER_MASK)
		return;
	/* No clear_nonspinnable(): the model has no optimistic spinning. */
	wake_type = (count & RWSEM_READER_MASK) ? RWSEM_WAKE_READERS
						: RWSEM_WAKE_ANY;
	rwsem_mark_wake(sem, wake_type, wake_q);
}

/* up_read()/up_write() found waiters: wake the head of the queue. */
void rwsem_wake(struct rw_semaphore *sem)
{
	DEFINE_WAKE_Q(wake_q);

	raw_spin_lock_irq(&sem->wait_lock);
	if (!list_empty(&sem->wait_list))
		rwsem_mark_wake(sem, RWSEM_WAKE_ANY, &wake_q);
	raw_spin_unlock_irq(&sem->wait_lock);
	wake_up_q(&wake_q);
}

/* downgrade_write(): we hold a read lock now; let queued readers join. */
void rwsem_downgrade_wake(struct rw_semaphore *sem)
{
	DEFINE_WAKE_Q(wake_q);

	raw_spin_lock_irq(&sem->wait_lock);
	if (!list_empty(&sem->wait_list))
		rwsem_mark_wake(sem, RWSEM_WAKE_READ_OWNED, &wake_q);
	raw_spin_unlock_irq(&sem->wait_lock);
	wake_up_q(&wake_q);
}
