/* The deferred-split workload and its /proc/vmstat counters (see workload.h). */
#define _GNU_SOURCE
#include "workload.h"
#include "mmlocks_guest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const char *const ds_vm_names[DS_VM_NR] = {
	[DS_THP_FAULT_ALLOC] = "thp_fault_alloc",
	[DS_THP_FAULT_FALLBACK] = "thp_fault_fallback",
	[DS_THP_DEFERRED_SPLIT_PAGE] = "thp_deferred_split_page",
	[DS_THP_SPLIT_PAGE] = "thp_split_page",
	[DS_THP_SPLIT_PMD] = "thp_split_pmd",
	[DS_PGMIGRATE_SUCCESS] = "pgmigrate_success",
};

/* region: subrange */
void ds_subrange(unsigned k, unsigned hits, size_t *off, size_t *len)
{
	size_t stride = DS_THP_SIZE / DS_PAGE / hits; /* pages per sub-range slot */

	/* One page in from the slot's start (never on the PMD boundary), half a slot long. */
	*off = ((size_t)k * stride + 1) * DS_PAGE;
	*len = (stride / 2) * DS_PAGE;
}
/* endregion: subrange */

/* region: cycle */
long ds_cycle(size_t nthp, unsigned hits, long long *probe_kb)
{
	size_t len = nthp * DS_THP_SIZE, map_len = len + DS_THP_SIZE;
	char *map, *base;
	long partial = 0;
	int err = 0;

	/* One THP more than needed, so that a 2 MiB-aligned start fits inside. */
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -errno;
	base = (char *)(((uintptr_t)map + DS_THP_SIZE - 1) & ~(DS_THP_SIZE - 1));
	if (madvise(base, len, MADV_HUGEPAGE)) {
		err = -errno;
		goto out;
	}
	for (size_t j = 0; j < nthp; j++)
		base[j * DS_THP_SIZE] = 1; /* fault: one THP, or 4 KiB if THP failed */
	if (probe_kb)
		*probe_kb = mg_anon_huge_kb();
	for (size_t j = 0; j < nthp; j++) {
		for (unsigned k = 0; k < hits; k++) {
			size_t off, sub;

			ds_subrange(k, hits, &off, &sub);
			/* The first call splits the PMD and queues the folio; the others find it queued. */
			if (madvise(base + j * DS_THP_SIZE + off, sub, MADV_DONTNEED)) {
				err = -errno;
				goto out;
			}
			partial++;
		}
	}
out:
	munmap(map, map_len);
	return err ? err : partial;
}
/* endregion: cycle */

bool ds_vm_parse(const char *text, long long v[DS_VM_NR])
{
	bool any = false;

	for (int i = 0; i < DS_VM_NR; i++)
		v[i] = -1;
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		for (int i = 0; i < DS_VM_NR; i++) {
			size_t n = strlen(ds_vm_names[i]);

			if (!strncmp(p, ds_vm_names[i], n) && p[n] == ' ') {
				v[i] = strtoll(p + n + 1, NULL, 10);
				any = true;
			}
		}
	}
	return any;
}

bool ds_vm_read(long long v[DS_VM_NR])
{
	static char buf[32768]; /* only the main thread reads it */
	ssize_t n = mg_read_file("/proc/vmstat", buf, sizeof(buf));

	return n > 0 && ds_vm_parse(buf, v);
}
