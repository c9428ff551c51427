/* rollup.c - /proc/PID/smaps_rollup as 6.12 reads it: the whole walk under mmap_lock, dropped and retaken when contended. */
#include <string.h>

#include "vma.h"

/*
 * Model only: nanoseconds of work per present page, standing in for the
 * kernel's per-PTE work in smaps_pte_range(). 0 (the tests) costs nothing;
 * bench_vma sets it (--page-ns) so that a walk takes as long, relative to
 * a mapper's call, as it does in a kernel.
 */
long smap_page_cost_ns;

static void smap_account_page(void)
{
	long long until;

	if (!smap_page_cost_ns)
		return;
	until = sched_clock_ns() + smap_page_cost_ns;
	while (sched_clock_ns() < until)
		;
}

/*
 * The page walk for one VMA from start (0: from vm_start): count the
 * present pages. The caller holds the VMA's lock or mmap_lock, so a
 * writer cannot be changing the VMA (vm_mod says so).
 */
void smap_gather_stats(struct vm_area_struct *vma, struct mem_size_stats *mss,
		       unsigned long start)
{
	struct mm_struct *mm = vma->vm_mm;

	VM_BUG_ON_VMA(vma->vm_mod, vma,
		      "smap_gather_stats: VMA seen while a writer changes it");
	/* Invalid start */
	if (start >= vma->vm_end)
		return;
	if (!start)
		start = vma->vm_start;
	for (unsigned long a = start; a < vma->vm_end; a += PAGE_SIZE)
		if (READ_ONCE(mm->pte[a >> PAGE_SHIFT])) {
			mss->resident += PAGE_SIZE;
			smap_account_page();
		}
	mss->size += vma->vm_end - start;
}

/* region: rollup-mmap-lock */
int smaps_rollup_mmap(struct mm_struct *mm, struct mem_size_stats *mss)
{
	unsigned long vma_start = 0, last_vma_end = 0;
	struct vm_area_struct *vma;

	memset(mss, 0, sizeof(*mss));
	mmap_read_lock(mm);
	vma = find_vma(mm, 0);
	if (!vma)
		goto empty_set;

	vma_start = vma->vm_start;
	do {
		smap_gather_stats(vma, mss, 0);
		mss->nr_mmap_locked++;
		last_vma_end = vma->vm_end;
		mm_hook(mm, VMA_HOOK_ROLLUP_GATHERED, vma);

		/* Release mmap_lock temporarily if a writer waits for it. */
		if (mmap_lock_is_contended(mm)) {
			mmap_read_unlock(mm);
			mss->nr_drops++;
			mm_hook(mm, VMA_HOOK_ROLLUP_UNLOCKED, NULL);
			mmap_read_lock(mm);

			/* The first VMA ending above last_vma_end (vma_next()). */
			vma = find_vma(mm, last_vma_end);
			/* No more VMAs */
			if (!vma)
				break;
			/* Freed, unchanged or new: start the next one whole. */
			if (vma->vm_start >= last_vma_end) {
				smap_gather_stats(vma, mss, 0);
				mss->nr_mmap_locked++;
				last_vma_end = vma->vm_end;
				continue;
			}
			/* It grew or merged across last_vma_end: the rest only. */
			if (vma->vm_end > last_vma_end) {
				smap_gather_stats(vma, mss, last_vma_end);
				mss->nr_mmap_locked++;
				mss->nr_resumed_inside++;
				last_vma_end = vma->vm_end;
			}
		}
	} while ((vma = find_vma(mm, vma->vm_end)));	/* for_each_vma() */

empty_set:
	mss->vma_start = vma_start;
	mss->last_vma_end = last_vma_end;
	mmap_read_unlock(mm);
	return 0;
}
/* endregion: rollup-mmap-lock */

/* What a rollup of a quiescent mm must equal. */
void smaps_recount(struct mm_struct *mm, struct mem_size_stats *mss)
{
	struct vm_area_struct *vma;

	memset(mss, 0, sizeof(*mss));
	mmap_read_lock(mm);
	for (vma = find_vma(mm, 0); vma; vma = find_vma(mm, vma->vm_end)) {
		if (!mss->size)
			mss->vma_start = vma->vm_start;
		smap_gather_stats(vma, mss, 0);
		mss->last_vma_end = vma->vm_end;
	}
	mmap_read_unlock(mm);
}
