/* sweep.h - seeded forced schedules: a fault or a per-VMA walk with a writer's change run inside it at a hook point, round after round, each checked against the mm before and after the change. */
#ifndef MMLOCKS_VMA_SWEEP_H
#define MMLOCKS_VMA_SWEEP_H

#include "scenarios.h"

/*
 * A stress run decides by the host's timing which interleavings it
 * tries; a sweep decides by its seed. Each round builds the walker
 * scenarios' five VMAs (scenarios.h), changes them a little (random
 * mmap, munmap, mprotect, faults), then runs one fault or one per-VMA
 * walk in the test's own thread. At the k-th time that thread passes a
 * hook point where it holds no lock (VMA_HOOK_LOOKUP, _TRYLOCK, or
 * _ROLLUP_UNLOCKED between two VMAs), a writer's change runs right there,
 * in the same thread, to completion. So every round is one schedule,
 * the same on every run and every host.
 *
 * What a round must give, from the mm before and after the change (and
 * for remote reads, below):
 * - a fault at X sees the mm after the change (its VMA lock came after
 *   it): it succeeds, and X's page is present, exactly when X is mapped
 *   then with the access it asks for; and no page is present anywhere
 *   outside a VMA (a fault through a detached VMA would leave one);
 * - a walk that had reported everything below L (its last_vma_end) when
 *   the change ran reports the mm before the change below L and the mm
 *   after it from L on: size, resident, vma_start and last_vma_end.
 * A VM_BUG aborts the test; the round it happened in is printed first
 * ("sweep: ..." on stderr).
 */
struct sweep_result {
	struct scn s;		/* ok; why names the first round that broke */
	int rounds;		/* rounds run */
	int changed;		/* rounds whose change ran inside the fault or walk */
	int fallbacks;		/* walks that fell back to mmap_lock (a VMA lock failed) */
	int resumed;		/* walks that resumed inside a VMA */
};

void scn_sweep_faults(unsigned seed, int rounds, struct sweep_result *r);
void scn_sweep_walks(unsigned seed, int rounds, struct sweep_result *r);
/*
 * A per-VMA remote read (access_remote_vm_vma()) with the change run in
 * its lookup, its trylock or where it dropped the VMA lock at a page it
 * could not copy (VMA_HOOK_REMOTE_UNLOCKED); also VM_IO memory and
 * VMAs without access among the changes. It must return what its VMA
 * lock served (the mm before the change, up to that page) and then what
 * 6.12's read of the mm after the change returns from there; every byte
 * the page's or the VM_IO memory's; with no VMA left read-locked and
 * ->access() called only under mmap_lock.
 */
void scn_sweep_remote(unsigned seed, int rounds, struct sweep_result *r);

#endif
