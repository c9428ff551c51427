/* bench_uprobe.c - uprobe hits per second and a mapper's latency, 6.12's lookup under mmap_lock beside the speculative one. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uprobe.h"
#include "../common/bench.h"

/*
 * The model's version of the uprobe-speculation experiment: H threads hit
 * one uprobe in a loop (handle_swbp()), while a mapper thread of the same
 * mm munmaps and mmaps back single pages elsewhere and times each call,
 * with a short pause between calls. Three arms, interleaved run by run
 * (none, switch 0, switch 1, then rotated): no hitters (the mapper's
 * baseline), uprobe_speculate = 0 (every hit takes mmap_read_lock()) and 1.
 * Each cell: the median over runs of the per-run value, with the range of
 * the per-run values, and the share of hits answered by speculation (the
 * proof the switch acted).
 */
#define PROBE_AT	PG(512)
#define PROBE_X		(PROBE_AT + PG(4))
#define MAPPER_AT	PG(16)
#define MAPPER_PAGES	64UL

struct opts {
	int hitters;
	long ops, runs, pause_us;
};

enum arm { ARM_NONE, ARM_LOCKED, ARM_SPEC, NR_ARMS };
static const char *const arm_name[] = { "no hits", "mmap_lock (6.12)", "speculative" };

struct run {
	double hits_per_s, mean, p50, p99, max;	/* latencies in microseconds */
	double spec_share;			/* hits answered by speculation */
};

static struct inode probe_inode = { .i_ino = 1 };
static struct mm_struct mm;
static atomic_bool stop;
static atomic_long hits;
static atomic_int started;

