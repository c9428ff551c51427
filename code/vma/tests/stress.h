/* stress.h - faulters, mmap/munmap/mprotect writers and smaps_rollup readers on one mm, with invariant checks. */
#ifndef MMLOCKS_VMA_STRESS_H
#define MMLOCKS_VMA_STRESS_H

#include <stdbool.h>

#include "../vma.h"

struct stress_cfg {
	int faulters, writers, readers;	/* reader i walks in style i % 2 */
	long ops;			/* per writer, at least */
	unsigned seed;
};

struct stress_result {
	bool ok;
	char why[200];
	long faults, writes, rollups[2];	/* [WALK_MMAP], [WALK_VMA] */
	long fallbacks, drops;			/* per-VMA walks, summed */
	long events[NR_VMA_LOCK_EVENTS];
};

/*
 * All threads start together; writers run for at least cfg->ops
 * operations and until every reader has done 10 rollups. Invariants
 * (checked while running): a rollup never reports more than the region
 * nor more resident than size; no fault or walk meets a VMA a writer is
 * changing (vm_mod: VM_BUG, abort). At the end, with the mm quiescent:
 * the tree is sorted, non-overlapping, without detached VMAs, and both
 * walks equal smaps_recount(). Use-after-free is ASan's (or TSan's) job.
 */
void stress_run(const struct stress_cfg *cfg, struct stress_result *res);

#endif
