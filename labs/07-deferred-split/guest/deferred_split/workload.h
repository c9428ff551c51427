/* The deferred-split workload: THPs faulted in, partially unmapped again and again, torn down. */
#ifndef DEFERRED_SPLIT_WORKLOAD_H
#define DEFERRED_SPLIT_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DS_THP_SIZE (2ul << 20)
#define DS_PAGE 4096ul
#define DS_MAX_HITS 64	/* partial unmaps per THP per cycle */

/*
 * Sub-range k (0 <= k < hits) of a THP: the k-th MADV_DONTNEED of one
 * cycle. Each starts and ends inside the THP and off any PMD boundary,
 * none overlaps another, and pages stay mapped between neighbours, so every
 * call leaves the folio partially mapped (as ld.lld's 0x7fb000-long
 * ranges did to the THP they ended in). Offsets from the THP's start.
 */
void ds_subrange(unsigned k, unsigned hits, size_t *off, size_t *len);

/*
 * One cycle on a fresh region of nthp THPs (2 MiB aligned, MADV_HUGEPAGE):
 * touch each THP (a fault that allocates it, if THP works), `hits` partial
 * unmaps of each, then munmap() (the runs of pages still mapped between
 * the holes are unmapped one after another: partial unmaps too). A fresh
 * mapping each time because 6.12's MADV_DONTNEED leaves the PTE table of
 * a split PMD in place, and a fault under a PTE table is never a THP.
 * Returns the number of madvise() calls that partially unmapped a THP, or
 * -errno. If probe_kb is not NULL, *probe_kb gets AnonHugePages (kB) of
 * this process after the faults (-1 if unreadable).
 */
long ds_cycle(size_t nthp, unsigned hits, long long *probe_kb);

/* The /proc/vmstat counters the experiment reports (missing ones read -1). */
enum ds_vm {
	DS_THP_FAULT_ALLOC,
	DS_THP_FAULT_FALLBACK,
	DS_THP_DEFERRED_SPLIT_PAGE,
	DS_THP_SPLIT_PAGE,
	DS_THP_SPLIT_PMD,
	DS_PGMIGRATE_SUCCESS,
	DS_VM_NR
};
extern const char *const ds_vm_names[DS_VM_NR];

/* Fill v[] from the text of /proc/vmstat; false if none was found. */
bool ds_vm_parse(const char *text, long long v[DS_VM_NR]);
/* Read /proc/vmstat; false on failure. */
bool ds_vm_read(long long v[DS_VM_NR]);

#endif
