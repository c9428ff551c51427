/* vma_read.c - the read side of the per-VMA lock: vma_start_read(), vma_end_read(), lock_vma_under_rcu(), lock_next_vma(). */
#include <errno.h>

#include "vma.h"

/*
 * Lab 04 hands out this file with its TODO regions emptied
 * (labs/04-per-vma-locks/src/vma_read.c is a link to it), so the book
 * shows 6.12's own vma_start_read() and lock_vma_under_rcu() instead.
 */

bool vma_start_read(struct vm_area_struct *vma)
{
	struct mm_struct *mm = vma->vm_mm;

	/* TODO 1: give up early, without touching vm_lock, if the VMA is write-locked */
	/*
	 * A racy peek: a stale answer only costs a fallback, and the check
	 * that counts comes after the trylock. So relaxed loads will do;
	 * no ACQUIRE is needed here.
	 */
	if (READ_ONCE(vma->vm_lock_seq) == READ_ONCE(mm->mm_lock_seq.sequence))
		return false;
	/* END TODO 1 */

	mm_hook(mm, VMA_HOOK_TRYLOCK, vma);
	if (__builtin_expect(down_read_trylock(&vma->vm_lock->lock) == 0, 0))
		return false;

	/* TODO 1: check again now that the read lock is held; if that fails, do not keep the lock */
	/*
	 * A writer may have write-locked the VMA between the peek and the
	 * trylock (vma_start_write() holds vm_lock only for a moment). Under
	 * the read lock vm_lock_seq cannot change. ACQUIRE on mm_lock_seq
	 * pairs with the RELEASE in vma_end_write_all(): if we see the
	 * writer's unlock, we see everything it wrote before it.
	 */
	if (__builtin_expect(vma->vm_lock_seq ==
			     raw_read_seqcount(&mm->mm_lock_seq), 0)) {
		up_read(&vma->vm_lock->lock);
		return false;
	}
	/* END TODO 1 */
	return true;
}

void vma_end_read(struct vm_area_struct *vma)
{
	struct mm_struct *mm = vma->vm_mm;

	VM_BUG_ON_VMA(!vma_is_read_locked(vma), vma,
		      "vma_end_read: VMA not read-locked");
	rcu_read_lock();	/* keeps vma alive till the end of up_read */
	up_read(&vma->vm_lock->lock);
	rcu_read_unlock();
	mm_hook(mm, VMA_HOOK_END_READ, vma);	/* model only: vma may be gone */
}

/*
 * Find the VMA containing address under RCU and read-lock it; NULL sends
 * the caller to mmap_lock. mm/memory.c of 6.12, with vma_lookup() for
 * the maple tree walk.
 */
struct vm_area_struct *lock_vma_under_rcu(struct mm_struct *mm,
					  unsigned long address)
{
	struct vm_area_struct *vma;

	rcu_read_lock();
retry:
	vma = vma_lookup(mm, address);
	if (!vma)
		goto inval;
	mm_hook(mm, VMA_HOOK_LOOKUP, vma);

	if (!vma_start_read(vma))
		goto inval;

	/* TODO 2: the VMA may have been detached or changed between the lookup and the lock */
	/* Check if the VMA got isolated after we found it */
	if (vma->detached) {
		vma_end_read(vma);
		count_vm_vma_lock_event(mm, VMA_LOCK_MISS);
		/* The area was replaced with another one */
		goto retry;
	}
	/* Check since vm_start/vm_end might change before we lock the VMA */
	if (__builtin_expect(address < vma->vm_start ||
			     address >= vma->vm_end, 0))
		goto inval_end_read;
	/* END TODO 2 */

	rcu_read_unlock();
	return vma;

inval_end_read:
	vma_end_read(vma);
inval:
	rcu_read_unlock();
	count_vm_vma_lock_event(mm, VMA_LOCK_ABORT);
	return NULL;
}

/*
 * For walkers: read-lock the first VMA that ends above addr. NULL: no
 * such VMA. ERR_PTR(-EAGAIN): could not lock it; take mmap_lock.
 * 6.12 has no such helper (later kernels have lock_next_vma() in
 * mm/mmap_lock.c, which checks for a VMA inserted ahead of the one found
 * with mmap_lock speculation, also absent from 6.12): here a second
 * lookup under RCU must find the same VMA.
 */
/* region: lock-next-vma */
struct vm_area_struct *lock_next_vma(struct mm_struct *mm, unsigned long addr)
{
	struct vm_area_struct *vma;

	rcu_read_lock();
retry:
	vma = find_vma(mm, addr);
	if (!vma)
		goto out;
	mm_hook(mm, VMA_HOOK_LOOKUP, vma);
	if (!vma_start_read(vma)) {
		vma = ERR_PTR(-EAGAIN);
		goto out;
	}
	if (vma->detached) {
		vma_end_read(vma);
		goto retry;
	}
	/* Shrunk below addr, or a new VMA now sits between addr and it. */
	if (addr >= vma->vm_end ||
	    (addr < vma->vm_start && find_vma(mm, addr) != vma)) {
		vma_end_read(vma);
		vma = ERR_PTR(-EAGAIN);
	}
out:
	rcu_read_unlock();
	return vma;
}
/* endregion: lock-next-vma */
