/* Guest experiment "deferred-split": split_queue_lock taken per partial THP unmap, with 6.12's early check (knob 1) and without it (0). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "deferred_split/report.h"
#include "deferred_split/workload.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define EXP DS_EXP
#define KNOB MG_KNOBS "/deferred_split_early_check"
#define CNT_PU MG_KNOBS "/deferred_split_partial_unmaps"
#define CNT_LOCK MG_KNOBS "/deferred_split_lock_taken"
#define DROP_CACHES "/proc/sys/vm/drop_caches"
#define MAX_THREADS 256

struct ds_opts opt = { 0, 4, 16, 1000, 5, 0, 300, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: deferred_split [--quick] [--threads N] [--thps T] [--hits K] [--ms M]\n"
		"                      [--reps R] [--stress S] [--timeout T]\n"
		"\n"
		"Experiment \"deferred-split\" (needs the patched mmlocks 6.12 kernel, patch 0010).\n"
		"Threads each loop over: map T THPs (2 MiB aligned, MADV_HUGEPAGE), fault them\n"
		"in, MADV_DONTNEED K non-PMD-aligned sub-ranges of each THP (the first makes\n"
		"the THP partially mapped and queues it for deferred split; the others hit it\n"
		"while it is queued, as ld.lld's unaligned madvise() calls did), munmap.\n"
		"Each cell runs M ms with deferred_split_early_check 1 (6.12 as shipped) or\n"
		"0 (take split_queue_lock for every partial unmap), with 1 thread (baseline),\n"
		"N and 2N threads; the two positions alternate (ABAB) over R repetitions.\n"
		"Reported per cell: the knob's counters (lock acquisitions per partial unmap),\n"
		"system time (getrusage), ops/s, THP counters of /proc/vmstat.\n"
		"No THP allocated -> an error record \"not measured\" and exit 1.\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --threads N   threads per vCPU-sized cell (0..%d, default 0 = one per vCPU)\n"
		"  --thps T      THPs per thread and cycle (1..64, default 4)\n"
		"  --hits K      partial unmaps per THP and cycle (2..%d, default 16)\n"
		"  --ms M        length of one cell, ms (50..60000, default 1000; quick 300)\n"
		"  --reps R      repetitions of every cell (1..%d, default 5; quick 1)\n"
		"  --stress S    instead: S seconds of 2N threads racing the shrinker\n"
		"                (drop_caches) while the knob flips; for debug kernels\n"
		"                (0..3600, default 0 = measure)\n"
		"  --timeout T   bound on the whole program, s (10..7200, default 300; quick 60)\n"
		"  --quick       small, fast settings (< 25 s under TCG)\n"
		"  --help        this text\n"
		"\n"
		"Output: JSON lines on stdout (info, one sample per cell, summary; or stress).\n"
		"Exit: 0 ok, 1 failed or not measured, 2 usage, 3 wrong kernel (knobs missing).\n",
		MAX_THREADS, DS_MAX_HITS, MAX_REPS);
}

/* ---- one cell: W threads cycling for opt.ms ------------------------------ */

static volatile int stop;
static pthread_barrier_t start_line;
static long long done_partials, done_cycles;
static int worker_err;

static void *worker(void *arg)
{
	long long p = 0, c = 0;

	(void)arg;
	pthread_barrier_wait(&start_line);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !mg_stop_signal) {
		long n = ds_cycle((size_t)opt.thps, (unsigned)opt.hits, NULL);

		if (n < 0) {
			__atomic_store_n(&worker_err, (int)-n, __ATOMIC_RELAXED);
			break;
		}
		p += n;
		c++;
	}
	__atomic_fetch_add(&done_partials, p, __ATOMIC_RELAXED);
	__atomic_fetch_add(&done_cycles, c, __ATOMIC_RELAXED);
	return NULL;
}

/* Start nthreads workers, run them for ms (or until a stop signal), join them. */
static bool run_workers(int nthreads, long long ms, void (*during)(long long ms))
{
	pthread_t t[MAX_THREADS];
	int started = 0;

	stop = 0;
	done_partials = done_cycles = 0;
	worker_err = 0;
	if (pthread_barrier_init(&start_line, NULL, (unsigned)nthreads + 1))
		return false;
	for (; started < nthreads; started++)
		if (pthread_create(&t[started], NULL, worker, NULL))
			break;
	if (started < nthreads) {
		/* The barrier would never open: the program cannot go on. */
		mg_error(EXP, "cannot start thread %d of %d", started + 1, nthreads);
		exit(MG_EXIT_FAIL);
	}
	pthread_barrier_wait(&start_line);
	during(ms);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start_line);
	if (worker_err)
		mg_error(EXP, "madvise/mmap in a worker: %s", strerror(worker_err));
	return !worker_err;
}

