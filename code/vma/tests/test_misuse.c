/* test_misuse.c - API misuse is caught by an assertion that names it (checked in a child process). */
#include <criterion/criterion.h>

#include "scenarios.h"

TestSuite(misuse, .init = harness_watchdog);

static struct vtest t;

static void end_read_unlocked(void *arg)
{
	(void)arg;
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, false);
	vma_end_read(vt_vma(&t, SCN_A));
}

static void start_write_without_mmap_lock(void *arg)
{
	(void)arg;
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, false);
	vma_start_write(vt_vma(&t, SCN_A));
}

static void start_write_under_read_lock(void *arg)
{
	(void)arg;
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, false);
	mmap_read_lock(&t.mm);	/* vt_vma() can read-lock it again */
	vma_start_write(vt_vma(&t, SCN_A));
}

static void detach_without_vma_write_lock(void *arg)
{
	struct vm_area_struct *a;

	(void)arg;
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, false);
	a = vt_vma(&t, SCN_A);
	mmap_write_lock(&t.mm);
	vma_mark_detached(a, true);
}

static void write_unlock_without_lock(void *arg)
{
	(void)arg;
	vt_init(&t);
	mmap_write_unlock(&t.mm);
}

Test(misuse, vma_end_read_of_an_unlocked_vma)
{
	cr_assert(vt_dies_with(end_read_unlocked, NULL, "vma_end_read: VMA not read-locked"));
}

Test(misuse, vma_start_write_without_mmap_write_lock)
{
	cr_assert(vt_dies_with(start_write_without_mmap_lock, NULL,
			       "vma_start_write: mmap_lock not write-locked"));
}

Test(misuse, vma_start_write_under_mmap_read_lock)
{
	cr_assert(vt_dies_with(start_write_under_read_lock, NULL,
			       "vma_start_write: mmap_lock not write-locked"));
}

Test(misuse, vma_mark_detached_without_vma_write_lock)
{
	cr_assert(vt_dies_with(detach_without_vma_write_lock, NULL,
			       "vma_mark_detached: VMA not write-locked"));
}

Test(misuse, mmap_write_unlock_without_the_lock)
{
	cr_assert(vt_dies_with(write_unlock_without_lock, NULL,
			       "vma_end_write_all: mmap_lock not write-locked"));
}
