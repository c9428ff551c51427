/* skip.c: patch 5's skip batch -- drop and retake the read lock after many ineligible VMAs. */
#include "khugepaged.h"

/* region: skip-batch-count */
/*
 * Called for every ineligible VMA.  True when khugepaged_max_skip_batch
 * of them (KHUGEPAGED_MAX_SKIP_BATCH in the patch; 0 = off, as in 6.12)
 * have been walked since the lock was last taken.
 */
bool khugepaged_skip_batch_due(unsigned int *skipped)
{
	if (khugepaged_max_skip_batch &&
	    ++*skipped >= khugepaged_max_skip_batch) {
		*skipped = 0;
		return true;
	}
	return false;
}
/* endregion: skip-batch-count */

/* region: skip-batch-retake */
/* Step out of the lock so that queued writers can get in, then go on. */
void khugepaged_skip_batch_retake(struct mm_struct *mm,
				  struct vma_iterator *vmi,
				  unsigned long address)
{
	mmap_read_unlock(mm);
	cond_resched();
	/* A plain mmap_read_lock() could steal the lock from a queued writer. */
	mmap_read_lock_nosteal(mm);
	/* Writers may have changed the VMA tree: restart the walk at address. */
	vma_iter_set(vmi, address);
}
/* endregion: skip-batch-retake */
