/* Guest experiment "khugepaged-cursor": time until khugepaged collapses a region behind many small VMAs under mmap_lock contention, cursor 0 vs 1. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
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
#define MAX_RUNS 50

static struct {
	long long vmas, region_mb, writers, pause_us, runs, sleep_ms, timeout, skip_batch;
	bool quick;
} opt = { 10000, 16, 2, 0, 3, 100, 60, 0, false };

/* What a run's child process reports back through a pipe. */
struct result {
	double seconds;
	int completed;
	long long anon_huge_kb, collapsed, full_scans, writer_calls;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: khugepaged_cursor [--quick] [--runs N] [--vmas N] [--region-mb M] [--writers W]\n"
		"                         [--writer-pause-us U] [--sleep-ms S] [--timeout T] [--skip-batch B]\n"
		"\n"
		"Experiment \"khugepaged-cursor\" (needs the patched mmlocks 6.12 kernel).\n"
		"Each run forks a fresh process that maps N one-page VMAs khugepaged must skip,\n"
		"then above them an M MiB region faulted in 4 KiB pages, starts W threads doing\n"
		"mmap+munmap (mmap_write_lock) so khugepaged's mmap_read_trylock() fails often,\n"
		"and times from MADV_HUGEPAGE until khugepaged has collapsed every 2 MiB of the\n"
		"region (khugepaged/pages_collapsed), with khugepaged_per_slot_cursor 0 (stock:\n"
		"the scan restarts at address 0 after a failed trylock) and 1, alternating.\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --runs N             runs per setting (1..%d, default 3; quick 1)\n"
		"  --vmas N             ineligible VMAs (100..1000000, default 10000)\n"
		"  --region-mb M        collapsible region, MiB, even (2..512, default 16)\n"
		"  --writers W          mmap/munmap threads (0..8, default 2)\n"
		"  --writer-pause-us U  pause between their calls (0..1000000, default 0)\n"
		"  --sleep-ms S         khugepaged/scan_sleep_millisecs during runs (0..60000, default 100)\n"
		"  --timeout T          bound on one run, seconds (1..3600, default 60; quick 10)\n"
		"  --skip-batch B       khugepaged_skip_batch during runs (0..1000000, default 0 = patch 2 alone)\n"
		"  --quick              small, fast settings (< 30 s under TCG)\n"
		"  --help               this text\n"
		"\n"
		"Output: JSON lines on stdout (info, one sample per run, summary).\n"
		"Exit: 0 ok, 1 run failed, 2 usage, 3 wrong kernel (knobs missing).\n",
		MAX_RUNS);
}

static void parse_args(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("runs", &opt.runs, 1, MAX_RUNS, 1),
		MG_INT("vmas", &opt.vmas, 100, 1000000, MG_NO_QUICK),
		MG_EVEN("region-mb", &opt.region_mb, 2, 512, MG_NO_QUICK),
		MG_INT("writers", &opt.writers, 0, 8, MG_NO_QUICK),
		MG_INT("writer-pause-us", &opt.pause_us, 0, 1000000, MG_NO_QUICK),
		MG_INT("sleep-ms", &opt.sleep_ms, 0, 60000, MG_NO_QUICK),
		MG_INT("timeout", &opt.timeout, 1, 3600, 10),
		MG_INT("skip-batch", &opt.skip_batch, 0, 1000000, MG_NO_QUICK),
		MG_OPTS_END,
	};

	opt.quick = mg_parse_opts("khugepaged_cursor", argc, argv, o, usage);
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

		if (m != MAP_FAILED)
			munmap(m, 4096);
		__atomic_fetch_add(&writer_calls, 1, __ATOMIC_RELAXED);
		if (opt.pause_us)
			mg_sleep_us((unsigned long)opt.pause_us);
	}
	return NULL;
}
/* endregion: contention-writer */

