/* deferred_split's options, cells and JSON records (info, sample, summary). */
#ifndef DEFERRED_SPLIT_REPORT_H
#define DEFERRED_SPLIT_REPORT_H

#include "workload.h"

#include <stdbool.h>

#define DS_EXP "deferred-split"
#define MAX_REPS 20
#define NSIZES 3 /* thread counts: 1 (baseline), one per vCPU, two per vCPU */

struct ds_opts {
	long long threads, thps, hits, ms, reps, stress, timeout;
	bool quick;
};
extern struct ds_opts opt;

/* One measured cell: one knob position, one thread count, opt.ms long. */
struct ds_cell {
	int pos, threads;
	double seconds, sys_s, lock_per_pu, sys_us_per_pu, ops_per_s;
	long long partial_calls, cycles, pu, lock, vm[DS_VM_NR];
};

void ds_info_record(long nproc, const int sizes[NSIZES]);
void ds_emit_cell(int rep, const struct ds_cell *c);
/* The summary rows of summary.md, from reps repetitions of every cell. */
void ds_summary_records(struct ds_cell cells[][NSIZES][2], int reps, const int sizes[NSIZES]);

#endif
