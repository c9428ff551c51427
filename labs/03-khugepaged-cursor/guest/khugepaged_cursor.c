/* Guest experiment "khugepaged-cursor": time until khugepaged collapses a region behind many small VMAs under mmap_lock contention, cursor 0 vs 1, over a sweep of writer pauses. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "khugepaged_cursor/report.h"
#include "khugepaged_cursor/trylocks.h"

#include <errno.h>
#include <math.h> /* NAN: a macro, no libm needed */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP "khugepaged-cursor"
#define SMALL_BASE 0x100000000ul
#define PMD_SIZE (2ul << 20)
#define MAX_PAUSES 8
#define RUNS_DEFAULT 3
#define TIMEOUT_DEFAULT 12
#define DEFAULT_PAUSES "50,0"
#define QUICK_PAUSES "50"

static struct {
	long long vmas, region_mb, writers, runs, sleep_ms, timeout, skip_batch;
	long long pause[MAX_PAUSES];
	int npause;
	const char *pauses;
	bool quick;
} opt = { 10000, 16, 2, RUNS_DEFAULT, 100, TIMEOUT_DEFAULT, 0, { 0 }, 0, NULL, false };

/* The writers' pause of the run under way (the child reads it after fork). */
static long long pause_us;

/* What a run's child process reports back through a pipe. */
struct result {
	double seconds;
	int completed;
	long long anon_huge_kb, collapsed, full_scans, writer_calls;
};

/* khugepaged's trylocks, counted by the trace reader (khugepaged_cursor/trylocks.c). */
static struct trylocks T;
static pthread_mutex_t tl_lock = PTHREAD_MUTEX_INITIALIZER;

static void trace_line(void *arg, const char *line)
{
	(void)arg;
	pthread_mutex_lock(&tl_lock);
	trylocks_line(&T, line);
	pthread_mutex_unlock(&tl_lock);
}

static struct mg_trace_pipe tpipe = { trace_line, NULL, 0 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: khugepaged_cursor [--quick] [--runs N] [--vmas N] [--region-mb M] [--writers W]\n"
		"                         [--writer-pause-us U[,U...]] [--sleep-ms S] [--timeout T]\n"
		"                         [--skip-batch B]\n"
		"\n"
		"Experiment \"khugepaged-cursor\" (needs the patched mmlocks 6.12 kernel).\n"
		"Each run forks a fresh process that maps N one-page VMAs khugepaged must skip,\n"
		"then above them an M MiB region faulted in 4 KiB pages, starts W threads doing\n"
		"mmap+munmap (mmap_write_lock) so khugepaged's mmap_read_trylock() fails often,\n"
		"and times from MADV_HUGEPAGE until khugepaged has collapsed every 2 MiB of the\n"
		"region (khugepaged/pages_collapsed), with khugepaged_per_slot_cursor 0 (stock:\n"
		"the scan restarts at address 0 after a failed trylock) and 1, alternating.\n"
		"With several writer pauses it walks them in the order given, N runs of each\n"
		"setting per pause; the first is the main one, whose ratio has the goal\n"
		"(>= 1.5x). It traces khugepaged's mmap_lock events to count its\n"
		"mmap_read_trylock() attempts and failures in each run (the failure rate).\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --runs N             runs per setting and pause (1..%d, default %d; quick 1)\n"
		"  --vmas N             ineligible VMAs (100..1000000, default 10000)\n"
		"  --region-mb M        collapsible region, MiB, even (2..512, default 16)\n"
		"  --writers W          mmap/munmap threads (0..8, default 2)\n"
		"  --writer-pause-us U[,U...]  busy-wait between their calls, up to %d values\n"
		"                       (0..1000000 each, default %s; quick %s)\n"
		"  --sleep-ms S         khugepaged/scan_sleep_millisecs during runs (0..60000, default 100)\n"
		"  --timeout T          bound on one run, seconds (1..3600, default %d; quick 8)\n"
		"  --skip-batch B       khugepaged_skip_batch during runs (0..1000000, default 0 = patch 2 alone)\n"
		"  --quick              small, fast settings (< 30 s under TCG)\n"
		"  --help               this text\n"
		"\n"
		"Output: JSON lines on stdout (info, one sample per run, a table row and two\n"
		"summaries per pause: time to full collapse, trylock failure rate).\n"
		"Exit: 0 ok, 1 run failed, 2 usage, 3 wrong kernel (knobs missing).\n",
		MAX_RUNS, RUNS_DEFAULT, MAX_PAUSES, DEFAULT_PAUSES, QUICK_PAUSES, TIMEOUT_DEFAULT);
}

