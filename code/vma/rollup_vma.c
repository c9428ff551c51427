/* rollup_vma.c - smaps_rollup in the style of seed 001: each VMA under its own lock, mmap_lock only as a fallback. */
#include <string.h>

#include "vma.h"

/*
 * Lab 04 hands out this file with its TODO regions emptied
 * (labs/04-per-vma-locks/src/rollup_vma.c is a link to it).
 *
 * The walk holds at most one lock at a time: either the current VMA's
 * read lock (found with lock_next_vma() under RCU), or, after a VMA lock
 * failed, mmap_lock for reading. Under mmap_lock it goes on VMA by VMA
 * like 6.12's walk and lets a waiting writer in when the lock is
 * contended; after such a drop it tries VMA locks again. Whatever was
 * dropped, the next VMA is looked up from last_vma_end, where the report
 * stopped.
 */
struct rollup_ctx {
	struct mm_struct *mm;
	bool mmap_locked;	/* else: the VMA returned is read-locked */
};

static struct vm_area_struct *rollup_next_vma(struct rollup_ctx *ctx,
					      struct mem_size_stats *mss,
					      unsigned long addr)
{
	if (!ctx->mmap_locked) {
		struct vm_area_struct *vma = lock_next_vma(ctx->mm, addr);

		if (!IS_ERR(vma))
			return vma;	/* read-locked, or NULL: no more VMAs */
		/* TODO 3: the VMA lock failed: fall back to mmap_lock */
		mmap_read_lock(ctx->mm);
		ctx->mmap_locked = true;
		mss->nr_fallbacks++;
		/* END TODO 3 */
	}
	/* Only mmap_lock keeps a VMA found without its own lock stable. */
	return ctx->mmap_locked ? find_vma(ctx->mm, addr) : NULL;
}

int smaps_rollup_vma(struct mm_struct *mm, struct mem_size_stats *mss)
{
	struct rollup_ctx ctx = { .mm = mm };
	unsigned long last_vma_end = 0;
	struct vm_area_struct *vma;

	memset(mss, 0, sizeof(*mss));
	while ((vma = rollup_next_vma(&ctx, mss, last_vma_end))) {
		unsigned long start = 0;	/* the whole VMA */

		if (!last_vma_end)
			mss->vma_start = vma->vm_start;
		/* TODO 4: a VMA that starts below last_vma_end grew or merged after we reported part of it */
		if (vma->vm_start < last_vma_end) {
			start = last_vma_end;	/* report only the rest */
			mss->nr_resumed_inside++;
		}
		/* END TODO 4 */
		smap_gather_stats(vma, mss, start);
		if (ctx.mmap_locked)
			mss->nr_mmap_locked++;
		else
			mss->nr_vma_locked++;
		last_vma_end = vma->vm_end;
		mm_hook(mm, VMA_HOOK_ROLLUP_GATHERED, vma);

		if (!ctx.mmap_locked) {
			vma_end_read(vma);
			mm_hook(mm, VMA_HOOK_ROLLUP_UNLOCKED, NULL);
		} else if (mmap_lock_is_contended(mm)) {
			/* TODO 3: let the waiting writer in; the next VMA tries its own lock again */
			mmap_read_unlock(mm);
			ctx.mmap_locked = false;
			mss->nr_drops++;
			/* END TODO 3 */
			mm_hook(mm, VMA_HOOK_ROLLUP_UNLOCKED, NULL);
		}
	}
	mss->last_vma_end = last_vma_end;
	if (ctx.mmap_locked)
		mmap_read_unlock(mm);
	return 0;
}
