/* stress.h - faulters, mmap/munmap/mprotect writers and smaps_rollup readers on one mm, with invariant checks. */
#ifndef MMLOCKS_VMA_STRESS_H
#define MMLOCKS_VMA_STRESS_H

#include <stdbool.h>

#include "../vma.h"

struct stress_cfg {
	int faulters, writers, readers;	/* reader i walks in style i % 2 */
	int remote;			/* access_remote_vm() readers, style i % 2 */
	long ops;			/* per writer, at least */
	unsigned seed;
};

struct stress_result {
	bool ok;
	char why[200];
	long faults, writes, rollups[2];	/* [WALK_MMAP], [WALK_VMA] */
	long fallbacks, drops;			/* per-VMA walks, summed */
	long remote_reads[2];			/* [REMOTE_MMAP], [REMOTE_VMA] */
	long remote_events[NR_REMOTE_EVENTS];
	long events[NR_VMA_LOCK_EVENTS];
};

/*
 * A warm-up before the threads start faults the region's first page (the
 * VMA lock) and, with remote readers, reads one present and one missing
 * page per-VMA (the VMA lock and the fallback): every counter a test
 * looks for moves once, whatever the host's load. All threads start together; writers run for at least cfg->ops
 * operations and until every reader has done 10 rollups or remote reads.
 * Invariants (checked while running): a rollup never reports more than
 * the region nor more resident than size; a remote read returns at most
 * what was asked, and every byte it returns is the page_pattern() of its
 * address; no fault, walk or remote read meets a VMA a writer is changing
 * (vm_mod: VM_BUG, abort). At the end, with the mm quiescent: the tree is
 * sorted, non-overlapping, without detached VMAs, both walks equal
 * smaps_recount(), and both remote readers return exactly the mapped
 * extent. Use-after-free is ASan's (or TSan's) job.
 */
void stress_run(const struct stress_cfg *cfg, struct stress_result *res);

#endif