static void *hitter(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (handle_swbp(&mm, PROBE_X) != 1)
			abort();
		atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void one_run(const struct opts *o, enum arm arm, struct run *r)
{
	double *lat = calloc(o->ops, sizeof(*lat)), sum = 0;
	int nh = arm == ARM_NONE ? 0 : o->hitters;
	long ev0, spec0, h0;
	pthread_t th[64];
	struct file *f;

	mm_init(&mm);
	f = file_open(&probe_inode);
	if (!lat || do_mmap_file(&mm, PROBE_AT, PG(8), VM_READ | VM_EXEC, f, 0) ||
	    do_mmap(&mm, MAPPER_AT, PG(MAPPER_PAGES), VM_READ | VM_WRITE))
		abort();
	fput(f);
	uprobe_speculate = arm == ARM_SPEC;
	atomic_store(&stop, false);
	atomic_store(&started, 0);
	for (int i = 0; i < nh; i++)
		pthread_create(&th[i], NULL, hitter, NULL);
	while (atomic_load(&started) < nh)
		sched_yield();
	h0 = atomic_load(&hits);
	ev0 = uprobe_event(&mm, UPROBE_SPECULATE_SUCCESS) + uprobe_event(&mm, UPROBE_MMAP_LOCKED);
	spec0 = uprobe_event(&mm, UPROBE_SPECULATE_SUCCESS);
	long long start = sched_clock_ns();

	for (long i = 0; i < o->ops; i++) {
		unsigned long page = MAPPER_AT + PG(1 + (i / 2) % (MAPPER_PAGES - 2));
		long long t0 = sched_clock_ns();

		if (i % 2)
			do_mmap(&mm, page, PAGE_SIZE, VM_READ | VM_WRITE);
		else
			do_munmap(&mm, page, PAGE_SIZE);
		lat[i] = (sched_clock_ns() - t0) / 1e3;
		sum += lat[i];
		if (o->pause_us)
			usleep(o->pause_us);	/* the workload's pause */
	}
	double secs = (sched_clock_ns() - start) / 1e9;
	long nhits = atomic_load(&hits) - h0;
	long answered = uprobe_event(&mm, UPROBE_SPECULATE_SUCCESS) +
			uprobe_event(&mm, UPROBE_MMAP_LOCKED) - ev0;

	atomic_store(&stop, true);
	for (int i = 0; i < nh; i++)
		pthread_join(th[i], NULL);
	qsort(lat, o->ops, sizeof(*lat), cmp_double);
	*r = (struct run){
		.hits_per_s = nhits / secs, .mean = sum / o->ops, .p50 = lat[o->ops / 2],
		.p99 = lat[o->ops * 99 / 100], .max = lat[o->ops - 1],
		.spec_share = answered ? (double)(uprobe_event(&mm, UPROBE_SPECULATE_SUCCESS) -
						  spec0) / answered : 0,
	};
	mm_destroy(&mm);
	free(lat);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of one field over the runs, and its range. */
static void field_stat(struct run *runs, int n, size_t off, double *med, double *lo, double *hi)
{
	double v[n];

	for (int i = 0; i < n; i++)
		v[i] = *(double *)((char *)&runs[i] + off);
	*med = median(v, n);
	*lo = v[0];
	*hi = v[n - 1];
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_uprobe [--hitters N] [--ops N] [--runs N] [--pause-us N] [--quick]\n"
"  N threads hit one uprobe in a loop (handle_swbp()) while a mapper thread\n"
"  munmaps and mmaps back single pages elsewhere in the same mm, --ops calls\n"
"  per run, sleeping --pause-us between calls. Arms, interleaved run by run:\n"
"  no hits (the mapper's baseline), uprobe_speculate=0 (6.12: every hit takes\n"
"  mmap_read_lock()), uprobe_speculate=1 (speculation, mmap_lock on failure).\n"
"  Columns: hits per second; the mapper's mean call (median of the runs'\n"
"  means, and their range), median p50 and p99, largest call, all in us;\n"
"  spec%%: hits answered by speculation (the proof the switch acted).\n"
"  defaults: --hitters 2 --ops 4000 --runs 5 --pause-us 20\n"
"  --quick:  --ops 1000 --runs 3\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "hitters", 1, 0, 'n' }, { "ops", 1, 0, 'o' }, { "runs", 1, 0, 'r' },
		{ "pause-us", 1, 0, 'u' }, { "quick", 0, 0, 'q' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct opts o = { .hitters = 2, .ops = 4000, .runs = 5, .pause_us = 20 };
	long v, cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double load = 0;
	FILE *lf;
	int c;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'n': bad = bench_parse_long(optarg, 1, 64, &v); o.hitters = v; break;
		case 'o': bad = bench_parse_long(optarg, 100, 10000000, &o.ops); break;
		case 'r': bad = bench_parse_long(optarg, 1, 1000, &o.runs); break;
		case 'u': bad = bench_parse_long(optarg, 0, 100000, &o.pause_us); break;
		case 'q': o.ops = 1000; o.runs = 3; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "bench_uprobe: bad value '%s'\n", optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench_uprobe: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if ((lf = fopen("/proc/loadavg", "r"))) {
		if (fscanf(lf, "%lf", &load) != 1)
			load = 0;
		fclose(lf);
	}
	if (load > cpus)
		fprintf(stderr, "bench_uprobe: warning: load average %.1f on %ld CPUs: "
			"the threads wait for CPUs too; run it again on a quieter machine\n",
			load, cpus);
	if (o.hitters + 1 > cpus)
		fprintf(stderr, "bench_uprobe: note: %d threads on %ld CPUs: a hitter can "
			"be descheduled holding mmap_lock\n", o.hitters + 1, cpus);
	printf("bench_uprobe: %d hitters, %ld mapper calls per run, %ld runs, pause %ld us; "
	       "%ld CPUs, load %.1f\n", o.hitters, o.ops, o.runs, o.pause_us, cpus, load);

	struct run *runs = calloc(NR_ARMS * o.runs, sizeof(*runs));

	uprobe_register(&probe_inode, PG(4), 1);
	for (long r = 0; r < o.runs; r++)	/* ABAB...: rotate the order each run */
		for (int k = 0; k < NR_ARMS; k++) {
			enum arm a = (k + r) % NR_ARMS;

			one_run(&o, a, &runs[a * o.runs + r]);
		}
	printf("%-17s %-22s %-20s %8s %8s %9s %6s\n", "arm", "Mhits/s [range]",
	       "mapper mean [range]", "p50", "p99", "max", "spec%");
	for (int a = 0; a < NR_ARMS; a++) {
		struct run *rr = &runs[a * o.runs];
		double m, lo, hi, hm, hlo, hhi, p50, p99, mx, sp, x, y;

		field_stat(rr, o.runs, offsetof(struct run, hits_per_s), &hm, &hlo, &hhi);
		field_stat(rr, o.runs, offsetof(struct run, mean), &m, &lo, &hi);
		field_stat(rr, o.runs, offsetof(struct run, p50), &p50, &x, &y);
		field_stat(rr, o.runs, offsetof(struct run, p99), &p99, &x, &y);
		field_stat(rr, o.runs, offsetof(struct run, max), &x, &y, &mx);
		field_stat(rr, o.runs, offsetof(struct run, spec_share), &sp, &x, &y);
		char h[40], l[40];

		snprintf(h, sizeof(h), "%.2f [%.2f-%.2f]", hm / 1e6, hlo / 1e6, hhi / 1e6);
		snprintf(l, sizeof(l), "%.1f [%.1f-%.1f]", m, lo, hi);
		printf("%-17s %-22s %-20s %8.1f %8.1f %9.1f %5.1f%%\n", arm_name[a], h, l, p50,
		       p99, mx, 100 * sp);
	}
	free(runs);
	return 0;
}
