/* Host tests of deferred_split's workload geometry and /proc/vmstat parsing (ASan+UBSan). */
#include "deferred_split/workload.h"

#include <criterion/criterion.h>

/* Every sub-range lies inside its THP, off the PMD boundary, non-PMD-sized. */
Test(subrange, inside_the_thp_and_off_the_pmd_boundary)
{
	for (unsigned hits = 2; hits <= DS_MAX_HITS; hits++) {
		for (unsigned k = 0; k < hits; k++) {
			size_t off, len;

			ds_subrange(k, hits, &off, &len);
			cr_assert(len >= DS_PAGE && len % DS_PAGE == 0, "hits %u k %u: len %zu", hits, k, len);
			cr_assert(off % DS_THP_SIZE != 0, "hits %u k %u starts on the PMD boundary", hits, k);
			cr_assert(off + len < DS_THP_SIZE, "hits %u k %u: [%#zx, +%#zx) leaves the THP or "
				  "unmaps its last page", hits, k, off, len);
		}
	}
}

/*
 * Pages stay mapped before, between and after the sub-ranges, so each call
 * leaves the folio partially mapped and step 3's munmap() meets hits + 1 runs.
 */
Test(subrange, mapped_pages_between_neighbours)
{
	for (unsigned hits = 2; hits <= DS_MAX_HITS; hits++) {
		size_t prev_end = 0;

		for (unsigned k = 0; k < hits; k++) {
			size_t off, len;

			ds_subrange(k, hits, &off, &len);
			cr_assert(off > prev_end, "hits %u: sub-range %u starts at %#zx, previous ends at %#zx",
				  hits, k, off, prev_end);
			prev_end = off + len;
		}
	}
}

Test(vmstat, parses_the_counters_and_not_their_prefixes)
{
	const char *text = "nr_free_pages 1000\n"
			   "thp_fault_alloc 12\n"
			   "thp_fault_fallback 0\n"
			   "thp_split_page_failed 7\n"
			   "thp_deferred_split_page 11\n"
			   "thp_split_page 3\n"
			   "thp_split_pmd 9\n";
	long long v[DS_VM_NR];

	cr_assert(ds_vm_parse(text, v));
	cr_assert_eq(v[DS_THP_FAULT_ALLOC], 12);
	cr_assert_eq(v[DS_THP_FAULT_FALLBACK], 0);
	cr_assert_eq(v[DS_THP_SPLIT_PAGE], 3, "thp_split_page_failed must not be read as thp_split_page");
	cr_assert_eq(v[DS_THP_DEFERRED_SPLIT_PAGE], 11);
	cr_assert_eq(v[DS_THP_SPLIT_PMD], 9);
	cr_assert_eq(v[DS_PGMIGRATE_SUCCESS], -1, "a missing counter reads -1");
}

Test(vmstat, no_counter_found)
{
	long long v[DS_VM_NR];

	cr_assert_not(ds_vm_parse("nr_free_pages 1\n", v));
	cr_assert_not(ds_vm_parse("", v));
	for (int i = 0; i < DS_VM_NR; i++)
		cr_assert_eq(v[i], -1);
}
