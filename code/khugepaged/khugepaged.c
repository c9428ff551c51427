/* khugepaged.c: 6.12's khugepaged_do_scan() and khugepaged_scan_mm_slot(), modelled line for line. */
#include <stdlib.h>

#include "khugepaged.h"

#define unlikely(x) (x)

struct khugepaged_scan khugepaged_scan = {
	.mm_head = LIST_HEAD_INIT(khugepaged_scan.mm_head),
};

unsigned int khugepaged_full_scans;
unsigned int khugepaged_pages_collapsed;

struct khugepaged_mm_slot *khugepaged_enter(struct mm_struct *mm)
{
	struct khugepaged_mm_slot *mm_slot = calloc(1, sizeof(*mm_slot));

	if (!mm_slot)
		abort();
	mm_slot->slot.mm = mm;
	list_add_tail(&mm_slot->slot.mm_node, &khugepaged_scan.mm_head);
	return mm_slot;
}

size_t khugepaged_collapsible_left(void)
{
	size_t left = 0;

	for (struct list_head *p = khugepaged_scan.mm_head.next;
	     p != &khugepaged_scan.mm_head; p = p->next)
		left += list_entry(p, struct mm_slot, mm_node)->mm->nr_collapsible;
	return left;
}

static bool hpage_collapse_test_exit(struct mm_struct *mm)
{
	/* Simplification: "exit" only; PR_SET_THP_DISABLE is not modelled. */
	return mm->exiting;
}

/* Drop the slot of an mm that is going away (the mm itself is the caller's). */
static void collect_mm_slot(struct khugepaged_mm_slot *mm_slot)
{
	struct mm_slot *slot = &mm_slot->slot;

	if (hpage_collapse_test_exit(slot->mm)) {
		list_del(&slot->mm_node);
		free(mm_slot);
	}
}

/*
 * Scan one PMD range.  Simplification: the PTE walk is replaced by the
 * range's precomputed state, with a cost on the model clock.
 */
int hpage_collapse_scan_pmd(struct mm_struct *mm, struct vm_area_struct *vma,
			    unsigned long address, bool *mmap_locked)
{
	(void)vma;
	model_stats.pmds_scanned++;
	switch (mm_pmd_state(mm, address)) {
	case PMD_HUGE:
		/* find_pmd_or_thp_or_none() sees the huge PMD: no PTE walk. */
		return SCAN_PMD_MAPPED;
	case PMD_UNCOLLAPSIBLE:
		model_clock_advance(model_costs.pmd_scan_ns);
		return SCAN_EXCEED_NONE_PTE;
	case PMD_COLLAPSIBLE:
		break;
	}
	model_clock_advance(model_costs.pmd_scan_ns);
	/*
	 * collapse_huge_page() drops the read lock before allocating the
	 * huge page (it takes mmap_write_lock briefly later, which the
	 * model folds into collapse_ns).
	 */
	mmap_read_unlock(mm);
	*mmap_locked = false;
	model_clock_advance(model_costs.collapse_ns);
	mm_collapse_pmd(mm, address);
	model_stats.collapses++;
	model_stats.last_collapse_ns = model_clock_ns;
	return SCAN_SUCCEED;
}

