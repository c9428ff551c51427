/* mmap.c - the writers: mmap, munmap and mprotect with split and merge, as mmap_lock + vma_start_write() users. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vma.h"
#include "tree.h"

/*
 * Every writer follows 6.12's protocol:
 *   mmap_write_lock(mm)           mm_lock_seq becomes odd
 *   vma_start_write(vma)          for each VMA it will change, before
 *                                 changing it (new VMAs included, as
 *                                 __split_vma() does)
 *   change, detach, publish the new tree
 *   vm_area_free(old)             call_rcu(): RCU readers may hold it
 *   mmap_write_unlock(mm)         mm_lock_seq even again: every VMA
 *                                 write lock above is released at once
 * The model works on a private list of the VMAs (struct vma_edit) and
 * publishes a new tree at the end; the kernel edits the maple tree in
 * place. Merging ignores anon_vma compatibility and vm_file.
 */
struct vma_edit {
	struct mm_struct *mm;
	struct vm_area_struct **v;	/* the VMAs, in address order */
	int nr, cap;
	struct vm_area_struct **touched; /* write-locked by this edit */
	int nr_touched, cap_touched;
	struct vm_area_struct **gone;	/* detached, to free */
	int nr_gone;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		abort();
	return p;
}

static void edit_begin(struct vma_edit *e, struct mm_struct *mm)
{
	memset(e, 0, sizeof(*e));
	e->mm = mm;
	mmap_write_lock(mm);
	e->cap = mm->mm_mt->nr + 4;
	e->v = xrealloc(NULL, e->cap * sizeof(*e->v));
	e->nr = mm_vmas(mm, e->v, e->cap);
	e->gone = xrealloc(NULL, e->cap * sizeof(*e->gone));
}

/* region: writer-touch */
/* Write-lock a VMA before changing it; mark it for readers' checks. */
static void edit_touch(struct vma_edit *e, struct vm_area_struct *vma)
{
	if (vma->vm_mod)
		return;
	vma_start_write(vma);
	vma->vm_mod = 1;
	if (e->nr_touched == e->cap_touched) {
		e->cap_touched = 2 * e->cap_touched + 4;
		e->touched = xrealloc(e->touched,
				      e->cap_touched * sizeof(*e->touched));
	}
	e->touched[e->nr_touched++] = vma;
}
/* endregion: writer-touch */

static void edit_insert(struct vma_edit *e, int at, struct vm_area_struct *vma)
{
	if (e->nr == e->cap) {
		e->cap *= 2;
		e->v = xrealloc(e->v, e->cap * sizeof(*e->v));
		e->gone = xrealloc(e->gone, e->cap * sizeof(*e->gone));
	}
	memmove(&e->v[at + 1], &e->v[at], (e->nr - at) * sizeof(*e->v));
	e->v[at] = vma;
	e->nr++;
}

/* region: writer-detach */
static void edit_remove(struct vma_edit *e, int at)
{
	struct vm_area_struct *vma = e->v[at];

	edit_touch(e, vma);
	vma_mark_detached(vma, true);	/* asserts the write lock */
	e->gone[e->nr_gone++] = vma;
	memmove(&e->v[at], &e->v[at + 1], (e->nr - at - 1) * sizeof(*e->v));
	e->nr--;
}
/* endregion: writer-detach */

/*
 * Split the VMA straddling addr (__split_vma()). With new_below the new
 * VMA takes [vm_start, addr) and the old one moves its vm_start up, as
 * 6.12 does at the start of an mprotect or munmap range; otherwise the
 * new VMA takes [addr, vm_end). Both are write-locked first.
 */
static void edit_split(struct vma_edit *e, unsigned long addr, bool new_below)
{
	for (int i = 0; i < e->nr; i++) {
		struct vm_area_struct *vma = e->v[i], *new;

		if (vma->vm_start >= addr)
			return;
		if (vma->vm_end <= addr)
			continue;
		new = vm_area_alloc(e->mm);
		edit_touch(e, vma);
		edit_touch(e, new);
		new->vm_flags = vma->vm_flags;
		new->vm_ops = vma->vm_ops;
		new->anon_vma = READ_ONCE(vma->anon_vma);
		if (new_below) {
			new->vm_start = vma->vm_start;
			new->vm_end = addr;
			vma->vm_start = addr;
			edit_insert(e, i, new);
		} else {
			new->vm_start = addr;
			new->vm_end = vma->vm_end;
			vma->vm_end = addr;
			edit_insert(e, i + 1, new);
		}
		return;
	}
}

/* Merge neighbours with equal flags that meet at addr. */
static void edit_merge_at(struct vma_edit *e, unsigned long addr)
{
	for (int i = 0; i + 1 < e->nr; i++) {
		struct vm_area_struct *prev = e->v[i], *next = e->v[i + 1];

		if (prev->vm_end != addr)
			continue;
		if (next->vm_start != addr || next->vm_flags != prev->vm_flags ||
		    next->vm_ops != prev->vm_ops)
			return;
		edit_touch(e, prev);	/* vma_expand(): prev grows in place */
		prev->vm_end = next->vm_end;
		if (READ_ONCE(next->anon_vma))
			WRITE_ONCE(prev->anon_vma, true);
		edit_remove(e, i + 1);
		return;
	}
}

/*
 * Free the pages: the VMA is write-locked and mmap_lock is held for
 * write, so no fault, walk or remote reader can be looking at them.
 */
