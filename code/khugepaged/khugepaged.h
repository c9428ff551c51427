/* khugepaged.h: a deterministic model of 6.12's khugepaged scanner and two proposed fixes. */
#ifndef KHUGEPAGED_MODEL_H
#define KHUGEPAGED_MODEL_H

#include "mm.h"

/*
 * khugepaged keeps a list of mm_slots, one per mm that has (had) a VMA
 * eligible for huge pages.  Each pass (khugepaged_do_scan()) walks the
 * list from a global cursor, spending a budget of pages_to_scan "pages"
 * of progress; between passes it sleeps scan_sleep_millisecs.  In each mm
 * it walks the VMAs under mmap_read_trylock() and hands every PMD-sized
 * range of an eligible VMA to hpage_collapse_scan_pmd().
 *
 * The model adds two policies from Lorenzo Stoakes' series "mm/khugepaged:
 * bound mmap_lock hold time when walking an mm's VMAs":
 *  - CURSOR_PER_SLOT (patch 2): the scan address lives in the mm's slot,
 *    so an mm abandoned on lock contention is resumed, not restarted;
 *  - a skip batch (patch 5): after KHUGEPAGED_MAX_SKIP_BATCH ineligible
 *    VMAs walked since the read lock was last taken (eligible VMAs in
 *    between do not reset the count) the lock is dropped and retaken
 *    without stealing.
 */

/* Simplification: the kernel's mm_slot also has a hash node (mm -> slot). */
struct mm_slot {
	struct list_head mm_node;
	struct mm_struct *mm;
};

/* region: struct-khugepaged-mm-slot */
/**
 * struct khugepaged_mm_slot - one mm on khugepaged's list
 * @slot: list linkage and the mm
 * @address: where to resume this mm's walk (CURSOR_PER_SLOT only;
 *	     6.12 has no such field, patch 2 adds it)
 */
struct khugepaged_mm_slot {
	struct mm_slot slot;
	unsigned long address;
};

/**
 * struct khugepaged_scan - khugepaged's single position in its work
 * @mm_head: list of every registered mm's slot
 * @mm_slot: the slot being scanned now (NULL: start from the head)
 * @address: where the scan of that mm continues (6.12: one for all mms,
 *	     reset to 0 whenever the scan moves to another mm)
 */
struct khugepaged_scan {
	struct list_head mm_head;
	struct khugepaged_mm_slot *mm_slot;
	unsigned long address;
};
/* endregion: struct-khugepaged-mm-slot */

extern struct khugepaged_scan khugepaged_scan;

enum khugepaged_cursor_policy {
	CURSOR_GLOBAL_RESET,	/* stock 6.12: khugepaged_scan.address */
	CURSOR_PER_SLOT,	/* patch 2: khugepaged_mm_slot.address */
};

/* Patch 5's constant; the model's batch is a variable so it can be 0 (off). */
#define KHUGEPAGED_MAX_SKIP_BATCH 1024

/* Tunables, with the kernel's defaults set by khugepaged_model_reset(). */
extern unsigned int khugepaged_pages_to_scan;		/* 8 * HPAGE_PMD_NR */
extern unsigned int khugepaged_scan_sleep_millisecs;	/* 10000 */
extern enum khugepaged_cursor_policy khugepaged_cursor_policy;
extern unsigned int khugepaged_max_skip_batch;		/* 0 = off (6.12) */

/* The kernel's counters (/sys/kernel/mm/transparent_hugepage/khugepaged/). */
extern unsigned int khugepaged_full_scans;
extern unsigned int khugepaged_pages_collapsed;

/* A subset of enum scan_result. */
enum scan_result {
	SCAN_FAIL,
	SCAN_SUCCEED,
	SCAN_PMD_MAPPED,
	SCAN_EXCEED_NONE_PTE,
};

/* Simulated cost of each step, in nanoseconds of the model clock. */
struct model_costs {
	uint64_t vma_visit_ns;	/* one VMA returned by for_each_vma() */
	uint64_t pmd_scan_ns;	/* hpage_collapse_scan_pmd() over 512 PTEs */
	uint64_t collapse_ns;	/* collapse_huge_page(), read lock dropped */
	uint64_t writer_ns;	/* a queued writer's critical section */
};

/* What the model observed; reset by khugepaged_model_reset(). */
struct model_stats {
	uint64_t passes;		/* khugepaged_do_scan() calls */
	uint64_t scan_calls;		/* khugepaged_scan_mm_slot() calls */
	uint64_t trylocks, trylock_fails;
	uint64_t read_locks;		/* mmap_read_lock(): may steal */
	uint64_t nosteal_locks;		/* mmap_read_lock_nosteal() */
	uint64_t steals;		/* a reader overtook a queued writer */
	uint64_t writer_runs;		/* a queued writer got the lock */
	uint64_t vma_visits, pmds_scanned, collapses, skip_batches;
	uint64_t longest_hold_ns, longest_hold_vmas;
	uint64_t longest_writer_wait_ns;
	uint64_t last_collapse_ns;	/* model clock after the last collapse */
	uint64_t stale_iter;		/* walk continued on a changed tree */
	uint64_t runaway_walks;		/* a walk never ended: a bug */
};

extern struct model_costs model_costs;
extern struct model_stats model_stats;
extern uint64_t model_clock_ns;

/* Contention: the chance that one mmap_read_trylock() fails. */
extern double model_contention;
void model_seed(uint64_t seed);
/*
 * A scripted sequence of trylock outcomes, 'S' succeed / 'F' fail, used
 * before falling back to model_contention.  Lets a test force a failure
 * on exactly the Nth attempt.
 */
void model_trylock_script(const char *script);
bool model_trylock_outcome(void);
double model_random(void);
void model_clock_advance(uint64_t ns);

/* Reset all model state and tunables to defaults; frees registered slots. */
void khugepaged_model_reset(void);
/* __khugepaged_enter(): put mm on the scan list (the caller keeps mm). */
struct khugepaged_mm_slot *khugepaged_enter(struct mm_struct *mm);
size_t khugepaged_collapsible_left(void);

void khugepaged_do_scan(void);
unsigned int khugepaged_scan_mm_slot(unsigned int pages, int *result);
int hpage_collapse_scan_pmd(struct mm_struct *mm, struct vm_area_struct *vma,
			    unsigned long address, bool *mmap_locked);

/* The kthread loop: scan, sleep, until every collapsible range is huge. */
struct model_result {
	bool collapsed;		/* all PMD_COLLAPSIBLE ranges are huge */
	uint64_t passes;	/* khugepaged_do_scan() calls until then */
	uint64_t collapse_ns;	/* model clock when the last one collapsed */
};
typedef void (*model_pass_fn)(uint64_t pass, void *arg);
struct model_result khugepaged_run(uint64_t max_passes, model_pass_fn after,
				   void *arg);

/* cursor.c: where a walk of mm_slot starts, and where it is remembered. */
unsigned long khugepaged_cursor_restore(struct khugepaged_mm_slot *mm_slot);
void khugepaged_cursor_save(struct khugepaged_mm_slot *mm_slot,
			    unsigned long address);

/* skip.c: patch 5's batch of skipped VMAs. */
bool khugepaged_skip_batch_due(unsigned int *skipped);
void khugepaged_skip_batch_retake(struct mm_struct *mm,
				  struct vma_iterator *vmi,
				  unsigned long address);

#endif