/* region: scan-mm-slot */
unsigned int khugepaged_scan_mm_slot(unsigned int pages, int *result)
{
	struct vma_iterator vmi;
	struct khugepaged_mm_slot *mm_slot;
	struct mm_slot *slot;
	struct mm_struct *mm;
	struct vm_area_struct *vma;
	unsigned long address;	/* the cursor, see cursor.c */
	unsigned int skipped = 0;	/* patch 5 */
	unsigned int progress = 0;

	*result = SCAN_FAIL;
	model_stats.scan_calls++;

	if (khugepaged_scan.mm_slot) {
		mm_slot = khugepaged_scan.mm_slot;
		slot = &mm_slot->slot;
	} else {
		slot = list_entry(khugepaged_scan.mm_head.next,
				  struct mm_slot, mm_node);
		mm_slot = container_of(slot, struct khugepaged_mm_slot, slot);
		khugepaged_scan.address = 0;	/* unused by CURSOR_PER_SLOT */
		khugepaged_scan.mm_slot = mm_slot;
	}
	/* (spin_unlock(&khugepaged_mm_lock): the model has one thread) */

	mm = slot->mm;
	address = khugepaged_cursor_restore(mm_slot);
	/* region: trylock-fail */
	/*
	 * Never sleep on this mm's lock: if a writer has it, or is waiting,
	 * leave the mm for now and let the scan move on.
	 */
	vma = NULL;
	if (unlikely(!mmap_read_trylock(mm)))
		goto breakouterloop_mmap_lock;
	/* endregion: trylock-fail */

	progress++;
	if (unlikely(hpage_collapse_test_exit(mm)))
		goto breakouterloop;

	vma_iter_init(&vmi, mm, address);
	for_each_vma(vmi, vma) {
		unsigned long hstart, hend;

		cond_resched();
		if (unlikely(hpage_collapse_test_exit(mm))) {
			progress++;
			break;
		}
		/* region: vma-loop-skip */
		if (!vma->eligible) {	/* !thp_vma_allowable_order() */
			/* Patch 2: nothing here can collapse; resume past it. */
			if (khugepaged_cursor_policy == CURSOR_PER_SLOT)
				address = ALIGN(vma->vm_end, HPAGE_PMD_SIZE);
			progress++;	/* one "page" per VMA, budget not checked */
			if (khugepaged_skip_batch_due(&skipped)) {	/* patch 5 */
				model_stats.skip_batches++;
				/*
				 * Model-only combination: stock 6.12 keeps no
				 * address past a skipped VMA, so resume after it.
				 */
				khugepaged_skip_batch_retake(mm, &vmi,
					khugepaged_cursor_policy == CURSOR_PER_SLOT ?
					address : vma->vm_end);
			}
			continue;
		}
		hstart = round_up(vma->vm_start, HPAGE_PMD_SIZE);
		hend = round_down(vma->vm_end, HPAGE_PMD_SIZE);
		if (address > hend) {
			progress++;
			continue;
		}
		/* endregion: vma-loop-skip */
		if (address < hstart)
			address = hstart;

		/* region: budget */
		while (address < hend) {
			bool mmap_locked = true;

			cond_resched();
			if (unlikely(hpage_collapse_test_exit(mm)))
				goto breakouterloop;

			*result = hpage_collapse_scan_pmd(mm, vma, address,
							  &mmap_locked);
			if (*result == SCAN_SUCCEED)
				++khugepaged_pages_collapsed;

			/* this range is done, collapsed or not */
			address += HPAGE_PMD_SIZE;
			progress += HPAGE_PMD_NR;
			if (!mmap_locked)
				/* Collapse dropped mmap_lock: end this call. */
				goto breakouterloop_mmap_lock;
			if (progress >= pages)	/* the only budget check */
				goto breakouterloop;
		}
		/* endregion: budget */
	}
	/* Patch 2: the walk reached the end of the mm: start over next time. */
	if (!vma && khugepaged_cursor_policy == CURSOR_PER_SLOT)
		address = 0;
breakouterloop:
	mmap_read_unlock(mm);
breakouterloop_mmap_lock:
	khugepaged_cursor_save(mm_slot, address);

	/* region: rotate */
	/*
	 * Release the current mm_slot if this mm is about to die, or if we
	 * scanned all vmas of this mm -- or, because vma is still NULL, if
	 * mmap_read_trylock() failed: contention also moves the cursor on.
	 */
	if (hpage_collapse_test_exit(mm) || !vma) {
		if (slot->mm_node.next != &khugepaged_scan.mm_head) {
			slot = list_entry(slot->mm_node.next,
					  struct mm_slot, mm_node);
			khugepaged_scan.mm_slot =
				container_of(slot, struct khugepaged_mm_slot, slot);
			khugepaged_scan.address = 0;
		} else {
			khugepaged_scan.mm_slot = NULL;
			khugepaged_full_scans++;
		}

		collect_mm_slot(mm_slot);
	}
	/* endregion: rotate */

	return progress;
}
/* endregion: scan-mm-slot */

static bool khugepaged_has_work(void)
{
	return !list_empty(&khugepaged_scan.mm_head);
}

/* region: khugepaged-do-scan */
void khugepaged_do_scan(void)
{
	unsigned int progress = 0, pass_through_head = 0;
	unsigned int pages = khugepaged_pages_to_scan;
	int result = SCAN_SUCCEED;

	model_stats.passes++;
	while (true) {
		/* Never start more than twice from the head of the mm list. */
		if (!khugepaged_scan.mm_slot)
			pass_through_head++;
		if (khugepaged_has_work() && pass_through_head < 2)
			progress += khugepaged_scan_mm_slot(pages - progress,
							    &result);
		else
			progress = pages;

		if (progress >= pages)
			break;
		/*
		 * Simplification: huge page allocation never fails, so the
		 * SCAN_ALLOC_HUGE_PAGE_FAIL / khugepaged_alloc_sleep() exit
		 * is not modelled.
		 */
	}
}
/* endregion: khugepaged-do-scan */
