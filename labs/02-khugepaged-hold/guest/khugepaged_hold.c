/* Guest experiment "khugepaged-hold": longest mmap_lock read hold by khugepaged walking ~1M ineligible VMAs, skip batch 0 vs N. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "khugepaged_hold/holds.h"
#include "khugepaged_hold/report.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SMALL_BASE 0x100000000ul /* 4 GiB: lowest user VMAs khugepaged meets after the binary */
#define PMD_SIZE (2ul << 20)
#define IDLE MG_PHASE_IDLE
#define STOP MG_PHASE_STOP

static struct {
	long long vmas, batch, scans, rounds, timeout, region_mb, pause_us, stall_us, unmap_vmas;
	bool quick, pin;
} opt = { 1000000, 1024, 3, 3, 120, 16, 1000, 500, 4096, false, true };
static bool small_mapped; /* the small VMAs exist: unmap them on every way out */

/* What the run collects (khugepaged_hold/report.h); R.H under win_lock. */
static struct run R = { .cfg = {
	[CFG_STOCK] = { "stock", 0, 0, 0 },
	[CFG_NOSTEAL] = { "batch-nosteal", 1024, 1, 1 },
	[CFG_STEAL] = { "batch-steal", 1024, 1, 0 },
} };
static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t trace_last_ts; /* newest event timestamp the reader has processed */

/* The writer (mg_mmap_writer): its phase is the configuration measured, or IDLE. */
static int phase = IDLE;
static pid_t writer_tid;

static void parse_args(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("vmas", &opt.vmas, 1000, 2000000, 100000),
		MG_INT("batch", &opt.batch, 1, 1000000, MG_NO_QUICK),
		MG_INT("scans", &opt.scans, 1, 30, 2),
		MG_INT("rounds", &opt.rounds, 1, 20, 1),
		MG_INT("timeout", &opt.timeout, 5, 3600, 20),
		MG_EVEN("region-mb", &opt.region_mb, 2, 512, 8),
		MG_INT("writer-pause-us", &opt.pause_us, 0, 1000000, MG_NO_QUICK),
		MG_INT("stall-us", &opt.stall_us, 100, 100000, MG_NO_QUICK),
		MG_INT("unmap-vmas", &opt.unmap_vmas, 1, 2000000, MG_NO_QUICK),
		MG_FLAG("no-pin", &opt.pin, false),
		MG_OPTS_END,
	};

	opt.quick = mg_parse_opts("khugepaged_hold", argc, argv, o, kh_usage);
	if (opt.rounds * opt.scans > 100) {
		fprintf(stderr, "khugepaged_hold: --rounds %lld x --scans %lld is more than 100 scans per configuration\n",
			opt.rounds, opt.scans);
		kh_usage(stderr);
		exit(MG_EXIT_USAGE);
	}
}

/* ---- trace_pipe (mg_trace_reader) --------------------------------------- */

static void trace_line(void *arg, const char *line)
{
	(void)arg;
	pthread_mutex_lock(&win_lock);
	holds_line(&R.H, line);
	__atomic_store_n(&trace_last_ts, R.H.last_ts, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&win_lock);
}

static struct mg_trace_pipe tpipe = { trace_line, NULL, 0 };

/* ---- helpers ---------------------------------------------------------- */

static long long khp(const char *name)
{
	char path[160];
	long long v = -1;

	snprintf(path, sizeof(path), MG_KHUGEPAGED "/%s", name);
	mg_read_ll(path, &v);
	return v;
}

/* Wait until `name` reaches `target`; false on timeout or signal. */
static bool wait_counter(const char *name, long long target, long long timeout_s)
{
	uint64_t deadline = mg_now_ns() + (uint64_t)timeout_s * 1000000000ull;

	while (khp(name) < target) {
		if (mg_stop_signal || mg_now_ns() > deadline)
			return false;
		mg_sleep_us(20000);
	}
	return true;
}

static int set_or_fail(const char *path, const char *val)
{
	int err = mg_knob_set(path, val);

	if (err)
		mg_error(EXP, "writing '%s' to %s: %s", val, path, strerror(-err));
	return err;
}
/* The writer thread: its tid first, for set_event_pid. */
static void *writer_main(void *w)
{
	__atomic_store_n(&writer_tid, gettid(), __ATOMIC_RELEASE);
	return mg_mmap_writer(w);
}

static long long lockev(const char *name)
{
	char path[160];
	long long v = 0;

	snprintf(path, sizeof(path), MG_LOCKEV "/%s", name);
	mg_read_ll(path, &v);
	return v;
}

