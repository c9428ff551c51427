/* test_race.c - forced orders between faults and writers: lookup vs. munmap, the re-check after the trylock, retry. */
#include <criterion/criterion.h>

#include "scenarios.h"

TestSuite(race, .init = harness_watchdog);

#define OK(r) cr_assert((r).s.ok, "%s", (r).s.why)

Test(race, recheck_after_trylock_catches_a_writer_in_between)
{
	struct start_read_result r;

	scn_start_read_recheck(&r);
	OK(r);
	cr_assert(!r.locked);
	cr_assert(!r.held, "the failed re-check must drop the read lock");
}

Test(race, write_locked_vma_fails_before_the_trylock)
{
	struct start_read_result r;

	scn_start_read_write_locked(&r);
	OK(r);
	cr_assert(!r.locked);
	cr_assert_eq(r.trylocks, 0);
	cr_assert(r.other_locked);
	cr_assert(r.locked_after_unlock);
}

Test(race, lookup_then_munmap_then_lock_is_a_miss_then_abort)
{
	struct lookup_result r;

	scn_lookup_race(RACE_UNMAP, &r);
	OK(r);
	cr_assert(!r.got_vma);
	cr_assert_eq(r.miss, 1);
	cr_assert_eq(r.abort, 1);
}

Test(race, lookup_then_replace_finds_the_new_vma_on_retry)
{
	struct lookup_result r;

	scn_lookup_race(RACE_REPLACE, &r);
	OK(r);
	cr_assert(r.got_vma && r.got_current && r.held);
	cr_assert_eq(r.miss, 1);
	cr_assert_eq(r.abort, 0);
}

Test(race, lookup_then_shrink_is_an_abort)
{
	struct lookup_result r;

	scn_lookup_race(RACE_SHRINK, &r);
	OK(r);
	cr_assert(!r.got_vma);
	cr_assert_eq(r.miss, 0);
	cr_assert_eq(r.abort, 1);
}

Test(race, lookup_then_munmap_in_progress_is_an_abort_then_sigsegv)
{
	struct fault_result r;
	long populated = 4;	/* vt_map() faulted A's four pages */

	scn_lookup_vs_munmap_in_progress(&r);
	OK(r);
	cr_assert(r.waited && !r.done_before_writer);
	cr_assert_eq(r.fault, VM_FAULT_SIGSEGV);
	cr_assert(!r.present);
	cr_assert_eq(r.abort, 1, "vma_start_read() must fail on vm_lock_seq");
	cr_assert_eq(r.miss, 0, "the detached check is never reached");
	cr_assert_eq(r.success, populated);
}

Test(race, fault_on_a_write_locked_vma_waits_for_mmap_lock)
{
	struct fault_result r;

	scn_fault_waits_for_writer(&r);
	OK(r);
	cr_assert(r.waited && !r.done_before_writer);
	cr_assert_eq(r.fault, 0);
	cr_assert(r.present);
	cr_assert_eq(r.abort, 1);
	cr_assert_eq(r.success, 0);
}

Test(race, first_anon_fault_under_the_vma_lock_retries_under_mmap_lock)
{
	struct fault_result r;

	scn_fault_retry(&r);
	OK(r);
	cr_assert(r.waited && !r.done_before_writer);
	cr_assert_eq(r.fault, 0);
	cr_assert(r.present);
	cr_assert_eq(r.retry, 1);
	cr_assert_eq(r.abort + r.success + r.miss, 0);
}
