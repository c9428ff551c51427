/* fault_scale's method (will-it-scale's): pinned workers with their own counters, a sampler reading them every sample period, warm-up samples discarded. */
#ifndef FAULT_SCALE_SAMPLER_H
#define FAULT_SCALE_SAMPLER_H

#include "workload.h"

#define FS_MAX_THREADS 64
#define FS_MAX_SAMPLES 60 /* kept samples per cell */

#define FS_MAX_STATS 1200 /* values fs_stats_of() takes: 20 repetitions x FS_MAX_SAMPLES */

/* Mean, median, minimum and maximum of n values (n = 0 or > FS_MAX_STATS: all zero, n = 0). */
struct fs_stats {
	double mean, median, min, max;
	int n;
};
struct fs_stats fs_stats_of(const double *v, int n);

/*
 * One cell: `threads` workers run one pattern without a break for
 * (warmup + samples) sample periods of sample_ms. Worker i is pinned to CPU
 * i % ncpu. The calling thread is the sampler: it sleeps to the end of each
 * period (an absolute deadline, so a late wake-up does not shift the later
 * ones), sums the workers' counters and records ops/s over the period it
 * actually measured. The first `warmup` periods are dropped; mark(arg, 0)
 * runs at the end of the last one (the first kept period starts then) and
 * mark(arg, 1) after the last kept period, before the workers stop, so the
 * caller can read its counters around exactly the kept window.
 */
struct fs_cell {
	/* in */
	enum fs_pattern pattern;
	int threads, ncpu, warmup, samples;
	long sample_ms;
	size_t len;		/* region per pass (page_fault*) */
	const int *fds;		/* per worker: its tmpfs file, or -1 */
	void (*mark)(void *arg, int end);
	void *arg;
	/* out */
	double rate[FS_MAX_SAMPLES]; /* ops/s of each kept period */
	long long ops;		/* ops in the kept window, all workers */
	double seconds;		/* the kept window's length */
	int pinned;		/* workers whose pinning succeeded */
	int err;		/* errno of a failed mmap/malloc in a worker, 0 if none */
};

/*
 * Run the cell. 0 on success; -EINTR if mg_stop_signal was set (the
 * workers are stopped and joined all the same); -errno if a worker failed
 * (c->err) or a thread could not be started. Every wait is bounded by the
 * cell's length plus one pass of one worker.
 */
int fs_run_cell(struct fs_cell *c);

#endif
