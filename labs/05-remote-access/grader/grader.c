/* grader.c - lab 05 grader: forced orders that tell a right per-VMA access_remote_vm() from wrong ones. */
#include <criterion/criterion.h>
#include <string.h>

#include "remote.h"
#include "sweep.h"

/*
 * The scenarios (code/vma/tests/remote.c) build one small mm (read its
 * layout in remote.h), stop threads at hook points or change the mm inside
 * a hook, so each outcome is decided by your code alone, never by timing.
 * A wait your code never satisfies (a deadlock) fails after vt_wait_s
 * seconds instead of hanging. Test names start with todoN_: the skeleton
 * checker maps them to steps.
 */
static void init(void)
{
	harness_watchdog();
	vt_wait_s = 5;
}

TestSuite(lab05, .init = init);

#define OK(r) cr_assert((r).s.ok, "%s", (r).s.why)
#define EV(r, e) ((r).ev[ACCESS_REMOTE_VM_##e])

/*
 * mmap_lock or a VMA the read left locked: then vt_fini() would wait for
 * ever (it write-locks both), so the test must fail before it. In a hook
 * (one thread), the same test tells whether a writer may run there.
 */
static bool left_read_locked(struct vtest *t)
{
	struct vm_area_struct *v[16];
	bool held = false;
	int n;

	if (rwsem_is_locked(&t->mm.mmap_lock))
		return true;
	mmap_read_lock(&t->mm);
	n = mm_vmas(&t->mm, v, 16);
	for (int i = 0; i < n; i++)
		held |= vma_is_read_locked(v[i]);
	mmap_read_unlock(&t->mm);
	return held;
}

/* A quiet per-VMA read of [addr, addr + len): bytes and lock state checked. */
static void read_vma(bool sparse, unsigned long addr, int len, struct remote_result *r)
{
	scn_remote_quiet(REMOTE_VMA, sparse, addr, len, r);
	OK(*r);
	cr_assert(r->bytes_ok, "the bytes read are not the target's");
	cr_assert(!r->vma_held_after, "the read returned with a VMA still read-locked");
}

/* ------------------------------------------- TODO 1: which lock for a range */

Test(lab05, todo1_read_inside_one_vma_takes_only_its_lock)
{
	struct remote_result r;

	read_vma(false, RM_A + 100, PG(2) - 200, &r);
	cr_assert_eq(r.ret, PG(2) - 200, "read %d bytes, want %lu", r.ret, PG(2) - 200);
	cr_assert_eq(EV(r, VMA_LOCKED), 1, "access_remote_vm_vma_locked = %ld, want 1",
		     EV(r, VMA_LOCKED));
	cr_assert_eq(EV(r, MMAP_LOCKED), 0, "the read fits in A: it must not take mmap_lock");
}

Test(lab05, todo1_read_ending_at_vm_end_takes_the_vma_lock)
{
	struct remote_result r;

	read_vma(false, RM_A + PG(2), PG(2), &r);
	cr_assert_eq(r.ret, PG(2));
	cr_assert_eq(EV(r, VMA_LOCKED), 1,
		     "[A + 2 pages, A + 4 pages) ends exactly at A's vm_end: it fits in A");
}

Test(lab05, todo1_crossing_two_vmas_falls_back_and_releases_the_vma)
{
	struct remote_result r;

	read_vma(false, RM_A + PG(3) + 5, PG(2), &r);
	cr_assert_eq(r.ret, PG(2), "read %d bytes of A and B, want %lu", r.ret, PG(2));
	cr_assert_eq(EV(r, FALLBACK), 1, "access_remote_vm_fallback = %ld, want 1",
		     EV(r, FALLBACK));
	cr_assert_eq(EV(r, FALLBACK_SPAN), 1, "the reason is the range (fallback_span)");
	cr_assert_eq(EV(r, VMA_LOCKED), 0);
}

