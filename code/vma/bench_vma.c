/* bench_vma.c - mapper (writer) latency with N smaps_rollup or /proc/PID/mem readers, 6.12's mmap_lock beside the per-VMA locks of seeds 001 and 004. */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vma.h"
#include "../common/bench.h"

/*
 * The model's version of proc-mmap_sem-test: a mapper thread munmaps and
 * mmaps back single pages of its own mapping and times each call; reader
 * threads read the rollup in a loop. The rest of the mm is --vmas VMAs
 * over --pages populated pages, which is what a rollup walks. Arms run
 * interleaved (none, mmap, vma, none, mmap, vma, ...), never all of one
 * then all of the other; every cell reports the median over runs of the
 * per-run mean, its spread (min and max of the per-run means), the
 * median p50 and p99, and the largest single operation.
 *
 * With --remote SIZES the readers read /proc/PID/mem instead
 * (proc_mem_read(): a page per access_remote_vm() call) in reads of each
 * size, from the walked VMAs, with the switch access_remote_vm_vma_lock at
 * 0 (6.12) or 1 (seed 004).
 */
#define MAPPER_AT	PG(16)
#define MAPPER_PAGES	64UL
#define WALKED_AT	PG(1024)

struct opts {
	int readers[8], nr_readers;
	long sizes[8];			/* --remote: bytes per read */
	int nr_sizes;
	long ops, runs;
	unsigned long pages, vmas;
	long page_ns, pause_us;
};

enum arm { ARM_NONE, ARM_MMAP, ARM_VMA, NR_ARMS };
static const char *const arm_name[] = { "none", "mmap_lock walk (6.12)",
					"per-VMA walk (seed 001)" };
static const char *const remote_arm_name[] = { "none", "mmap_lock (6.12)",
					       "per-VMA (seed 004)" };

struct run {
	double mean, p50, p99, max;	/* microseconds */
	double secs;			/* the mapper's run */
	long rollups, vma_locked, mmap_locked, fallbacks, drops;
};

struct bench {
	struct mm_struct mm;
	enum arm arm;
	long size;			/* remote reads: bytes, else 0 */
	unsigned long pages;		/* walked */
	atomic_bool stop;
	atomic_int started;		/* readers past their first rollup */
	atomic_long rollups, vma_locked, mmap_locked, fallbacks, drops;
};

/*
 * /proc/PID/mem reads of b->size bytes at page-aligned offsets inside the
 * walked pages (which have no holes): each read runs over the region.
 */
static void *remote_reader(void *p)
{
	struct bench *b = p;
	unsigned long span = PG(b->pages) > (unsigned long)b->size ?
			     PG(b->pages) - b->size : 0;
	char *buf = malloc(b->size);
	bool started = false;

	for (unsigned long n = 0; !atomic_load(&b->stop); n++) {
		unsigned long off = span ? (n * b->size) % span : 0;

		proc_mem_read(&b->mm, WALKED_AT + (off & ~(PAGE_SIZE - 1)), buf, b->size);
		atomic_fetch_add(&b->rollups, 1);
		if (!started) {
			started = true;
			atomic_fetch_add(&b->started, 1);
		}
	}
	free(buf);
	return NULL;
}

static void *reader(void *p)
{
	struct bench *b = p;
	struct mem_size_stats mss;
	bool started = false;

	while (!atomic_load(&b->stop)) {
		if (b->arm == ARM_VMA)
			smaps_rollup_vma(&b->mm, &mss);
		else
			smaps_rollup_mmap(&b->mm, &mss);
		atomic_fetch_add(&b->rollups, 1);
		if (!started) {
			started = true;
			atomic_fetch_add(&b->started, 1);
		}
		atomic_fetch_add(&b->vma_locked, mss.nr_vma_locked);
		atomic_fetch_add(&b->mmap_locked, mss.nr_mmap_locked);
		atomic_fetch_add(&b->fallbacks, mss.nr_fallbacks);
		atomic_fetch_add(&b->drops, mss.nr_drops);
	}
	return NULL;
}

static void one_run(const struct opts *o, enum arm arm, int nreaders, long size,
		    struct run *r)
{
	double *lat = calloc(o->ops, sizeof(*lat)), sum = 0;
	unsigned long chunk = o->pages / o->vmas;
	pthread_t th[64];
	struct bench *b = calloc(1, sizeof(*b));

	mm_init(&b->mm);
	b->arm = arm;
	b->size = size;
	b->pages = o->pages;
	access_remote_vm_vma_lock = arm == ARM_VMA;
	/* Alternate flags so the walked chunks stay separate VMAs. */
	for (unsigned long i = 0; i < o->vmas; i++)
		do_mmap(&b->mm, WALKED_AT + PG(i * chunk), PG(chunk),
			i % 2 ? VM_READ : (VM_READ | VM_WRITE));
	for (unsigned long i = 0; i < o->pages; i++)
		do_user_addr_fault(&b->mm, WALKED_AT + PG(i), false);
	do_mmap(&b->mm, MAPPER_AT, PG(MAPPER_PAGES), VM_READ | VM_WRITE);
	for (int i = 0; arm != ARM_NONE && i < nreaders; i++)
		pthread_create(&th[i], NULL, size ? remote_reader : reader, b);

