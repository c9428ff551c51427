/* test_queue.c - the queue's behaviour one step at a time: partial unmaps, the early check, the shrinker, free. */
#include <criterion/criterion.h>

#include "ttest.h"

TestSuite(queue, .init = tt_watchdog);

static long ev(struct ttest *t, enum thp_event e)
{
	return thp_event(&t->ds, e);
}

Test(queue, partial_unmap_queues_once_and_counts_once)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, false);
	do_anonymous_large_fault(f);
	cr_assert_eq(tt_queued(&t), 0, "split_underused_thp off: not queued at fault");
	for (int i = 0; i < 4; i++)
		zap_present_ptes(f, i * 8, 8);
	cr_assert_eq(tt_queued(&t), 1);
	cr_assert_eq(t.ds.split_queue_len, 1);
	cr_assert(folio_test_partially_mapped(f));
	cr_assert_eq(ev(&t, THP_DEFERRED_SPLIT_PAGE), 1);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_PARTIAL_UNMAPS), 4);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 1, "the early check spares 3 locks");
	tt_fini(&t);
}

Test(queue, without_the_early_check_every_partial_unmap_locks)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, false, false);
	do_anonymous_large_fault(f);
	for (int i = 0; i < 4; i++)
		zap_present_ptes(f, i * 8, 8);
	cr_assert_eq(tt_queued(&t), 1);
	cr_assert_eq(ev(&t, THP_DEFERRED_SPLIT_PAGE), 1);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 4);
	tt_fini(&t);
}

Test(queue, whole_unmap_is_not_partial)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, false);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, HPAGE_PMD_NR);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_PARTIAL_UNMAPS), 0);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 0);
	cr_assert(atomic_load(&f->freed), "the last reference went: freed");
	cr_assert_eq(ev(&t, SPLIT_QUEUE_LOCK_FREE), 0, "never queued: no lock to free it");
	tt_fini(&t);
}

Test(queue, fault_queues_a_pmd_folio_and_a_partial_unmap_marks_it)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, true);
	do_anonymous_large_fault(f);
	cr_assert_eq(tt_queued(&t), 1, "6.12 queues a new THP at fault (underused candidate)");
	cr_assert_eq(ev(&t, SPLIT_QUEUE_LOCK_FAULT), 1);
	cr_assert(!folio_test_partially_mapped(f));
	zap_present_ptes(f, 0, 8);
	cr_assert(folio_test_partially_mapped(f), "queued already, but must be marked");
	cr_assert_eq(tt_queued(&t), 1);
	cr_assert_eq(ev(&t, THP_DEFERRED_SPLIT_PAGE), 1);
	tt_fini(&t);
}

Test(queue, shrinker_splits_partially_mapped_and_underused_only)
{
	struct ttest t;

	tt_init(&t, true, true);
	for (int i = 0; i < 3; i++)
		do_anonymous_large_fault(&t.folio[i]);	/* all three queued */
	zap_present_ptes(&t.folio[0], 0, 8);		/* 0: partially mapped */
	t.folio[1].underused = true;			/* 1: underused */
	cr_assert_eq(deferred_split_count(&t.ds), 3);
	cr_assert_eq(deferred_split_scan(&t.ds, 0), 2);
	cr_assert(!folio_test_large(&t.folio[0]) && !folio_test_large(&t.folio[1]));
	cr_assert(folio_test_large(&t.folio[2]), "2 is neither: not split");
	cr_assert_eq(tt_queued(&t), 0, "2 is forgotten, the others split");
	cr_assert_eq(t.ds.split_queue_len, 0);
	cr_assert_eq(ev(&t, THP_SPLIT_PAGE), 2);
	cr_assert_eq(ev(&t, THP_UNDERUSED_SPLIT_PAGE), 1);
	/* A split folio's pages are order-0: unmapping them queues nothing. */
	zap_present_ptes(&t.folio[0], 8, 8);
	cr_assert_eq(tt_queued(&t), 0);
	tt_fini(&t);
}

Test(queue, shrinker_puts_back_what_it_could_not_lock)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, false);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, 8);
	cr_assert(folio_trylock(f));
	cr_assert_eq(deferred_split_scan(&t.ds, 0), 0);
	folio_unlock(f);
	cr_assert(tt_on_queue(&t, f), "a folio the shrinker could not lock goes back");
	cr_assert_eq(t.ds.split_queue_len, 1);
	cr_assert_eq(atomic_load(&f->_refcount), HPAGE_PMD_NR - 8, "the pin was dropped");
	tt_fini(&t);
}

Test(queue, small_orders)
{
	struct ttest t;
	struct folio f;

	tt_init(&t, true, true);
	cr_assert_neq(folio_init(&f, &t.ds, 1), 0, "order 1 has no _deferred_list");
	cr_assert_eq(folio_init(&f, &t.ds, 4), 0);
	do_anonymous_large_fault(&f);
	cr_assert_eq(tt_queued(&t), 0, "only PMD-size folios are queued at fault");
	zap_present_ptes(&f, 0, 1);
	cr_assert_eq(tt_queued(&t), 1, "an mTHP is queued when partially unmapped");
	zap_present_ptes(&f, 1, 15);
	cr_assert(atomic_load(&f.freed));
	cr_assert_eq(tt_queued(&t), 0, "freed: unqueued");
	folio_destroy(&f);
	tt_fini(&t);
}

Test(queue, check_catches_a_corrupt_queue)
{
	struct ttest t;
	char why[160];

	tt_init(&t, true, false);
	do_anonymous_large_fault(&t.folio[0]);
	zap_present_ptes(&t.folio[0], 0, 8);
	cr_assert_eq(deferred_split_check(&t.ds, t.folio, TT_FOLIOS, why, sizeof(why)), 0, "%s", why);
	t.ds.split_queue_len = 2;
	cr_assert_neq(deferred_split_check(&t.ds, t.folio, TT_FOLIOS, why, sizeof(why)), 0);
	t.ds.split_queue_len = 1;
	do_anonymous_large_fault(&t.folio[1]);
	folio_set_partially_mapped(&t.folio[1]);	/* flagged but never queued */
	cr_assert_neq(deferred_split_check(&t.ds, t.folio, TT_FOLIOS, why, sizeof(why)), 0);
	cr_assert(strstr(why, "lost"), "%s", why);
	tt_fini(&t);
}