/* One byte past A's vm_end is in B: the range does not fit in A. */
Test(lab05, todo1_read_one_byte_into_the_next_vma_falls_back)
{
	struct remote_result r;

	read_vma(false, RM_B - 10, 11, &r);
	cr_assert_eq(r.ret, 11, "read %d bytes of A and B, want 11", r.ret);
	cr_assert_eq(EV(r, FALLBACK_SPAN), 1, "[A's vm_end - 10, A's vm_end + 1) ends one byte "
		     "inside B: fallback_span = %ld, want 1", EV(r, FALLBACK_SPAN));
	cr_assert_eq(EV(r, VMA_LOCKED), 0, "A's lock cannot serve a byte of B");
}

/* An empty range lies inside A: nothing needs mmap_lock. */
Test(lab05, todo1_empty_read_needs_no_mmap_lock)
{
	struct remote_result r;

	read_vma(false, RM_A + 100, 0, &r);
	cr_assert_eq(r.ret, 0, "read %d bytes, want 0", r.ret);
	cr_assert_eq(EV(r, FALLBACK), 0, "a read of 0 bytes inside A fell back to mmap_lock "
		     "(fallback_span = %ld): [addr, addr + 0) lies inside A", EV(r, FALLBACK_SPAN));
	cr_assert_eq(EV(r, MMAP_LOCKED), 0);
}

/*
 * addr + len must not wrap. In the model's address space (TASK_SIZE is
 * small) only a negative len, read as unsigned, wraps it: the range is then
 * not inside A, whatever addr + len compares to.
 */
Test(lab05, todo1_wrapping_range_falls_back)
{
	static const int lens[] = { -1, -2, -4096 };
	char buf[16];

	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct vtest t;
		long span;

		vt_init(&t);
		vt_map(&t, RM_A, 4, RW, true);
		access_remote_vm_vma(&t.mm, RM_A + PG(1), buf, lens[i]);
		span = remote_event(&t.mm, ACCESS_REMOTE_VM_FALLBACK_SPAN);
		cr_assert(!left_read_locked(&t), "len %d: the read returned with A still read-locked",
			  lens[i]);
		vt_fini(&t);
		cr_assert_eq(span, 1, "len %d: addr + len wraps below addr, so [addr, addr + len) "
			     "is not inside A: fallback_span = %ld, want 1 (test addr + len < addr)",
			     lens[i], span);
	}
}

Test(lab05, todo1_vm_io_memory_falls_back_to_access_under_mmap_lock)
{
	struct remote_result r;

	read_vma(false, RM_D + 10, 200, &r);
	cr_assert_eq(r.ret, 200);
	cr_assert_eq(EV(r, FALLBACK_PFNMAP), 1,
		     "D is VM_IO | VM_PFNMAP: the reason is fallback_pfnmap (= %ld)",
		     EV(r, FALLBACK_PFNMAP));
	cr_assert_eq(r.access_unlocked, 0, "->access() was called without mmap_lock");
}

Test(lab05, todo1_vma_unmapped_between_lookup_and_lock_reads_nothing)
{
	struct remote_result r;

	scn_remote_lookup_unmap(&r);
	OK(r);
	cr_assert_eq(r.ret, 0, "A was unmapped before its lock was taken: read %d bytes", r.ret);
	cr_assert(!r.vma_held_after);
	cr_assert_eq(EV(r, FALLBACK_NOVMA), 1);
}

Test(lab05, todo1_vma_locked_reader_does_not_block_an_unrelated_mmap)
{
	struct remote_result r;

	scn_remote_unrelated_writer(REMOTE_VMA, &r);
	OK(r);
	cr_assert(r.writer_done_first,
		  "a reader holding only A's lock made an mmap() elsewhere wait");
	cr_assert_eq(r.ret, PG(2));
	cr_assert(r.bytes_ok);
}

Test(lab05, todo1_writer_of_the_held_vma_waits_for_the_read)
{
	struct remote_result r;

	scn_remote_vma_writer(false, &r);
	OK(r);
	cr_assert(r.writer_blocked, "mprotect(A) did not wait for the reader holding A");
	cr_assert_eq(EV(r, VMA_LOCKED), 1, "the read fits in A: it must hold A's lock, only");
	cr_assert_eq(r.ret, PG(4));
	cr_assert(r.bytes_ok);
}

