/* uprobe.h - a uprobe hit finding its probe: files, the uprobe tree, 6.12's lookup under mmap_lock and the speculative one (chapter 6). */
#ifndef MMLOCKS_UPROBE_H
#define MMLOCKS_UPROBE_H

/*
 * A uprobe is a breakpoint in a file, keyed by (inode, offset), so one
 * probe fires in every process that maps that file. When a thread hits
 * the breakpoint (handle_swbp()), the kernel must turn the address into
 * (inode, offset): find the VMA, take vm_file's inode and compute the
 * offset from vm_pgoff and vm_start. 6.12 does that under
 * mmap_read_lock() (find_active_uprobe_rcu()); our kernel patch 0011,
 * like upstream later, first tries it with no lock at all, reading the
 * VMA under RCU between mmap_lock_speculate_try_begin() and
 * mmap_lock_speculate_retry() (find_active_uprobe_speculative()), and
 * falls back to 6.12's path when that fails.
 *
 * What makes reading with no lock safe, as in 6.12.117:
 * - VMAs are freed through call_rcu() (vm_area_free()): a VMA found under
 *   RCU stays readable memory until rcu_read_unlock(), even if unmapped.
 * - struct file is SLAB_TYPESAFE_BY_RCU (fs/file_table.c): a file freed
 *   under the reader can be reused at once for another open file, but the
 *   memory stays a struct file. So vm_file->f_inode may be another file's
 *   inode: the retry check is what makes the answer trustworthy.
 * - uprobes are freed after an RCU (tasks trace) grace period and the
 *   uprobe tree is searched under RCU (find_uprobe_rcu()).
 * The model keeps all three: vm_area_free() is call_rcu(), files come
 * from a pool whose memory is never freed (file_open() reuses the last
 * file put), uprobes are freed with call_rcu().
 */
#include <sys/types.h>		/* loff_t */

#include "vma.h"

/* ---------------------------------------------------- inodes and files */

struct inode {
	unsigned long i_ino;
};

struct file {
	/* Set when the file is opened; the struct is reused after the last fput(). */
	struct inode *f_inode;
	atomic_long f_count;
	struct file *f_next_free;	/* model only: the pool's free list */
};

/* open(): a file on inode, one reference (the caller's). May reuse a put file. */
struct file *file_open(struct inode *inode);
struct file *get_file(struct file *file);
void fput(struct file *file);		/* the last put returns it to the pool */

/* READ_ONCE: a speculative reader may race with the file's reuse. */
static inline struct inode *file_inode(const struct file *f)
{
	return READ_ONCE(f->f_inode);
}

/* ------------------------------------------------------------ uprobes */

struct uprobe {
	struct inode *inode;		/* the key: (inode, offset) */
	loff_t offset;
	int id;				/* model only: what a test expects */
	atomic_long hits;		/* model only: handler_chain() runs */
	struct rcu_head rcu;
};

/* uprobe_register(): one probe per (inode, offset); NULL if it exists. */
struct uprobe *uprobe_register(struct inode *inode, loff_t offset, int id);
void uprobe_unregister(struct uprobe *uprobe);	/* freed after a grace period */
/* Under rcu_read_lock(): the probe at (inode, offset), or NULL. */
struct uprobe *find_uprobe_rcu(struct inode *inode, loff_t offset);

bool valid_vma(struct vm_area_struct *vma);
loff_t vaddr_to_offset(struct vm_area_struct *vma, unsigned long vaddr);

/* ---------------------------------------------------------- the lookup */

/*
 * The switch, read once per lookup (our patch: debugfs uprobe_speculate,
 * default 1): 0 = 6.12's lookup under mmap_read_lock() only.
 */
extern int uprobe_speculate;

/* 6.12's find_active_uprobe_rcu(): under mmap_read_lock(); counts UPROBE_MMAP_LOCKED. */
struct uprobe *find_active_uprobe_rcu(struct mm_struct *mm, unsigned long bp_vaddr);
/*
 * uprobe_speculate.c (lab 06 writes it): with no lock, under RCU; NULL on
 * any failure, each attempt counted once as success or one fail_* reason.
 */
struct uprobe *find_active_uprobe_speculative(struct mm_struct *mm, unsigned long bp_vaddr);
/* The switch, then speculation, then find_active_uprobe_rcu() if it failed. */
struct uprobe *find_active_uprobe(struct mm_struct *mm, unsigned long bp_vaddr);
/*
 * handle_swbp(): a thread of mm hit the breakpoint at bp_vaddr. Finds the
 * uprobe under RCU and runs its handler (hits++). Returns the uprobe's
 * id, 0 when there is none (6.12 then checks for a trap instruction and
 * sends SIGTRAP or restarts the instruction: not modelled).
 */
int handle_swbp(struct mm_struct *mm, unsigned long bp_vaddr);

static inline void count_uprobe_event(struct mm_struct *mm, enum uprobe_event ev)
{
	atomic_fetch_add_explicit(&mm->uprobe_events[ev], 1, memory_order_relaxed);
}
long uprobe_event(struct mm_struct *mm, enum uprobe_event ev);
const char *uprobe_event_name(enum uprobe_event ev);

/*
 * Model only: find_uprobe_rcu() calls this mm's VMA_HOOK_UPROBE_FOUND hook
 * (the kernel's tree is global, like the model's, so it has no mm of its
 * own to call hooks on).
 */
extern struct mm_struct *uprobe_hook_mm;
/* Model only: nonzero while this thread is inside find_active_uprobe_rcu()'s mmap_read_lock(). */
extern __thread int uprobe_mmap_locked_here;

/* ----------------------------------- writers of file mappings (uprobe.c) */

/*
 * mmap(addr, len, prot, MAP_FIXED|MAP_PRIVATE, fd, pgoff << PAGE_SHIFT):
 * a new VMA on file (get_file()) over a hole, or replacing exactly one
 * whole VMA, which is detached, its file put and itself freed via RCU.
 * Model restriction: -EINVAL for any other overlap.
 */
int do_mmap_file(struct mm_struct *mm, unsigned long addr, unsigned long len,
		 vm_flags_t flags, struct file *file, unsigned long pgoff);
/* munmap() of the whole VMA containing addr: detach, fput(), free via RCU. */
int do_munmap_vma(struct mm_struct *mm, unsigned long addr);
/*
 * Move the start of addr's VMA to new_start, in place, keeping every
 * address's file offset (vm_pgoff moves with vm_start), as __split_vma()
 * does to the VMA that keeps the upper part, and vma_expand() to one
 * that grows down. vm_pgoff first, then vm_start: between the two stores
 * (VMA_HOOK_UPROBE_WRITER) the VMA maps addresses to the wrong offsets,
 * which mmap_lock hides from every reader but a speculative one.
 * [new_start, vm_start) must be free when growing.
 */
int vma_move_start(struct mm_struct *mm, unsigned long addr, unsigned long new_start);

#endif
