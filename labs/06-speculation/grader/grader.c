/* grader.c - lab 06 grader: forced orders that tell a right speculative uprobe lookup from wrong ones. */
#define _GNU_SOURCE	/* dladdr(), for the ordering audit */
#include <criterion/criterion.h>

#include "speculate.h"
#include "spec_stress.h"
#include "../../tools/order_audit.h"

/*
 * The scenarios (code/vma/tests/speculate.c) build one small mm (its
 * layout is in speculate.h: a file VMA P whose address SP_X has uprobe
 * 112, a file VMA without uprobes, an anonymous one, a hole), stop a
 * lookup at a hook point inside code/vma (vaddr_to_offset() between its
 * two loads, find_uprobe_rcu() after its search) or a writer halfway
 * through a change, and let the other side run. Every uprobe id names
 * its (inode, page offset): 100 * inode + page. So each outcome is
 * decided by your code alone, never by timing. A wait your code never
 * satisfies fails after vt_wait_s seconds instead of hanging. Test
 * names start with todoN_: the skeleton checker maps them to steps.
 */
static void init(void)
{
	harness_watchdog();
	vt_wait_s = 5;
}

TestSuite(lab06, .init = init);

#define OK(r) cr_assert((r).s.ok, "%s", (r).s.why)
#define EV(r, e) ((r).ev[UPROBE_##e])

/* ------------------------------------------ TODO 1: try_begin and retry */

Test(lab06, todo1_try_begin_succeeds_on_an_unlocked_mm_with_its_seq)
{
	struct spec_helpers h;

	scn_spec_helpers(&h);
	OK(h);
	cr_assert(h.begin_unlocked, "try_begin must succeed when nobody holds mmap_lock");
	cr_assert(h.seq_matches, "*seq must be mm_lock_seq's value at try_begin");
	cr_assert(h.begin_after_writer, "after a writer's lock and unlock, try_begin must "
		  "succeed again with a sequence 2 higher");
}

Test(lab06, todo1_try_begin_fails_while_mmap_lock_is_write_locked)
{
	struct spec_helpers h;

	scn_spec_helpers(&h);
	OK(h);
	cr_assert(!h.begin_write_locked, "mm_lock_seq is odd while a writer holds mmap_lock: "
		  "try_begin must return false");
	cr_assert(h.begin_after_writer, "and once the writer unlocked, try_begin must succeed again");
}

Test(lab06, todo1_retry_is_false_when_nothing_changed)
{
	struct spec_helpers h;

	scn_spec_helpers(&h);
	OK(h);
	cr_assert(h.begin_unlocked && !h.retry_quiet, "no writer came: retry must be false");
}

Test(lab06, todo1_retry_sees_a_writer_that_came_and_went)
{
	struct spec_helpers h;

	scn_spec_helpers(&h);
	OK(h);
	cr_assert(h.begin_unlocked, "try_begin failed on an unlocked mm: nothing to retry");
	cr_assert(h.retry_after_writer, "a writer locked and unlocked mmap_lock after try_begin: "
		  "retry must be true (the count is even again, but not the same)");
}

Test(lab06, todo1_retry_sees_a_writer_still_holding_the_lock)
{
	struct spec_helpers h;

	scn_spec_helpers(&h);
	OK(h);
	cr_assert(h.begin_unlocked, "try_begin failed on an unlocked mm: nothing to retry");
	cr_assert(h.retry_while_locked, "a writer took mmap_lock after try_begin: retry must be true");
}

/* mm_lock_seq is unsigned and wraps: "moved" means "not equal", not "greater". */
Test(lab06, todo1_retry_sees_a_writer_across_the_wrap)
{
	struct vtest t;
	unsigned int seq = 1;
	bool begun, moved;

	vt_init(&t);
	t.mm.mm_lock_seq.sequence = UINT_MAX - 1;	/* even: unlocked, one writer from the wrap */
	begun = mmap_lock_speculate_try_begin(&t.mm, &seq);
	mmap_write_lock(&t.mm);
	mmap_write_unlock(&t.mm);
	moved = mmap_lock_speculate_retry(&t.mm, seq);
	cr_assert(begun, "try_begin failed on an unlocked mm (mm_lock_seq %u)", UINT_MAX - 1);
	cr_assert(moved, "a writer came and went: mm_lock_seq went from %u to %u (it wraps). "
		  "retry must be true: compare for inequality", seq, t.mm.mm_lock_seq.sequence);
	vt_fini(&t);
}

/*
 * The ordering audit (labs/tools/order_audit.h): on x86 an ACQUIRE load
 * and smp_rmb() are plain loads, so no run above fails without them; these
 * two tests read what your TODO 1 regions say instead.
 */
