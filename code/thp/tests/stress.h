/* stress.h - threads partially unmapping shared folios while the shrinker scans; invariants checked during and after. */
#ifndef MMLOCKS_THP_STRESS_H
#define MMLOCKS_THP_STRESS_H

#include <stdbool.h>

struct stress_cfg {
	int threads;		/* unmapping threads, each its own CPU number */
	int folios;		/* shared folios (slots, refaulted when freed) */
	int order;		/* folio order */
	int hits;		/* partial unmaps per folio lifetime (divides 2^order) */
	long ops;		/* zaps per thread */
	bool early_check;
	bool shrinker;		/* a thread running deferred_split_scan() meanwhile */
};

struct stress_result {
	bool ok;
	char why[200];
	long zaps, faults, partial_unmaps, lock_partial, splits, scans, checks;
};

/*
 * With hits >= 3 a warm-up runs first, alone: slot 0 is faulted in and
 * two of its ranges unmapped (its first partial unmap takes the lock,
 * the second, with the early check on, does not), so those counters move
 * whatever the threads do next.
 */
void stress_run(const struct stress_cfg *cfg, struct stress_result *res);

#endif
