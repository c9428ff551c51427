/* rmap.c - __folio_remove_rmap() for PTE-mapped large folios: when a partial unmap queues a folio for deferred split. */
#include "thp.h"

/*
 * Lab 07 hands out this file with its TODO region emptied
 * (labs/07-deferred-split/src/rmap.c is a link to it): the book lists
 * 6.12's own __folio_remove_rmap() instead.
 *
 * mm/rmap.c of 6.12 at RMAP_LEVEL_PTE, for one mapping of the folio:
 * each page's _mapcount drops; the pages that became unmapped ("last")
 * come off _nr_pages_mapped; if some pages went and some stay mapped, the
 * folio is partially mapped. The kernel holds the page table lock here,
 * which the model does not need (it has no page tables).
 */
void folio_remove_rmap_ptes(struct folio *folio, int first, int nr)
{
	struct deferred_split *ds = folio->ds;
	atomic_int *mapped = &folio->_nr_pages_mapped;
	bool partially_mapped;
	int last = 0;

	for (int i = first; i < first + nr; i++)
		last += atomic_fetch_sub_explicit(&folio->_mapcount[i], 1,
						  memory_order_relaxed) == 0;
	if (!folio_test_large(folio))
		return;		/* split meanwhile: order-0 pages have no queue */
	if (last)
		atomic_fetch_sub_explicit(mapped, last, memory_order_relaxed);
	partially_mapped = last && atomic_load_explicit(mapped, memory_order_relaxed);
	if (!partially_mapped || !folio_test_anon(folio))
		return;
	count_thp_event(ds, DEFERRED_SPLIT_PARTIAL_UNMAPS);

	/* TODO 1: the early bail: a folio already known to be partially mapped needs no lock */
	/*
	 * An unlocked test of a flag set under split_queue_lock: a stale
	 * "not yet" only costs a lock that deferred_split_folio() did not
	 * need (it checks again under the lock); a stale "yes" means the
	 * folio was queued, and only a split or a free clears the flag.
	 */
	if (atomic_load_explicit(&ds->early_check, memory_order_relaxed) &&
	    folio_test_partially_mapped(folio))
		return;
	/* END TODO 1 */

	thp_hook(ds, THP_HOOK_EARLY_CHECKED, folio);
	deferred_split_folio(folio, true);
}
