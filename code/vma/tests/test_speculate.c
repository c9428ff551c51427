/* test_speculate.c - mmap_lock speculation and the speculative uprobe lookup: forced orders, then the stress. */
#include <criterion/criterion.h>

#include "speculate.h"
#include "spec_stress.h"

TestSuite(speculate, .init = harness_watchdog);

#define OK(r) cr_assert((r).s.ok, "%s", (r).s.why)
#define EV(r, e) ((r).ev[UPROBE_##e])

Test(speculate, helpers_follow_mm_lock_seq)
{
	struct spec_helpers h;

	scn_spec_helpers(&h);
	OK(h);
	cr_assert(h.begin_unlocked && h.seq_matches, "try_begin on an unlocked mm");
	cr_assert(!h.begin_write_locked, "try_begin must fail while write-locked");
	cr_assert(!h.retry_quiet, "retry with no writer");
	cr_assert(h.retry_while_locked && h.retry_after_writer, "retry must see the writer");
	cr_assert(h.begin_after_writer, "try_begin after the unlock: seq + 2");
}

/* No writer: success, no lock; a miss of any kind goes to mmap_lock. */
Test(speculate, no_writer_succeeds_without_the_lock)
{
	struct spec_result r;

	scn_spec_quiet(SP_HIT, true, SP_X, &r);
	OK(r);
	cr_assert_eq(r.id, SP_ID_X);
	cr_assert_eq(EV(r, SPECULATE_SUCCESS), 1);
	cr_assert_eq(EV(r, SPECULATE_ATTEMPT), 1);
	cr_assert_eq(EV(r, MMAP_LOCKED), 0);
	cr_assert_eq(r.hits_x, 1);
}

Test(speculate, misses_fall_back_and_agree)
{
	static const unsigned long addr[] = { SP_NOPROBE, SP_ANON + PG(1), SP_HOLE };
	struct spec_result r;

	for (int i = 0; i < 3; i++) {
		scn_spec_quiet(SP_HIT, true, addr[i], &r);
		OK(r);
		cr_assert_eq(r.id, 0);
		cr_assert_eq(EV(r, SPECULATE_FAIL_LOOKUP), 1, "address %d", i);
		cr_assert_eq(EV(r, MMAP_LOCKED), 1);
	}
}

Test(speculate, switch_off_is_612)
{
	struct spec_result r;

	scn_spec_quiet(SP_HIT, false, SP_X, &r);
	OK(r);
	cr_assert_eq(r.id, SP_ID_X);
	cr_assert_eq(EV(r, SPECULATE_ATTEMPT), 0);
	cr_assert_eq(EV(r, MMAP_LOCKED), 1);
}

/* A writer holds mmap_lock, halfway through moving the VMA's start. */
Test(speculate, write_locked_at_begin_fails_begin_then_waits)
{
	struct spec_result r;

	scn_spec_write_locked(SP_SPECULATIVE, &r);
	OK(r);
	cr_assert_eq(r.id, 0);
	cr_assert_eq(EV(r, SPECULATE_FAIL_BEGIN), 1);
	cr_assert_eq(r.offset_hooks, 0, "nothing may be read after a failed begin");
	scn_spec_write_locked(SP_HIT, &r);
	OK(r);
	cr_assert(r.waited, "the fallback must wait for the writer");
	cr_assert_eq(r.id, SP_ID_X, "uprobe %d: the halfway VMA's answer is %d", r.id,
		     SP_ID(1, 10));
	cr_assert_eq(EV(r, SPECULATE_FAIL_BEGIN), 1);
	cr_assert_eq(EV(r, MMAP_LOCKED), 1);
}

/* Writers between try_begin and retry: the retry fails, the fallback answers. */
static void race(enum vma_hook_point point, enum sp_race race)
{
	struct spec_result r;

	scn_spec_race(SP_SPECULATIVE, point, race, &r);
	OK(r);
	cr_assert_eq(r.id, 0, "speculation returned uprobe %d after a writer", r.id);
	cr_assert_eq(EV(r, SPECULATE_FAIL_RETRY), 1);
	cr_assert_eq(EV(r, SPECULATE_SUCCESS), 0);
	scn_spec_race(SP_HIT, point, race, &r);
	OK(r);
	cr_assert_eq(r.id, sp_race_new_id(race), "uprobe %d, want the new state's %d",
		     r.id, sp_race_new_id(race));
	cr_assert_eq(EV(r, SPECULATE_FAIL_RETRY), 1);
	cr_assert_eq(EV(r, MMAP_LOCKED), 1);
	cr_assert_eq(r.hits_x, 1);
}

Test(speculate, vma_replaced_during_the_tree_lookup) { race(VMA_HOOK_UPROBE_FOUND, SP_RACE_REPLACE); }
/* The old VMA is freed via RCU and its file reused for I2 while we read them. */
Test(speculate, vma_freed_and_file_reused_while_read) { race(VMA_HOOK_UPROBE_OFFSET, SP_RACE_REPLACE); }
Test(speculate, vma_start_moved_between_two_loads) { race(VMA_HOOK_UPROBE_OFFSET, SP_RACE_MOVE); }
/* mm_lock_seq is per mm: any writer fails the retry, even one far away. */
Test(speculate, unrelated_mmap_fails_the_retry_too) { race(VMA_HOOK_UPROBE_FOUND, SP_RACE_UNRELATED); }

/* The seqcount covers the mm, not the uprobe tree: RCU keeps the uprobe. */
Test(speculate, uprobe_unregistered_during_the_lookup_is_still_returned)
{
	struct spec_result r;

	scn_spec_race(SP_HIT, VMA_HOOK_UPROBE_FOUND, SP_RACE_UNREGISTER, &r);
	OK(r);
	cr_assert_eq(r.id, SP_ID_X);
	cr_assert_eq(EV(r, SPECULATE_SUCCESS), 1);
}

Test(speculate, stress_hits_against_a_remapping_writer)
{
	struct spec_stress_cfg cfg = { .readers = 2, .mapper = 1, .ops = 2000, .perturb = 16 };
	struct spec_stress_result r;

	spec_stress_run(&cfg, &r);
	cr_assert(r.ok, "%s", r.why);
	cr_assert_geq(r.steps, 2000);
	cr_assert_geq(r.hits, 2000);
	cr_assert_gt(r.perturbed, 0, "no lookup was perturbed by a writer step");
}
