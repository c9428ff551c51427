/* grader.c - lab 04 grader: forced orders that tell a right vma_start_read(), lock_vma_under_rcu() and per-VMA walk from wrong ones. */
#define _GNU_SOURCE	/* dladdr(), for the ordering audit */
#include <criterion/criterion.h>

#include "walk_scenarios.h"
#include "sweep.h"
#include "../../tools/order_audit.h"

/*
 * The scenarios (code/vma/tests/scenarios.c and walk_scenarios.c) stop
 * threads at hook points or run a writer inside a hook, so each outcome
 * is decided by your code alone, never by timing. A wait that your code
 * never satisfies fails after vt_wait_s seconds instead of hanging.
 * Test names start with todoN_: the skeleton checker maps them to steps.
 */
static void init(void)
{
	harness_watchdog();
	vt_wait_s = 5;
}

TestSuite(lab04, .init = init);

#define OK(r) cr_assert((r).s.ok, "%s", (r).s.why)

/* ---------------------------------------------- TODO 1: vma_start_read */

Test(lab04, todo1_unlocked_vma_can_be_read_locked)
{
	struct vtest t;
	struct vm_area_struct *a;

	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, false);
	a = vt_vma(&t, SCN_A);
	cr_assert(vma_start_read(a), "nobody writes A: vma_start_read() must succeed");
	cr_assert(vma_is_read_locked(a), "vma_start_read() returned true without the read lock");
	vma_end_read(a);
	vt_fini(&t);
}

Test(lab04, todo1_write_locked_vma_fails_before_the_trylock)
{
	struct start_read_result r;

	scn_start_read_write_locked(&r);
	OK(r);
	cr_assert(!r.locked, "A is write-locked (vm_lock_seq == mm_lock_seq): must fail");
	cr_assert(!r.held, "a failed vma_start_read() left A read-locked");
	cr_assert_eq(r.trylocks, 0,
		     "a write-locked VMA must be refused by the unlocked check, before the trylock");
	cr_assert(r.other_locked, "B is not write-locked: it must be lockable meanwhile");
	cr_assert(r.locked_after_unlock, "after mmap_write_unlock() A must be lockable");
}

Test(lab04, todo1_rechecks_after_the_trylock)
{
	struct start_read_result r;

	scn_start_read_recheck(&r);
	OK(r);
	cr_assert(!r.locked,
		  "a writer write-locked A between the first check and the trylock: must fail");
	cr_assert(!r.held, "the re-check failed but A is still read-locked");
}

/*
 * mm_lock_seq is an unsigned count that wraps; a VMA write-locked before
 * the wrap keeps a vm_lock_seq above the count. Only equality means
 * "write-locked now".
 */
Test(lab04, todo1_counts_that_wrapped_still_read_lock)
{
	struct vtest t;
	struct vm_area_struct *a;

	vt_init(&t);
	t.mm.mm_lock_seq.sequence = UINT_MAX - 5;
	vt_map(&t, SCN_A, 4, RW, false);
	for (int i = 0; i < 3; i++) {	/* three writers come and go: the count wraps */
		mmap_write_lock(&t.mm);
		mmap_write_unlock(&t.mm);
	}
	a = vt_vma(&t, SCN_A);
	cr_assert_lt(t.mm.mm_lock_seq.sequence, a->vm_lock_seq,
		     "the test wanted mm_lock_seq (%u) wrapped below A's vm_lock_seq (%u)",
		     t.mm.mm_lock_seq.sequence, a->vm_lock_seq);
	cr_assert(vma_start_read(a), "A is not write-locked (vm_lock_seq %u != mm_lock_seq %u): "
		  "vma_start_read() must succeed; test vm_lock_seq == mm_lock_seq, not <= or >=",
		  a->vm_lock_seq, t.mm.mm_lock_seq.sequence);
	vma_end_read(a);
	vt_fini(&t);
}

/*
 * The ordering audit (labs/tools/order_audit.h): on x86 an ACQUIRE load is
 * a plain load, so no run above fails without it; this test reads what
 * your re-check says instead.
 */
