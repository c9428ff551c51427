/* uprobe.c - files, the uprobe tree, 6.12's uprobe lookup under mmap_lock, handle_swbp(), and the writers of file mappings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "uprobe.h"
#include "tree.h"

int uprobe_speculate = 1;
struct mm_struct *uprobe_hook_mm;
__thread int uprobe_mmap_locked_here;

/* ------------------------------------------------------------- files */

/*
 * 6.12 allocates files from a SLAB_TYPESAFE_BY_RCU cache: the last fput()
 * may free a file while an RCU reader still holds a pointer to it, and the
 * memory may at once become another open file, but it stays a struct
 * file. The model's pool is the same promise in its strongest form: the
 * memory is never freed, and file_open() takes the most recently put
 * file first, so reuse under a reader actually happens in the tests.
 */
#define FILE_POOL_MAX	256
static struct file file_pool[FILE_POOL_MAX];
static int file_pool_used;
static struct file *file_free_list;
static pthread_mutex_t file_pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* region: file-reuse */
struct file *file_open(struct inode *inode)
{
	struct file *f;

	pthread_mutex_lock(&file_pool_lock);
	f = file_free_list;
	if (f)
		file_free_list = f->f_next_free;
	else if (file_pool_used < FILE_POOL_MAX)
		f = &file_pool[file_pool_used++];
	pthread_mutex_unlock(&file_pool_lock);
	if (!f)
		vm_bug("file_open: model file pool exhausted (a missing fput()?)",
		       __FILE__, __LINE__);
	/* A reader that still holds the old file's pointer may see this. */
	WRITE_ONCE(f->f_inode, inode);
	atomic_store(&f->f_count, 1);
	return f;
}

void fput(struct file *file)
{
	long old = atomic_fetch_sub(&file->f_count, 1);

	VM_BUG_ON_VMA(old <= 0, NULL, "fput: file already put");
	if (old > 1)
		return;
	/* No grace period: the memory may be reused right away. */
	pthread_mutex_lock(&file_pool_lock);
	file->f_next_free = file_free_list;
	file_free_list = file;
	pthread_mutex_unlock(&file_pool_lock);
}
/* endregion: file-reuse */

struct file *get_file(struct file *file)
{
	atomic_fetch_add(&file->f_count, 1);
	return file;
}

/* ------------------------------------------------------- the uprobe tree */

/*
 * 6.12: an rb-tree of all uprobes, keyed by (inode, offset), changed under
 * uprobes_treelock and searched under RCU; because an rb-tree rotation can
 * hide a node from a lockless search, find_uprobe_rcu() retries a miss
 * while uprobes_seqcount moved. The model's tree is a sorted array
 * replaced whole by each change and freed after a grace period, so a
 * search never misses and needs no seqcount.
 */
struct uprobe_tree {
	int nr;
	struct rcu_head rcu;
	struct uprobe *u[];
};

static struct uprobe_tree *uprobes_tree;	/* rcu_publish()/rcu_access() */
static pthread_mutex_t uprobes_treelock = PTHREAD_MUTEX_INITIALIZER;

/* uprobe_cmp(): inode first (as pointers, like the kernel), then offset. */
static int uprobe_cmp(const struct inode *i, loff_t off, const struct uprobe *u)
{
	if (i != u->inode)
		return i < u->inode ? -1 : 1;
	return off < u->offset ? -1 : off > u->offset ? 1 : 0;
}

