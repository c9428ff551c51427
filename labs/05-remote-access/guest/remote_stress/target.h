/* remote_stress's target process: its address-space layout, the pattern every mapped byte holds, and how to start and kill it. */
#ifndef REMOTE_STRESS_TARGET_H
#define REMOTE_STRESS_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PG 4096ul
#define PERIOD 0x10000ul /* the pattern repeats every 64 KiB; bases and mremap moves are multiples */
#define MAXLEN (5 * PG)  /* the longest access */

/*
 * The target's regions, one per 256 MiB slot, each followed by unmapped
 * space. Every byte mapped anywhere holds pat(address) or, where the
 * region allows it, 0. What a read of a region must return:
 *   EXACT  all of [addr, region end) asked for, and exactly the pattern
 *   ZERO   as EXACT, but a byte may be 0 (MADV_DONTNEED, a fresh mapping)
 *   LOOSE  any length, EIO included (being mapped, unmapped or moved)
 *   EIO    nothing: the read fails with EIO (never mapped)
 */
enum check { EXACT, ZERO, LOOSE, LOOSE_ZERO, EIO_ONLY };
enum { R_STABLE, R_MPROT, R_HOLE, R_MREMAP_A, R_MREMAP_B, R_DONTNEED, R_WRITE, R_GAP, R_NR };
#define SLOT(i) (0x200000000ul + (unsigned long)(i) * 0x10000000ul)
#define MREMAP_B (SLOT(R_MREMAP_A) + 0x8000000ul)
struct region {
	const char *name;
	unsigned long base, pages, vma_pages; /* vma_pages: VMA size at setup (protections alternate) */
	enum check check;
};
extern const struct region regions[R_NR];

unsigned char pat(unsigned long addr);
unsigned int rnd(unsigned int *seed);
/* A region (the writer: one it may write) and a range starting in it. */
void pick(unsigned int *seed, bool writer, unsigned long *addr, size_t *len);
/* Which region's slot holds addr. */
int region_of(unsigned long addr);
/* Fork a target (quiet: no churn threads); *tid is its idle thread, to ptrace. -1 on failure. */
pid_t spawn_target(bool quiet, pid_t *tid);
/* (mg_kill_child() kills and reaps it.) */

#endif