static void audit_of(struct audit *a, void *fn, int index)
{
	cr_assert(audit_locate(fn, a), "%s", a->why);
	cr_assert(audit_region(a, 1, index), "%s", a->why);
}

Test(lab06, todo1_try_begin_loads_the_count_once_with_acquire)
{
	struct audit a;

	audit_of(&a, (void *)mmap_lock_speculate_try_begin, 0);
	cr_assert(audit_acquire_load(a.code, "mm_lock_seq"),
		  "try_begin (the first TODO 1 region of %s) must load mm_lock_seq with ACQUIRE "
		  "(raw_read_seqcount() or smp_load_acquire()): it pairs with the RELEASE in "
		  "mmap_write_unlock(), so the speculation's loads see what the last writer stored. "
		  "On x86 a plain load runs the same, so only this audit can tell", a.path);
	cr_assert_eq(audit_count(a.code, "mm_lock_seq"), 1,
		     "try_begin names mm_lock_seq %d times: load it once, and test and return that "
		     "one value (a second load may see another writer's count)",
		     audit_count(a.code, "mm_lock_seq"));
}

Test(lab06, todo1_retry_reads_the_count_after_a_read_barrier)
{
	struct audit a;
	const char *bar, *load;

	audit_of(&a, (void *)mmap_lock_speculate_retry, 1);
	bar = audit_read_barrier(a.code);
	load = audit_find(a.code, a.code, "mm_lock_seq");
	cr_assert(load, "retry (the second TODO 1 region of %s) never reads mm_lock_seq", a.path);
	cr_assert(bar && bar < load,
		  "retry must put smp_rmb() before its load of mm_lock_seq: the barrier keeps the "
		  "speculation's loads (above it) before the load of the count. An ACQUIRE on the "
		  "count orders only the loads after it, the wrong side. On x86 the test runs above "
		  "pass without it; this audit reads %s", a.path);
}

/* ------------------------------------- TODO 2: the speculative lookup */

/* Each attempt counts exactly one outcome. */
static void one_outcome(const struct spec_result *r)
{
	long sum = EV(*r, SPECULATE_SUCCESS) + EV(*r, SPECULATE_FAIL_BEGIN) +
		   EV(*r, SPECULATE_FAIL_LOOKUP) + EV(*r, SPECULATE_FAIL_RETRY);

	cr_assert_eq(EV(*r, SPECULATE_ATTEMPT), 1, "uprobe_speculate_attempt = %ld, want 1",
		     EV(*r, SPECULATE_ATTEMPT));
	cr_assert_eq(sum, 1, "success + fail_begin + fail_lookup + fail_retry = %ld, want 1: "
		     "count one outcome per attempt", sum);
}

Test(lab06, todo2_no_writer_returns_the_uprobe_and_counts_success)
{
	struct spec_result r;

	scn_spec_quiet(SP_SPECULATIVE, true, SP_X, &r);
	OK(r);
	cr_assert_eq(r.id, SP_ID_X, "returned uprobe %d, want %d ((inode 1, offset 12 pages): "
		     "vm_pgoff 8 + 4 pages into the VMA)", r.id, SP_ID_X);
	cr_assert_eq(EV(r, SPECULATE_SUCCESS), 1);
	one_outcome(&r);
}

Test(lab06, todo2_no_uprobe_anonymous_or_hole_fails_lookup)
{
	static const unsigned long addr[] = { SP_NOPROBE, SP_ANON + PG(1), SP_HOLE };
	static const char *const what[] = { "a file VMA without uprobes", "an anonymous VMA",
					    "a hole" };
	struct spec_result r;

	for (int i = 0; i < 3; i++) {
		scn_spec_quiet(SP_SPECULATIVE, true, addr[i], &r);
		OK(r);
		cr_assert_eq(r.id, 0, "%s: returned uprobe %d", what[i], r.id);
		cr_assert_eq(EV(r, SPECULATE_FAIL_LOOKUP), 1, "%s: fail_lookup = %ld, want 1",
			     what[i], EV(r, SPECULATE_FAIL_LOOKUP));
		one_outcome(&r);
	}
}

/*
 * valid_vma(): a uprobe fires only in an executable file mapping. Q maps
 * I1 (every page offset has a uprobe) readable but not executable.
 */