static void parse_args(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("runs", &opt.runs, 1, MAX_RUNS, 1),
		MG_INT("vmas", &opt.vmas, 100, 1000000, MG_NO_QUICK),
		MG_EVEN("region-mb", &opt.region_mb, 2, 512, MG_NO_QUICK),
		MG_INT("writers", &opt.writers, 0, 8, MG_NO_QUICK),
		MG_STR("writer-pause-us", &opt.pauses),
		MG_INT("sleep-ms", &opt.sleep_ms, 0, 60000, MG_NO_QUICK),
		MG_INT("timeout", &opt.timeout, 1, 3600, 8),
		MG_INT("skip-batch", &opt.skip_batch, 0, 1000000, MG_NO_QUICK),
		MG_OPTS_END,
	};

	opt.quick = mg_parse_opts("khugepaged_cursor", argc, argv, o, usage);
	if (!opt.pauses)
		opt.pauses = opt.quick ? QUICK_PAUSES : DEFAULT_PAUSES;
	opt.npause = mg_parse_ll_list(opt.pauses, 0, 1000000, opt.pause, MAX_PAUSES);
	if (opt.npause < 1) {
		fprintf(stderr, "khugepaged_cursor: --writer-pause-us: expected up to %d integers in "
			"0..1000000 separated by commas, got '%s'\n", MAX_PAUSES, opt.pauses);
		usage(stderr);
		exit(MG_EXIT_USAGE);
	}
}

static long long khp(const char *name)
{
	char path[160];
	long long v = -1;

	snprintf(path, sizeof(path), MG_KHUGEPAGED "/%s", name);
	mg_read_ll(path, &v);
	return v;
}

/* ---- the child: one fresh mm per run ---------------------------------- */

static int writers_stop;
static long long writer_calls;

/* region: contention-writer */
static void *writer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&writers_stop, __ATOMIC_ACQUIRE)) {
		/* Each call takes mmap_write_lock: khugepaged's trylock fails meanwhile. */
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t until;

		if (m != MAP_FAILED)
			munmap(m, 4096);
		__atomic_fetch_add(&writer_calls, 1, __ATOMIC_RELAXED);
		/*
		 * The pause is spent on the CPU, outside the lock. A sleep, even
		 * of 1 us, gives the vCPU away (under TCG for far longer than
		 * asked) and khugepaged in: the failure rate drops at once.
		 */
		for (until = mg_now_ns() + (uint64_t)pause_us * 1000; pause_us && mg_now_ns() < until;)
			;
	}
	return NULL;
}
/* endregion: contention-writer */

