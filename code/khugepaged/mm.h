/* mm.h: the slice of an mm that khugepaged's scanner sees, modelled in userspace. */
#ifndef KHUGEPAGED_MODEL_MM_H
#define KHUGEPAGED_MODEL_MM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* x86-64 with 4 KiB pages: a PMD maps 2 MiB = 512 pages. */
#define PAGE_SIZE	4096UL
#define HPAGE_PMD_NR	512UL
#define HPAGE_PMD_SIZE	(HPAGE_PMD_NR * PAGE_SIZE)
#define HPAGE_PMD_MASK	(~(HPAGE_PMD_SIZE - 1))
#define ALIGN(x, a)	(((x) + (a) - 1) & ~((a) - 1))
#define round_up(x, a)	ALIGN(x, a)
#define round_down(x, a) ((x) & ~((a) - 1))

/* A minimal kernel-style doubly linked list for the mm_slot list. */
struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)

static inline void INIT_LIST_HEAD(struct list_head *h) { h->next = h->prev = h; }
static inline bool list_empty(const struct list_head *h) { return h->next == h; }
static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}
static inline void list_del(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = NULL;
}

/* What hpage_collapse_scan_pmd() finds in one PMD-sized range. */
enum pmd_state {
	PMD_COLLAPSIBLE = 'c',	/* enough present PTEs: the scan collapses it */
	PMD_UNCOLLAPSIBLE = 'u',/* e.g. > max_ptes_none after MADV_DONTNEED */
	PMD_HUGE = 'H',		/* already a huge page (SCAN_PMD_MAPPED) */
};

/*
 * Simplification: a VMA is its range, one "eligible" bit standing for
 * thp_vma_allowable_order(vma, ..., PMD_ORDER), and the state of every
 * PMD-aligned 2 MiB range inside it.  Anonymous memory only: the
 * file/shmem path of khugepaged_scan_mm_slot() is not modelled.
 */
struct vm_area_struct {
	unsigned long vm_start, vm_end;
	bool eligible;
	char *pmd;	/* states for [round_up(start), round_down(end)) */
};

struct mm_struct;
typedef void (*mm_writer_fn)(struct mm_struct *mm, void *arg);

struct mm_struct {
	struct vm_area_struct *vmas;	/* sorted, non-overlapping */
	size_t nr_vmas, cap_vmas;
	unsigned long next_addr;	/* where the layout builders append */
	unsigned long vma_seq;		/* bumped by every layout change */
	size_t nr_collapsible;		/* PMD_COLLAPSIBLE ranges left */
	bool exiting;			/* hpage_collapse_test_exit() */

	/* The mmap_lock, reduced to what the scanner can observe. */
	bool read_locked;
	uint64_t hold_start_ns;		/* model clock at acquisition */
	uint64_t hold_vmas;		/* VMAs visited during this hold */
	bool writer_queued;		/* a writer sleeps in the wait queue */
	uint64_t writer_since_ns;	/* ... since this model time */
	uint64_t writer_arrives_at;	/* test hook: queue one at this visit */
	mm_writer_fn writer;		/* what it does once it gets the lock */
	void *writer_arg;
};

/* The maple-tree walk state, as an index into mm->vmas. */
struct vma_iterator {
	struct mm_struct *mm;
	size_t index;
	unsigned long seq;	/* mm->vma_seq when the walk was (re)started */
	uint64_t visits;	/* runaway guard, see vma_next() */
};

/* Layout builders (used by tests, labs and the driver). */
struct mm_struct *mm_alloc(void);
void mm_free(struct mm_struct *mm);
void mm_add_vma(struct mm_struct *mm, unsigned long start, unsigned long end,
		bool eligible, const char *pmd_states);
void mm_add_ineligible(struct mm_struct *mm, unsigned long count);
unsigned long mm_add_eligible(struct mm_struct *mm, const char *pmd_states);
size_t mm_unmap(struct mm_struct *mm, unsigned long start, unsigned long end);
enum pmd_state mm_pmd_state(struct mm_struct *mm, unsigned long address);
void mm_collapse_pmd(struct mm_struct *mm, unsigned long address);

/* The VMA iterator: vma_iter_init()/vma_iter_set() + for_each_vma(). */
void vma_iter_init(struct vma_iterator *vmi, struct mm_struct *mm,
		   unsigned long addr);
void vma_iter_set(struct vma_iterator *vmi, unsigned long addr);
struct vm_area_struct *vma_next(struct vma_iterator *vmi);
#define for_each_vma(vmi, vma) while (((vma) = vma_next(&(vmi))) != NULL)

/* The mmap_lock calls khugepaged makes (see mm.c for what each models). */
bool mmap_read_trylock(struct mm_struct *mm);
void mmap_read_lock(struct mm_struct *mm);
void mmap_read_lock_nosteal(struct mm_struct *mm);
void mmap_read_unlock(struct mm_struct *mm);
void mmap_writer_arrives(struct mm_struct *mm);
static inline void cond_resched(void) { }

#endif