	/* Time only while every reader is going (a rollup can take a while). */
	while (arm != ARM_NONE && atomic_load(&b->started) < nreaders)
		sched_yield();
	atomic_store(&b->rollups, 0);
	atomic_store(&b->vma_locked, 0);
	atomic_store(&b->mmap_locked, 0);
	atomic_store(&b->fallbacks, 0);
	atomic_store(&b->drops, 0);
	long ev0[NR_REMOTE_EVENTS];

	for (int e = 0; e < NR_REMOTE_EVENTS; e++)
		ev0[e] = remote_event(&b->mm, e);
	long long start = sched_clock_ns();

	for (long i = 0; i < o->ops; i++) {
		unsigned long page = MAPPER_AT + PG(1 + (i / 2) % (MAPPER_PAGES - 2));
		long long t0 = sched_clock_ns();

		if (i % 2)
			do_mmap(&b->mm, page, PAGE_SIZE, VM_READ | VM_WRITE);
		else
			do_munmap(&b->mm, page, PAGE_SIZE);
		lat[i] = (sched_clock_ns() - t0) / 1e3;
		sum += lat[i];
		if (o->pause_us)
			usleep(o->pause_us);	/* the workload's pause */
	}
	double secs = (sched_clock_ns() - start) / 1e9;

	atomic_store(&b->stop, true);
	for (int i = 0; arm != ARM_NONE && i < nreaders; i++)
		pthread_join(th[i], NULL);
	if (size) {	/* per call of access_remote_vm() */
		b->vma_locked = remote_event(&b->mm, ACCESS_REMOTE_VM_VMA_LOCKED) -
			ev0[ACCESS_REMOTE_VM_VMA_LOCKED];
		b->mmap_locked = remote_event(&b->mm, ACCESS_REMOTE_VM_MMAP_LOCKED) -
			ev0[ACCESS_REMOTE_VM_MMAP_LOCKED];
		b->fallbacks = remote_event(&b->mm, ACCESS_REMOTE_VM_FALLBACK) -
			ev0[ACCESS_REMOTE_VM_FALLBACK];
	}
	qsort(lat, o->ops, sizeof(*lat), bench_cmp_double);
	*r = (struct run){
		.mean = sum / o->ops, .p50 = lat[o->ops / 2],
		.p99 = lat[o->ops * 99 / 100], .max = lat[o->ops - 1], .secs = secs,
		.rollups = b->rollups, .vma_locked = b->vma_locked,
		.mmap_locked = b->mmap_locked, .fallbacks = b->fallbacks,
		.drops = b->drops,
	};
	mm_destroy(&b->mm);
	free(b);
	free(lat);
}

static void report(const struct opts *o, int nreaders, long size, enum arm arm,
		   struct run *runs)
{
	double mean[64], p50[64], p99[64], max = 0, med, secs = 0;
	long rollups = 0, vl = 0, ml = 0, fb = 0, dr = 0;

	for (int i = 0; i < o->runs; i++) {
		mean[i] = runs[i].mean;
		p50[i] = runs[i].p50;
		p99[i] = runs[i].p99;
		if (runs[i].max > max)
			max = runs[i].max;
		rollups += runs[i].rollups;
		secs += runs[i].secs;
		vl += runs[i].vma_locked;
		ml += runs[i].mmap_locked;
		fb += runs[i].fallbacks;
		dr += runs[i].drops;
	}
	med = bench_median(mean, o->runs);	/* sorts mean[] */
	if (size)
		printf("%7d %8ld  ", nreaders, size);
	else
		printf("%7d  ", nreaders);
	printf("%-24s %8.1f %8.1f-%-8.1f %7.1f %8.1f %9.1f %9.0f %7.1f%% %9ld %6ld\n",
	       size ? remote_arm_name[arm] : arm_name[arm], med, mean[0], mean[o->runs - 1],
	       bench_median(p50, o->runs), bench_median(p99, o->runs), max,
	       rollups / secs, vl + ml ? 100.0 * vl / (vl + ml) : 0.0,
	       fb / o->runs, dr / o->runs);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_vma [--readers N[,N...]] [--remote BYTES[,BYTES...]] [--ops N] [--runs N]\n"
"                 [--pages N] [--vmas N] [--page-ns N] [--pause-us N] [--quick]\n"
"  A mapper thread munmaps and mmaps back one page at a time (--ops calls per\n"
"  run, each timed) while N threads read smaps_rollup in a loop, walking\n"
"  with 6.12's mmap_lock walk or seed 001's per-VMA walk; the walked part\n"
"  of the mm is --vmas VMAs over --pages populated pages, each costing the\n"
"  walk --page-ns ns of busy work (the kernel's per-PTE work); the mapper\n"
"  sleeps --pause-us between calls, as proc-mmap_sem-test's does. The arms (no\n"
"  readers, mmap_lock walk, per-VMA walk) are interleaved over --runs runs.\n"
"  Columns: median of the per-run mean latency, the range of those means,\n"
"  median p50 and p99, largest single call (all microseconds); rollups per\n"
"  second (all readers together); share of VMAs the readers gathered under\n"
"  a VMA lock (the per-VMA walk's proof of acting); fallbacks and mmap_lock\n"
"  drops per run.\n"
"  --remote: the readers read /proc/PID/mem instead, in reads of each size\n"
"  (1..16777216 bytes; a page per access_remote_vm() call), with the switch\n"
"  access_remote_vm_vma_lock at 0 (6.12: mmap_lock) or 1 (seed 004: the\n"
"  VMA's lock); reads/s counts whole reads; vma-lkd is the share of calls\n"
"  served under a VMA lock, fallback the calls per run that fell back.\n"
"  defaults: --readers 1,2 --ops 4000 --runs 5 --pages 4096 --vmas 64\n"
"            --page-ns 100 --pause-us 20\n"
"  --quick:  --readers 1,2 --ops 1000 --runs 3\n");
}

