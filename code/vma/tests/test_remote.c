/* test_remote.c - access_remote_vm() both ways: which lock, the fallbacks, the bytes, and who waits for whom. */
#include <errno.h>
#include <criterion/criterion.h>

#include "remote.h"

TestSuite(remote, .init = harness_watchdog);

#define OK(r) cr_assert((r).s.ok, "%s", (r).s.why)
#define EV(r, e) ((r).ev[ACCESS_REMOTE_VM_##e])

static void quiet(enum remote_style s, bool sparse, unsigned long addr, int len,
		  int want, struct remote_result *r)
{
	scn_remote_quiet(s, sparse, addr, len, r);
	OK(*r);
	cr_assert_eq(r->ret, want, "%s: read %d bytes, want %d", remote_style_name(s),
		     r->ret, want);
	cr_assert(r->bytes_ok, "%s: wrong bytes", remote_style_name(s));
	cr_assert(!r->vma_held_after, "a VMA was left read-locked");
	if (s == REMOTE_MMAP) {
		cr_assert_eq(EV(*r, MMAP_LOCKED), 1);
		cr_assert_eq(EV(*r, VMA_LOCKED) + EV(*r, FALLBACK), 0);
	}
}

/* A per-VMA read that stayed under the one VMA lock. */
static void vma_locked_only(const struct remote_result *r)
{
	cr_assert_eq(EV(*r, VMA_LOCKED), 1);
	cr_assert_eq(EV(*r, MMAP_LOCKED) + EV(*r, FALLBACK), 0);
}

/* A per-VMA read that fell back to mmap_lock, for reason `why` (an ACCESS_REMOTE_VM_FALLBACK_*). */
static void fell_back(const struct remote_result *r, int why)
{
	cr_assert_eq(EV(*r, FALLBACK), 1);
	cr_assert_eq(r->ev[why], 1, "the fallback counted under another reason");
	cr_assert_eq(EV(*r, MMAP_LOCKED), 1);
	cr_assert_eq(EV(*r, VMA_LOCKED), 0);
}

Test(remote, inside_one_vma_takes_only_its_lock)
{
	struct remote_result r;

	quiet(REMOTE_VMA, false, RM_A + 100, PG(2) - 200, PG(2) - 200, &r);
	vma_locked_only(&r);
	quiet(REMOTE_MMAP, false, RM_A + 100, PG(2) - 200, PG(2) - 200, &r);
}

Test(remote, a_read_ending_at_vm_end_stays_under_the_vma_lock)
{
	struct remote_result r;

	quiet(REMOTE_VMA, false, RM_A + PG(2), PG(2), PG(2), &r);
	vma_locked_only(&r);
}

Test(remote, crossing_two_vmas_falls_back_and_reads_both)
{
	struct remote_result r;

	quiet(REMOTE_VMA, false, RM_A + PG(3) + 5, PG(2), PG(2), &r);
	fell_back(&r, ACCESS_REMOTE_VM_FALLBACK_SPAN);
	quiet(REMOTE_MMAP, false, RM_A + PG(3) + 5, PG(2), PG(2), &r);
}

Test(remote, a_hole_makes_a_short_read)
{
	struct remote_result r;

	for (int s = REMOTE_MMAP; s <= REMOTE_VMA; s++) {
		quiet(s, false, RM_B + PG(2) + 7, PG(4), PG(2) - 7, &r);
		quiet(s, false, RM_HOLE + 9, 100, 0, &r);
	}
	cr_assert_eq(EV(r, FALLBACK_NOVMA), 1);
}

Test(remote, vm_io_memory_goes_through_access_under_mmap_lock)
{
	struct remote_result r;

	for (int s = REMOTE_MMAP; s <= REMOTE_VMA; s++) {
		quiet(s, false, RM_D + PG(1) - 50, 100, 100, &r);
		cr_assert_eq(r.access_calls, 2, "->access() per page: %d calls", r.access_calls);
		cr_assert_eq(r.access_unlocked, 0, "->access() called without mmap_lock");
	}
	cr_assert_eq(EV(r, FALLBACK_PFNMAP), 1);
	cr_assert_eq(EV(r, VMA_LOCKED), 0);
}

Test(remote, an_unreadable_vma_reads_nothing)
{
	struct remote_result r;

	for (int s = REMOTE_MMAP; s <= REMOTE_VMA; s++)
		quiet(s, false, RM_N + 3, 100, 0, &r);
	cr_assert_eq(EV(r, FALLBACK_PAGE), 1);
}

Test(remote, a_page_that_needs_a_fault_falls_back_and_is_faulted_in)
{
	struct remote_result r;

	quiet(REMOTE_VMA, true, RM_A, PG(4), PG(4), &r);
	cr_assert(r.present_after);
	fell_back(&r, ACCESS_REMOTE_VM_FALLBACK_PAGE);
	quiet(REMOTE_MMAP, true, RM_A, PG(4), PG(4), &r);
	cr_assert(r.present_after);
}