Test(lab06, todo2_file_vma_without_vm_exec_fails_lookup)
{
	const unsigned long q = PG(800);
	struct uprobe *u;
	struct file *f;
	struct vtest t;

	vt_init(&t);
	sp_layout(&t.mm);
	f = file_open(&sp_i1);
	cr_assert_eq(do_mmap_file(&t.mm, q, PG(4), VM_READ, f, SP_PGOFF), 0);
	fput(f);
	rcu_read_lock();
	u = find_active_uprobe_speculative(&t.mm, q + PG(1));
	rcu_read_unlock();
	cr_assert(!u, "Q maps I1 without VM_EXEC: no uprobe fires there (valid_vma()), but the "
		  "speculation returned uprobe %d", u ? u->id : 0);
	cr_assert_eq(uprobe_event(&t.mm, UPROBE_SPECULATE_FAIL_LOOKUP), 1,
		     "fail_lookup = %ld, want 1", uprobe_event(&t.mm, UPROBE_SPECULATE_FAIL_LOOKUP));
	vt_fini(&t);
}

Test(lab06, todo2_write_locked_mm_fails_begin_and_reads_nothing)
{
	struct spec_result r;

	scn_spec_write_locked(SP_SPECULATIVE, &r);
	OK(r);
	cr_assert_eq(r.id, 0, "returned uprobe %d from a VMA a writer holds halfway changed "
		     "(vm_pgoff moved, vm_start not: that is uprobe %d)", r.id, SP_ID(1, 10));
	cr_assert_eq(EV(r, SPECULATE_FAIL_BEGIN), 1, "fail_begin = %ld, want 1",
		     EV(r, SPECULATE_FAIL_BEGIN));
	cr_assert_eq(r.offset_hooks, 0, "after a failed try_begin, read nothing");
	one_outcome(&r);
}

/* A writer inside the lookup: the speculation must return NULL, fail_retry counted. */
static void retried(enum vma_hook_point point, enum sp_race race, const char *what)
{
	struct spec_result r;

	scn_spec_race(SP_SPECULATIVE, point, race, &r);
	OK(r);
	cr_assert_eq(r.id, 0, "%s: the speculation returned uprobe %d; the VMA's answer is "
		     "now %d, and was %d when the lookup began", what, r.id,
		     sp_race_new_id(race), SP_ID_X);
	cr_assert_eq(EV(r, SPECULATE_FAIL_RETRY), 1, "%s: fail_retry = %ld, want 1", what,
		     EV(r, SPECULATE_FAIL_RETRY));
	cr_assert_eq(EV(r, SPECULATE_SUCCESS), 0, "%s: success counted", what);
	one_outcome(&r);
}

Test(lab06, todo2_writer_during_the_tree_lookup_fails_the_retry)
{
	retried(VMA_HOOK_UPROBE_FOUND, SP_RACE_REPLACE,
		"P replaced while find_uprobe_rcu() searched");
}

Test(lab06, todo2_vma_freed_and_file_reused_fails_the_retry)
{
	retried(VMA_HOOK_UPROBE_OFFSET, SP_RACE_REPLACE,
		"P unmapped and its struct file reused for inode 2 after vm_file was read");
}

Test(lab06, todo2_vma_start_moved_between_two_loads_fails_the_retry)
{
	retried(VMA_HOOK_UPROBE_OFFSET, SP_RACE_MOVE,
		"P's vm_start moved between the loads of vm_pgoff and vm_start");
}

/*
 * A writer right after vma_lookup() returned P: the lookup came after
 * try_begin, so the retry sees the writer. (Looked up before try_begin, P
 * is stale and nothing says so.)
 */
Test(lab06, todo2_writer_right_after_the_vma_lookup_fails_the_retry)
{
	retried(VMA_HOOK_VMA_LOOKUP, SP_RACE_REPLACE,
		"P replaced (and its file reused) just after vma_lookup() found it");
}

/* ------------------------------------------------ TODO 3: the fallback */

Test(lab06, todo3_switch_off_takes_only_mmap_lock)
{
	struct spec_result r;

	scn_spec_quiet(SP_HIT, false, SP_X, &r);
	OK(r);
	cr_assert_eq(r.id, SP_ID_X, "returned uprobe %d, want %d", r.id, SP_ID_X);
	cr_assert_eq(EV(r, SPECULATE_ATTEMPT), 0, "uprobe_speculate = 0: no speculation");
	cr_assert_eq(EV(r, MMAP_LOCKED), 1, "uprobe_mmap_locked = %ld, want 1",
		     EV(r, MMAP_LOCKED));
}

Test(lab06, todo3_success_takes_no_lock)
{
	struct spec_result r;

	scn_spec_quiet(SP_HIT, true, SP_X, &r);
	OK(r);
	cr_assert_eq(r.id, SP_ID_X, "returned uprobe %d, want %d", r.id, SP_ID_X);
	cr_assert_eq(EV(r, SPECULATE_SUCCESS), 1, "the hit did not speculate");
	cr_assert_eq(EV(r, MMAP_LOCKED), 0, "a successful speculation must not take mmap_lock");
	cr_assert_eq(r.hits_x, 1, "the handler ran %d times, want 1", r.hits_x);
}

