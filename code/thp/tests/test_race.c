/* test_race.c - the benign races of the unlocked checks, each forced with hooks. */
#include <criterion/criterion.h>

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
