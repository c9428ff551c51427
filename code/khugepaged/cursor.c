/* cursor.c: where khugepaged resumes an mm's VMA walk -- 6.12's global cursor or patch 2's per-slot one. */
#include "khugepaged.h"

/* region: cursor-save */
/*
 * khugepaged_scan_mm_slot() is leaving mm_slot, whatever the reason:
 * trylock failure, budget spent, lock dropped for a collapse, or every VMA
 * examined (then address is 0).  Remember where the walk stopped.
 */
void khugepaged_cursor_save(struct khugepaged_mm_slot *mm_slot,
			    unsigned long address)
{
	if (khugepaged_cursor_policy == CURSOR_GLOBAL_RESET) {
		/*
		 * One cursor for all mms: it survives only while the scan
		 * stays on this mm; moving to another mm resets it to 0.
		 */
		khugepaged_scan.address = address;
		return;
	}
	/* Patch 2: the position belongs to the mm, in its slot. */
	mm_slot->address = address;
}
/* endregion: cursor-save */

/* region: cursor-restore */
/* khugepaged_scan_mm_slot() is about to walk mm_slot: where from? */
unsigned long khugepaged_cursor_restore(struct khugepaged_mm_slot *mm_slot)
{
	unsigned long address = 0;

	if (khugepaged_cursor_policy == CURSOR_GLOBAL_RESET)
		return khugepaged_scan.address;
	/* Patch 2: carry on where this mm's last walk stopped. */
	address = mm_slot->address;
	return address;
}
/* endregion: cursor-restore */