Test(lab06, todo3_fail_begin_waits_for_the_writer_then_answers)
{
	struct spec_result r;

	scn_spec_write_locked(SP_HIT, &r);
	OK(r);
	cr_assert(r.waited, "the fallback must wait in mmap_read_lock() for the writer");
	cr_assert_eq(r.id, SP_ID_X, "returned uprobe %d, want %d (the writer keeps every "
		     "address's file offset)", r.id, SP_ID_X);
	cr_assert_eq(EV(r, MMAP_LOCKED), 1, "uprobe_mmap_locked = %ld, want 1",
		     EV(r, MMAP_LOCKED));
}

Test(lab06, todo3_fail_retry_falls_back_to_the_new_mapping)
{
	struct spec_result r;

	scn_spec_race(SP_HIT, VMA_HOOK_UPROBE_FOUND, SP_RACE_REPLACE, &r);
	OK(r);
	cr_assert_eq(EV(r, SPECULATE_FAIL_RETRY), 1, "the speculation was not retried");
	cr_assert_eq(r.id, SP_ID(2, 7), "returned uprobe %d; after the writer, SP_X maps "
		     "inode 2 at offset 7 pages: uprobe %d", r.id, SP_ID(2, 7));
	cr_assert_eq(EV(r, MMAP_LOCKED), 1, "uprobe_mmap_locked = %ld, want 1",
		     EV(r, MMAP_LOCKED));
	cr_assert_eq(r.hits_x, 1, "the new uprobe's handler ran %d times, want 1", r.hits_x);
}

Test(lab06, todo3_fail_lookup_still_asks_under_the_lock)
{
	struct spec_result r;

	scn_spec_quiet(SP_HIT, true, SP_NOPROBE, &r);
	OK(r);
	cr_assert_eq(r.id, 0, "returned uprobe %d where there is none", r.id);
	cr_assert_eq(EV(r, SPECULATE_FAIL_LOOKUP), 1, "the hit did not speculate");
	cr_assert_eq(EV(r, MMAP_LOCKED), 1, "speculation cannot prove there is no uprobe: "
		     "ask under mmap_lock (uprobe_mmap_locked = %ld)", EV(r, MMAP_LOCKED));
}

/*
 * The switch is read once per hit: the hit speculates, or it goes to
 * mmap_lock. Here the switch is turned off (debugfs, another CPU) while
 * a hit is in its speculative lookup, right after vma_lookup().
 */
static void switch_off(struct vtest *t, struct vm_area_struct *vma)
{
	(void)t;
	(void)vma;
	WRITE_ONCE(uprobe_speculate, 0);
}

Test(lab06, todo3_acts_on_one_reading_of_the_switch)
{
	long success, locked;
	struct vtest t;
	int id;

	vt_init(&t);
	sp_layout(&t.mm);
	vt_act_at(&t, VMA_HOOK_VMA_LOOKUP, switch_off, 1);
	id = handle_swbp(&t.mm, SP_X);
	WRITE_ONCE(uprobe_speculate, 1);
	success = uprobe_event(&t.mm, UPROBE_SPECULATE_SUCCESS);
	locked = uprobe_event(&t.mm, UPROBE_MMAP_LOCKED);
	cr_assert(!t.action_left[VMA_HOOK_VMA_LOOKUP], "the hit never looked the VMA up");
	vt_fini(&t);
	cr_assert_eq(id, SP_ID_X, "returned uprobe %d, want %d", id, SP_ID_X);
	cr_assert(success == 1 && locked == 0, "the switch was on when the hit read it and the "
		  "speculation succeeded (uprobe_speculate_success = %ld), yet the hit also took "
		  "mmap_lock (uprobe_mmap_locked = %ld): the switch was turned off meanwhile, and "
		  "the hit read it again. Read it once and act on that reading", success, locked);
}

/*
 * Hits of SP_X against a writer cycling P through six states. First a
 * forced prefix (code/vma/tests/spec_stress.h): 60 hits in the test's
 * thread alone, every 3rd hook inside a speculative lookup making writer
 * steps, the same on every run; then readers, the writer and a mapper
 * run free, perturbing the same way. Each answer must be one a state
 * between the hit's start and end gives.
 */
Test(lab06, todo3_stress_answers_match_a_state_of_the_writer)
{
	struct spec_stress_cfg cfg = { .readers = 2, .mapper = 1, .ops = 400, .seconds = 20,
				       .perturb = 3 };
	struct spec_stress_result r;

	spec_stress_run(&cfg, &r);
	cr_assert(r.ok, "%s", r.why);
}