Test(lab04, todo1_recheck_loads_mm_lock_seq_with_acquire)
{
	struct audit a;

	cr_assert(audit_locate((void *)vma_start_read, &a), "%s", a.why);
	cr_assert(audit_region(&a, 1, 1), "%s", a.why);
	cr_assert(audit_acquire_load(a.code, "mm_lock_seq"),
		  "the re-check after the trylock (the second TODO 1 region of %s) must load "
		  "mm_lock_seq with ACQUIRE (raw_read_seqcount() or smp_load_acquire()): it pairs "
		  "with the RELEASE in vma_end_write_all(), so a reader that sees the writer's "
		  "unlock also sees what the writer stored before it. On x86 a plain load runs the "
		  "same, so only this audit can tell", a.path);
}

/* ----------------------------------------- TODO 2: lock_vma_under_rcu */

Test(lab04, todo2_fault_takes_the_vma_lock)
{
	struct vtest t;

	long before;

	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, true);
	before = vma_lock_event(&t.mm, VMA_LOCK_SUCCESS);
	cr_assert_eq(do_user_addr_fault(&t.mm, SCN_A + PG(1), true), 0);
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_SUCCESS) - before, 1,
		     "vma_lock_success went up by %ld, want 1",
		     vma_lock_event(&t.mm, VMA_LOCK_SUCCESS) - before);
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_ABORT), 0);
	vt_fini(&t);
}

Test(lab04, todo2_lookup_then_munmap_is_a_miss)
{
	struct lookup_result r;

	scn_lookup_race(RACE_UNMAP, &r);
	OK(r);
	cr_assert(!r.got_vma, "A was unmapped after the lookup: returned a detached VMA");
	cr_assert_eq(r.miss, 1, "vma_lock_miss = %ld, want 1", r.miss);
	cr_assert_eq(r.abort, 1, "vma_lock_abort = %ld, want 1", r.abort);
}

Test(lab04, todo2_lookup_then_replace_finds_the_new_vma)
{
	struct lookup_result r;

	scn_lookup_race(RACE_REPLACE, &r);
	OK(r);
	cr_assert(r.got_vma && r.got_current,
		  "a new VMA now maps the address: the retried lookup must return it");
	cr_assert(r.held, "the returned VMA must be read-locked");
	cr_assert_eq(r.miss, 1, "vma_lock_miss = %ld, want 1", r.miss);
	cr_assert_eq(r.abort, 0, "vma_lock_abort = %ld, want 0", r.abort);
}

/*
 * mprotect of A's upper half: as 6.12 splits at the start of a range, a
 * new VMA takes the lower half and A keeps [A+4, A+8), its vm_start moved
 * up past the address looked up (its last byte below): a hole below A, for A.
 */
static void shrink_from_below(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_mprotect(&t->mm, SCN_A + PG(4), PG(4), VM_READ);
}

Test(lab04, todo2_lookup_then_vm_start_moves_up_is_an_abort)
{
	struct vm_area_struct *vma, *a;
	unsigned long addr = SCN_A + PG(4) - 1;	/* one byte below A's new vm_start */
	struct vtest t;

	vt_init(&t);
	vt_map(&t, SCN_A, 8, RW, true);
	a = vt_vma(&t, SCN_A);
	vt_act_at(&t, VMA_HOOK_LOOKUP, shrink_from_below, 1);
	vma = lock_vma_under_rcu(&t.mm, addr);
	cr_assert(!t.action_left[VMA_HOOK_LOOKUP], "lock_vma_under_rcu() did not look A up");
	cr_assert(a->vm_start > addr, "the test wanted A's vm_start moved above the address");
	if (vma)
		vma_end_read(vma);
	cr_assert(!vma || (vma->vm_start <= addr && addr < vma->vm_end),
		  "returned a VMA [%#lx, %#lx) that does not hold the address %#lx: after the "
		  "lock, check address < vm_start as well as address >= vm_end",
		  vma->vm_start, vma->vm_end, addr);
	cr_assert(!vma, "A's vm_start moved above the address after the lookup: must fail");
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_ABORT), 1, "vma_lock_abort = %ld, want 1",
		     vma_lock_event(&t.mm, VMA_LOCK_ABORT));
	vt_fini(&t);
}