/*
 * The range is checked on the VMA that lock_vma_under_rcu() returned,
 * under its lock. Here a writer runs inside that lookup, before the lock:
 * A keeps only its first two pages, a new VMA takes the other two. The
 * read of [A + 1 page, A + 3 pages) no longer fits in A.
 */
static void shrink_a_to_two_pages(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_mprotect(&t->mm, RM_A, PG(2), VM_READ);
}

Test(lab05, todo1_range_is_checked_on_the_vma_it_locked)
{
	static unsigned char buf[PG(2)];
	struct vtest t;
	long span;
	int ret;

	vt_init(&t);
	vt_map(&t, RM_A, 4, RW, true);
	vt_act_at(&t, VMA_HOOK_LOOKUP, shrink_a_to_two_pages, 1);
	ret = access_remote_vm_vma(&t.mm, RM_A + PG(1), buf, PG(2));
	cr_assert(!t.action_left[VMA_HOOK_LOOKUP], "the read never looked A up under RCU");
	span = remote_event(&t.mm, ACCESS_REMOTE_VM_FALLBACK_SPAN);
	cr_assert(!left_read_locked(&t), "the read returned with a VMA still read-locked");
	vt_fini(&t);
	cr_assert_eq(ret, PG(2), "read %d bytes, want %lu", ret, PG(2));
	cr_assert_eq(span, 1, "A shrank to two pages before its lock was taken: the range "
		     "[A + 1 page, A + 3 pages) no longer fits in the VMA you locked, a "
		     "fallback_span (= %ld). Check the range on that VMA, under its lock", span);
	for (int i = 0; i < (int)PG(2); i++)
		cr_assert_eq(buf[i], page_pattern(RM_A + PG(1) + i), "byte %d is wrong", i);
}

/* --------------------------------- TODO 2: a page that needs a fault */

Test(lab05, todo2_missing_page_falls_back_to_mmap_lock)
{
	struct remote_result r;

	read_vma(true, RM_A, PG(4), &r);
	cr_assert_geq(r.ret, PG(2), "pages 0 and 1 are present: read only %d bytes", r.ret);
	cr_assert_eq(EV(r, FALLBACK), 1, "access_remote_vm_fallback = %ld, want 1",
		     EV(r, FALLBACK));
	cr_assert_eq(EV(r, FALLBACK_PAGE), 1, "the reason is the page (fallback_page)");
	cr_assert_eq(EV(r, MMAP_LOCKED), 1, "access_remote_vm_mmap_locked = %ld, want 1",
		     EV(r, MMAP_LOCKED));
	cr_assert_eq(EV(r, VMA_LOCKED), 0, "the call ended under mmap_lock");
}

Test(lab05, todo2_unreadable_vma_falls_back_and_reads_nothing)
{
	struct remote_result r;

	read_vma(false, RM_N + 3, 100, &r);
	cr_assert_eq(r.ret, 0, "N has no VM_READ: read %d bytes, want 0", r.ret);
	cr_assert_eq(EV(r, FALLBACK_PAGE), 1,
		     "GUP's checks refuse N: a fallback, reason fallback_page (= %ld)",
		     EV(r, FALLBACK_PAGE));
}

Test(lab05, todo2_fallback_drops_the_vma_lock_before_taking_mmap_lock)
{
	struct remote_result r;

	scn_remote_vma_writer(true, &r);
	cr_assert(r.reader_done, "the reader never finished: it asked for mmap_lock while "
		  "holding A, and the writer holding mmap_lock waits for A");
	OK(r);
	cr_assert(r.writer_blocked);
	cr_assert_geq(r.ret, PG(2));
}

/* ------------------------------ TODO 3: after the fallback, look again */

Test(lab05, todo3_fallback_reads_the_rest_and_faults_it_in)
{
	struct remote_result r;

	read_vma(true, RM_A, PG(4), &r);
	cr_assert_eq(r.ret, PG(4), "read %d bytes, want all of A (%lu)", r.ret, PG(4));
	cr_assert(r.present_after, "the missing page was not faulted in");
}