/* Switch the three knobs to configuration c; 0 or -errno. */
static int set_config(int c)
{
	const struct config *k = &R.cfg[c];
	int err;

	if ((err = mg_knob_set_ll(MG_KNOBS "/rwsem_steal_policy", k->policy)) ||
	    (err = mg_knob_set_ll(MG_KNOBS "/khugepaged_per_slot_cursor", k->cursor)) ||
	    (err = mg_knob_set_ll(MG_KNOBS "/khugepaged_skip_batch", k->batch)))
		mg_error(EXP, "switching to configuration %s: %s", k->name, strerror(-err));
	return err;
}

/* region: measure */
/*
 * One window of configuration c: until --scans complete scans after the
 * first one (which began before the switch) or the timeout. khugepaged
 * reads the knobs once per khugepaged_scan_mm_slot() call (the steal
 * policy at each retake), so the scan under way at the switch is a
 * mixture: report_cut() drops it. For the whole-window figures a hold
 * counts in the window in which it was acquired; a writer's wait only
 * from the window's first scan boundary on, its mmap()/munmap() calls
 * from the first step of full_scans on, because before that the writer
 * may wait for a walk begun in the window before. 0, or an exit code.
 */
static int window(int c)
{
	size_t s, nb;
	long long s0, st0, ns0, fs;
	uint64_t start, deadline;
	bool enough = false, opened;

	if (set_config(c))
		return MG_EXIT_FAIL;
	st0 = lockev("rwsem_rlock_steal");
	ns0 = lockev("rwsem_rlock_nosteal");
	pthread_mutex_lock(&win_lock);
	start = mg_now_ns();
	opened = holds_open(&R.H, c, start);
	s = R.H.nspan - 1;
	pthread_mutex_unlock(&win_lock);
	s0 = khp("full_scans");
	tlog_add(&R.obs[s], start, (uint64_t)s0);
	if (!opened || !R.obs[s].n) {
		mg_error(EXP, "out of memory for the windows");
		return MG_EXIT_FAIL;
	}
	deadline = start + (uint64_t)opt.timeout * 1000000000ull;
	while (!enough && !mg_stop_signal && mg_now_ns() < deadline) {
		/* Stamped after the read: a step it shows came before t. */
		uint64_t t;

		fs = khp("full_scans");
		t = mg_now_ns();
		if (fs != (long long)R.obs[s].v[R.obs[s].n - 1][1])
			tlog_add(&R.obs[s], t, (uint64_t)fs);
		/*
		 * One boundary more than --scans. A step counts only once
		 * the trace reader has got past it, because a failed
		 * trylock, not a scan, may have caused it.
		 */
		pthread_mutex_lock(&win_lock);
		nb = report_bounds(&R, s, __atomic_load_n(&trace_last_ts, __ATOMIC_ACQUIRE), NULL, NULL, 0);
		pthread_mutex_unlock(&win_lock);
		enough = nb >= (size_t)opt.scans + 1;
		/*
		 * The writer's own latencies count from the first step of
		 * full_scans on: the call begun before the switch has ended
		 * by then. (Not from the first boundary, which waits for the
		 * trace reader: it may lag by a whole window.)
		 */
		if (R.obs[s].n >= 2)
			__atomic_store_n(&phase, c, __ATOMIC_RELEASE);
		/* Short: the poller's lag must stay well below one walk. */
		mg_sleep_us(2000);
	}
	__atomic_store_n(&phase, IDLE, __ATOMIC_RELEASE);
	pthread_mutex_lock(&win_lock);
	holds_close(&R.H, mg_now_ns());
	pthread_mutex_unlock(&win_lock);
	R.dscans[c] += khp("full_scans") - s0;
	R.steals[c] += lockev("rwsem_rlock_steal") - st0;
	R.nosteals[c] += lockev("rwsem_rlock_nosteal") - ns0;
	if (!enough)
		mg_log("%s: fewer than %lld complete scans in %lld s", R.cfg[c].name, opt.scans + 1, opt.timeout);
	return 0;
}
/* endregion: measure */