/* A comma-separated list of up to 8 numbers in [lo, hi]. */
static int parse_list(char *arg, long lo, long hi, long *out, int *n)
{
	*n = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		if (*n == 8 || bench_parse_long(tok, lo, hi, &out[*n]))
			return -1;
		(*n)++;
	}
	return *n ? 0 : -1;
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "bench_vma: bad %s '%s'\n", what, arg);
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "readers", 1, 0, 'r' }, { "ops", 1, 0, 'o' }, { "runs", 1, 0, 'n' },
		{ "pages", 1, 0, 'p' }, { "vmas", 1, 0, 'v' }, { "quick", 0, 0, 'q' },
		{ "page-ns", 1, 0, 'g' }, { "pause-us", 1, 0, 'u' }, { "remote", 1, 0, 'm' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	struct opts o = { .readers = { 1, 2 }, .nr_readers = 2, .ops = 4000,
			  .runs = 5, .pages = 4096, .vmas = 64, .page_ns = 100,
			  .pause_us = 20 };
	long v, rd[8];
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return 0;
		case 'q': o.ops = 1000; o.runs = 3; break;
		case 'r': if (parse_list(optarg, 1, 64, rd, &o.nr_readers))
				return bad("--readers", optarg);
			for (int i = 0; i < o.nr_readers; i++)
				o.readers[i] = rd[i];
			break;
		case 'm': if (parse_list(optarg, 1, 1L << 24, o.sizes, &o.nr_sizes))
				return bad("--remote", optarg);
			break;
		case 'o': if (bench_parse_long(optarg, 100, 10000000, &o.ops)) return bad("--ops", optarg); break;
		case 'n': if (bench_parse_long(optarg, 1, 64, &o.runs)) return bad("--runs", optarg); break;
		case 'p': if (bench_parse_long(optarg, 1, 16384, &v)) return bad("--pages", optarg);
			o.pages = v; break;
		case 'v': if (bench_parse_long(optarg, 1, 4096, &v)) return bad("--vmas", optarg);
			o.vmas = v; break;
		case 'g': if (bench_parse_long(optarg, 0, 100000, &o.page_ns)) return bad("--page-ns", optarg);
			break;
		case 'u': if (bench_parse_long(optarg, 0, 100000, &o.pause_us)) return bad("--pause-us", optarg);
			break;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	if (o.vmas > o.pages)
		return bad("--vmas (more than --pages)", "");

	smap_page_cost_ns = o.page_ns;
	bench_print_host("bench_vma: ", o.readers[o.nr_readers - 1] + 1,
			 "readers and the mapper, not pinned");
	printf("bench_vma: %ld timed munmap/mmap calls per run, %ld runs per arm, arms interleaved; "
	       "%lu VMAs over %lu pages walked at %ld ns a page; mapper pause %ld us; times in us\n",
	       o.ops, o.runs, o.vmas, o.pages, o.page_ns, o.pause_us);
	if (o.nr_sizes)
		printf("%7s %8s  %-24s %8s %17s %7s %8s %9s %9s %8s %9s %6s\n", "readers",
		       "bytes", "lock", "mean", "(range of means)", "p50", "p99", "max",
		       "reads/s", "vma-lkd", "fallback", "drops");
	else
		printf("%7s  %-24s %8s %17s %7s %8s %9s %9s %8s %9s %6s\n", "readers", "walk",
		       "mean", "(range of means)", "p50", "p99", "max", "rollups/s", "vma-lkd",
		       "fallback", "drops");
	for (int k = 0; k < o.nr_readers; k++) {
		for (int z = 0; z < (o.nr_sizes ? o.nr_sizes : 1); z++) {
			long size = o.nr_sizes ? o.sizes[z] : 0;
			struct run runs[NR_ARMS][64];

			for (long i = 0; i < o.runs; i++)
				for (int a = 0; a < NR_ARMS; a++)
					one_run(&o, a, o.readers[k], size, &runs[a][i]);
			for (int a = 0; a < NR_ARMS; a++)
				report(&o, a == ARM_NONE ? 0 : o.readers[k], size, a, runs[a]);
		}
	}
	return 0;
}