/* region: one-run */
static void run_child(int fd)
{
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
	t0 = mg_now_ns();
	/* The VMA flag change registers this mm with khugepaged (kernel-notes). */
	if (madvise(r, region, MADV_HUGEPAGE))
		_exit(13);
	deadline = t0 + (uint64_t)opt.timeout * 1000000000ull;
	while (khp("pages_collapsed") < c0 + npmd && mg_now_ns() < deadline)
		mg_sleep_us(5000);
	res.seconds = (double)(mg_now_ns() - t0) / 1e9;
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
static bool one_run(struct result *res)
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
		run_child(pfd[1]);
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

static void stats(const double *v, int n, double *med, double *lo, double *hi)
{
	double tmp[MAX_RUNS];

	memcpy(tmp, v, (size_t)n * sizeof(*v));
	*med = mg_median(tmp, (size_t)n);
	*lo = tmp[0];
	*hi = tmp[n - 1];
}

int main(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/khugepaged_per_slot_cursor", MG_KNOBS "/khugepaged_skip_batch",
		MG_THP "/enabled", MG_KHUGEPAGED "/scan_sleep_millisecs",
		MG_KHUGEPAGED "/pages_collapsed", MG_KHUGEPAGED "/full_scans",
		"/proc/sys/vm/max_map_count", "/proc/self/smaps_rollup", NULL,
	};
	double secs[2][MAX_RUNS];
	int timeouts[2] = { 0, 0 }, done[2] = { 0, 0 };
	long long mmc;
	struct mg_json j;

	parse_args(argc, argv);
	mg_require(EXP, need);
	mg_install_restore();

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "region_mb", opt.region_mb);
	mgj_int(&j, "writers", opt.writers);
	mgj_int(&j, "writer_pause_us", opt.pause_us);
	mgj_int(&j, "runs", opt.runs);
	mgj_int(&j, "scan_sleep_millisecs", opt.sleep_ms);
	mgj_int(&j, "pages_to_scan", khp("pages_to_scan"));
	mgj_int(&j, "khugepaged_skip_batch", opt.skip_batch);
	mgj_int(&j, "timeout_s", opt.timeout);
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

	/* region: run-loop */
	for (int run = 0; run < opt.runs && !mg_stop_signal; run++) {
		for (int k = 0; k < 2; k++) {
			int cur = (run + k) % 2; /* alternate the order against drift */
			struct result res;

			if (mg_knob_set_ll(MG_KNOBS "/khugepaged_per_slot_cursor", cur)) {
				mg_error(EXP, "cannot write khugepaged_per_slot_cursor");
				return MG_EXIT_FAIL;
			}
			mg_log("run %d, per-slot cursor %d", run + 1, cur);
			if (!one_run(&res)) {
				mg_error(EXP, "run %d with cursor %d did not report", run + 1, cur);
				return MG_EXIT_FAIL;
			}
			secs[cur][done[cur]++] = res.seconds;
			timeouts[cur] += !res.completed;
			mgj_start(&j, "sample", EXP);
			mgj_int(&j, "run", run + 1);
			mgj_int(&j, "khugepaged_per_slot_cursor", cur);
			mgj_num(&j, "seconds", res.seconds);
			mgj_bool(&j, "completed", res.completed);
			mgj_int(&j, "pmds_collapsed", res.collapsed);
			mgj_int(&j, "anon_huge_kb", res.anon_huge_kb);
			mgj_int(&j, "full_scans_delta", res.full_scans);
			mgj_int(&j, "writer_calls", res.writer_calls);
			mgj_emit(&j);
		}
	}
	/* endregion: run-loop */
	mg_restore_all();
	if (mg_stop_signal || !done[0] || done[0] != done[1])
		return MG_EXIT_FAIL;

	/* region: summary */
	{
		double bm, blo, bhi, am, alo, ahi;

		stats(secs[0], done[0], &bm, &blo, &bhi);
		stats(secs[1], done[1], &am, &alo, &ahi);
		mgj_start(&j, "summary", EXP);
		mgj_str(&j, "metric", "time to full collapse (median)");
		mgj_str(&j, "unit", "s");
		mgj_num(&j, "before", bm);
		mgj_num(&j, "after", am);
		mgj_num(&j, "ratio", am > 0 ? bm / am : -1);
		mgj_str(&j, "published", "10.8 s -> 3.6 s (3.0x)");
		mgj_str(&j, "source", "seed 000 patch 2, \"mm/khugepaged: scan mm's more efficiently under mmap_lock contention\"");
		mgj_str(&j, "goal", ">= 1.5x");
		/* A timed-out stock run only makes the ratio a lower bound; a timed-out patched run fails. */
		mgj_bool(&j, "pass", timeouts[1] == 0 && am > 0 && bm >= 1.5 * am);
		mgj_str(&j, "before_label", "global cursor (stock)");
		mgj_str(&j, "after_label", "per-slot cursor");
		mgj_int(&j, "runs", done[0]);
		mgj_num(&j, "before_min", blo);
		mgj_num(&j, "before_max", bhi);
		mgj_num(&j, "after_min", alo);
		mgj_num(&j, "after_max", ahi);
		mgj_int(&j, "before_timeouts", timeouts[0]);
		mgj_int(&j, "after_timeouts", timeouts[1]);
		mgj_emit(&j);
	}
	/* endregion: summary */
	return 0;
}
