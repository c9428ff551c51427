/* bench_rwsem.c - uncontended cost of the model rwsem vs glibc, and writer wait under drop-and-retake readers per steal policy. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rwsem.h"
#include "task.h"
#include "../common/bench.h"

#define MAX_RUNS	21
#define NPOLICY		3	/* RWSEM_STEAL, RWSEM_NOSTEAL, RWSEM_WRITER_FIRST */

static struct {
	long iters, k, item_ns, duration_ms, readers, gap_us, timeout_us, pin, runs;
	int drop_always;
} opt = { 10000000, 64, 1000, 200, 1, 500, 4000, 1, 5, 0 };

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_rwsem [options]\n"
"(a) uncontended down_read+up_read of the model rwsem beside glibc's\n"
"    pthread_rwlock_rdlock+unlock, in ns per pair;\n"
"(b) writer wait latency when reader threads hold the lock while working\n"
"    through items and drop and re-take it, for policies STEAL, NOSTEAL,\n"
"    WRITER_FIRST. By default a reader drops after an item only if\n"
"    rwsem_is_contended(), as show_smaps_rollup() does after each VMA;\n"
"    --drop always drops every K items whether or not anyone waits (as\n"
"    khugepaged's skip batch does every 1024 skipped VMAs).\n"
"Both parts repeat --runs times, interleaved: (a) alternates which lock goes\n"
"first; (b) runs the three policies in turn, each run starting one policy\n"
"later (STEAL NOSTEAL WRITER_FIRST, NOSTEAL WRITER_FIRST STEAL, ...), so\n"
"no policy always gets the freshest or the most disturbed slot. (b) prints\n"
"one row per run and policy, then per policy the median and, in brackets,\n"
"the range (min-max) over the runs. Readers and the writer are pinned to\n"
"different CPUs: a kernel reader wakes the writer with preemption off and\n"
"keeps its CPU; a userspace writer woken on the reader's CPU would preempt\n"
"the reader and hide the steal. With more threads than CPUs that cannot\n"
"work, and the benchmark says so.\n"
"  --runs N         repetitions, 1..21 (default 5)\n"
"  --iters N        (a) iterations per lock, split over the runs, 1000..1000000000\n"
"                   (default 10000000)\n"
"  --drop MODE      (b) contended (default) or always\n"
"  --k N            (b) with --drop always: items between drops, 1..1000000 (default 64)\n"
"  --item-ns N      (b) busy work per item in ns, 0..1000000 (default 1000)\n"
"  --readers N      (b) reader threads, 1..8 (default 1)\n"
"  --writer-gap-us N (b) writer pause between attempts, 0..1000000 (default 500)\n"
"  --timeout-us N   (b) handoff timeout (RWSEM_WAIT_TIMEOUT), 0..1000000 (default 4000)\n"
"  --duration-ms N  (b) time of one policy in one run, 10..600000 (default 200)\n"
"  --pin N          (b) 1: readers and writer on different CPUs (default), 0: no pinning\n"
"  --quick          --runs 3 --iters 1000000 --duration-ms 70\n"
"  --help           this text\n");
}

/*
 * A kernel reader calls up_read() with preemption disabled and, under
 * PREEMPT_NONE, keeps its CPU after waking the writer. A userspace reader
 * can be preempted by the writer it just woke if both share a CPU, which
 * hides the steal. So readers and the writer get different CPUs.
 */
