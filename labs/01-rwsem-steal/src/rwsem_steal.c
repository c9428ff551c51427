/* rwsem_steal.c - lab 01: the reader's steal decision in rwsem_down_read_slowpath(), three policies. */
#include "rwsem_internal.h"

/*
 * The model in code/rwsem calls this from rwsem_down_read_slowpath().
 * The reader's fast path failed; it has already added RWSEM_READER_BIAS
 * to sem->count, and `count` is the value it saw (bias included).
 *
 * Return true to keep that bias as a read lock right now (a "steal",
 * possibly ahead of waiters in the queue), false to go and queue.
 *
 *   policy RWSEM_STEAL         stock 6.12
 *   policy RWSEM_NOSTEAL       down_read_nosteal(): never steal
 *   policy RWSEM_WRITER_FIRST  steal, unless a writer is first in the queue
 */
bool rwsem_read_steal(struct rw_semaphore *sem, long count,
		      enum rwsem_steal_policy policy, struct wake_q_head *wake_q)
{
	long rcnt = (count >> RWSEM_READER_SHIFT);
	bool steal = true;

	/* TODO 1: 6.12's guard: if sem->owner says RWSEM_READER_OWNED, other readers hold the lock too (rcnt > 1) and no writer holds it, do not steal */
	if ((atomic_load_explicit(&sem->owner, memory_order_relaxed) &
	     RWSEM_READER_OWNED) && rcnt > 1 && !(count & RWSEM_WRITER_LOCKED))
		steal = false;
	/* END TODO 1 */

	/* TODO 2: down_read_nosteal() passes RWSEM_NOSTEAL: such a reader never steals */
	if (policy == RWSEM_NOSTEAL)
		steal = false;
	/* END TODO 2 */

	if (!steal || (count & (RWSEM_WRITER_LOCKED | RWSEM_FLAG_HANDOFF)))
		return false;

	/* TODO 3: RWSEM_WRITER_FIRST: if waiters are flagged, look at the first waiter under wait_lock; if it is a writer, queue instead of stealing */
	if (policy == RWSEM_WRITER_FIRST && (count & RWSEM_FLAG_WAITERS)) {
		bool writer_next;

		raw_spin_lock_irq(&sem->wait_lock);
		writer_next = !list_empty(&sem->wait_list) &&
			rwsem_first_waiter(sem)->type == RWSEM_WAITING_FOR_WRITE;
		raw_spin_unlock_irq(&sem->wait_lock);
		if (writer_next)
			return false;
	}
	/* END TODO 3 */

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
