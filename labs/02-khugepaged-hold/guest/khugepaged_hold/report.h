/*
 * report.h: khugepaged_hold's analysis of the trace windows (report.c):
 * cutting each window's holds into complete scans, and the JSON records,
 * one sample per configuration and the summaries.
 */
#ifndef KHUGEPAGED_HOLD_REPORT_H
#define KHUGEPAGED_HOLD_REPORT_H

#include "holds.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define EXP "khugepaged-hold"
#define MAXB 128 /* scans kept per configuration; > 1 + --rounds * --scans */

/* The configurations, in the order each round measures them. */
enum { CFG_STOCK, CFG_NOSTEAL, CFG_STEAL };

struct config {
	const char *name;
	long long batch, cursor, policy; /* khugepaged_skip_batch, _per_slot_cursor, rwsem_steal_policy */
};

/* Everything one run collects; the program fills it, report.c reads it. */
struct run {
	struct config cfg[HOLDS_CFGS];
	struct holds H;
	/* Every change of full_scans the poller saw, per window: (when, value). */
	struct tlog obs[HOLDS_SPANS];
	long long dscans[HOLDS_CFGS];  /* full_scans steps in the windows */
	long long steals[HOLDS_CFGS], nosteals[HOLDS_CFGS]; /* rwsem_rlock_(no)steal deltas */
	struct mg_lat wlat[HOLDS_CFGS]; /* the writer's mmap() and munmap() latencies */
	long long scans, stall_us;      /* --scans (per window), --stall-us */
	/* Filled by report_cut(). */
	struct scan scan[HOLDS_CFGS][MAXB];
	size_t nscan[HOLDS_CFGS];
	long long merged[HOLDS_CFGS], completed[HOLDS_CFGS], with_stops[HOLDS_CFGS];
};

/*
 * The scan boundaries of window s seen by time `upto` (observations after
 * it are left out): their times in b[], how many scans each closes in
 * nsc[] (both may be NULL when cap is 0). Returns how many.
 */
size_t report_bounds(const struct run *r, size_t s, uint64_t upto, uint64_t *b, long long *nsc, size_t cap);

/* Cut every window into scans (after the run). */
void report_cut(struct run *r);

/* The sample record of configuration c; the summaries (after report_cut()). */
void report_sample(struct run *r, int c);
void report_summaries(struct run *r);

/*
 * pin.c: put kthread (khugepaged) alone on the last CPU and this process
 * on the others, its old mask restored by mg_restore_all(). The CPU
 * khugepaged got, or -1.
 */
int pin_cpus(pid_t kthread);

/*
 * teardown.c: munmap() the nvmas one-page VMAs from base, per_call of them
 * at a time, and print an info record with the calls' times. 0, or an
 * exit code.
 */
int unmap_small_vmas(uintptr_t base, size_t nvmas, size_t per_call);

/* usage.c: the --help text. */
void kh_usage(FILE *f);

#endif
