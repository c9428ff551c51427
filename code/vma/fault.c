/* fault.c - the x86 page fault path of 6.12: per-VMA lock first, VM_FAULT_RETRY and mmap_lock as the fallback. */
#include <stdlib.h>

#include "vma.h"

/* ACQUIRE pairs with the RELEASE that installs a page: its bytes are filled. */
struct page *pte_page(struct mm_struct *mm, unsigned long addr)
{
	return __atomic_load_n(&mm->pte[addr >> PAGE_SHIFT], __ATOMIC_ACQUIRE);
}

bool page_present(struct mm_struct *mm, unsigned long addr)
{
	return pte_page(mm, addr) != NULL;
}

/*
 * do_anonymous_page(): a new page, filled before it is installed; when a
 * racing fault installed one first (6.12 sees !pte_none() under the page
 * table lock), ours is dropped.
 */
static void do_anonymous_page(struct mm_struct *mm, unsigned long address)
{
	unsigned long base = address & ~(PAGE_SIZE - 1);
	struct page *page, *none = NULL;

	if (pte_page(mm, address))
		return;
	page = malloc(sizeof(*page));
	if (!page)
		abort();
	for (unsigned long i = 0; i < PAGE_SIZE; i++)
		page->data[i] = page_pattern(base + i);
	if (!__atomic_compare_exchange_n(&mm->pte[address >> PAGE_SHIFT], &none, page,
					 false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		free(page);
}

/* arch/x86/mm/fault.c access_error(), for the three flags we model. */
static bool access_error(bool write, struct vm_area_struct *vma)
{
	if (write)
		return !(vma->vm_flags & VM_WRITE);
	return !(vma->vm_flags & (VM_READ | VM_WRITE | VM_EXEC));
}

/*
 * __vmf_anon_prepare(): a VMA's first anonymous fault attaches an
 * anon_vma, which may look at neighbouring VMAs, so it needs mmap_lock.
 * Under only the VMA lock, try for mmap_lock and otherwise ask for a
 * retry under mmap_lock (dropping the VMA lock, as vmf_anon_prepare()).
 */
/* region: vmf-anon-prepare */
static vm_fault_t vmf_anon_prepare(struct vm_area_struct *vma,
				   unsigned int flags)
{
	if (READ_ONCE(vma->anon_vma))
		return 0;
	if (flags & FAULT_FLAG_VMA_LOCK) {
		if (!mmap_read_trylock(vma->vm_mm)) {
			vma_end_read(vma);
			return VM_FAULT_RETRY;
		}
	}
	pthread_mutex_lock(&vma->vm_mm->page_table_lock); /* __anon_vma_prepare() */
	if (!vma->anon_vma)
		WRITE_ONCE(vma->anon_vma, true);
	pthread_mutex_unlock(&vma->vm_mm->page_table_lock);
	if (flags & FAULT_FLAG_VMA_LOCK)
		mmap_read_unlock(vma->vm_mm);
	return 0;
}
/* endregion: vmf-anon-prepare */

vm_fault_t handle_mm_fault(struct vm_area_struct *vma, unsigned long address,
			   unsigned int flags)
{
	vm_fault_t ret;

	/* assert_fault_locked() */
	if (flags & FAULT_FLAG_VMA_LOCK)
		vma_assert_locked(vma);
	else
		mmap_assert_locked(vma->vm_mm);
	VM_BUG_ON_VMA(vma->vm_mod, vma,
		      "handle_mm_fault: VMA seen while a writer changes it");
	VM_BUG_ON_VMA(address < vma->vm_start || address >= vma->vm_end, vma,
		      "handle_mm_fault: address outside the VMA");
	ret = vmf_anon_prepare(vma, flags);
	if (ret)
		return ret;
	do_anonymous_page(vma->vm_mm, address);
	return 0;
}

/* region: do-user-addr-fault */
vm_fault_t do_user_addr_fault(struct mm_struct *mm, unsigned long address,
			      bool write)
{
	unsigned int flags = write ? FAULT_FLAG_WRITE : 0;
	struct vm_area_struct *vma;
	vm_fault_t fault;

	vma = lock_vma_under_rcu(mm, address);
	if (!vma)
		goto lock_mmap;

	if (access_error(write, vma)) {
		vma_end_read(vma);	/* bad_area_access_error(.., NULL, vma) */
		count_vm_vma_lock_event(mm, VMA_LOCK_SUCCESS);
		return VM_FAULT_SIGSEGV;
	}
	fault = handle_mm_fault(vma, address, flags | FAULT_FLAG_VMA_LOCK);
	if (!(fault & VM_FAULT_RETRY)) {
		vma_end_read(vma);
		count_vm_vma_lock_event(mm, VMA_LOCK_SUCCESS);
		return fault;
	}
	count_vm_vma_lock_event(mm, VMA_LOCK_RETRY);

lock_mmap:
	mmap_read_lock(mm);	/* lock_mm_and_find_vma(), no stack growth */
	vma = vma_lookup(mm, address);
	if (!vma || access_error(write, vma)) {
		mmap_read_unlock(mm);
		return VM_FAULT_SIGSEGV;
	}
	fault = handle_mm_fault(vma, address, flags);
	mmap_read_unlock(mm);
	return fault;
}
/* endregion: do-user-addr-fault */
