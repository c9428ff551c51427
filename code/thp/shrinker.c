/* shrinker.c - deferred_split_scan(): take folios off split_queue and split them; the model's split_folio(). */
#include "thp.h"

unsigned long deferred_split_count(struct deferred_split *ds)
{
	return READ_ONCE(ds->split_queue_len);
}

/* thp_underused() counts zero-filled pages against max_ptes_none. */
static bool thp_underused(struct folio *folio)
{
	return folio->underused;
}

/*
 * split_huge_page_to_list_to_order() as far as the queue sees it: under
 * split_queue_lock the folio leaves the queue (or the scan's private
 * list: split_queue_len counts those too), loses partially_mapped, and
 * becomes order-0 pages. The kernel first unmaps the folio and freezes
 * its reference count, and fails when others hold references; the
 * model's split always succeeds on a locked folio.
 */
int split_folio(struct folio *folio)
{
	struct deferred_split *ds = folio->ds;

	split_queue_lock(ds, SPLIT_QUEUE_LOCK_SCAN);
	if (!list_empty(&folio->_deferred_list)) {
		ds->split_queue_len--;
		folio_clear_partially_mapped(folio);
		list_del_init(&folio->_deferred_list);
		if (folio->isolated) {
			folio->isolated = false;
			ds->nr_isolated--;
		}
	}
	clear_flag(folio, PG_head);
	split_queue_unlock(ds);
	count_thp_event(ds, THP_SPLIT_PAGE);
	return 0;
}

/*
 * mm/huge_memory.c of 6.12, for one queue. Under the lock: pin up to
 * nr_to_scan folios and move them to a private list (a folio whose last
 * reference is going away is dropped from the queue instead). Without the
 * lock: split the partially mapped ones and the underused ones; forget
 * the others. Under the lock again: put back what was not split.
 *
 * Where the model differs. 6.12.117 forgets a folio that is not
 * partially mapped without the lock: it tests the flag, then
 * list_del_init()s the folio from its private list, dropping each pin as
 * it goes (and keeping one pinned folio, "prev", between such removals).
 * A partial unmap on another CPU between that test and that
 * list_del_init() sets the flag and does not queue the folio (its
 * _deferred_list is not empty: it is on the private list); then the scan
 * unlinks it. The folio is flagged and on no list, so with the early
 * check on no later partial unmap queues it again: the invariant
 * "partially_mapped => queued or isolated" breaks. The model forgets
 * folios under the lock, testing the flag there, and keeps every pin
 * until the list is back. scan_forget_unlocked = true gives 6.12.117's
 * order instead, for the test that shows the loss
 * (tests/test_race.c: race/unlocked_forget_loses_the_folio).
 */
/* region: deferred-split-scan */
unsigned long deferred_split_scan(struct deferred_split *ds, unsigned long nr_to_scan)
{
	struct folio *folio, *next, *pinned[DEFERRED_SPLIT_BATCH];
	unsigned long split = 0, removed = 0;
	int npinned = 0;
	LIST_HEAD(list);

	if (nr_to_scan == 0 || nr_to_scan > DEFERRED_SPLIT_BATCH)
		nr_to_scan = DEFERRED_SPLIT_BATCH;
	split_queue_lock(ds, SPLIT_QUEUE_LOCK_SCAN);
	list_for_each_entry_safe(folio, next, &ds->split_queue, _deferred_list) {
		if (folio_try_get(folio)) {
			list_move(&folio->_deferred_list, &list);
			folio->isolated = true;
			ds->nr_isolated++;
			pinned[npinned++] = folio;
		} else {
			/* We lost the race with folio_put() */
			folio_clear_partially_mapped(folio);
			list_del_init(&folio->_deferred_list);
			ds->split_queue_len--;
		}
		if (!--nr_to_scan)
			break;
	}
	split_queue_unlock(ds);
	thp_hook(ds, THP_HOOK_SCAN_ISOLATED, NULL);

	list_for_each_entry_safe(folio, next, &list, _deferred_list) {
		bool did_split = false;
		bool underused = false;

		if (!folio_test_partially_mapped(folio)) {
			underused = thp_underused(folio);
			if (!underused)
				goto next;
		}
		if (!folio_trylock(folio))
			goto next;
		if (!split_folio(folio)) {
			did_split = true;
			if (underused)
				count_thp_event(ds, THP_UNDERUSED_SPLIT_PAGE);
			split++;
		}
		folio_unlock(folio);
next:
		/* split: split_folio() took it off the list */
		if (did_split || folio_test_partially_mapped(folio))
			continue;
		/* Neither: to be forgotten. 6.12.117 does it here, unlocked. */
		thp_hook(ds, THP_HOOK_SCAN_FORGET, folio);
		if (ds->scan_forget_unlocked) {
			list_del_init(&folio->_deferred_list);
			removed++;
		}
	}

	split_queue_lock(ds, SPLIT_QUEUE_LOCK_SCAN);
	/* Neither split nor partially mapped, tested under the lock: forget it. */
	list_for_each_entry_safe(folio, next, &list, _deferred_list)
		if (!folio_test_partially_mapped(folio)) {
			list_del_init(&folio->_deferred_list);
			removed++;
		}
	list_splice_tail_init(&list, &ds->split_queue);
	ds->split_queue_len -= removed;
	for (int i = 0; i < npinned; i++)
		if (pinned[i]->isolated) {
			pinned[i]->isolated = false;
			ds->nr_isolated--;
		}
	split_queue_unlock(ds);
	for (int i = 0; i < npinned; i++)
		folio_put(pinned[i]);
	return split;
}
/* endregion: deferred-split-scan */
