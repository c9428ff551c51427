/* sweep.h - seeded forced schedules of the deferred split queue: unmaps, frees, faults and the shrinker, one running inside another at a hook point; the queue checked after every step. */
#ifndef MMLOCKS_THP_SWEEP_H
#define MMLOCKS_THP_SWEEP_H

#include <stdbool.h>

/*
 * A stress run decides by the host's timing which interleavings it
 * tries; a sweep decides by its seed. Each round takes three PMD-size
 * folios through a dozen steps, chosen at random: fault one in (queued
 * at once when split_underused_thp is on), unmap one of its eight
 * 64-page chunks (the last one frees it), run the shrinker, mark a folio
 * underused or not. At the k-th time one step passes a hook point where
 * it holds no lock (THP_HOOK_EARLY_CHECKED, _UNQUEUE_PEEKED,
 * _SCAN_ISOLATED, _SCAN_FORGET), another random step runs right there,
 * in the same thread, to completion: another CPU's work inside this
 * one's window. Early check and split_underused_thp are chosen per
 * round. After every step, deferred_split_check() over the three folios:
 * the length adds up, nothing is queued twice, no freed or split folio is
 * queued, no partially mapped folio is lost; and every large folio the
 * sweep has unmapped in part is marked partially mapped. A failure names
 * its round and its steps.
 */
struct thp_sweep_result {
	bool ok;
	char why[600];
	int rounds, steps, inside;	/* steps run inside another */
	long splits, underused_splits, frees;
};

void thp_sweep(unsigned seed, int rounds, struct thp_sweep_result *r);

#endif
