/* deferred_split.c - deferred_split_folio() and folio_unqueue_deferred_split(): putting a folio on split_queue and taking it off. */
#include "thp.h"

/*
 * Lab 07 hands out this file with its TODO regions emptied
 * (labs/07-deferred-split/src/deferred_split.c is a link to it): the
 * book lists 6.12's mm/huge_memory.c and mm/internal.h instead.
 */

/* mm/huge_memory.c: queue a folio (partially_mapped: it just became so). */
void deferred_split_folio(struct folio *folio, bool partially_mapped)
{
	struct deferred_split *ds = folio->ds;

	/* Order-1 folios have no room for _deferred_list. */
	if (folio_order(folio) <= 1)
		return;
	if (!partially_mapped && !ds->split_underused_thp)
		return;

	split_queue_lock(ds, partially_mapped ? DEFERRED_SPLIT_LOCK_TAKEN
					      : SPLIT_QUEUE_LOCK_FAULT);
	/*
	 * Model only: the kernel's split_folio() first unmaps the folio, so
	 * no unmap can reach a folio being split; the model's split does not,
	 * so a folio split since the caller looked is left alone here.
	 */
	if (!folio_test_large(folio))
		goto out;
	/* TODO 2: under the lock, mark the folio partially mapped once and queue it once */
	/*
	 * Two CPUs may both have passed the unlocked check: the first one
	 * here sets the flag and counts the event; the second finds the
	 * flag set and the folio queued, and does nothing.
	 */
	if (partially_mapped && !folio_test_partially_mapped(folio)) {
		folio_set_partially_mapped(folio);
		count_thp_event(ds, THP_DEFERRED_SPLIT_PAGE);
	}
	/* Queued already (maybe at fault, as underused; maybe by the other CPU)? */
	if (list_empty(&folio->_deferred_list)) {
		list_add_tail(&folio->_deferred_list, &ds->split_queue);
		ds->split_queue_len++;
	}
	/* END TODO 2 */
out:
	split_queue_unlock(ds);
}

/* mm/huge_memory.c: take a queued folio off, under the lock. */
bool __folio_unqueue_deferred_split(struct folio *folio)
{
	struct deferred_split *ds = folio->ds;
	bool unqueued = false;

	split_queue_lock(ds, SPLIT_QUEUE_LOCK_FREE);
	/* TODO 3: if the folio is queued, take it off: the list, the length, the flag */
	if (!list_empty(&folio->_deferred_list)) {
		ds->split_queue_len--;
		folio_clear_partially_mapped(folio);
		list_del_init(&folio->_deferred_list);
		unqueued = true;
	}
	/* END TODO 3 */
	split_queue_unlock(ds);
	return unqueued;
}

/*
 * mm/internal.h: called when the last reference is gone. Nobody can
 * queue a folio that nobody holds, so "not queued" seen without the lock
 * stays true; "queued" may be stale (the shrinker may be taking it off),
 * which the locked check sorts out.
 */
bool folio_unqueue_deferred_split(struct folio *folio)
{
	if (folio_order(folio) <= 1 || !folio_test_large(folio))
		return false;
	/* TODO 3: a folio that is not queued needs no lock */
	if (list_empty(&folio->_deferred_list))
		return false;
	/* END TODO 3 */
	thp_hook(folio->ds, THP_HOOK_UNQUEUE_PEEKED, folio);
	return __folio_unqueue_deferred_split(folio);
}
