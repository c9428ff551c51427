/* helpers.h: small layouts shared by the khugepaged model's tests. */
#ifndef KHUGEPAGED_TEST_HELPERS_H
#define KHUGEPAGED_TEST_HELPERS_H

#include <criterion/criterion.h>

#include "khugepaged.h"

#define MiB (1024UL * 1024UL)

/* One registered mm: nr_ineligible one-page VMAs, then one eligible VMA. */
static inline struct mm_struct *one_mm(unsigned long nr_ineligible,
				       const char *pmds,
				       struct khugepaged_mm_slot **slotp)
{
	struct mm_struct *mm = mm_alloc();
	struct khugepaged_mm_slot *slot;

	mm_add_ineligible(mm, nr_ineligible);
	if (pmds)
		mm_add_eligible(mm, pmds);
	slot = khugepaged_enter(mm);
	if (slotp)
		*slotp = slot;
	return mm;
}

/* Start of the eligible VMA that one_mm() placed after n ineligible ones. */
static inline unsigned long eligible_start(unsigned long nr_ineligible)
{
	return ALIGN(4 * MiB + nr_ineligible * 2 * PAGE_SIZE, HPAGE_PMD_SIZE);
}

#endif
