/* scenarios.h - forced interleavings shared by code/vma's tests and lab 04's grader; each fills a result the caller asserts on (walkers: walk_scenarios.h). */
#ifndef MMLOCKS_VMA_SCENARIOS_H
#define MMLOCKS_VMA_SCENARIOS_H

#include "vtest.h"

/*
 * The walker scenarios (walk_scenarios.h) use five 4-page VMAs, all populated:
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

/* Every scenario says whether its choreography ran (ok) and, if not, why. */
struct scn {
	bool ok;
	char why[400];
};
/* Start a scenario: ok, no reason yet. */
void scn_begin(struct scn *s);
/* The choreography broke: keep the first reason, return false. */
bool scn_fail(struct scn *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A writer thread's body: mprotect 4 pages at *(unsigned long *)arg read-only. */
void scn_mprotect_fn(struct vtest *t, void *arg);

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

/* The five-VMA layout above, populated. */
void scn_layout(struct vtest *t);

#endif
