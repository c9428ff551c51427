/* tree.h - the model's VMA tree, shared by vma.c and mmap.c (not part of the API). */
#ifndef MMLOCKS_VMA_TREE_H
#define MMLOCKS_VMA_TREE_H

#include "vma.h"

struct vma_slot {
	unsigned long start, end;	/* the VMA's range when published */
	struct vm_area_struct *vma;
};

struct vma_tree {
	int nr;
	struct rcu_head rcu;
	struct vma_slot slots[];
};

struct vma_tree *vma_tree_alloc(int nr);
/* Publish t as mm's tree (mmap_lock held for write); free the old after a grace period. */
void vma_tree_replace(struct mm_struct *mm, struct vma_tree *t);

#endif