/* region: one-run */
static void run_child(int fd, int id)
{
	char mark[64];
	size_t region = (size_t)opt.region_mb << 20;
	long long npmd = (long long)(region / PMD_SIZE), c0, f0;
	uintptr_t raddr = (SMALL_BASE + (uintptr_t)opt.vmas * 4096 + 2 * PMD_SIZE) & ~(PMD_SIZE - 1);
	struct result res = { 0 };
	pthread_t wt[8];
	uint64_t t0, deadline;
	char *r;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))
		_exit(10);
	r = mmap((void *)raddr, region, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (r == MAP_FAILED || (uintptr_t)r != raddr)
		_exit(11);
	for (size_t off = 0; off < region; off += 4096)
		r[off] = 1;
	if (mg_count_vmas(SMALL_BASE, raddr, NULL) != opt.vmas)
		_exit(12);
	for (int i = 0; i < opt.writers; i++)
		pthread_create(&wt[i], NULL, writer, NULL);
	/* Bounded wait until the writers are running before the clock starts. */
	deadline = mg_now_ns() + 5000000000ull;
	while (opt.writers && __atomic_load_n(&writer_calls, __ATOMIC_RELAXED) < 10 * opt.writers &&
	       mg_now_ns() < deadline)
		mg_sleep_us(1000);

	c0 = khp("pages_collapsed");
	f0 = khp("full_scans");
	/* Opens this run's window in the trace (khugepaged_cursor/trylocks.c). */
	snprintf(mark, sizeof(mark), TRYLOCKS_START "%d", id);
	mg_write_file(MG_TRACING "/trace_marker", mark);
	t0 = mg_now_ns();
	/* The VMA flag change registers this mm with khugepaged (kernel-notes). */
	if (madvise(r, region, MADV_HUGEPAGE))
		_exit(13);
	deadline = t0 + (uint64_t)opt.timeout * 1000000000ull;
	while (khp("pages_collapsed") < c0 + npmd && mg_now_ns() < deadline)
		mg_sleep_us(5000);
	res.seconds = (double)(mg_now_ns() - t0) / 1e9;
	snprintf(mark, sizeof(mark), TRYLOCKS_STOP "%d", id);
	mg_write_file(MG_TRACING "/trace_marker", mark);
	res.collapsed = khp("pages_collapsed") - c0;
	res.completed = res.collapsed >= npmd;
	res.full_scans = khp("full_scans") - f0;
	__atomic_store_n(&writers_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < opt.writers; i++)
		pthread_join(wt[i], NULL);
	res.writer_calls = writer_calls;
	res.anon_huge_kb = mg_anon_huge_kb();
	if (write(fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(14);
	_exit(0);
}
/* endregion: one-run */

/* Fork a run, wait for its result with a bound; false if it failed. */
static bool one_run(struct result *res, int id)
{
	int pfd[2], status = 0;
	struct pollfd pf;
	bool ok = false;
	pid_t pid;

	if (pipe(pfd))
		return false;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		close(pfd[0]);
		run_child(pfd[1], id);
	}
	mg_register_child(pid);
	close(pfd[1]);
	pf.fd = pfd[0];
	pf.events = POLLIN;
	/* Setup of the layout and teardown take time too: allow 60 s beyond the run. */
	if (poll(&pf, 1, (int)(opt.timeout + 60) * 1000) == 1 &&
	    read(pfd[0], res, sizeof(*res)) == (ssize_t)sizeof(*res))
		ok = true;
	close(pfd[0]);
	if (!ok)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	mg_unregister_child(pid);
	if (!ok)
		mg_log("run child failed (status %#x)", status);
	return ok;
}

/*
 * The trace reader's count for run `id`, once it has read the run's stop
 * marker (bounded: false if it has not within 5 s).
 */
static bool run_trylocks(int id, struct trylocks *out)
{
	uint64_t deadline = mg_now_ns() + 5000000000ull;

	for (;;) {
		bool got;

		pthread_mutex_lock(&tl_lock);
		got = T.closed == id;
		if (got)
			*out = T;
		pthread_mutex_unlock(&tl_lock);
		if (got)
			return true;
		if (mg_stop_signal || mg_now_ns() > deadline)
			return false;
		mg_sleep_us(20000);
	}
}

static struct pause_runs R[MAX_PAUSES];

/* One run: its sample record; false if the child did not report. */
static bool measure(int p, int run, int cur, int id)
{
	struct pause_runs *r = &R[p];
	struct result res;
	struct trylocks tl;
	struct mg_json j;
	bool traced;
	long long tries;

	if (mg_knob_set_ll(MG_KNOBS "/khugepaged_per_slot_cursor", cur)) {
		mg_error(EXP, "cannot write khugepaged_per_slot_cursor");
		return false;
	}
	pause_us = r->pause_us = opt.pause[p];
	mg_log("writer pause %lld us, run %d, per-slot cursor %d", pause_us, run + 1, cur);
	if (!one_run(&res, id)) {
		mg_error(EXP, "run %d with cursor %d did not report", run + 1, cur);
		return false;
	}
	traced = run_trylocks(id, &tl);
	tries = traced ? trylocks_attempts(&tl) : 0;
	r->secs[cur][r->done[cur]] = res.seconds;
	r->fail_pct[cur][r->done[cur]++] = tries > 0 ? 100.0 * (double)tl.fails / (double)tries : NAN;
	r->timeouts[cur] += !res.completed;
	r->untraced[cur] += !traced;
	r->failures[cur] += traced ? tl.fails : 0;
	mgj_start(&j, "sample", EXP);
	mgj_int(&j, "run", run + 1);
	mgj_int(&j, "writer_pause_us", pause_us);
	mgj_int(&j, "khugepaged_per_slot_cursor", cur);
	mgj_num(&j, "seconds", res.seconds);
	mgj_bool(&j, "completed", res.completed);
	mgj_int(&j, "pmds_collapsed", res.collapsed);
	mgj_int(&j, "anon_huge_kb", res.anon_huge_kb);
	mgj_int(&j, "full_scans_delta", res.full_scans);
	mgj_int(&j, "writer_calls", res.writer_calls);
	mgj_bool(&j, "traced", traced);
	if (traced) {
		mgj_int(&j, "trylocks", tries);
		mgj_int(&j, "trylock_failures", tl.fails);
		mgj_num(&j, "trylock_fail_pct", r->fail_pct[cur][r->done[cur] - 1]);
		mgj_int(&j, "collapse_retakes", tl.retakes);
		mgj_int(&j, "trace_other_mm", tl.other_mm);
		mgj_int(&j, "trace_lost", tl.lost);
	}
	mgj_emit(&j);
	return true;
}

int main(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/khugepaged_per_slot_cursor", MG_KNOBS "/khugepaged_skip_batch",
		MG_THP "/enabled", MG_KHUGEPAGED "/scan_sleep_millisecs",
		MG_KHUGEPAGED "/pages_collapsed", MG_KHUGEPAGED "/full_scans",
		MG_TRACING "/events/mmap_lock/mmap_lock_acquire_returned/enable",
		MG_TRACING "/events/huge_memory/mm_collapse_huge_page/enable",
		MG_TRACING "/set_event_pid", MG_TRACING "/trace_pipe", MG_TRACING "/trace_marker",
		"/proc/sys/vm/max_map_count", "/proc/self/smaps_rollup", NULL,
	};
	static const char *const events[] = {
		"mmap_lock/mmap_lock_acquire_returned", "huge_memory/mm_collapse_huge_page", NULL,
	};
	long long mmc;
	pid_t khugepaged;
	pthread_t tt;
	struct mg_json j;
	int id = 0, rc = 0;

	parse_args(argc, argv);
	mg_require(EXP, need);
	khugepaged = mg_find_comm("khugepaged");
	if (khugepaged < 0) {
		mg_error(EXP, "no khugepaged thread found in /proc/*/comm");
		return MG_EXIT_WRONG_KERNEL;
	}
	mg_install_restore();

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "region_mb", opt.region_mb);
	mgj_int(&j, "writers", opt.writers);
	mgj_str(&j, "writer_pauses_us", opt.pauses);
	mgj_int(&j, "runs", opt.runs);
	mgj_int(&j, "scan_sleep_millisecs", opt.sleep_ms);
	mgj_int(&j, "pages_to_scan", khp("pages_to_scan"));
	mgj_int(&j, "khugepaged_skip_batch", opt.skip_batch);
	mgj_int(&j, "timeout_s", opt.timeout);
	mgj_int(&j, "khugepaged_pid", khugepaged);
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);

	if ((mg_read_ll("/proc/sys/vm/max_map_count", &mmc) == 0 && mmc < opt.vmas + 10000 &&
	     mg_knob_set_ll("/proc/sys/vm/max_map_count", opt.vmas + 10000)) ||
	    mg_knob_set(MG_THP "/enabled", "madvise") ||
	    mg_knob_set_ll(MG_KNOBS "/khugepaged_skip_batch", opt.skip_batch) ||
	    mg_knob_set_ll(MG_KHUGEPAGED "/scan_sleep_millisecs", opt.sleep_ms)) {
		mg_error(EXP, "cannot set the khugepaged/THP knobs");
		return MG_EXIT_FAIL;
	}
	if (mg_trace_start(EXP, khugepaged, events, 1024))
		return MG_EXIT_FAIL;
	pthread_create(&tt, NULL, mg_trace_reader, &tpipe);

	/* region: run-loop */
	for (int p = 0; p < opt.npause && !rc && !mg_stop_signal; p++) {
		for (int run = 0; run < opt.runs && !rc && !mg_stop_signal; run++)
			for (int k = 0; k < 2 && !rc; k++)
				/* ABAB: alternate which setting goes first, against drift */
				if (!measure(p, run, (run + k) % 2, ++id))
					rc = MG_EXIT_FAIL;
		if (!rc && !mg_stop_signal)
			report_pause(&R[p], p == 0);
	}
	/* endregion: run-loop */
	__atomic_store_n(&tpipe.stop, 1, __ATOMIC_RELEASE);
	mg_restore_all(); /* tracing_on 0 first: the reader drains and stops */
	pthread_join(tt, NULL);
	return rc ? rc : mg_stop_signal ? MG_EXIT_FAIL : 0;
}
