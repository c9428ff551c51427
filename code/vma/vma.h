/* vma.h - a userspace address space with Linux 6.12's per-VMA locks: mm_struct, vm_area_struct, faults, smaps_rollup. */
#ifndef MMLOCKS_VMA_H
#define MMLOCKS_VMA_H

/*
 * Since 6.4 a page fault usually finds its VMA under RCU and read-locks
 * that one VMA instead of the whole mm's mmap_lock. The VMA "lock" is two
 * things: an rw_semaphore per VMA (struct vma_lock) and a sequence number,
 * vm_lock_seq. A writer holding mmap_lock for write marks a VMA
 * write-locked by copying mm->mm_lock_seq into vma->vm_lock_seq (under the
 * VMA's rwsem, taken for write only for that moment); mmap_write_unlock()
 * bumps mm_lock_seq, which unlocks every VMA it marked at once. A reader
 * (vma_start_read()) trylocks the rwsem for read and fails when the two
 * numbers are equal. Readers that fail fall back to mmap_lock.
 *
 * Model extras, not in the kernel: per-mm lock-event counters (6.12 has
 * global vmstat counters), test hooks, a one-byte-per-page "page table",
 * and vm_mod, set while a writer changes a VMA, which readers assert is
 * clear. Differences from 6.12 are listed in README.md.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "rwsem.h"
#include "task.h"
#include "rcu.h"

#define PAGE_SHIFT	12
#define PAGE_SIZE	(1UL << PAGE_SHIFT)
#define MM_NR_PAGES	(1UL << 15)		/* model address space: 128 MiB */
#define TASK_SIZE	(MM_NR_PAGES * PAGE_SIZE)
#define PG(n)		((unsigned long)(n) * PAGE_SIZE)	/* n pages, in bytes */

/* Marked accesses, as the kernel's: relaxed atomics TSan can see. */
#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define smp_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)

#define MAX_ERRNO	4095
#define ERR_PTR(err)	((void *)(long)(err))
#define PTR_ERR(ptr)	((long)(ptr))
#define IS_ERR(ptr)	((unsigned long)(ptr) >= (unsigned long)-MAX_ERRNO)

typedef unsigned long vm_flags_t;
#define VM_NONE		0x0UL
#define VM_READ		0x1UL
#define VM_WRITE	0x2UL
#define VM_EXEC		0x4UL
#define VM_PFNMAP	0x400UL		/* raw PFNs, no struct page */
#define VM_IO		0x4000UL	/* memory-mapped I/O */

/*
 * A page: 6.12's struct page plus the memory it describes. A fault
 * allocates one and fills it with page_pattern() (as if the process had
 * written there), munmap frees it: a reader that copies from a page it
 * should not reach reads the wrong bytes or freed memory (ASan, TSan).
 */
struct page {
	unsigned char data[PAGE_SIZE];
};

static inline unsigned char page_pattern(unsigned long addr)
{
	return (unsigned char)((addr >> PAGE_SHIFT) * 151 + (addr & (PAGE_SIZE - 1)) * 7);
}

struct vm_area_struct;
/* The one operation of 6.12's vm_operations_struct the model needs. */
struct vm_operations_struct {
	/* VM_IO/VM_PFNMAP memory for access_remote_vm() (generic_access_phys()) */
	int (*access)(struct vm_area_struct *vma, unsigned long addr,
		      void *buf, int len, int write);
};

/* region: vma-lock-fields */
struct vma_lock {
	struct rw_semaphore lock;
};

typedef struct {
	unsigned int sequence;	/* odd: mmap_lock write-locked */
} seqcount_t;

