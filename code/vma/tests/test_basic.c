/* test_basic.c - single-threaded behaviour: faults, split/merge writers, vm_lock_seq, rollups equal the recount. */
#include <criterion/criterion.h>
#include <errno.h>

#include "scenarios.h"

static struct vtest t;

static void setup(void)
{
	harness_watchdog();
	vt_init(&t);
}

static void teardown(void)
{
	vt_fini(&t);
}

TestSuite(basic, .init = setup, .fini = teardown);

static int nr_vmas(void)
{
	struct vm_area_struct *v[64];
	int n;

	mmap_read_lock(&t.mm);
	n = mm_vmas(&t.mm, v, 64);
	mmap_read_unlock(&t.mm);
	return n;
}

Test(basic, fault_takes_the_vma_lock)
{
	vt_map(&t, SCN_A, 4, RW, false);
	cr_assert_eq(do_user_addr_fault(&t.mm, SCN_A, true), 0);
	cr_assert(page_present(&t.mm, SCN_A));
	/* The first fault attached the anon_vma under mmap_read_trylock(). */
	cr_assert_eq(do_user_addr_fault(&t.mm, SCN_A + PG(1), true), 0);
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_SUCCESS), 2);
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_ABORT), 0);
	cr_assert(!rwsem_is_locked(&vt_vma(&t, SCN_A)->vm_lock->lock));
}

Test(basic, fault_outside_any_vma_is_an_abort_and_sigsegv)
{
	vt_map(&t, SCN_A, 4, RW, false);
	cr_assert_eq(do_user_addr_fault(&t.mm, SCN_B, false), VM_FAULT_SIGSEGV);
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_ABORT), 1);
	cr_assert(!rwsem_is_locked(&t.mm.mmap_lock));
}

Test(basic, write_fault_on_read_only_vma_is_sigsegv_under_the_vma_lock)
{
	vt_map(&t, SCN_A, 4, VM_READ, false);
	cr_assert_eq(do_user_addr_fault(&t.mm, SCN_A, true), VM_FAULT_SIGSEGV);
	cr_assert_eq(vma_lock_event(&t.mm, VMA_LOCK_SUCCESS), 1);
	cr_assert(!page_present(&t.mm, SCN_A));
	cr_assert(!rwsem_is_locked(&vt_vma(&t, SCN_A)->vm_lock->lock));
}

Test(basic, adjacent_mappings_with_equal_flags_merge)
{
	vt_map(&t, SCN_A, 4, RW, false);
	vt_map(&t, SCN_A + PG(8), 4, RW, false);
	vt_map(&t, SCN_A + PG(4), 4, RW, false);	/* fills the hole */
	cr_assert_eq(nr_vmas(), 1);
	cr_assert_eq(vt_vma(&t, SCN_A)->vm_end, SCN_A + PG(12));
	vt_map(&t, SCN_A + PG(12), 4, VM_READ, false);	/* other flags */
	cr_assert_eq(nr_vmas(), 2);
}

Test(basic, munmap_in_the_middle_splits_and_zaps)
{
	vt_map(&t, SCN_A, 8, RW, true);
	cr_assert_eq(do_munmap(&t.mm, SCN_A + PG(2), PG(2)), 0);
	cr_assert_eq(nr_vmas(), 2);
	cr_assert_eq(vt_vma(&t, SCN_A)->vm_end, SCN_A + PG(2));
	cr_assert_eq(vt_vma(&t, SCN_A + PG(4))->vm_start, SCN_A + PG(4));
	cr_assert(!page_present(&t.mm, SCN_A + PG(2)));
	cr_assert(page_present(&t.mm, SCN_A + PG(4)));
}

Test(basic, mprotect_splits_in_three_and_back_merges_to_one)
{
	vt_map(&t, SCN_A, 8, RW, true);
	cr_assert_eq(do_mprotect(&t.mm, SCN_A + PG(2), PG(2), VM_READ), 0);
	cr_assert_eq(nr_vmas(), 3);
	cr_assert_eq(do_mprotect(&t.mm, SCN_A + PG(2), PG(2), RW), 0);
	cr_assert_eq(nr_vmas(), 1);
	cr_assert_eq(do_mprotect(&t.mm, SCN_A + PG(6), PG(4), VM_READ), -ENOMEM);
}

Test(basic, bad_ranges_are_einval)
{
	cr_assert_eq(do_mmap(&t.mm, SCN_A + 1, PG(1), RW), -EINVAL);
	cr_assert_eq(do_mmap(&t.mm, SCN_A, 0, RW), -EINVAL);
	cr_assert_eq(do_munmap(&t.mm, TASK_SIZE - PG(1), PG(2)), -EINVAL);
}

Test(basic, mmap_write_lock_write_locks_only_the_vmas_it_touches)
{
	struct vm_area_struct *a, *b;

	vt_map(&t, SCN_A, 4, RW, false);
	vt_map(&t, SCN_B, 4, RW, false);
	a = vt_vma(&t, SCN_A);
	b = vt_vma(&t, SCN_B);
	mmap_write_lock(&t.mm);
	cr_assert(t.mm.mm_lock_seq.sequence & 1, "odd while write-locked");
	vma_start_write(a);
	cr_assert_eq(a->vm_lock_seq, t.mm.mm_lock_seq.sequence);
	vma_start_write(a);	/* already ours: no second down_write */
	cr_assert(!vma_start_read(a));
	cr_assert(vma_start_read(b), "B is not write-locked: per-VMA readers go on");
	vma_end_read(b);
	mmap_write_unlock(&t.mm);
	cr_assert(vma_start_read(a), "mmap_write_unlock() released A");
	vma_end_read(a);
}

Test(basic, mmap_write_downgrade_releases_the_vma_write_locks)
{
	struct vm_area_struct *a;

	vt_map(&t, SCN_A, 4, RW, false);
	a = vt_vma(&t, SCN_A);
	mmap_write_lock(&t.mm);
	vma_start_write(a);
	mmap_write_downgrade(&t.mm);
	cr_assert_eq(t.mm.mm_lock_seq.sequence & 1, 0);
	cr_assert(vma_start_read(a));
	vma_end_read(a);
	mmap_read_unlock(&t.mm);
}

Test(basic, rollups_of_a_quiescent_mm_equal_the_recount)
{
	struct mem_size_stats re, m, v;

	scn_layout(&t);
	do_munmap(&t.mm, SCN_C + PG(1), PG(1));
	smaps_recount(&t.mm, &re);
	smaps_rollup_mmap(&t.mm, &m);
	smaps_rollup_vma(&t.mm, &v);
	cr_assert_eq(re.size, PG(19));
	cr_assert_eq(re.resident, PG(19));
	cr_assert_eq(m.resident, re.resident);
	cr_assert_eq(m.size, re.size);
	cr_assert_eq(v.resident, re.resident);
	cr_assert_eq(v.size, re.size);
	cr_assert_eq(v.vma_start, SCN_E);
	cr_assert_eq(v.last_vma_end, SCN_D + PG(4));
	cr_assert_eq(v.nr_vma_locked, 6);
	cr_assert_eq(v.nr_mmap_locked, 0);
	cr_assert_eq(m.nr_mmap_locked, 6);
}

Test(basic, rollup_of_an_empty_mm_is_empty)
{
	struct mem_size_stats m, v;

	smaps_rollup_mmap(&t.mm, &m);
	smaps_rollup_vma(&t.mm, &v);
	cr_assert_eq(m.size + v.size + m.last_vma_end + v.last_vma_end, 0);
}