/* A lookup, then a writer's change to A; returns what lock_vma_under_rcu() did. */
static struct vm_area_struct *lookup_then(vt_action_fn change, unsigned long addr,
					  struct vtest *t)
{
	struct vm_area_struct *vma;

	vt_init(t);
	vt_map(t, SCN_A, 8, RW, true);
	vt_act_at(t, VMA_HOOK_LOOKUP, change, 1);
	vma = lock_vma_under_rcu(&t->mm, addr);
	cr_assert(!t->action_left[VMA_HOOK_LOOKUP], "lock_vma_under_rcu() did not look A up");
	if (vma)
		vma_end_read(vma);
	return vma;
}

static void shrink_to_lower_half(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_mprotect(&t->mm, SCN_A, PG(4), VM_READ);	/* A keeps [A, A+4) */
}

Test(lab04, todo2_lookup_then_vm_end_moves_onto_the_address_is_an_abort)
{
	struct vtest t;
	struct vm_area_struct *vma = lookup_then(shrink_to_lower_half, SCN_A + PG(4), &t);

	cr_assert(!vma || vma->vm_start != SCN_A, "A shrank to [A, A + 4 pages) after the lookup "
		  "of A + 4 pages, its new vm_end: the address is not in A (vm_end is exclusive)");
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_ABORT), 1, "vma_lock_abort = %ld, want 1",
		     vma_lock_event(&t.mm, VMA_LOCK_ABORT));
	vt_fini(&t);
}

Test(lab04, todo2_last_byte_of_a_vma_takes_its_lock)
{
	struct vtest t;
	struct vm_area_struct *vma;

	vt_init(&t);
	vt_map(&t, SCN_A, 8, RW, true);
	vma = lock_vma_under_rcu(&t.mm, SCN_A + PG(8) - 1);
	cr_assert(vma, "A + 8 pages - 1 is A's last byte: lock_vma_under_rcu() must return A");
	vma_end_read(vma);
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_ABORT), 0);
	vt_fini(&t);
}

/*
 * A shrinks to its lower half, then is unmapped (detached) and the upper
 * half stays mapped by the new VMA: the detached check must come first
 * (retry, and find the new VMA), whatever A's range says now.
 */
static void shrink_then_unmap(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_mprotect(&t->mm, SCN_A, PG(4), VM_READ);
	do_munmap(&t->mm, SCN_A, PG(4));
}

Test(lab04, todo2_lookup_then_shrink_and_unmap_retries)
{
	struct vtest t;
	unsigned long addr = SCN_A + PG(6);
	struct vm_area_struct *vma = lookup_then(shrink_then_unmap, addr, &t);

	cr_assert(vma && vma == vt_vma(&t, addr), "A was detached (after it shrank) and a new VMA "
		  "maps the address: check detached first, retry, and return the new VMA");
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_MISS), 1, "vma_lock_miss = %ld, want 1",
		     vma_lock_event(&t.mm, VMA_LOCK_MISS));
	vt_fini(&t);
}

Test(lab04, todo2_lookup_then_shrink_is_an_abort)
{
	struct lookup_result r;

	scn_lookup_race(RACE_SHRINK, &r);
	OK(r);
	cr_assert(!r.got_vma, "A shrank below the address after the lookup: must fail");
	cr_assert_eq(r.abort, 1, "vma_lock_abort = %ld, want 1", r.abort);
}

/*
 * A shrinks below the address after the lookup, so the range check under
 * A's lock fails: an abort. Right after A's lock is released (at the end
 * of vma_end_read()), a writer unmaps A. Only what lock_vma_under_rcu()
 * read while it held A's lock may decide what happens next.
 */
static void unmap_lower_half(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_munmap(&t->mm, SCN_A, PG(4));
}

