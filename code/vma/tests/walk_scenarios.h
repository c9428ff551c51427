/* walk_scenarios.h - forced interleavings of the smaps_rollup walkers (both styles) and writers, shared by code/vma's tests and lab 04's grader. */
#ifndef MMLOCKS_VMA_WALK_SCENARIOS_H
#define MMLOCKS_VMA_WALK_SCENARIOS_H

#include "scenarios.h"

enum walk_style { WALK_MMAP, WALK_VMA };
const char *walk_style_name(enum walk_style s);
int walk(struct mm_struct *mm, enum walk_style s, struct mem_size_stats *mss);

struct walk_result {
	struct scn s;
	struct mem_size_stats mss;	/* the walker's rollup */
	struct mem_size_stats recount;	/* of the mm afterwards */
	bool writer_blocked;		/* a writer waited for the walker */
	bool walker_first;		/* walker finished while a writer held mmap_lock */
};
enum walk_change {
	CHANGE_GROW,	/* a mapping after A merges A with B: A grows */
	CHANGE_UNMAP,	/* B is unmapped */
	CHANGE_SPLIT,	/* mprotect splits B in three */
};
/* Change the mm after A is reported, before the walk goes on. */
void scn_walk_resume(enum walk_style style, enum walk_change change,
		     struct walk_result *r);
/*
 * A writer holds B write-locked: the per-VMA walk falls back to mmap_lock
 * for B. With drop, a second writer then waits for mmap_lock while the
 * walker holds it; the walker drops it and must finish C and D under
 * VMA locks while that writer holds mmap_lock for write.
 */
void scn_walk_fallback(bool drop, struct walk_result *r);
/*
 * The per-VMA walk has looked C up (not locked it yet) when mprotect of
 * C's upper half splits it: as in 6.12, a new VMA takes C's lower half
 * and C moves its vm_start up. C still locks fine and is not detached;
 * the walk must not skip the new VMA below it.
 */
void scn_walk_split_below(struct walk_result *r);
/*
 * The per-VMA walk has reported E and A and holds nothing; a writer maps
 * the hole between A and B, so A, the hole and B merge into one VMA that
 * starts at A's vm_start, and stops with it write-locked. The walk's VMA
 * lock fails: it falls back and waits for mmap_lock. Once the writer is
 * gone, the walk finds, under mmap_lock, a VMA that starts below
 * last_vma_end: it must report only the part above it.
 */
void scn_walk_grown_during_fallback(struct walk_result *r);
/* The walker holds A's VMA lock; a writer's vma_start_write(A) waits. */
void scn_walk_writer_waits(struct walk_result *r);

#endif