static int run(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/khugepaged_skip_batch", MG_KNOBS "/khugepaged_per_slot_cursor",
		MG_THP "/enabled", MG_KHUGEPAGED "/scan_sleep_millisecs",
		MG_KHUGEPAGED "/full_scans", MG_KHUGEPAGED "/pages_collapsed",
		MG_TRACING "/events/mmap_lock/mmap_lock_acquire_returned/enable",
		MG_TRACING "/events/mmap_lock/mmap_lock_released/enable",
		MG_TRACING "/events/mmap_lock/mmap_lock_start_locking/enable",
		MG_TRACING "/events/huge_memory/mmlocks_khugepaged_walk_gap/enable",
		MG_TRACING "/events/irq/enable", MG_TRACING "/events/irq_vectors/enable",
		MG_TRACING "/set_event_pid", MG_TRACING "/trace_pipe",
		MG_KNOBS "/rwsem_steal_policy", MG_KNOBS "/smaps_rollup_vma_lock",
		MG_KNOBS "/access_remote_vm_vma_lock", MG_KNOBS "/deferred_split_early_check",
		MG_LOCKEV "/rwsem_rlock_steal", MG_LOCKEV "/rwsem_rlock_nosteal",
		"/proc/sys/vm/max_map_count", NULL,
	};
	size_t region;
	uintptr_t raddr;
	pthread_t tt, wt;
	struct mg_writer wr = { &phase, R.wlat, 0 };
	struct mg_json j;
	long long mmc, c0;
	long inside, total;
	pid_t khugepaged;
	char pidbuf[32];
	uint64_t t0;
	int err, rc = 0;
	char *r;

	parse_args(argc, argv);
	mg_require(EXP, need);
	khugepaged = mg_find_comm("khugepaged");
	if (khugepaged < 0) {
		mg_error(EXP, "no khugepaged thread found in /proc/*/comm");
		return MG_EXIT_WRONG_KERNEL;
	}
	mg_install_restore();
	R.cfg[CFG_NOSTEAL].batch = R.cfg[CFG_STEAL].batch = opt.batch;
	R.scans = opt.scans;
	R.stall_us = opt.stall_us;
	region = (size_t)opt.region_mb << 20;

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "region_mb", opt.region_mb);
	mgj_int(&j, "scans", opt.scans);
	mgj_int(&j, "rounds", opt.rounds);
	mgj_int(&j, "batch", opt.batch);
	mgj_int(&j, "writer_pause_us", opt.pause_us);
	mgj_int(&j, "stall_us", opt.stall_us);
	mgj_int(&j, "khugepaged_pid", khugepaged);
	mgj_int(&j, "pages_to_scan", khp("pages_to_scan"));
	mgj_bool(&j, "quick", opt.quick);
	/* Before any thread exists, so that every thread inherits the mask. */
	mgj_int(&j, "khugepaged_cpu", opt.pin ? pin_cpus(khugepaged) : -1);
	mgj_emit(&j);

	/* region: setup-knobs */
	snprintf(pidbuf, sizeof(pidbuf), "%lld", opt.vmas + 10000);
	if (mg_read_ll("/proc/sys/vm/max_map_count", &mmc) == 0 && mmc < opt.vmas + 10000 &&
	    set_or_fail("/proc/sys/vm/max_map_count", pidbuf))
		return MG_EXIT_FAIL;
	/* The switches this experiment does not compare: at their stock values. */
	if (set_or_fail(MG_KNOBS "/smaps_rollup_vma_lock", "0") ||
	    set_or_fail(MG_KNOBS "/access_remote_vm_vma_lock", "0") ||
	    set_or_fail(MG_KNOBS "/deferred_split_early_check", "1"))
		return MG_EXIT_FAIL;
	/* Until the first window: no batch, so that the walk reaches the region. */
	if (set_or_fail(MG_THP "/enabled", "madvise") ||
	    set_or_fail(MG_KNOBS "/rwsem_steal_policy", "1") ||
	    set_or_fail(MG_KNOBS "/khugepaged_per_slot_cursor", "1") ||
	    set_or_fail(MG_KNOBS "/khugepaged_skip_batch", "0") ||
	    set_or_fail(MG_KHUGEPAGED "/scan_sleep_millisecs", "0"))
		return MG_EXIT_FAIL;
	/* endregion: setup-knobs */

	/* region: layout */
	/* Ineligible VMAs first, at the lowest addresses khugepaged scans. */
	t0 = mg_now_ns();
	if ((err = mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))) {
		mg_error(EXP, "mapping %lld small VMAs: %s", opt.vmas, strerror(-err));
		return MG_EXIT_FAIL;
	}
	small_mapped = true;
	raddr = (SMALL_BASE + (uintptr_t)opt.vmas * 4096 + 2 * PMD_SIZE) & ~(PMD_SIZE - 1);
	r = mmap((void *)raddr, region, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (r == MAP_FAILED || (uintptr_t)r != raddr) {
		mg_error(EXP, "mapping the region at %#lx failed", (unsigned long)raddr);
		return MG_EXIT_FAIL;
	}
	/* 4 KiB faults first, then MADV_HUGEPAGE: the flag change registers the mm. */
	for (size_t off = 0; off < region; off += 4096)
		r[off] = 1;
	c0 = khp("pages_collapsed");
	if (madvise(r, region, MADV_HUGEPAGE)) {
		mg_error(EXP, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
		return MG_EXIT_FAIL;
	}
	inside = mg_count_vmas(SMALL_BASE, raddr, &total);
	mgj_start(&j, "info", EXP);
	mgj_int(&j, "small_vmas_below_region", inside);
	mgj_int(&j, "region_vmas", mg_count_vmas(raddr, raddr + region, NULL));
	mgj_int(&j, "total_vmas", total);
	mgj_num(&j, "setup_seconds", (double)(mg_now_ns() - t0) / 1e9);
	mgj_emit(&j);
	if (inside != opt.vmas || mg_count_vmas(raddr, raddr + region, NULL) != 1) {
		mg_error(EXP, "layout check failed: %ld VMAs below the region (want %lld)", inside, opt.vmas);
		return MG_EXIT_FAIL;
	}
	/* endregion: layout */

	/* Measure in the steady state: the region collapsed, every scan only skips. */
	t0 = mg_now_ns();
	if (!wait_counter("pages_collapsed", c0 + (long long)(region / PMD_SIZE), opt.timeout))
		mg_log("region not fully collapsed after %lld s; measuring anyway", opt.timeout);
	mgj_start(&j, "info", EXP);
	mgj_num(&j, "collapse_seconds", (double)(mg_now_ns() - t0) / 1e9);
	mgj_int(&j, "anon_huge_kb", mg_anon_huge_kb());
	mgj_emit(&j);

	/* region: tracing */
	{
		/*
		 * irq and irq_vectors: the interrupt handlers that ran on
		 * khugepaged's CPU while it was current (set_event_pid),
		 * which are never taken out of a hold.
		 */
		static const char *const ev[] = {
			"mmap_lock/mmap_lock_start_locking", "mmap_lock/mmap_lock_acquire_returned",
			"mmap_lock/mmap_lock_released", "huge_memory/mmlocks_khugepaged_walk_gap",
			"irq", "irq_vectors", NULL,
		};

		if (mg_trace_start(EXP, khugepaged, ev, 8192))
			return MG_EXIT_FAIL;
	}
	/* endregion: tracing */

	holds_init(&R.H, (uint64_t)opt.stall_us * 1000);
	for (int c = 0; c < HOLDS_CFGS; c++)
		mg_lat_init(&R.wlat[c], 1 << 20);
	pthread_create(&tt, NULL, mg_trace_reader, &tpipe);
	wr.pause_us = (unsigned long)opt.pause_us;
	pthread_create(&wt, NULL, writer_main, &wr);
	/* Trace the writer too: its tid joins khugepaged's in set_event_pid. */
	for (t0 = mg_now_ns(); !__atomic_load_n(&writer_tid, __ATOMIC_ACQUIRE) && mg_now_ns() - t0 < 5000000000ull;)
		mg_sleep_us(1000);
	snprintf(pidbuf, sizeof(pidbuf), "%d %d", (int)khugepaged, (int)writer_tid);
	pthread_mutex_lock(&win_lock);
	R.H.writer_pid = writer_tid;
	pthread_mutex_unlock(&win_lock);
	if (!writer_tid || set_or_fail(MG_TRACING "/set_event_pid", pidbuf))
		rc = MG_EXIT_FAIL;

	/* Rounds of the three windows, interleaved: stock, batch-nosteal, batch-steal. */
	for (long long k = 0; k < opt.rounds && !rc && !mg_stop_signal; k++)
		for (int c = 0; c < HOLDS_CFGS && !rc && !mg_stop_signal; c++) {
			mg_log("round %lld/%lld, %s: measuring %lld complete scans", k + 1, opt.rounds,
			       R.cfg[c].name, opt.scans);
			rc = window(c);
		}

	/* Give the ring buffer a moment to reach trace_pipe, then drain it. */
	mg_sleep_us(300000);
	__atomic_store_n(&tpipe.stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&phase, STOP, __ATOMIC_RELEASE);
	pthread_join(tt, NULL);
	pthread_join(wt, NULL);
	mg_restore_all();

	report_cut(&R);
	for (int c = 0; c < HOLDS_CFGS; c++)
		report_sample(&R, c);
	mgj_start(&j, "info", EXP);
	mgj_int(&j, "trace_lines", R.H.lines);
	mgj_int(&j, "lost_event_markers", R.H.lost);
	mgj_int(&j, "irq_intervals", (long long)R.H.irqs.n);
	long long dropped = R.H.holds.dropped + R.H.fails.dropped + R.H.stops.dropped + R.H.irqs.dropped;

	for (size_t i = 0; i < R.H.nspan; i++)
		dropped += R.obs[i].dropped;
	mgj_int(&j, "holds_dropped", dropped);
	mgj_emit(&j);
	if (rc || mg_stop_signal || R.H.nspan < HOLDS_CFGS)
		return rc ? rc : MG_EXIT_FAIL;
	report_summaries(&R);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	if (small_mapped && unmap_small_vmas(SMALL_BASE, (size_t)opt.vmas, (size_t)opt.unmap_vmas) && !rc)
		rc = MG_EXIT_FAIL;
	return rc;
}