static void pin_self(long cpu)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (!opt.pin || ncpu < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu % ncpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * include/linux/rwsem.h: !list_empty(&sem->wait_list), read without
 * wait_lock ("is anybody waiting for me to go away?"). The model reads
 * RWSEM_FLAG_WAITERS, which mirrors the list (both change under
 * wait_lock), so that the lockless peek is no data race. (code/vma's
 * mmap_lock.h has the same helper for lab 04.)
 */
static inline int rwsem_is_contended(struct rw_semaphore *sem)
{
	return !!(atomic_load_explicit(&sem->count, memory_order_relaxed) &
		  RWSEM_FLAG_WAITERS);
}

static double now_s(void)
{
	return sched_clock_ns() / 1e9;
}

/* (a) ---------------------------------------------------------------- */

static double rwsem_pair_ns(struct rw_semaphore *sem, long n)
{
	double t0 = now_s();

	for (long i = 0; i < n; i++) {
		down_read(sem);
		up_read(sem);
	}
	return (now_s() - t0) * 1e9 / n;
}

static double pthread_pair_ns(pthread_rwlock_t *rw, long n)
{
	double t0 = now_s();

	for (long i = 0; i < n; i++) {
		pthread_rwlock_rdlock(rw);
		pthread_rwlock_unlock(rw);
	}
	return (now_s() - t0) * 1e9 / n;
}

/* "median [min-max]" of v[0..n) (sorts v), with d decimals. */
static const char *spread(char *buf, size_t len, double *v, int n, int d)
{
	double med = bench_median(v, n);

	snprintf(buf, len, "%.*f [%.*f-%.*f]", d, med, d, v[0], d, v[n - 1]);
	return buf;
}

static void bench_uncontended(void)
{
	struct rw_semaphore sem;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	double ours[MAX_RUNS], glibc[MAX_RUNS], ratio[MAX_RUNS];
	long n = opt.iters / opt.runs;
	char buf[64];

	init_rwsem(&sem);
	down_read(&sem);	/* warm up: allocates this thread's task */
	up_read(&sem);
	for (int run = 0; run < opt.runs; run++) {	/* AB, BA, AB, ... */
		if (run % 2 == 0) {
			ours[run] = rwsem_pair_ns(&sem, n);
			glibc[run] = pthread_pair_ns(&rw, n);
		} else {
			glibc[run] = pthread_pair_ns(&rw, n);
			ours[run] = rwsem_pair_ns(&sem, n);
		}
		ratio[run] = ours[run] / glibc[run];
	}
	printf("# (a) uncontended read lock+unlock, one thread: %ld runs of %ld iterations,"
	       " the two interleaved; median [min-max]\n", opt.runs, n);
	printf("%-32s %s ns/op\n", "rwsem down_read+up_read",
	       spread(buf, sizeof(buf), ours, opt.runs, 1));
	printf("%-32s %s ns/op\n", "pthread_rwlock rdlock+unlock",
	       spread(buf, sizeof(buf), glibc, opt.runs, 1));
	printf("%-32s %s\n\n", "ratio rwsem/pthread", spread(buf, sizeof(buf), ratio, opt.runs, 2));
	rwsem_destroy(&sem);
	pthread_rwlock_destroy(&rw);
}

/* (b) ---------------------------------------------------------------- */

struct run {
	struct rw_semaphore sem;
	atomic_long next_cpu;
	enum rwsem_steal_policy policy;
	atomic_bool stop;
	atomic_long retakes;
	long *wait_ns, nwait, cap;
};

static void busy_ns(long ns)
{
	long long end = sched_clock_ns() + ns;

	while (sched_clock_ns() < end)
		;
}

static void *reader(void *arg)
{
	struct run *r = arg;

	pin_self(atomic_fetch_add(&r->next_cpu, 1));
/* region: bench-drop-retake */
	down_read(&r->sem);
	for (long item = 1; !atomic_load_explicit(&r->stop, memory_order_relaxed); item++) {
		busy_ns(opt.item_ns);			/* look at one VMA */
		if (opt.drop_always ? item % opt.k != 0	/* every K items */
				    : !rwsem_is_contended(&r->sem))
			continue;			/* nobody waits */
		/* Let a waiting writer in: drop and re-take the lock. */
		up_read(&r->sem);
		if (r->policy == RWSEM_NOSTEAL)
			down_read_nosteal(&r->sem);
		else
			down_read(&r->sem);	/* lock policy: STEAL or WRITER_FIRST */
		atomic_fetch_add_explicit(&r->retakes, 1, memory_order_relaxed);
	}
	up_read(&r->sem);
/* endregion: bench-drop-retake */
	return NULL;
}

static void *writer(void *arg)
{
	struct run *r = arg;
	struct timespec gap = { opt.gap_us / 1000000, (opt.gap_us % 1000000) * 1000 };

	pin_self(sysconf(_SC_NPROCESSORS_ONLN) - 1);	/* away from reader 0 */
	while (!atomic_load(&r->stop)) {
		long long t0, t1;

		if (opt.gap_us)
			nanosleep(&gap, NULL);
		t0 = sched_clock_ns();
		down_write(&r->sem);
		t1 = sched_clock_ns();
		up_write(&r->sem);
		if (r->nwait < r->cap)
			r->wait_ns[r->nwait++] = t1 - t0;
	}
	return NULL;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* One policy, one run: the row's columns (waits in us, -1 without writes). */
enum { C_WRITES, C_P50, C_P99, C_MAX, C_STEAL, C_NOSTEAL, C_HANDOFF, C_SLEEP, C_RETAKES, NCOL };

static void one_run(enum rwsem_steal_policy policy, double col[NCOL])
{
	struct run r = { .policy = policy, .cap = 1000000 };
	pthread_t rd[8], wr;
	struct timespec dur = { opt.duration_ms / 1000, (opt.duration_ms % 1000) * 1000000 };
	double t0, secs;

	r.wait_ns = malloc(r.cap * sizeof(long));
	if (!r.wait_ns) {
		perror("malloc");
		exit(1);
	}
	init_rwsem(&r.sem);
	/* NOSTEAL changes only the re-take call, as the series does. */
	rwsem_set_policy(&r.sem, policy == RWSEM_WRITER_FIRST ? RWSEM_WRITER_FIRST
							     : RWSEM_STEAL);
	rwsem_set_wait_timeout_ns(&r.sem, opt.timeout_us * 1000LL);
	t0 = now_s();
	for (long i = 0; i < opt.readers; i++)
		pthread_create(&rd[i], NULL, reader, &r);
	pthread_create(&wr, NULL, writer, &r);
	nanosleep(&dur, NULL);
	atomic_store(&r.stop, true);
	pthread_join(wr, NULL);
	for (long i = 0; i < opt.readers; i++)
		pthread_join(rd[i], NULL);
	secs = now_s() - t0;

	qsort(r.wait_ns, r.nwait, sizeof(long), cmp_long);
	col[C_WRITES] = r.nwait;
	col[C_P50] = r.nwait ? r.wait_ns[r.nwait / 2] / 1e3 : -1;
	col[C_P99] = r.nwait ? r.wait_ns[(r.nwait * 99) / 100] / 1e3 : -1;
	col[C_MAX] = r.nwait ? r.wait_ns[r.nwait - 1] / 1e3 : -1;
	col[C_STEAL] = rwsem_event(&r.sem, LOCKEVENT_rwsem_rlock_steal);
	col[C_NOSTEAL] = rwsem_event(&r.sem, LOCKEVENT_rwsem_rlock_nosteal);
	col[C_HANDOFF] = rwsem_event(&r.sem, LOCKEVENT_rwsem_wlock_handoff);
	col[C_SLEEP] = rwsem_event(&r.sem, LOCKEVENT_rwsem_sleep_writer);
	col[C_RETAKES] = atomic_load(&r.retakes) / secs;
	rwsem_destroy(&r.sem);
	free(r.wait_ns);
}

static const char *const col_name[NCOL] = {
	"writes", "p50_us", "p99_us", "max_us", "rlock_steal", "rlock_nosteal",
	"wlock_handoff", "sleep_writer", "retakes/s",
};
static const int col_width[NCOL] = { 7, 9, 9, 9, 12, 14, 14, 13, 11 };
static const int col_decimals[NCOL] = { 0, 1, 1, 1, 0, 0, 0, 0, 0 };

static void print_row(enum rwsem_steal_policy policy, int run, const double col[NCOL])
{
	printf("%-13s %3d", rwsem_policy_name(policy), run);
	for (int c = 0; c < NCOL; c++)
		if (col[c] < 0)
			printf(" %*s", col_width[c], "-");
		else
			printf(" %*.*f", col_width[c], col_decimals[c], col[c]);
	printf("\n");
}

/*
 * Per policy, median [min-max] over the runs of the columns that carry the
 * result: the writer's wait and the counters that say why. A run without a
 * single write has no waits: it is left out of their medians.
 */
static const int summary_col[] = { C_WRITES, C_P50, C_P99, C_STEAL, C_NOSTEAL, C_HANDOFF };
#define NSUMMARY ((int)(sizeof(summary_col) / sizeof(summary_col[0])))

static void print_summary(double col[NPOLICY][MAX_RUNS][NCOL])
{
	char cell[NPOLICY][NSUMMARY][80];
	int width[NSUMMARY];

	for (int i = 0; i < NSUMMARY; i++) {
		int c = summary_col[i];

		width[i] = strlen(col_name[c]);
		for (int p = 0; p < NPOLICY; p++) {
			double v[MAX_RUNS];
			int n = 0;

			for (int run = 0; run < opt.runs; run++)
				if (col[p][run][c] >= 0)
					v[n++] = col[p][run][c];
			if (n)
				spread(cell[p][i], sizeof(cell[p][i]), v, n, col_decimals[c]);
			else
				strcpy(cell[p][i], "-");
			if ((int)strlen(cell[p][i]) > width[i])
				width[i] = strlen(cell[p][i]);
		}
	}
	printf("# (b) median [min-max] over %ld runs", opt.runs);
	for (int p = 0, nowrite = 0; p < NPOLICY && !nowrite; p++)
		for (int run = 0; run < opt.runs && !nowrite; run++)
			if (col[p][run][C_WRITES] == 0 && (nowrite = 1))
				printf("; a run without a write (the writer never got the lock or"
				       " a CPU) has no waits to count");
	printf("\n%-13s", "summary");
	for (int i = 0; i < NSUMMARY; i++)
		printf(" %*s", width[i], col_name[summary_col[i]]);
	printf("\n");
	for (int p = 0; p < NPOLICY; p++) {
		printf("%-13s", rwsem_policy_name(RWSEM_STEAL + p));
		for (int i = 0; i < NSUMMARY; i++)
			printf(" %*s", width[i], cell[p][i]);
		printf("\n");
	}
}

static void bench_policies(void)
{
	static double col[NPOLICY][MAX_RUNS][NCOL];

	if (opt.drop_always)
		printf("# (b) writer wait: %ld reader(s) drop+re-take every %ld items of %ld ns;\n",
		       opt.readers, opt.k, opt.item_ns);
	else
		printf("# (b) writer wait: %ld reader(s) drop+re-take after an item of %ld ns"
		       " when contended;\n", opt.readers, opt.item_ns);
	printf("#     writer every %ld us; handoff timeout %ld us; %ld runs of %ld ms per policy,"
	       " policies interleaved; pinning %s\n", opt.gap_us, opt.timeout_us, opt.runs,
	       opt.duration_ms, opt.pin ? "on" : "off");
	printf("%-13s %3s", "policy", "run");
	for (int c = 0; c < NCOL; c++)
		printf(" %*s", col_width[c], col_name[c]);
	printf("\n");
	for (int run = 0; run < opt.runs; run++)
		for (int i = 0; i < NPOLICY; i++) {	/* ABC, BCA, CAB, ABC, ... */
			int p = (run + i) % NPOLICY;

			one_run(RWSEM_STEAL + p, col[p][run]);
			print_row(RWSEM_STEAL + p, run + 1, col[p][run]);
		}
	printf("\n");
	print_summary(col);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iters", required_argument, NULL, 'i' },
		{ "k", required_argument, NULL, 'k' },
		{ "drop", required_argument, NULL, 'D' },
		{ "item-ns", required_argument, NULL, 'n' },
		{ "readers", required_argument, NULL, 'r' },
		{ "writer-gap-us", required_argument, NULL, 'g' },
		{ "timeout-us", required_argument, NULL, 't' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "pin", required_argument, NULL, 'p' },
		{ "runs", required_argument, NULL, 'R' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, bad = 0, quick = 0;
	bool given[128] = { false };	/* options set on the command line */
	char who[96];

	while (!bad && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': bad = bench_parse_long(optarg, 1000, 1000000000, &opt.iters); break;
		case 'k': bad = bench_parse_long(optarg, 1, 1000000, &opt.k); break;
		case 'D':
			bad = strcmp(optarg, "always") && strcmp(optarg, "contended") ? -1 : 0;
			opt.drop_always = !strcmp(optarg, "always");
			break;
		case 'n': bad = bench_parse_long(optarg, 0, 1000000, &opt.item_ns); break;
		case 'r': bad = bench_parse_long(optarg, 1, 8, &opt.readers); break;
		case 'g': bad = bench_parse_long(optarg, 0, 1000000, &opt.gap_us); break;
		case 't': bad = bench_parse_long(optarg, 0, 1000000, &opt.timeout_us); break;
		case 'd': bad = bench_parse_long(optarg, 10, 600000, &opt.duration_ms); break;
		case 'p': bad = bench_parse_long(optarg, 0, 1, &opt.pin); break;
		case 'R': bad = bench_parse_long(optarg, 1, MAX_RUNS, &opt.runs); break;
		case 'q': quick = 1; break;
		case 'h': usage(stdout); return 0;
		default: bad = 1;
		}
		if (bad && c != '?')
			fprintf(stderr, "bench_rwsem: bad value '%s' for --%s\n",
				optarg, opts[strchr("ikDnrgtdpRqh", c) - "ikDnrgtdpRqh"].name);
		if (c > 0 && c < 128)
			given[c] = true;
	}
	if (!bad && optind != argc) {
		fprintf(stderr, "bench_rwsem: unexpected argument '%s'\n", argv[optind]);
		bad = 1;
	}
	if (bad) {
		usage(stderr);
		return 2;
	}
	if (quick) {	/* a smoke test's settings, where none were given */
		opt.runs = given['R'] ? opt.runs : 3;
		opt.iters = given['i'] ? opt.iters : 1000000;
		opt.duration_ms = given['d'] ? opt.duration_ms : 70;
	}

	snprintf(who, sizeof(who), "%ld reader(s) and the writer; --pin cannot keep them apart",
		 opt.readers);
	bench_print_host("# ", opt.readers + 1, who);
	bench_uncontended();
	bench_policies();
	return 0;
}