Test(lab04, todo2_decides_with_what_it_read_under_the_lock)
{
	unsigned long addr = SCN_A + PG(6);
	struct vm_area_struct *vma;
	struct vtest t;
	long miss;

	vt_init(&t);
	vt_map(&t, SCN_A, 8, RW, true);
	vt_act_at(&t, VMA_HOOK_LOOKUP, shrink_to_lower_half, 1);	/* A keeps [A, A+4) */
	vt_act_at(&t, VMA_HOOK_END_READ, unmap_lower_half, 1);
	vma = lock_vma_under_rcu(&t.mm, addr);
	cr_assert(!t.action_left[VMA_HOOK_LOOKUP], "lock_vma_under_rcu() did not look A up");
	if (vma)
		vma_end_read(vma);
	miss = vma_lock_event(&t.mm, VMA_LOCK_MISS);
	cr_assert(!vma && !miss, "A shrank below the address before it was locked: under its "
		  "lock the range check fails, an abort (vma_lock_abort). Then, after A's "
		  "vma_end_read(), a writer unmapped A; the call went on to %s%s. Decide with what "
		  "you read while you held A's lock: after vma_end_read() A's fields (detached "
		  "too) are the writer's", miss ? "count a miss and retry" : "return a VMA",
		  vma ? (miss ? " and returned the VMA now there" : "") : "");
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_ABORT), 1, "vma_lock_abort = %ld, want 1",
		     vma_lock_event(&t.mm, VMA_LOCK_ABORT));
	vt_fini(&t);
}

/*
 * Forced schedules (code/vma/tests/sweep.h): 300 rounds, each a fault with
 * a writer's mmap, munmap, mprotect or fault run inside it, at its first
 * or second pass through the lookup or the trylock. The fault must see
 * the mm after the change, and never leave a page where nothing is mapped.
 * The same rounds on every run: the failing one is named.
 */
Test(lab04, todo2_forced_schedules_of_faults_and_writers)
{
	struct sweep_result r;

	scn_sweep_faults(4, 300, &r);
	cr_assert(r.s.ok, "%s", r.s.why);
}

/* ----------------------------------------- TODO 3: the walk's fallback */

Test(lab04, todo3_quiet_walk_takes_only_vma_locks)
{
	struct mem_size_stats re, v;
	struct vtest t;

	vt_init(&t);
	scn_layout(&t);
	smaps_recount(&t.mm, &re);
	smaps_rollup_vma(&t.mm, &v);
	cr_assert_eq(v.size, re.size);
	cr_assert_eq(v.resident, re.resident);
	cr_assert_eq(v.nr_mmap_locked, 0);
	vt_fini(&t);
}

Test(lab04, todo3_falls_back_to_mmap_lock)
{
	struct walk_result r;

	scn_walk_fallback(false, &r);
	OK(r);
	cr_assert_eq(r.mss.size, r.recount.size, "size %lu, want %lu: a VMA went missing",
		     r.mss.size, r.recount.size);
	cr_assert_eq(r.mss.nr_fallbacks, 1);
	cr_assert_eq(r.mss.nr_mmap_locked, 3, "B, C and D should be walked under mmap_lock");
}

Test(lab04, todo3_takes_vma_locks_again_after_a_drop)
{
	struct walk_result r;

	scn_walk_fallback(true, &r);
	OK(r);
	cr_assert(r.mss.nr_drops >= 1, "the contended mmap_lock was never dropped (nr_drops = 0): "
		  "a writer waited for it while the walk went on");
	cr_assert_eq(r.mss.nr_drops, 1, "mmap_lock was dropped %lu times, want 1 (%lu VMAs walked "
		     "under mmap_lock, %lu under their own locks): after the drop the walk held "
		     "mmap_lock again and met the waiting writer again. After a drop, the next VMA "
		     "tries its own lock", (unsigned long)r.mss.nr_drops,
		     (unsigned long)r.mss.nr_mmap_locked, (unsigned long)r.mss.nr_vma_locked);
	cr_assert_eq(r.mss.nr_vma_locked, 4, "%lu VMAs walked under their own locks, %lu under "
		     "mmap_lock: after the drop C and D must be walked under their own VMA locks",
		     (unsigned long)r.mss.nr_vma_locked, (unsigned long)r.mss.nr_mmap_locked);
	cr_assert_eq(r.mss.size, r.recount.size);
}

/* ------------------------------------------------- TODO 4: the resume */