struct vm_area_struct {
	unsigned long vm_start;		/* first byte */
	unsigned long vm_end;		/* first byte after */
	struct mm_struct *vm_mm;
	vm_flags_t vm_flags;
	const struct vm_operations_struct *vm_ops;
	/* region: vma-lock-vma-fields */
	/* Removed from the mm's tree; unstable RCU readers may read it. */
	bool detached;
	/*
	 * Written (WRITE_ONCE) only with mmap_lock and vm_lock both held for
	 * write; read reliably under either; read with READ_ONCE and nothing
	 * but RCU for the early bail-out in vma_start_read().
	 */
	unsigned int vm_lock_seq;
	struct vma_lock *vm_lock;
	/* endregion: vma-lock-vma-fields */
	struct rcu_head vm_rcu;		/* vm_area_free() */
	bool anon_vma;			/* 6.12: struct anon_vma * */
	int vm_mod;			/* model only: a writer is changing it */
	/* What a uprobe hit reads to find its probe (uprobe.h): */
	unsigned long vm_pgoff;		/* vm_start's offset in vm_file, in pages */
	struct file *vm_file;		/* NULL: anonymous memory */
};

struct vma_tree;			/* the model's maple tree (vma.c) */

enum vma_lock_event {			/* CONFIG_PER_VMA_LOCK_STATS */
	VMA_LOCK_SUCCESS,
	VMA_LOCK_ABORT,
	VMA_LOCK_RETRY,
	VMA_LOCK_MISS,
	NR_VMA_LOCK_EVENTS
};

enum remote_event {			/* our kernel patch's debugfs counters */
	ACCESS_REMOTE_VM_VMA_LOCKED,	/* calls served under one VMA lock */
	ACCESS_REMOTE_VM_MMAP_LOCKED,	/* calls that took mmap_read_lock() */
	ACCESS_REMOTE_VM_FALLBACK,	/* tried the VMA lock, then mmap_lock: */
	ACCESS_REMOTE_VM_FALLBACK_NOVMA,  /* lock_vma_under_rcu() failed */
	ACCESS_REMOTE_VM_FALLBACK_SPAN,	  /* the range runs past vm_end */
	ACCESS_REMOTE_VM_FALLBACK_PFNMAP, /* VM_IO/VM_PFNMAP: ->access() */
	ACCESS_REMOTE_VM_FALLBACK_PAGE,	  /* GUP would fault, or refuses */
	NR_REMOTE_EVENTS
};

enum uprobe_event {			/* our kernel patch 0011's debugfs counters */
	UPROBE_SPECULATE_ATTEMPT,	/* lookups that tried speculation */
	UPROBE_SPECULATE_SUCCESS,	/* ... and returned its answer */
	UPROBE_SPECULATE_FAIL_BEGIN,	/* mmap_lock write-locked at the start */
	UPROBE_SPECULATE_FAIL_LOOKUP,	/* no VMA, no file or no uprobe found */
	UPROBE_SPECULATE_FAIL_RETRY,	/* mm_lock_seq moved during the lookup */
	UPROBE_MMAP_LOCKED,		/* lookups that took mmap_read_lock() */
	NR_UPROBE_EVENTS
};

enum vma_hook_point {
	VMA_HOOK_LOOKUP,	/* a VMA found under RCU, not yet locked */
	VMA_HOOK_TRYLOCK,	/* vma_start_read(): first check passed */
	VMA_HOOK_WRITE_LOCKED,	/* writer: VMAs changed, mmap_lock still held */
	VMA_HOOK_ROLLUP_GATHERED, /* walker: VMA gathered, its lock still held */
	VMA_HOOK_ROLLUP_UNLOCKED, /* walker: between VMAs, after a drop */
	VMA_HOOK_REMOTE_COPIED,	/* remote reader: a page copied, lock held */
	VMA_HOOK_REMOTE_UNLOCKED, /* remote reader: VMA lock dropped, no lock */
	VMA_HOOK_UPROBE_WRITER,	/* file writer: vm_pgoff changed, vm_start not yet */
	VMA_HOOK_UPROBE_OFFSET,	/* vaddr_to_offset(): vm_pgoff read, vm_start not */
	VMA_HOOK_UPROBE_FOUND,	/* find_uprobe_rcu(): searched, not yet returned */
	VMA_HOOK_VMA_LOOKUP,	/* vma_lookup(): a VMA found, not yet returned */
	VMA_HOOK_END_READ,	/* vma_end_read(): the VMA's read lock just released */
	NR_VMA_HOOKS
};

