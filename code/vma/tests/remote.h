/* remote.h - forced interleavings of remote readers (access_remote_vm) and writers, shared by code/vma's tests and lab 05's grader. */
#ifndef MMLOCKS_VMA_REMOTE_H
#define MMLOCKS_VMA_REMOTE_H

#include "scenarios.h"

/*
 * The remote scenarios' mm (pages from RM_BASE):
 *   A [+0, +4)   read-write, populated (page 2 left out when sparse)
 *   B [+4, +8)   read-only, populated (touches A: a read can cross)
 *     [+8, +12)  hole
 *   N [+12, +14) populated, then mprotect()ed to no access
 *   D [+16, +18) VM_IO | VM_PFNMAP with ->access (rm_dev_pattern bytes)
 *   U [+64, +68) the unrelated mapping a writer changes
 */
#define RM_BASE		PG(512)
#define RM_A		(RM_BASE)
#define RM_B		(RM_BASE + PG(4))
#define RM_HOLE		(RM_BASE + PG(8))
#define RM_N		(RM_BASE + PG(12))
#define RM_D		(RM_BASE + PG(16))
#define RM_U		(RM_BASE + PG(64))

enum remote_style { REMOTE_MMAP, REMOTE_VMA };
const char *remote_style_name(enum remote_style s);
int remote_read(struct mm_struct *mm, enum remote_style s, unsigned long addr,
		void *buf, int len);
/* What the byte at addr must read as: page_pattern(), or D's own. */
unsigned char rm_dev_pattern(unsigned long addr);
unsigned char rm_expected(unsigned long addr);

struct remote_result {
	struct scn s;
	int ret;			/* bytes the read returned */
	bool bytes_ok;			/* every byte returned is the right one */
	bool vma_held_after;		/* a VMA of A, B or D still read-locked */
	bool present_after;		/* the page that was missing, after */
	long ev[NR_REMOTE_EVENTS];	/* remote_event() after the read */
	long miss, abort;		/* vma_lock_event() */
	int access_calls;		/* D's ->access() calls ... */
	int access_unlocked;		/* ... of them without mmap_lock */
	bool writer_blocked;		/* the writer waited for the reader */
	bool writer_done_first;		/* the writer finished, reader stopped */
	bool reader_done;		/* the reader finished in time */
};

/* One read of [addr, addr + len) in a quiet mm (sparse: A's page 2 missing). */
void scn_remote_quiet(enum remote_style s, bool sparse, unsigned long addr,
		      int len, struct remote_result *r);

/* lock_vma_under_rcu() finds A, then A is unmapped before it is locked. */
void scn_remote_lookup_unmap(struct remote_result *r);

/*
 * A sparse read of A (per-VMA) copies pages 0 and 1, meets page 2 and
 * drops A's lock to take mmap_lock; in between, with no lock held:
 */
enum remote_change {
	RCHANGE_UNMAP,		/* A is unmapped (and freed: rcu_barrier()) */
	RCHANGE_REPLACE,	/* a new mapping replaces A (old A freed) */
	RCHANGE_SHRINK,		/* A's pages 2 and 3 are unmapped */
};
void scn_remote_unlocked_change(enum remote_change c, struct remote_result *r);

/*
 * The reader holds its lock (stopped after A's first page) while a writer
 * mmaps U: with 6.12's mmap_lock the writer waits, with A's lock it must not.
 */
void scn_remote_unrelated_writer(enum remote_style s, struct remote_result *r);

/*
 * The per-VMA reader holds A (stopped after its first page) while a writer
 * mprotects A and waits in vma_start_write(); sparse: the reader then meets
 * the missing page and must drop A's lock before it asks for mmap_lock.
 */
void scn_remote_vma_writer(bool sparse, struct remote_result *r);

#endif
