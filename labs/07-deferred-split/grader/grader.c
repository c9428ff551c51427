/* grader.c - lab 07 grader: forced orders that tell a right early check, queueing and unqueueing from wrong ones. */
#include <criterion/criterion.h>

#include "scenarios.h"
#include "sweep.h"
#include "ttest.h"

/*
 * The scenarios (code/thp/tests/scenarios.c) stop a thread at a hook
 * point and run another CPU's work, the shrinker or a free meanwhile, so
 * each outcome is decided by your code alone, never by timing. A thread
 * that never arrives fails after tt_wait_s seconds instead of hanging.
 * Test names start with todoN_: the skeleton checker maps them to steps.
 */
static void init(void)
{
	tt_watchdog();
	tt_wait_s = 5;
}

TestSuite(lab07, .init = init);

#define OK(r) do {							\
	cr_assert((r).ok, "%s", (r).why);				\
	cr_assert((r).check_ok, "the queue is broken: %s", (r).check_why); \
} while (0)

static long ev(struct ttest *t, enum thp_event e)
{
	return thp_event(&t->ds, e);
}

/* ------------------------------------------------ TODO 1: the early bail */

/* F is on the queue and marked (as deferred_split_folio() leaves it). */
static void queued_folio(struct ttest *t, bool early_check)
{
	tt_init(t, early_check, false);
	do_anonymous_large_fault(&t->folio[0]);
	tt_queue_partially_mapped(t, &t->folio[0]);
	zap_present_ptes(&t->folio[0], 0, 8);
	zap_present_ptes(&t->folio[0], 8, 8);
}

Test(lab07, todo1_queued_folio_needs_no_lock)
{
	struct ttest t;

	queued_folio(&t, true);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_PARTIAL_UNMAPS), 2);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 0,
		     "F is already partially mapped: split_queue_lock taken %ld times, want 0",
		     ev(&t, DEFERRED_SPLIT_LOCK_TAKEN));
	tt_fini(&t);
}

Test(lab07, todo1_switch_off_takes_the_lock_every_time)
{
	struct ttest t;

	queued_folio(&t, false);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 2,
		     "deferred_split_early_check = 0 must restore the lock on every partial "
		     "unmap: taken %ld times, want 2", ev(&t, DEFERRED_SPLIT_LOCK_TAKEN));
	tt_fini(&t);
}

Test(lab07, todo1_first_partial_unmap_takes_the_lock)
{
	struct ttest t;

	tt_init(&t, true, false);
	do_anonymous_large_fault(&t.folio[0]);
	zap_present_ptes(&t.folio[0], 0, 8);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 1,
		     "F was not partially mapped before: deferred_split_folio() must run "
		     "(lock taken %ld times, want 1)", ev(&t, DEFERRED_SPLIT_LOCK_TAKEN));
	tt_fini(&t);
}

Test(lab07, todo1_whole_unmap_needs_no_lock)
{
	struct ttest t;

	tt_init(&t, true, false);
	do_anonymous_large_fault(&t.folio[0]);
	zap_present_ptes(&t.folio[0], 0, HPAGE_PMD_NR);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 0, "nothing is left mapped: no queue");
	tt_fini(&t);
}

/* ------------------------------------ TODO 2: the re-check under the lock */

Test(lab07, todo2_partial_unmap_queues_the_folio)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, false);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, 8);
	cr_assert(folio_test_partially_mapped(f), "F must be marked partially mapped");
	cr_assert(tt_on_queue(&t, f), "F must be on split_queue");
	cr_assert_eq(t.ds.split_queue_len, 1, "split_queue_len %lu, want 1", t.ds.split_queue_len);
	cr_assert_eq(ev(&t, THP_DEFERRED_SPLIT_PAGE), 1, "thp_deferred_split_page %ld, want 1",
		     ev(&t, THP_DEFERRED_SPLIT_PAGE));
	tt_fini(&t);
}

Test(lab07, todo2_two_cpus_pass_the_check_one_queues)
{
	struct scn_result r;

	scn_two_cpus(true, &r);
	OK(r);
	cr_assert_eq(r.queued, 1, "F is on split_queue %d times, want 1", r.queued);
	cr_assert_eq(r.len, 1, "split_queue_len %lu, want 1", r.len);
	cr_assert_eq(r.deferred_split_page, 1, "thp_deferred_split_page %ld: counted twice?",
		     r.deferred_split_page);
	cr_assert_eq(r.lock_partial, 2, "both CPUs take the lock (the benign race)");
}

Test(lab07, todo2_two_cpus_with_the_switch_off)
{
	struct scn_result r;

	scn_two_cpus(false, &r);
	OK(r);
	cr_assert_eq(r.queued, 1, "F is on split_queue %d times, want 1", r.queued);
	cr_assert_eq(r.deferred_split_page, 1);
	cr_assert_eq(r.lock_after, 3);
}