struct mm_struct;
typedef void (*vma_hook_fn)(struct mm_struct *mm, enum vma_hook_point point,
			    struct vm_area_struct *vma, void *arg);

struct mm_struct {
	struct vma_tree *mm_mt;		/* rcu_publish()/rcu_access() */
	struct rw_semaphore mmap_lock;
	/* region: vma-lock-mm-seq */
	/*
	 * Bumped at mmap_write_lock() and mmap_write_unlock(): odd while
	 * write-locked. Released (RELEASE) at unlock, read with ACQUIRE.
	 */
	seqcount_t mm_lock_seq;
	/* endregion: vma-lock-mm-seq */
	int map_count;
	pthread_mutex_t page_table_lock; /* serialises anon_vma setup */
	struct page **pte;		/* model page table: NULL = not present */

	/* Model only: */
	atomic_long vma_lock_events[NR_VMA_LOCK_EVENTS];
	atomic_long remote_events[NR_REMOTE_EVENTS];	/* access_remote_vm() */
	atomic_long uprobe_events[NR_UPROBE_EVENTS];	/* uprobe hits */
	vma_hook_fn hook;
	void *hook_arg;
	unsigned hook_mask;		/* points that call hook */
};
/* endregion: vma-lock-fields */

/* Assertion that names the misuse, then aborts (mm/debug.c style). */
void vm_bug(const char *what, const char *file, int line);
#define VM_BUG_ON_VMA(cond, vma, what) do {				\
	if (__builtin_expect(!!(cond), 0))				\
		vm_bug((what), __FILE__, __LINE__);			\
	(void)(vma);							\
} while (0)

static inline void mm_hook(struct mm_struct *mm, enum vma_hook_point point,
			   struct vm_area_struct *vma)
{
	if (__builtin_expect(mm->hook && (mm->hook_mask & (1u << point)), 0))
		mm->hook(mm, point, vma, mm->hook_arg);
}

static inline void count_vm_vma_lock_event(struct mm_struct *mm,
					   enum vma_lock_event ev)
{
	atomic_fetch_add_explicit(&mm->vma_lock_events[ev], 1,
				  memory_order_relaxed);
}

static inline void count_remote_event(struct mm_struct *mm, enum remote_event ev)
{
	atomic_fetch_add_explicit(&mm->remote_events[ev], 1, memory_order_relaxed);
}

#include "mmap_lock.h"

/* vma.c: the mm, VMAs, the tree, the write side of the VMA lock. */
void mm_init(struct mm_struct *mm);
void mm_destroy(struct mm_struct *mm);	/* frees every VMA; rcu_barrier() */
void mm_set_hook(struct mm_struct *mm, vma_hook_fn fn, void *arg, unsigned mask);
long vma_lock_event(struct mm_struct *mm, enum vma_lock_event ev);
const char *vma_lock_event_name(enum vma_lock_event ev);
long remote_event(struct mm_struct *mm, enum remote_event ev);
const char *remote_event_name(enum remote_event ev);
struct vm_area_struct *vm_area_alloc(struct mm_struct *mm);
void vm_area_free(struct vm_area_struct *vma);	/* via call_rcu() */
struct vm_area_struct *find_vma(struct mm_struct *mm, unsigned long addr);
struct vm_area_struct *vma_lookup(struct mm_struct *mm, unsigned long addr);
int mm_vmas(struct mm_struct *mm, struct vm_area_struct **out, int max);
void vma_start_write(struct vm_area_struct *vma);
void vma_assert_write_locked(struct vm_area_struct *vma);
void vma_assert_locked(struct vm_area_struct *vma);
void vma_mark_detached(struct vm_area_struct *vma, bool detached);
bool vma_is_read_locked(struct vm_area_struct *vma);

/* vma_read.c: the read side (lab 04 writes parts of it). */
bool vma_start_read(struct vm_area_struct *vma);
void vma_end_read(struct vm_area_struct *vma);
struct vm_area_struct *lock_vma_under_rcu(struct mm_struct *mm,
					  unsigned long address);