Test(remote, vma_unmapped_between_lookup_and_lock_falls_back_to_nothing)
{
	struct remote_result r;

	scn_remote_lookup_unmap(&r);
	OK(r);
	cr_assert_eq(r.ret, 0);
	cr_assert(!r.vma_held_after);
	cr_assert_eq(r.miss, 1);
	cr_assert_eq(r.abort, 1);
	cr_assert_eq(EV(r, FALLBACK_NOVMA), 1);
	cr_assert_eq(EV(r, MMAP_LOCKED), 1);
}

static void unlocked(enum remote_change c, int want)
{
	struct remote_result r;

	scn_remote_unlocked_change(c, &r);
	OK(r);
	cr_assert_eq(r.ret, want, "read %d bytes, want %d", r.ret, want);
	cr_assert(r.bytes_ok);
	cr_assert(!r.vma_held_after);
	cr_assert_eq(EV(r, FALLBACK_PAGE), 1);
}

Test(remote, vma_unmapped_while_falling_back_is_a_short_read)
{
	unlocked(RCHANGE_UNMAP, PG(2));
}

Test(remote, vma_replaced_while_falling_back_reads_the_new_one)
{
	unlocked(RCHANGE_REPLACE, PG(4));
}

Test(remote, vma_shrunk_while_falling_back_stops_at_the_new_end)
{
	unlocked(RCHANGE_SHRINK, PG(2));
}

/*
 * Who waits for whom: each scenario reads while a writer runs, and must
 * read `want` bytes, right, with the writer blocked behind the read or
 * done before it; `ev` (an ACCESS_REMOTE_VM_*, or -1) is counted once.
 */
static void who_waits(const struct remote_result *r, bool writer_first, int want, int ev)
{
	OK(*r);
	if (writer_first)
		cr_assert(r->writer_done_first, "the writer should not have waited for the read");
	else
		cr_assert(r->writer_blocked, "the writer should have waited for the read");
	cr_assert_eq(r->ret, want, "read %d bytes, want %d", r->ret, want);
	cr_assert(r->bytes_ok);
	if (ev >= 0)
		cr_assert_eq(r->ev[ev], 1);
}

Test(remote, mmap_locked_reader_blocks_an_unrelated_mmap)
{
	struct remote_result r;

	scn_remote_unrelated_writer(REMOTE_MMAP, &r);
	who_waits(&r, false, PG(2), -1);
}

Test(remote, vma_locked_reader_does_not_block_an_unrelated_mmap)
{
	struct remote_result r;

	scn_remote_unrelated_writer(REMOTE_VMA, &r);
	who_waits(&r, true, PG(2), ACCESS_REMOTE_VM_VMA_LOCKED);
}

Test(remote, writer_of_the_held_vma_waits_for_the_read)
{
	struct remote_result r;

	scn_remote_vma_writer(false, &r);
	who_waits(&r, false, PG(4), ACCESS_REMOTE_VM_VMA_LOCKED);
}

Test(remote, fallback_drops_the_vma_lock_before_taking_mmap_lock)
{
	struct remote_result r;

	scn_remote_vma_writer(true, &r);
	who_waits(&r, false, PG(4), ACCESS_REMOTE_VM_FALLBACK_PAGE);
}

/* /proc/PID/mem: a page per access_remote_vm() call, the switch read per call. */
Test(remote, proc_mem_read_is_page_sized_calls_under_the_switch)
{
	unsigned char buf[PG(3)];
	struct vtest t;

	vt_init(&t);
	vt_map(&t, RM_A, 4, RW, true);
	vt_map(&t, RM_B, 4, VM_READ, true);
	access_remote_vm_vma_lock = 1;
	cr_assert_eq(proc_mem_read(&t.mm, RM_A + PG(2), buf, sizeof(buf)), PG(3));
	for (unsigned long i = 0; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], page_pattern(RM_A + PG(2) + i));
	cr_assert_eq(remote_event(&t.mm, ACCESS_REMOTE_VM_VMA_LOCKED), 3);
	cr_assert_eq(remote_event(&t.mm, ACCESS_REMOTE_VM_FALLBACK), 0);
	access_remote_vm_vma_lock = 0;
	cr_assert_eq(proc_mem_read(&t.mm, RM_B + PG(3), buf, sizeof(buf)), PG(1));
	cr_assert_eq(remote_event(&t.mm, ACCESS_REMOTE_VM_MMAP_LOCKED), 2);
	cr_assert_eq(proc_mem_read(&t.mm, RM_HOLE, buf, sizeof(buf)), -EIO);
	cr_assert_eq(remote_event(&t.mm, ACCESS_REMOTE_VM_VMA_LOCKED), 3);
	access_remote_vm_vma_lock = 1;
	vt_fini(&t);
}
