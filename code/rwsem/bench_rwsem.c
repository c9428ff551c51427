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

static struct {
	long iters, k, item_ns, duration_ms, readers, gap_us, timeout_us, pin;
	int drop_always;
} opt = { 10000000, 64, 1000, 1000, 1, 500, 4000, 1, 0 };

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
"  --iters N        (a) iterations, 1000..1000000000 (default 10000000)\n"
"  --drop MODE      (b) contended (default) or always\n"
"  --k N            (b) with --drop always: items between drops, 1..1000000 (default 64)\n"
"  --item-ns N      (b) busy work per item in ns, 0..1000000 (default 1000)\n"
"  --readers N      (b) reader threads, 1..8 (default 1)\n"
"  --writer-gap-us N (b) writer pause between attempts, 0..1000000 (default 500)\n"
"  --timeout-us N   (b) handoff timeout (RWSEM_WAIT_TIMEOUT), 0..1000000 (default 4000)\n"
"  --duration-ms N  (b) run time per policy, 10..600000 (default 1000)\n"
"  --pin N          (b) 1: readers and writer on different CPUs (default), 0: no pinning\n"
"  --quick          --iters 1000000 --duration-ms 200\n"
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

static void bench_uncontended(void)
{
	struct rw_semaphore sem;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	double t0, ours, glibc;

	init_rwsem(&sem);
	down_read(&sem);	/* warm up: allocates this thread's task */
	up_read(&sem);
	t0 = now_s();
	for (long i = 0; i < opt.iters; i++) {
		down_read(&sem);
		up_read(&sem);
	}
	ours = (now_s() - t0) * 1e9 / opt.iters;
	t0 = now_s();
	for (long i = 0; i < opt.iters; i++) {
		pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	glibc = (now_s() - t0) * 1e9 / opt.iters;
	printf("# (a) uncontended read lock+unlock, %ld iterations, one thread\n",
	       opt.iters);
	printf("%-32s %8.1f ns/op\n", "rwsem down_read+up_read", ours);
	printf("%-32s %8.1f ns/op\n", "pthread_rwlock rdlock+unlock", glibc);
	printf("%-32s %8.2f\n\n", "ratio rwsem/pthread", ours / glibc);
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

static void run_policy(enum rwsem_steal_policy policy)
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
	if (r.nwait == 0) {
		printf("%-13s %7d %9s %9s %9s", rwsem_policy_name(policy), 0,
		       "-", "-", "-");
	} else {
		printf("%-13s %7ld %9.1f %9.1f %9.1f", rwsem_policy_name(policy),
		       r.nwait, r.wait_ns[r.nwait / 2] / 1e3,
		       r.wait_ns[(r.nwait * 99) / 100] / 1e3,
		       r.wait_ns[r.nwait - 1] / 1e3);
	}
	printf(" %12ld %14ld %14ld %13ld %11.0f\n",
	       rwsem_event(&r.sem, LOCKEVENT_rwsem_rlock_steal),
	       rwsem_event(&r.sem, LOCKEVENT_rwsem_rlock_nosteal),
	       rwsem_event(&r.sem, LOCKEVENT_rwsem_wlock_handoff),
	       rwsem_event(&r.sem, LOCKEVENT_rwsem_sleep_writer),
	       atomic_load(&r.retakes) / secs);
	rwsem_destroy(&r.sem);
	free(r.wait_ns);
}

static int parse(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/*
 * Other work on the host widens every latency below, and more threads than
 * CPUs turns waits into descheduling: say so before the numbers, so a
 * reader does not compare a busy run with a quiet one.
 */
static void warn_if_loaded(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double load = 0;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = 0;
		fclose(f);
	}
	printf("# %ld CPUs, load average %.2f%s\n", ncpu, load,
	       load > ncpu * 0.5 ? ": WARNING, a busy host; expect a wide spread" : "");
	if (opt.readers + 1 > ncpu)
		printf("# %ld reader(s) and a writer on %ld CPUs: threads share CPUs, so"
		       " waits include being descheduled (--pin cannot separate them)\n",
		       opt.readers, ncpu);
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
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, bad = 0, quick = 0;

	while (!bad && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': bad = parse(optarg, 1000, 1000000000, &opt.iters); break;
		case 'k': bad = parse(optarg, 1, 1000000, &opt.k); break;
		case 'D':
			bad = strcmp(optarg, "always") && strcmp(optarg, "contended") ? -1 : 0;
			opt.drop_always = !strcmp(optarg, "always");
			break;
		case 'n': bad = parse(optarg, 0, 1000000, &opt.item_ns); break;
		case 'r': bad = parse(optarg, 1, 8, &opt.readers); break;
		case 'g': bad = parse(optarg, 0, 1000000, &opt.gap_us); break;
		case 't': bad = parse(optarg, 0, 1000000, &opt.timeout_us); break;
		case 'd': bad = parse(optarg, 10, 600000, &opt.duration_ms); break;
		case 'p': bad = parse(optarg, 0, 1, &opt.pin); break;
		case 'q': quick = 1; break;
		case 'h': usage(stdout); return 0;
		default: bad = 1;
		}
		if (bad && c != '?')
			fprintf(stderr, "bench_rwsem: bad value '%s' for --%s\n",
				optarg, opts[strchr("ikDnrgtdpqh", c) - "ikDnrgtdpqh"].name);
	}
	if (!bad && optind != argc) {
		fprintf(stderr, "bench_rwsem: unexpected argument '%s'\n", argv[optind]);
		bad = 1;
	}
	if (bad) {
		usage(stderr);
		return 2;
	}
	if (quick) {
		opt.iters = 1000000;
		opt.duration_ms = 200;
	}

	warn_if_loaded();
	bench_uncontended();
	if (opt.drop_always)
		printf("# (b) writer wait: %ld reader(s) drop+re-take every %ld items of %ld ns;\n",
		       opt.readers, opt.k, opt.item_ns);
	else
		printf("# (b) writer wait: %ld reader(s) drop+re-take after an item of %ld ns"
		       " when contended;\n", opt.readers, opt.item_ns);
	printf("#     writer every %ld us; handoff timeout %ld us; %ld ms per policy;"
	       " pinning %s\n", opt.gap_us, opt.timeout_us, opt.duration_ms,
	       opt.pin ? "on" : "off");
	printf("%-13s %7s %9s %9s %9s %12s %14s %14s %13s %11s\n", "policy", "writes",
	       "p50_us", "p99_us", "max_us", "rlock_steal", "rlock_nosteal",
	       "wlock_handoff", "sleep_writer", "retakes/s");
	for (int p = RWSEM_STEAL; p <= RWSEM_WRITER_FIRST; p++)
		run_policy(p);
	return 0;
}
