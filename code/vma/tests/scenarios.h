/* scenarios.h - forced interleavings shared by code/vma's tests and lab 04's grader; each fills a result the caller asserts on. */
#ifndef MMLOCKS_VMA_SCENARIOS_H
#define MMLOCKS_VMA_SCENARIOS_H

#include "vtest.h"

/*
 * The walker scenarios use five 4-page VMAs, all populated:
 *   E [BASE, +4)  A [+8, +12)  B [+16, +20)  C [+24, +28)  D [+32, +36)
 * all read-write, with 4-page holes between them.
 */
#define SCN_BASE	PG(256)
#define SCN_E		(SCN_BASE)
#define SCN_A		(SCN_BASE + PG(8))
#define SCN_B		(SCN_BASE + PG(16))
#define SCN_C		(SCN_BASE + PG(24))
#define SCN_D		(SCN_BASE + PG(32))
#define SCN_VMA_PAGES	4

enum walk_style { WALK_MMAP, WALK_VMA };
const char *walk_style_name(enum walk_style s);
int walk(struct mm_struct *mm, enum walk_style s, struct mem_size_stats *mss);

/* Every scenario says whether its choreography ran (ok) and, if not, why. */
struct scn {
	bool ok;
	char why[160];
};

/* vma_start_read() */
struct start_read_result {
	struct scn s;
	bool locked;		/* vma_start_read() returned true */
	bool held;		/* ...and the VMA is read-locked afterwards */
	int trylocks;		/* times it got past the first check */
	bool other_locked;	/* an untouched VMA, same mm, same moment */
	bool locked_after_unlock; /* after mmap_write_unlock() */
};
/* A writer write-locks the VMA between the first check and the trylock. */
void scn_start_read_recheck(struct start_read_result *r);
/* The VMA is write-locked before the reader starts. */
void scn_start_read_write_locked(struct start_read_result *r);

/* lock_vma_under_rcu() finds A, then (before the lock) a writer: */
enum lookup_race {
	RACE_UNMAP,	/* unmaps A */
	RACE_REPLACE,	/* maps a new VMA over A's range */
	RACE_SHRINK,	/* splits A: A shrinks, a new VMA takes the address */
};
struct lookup_result {
	struct scn s;
	bool got_vma;		/* returned a VMA */
	bool got_current;	/* ...the one now mapped at the address */
	bool held;		/* the returned VMA is read-locked */
	long miss, abort, success;
};
void scn_lookup_race(enum lookup_race race, struct lookup_result *r);

/* Faults against a writer stopped with mmap_lock held for write. */
struct fault_result {
	struct scn s;
	vm_fault_t fault;
	bool waited;		/* queued on mmap_lock */
	bool done_before_writer; /* finished while the writer held it */
	bool present;
	long success, abort, retry, miss;
};
/* The writer changes the faulting VMA: the VMA lock fails, mmap_lock waits. */
void scn_fault_waits_for_writer(struct fault_result *r);
/* The writer changes another VMA; the first anonymous fault needs mmap_lock. */
void scn_fault_retry(struct fault_result *r);
/*
 * A fault looks A up; a writer unmaps A and stops before
 * mmap_write_unlock(); the fault's vma_start_read() sees vm_lock_seq ==
 * mm_lock_seq (no miss: it never gets to the detached check), aborts,
 * waits for mmap_lock, and finds nothing mapped.
 */
void scn_lookup_vs_munmap_in_progress(struct fault_result *r);

/* Walkers. */
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
/* The walker holds A's VMA lock; a writer's vma_start_write(A) waits. */
void scn_walk_writer_waits(struct walk_result *r);

/* The five-VMA layout above, populated. */
void scn_layout(struct vtest *t);

#endif
