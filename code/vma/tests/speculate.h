/* speculate.h - forced interleavings of speculative uprobe lookups and writers, shared by code/vma's tests and lab 06's grader. */
#ifndef MMLOCKS_VMA_SPECULATE_H
#define MMLOCKS_VMA_SPECULATE_H

#include "../uprobe.h"
#include "scenarios.h"		/* struct scn */

/*
 * The layout (sp_layout()): inodes I1 and I2 (i_ino 1 and 2), each with a
 * uprobe at every page offset 0..31, id = 100 * i_ino + page, so any
 * (inode, offset) a lookup computes names itself:
 *   P  [SP_BASE, +8)     file I1, vm_pgoff 8, VM_READ|VM_EXEC: the probe
 *   N  [SP_NOPROBE, +4)  file I2, vm_pgoff 100: no uprobe in it
 *   A  [SP_ANON, +4)     anonymous
 *   a hole at SP_HOLE
 * SP_X = SP_BASE + 4 pages lies in P at file offset 12 pages: id 112.
 */
#define SP_BASE		PG(512)
#define SP_X		(SP_BASE + PG(4))
#define SP_NOPROBE	PG(600)
#define SP_ANON		PG(640)
#define SP_HOLE		PG(700)
#define SP_PAGES	8
#define SP_PGOFF	8
#define SP_UPROBE_PAGES	32
#define SP_ID(ino, page)	((int)(100 * (ino) + (page)))
#define SP_ID_X		SP_ID(1, 12)

extern struct inode sp_i1, sp_i2;
extern struct uprobe *sp_uprobe_x;	/* (I1, 12 pages): id 112 */
void sp_uprobes(void);			/* registers the 64 uprobes (spec_stress.c) */
void sp_layout(struct mm_struct *mm);	/* sp_uprobes() and the four areas */

/* How a scenario asks: the speculative lookup alone, or a whole hit. */
enum sp_call {
	SP_SPECULATIVE,	/* find_active_uprobe_speculative() under RCU */
	SP_HIT,		/* handle_swbp(): switch, speculation, fallback */
};

struct spec_result {
	struct scn s;
	int id;			/* the uprobe's id, 0: none */
	long ev[NR_UPROBE_EVENTS];
	int hits_x;		/* handler runs of the right uprobe (112 or the new one) */
	bool waited;		/* the lookup waited in mmap_read_lock() */
	bool file_reused;	/* the old file's memory became the new file */
	int offset_hooks;	/* vaddr_to_offset() calls */
};

/* mmap_lock_speculate_try_begin() and _retry() called directly. */
struct spec_helpers {
	struct scn s;
	bool begin_unlocked;	/* true on an unlocked mm */
	bool seq_matches;	/* *seq == mm_lock_seq then */
	bool begin_write_locked; /* true while this thread holds it for write */
	bool retry_quiet;	/* true though nothing happened */
	bool retry_after_writer; /* true after a write lock/unlock */
	bool retry_while_locked; /* true while a writer holds it */
	bool begin_after_writer; /* try_begin works again after the unlock */
};
void scn_spec_helpers(struct spec_helpers *r);

/* No writer: a lookup of addr (SP_X, SP_NOPROBE, SP_ANON + 1 page, SP_HOLE). */
void scn_spec_quiet(enum sp_call call, bool speculate, unsigned long addr,
		    struct spec_result *r);

/*
 * A writer moves P's start down 2 pages (vma_move_start()) and is stopped
 * halfway, holding mmap_lock: vm_pgoff moved, vm_start not (SP_X would be
 * at offset 10 pages: id 110). Then a lookup of SP_X runs; with SP_HIT the
 * writer is let go once the lookup waits in mmap_read_lock() or returns.
 * The right answer is still 112.
 */
void scn_spec_write_locked(enum sp_call call, struct spec_result *r);

/* A lookup of SP_X is stopped at `point`, a writer runs, the lookup goes on. */
enum sp_race {
	SP_RACE_REPLACE,	/* munmap P, reopen on I2 (reusing P's file), map it at pgoff 3: id 207 */
	SP_RACE_MOVE,		/* P's start moves down 2 pages, offsets kept: id 112 */
	SP_RACE_UNRELATED,	/* an anonymous page mapped elsewhere: id 112 */
	SP_RACE_UNREGISTER,	/* uprobe 112 unregistered: the mm did not change */
};
void scn_spec_race(enum sp_call call, enum vma_hook_point point, enum sp_race race,
		   struct spec_result *r);
int sp_race_new_id(enum sp_race race);

#endif