static void zap_page_range(struct mm_struct *mm, unsigned long start,
			   unsigned long end)
{
	for (unsigned long a = start; a < end; a += PAGE_SIZE) {
		struct page *page = mm->pte[a >> PAGE_SHIFT];

		WRITE_ONCE(mm->pte[a >> PAGE_SHIFT], NULL);
		free(page);
	}
}

/* Remove [start, end): split at both ends, zap, detach. */
static void edit_unmap(struct vma_edit *e, unsigned long start,
		       unsigned long end)
{
	edit_split(e, start, true);
	edit_split(e, end, false);
	for (int i = 0; i < e->nr;) {
		struct vm_area_struct *vma = e->v[i];

		if (vma->vm_start >= start && vma->vm_end <= end) {
			edit_touch(e, vma);
			zap_page_range(e->mm, vma->vm_start, vma->vm_end);
			edit_remove(e, i);
		} else {
			i++;
		}
	}
}

/* region: writer-commit */
static void edit_commit(struct vma_edit *e)
{
	struct vma_tree *t = vma_tree_alloc(e->nr);

	for (int i = 0; i < e->nr; i++) {
		t->slots[i].start = e->v[i]->vm_start;
		t->slots[i].end = e->v[i]->vm_end;
		t->slots[i].vma = e->v[i];
	}
	vma_tree_replace(e->mm, t);
	mm_hook(e->mm, VMA_HOOK_WRITE_LOCKED, e->nr_touched ? e->touched[0] : NULL);
	for (int i = 0; i < e->nr_touched; i++)
		e->touched[i]->vm_mod = 0;
	/* Detached: no new reader can find them; old ones are in RCU. */
	for (int i = 0; i < e->nr_gone; i++)
		vm_area_free(e->gone[i]);
	mmap_write_unlock(e->mm);	/* vma_end_write_all() */
	free(e->v);
	free(e->touched);
	free(e->gone);
}
/* endregion: writer-commit */

static int check_range(unsigned long addr, unsigned long len)
{
	if (!len || (addr | len) & (PAGE_SIZE - 1) || addr >= TASK_SIZE ||
	    len > TASK_SIZE - addr)
		return -EINVAL;
	return 0;
}

static int mmap_region(struct mm_struct *mm, unsigned long addr,
		       unsigned long len, vm_flags_t flags,
		       const struct vm_operations_struct *ops)
{
	struct vma_edit e;
	struct vm_area_struct *vma;
	int i;

	if (check_range(addr, len))
		return -EINVAL;
	edit_begin(&e, mm);
	edit_unmap(&e, addr, addr + len);
	vma = vm_area_alloc(mm);
	edit_touch(&e, vma);
	vma->vm_start = addr;
	vma->vm_end = addr + len;
	vma->vm_flags = flags;
	vma->vm_ops = ops;
	for (i = 0; i < e.nr && e.v[i]->vm_start < addr; i++)
		;
	edit_insert(&e, i, vma);
	edit_merge_at(&e, addr + len);
	edit_merge_at(&e, addr);
	edit_commit(&e);
	return 0;
}

/* mmap(addr, len, MAP_FIXED|MAP_ANONYMOUS|MAP_PRIVATE) */
int do_mmap(struct mm_struct *mm, unsigned long addr, unsigned long len,
	    vm_flags_t flags)
{
	return mmap_region(mm, addr, len, flags, NULL);
}

/* A driver's mmap() that remaps device memory (remap_pfn_range()). */
int do_mmap_io(struct mm_struct *mm, unsigned long addr, unsigned long len,
	       const struct vm_operations_struct *ops)
{
	return mmap_region(mm, addr, len, VM_IO | VM_PFNMAP | VM_READ, ops);
}

int do_munmap(struct mm_struct *mm, unsigned long addr, unsigned long len)
{
	struct vma_edit e;

	if (check_range(addr, len))
		return -EINVAL;
	edit_begin(&e, mm);
	edit_unmap(&e, addr, addr + len);
	edit_commit(&e);
	return 0;
}

int do_mprotect(struct mm_struct *mm, unsigned long addr, unsigned long len,
		vm_flags_t flags)
{
	unsigned long end = addr + len;
	struct vma_edit e;
	int ret = 0;

	if (check_range(addr, len))
		return -EINVAL;
	edit_begin(&e, mm);
	/* Like mprotect(2): ENOMEM if part of the range is not mapped. */
	for (unsigned long a = addr; a < end;) {
		struct vm_area_struct *vma = find_vma(mm, a);

		if (!vma || vma->vm_start > a) {
			ret = -ENOMEM;
			break;
		}
		a = vma->vm_end;
	}
	if (!ret) {
		edit_split(&e, addr, true);
		edit_split(&e, end, false);
		for (int i = 0; i < e.nr; i++) {
			struct vm_area_struct *vma = e.v[i];

			/* mprotect_fixup(): nothing to do if flags match */
			/* VM_IO and VM_PFNMAP stay: they say what the memory is */
			vm_flags_t nf = flags | (vma->vm_flags & (VM_IO | VM_PFNMAP));

			if (vma->vm_start >= addr && vma->vm_end <= end &&
			    vma->vm_flags != nf) {
				edit_touch(&e, vma);
				vma->vm_flags = nf;
			}
		}
		edit_merge_at(&e, end);
		edit_merge_at(&e, addr);
	}
	edit_commit(&e);
	return ret;
}
