/* access_remote.c - reading another process's memory as 6.12 does: the whole transfer under mmap_read_lock(), page by page. */
#include <errno.h>

#include "vma.h"

/*
 * /proc/PID/mem, /proc/PID/cmdline and environ, and ptrace(PEEKDATA) all
 * end in __access_remote_vm() (mm/memory.c). In 6.12 it holds the target's
 * mmap_lock for reading across the whole transfer and, for every page,
 * looks the VMA up again and gets the page through GUP, which faults it in
 * when it is not present. Memory without struct pages (VM_IO, VM_PFNMAP:
 * a device's registers mapped into the process) is reached through the
 * VMA's ->access() instead. The result is the number of bytes copied,
 * short when the range runs into a hole.
 *
 * access_remote_vma.c is seed 004's version (lab 05 writes parts of it);
 * both share the helpers below. Model simplifications: reads only; no
 * FOLL_FORCE (a VMA without VM_READ cannot be read); no stack expansion;
 * no address tagging; mmap_read_lock() cannot be interrupted (6.12 uses
 * the killable variant and returns 0 on a fatal signal).
 */

/*
 * The switch, read once per call, as our kernel patch's debugfs knob
 * access_remote_vm_vma_lock: 0 is 6.12, 1 (the default) seed 004.
 */
/* region: access-remote-vm-switch */
int access_remote_vm_vma_lock = 1;

int access_remote_vm(struct mm_struct *mm, unsigned long addr, void *buf, int len)
{
	if (READ_ONCE(access_remote_vm_vma_lock))
		return access_remote_vm_vma(mm, addr, buf, len);
	return access_remote_vm_mmap(mm, addr, buf, len);
}
/* endregion: access-remote-vm-switch */

/* mm/gup.c check_vma_flags() for a read without FOLL_FORCE. */
int check_vma_flags(struct vm_area_struct *vma)
{
	if (vma->vm_flags & (VM_IO | VM_PFNMAP))
		return -EFAULT;		/* no struct page to get */
	if (!(vma->vm_flags & VM_READ))
		return -EFAULT;
	return 0;
}

/*
 * include/linux/mm.h get_user_page_vma_remote() and what it reaches in
 * mm/gup.c, under mmap_lock: look up addr's VMA, check its flags, find
 * the page, and fault it in (handle_mm_fault() without the VMA lock
 * flag) when it is not present.
 */
/* region: get-user-page-vma-remote */
struct page *get_user_page_vma_remote(struct mm_struct *mm, unsigned long addr,
				      struct vm_area_struct **vmap)
{
	struct vm_area_struct *vma;
	struct page *page;

	mmap_assert_locked(mm);
	vma = vma_lookup(mm, addr);
	if (!vma || check_vma_flags(vma))
		return ERR_PTR(-EFAULT);
	page = pte_page(mm, addr);		/* follow_page_mask() */
	if (!page) {
		if (handle_mm_fault(vma, addr, 0))	/* faultin_page() */
			return ERR_PTR(-EFAULT);
		page = pte_page(mm, addr);
	}
	*vmap = vma;
	return page;
}
/* endregion: get-user-page-vma-remote */

/*
 * Our kernel port's follow_page_vma_locked(): GUP's lookup of addr's page
 * (check_vma_flags(), follow_page_mask()) without the fault, for a caller
 * holding only the VMA's read lock. NULL: GUP would have to fault, or it
 * refuses the VMA.
 */
/* region: follow-page-vma-locked */
struct page *follow_page_vma_locked(struct vm_area_struct *vma, unsigned long addr)
{
	vma_assert_locked(vma);
	if (check_vma_flags(vma))
		return NULL;
	return pte_page(vma->vm_mm, addr);
}
/* endregion: follow-page-vma-locked */

/*
 * Copy up to len bytes at addr, at most to the end of its page, into
 * buf (seed 004's access_vm_page(); 6.12 has it inline). page NULL:
 * struct-page-less memory, reached through ->access() under mmap_lock.
 * The caller holds the VMA's lock or mmap_lock. Returns the bytes
 * copied, 0 when none could be.
 */
/* region: access-vm-page */
int access_vm_page(struct vm_area_struct *vma, struct page *page,
		   unsigned long addr, void *buf, int len)
{
	unsigned long offset = addr & (PAGE_SIZE - 1);
	int bytes = len;

	VM_BUG_ON_VMA(vma->vm_mod, vma,
		      "access_vm_page: VMA seen while a writer changes it");
	VM_BUG_ON_VMA(addr < vma->vm_start || addr >= vma->vm_end, vma,
		      "access_vm_page: address outside the VMA");
	if (!page) {
		if (!vma->vm_ops || !vma->vm_ops->access)
			return 0;
		mmap_assert_locked(vma->vm_mm);
		return vma->vm_ops->access(vma, addr, buf, len, 0);
	}
	if (bytes > (int)(PAGE_SIZE - offset))
		bytes = PAGE_SIZE - offset;
	__builtin_memcpy(buf, page->data + offset, bytes); /* copy_from_user_page() */
	return bytes;
}
/* endregion: access-vm-page */

/* region: access-remote-vm-mmap */
int access_remote_vm_mmap(struct mm_struct *mm, unsigned long addr, void *buf, int len)
{
	char *p = buf;

	mmap_read_lock(mm);
	count_remote_event(mm, ACCESS_REMOTE_VM_MMAP_LOCKED);
	/* 6.12 tries expand_stack() first, which drops mmap_lock if it fails */
	if (!vma_lookup(mm, addr)) {
		mmap_read_unlock(mm);
		return 0;
	}
	/* ignore errors, just check how much was successfully transferred */
	while (len > 0) {
		struct vm_area_struct *vma = NULL;
		struct page *page = get_user_page_vma_remote(mm, addr, &vma);
		int bytes;

		if (IS_ERR(page)) {
			/* A hole ends the transfer; VM_IO/VM_PFNMAP has ->access */
			vma = vma_lookup(mm, addr);
			if (!vma)
				break;
			page = NULL;
		}
		bytes = access_vm_page(vma, page, addr, p, len);
		if (bytes <= 0)
			break;
		mm_hook(mm, VMA_HOOK_REMOTE_COPIED, vma);
		len -= bytes;
		p += bytes;
		addr += bytes;
	}
	mmap_read_unlock(mm);
	return p - (char *)buf;
}
/* endregion: access-remote-vm-mmap */

/*
 * fs/proc/base.c mem_rw() for a read of /proc/PID/mem: at most a page per
 * access_remote_vm() call (the kernel copies through a bounce page), so a
 * 1 MiB read takes and drops the lock 256 times. Stops at the first call
 * that copies nothing: -EIO if that was the first.
 */
/* region: proc-mem-read */
long proc_mem_read(struct mm_struct *mm, unsigned long addr, void *buf, long count)
{
	long copied = 0;

	while (count > 0) {
		int this_len = count < (long)PAGE_SIZE ? count : (long)PAGE_SIZE;

		this_len = access_remote_vm(mm, addr, (char *)buf + copied, this_len);
		if (!this_len) {
			if (!copied)
				copied = -EIO;
			break;
		}
		addr += this_len;
		copied += this_len;
		count -= this_len;
	}
	return copied;
}
/* endregion: proc-mem-read */