static void resume(enum walk_change change, unsigned long size, unsigned long resident)
{
	struct walk_result r;

	scn_walk_resume(WALK_VMA, change, &r);
	OK(r);
	cr_assert_eq(r.mss.size, PG(size), "reported %lu pages, want %lu",
		     r.mss.size / PAGE_SIZE, size);
	cr_assert_eq(r.mss.resident, PG(resident), "resident %lu pages, want %lu",
		     r.mss.resident / PAGE_SIZE, resident);
}

Test(lab04, todo4_resumes_inside_a_grown_vma)
{
	resume(CHANGE_GROW, 24, 20);
}

Test(lab04, todo4_skips_an_unmapped_next_vma)
{
	resume(CHANGE_UNMAP, 16, 16);
}

Test(lab04, todo4_counts_a_split_next_vma_once)
{
	resume(CHANGE_SPLIT, 20, 20);
}

Test(lab04, todo4_counts_the_resume_inside_a_grown_vma)
{
	struct walk_result r;

	scn_walk_resume(WALK_VMA, CHANGE_GROW, &r);
	OK(r);
	cr_assert_eq(r.mss.nr_resumed_inside, 1, "the walk resumed inside the grown VMA once: "
		     "nr_resumed_inside = %lu, want 1", (unsigned long)r.mss.nr_resumed_inside);
}

/* A VMA that starts exactly at last_vma_end is the next one, not a grown one. */
Test(lab04, todo4_adjacent_vmas_are_not_resumed_inside)
{
	struct mem_size_stats re, v;
	struct vtest t;

	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, true);
	vt_map(&t, SCN_A + PG(4), 4, VM_READ, true);	/* other flags: no merge */
	vt_map(&t, SCN_A + PG(8), 4, RW, true);
	smaps_recount(&t.mm, &re);
	smaps_rollup_vma(&t.mm, &v);
	cr_assert_eq(v.size, re.size, "size %lu, want %lu", v.size, re.size);
	cr_assert_eq(v.resident, re.resident);
	cr_assert_eq(v.nr_resumed_inside, 0, "three adjacent VMAs, none changed: "
		     "nr_resumed_inside = %lu, want 0 (vm_start == last_vma_end is a new VMA)",
		     (unsigned long)v.nr_resumed_inside);
	vt_fini(&t);
}

/*
 * E and A reported; a writer merges A, the hole after it and B into one
 * VMA and holds it write-locked; the walk's VMA lock fails and it waits
 * for mmap_lock. Under mmap_lock it finds a VMA that starts below
 * last_vma_end: the resume applies there too.
 */
Test(lab04, todo4_resumes_inside_a_vma_that_grew_while_it_waited_for_mmap_lock)
{
	struct walk_result r;

	scn_walk_grown_during_fallback(&r);
	OK(r);
	cr_assert_eq(r.mss.nr_fallbacks, 1, "the merged VMA's lock failed: one fallback, got %lu",
		     (unsigned long)r.mss.nr_fallbacks);
	cr_assert_eq(r.mss.size, PG(24), "reported %lu pages, want 24 (E, A, then the merged "
		     "VMA from A's end: 8 pages, then C and D): a VMA found under mmap_lock after "
		     "the fallback can start below last_vma_end too", r.mss.size / PAGE_SIZE);
	cr_assert_eq(r.mss.resident, PG(20), "resident %lu pages, want 20",
		     r.mss.resident / PAGE_SIZE);
	cr_assert_eq(r.mss.nr_resumed_inside, 1, "nr_resumed_inside = %lu, want 1",
		     (unsigned long)r.mss.nr_resumed_inside);
}

/*
 * Forced schedules (code/vma/tests/sweep.h): 300 rounds, each a per-VMA
 * walk with a writer's change run inside it while it holds no lock
 * (between two VMAs, or in lock_next_vma()'s lookup). Below last_vma_end
 * at the change the walk reports the mm as it was, above it the mm as it
 * is after. The same rounds on every run: the failing one is named.
 */
Test(lab04, todo4_forced_schedules_of_walks_and_writers)
{
	struct sweep_result r;

	scn_sweep_walks(4, 300, &r);
	cr_assert(r.s.ok, "%s", r.s.why);
}