static void unlocked(enum remote_change c, int want, const char *what)
{
	struct remote_result r;

	scn_remote_unlocked_change(c, &r);
	OK(r);
	cr_assert_eq(r.ret, want, "%s while the reader held no lock: read %d bytes, want %d",
		     what, r.ret, want);
	cr_assert(r.bytes_ok);
	cr_assert(!r.vma_held_after);
}

Test(lab05, todo3_vma_unmapped_while_unlocked_is_a_short_read)
{
	unlocked(RCHANGE_UNMAP, PG(2), "A was unmapped and freed");
}

Test(lab05, todo3_vma_replaced_while_unlocked_reads_the_new_one)
{
	unlocked(RCHANGE_REPLACE, PG(4), "A was replaced by a new mapping");
}

Test(lab05, todo3_vma_shrunk_while_unlocked_stops_at_the_hole)
{
	unlocked(RCHANGE_SHRINK, PG(2), "A's pages 2 and 3 were unmapped");
}

/*
 * Forced schedules (code/vma/tests/sweep.h): 300 rounds, each a per-VMA
 * read with a writer's change (mmap, munmap, mprotect, VM_IO memory, a
 * fault) run inside it: in its lookup, its trylock, or where it dropped
 * the VMA lock at a page it could not copy. The read returns what the VMA
 * lock served, then 6.12's read of the changed mm from that page on. The
 * same rounds on every run: the failing one is named.
 */
Test(lab05, todo3_forced_schedules_of_remote_reads_and_writers)
{
	struct sweep_result r;

	scn_sweep_remote(5, 300, &r);
	cr_assert(r.s.ok, "%s", r.s.why);
}

/*
 * While the reader is unlocked (between A's lock and mmap_lock), A is
 * replaced by VM_IO memory with an ->access() method: GUP refuses it, and
 * the rest of the transfer goes through ->access() under mmap_lock.
 */
static int io_calls;

static int io_access(struct vm_area_struct *vma, unsigned long addr, void *buf, int len,
		     int write)
{
	(void)vma;
	(void)addr;
	(void)write;
	memset(buf, 0x5a, len);
	io_calls++;
	return len;
}

static const struct vm_operations_struct io_ops = { .access = io_access };

static bool io_held;	/* the reader held a lock at VMA_HOOK_REMOTE_UNLOCKED */

static void replace_a_with_io(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	if ((io_held = left_read_locked(t)))
		return;		/* a writer here would wait for ever */
	if (do_mmap_io(&t->mm, RM_A, PG(4), &io_ops))
		abort();
}

Test(lab05, todo3_vma_replaced_by_access_memory_reads_through_access)
{
	static unsigned char buf[PG(4)];
	struct vtest t;
	int ret;

	vt_init(&t);
	vt_map(&t, RM_A, 4, RW, false);
	for (int i = 0; i < 4; i++)	/* A's page 2 is missing: the reader falls back there */
		if (i != 2)
			cr_assert_eq(do_user_addr_fault(&t.mm, RM_A + PG(i), true), 0);
	vt_act_at(&t, VMA_HOOK_REMOTE_UNLOCKED, replace_a_with_io, 1);
	ret = access_remote_vm_vma(&t.mm, RM_A, buf, PG(4));
	cr_assert(!t.action_left[VMA_HOOK_REMOTE_UNLOCKED],
		  "the reader never dropped A's lock at the missing page");
	cr_assert(!io_held, "at VMA_HOOK_REMOTE_UNLOCKED (after your first TODO 2 region) the "
		  "reader still held A's lock or mmap_lock");
	cr_assert(!left_read_locked(&t), "the read returned with mmap_lock or a VMA still locked");
	vt_fini(&t);
	cr_assert_eq(ret, PG(4), "read %d bytes, want %lu: after the fallback the range is "
		     "VM_IO memory, which GUP refuses; vma_lookup() finds it and ->access() reads it",
		     ret, PG(4));
	cr_assert(io_calls > 0 && buf[PG(2)] == 0x5a, "page 2 onwards must come from ->access()");
}