Test(lab07, todo2_fault_queued_folio_is_marked)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, true);
	do_anonymous_large_fault(f);	/* 6.12 queues a new THP at fault */
	cr_assert(tt_on_queue(&t, f), "split_underused_thp: F must be queued at fault");
	cr_assert(!folio_test_partially_mapped(f));
	zap_present_ptes(f, 0, 8);
	cr_assert(folio_test_partially_mapped(f),
		  "F was queued (at fault) but not partially mapped: a partial unmap must "
		  "still mark it, or the shrinker will forget it");
	cr_assert_eq(t.ds.split_queue_len, 1);
	deferred_split_scan(&t.ds, 0);
	cr_assert(!folio_test_large(f), "the shrinker must split a partially mapped F");
	tt_fini(&t);
}

/*
 * 6.12 queues a new PMD-size THP at fault as a candidate for the
 * underused-THP shrinker (deferred_split_folio(folio, false)): queued,
 * not partially mapped, and not counted as thp_deferred_split_page. A
 * later partial unmap finds it queued: it marks it and counts it then.
 */
Test(lab07, todo2_thp_queued_at_fault_is_counted_when_it_becomes_partially_mapped)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, true);
	do_anonymous_large_fault(f);
	cr_assert(tt_on_queue(&t, f) && t.ds.split_queue_len == 1,
		  "split_underused_thp: F must be queued at fault, once (split_queue_len %lu)",
		  t.ds.split_queue_len);
	cr_assert(!folio_test_partially_mapped(f), "F is fully mapped: not partially mapped");
	cr_assert_eq(ev(&t, THP_DEFERRED_SPLIT_PAGE), 0, "thp_deferred_split_page = %ld after "
		     "the fault, want 0: it counts folios that became partially mapped, and F "
		     "was queued as a whole THP", ev(&t, THP_DEFERRED_SPLIT_PAGE));
	cr_assert_eq(ev(&t, SPLIT_QUEUE_LOCK_FAULT), 1);
	zap_present_ptes(f, 0, 8);
	cr_assert(folio_test_partially_mapped(f), "F lost 8 pages: it must be marked");
	cr_assert_eq(ev(&t, THP_DEFERRED_SPLIT_PAGE), 1, "thp_deferred_split_page = %ld after "
		     "the partial unmap, want 1: F became partially mapped now, though it was "
		     "queued before", ev(&t, THP_DEFERRED_SPLIT_PAGE));
	cr_assert_eq(t.ds.split_queue_len, 1, "split_queue_len %lu, want 1 (F queued once)",
		     t.ds.split_queue_len);
	cr_assert_eq(tt_queued(&t), 1);
	tt_fini(&t);
}

/*
 * The underused THP's way through the shrinker: a fault-queued F that
 * thp_underused() finds mostly zero is split (thp_underused_split_page);
 * one that is not is forgotten, and its first partial unmap queues it
 * again.
 */
Test(lab07, todo2_thp_queued_at_fault_is_split_if_underused_or_queued_again_later)
{
	struct ttest t;
	struct folio *u = &t.folio[0], *f = &t.folio[1];

	tt_init(&t, true, true);
	do_anonymous_large_fault(u);
	do_anonymous_large_fault(f);
	u->underused = true;
	cr_assert_eq(t.ds.split_queue_len, 2, "both THPs are queued at fault (split_queue_len "
		     "%lu, want 2)", t.ds.split_queue_len);
	deferred_split_scan(&t.ds, 0);
	cr_assert(!folio_test_large(u), "U was queued at fault and is underused: the shrinker "
		  "splits it");
	cr_assert_eq(ev(&t, THP_UNDERUSED_SPLIT_PAGE), 1, "thp_underused_split_page = %ld, want 1",
		     ev(&t, THP_UNDERUSED_SPLIT_PAGE));
	cr_assert(folio_test_large(f) && !tt_on_queue(&t, f), "F is neither partially mapped nor "
		  "underused: the shrinker forgets it (off the queue, not split)");
	cr_assert_eq(t.ds.split_queue_len, 0, "split_queue_len %lu, want 0", t.ds.split_queue_len);
	zap_present_ptes(f, 0, 8);
	cr_assert(tt_on_queue(&t, f) && folio_test_partially_mapped(f), "F's first partial unmap "
		  "after the shrinker forgot it must queue and mark it again");
	cr_assert_eq(t.ds.split_queue_len, 1);
	cr_assert_eq(ev(&t, DEFERRED_SPLIT_LOCK_TAKEN), 1);
	tt_fini(&t);
}

Test(lab07, todo2_shrinker_forgot_it_between_check_and_lock)
{
	struct scn_result r;

	scn_shrink_between_check_and_lock(false, &r);
	OK(r);
	cr_assert(r.partially_mapped);
	cr_assert_eq(r.queued, 1, "the shrinker took F off the queue after your check: "
		     "under the lock it must be queued again (queued %d times)", r.queued);
	cr_assert_eq(r.len, 1);
}