struct vm_area_struct *lock_next_vma(struct mm_struct *mm, unsigned long addr);

/* mmap.c: writers (mmap_write_lock, vma_start_write, detach, free). */
int do_mmap(struct mm_struct *mm, unsigned long addr, unsigned long len,
	    vm_flags_t flags);
int do_munmap(struct mm_struct *mm, unsigned long addr, unsigned long len);
int do_mprotect(struct mm_struct *mm, unsigned long addr, unsigned long len,
		vm_flags_t flags);
/* A VM_IO | VM_PFNMAP | VM_READ mapping reached through ops->access (a device's mmap()). */
int do_mmap_io(struct mm_struct *mm, unsigned long addr, unsigned long len,
	       const struct vm_operations_struct *ops);

/* fault.c */
typedef unsigned int vm_fault_t;
#define VM_FAULT_SIGSEGV	0x0002
#define VM_FAULT_RETRY		0x0400
#define FAULT_FLAG_WRITE	0x01
#define FAULT_FLAG_VMA_LOCK	0x1000
vm_fault_t handle_mm_fault(struct vm_area_struct *vma, unsigned long address,
			   unsigned int flags);
vm_fault_t do_user_addr_fault(struct mm_struct *mm, unsigned long address,
			      bool write);
bool page_present(struct mm_struct *mm, unsigned long addr);
struct page *pte_page(struct mm_struct *mm, unsigned long addr); /* NULL: none */

/* rollup.c and rollup_vma.c: /proc/PID/smaps_rollup in two styles. */
struct mem_size_stats {
	unsigned long resident;		/* bytes of present pages ("Rss") */
	/* Model only: */
	unsigned long size;		/* bytes of VMA ranges walked */
	unsigned long vma_start, last_vma_end;	/* the rollup's header */
	unsigned long nr_vma_locked;	/* VMAs gathered under a VMA lock */
	unsigned long nr_mmap_locked;	/* ... under mmap_lock */
	unsigned long nr_fallbacks;	/* VMA lock failed: took mmap_lock */
	unsigned long nr_drops;		/* dropped a contended mmap_lock */
	unsigned long nr_resumed_inside; /* resumed inside a VMA */
};
void smap_gather_stats(struct vm_area_struct *vma, struct mem_size_stats *mss,
		       unsigned long start);
extern long smap_page_cost_ns;		/* model only: see rollup.c */
int smaps_rollup_mmap(struct mm_struct *mm, struct mem_size_stats *mss);
int smaps_rollup_vma(struct mm_struct *mm, struct mem_size_stats *mss);
void smaps_recount(struct mm_struct *mm, struct mem_size_stats *mss);

/*
 * access_remote.c and access_remote_vma.c: reading another process's
 * memory (mm/memory.c __access_remote_vm()). Each returns the bytes
 * copied into buf: len, or fewer when the range runs into a hole or
 * memory that cannot be read; 0 when addr itself cannot be read.
 * Reads only (the kernel also writes, for ptrace and /proc/PID/mem).
 */
extern int access_remote_vm_vma_lock;	/* the switch: 0 = 6.12, 1 = seed 004 */
int access_remote_vm(struct mm_struct *mm, unsigned long addr, void *buf, int len);
int access_remote_vm_mmap(struct mm_struct *mm, unsigned long addr, void *buf, int len);
int access_remote_vm_vma(struct mm_struct *mm, unsigned long addr, void *buf, int len);
/* Helpers both share (access_remote.c). */
int check_vma_flags(struct vm_area_struct *vma);	/* 0: readable through a page */
struct page *follow_page_vma_locked(struct vm_area_struct *vma, unsigned long addr);
int access_vm_page(struct vm_area_struct *vma, struct page *page,
		   unsigned long addr, void *buf, int len);
struct page *get_user_page_vma_remote(struct mm_struct *mm, unsigned long addr,
				      struct vm_area_struct **vmap);
/* fs/proc/base.c mem_rw() for a read: PAGE_SIZE per call; -EIO if nothing. */
long proc_mem_read(struct mm_struct *mm, unsigned long addr, void *buf, long count);

#endif
