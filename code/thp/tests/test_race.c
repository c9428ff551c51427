/* test_race.c - the races of the unlocked checks, each forced with hooks: the benign ones, and the folio 6.12.117's shrinker loses. */
#include <criterion/criterion.h>
#include <string.h>

#include "scenarios.h"
#include "ttest.h"

TestSuite(race, .init = tt_watchdog);

#define OK(r) do {							\
	cr_assert((r).ok, "%s", (r).why);				\
	cr_assert((r).check_ok, "invariant: %s", (r).check_why);	\
} while (0)

Test(race, two_cpus_pass_the_unlocked_check_one_queues)
{
	struct scn_result r;

	scn_two_cpus(true, &r);
	OK(r);
	cr_assert_eq(r.lock_partial, 2, "both CPUs saw 'not yet' and took the lock");
	cr_assert_eq(r.queued, 1);
	cr_assert_eq(r.len, 1);
	cr_assert_eq(r.deferred_split_page, 1, "counted once");
	cr_assert(r.partially_mapped);
	cr_assert_eq(r.lock_after, 2, "a third partial unmap bails without the lock");
}

Test(race, two_cpus_without_the_early_check)
{
	struct scn_result r;

	scn_two_cpus(false, &r);
	OK(r);
	cr_assert_eq(r.queued, 1);
	cr_assert_eq(r.lock_after, 3, "the switch off: every partial unmap locks");
}

Test(race, shrinker_forgets_the_folio_between_check_and_lock)
{
	struct scn_result r;

	scn_shrink_between_check_and_lock(false, &r);
	OK(r);
	cr_assert(r.partially_mapped);
	cr_assert_eq(r.queued, 1, "forgotten by the shrinker, queued again: not lost");
	cr_assert_eq(r.len, 1);
	cr_assert_eq(r.split_page, 0);
}

Test(race, shrinker_splits_the_folio_between_check_and_lock)
{
	struct scn_result r;

	scn_shrink_between_check_and_lock(true, &r);
	OK(r);
	cr_assert(!r.large, "split");
	cr_assert_eq(r.split_page, 1);
	cr_assert_eq(r.queued, 0, "a split folio is not queued again");
	cr_assert_eq(r.len, 0);
}

Test(race, freed_while_queued_is_unqueued)
{
	struct scn_result r;

	scn_free_queued(&r);
	OK(r);
	cr_assert(r.freed);
	cr_assert_eq(r.queued, 0);
	cr_assert_eq(r.len, 0);
	cr_assert_eq(r.lock_free, 1);
	cr_assert(!r.partially_mapped);
}

Test(race, free_after_the_shrinker_dropped_it)
{
	struct scn_result r;

	scn_free_after_shrinker_dropped(&r);
	OK(r);
	cr_assert(r.freed);
	cr_assert_eq(r.queued, 0);
	cr_assert_eq(r.len, 0, "dropped once, not twice");
	cr_assert_eq(r.lock_free, 1, "the peek saw it queued, so the free path locked");
}

Test(race, unmapped_while_the_shrinker_holds_it)
{
	struct scn_result r;

	scn_unmap_during_scan(&r);
	OK(r);
	cr_assert_eq(r.split_page, 1);
	cr_assert(r.freed, "the shrinker's reference was the last one");
	cr_assert_eq(r.queued, 0);
	cr_assert_eq(r.len, 0);
}

/*
 * 6.12.117's deferred_split_scan() forgets a folio that is not partially
 * mapped without the lock. A partial unmap between its flag test and its
 * list_del_init() marks the folio and leaves it where it is (on the
 * private list); the scan then unlinks it. Flagged, on no list: lost.
 */
/* region: unlocked-forget-test */
Test(race, unlocked_forget_loses_the_folio)
{
	struct scn_result r;

	scn_partial_unmap_before_forget(true, true, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert(r.partially_mapped, "the partial unmap set the flag");
	cr_assert_eq(r.deferred_split_page, 1, "and counted it");
	cr_assert_eq(r.lock_partial, 1, "it took the lock once");
	cr_assert_eq(r.queued, 0, "but the scan unlinked the folio after that");
	cr_assert_eq(r.len, 0);
	cr_assert(!r.check_ok, "the checker must call the folio lost");
	cr_assert(strstr(r.check_why, "lost"), "invariant: %s", r.check_why);
	cr_assert_eq(r.lock_after, 1, "the early check skips every later partial unmap");
	cr_assert(!r.queued_after, "so nothing queues it again");
	cr_assert_eq(r.lock_free_after, 0,
		     "the free path sees an empty list and takes no lock (in 6.12.117: "
		     "nr_anon_partially_mapped is never decremented)");
}
/* endregion: unlocked-forget-test */

/* The same order with the switch off: the next partial unmap requeues it. */
Test(race, unlocked_forget_switch_off_requeues)
{
	struct scn_result r;

	scn_partial_unmap_before_forget(true, false, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert_eq(r.queued, 0, "lost at first, as with the check on");
	cr_assert_eq(r.lock_after, 2, "the next partial unmap locks ...");
	cr_assert(r.queued_after, "... finds the list empty, and queues the folio");
	cr_assert_eq(r.lock_free_after, 1, "so the free path unqueues it");
}

/* The same order against the model's shrinker, which forgets under the lock. */
Test(race, locked_forget_keeps_the_folio)
{
	struct scn_result r;

	scn_partial_unmap_before_forget(false, true, &r);
	OK(r);
	cr_assert(r.partially_mapped);
	cr_assert_eq(r.queued, 1, "the locked test saw the flag and put the folio back");
	cr_assert_eq(r.len, 1);
	cr_assert_eq(r.lock_after, 1, "a later partial unmap needs no lock: it is queued");
	cr_assert(r.queued_after);
	cr_assert_eq(r.lock_free_after, 1, "the free path unqueues it");
}
