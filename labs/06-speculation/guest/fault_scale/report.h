/* fault_scale's options, cells, the A/A comparison and its JSON records (info, sample, table_row, summary, result). */
#ifndef FAULT_SCALE_REPORT_H
#define FAULT_SCALE_REPORT_H

#include "sampler.h"
#include "workload.h"

#include <stdbool.h>

#define FS_EXP "speculation-noregress"
#define FS_MAX_REPS 20
#define FS_GOAL_PCT 5.0 /* the goal: every pattern within +-5 % */

struct fs_opts {
	long long threads, mib, sample_ms, warmup, samples, reps, timeout;
	const char *patterns, *knob, *dir;
	unsigned mask; /* patterns to run, bit = enum fs_pattern */
	bool quick, no_switch;
};
extern struct fs_opts opt;

/*
 * One cell ("sample" record): one pattern, one switch position (-1: the
 * switch left alone, --no-switch), `threads` workers, opt.samples kept
 * periods of opt.sample_ms after opt.warmup dropped ones. ops_per_s is the
 * mean of the kept periods' rates, will-it-scale's "average".
 */
struct fs_sample {
	int pattern, pos, rep, threads, nrate, pinned;
	long long knob_readback; /* the switch read back after writing pos */
	double seconds, ops_per_s;
	struct fs_stats per_period; /* mean (= ops_per_s), median, min, max */
	double rate[FS_MAX_SAMPLES];
	long long ops, vm[FS_VM_NR], kc[FS_MAX_KC]; /* counter deltas over the kept window */
};

/* The switch's counters found next to it (fs_knob_counters). */
extern int fs_nkc;
extern char fs_kc_names[FS_MAX_KC][FS_KC_NAME];

/*
 * Position `k` (0 or 1) of the k-th sample of pattern p in repetition rep:
 * both positions back to back, the first one alternating from pattern to
 * pattern and from repetition to repetition (0,1 then 1,0 ...).
 */
int fs_position(int rep, int p, int k);

/* The A/A comparison of one pattern: position 0 against position 1. */
struct fs_cmp {
	double med[2], min[2], max[2];
	double spread_pct[2];	/* (max - min) / median of one position, % */
	double ratio;		/* median(1) / median(0) */
	double change_pct;	/* (ratio - 1), % */
	double pair_min, pair_max, pair_med; /* ratio 1/0 within each repetition: range, median */
	bool pass;		/* |change_pct| <= FS_GOAL_PCT */
	bool resolves;		/* both spreads <= FS_GOAL_PCT: the goal is above the noise */
};

/*
 * From reps ops/s values per position (v[pos][rep]). A position-0 sample
 * with no ops, or a median of 0, voids it: NaNs and no pass.
 */
struct fs_cmp fs_compare(const double v[2][FS_MAX_REPS], int reps);

void fs_info_record(long nproc, int threads, const char *thp, const char *release, bool mmlocks);
void fs_emit_sample(const struct fs_sample *s, bool baseline);
/*
 * The summary rows (one per pattern) and the table of spreads, from
 * s[rep][pattern][pos] and the one-thread baselines base[pattern].
 */
void fs_summary_records(struct fs_sample s[][FS_NPAT][2], const struct fs_sample base[FS_NPAT],
			int reps, int threads);

/*
 * --no-switch: one "result" record per pattern, from s[rep][pattern] (one
 * cell per repetition): the median, mean, range and spread of the cells'
 * ops/s, the range of every kept period, the faults per op. What
 * labs/kernel/compare-stock.sh compares between a stock and a patched boot.
 */
void fs_result_records(struct fs_sample s[][FS_NPAT], int reps, int threads);

#endif
