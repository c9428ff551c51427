/* bench.h - what the models' benchmarks (bench_rwsem, bench_thp, bench_vma) share: the busy-host warning, a median, a bounded number parser. */
#ifndef MMLOCKS_BENCH_H
#define MMLOCKS_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline long bench_ncpus(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

/* The 1-minute load average, 0 if /proc/loadavg cannot be read. */
static inline double bench_loadavg(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double load = 0;

	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = 0;
		fclose(f);
	}
	return load;
}

/*
 * Other work on the host widens every latency and rate below, and more
 * threads than CPUs turns waits into being descheduled: a benchmark says
 * so before its numbers, so that nobody compares a busy run with a quiet
 * one. "Busy" is a load average above half the CPUs: on a 2-core machine,
 * one other runnable job. threads: how many of the benchmark's threads
 * want a CPU at once (0: do not check); who: what they are.
 */
static inline void bench_print_host(const char *prefix, long threads, const char *who)
{
	long ncpu = bench_ncpus();
	double load = bench_loadavg();

	printf("%s%ld CPUs, load average %.2f%s\n", prefix, ncpu, load,
	       load > ncpu * 0.5 ? ": WARNING, a busy host; expect a wide spread" : "");
	if (threads > ncpu)
		printf("%s%ld threads (%s) on %ld CPUs: they share CPUs, so waits include"
		       " being descheduled\n", prefix, threads, who, ncpu);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n), n >= 1. Sorts v: v[0] and v[n - 1] are then the range. */
static inline double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A whole decimal number in [lo, hi] into *out: 0, or -1 (out untouched). */
static inline int bench_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

#endif