static void wait_ms(long long ms)
{
	uint64_t end = mg_now_ns() + (uint64_t)ms * 1000000ull;

	while (!mg_stop_signal && mg_now_ns() < end)
		mg_sleep_us(10000);
}

static double rusage_s(int who, bool sys)
{
	struct rusage ru;
	struct timeval tv;

	getrusage(who, &ru);
	tv = sys ? ru.ru_stime : ru.ru_utime;
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static long long knob_ll(const char *path)
{
	long long v = -1;

	mg_read_ll(path, &v);
	return v;
}

/* region: one-cell */
static bool measure(int pos, int threads, struct ds_cell *c)
{
	long long v0[DS_VM_NR], v1[DS_VM_NR];
	double s0;
	uint64_t t0;

	memset(c, 0, sizeof(*c));
	c->pos = pos;
	c->threads = threads;
	if (mg_knob_set_ll(KNOB, pos) || mg_write_file(CNT_PU, "0") || mg_write_file(CNT_LOCK, "0") ||
	    !ds_vm_read(v0)) {
		mg_error(EXP, "cannot set %s or reset its counters", KNOB);
		return false;
	}
	s0 = rusage_s(RUSAGE_SELF, true);
	t0 = mg_now_ns();
	if (!run_workers(threads, opt.ms, wait_ms))
		return false;
	c->seconds = (double)(mg_now_ns() - t0) / 1e9;
	c->sys_s = rusage_s(RUSAGE_SELF, true) - s0;
	c->pu = knob_ll(CNT_PU);
	c->lock = knob_ll(CNT_LOCK);
	if (!ds_vm_read(v1) || c->pu < 0 || c->lock < 0) {
		mg_error(EXP, "cannot read the counters");
		return false;
	}
	for (int i = 0; i < DS_VM_NR; i++)
		c->vm[i] = v0[i] < 0 || v1[i] < 0 ? -1 : v1[i] - v0[i];
	c->partial_calls = done_partials;
	c->cycles = done_cycles;
	c->lock_per_pu = c->pu ? (double)c->lock / (double)c->pu : -1;
	c->sys_us_per_pu = c->pu ? c->sys_s * 1e6 / (double)c->pu : -1;
	c->ops_per_s = (double)c->partial_calls / c->seconds;
	return true;
}
/* endregion: one-cell */

/* THP must work: one cycle's faults must raise AnonHugePages and thp_fault_alloc. */
static bool thp_works(void)
{
	long long v0[DS_VM_NR], v1[DS_VM_NR], kb = -1;
	bool ok = ds_vm_read(v0) && ds_cycle(1, 2, &kb) >= 0 && ds_vm_read(v1);

	if (ok && kb > 0 && v1[DS_THP_FAULT_ALLOC] > v0[DS_THP_FAULT_ALLOC])
		return true;
	mg_error(EXP, "not measured: no THP (AnonHugePages %lld kB, thp_fault_alloc +%lld after a "
		 "2 MiB-aligned MADV_HUGEPAGE fault)",
		 kb, ok ? v1[DS_THP_FAULT_ALLOC] - v0[DS_THP_FAULT_ALLOC] : -1);
	return false;
}

/* ---- --stress: partial unmaps racing the shrinker while the knob flips ---- */

static long long flips, drops, drop_fail;

/*
 * The main thread's part of a stress run: flip the knob every 5 ms and, every
 * 25 ms, write 2 to drop_caches: drop_slab() runs every shrinker, among them
 * thp-deferred_split (deferred_split_scan() splits the partially mapped
 * folios it finds queued). The sysctl takes 1..4; stress() writes 4 once
 * first, which only stops the kernel from logging each write.
 */
static void stress_during(long long ms)
{
	uint64_t end = mg_now_ns() + (uint64_t)ms * 1000000ull;

	for (int i = 0; !mg_stop_signal && mg_now_ns() < end; i++) {
		if (!mg_knob_set_ll(KNOB, (i + 1) % 2))
			flips++;
		if (i % 5 == 0 && mg_write_file(DROP_CACHES, "2"))
			drop_fail++;
		else if (i % 5 == 0)
			drops++;
		mg_sleep_us(5000);
	}
}

static bool stress(int threads)
{
	long long v0[DS_VM_NR], v1[DS_VM_NR], pu, lock;
	struct mg_json j;
	bool ok;

	if (mg_write_file(DROP_CACHES, "4") || mg_write_file(CNT_PU, "0") ||
	    mg_write_file(CNT_LOCK, "0") || !ds_vm_read(v0)) {
		mg_error(EXP, "cannot write %s or reset the counters", DROP_CACHES);
		return false;
	}
	ok = run_workers(threads, opt.stress * 1000, stress_during) && ds_vm_read(v1);
	pu = knob_ll(CNT_PU);
	lock = knob_ll(CNT_LOCK);
	mgj_start(&j, "stress", EXP);
	mgj_int(&j, "threads", threads);
	mgj_int(&j, "seconds", opt.stress);
	mgj_int(&j, "knob_flips", flips);
	mgj_int(&j, "drop_caches", drops);
	mgj_int(&j, "drop_caches_failed", drop_fail);
	mgj_int(&j, "cycles", done_cycles);
	mgj_int(&j, "deferred_split_partial_unmaps", pu);
	mgj_int(&j, "deferred_split_lock_taken", lock);
	for (int i = 0; i < DS_VM_NR; i++)
		mgj_int(&j, ds_vm_names[i], ok ? v1[i] - v0[i] : -1);
	/* The shrinker must have split something, or the race was not exercised. */
	ok = ok && flips > 0 && drops > 0 && pu > 0 && v1[DS_THP_SPLIT_PAGE] > v0[DS_THP_SPLIT_PAGE];
	mgj_bool(&j, "exercised", ok);
	mgj_emit(&j);
	if (!ok)
		mg_error(EXP, "stress: the shrinker split nothing, or the knob did not flip");
	return ok;
}

/* SIGALRM (the --timeout bound) takes the SIGTERM path: knobs restored, exit. */
static void on_alarm(int sig)
{
	(void)sig;
	kill(getpid(), SIGTERM);
}

int main(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("threads", &opt.threads, 0, MAX_THREADS, MG_NO_QUICK),
		MG_INT("thps", &opt.thps, 1, 64, MG_NO_QUICK),
		MG_INT("hits", &opt.hits, 2, DS_MAX_HITS, MG_NO_QUICK),
		MG_INT("ms", &opt.ms, 50, 60000, 300),
		MG_INT("reps", &opt.reps, 1, MAX_REPS, 1),
		MG_INT("stress", &opt.stress, 0, 3600, MG_NO_QUICK),
		MG_INT("timeout", &opt.timeout, 10, 7200, 60),
		MG_OPTS_END,
	};
	static const char *const need[] = { KNOB, CNT_PU, CNT_LOCK, NULL };
	static struct ds_cell cells[MAX_REPS][NSIZES][2];
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);
	int sizes[NSIZES];

	opt.quick = mg_parse_opts("deferred_split", argc, argv, o, usage);
	mg_require(EXP, need);
	mg_install_restore();
	signal(SIGALRM, on_alarm);
	alarm((unsigned)opt.timeout);
	if (nproc < 1)
		nproc = 1;
	sizes[0] = 1;
	sizes[1] = opt.threads ? (int)opt.threads : (int)(nproc < MAX_THREADS ? nproc : MAX_THREADS);
	sizes[2] = sizes[1] * 2 <= MAX_THREADS ? sizes[1] * 2 : MAX_THREADS;

	ds_info_record(nproc, sizes);
	if (!mg_exists(MG_THP "/enabled") || mg_knob_set(MG_THP "/enabled", "madvise")) {
		mg_error(EXP, "not measured: no THP (%s missing or not writable)", MG_THP "/enabled");
		return MG_EXIT_FAIL;
	}
	if (!thp_works())
		return MG_EXIT_FAIL;
	if (opt.stress) {
		bool ok = stress(sizes[2]);

		mg_restore_all();
		return ok && !mg_stop_signal ? MG_EXIT_OK : MG_EXIT_FAIL;
	}

	/* region: run-loop */
	for (int rep = 0; rep < opt.reps && !mg_stop_signal; rep++) {
		for (int s = 0; s < NSIZES; s++) {
			for (int k = 0; k < 2; k++) {
				int pos = (rep + s + k) % 2; /* ABAB: the order alternates */
				struct ds_cell *c = &cells[rep][s][pos];

				mg_log("rep %d, %d thread(s), early check %d", rep + 1, sizes[s], pos);
				if (!measure(pos, sizes[s], c))
					return MG_EXIT_FAIL;
				ds_emit_cell(rep, c);
				if (c->vm[DS_THP_FAULT_ALLOC] <= 0) {
					mg_error(EXP, "not measured: no THP was allocated in a cell "
						 "(thp_fault_alloc +%lld, thp_fault_fallback +%lld)",
						 c->vm[DS_THP_FAULT_ALLOC], c->vm[DS_THP_FAULT_FALLBACK]);
					return MG_EXIT_FAIL;
				}
			}
		}
	}
	/* endregion: run-loop */
	mg_restore_all();
	if (mg_stop_signal)
		return MG_EXIT_FAIL;
	ds_summary_records(cells, opt.reps, sizes);
	return MG_EXIT_OK;
}
