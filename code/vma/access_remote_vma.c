/* access_remote_vma.c - reading another process's memory in the style of seed 004: one VMA's lock when the range fits in it, mmap_lock otherwise. */
#include "vma.h"

/*
 * Lab 05 hands out this file with its TODO regions emptied
 * (labs/05-remote-access/src/access_remote_vma.c is a link to it), so the
 * book describes this function and lists 6.12's and our kernel patch's.
 *
 * Seed 004 (Rik van Riel) takes the VMA's read lock, found under RCU,
 * when [addr, addr + len) lies inside one VMA that the lock can serve,
 * and the mmap_lock otherwise. Under the VMA lock munmap() cannot free
 * the pages being copied: it write-locks the VMA (vma_start_write(),
 * which waits for us) before it zaps them. Unlike the seed (its GUP
 * can fault under a VMA lock; 6.12's cannot), the VMA-locked path does not
 * fault: at the first page that is not present it trades the VMA lock for
 * mmap_lock and goes on from there as 6.12 does.
 */

/*
 * The VMA at addr, read-locked, when the whole range lies inside it and
 * its memory has struct pages (not ->access() memory); NULL (the reason
 * counted) sends the call to mmap_lock.
 */
static struct vm_area_struct *remote_access_lock_vma(struct mm_struct *mm,
						     unsigned long addr, int len)
{
	enum remote_event why = ACCESS_REMOTE_VM_FALLBACK_NOVMA;
	struct vm_area_struct *vma = NULL;

	/* TODO 1: read-lock addr's VMA; keep it only if [addr, addr + len) lies inside it and it is not VM_IO/VM_PFNMAP memory, else release it and set why */
	vma = lock_vma_under_rcu(mm, addr);
	if (vma) {
		/* addr + len must not wrap, and must end inside this VMA */
		if (addr + len < addr || addr + len > vma->vm_end)
			why = ACCESS_REMOTE_VM_FALLBACK_SPAN;
		else if (vma->vm_flags & (VM_IO | VM_PFNMAP))	/* ->access() */
			why = ACCESS_REMOTE_VM_FALLBACK_PFNMAP;
		else
			return vma;
		vma_end_read(vma);
	}
	/* END TODO 1 */
	count_remote_event(mm, ACCESS_REMOTE_VM_FALLBACK);
	count_remote_event(mm, why);
	return NULL;
}

int access_remote_vm_vma(struct mm_struct *mm, unsigned long addr, void *buf, int len)
{
	struct vm_area_struct *vma = remote_access_lock_vma(mm, addr, len);
	bool mmap_locked = false;
	char *p = buf;

	if (!vma)	/* the whole transfer as 6.12 does it */
		return access_remote_vm_mmap(mm, addr, buf, len);

	while (len > 0) {
		struct page *page = NULL;
		int bytes;

		if (!mmap_locked) {
			page = follow_page_vma_locked(vma, addr);	/* never faults */
			if (!page) {
				/* TODO 2: no page without a fault (or GUP refuses the VMA): release the VMA lock (before anything else) and count the fallback and its reason */
				vma_end_read(vma);
				count_remote_event(mm, ACCESS_REMOTE_VM_FALLBACK);
				count_remote_event(mm, ACCESS_REMOTE_VM_FALLBACK_PAGE);
				/* END TODO 2 */
				mm_hook(mm, VMA_HOOK_REMOTE_UNLOCKED, vma);
				/* TODO 2: then take mmap_lock (count it), note that in mmap_locked, and go round the loop again from addr */
				mmap_read_lock(mm);
				count_remote_event(mm, ACCESS_REMOTE_VM_MMAP_LOCKED);
				mmap_locked = true;
				continue;
				/* END TODO 2 */
			}
		} else {
			/* TODO 3: the VMA held before was unlocked for a while (unmapped? freed?): look addr up again, with its page; a hole ends the transfer */
			page = get_user_page_vma_remote(mm, addr, &vma);
			if (IS_ERR(page)) {
				vma = vma_lookup(mm, addr);	/* ->access memory? */
				if (!vma)
					break;
				page = NULL;
			}
			/* END TODO 3 */
		}
		bytes = access_vm_page(vma, page, addr, p, len);
		if (bytes <= 0)
			break;
		mm_hook(mm, VMA_HOOK_REMOTE_COPIED, vma);
		len -= bytes;
		p += bytes;
		addr += bytes;
	}
	if (mmap_locked) {
		mmap_read_unlock(mm);
	} else {
		vma_end_read(vma);
		count_remote_event(mm, ACCESS_REMOTE_VM_VMA_LOCKED);
	}
	return p - (char *)buf;
}