Test(lab07, todo2_shrinker_split_it_between_check_and_lock)
{
	struct scn_result r;

	scn_shrink_between_check_and_lock(true, &r);
	OK(r);
	cr_assert_eq(r.split_page, 1);
	cr_assert_eq(r.queued, 0, "F was split: it must not be queued again");
	cr_assert_eq(r.len, 0);
}

/* ----------------------------------------------- TODO 3: unqueue at free */

Test(lab07, todo3_free_unqueues_a_queued_folio)
{
	struct scn_result r;

	scn_free_queued(&r);
	OK(r);
	cr_assert(r.freed);
	cr_assert_eq(r.queued, 0, "a freed folio is still on split_queue");
	cr_assert_eq(r.len, 0, "split_queue_len %lu, want 0", r.len);
	cr_assert(!r.partially_mapped);
}

/* __folio_unqueue_deferred_split() itself, on a queued, marked folio. */
Test(lab07, todo3_unqueue_takes_off_the_flag_and_says_so)
{
	struct ttest t;

	queued_folio(&t, true);
	cr_assert(folio_test_partially_mapped(&t.folio[0]));
	cr_assert(__folio_unqueue_deferred_split(&t.folio[0]),
		  "F was queued: __folio_unqueue_deferred_split() must return true");
	cr_assert(!tt_on_queue(&t, &t.folio[0]), "F is still on split_queue");
	cr_assert_eq(t.ds.split_queue_len, 0, "split_queue_len %lu, want 0",
		     (unsigned long)t.ds.split_queue_len);
	cr_assert(!folio_test_partially_mapped(&t.folio[0]),
		  "F is off the queue but still marked partially mapped: clear the flag");
	cr_assert(!__folio_unqueue_deferred_split(&t.folio[0]),
		  "F is not queued any more: __folio_unqueue_deferred_split() must return false");
	cr_assert_eq(t.ds.split_queue_len, 0, "split_queue_len %lu after a second unqueue",
		     (unsigned long)t.ds.split_queue_len);
	tt_fini(&t);
}

/*
 * A THP queued at fault and never partially mapped, then unmapped whole:
 * it is queued though its partially_mapped flag is clear. Freeing it must
 * take it off the queue all the same.
 */
Test(lab07, todo3_free_unqueues_a_thp_queued_at_fault)
{
	char why[160];
	struct ttest t;
	struct folio *f = &t.folio[0];

	tt_init(&t, true, true);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, HPAGE_PMD_NR);
	cr_assert(atomic_load(&f->freed), "F lost every mapping: it must be freed");
	cr_assert(!tt_on_queue(&t, f), "F was freed but is still on split_queue: it was queued at "
		  "fault and never marked partially mapped; the free path must look at the queue, "
		  "not at the flag");
	cr_assert_eq(t.ds.split_queue_len, 0, "split_queue_len %lu, want 0", t.ds.split_queue_len);
	cr_assert_eq(ev(&t, SPLIT_QUEUE_LOCK_FREE), 1, "split_queue_lock taken %ld times by the "
		     "free path, want 1", ev(&t, SPLIT_QUEUE_LOCK_FREE));
	cr_assert(!deferred_split_check(&t.ds, t.folio, 1, why, sizeof(why)), "%s", why);
	tt_fini(&t);
}

Test(lab07, todo3_free_of_an_unqueued_folio_takes_no_lock)
{
	struct scn_result r;

	scn_free_unqueued(&r);
	OK(r);
	cr_assert(r.freed);
	cr_assert_eq(r.lock_free, 0, "F was never queued: freeing it took split_queue_lock "
		     "%ld times, want 0", r.lock_free);
}

Test(lab07, todo3_free_after_the_shrinker_dropped_it)
{
	struct scn_result r;

	scn_free_after_shrinker_dropped(&r);
	OK(r);
	cr_assert_eq(r.queued, 0);
	cr_assert_eq(r.len, 0, "split_queue_len %lu: F was taken off twice?", r.len);
}

Test(lab07, todo3_unmapped_while_the_shrinker_holds_it)
{
	struct scn_result r;

	scn_unmap_during_scan(&r);
	OK(r);
	cr_assert(r.freed);
	cr_assert_eq(r.queued, 0);
	cr_assert_eq(r.len, 0);
}

/*
 * Forced schedules (code/thp/tests/sweep.h): 500 rounds, three THPs
 * through sixteen random steps each (faults, unmaps of a quarter, frees,
 * the shrinker, underused or not), one step run inside another at a hook
 * point where it holds no lock, the early check and queueing at fault
 * chosen per round. The queue is checked after every step. The same
 * rounds on every run: the failing one is named.
 */
Test(lab07, todo3_forced_schedules_of_unmaps_frees_and_the_shrinker)
{
	struct thp_sweep_result r;

	thp_sweep(7, 500, &r);
	cr_assert(r.ok, "%s", r.why);
}
