/* rwsem_steal.c - the reader's steal decision in rwsem_down_read_slowpath(), with the three policies. */
#include "rwsem_internal.h"

/*
 * A reader whose fast path failed has already added RWSEM_READER_BIAS to
 * the count; count is the value it saw. Return true if it keeps that bias
 * as a read lock now (a "steal", possibly ahead of queued waiters), false
 * if it must queue. Readers woken here are left in wake_q for the caller.
 * With policy RWSEM_STEAL it decides exactly as 6.12 does.
 */
/* region: read-slowpath-steal */
bool rwsem_read_steal(struct rw_semaphore *sem, long count,
		      enum rwsem_steal_policy policy, struct wake_q_head *wake_q)
{
	long rcnt = (count >> RWSEM_READER_SHIFT);
	bool steal = true;

	/* Other readers likely inside (rcnt counts us): stealing could starve. */
	if ((atomic_load_explicit(&sem->owner, memory_order_relaxed) &
	     RWSEM_READER_OWNED) && rcnt > 1 && !(count & RWSEM_WRITER_LOCKED))
		steal = false;

	/* region: nosteal-decision */
	if (policy == RWSEM_NOSTEAL)	/* down_read_nosteal() */
		steal = false;
	/* endregion: nosteal-decision */

	if (!steal || (count & (RWSEM_WRITER_LOCKED | RWSEM_FLAG_HANDOFF)))
		return false;

	/* region: writer-first */
	if (policy == RWSEM_WRITER_FIRST && (count & RWSEM_FLAG_WAITERS)) {
		bool writer_next;

		raw_spin_lock_irq(&sem->wait_lock);
		writer_next = !list_empty(&sem->wait_list) &&
			rwsem_first_waiter(sem)->type == RWSEM_WAITING_FOR_WRITE;
		raw_spin_unlock_irq(&sem->wait_lock);
		if (writer_next)
			return false;	/* queue behind the writer */
	}
	/* endregion: writer-first */

	rwsem_set_reader_owned(sem);
	lockevent_inc(sem, rwsem_rlock_steal);

	/* First reader in: take the queued readers at the front along. */
	if ((rcnt == 1) && (count & RWSEM_FLAG_WAITERS)) {
		raw_spin_lock_irq(&sem->wait_lock);
		if (!list_empty(&sem->wait_list))
			rwsem_mark_wake(sem, RWSEM_WAKE_READ_OWNED, wake_q);
		raw_spin_unlock_irq(&sem->wait_lock);
	}
	return true;
}
/* endregion: read-slowpath-steal */