/* First slot whose uprobe is not below (inode, offset). */
static int tree_pos(const struct uprobe_tree *t, const struct inode *i, loff_t off)
{
	int lo = 0, hi = t ? t->nr : 0;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (uprobe_cmp(i, off, t->u[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void uprobe_tree_free_rcu(struct rcu_head *head)
{
	rcu_callback_begin();
	free((char *)head - offsetof(struct uprobe_tree, rcu));
}

static void uprobe_free_rcu(struct rcu_head *head)
{
	rcu_callback_begin();
	free((char *)head - offsetof(struct uprobe, rcu));
}

/* Under uprobes_treelock: publish a copy of the tree without slot `drop` (or -1), with `add` at `at`. */
static void uprobes_tree_update(int drop, int at, struct uprobe *add)
{
	struct uprobe_tree *old = uprobes_tree;
	int n = old ? old->nr : 0, k = 0;
	struct uprobe_tree *t = calloc(1, sizeof(*t) + (n + 1) * sizeof(t->u[0]));

	if (!t)
		abort();
	for (int i = 0; i <= n; i++) {
		if (add && i == at)
			t->u[k++] = add;
		if (i < n && i != drop)
			t->u[k++] = old->u[i];
	}
	t->nr = k;
	rcu_publish(uprobes_tree, t);
	if (old)
		call_rcu(&old->rcu, uprobe_tree_free_rcu);
}

struct uprobe *uprobe_register(struct inode *inode, loff_t offset, int id)
{
	struct uprobe *u = calloc(1, sizeof(*u));
	int at;

	if (!u)
		abort();
	u->inode = inode;
	u->offset = offset;
	u->id = id;
	atomic_init(&u->hits, 0);
	pthread_mutex_lock(&uprobes_treelock);
	at = tree_pos(uprobes_tree, inode, offset);
	if (uprobes_tree && at < uprobes_tree->nr &&
	    !uprobe_cmp(inode, offset, uprobes_tree->u[at])) {
		pthread_mutex_unlock(&uprobes_treelock);
		free(u);
		return NULL;
	}
	uprobes_tree_update(-1, at, u);
	pthread_mutex_unlock(&uprobes_treelock);
	return u;
}

void uprobe_unregister(struct uprobe *uprobe)
{
	pthread_mutex_lock(&uprobes_treelock);
	uprobes_tree_update(tree_pos(uprobes_tree, uprobe->inode, uprobe->offset), -1, NULL);
	pthread_mutex_unlock(&uprobes_treelock);
	/* A hit may still hold it (handle_swbp() under RCU): free after a grace period. */
	call_rcu(&uprobe->rcu, uprobe_free_rcu);
}

/* region: find-uprobe-rcu */
struct uprobe *find_uprobe_rcu(struct inode *inode, loff_t offset)
{
	struct uprobe_tree *t = rcu_access(uprobes_tree);
	int at = tree_pos(t, inode, offset);
	struct uprobe *u = NULL;

	if (t && at < t->nr && !uprobe_cmp(inode, offset, t->u[at]))
		u = t->u[at];
	if (uprobe_hook_mm)	/* model only: see uprobe.h */
		mm_hook(uprobe_hook_mm, VMA_HOOK_UPROBE_FOUND, NULL);
	return u;
}
/* endregion: find-uprobe-rcu */

/* ---------------------------------------------------- 6.12's lookup */

/*
 * valid_vma(vma, false): 6.12 asks for a file mapping that may be
 * executable and is not shared (VM_MAYEXEC without VM_MAYSHARE or
 * VM_HUGETLB); the model has neither flag and asks for VM_EXEC.
 */
bool valid_vma(struct vm_area_struct *vma)
{
	return vma->vm_file && (vma->vm_flags & VM_EXEC);
}

/* region: vaddr-to-offset */
loff_t vaddr_to_offset(struct vm_area_struct *vma, unsigned long vaddr)
{
	loff_t pgoff = READ_ONCE(vma->vm_pgoff);

	/* Model only: a writer may run here (two loads, two moments). */
	mm_hook(vma->vm_mm, VMA_HOOK_UPROBE_OFFSET, vma);
	return (pgoff << PAGE_SHIFT) + (vaddr - READ_ONCE(vma->vm_start));
}
/* endregion: vaddr-to-offset */

/* region: find-active-uprobe-rcu */
struct uprobe *find_active_uprobe_rcu(struct mm_struct *mm, unsigned long bp_vaddr)
{
	struct uprobe *uprobe = NULL;
	struct vm_area_struct *vma;

	mmap_read_lock(mm);
	uprobe_mmap_locked_here = 1;	/* model only: for test hooks */
	vma = vma_lookup(mm, bp_vaddr);
	/* No writer can change the VMA or put its file while we hold the lock. */
	if (vma && valid_vma(vma))
		uprobe = find_uprobe_rcu(file_inode(vma->vm_file),
					 vaddr_to_offset(vma, bp_vaddr));
	uprobe_mmap_locked_here = 0;
	mmap_read_unlock(mm);
	return uprobe;
}
/* endregion: find-active-uprobe-rcu */

/* region: handle-swbp */
int handle_swbp(struct mm_struct *mm, unsigned long bp_vaddr)
{
	struct uprobe *uprobe;
	int id = 0;

	/* 6.12: rcu_read_lock_trace(), which the uprobe's free waits for. */
	rcu_read_lock();
	uprobe = find_active_uprobe(mm, bp_vaddr);
	if (uprobe) {	/* handler_chain(): the consumers run */
		atomic_fetch_add(&uprobe->hits, 1);
		id = uprobe->id;
	}
	rcu_read_unlock();
	return id;
}
/* endregion: handle-swbp */

long uprobe_event(struct mm_struct *mm, enum uprobe_event ev)
{
	return atomic_load(&mm->uprobe_events[ev]);
}

const char *uprobe_event_name(enum uprobe_event ev)
{
	static const char *const names[] = {
		"uprobe_speculate_attempt", "uprobe_speculate_success",
		"uprobe_speculate_fail_begin", "uprobe_speculate_fail_lookup",
		"uprobe_speculate_fail_retry", "uprobe_mmap_locked",
	};
	return ev < NR_UPROBE_EVENTS ? names[ev] : "?";
}

/* ------------------------------------------- writers of file mappings */

/*
 * Under mmap_write_lock(): publish a copy of the VMA tree with slot
 * `drop` removed (or -1) and `add` inserted in address order (or NULL),
 * and every slot's range refreshed from its VMA.
 */
static void tree_rebuild(struct mm_struct *mm, int drop, struct vm_area_struct *add)
{
	struct vma_tree *old = mm->mm_mt;
	struct vma_tree *t = vma_tree_alloc(old->nr + 1);
	int k = 0;

	for (int i = 0; i <= old->nr; i++) {
		struct vm_area_struct *v = i < old->nr ? old->slots[i].vma : NULL;

		if (add && (!v || add->vm_start < v->vm_start)) {
			t->slots[k++].vma = add;
			add = NULL;
		}
		if (v && i != drop)
			t->slots[k++].vma = v;
	}
	t->nr = k;
	for (int i = 0; i < k; i++) {
		t->slots[i].start = t->slots[i].vma->vm_start;
		t->slots[i].end = t->slots[i].vma->vm_end;
	}
	vma_tree_replace(mm, t);
}

/* Index of the slot of the first VMA ending above addr, or nr. */
static int slot_at(struct mm_struct *mm, unsigned long addr)
{
	struct vma_tree *t = mm->mm_mt;
	int i = 0;

	while (i < t->nr && t->slots[i].end <= addr)
		i++;
	return i;
}

/* region: remove-vma */
/* Detached and write-locked: put its file and free it (remove_vma()). */
static void remove_vma(struct vm_area_struct *vma)
{
	/* vm_file keeps its value: an RCU reader may still follow it. */
	if (vma->vm_file)
		fput(vma->vm_file);
	vm_area_free(vma);	/* call_rcu() */
}
/* endregion: remove-vma */

static bool bad_range(unsigned long addr, unsigned long len)
{
	return !len || (addr | len) & (PAGE_SIZE - 1) || addr >= TASK_SIZE ||
	       len > TASK_SIZE - addr;
}

int do_mmap_file(struct mm_struct *mm, unsigned long addr, unsigned long len,
		 vm_flags_t flags, struct file *file, unsigned long pgoff)
{
	struct vm_area_struct *vma, *old = NULL;
	struct vma_tree *t;
	int i;

	if (bad_range(addr, len) || !file)
		return -EINVAL;
	mmap_write_lock(mm);
	t = mm->mm_mt;
	i = slot_at(mm, addr);
	if (i < t->nr && t->slots[i].start < addr + len) {
		old = t->slots[i].vma;
		if (old->vm_start != addr || old->vm_end != addr + len) {
			mmap_write_unlock(mm);
			return -EINVAL;		/* model: see uprobe.h */
		}
	}
	vma = vm_area_alloc(mm);
	vma->vm_start = addr;
	vma->vm_end = addr + len;
	vma->vm_flags = flags;
	vma->vm_pgoff = pgoff;
	vma->vm_file = get_file(file);
	vma_start_write(vma);		/* mmap_region(), before it is visible */
	if (old) {
		vma_start_write(old);
		vma_mark_detached(old, true);
	}
	tree_rebuild(mm, old ? i : -1, vma);
	mm_hook(mm, VMA_HOOK_WRITE_LOCKED, vma);
	if (old)
		remove_vma(old);
	mmap_write_unlock(mm);
	return 0;
}

int do_munmap_vma(struct mm_struct *mm, unsigned long addr)
{
	struct vm_area_struct *vma;
	int i;

	mmap_write_lock(mm);
	i = slot_at(mm, addr);
	vma = i < mm->mm_mt->nr ? mm->mm_mt->slots[i].vma : NULL;
	if (!vma || vma->vm_start > addr) {
		mmap_write_unlock(mm);
		return -EINVAL;
	}
	vma_start_write(vma);
	vma_mark_detached(vma, true);
	tree_rebuild(mm, i, NULL);
	mm_hook(mm, VMA_HOOK_WRITE_LOCKED, vma);
	remove_vma(vma);
	mmap_write_unlock(mm);
	return 0;
}

/* region: vma-move-start */
int vma_move_start(struct mm_struct *mm, unsigned long addr, unsigned long new_start)
{
	struct vm_area_struct *vma;
	long delta;
	int i;

	mmap_write_lock(mm);
	i = slot_at(mm, addr);
	vma = i < mm->mm_mt->nr ? mm->mm_mt->slots[i].vma : NULL;
	delta = vma ? ((long)new_start - (long)vma->vm_start) / (long)PAGE_SIZE : 0;
	if (!vma || vma->vm_start > addr || new_start & (PAGE_SIZE - 1) ||
	    new_start >= vma->vm_end || (long)vma->vm_pgoff + delta < 0 ||
	    (i > 0 && mm->mm_mt->slots[i - 1].end > new_start)) {
		mmap_write_unlock(mm);
		return -EINVAL;
	}
	vma_start_write(vma);
	/* Two stores: only mmap_lock (and mm_lock_seq) make them one change. */
	WRITE_ONCE(vma->vm_pgoff, vma->vm_pgoff + delta);
	mm_hook(mm, VMA_HOOK_UPROBE_WRITER, vma);
	WRITE_ONCE(vma->vm_start, new_start);
	tree_rebuild(mm, -1, NULL);
	mm_hook(mm, VMA_HOOK_WRITE_LOCKED, vma);
	mmap_write_unlock(mm);
	return 0;
}
/* endregion: vma-move-start */
