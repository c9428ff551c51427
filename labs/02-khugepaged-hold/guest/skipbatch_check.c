/* Kernel part of lab 02: in-guest tests of khugepaged's skip-batch drop and retake of mmap_lock (patch 0005). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXP "kernel-lab-02"
#define SMALL_BASE 0x100000000ul /* 4 GiB: below the top-down mmap area */
#define PMD_SIZE (2ul << 20)
#define REGION (2 * PMD_SIZE)
#define SLEEP_MS 300              /* khugepaged's sleep between scans */
#define MAX_EVENTS (1u << 20)
#define MAX_STEPS 4096

static struct {
	long long vmas, seconds, batch;
	const char *test;
	bool quick, verbose;
} opt = { 2048, 3, 64, NULL, false, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: skipbatch_check --test holds|policy|unmaps [--vmas N] [--seconds S]\n"
		"                       [--batch B] [--quick]\n"
		"\n"
		"The kernel tests of lab 02 (khugepaged_scan_mm_slot() drops and retakes\n"
		"mmap_lock every khugepaged_skip_batch ineligible VMAs, our patch 0005), run\n"
		"inside the guest. This process maps N one-page VMAs khugepaged must skip and a\n"
		"MADV_HUGEPAGE region above them, waits until khugepaged collapsed the region,\n"
		"then:\n"
		"  holds   traces khugepaged's mmap_lock read acquisitions, one scan every\n"
		"          %d ms, with khugepaged_skip_batch B and then 0:\n"
		"            todo2_drops_every_batch  each scan takes the lock 1 + I/B times\n"
		"                                     (I: the mm's ineligible VMAs, rounded down)\n"
		"            batch_zero_is_stock      with 0, each scan takes it once\n"
		"  policy  an mmap()/munmap() writer against the walk, rwsem_steal_policy 0 then 1:\n"
		"            todo2_retake_follows_policy  the retake queues behind the writer\n"
		"                                         (rwsem_rlock_nosteal) under 1 only, and\n"
		"                                         never steals there\n"
		"  unmaps  a thread unmaps and maps again the VMAs at the batch boundaries while\n"
		"          khugepaged walks (policy 1):\n"
		"            walk_survives_unmaps     scans go on, the region stays collapsed\n"
		"Each test prints {\"type\":\"test\",\"name\":...,\"pass\":...,\"reason\":...}; the host\n"
		"(labs/kernel/klab.py) also fails a test whose run left a splat on the console.\n"
		"\n"
		"  --test T     which test run (required, or --quick: holds)\n"
		"  --vmas N     small VMAs (200..100000, default 2048; quick 500)\n"
		"  --seconds S  seconds per position (1..60, default 3; quick 1)\n"
		"  --batch B    khugepaged_skip_batch of the test (2..4096, default 64)\n"
		"  --verbose    also copy the traced lines to stderr (the console)\n"
		"  --quick      small settings (the smoke boot)\n"
		"  --help       this text\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM.\n"
		"Exit: 0 the tests ran (their records say pass or fail), 1 setup failed,\n"
		"2 usage, 3 not the mmlocks kernel.\n", SLEEP_MS);
}

static long long lockev(const char *name)
{
	return mg_counter(MG_LOCKEV, name);
}

static long long khp(const char *name)
{
	return mg_counter(MG_KHUGEPAGED, name);
}

static int set_or_fail(const char *path, long long val)
{
	int err = mg_knob_set_ll(path, val);

	if (err)
		mg_error(EXP, "setting %s to %lld: %s", path, val, strerror(-err));
	return err;
}

/* The mm under test: small VMAs, then a region khugepaged collapses. */
static char *region;

static int setup_mm(void)
{
	uintptr_t raddr;
	long long c0;
	int err;
	uint64_t t0;

	if (set_or_fail(MG_KHUGEPAGED "/scan_sleep_millisecs", SLEEP_MS) ||
	    set_or_fail(MG_KHUGEPAGED "/pages_to_scan", 1000000) ||
	    set_or_fail(MG_KNOBS "/khugepaged_per_slot_cursor", 0) ||
	    set_or_fail(MG_KNOBS "/khugepaged_skip_batch", 0) ||
	    set_or_fail(MG_KNOBS "/rwsem_steal_policy", 1))
		return -1;
	if ((err = mg_knob_set(MG_THP "/enabled", "madvise"))) {
		mg_error(EXP, "setting THP enabled=madvise: %s", strerror(-err));
		return -1;
	}
	if ((err = mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))) {
		mg_error(EXP, "mapping %lld small VMAs: %s", opt.vmas, strerror(-err));
		return -1;
	}
	raddr = (SMALL_BASE + (uintptr_t)opt.vmas * 4096 + 2 * PMD_SIZE) & ~(PMD_SIZE - 1);
	region = mmap((void *)raddr, REGION, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (region == MAP_FAILED) {
		mg_error(EXP, "mapping the region: %s", strerror(errno));
		return -1;
	}
	for (size_t off = 0; off < REGION; off += 4096)
		region[off] = 1;
	c0 = khp("pages_collapsed");
	if (madvise(region, REGION, MADV_HUGEPAGE)) { /* registers the mm with khugepaged */
		mg_error(EXP, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
		return -1;
	}
	t0 = mg_now_ns();
	while (khp("pages_collapsed") < c0 + (long long)(REGION / PMD_SIZE)) {
		if (mg_now_ns() - t0 > 60ull * 1000000000ull) {
			mg_error(EXP, "khugepaged did not collapse the region within 60 s");
			return -1;
		}
		mg_sleep_us(20000);
	}
	return 0;
}

/* ---- holds: khugepaged's read acquisitions, cut into scans ------------- */

static uint64_t *ev_ns;
static unsigned int nev;

static void on_line(void *arg, const char *line)
{
	const char *ev = strstr(line, "mmap_lock_acquire_returned:");
	uint64_t ns;

	(void)arg;
	if (opt.verbose)
		fprintf(stderr, "trace: %s\n", line);
	if (ev && strstr(ev, "write=false") && strstr(ev, "success=true") &&
	    mg_trace_ts(line, ev, &ns) && nev < MAX_EVENTS)
		ev_ns[nev++] = ns;
}

/*
 * Scan boundaries: khugepaged_scan_mm_slot() counts full_scans right after
 * a walk's last unlock, and the next walk starts a scan_sleep_millisecs
 * later, so a poll every 2 ms puts each step between two walks. A scan is
 * the acquisitions between two consecutive steps.
 */
static uint64_t step_ns[MAX_STEPS];
static unsigned int nstep;
static int poll_stop;

static void *poll_scans(void *arg)
{
	long long last = -1;

	(void)arg;
	while (!__atomic_load_n(&poll_stop, __ATOMIC_ACQUIRE)) {
		char buf[64];
		long long v = -1;

		if (mg_read_file(MG_KHUGEPAGED "/full_scans", buf, sizeof(buf)) > 0)
			v = atoll(buf);
		if (v != last && last >= 0 && nstep < MAX_STEPS)
			step_ns[nstep++] = mg_now_ns();
		last = v;
		mg_sleep_us(2000);
	}
	return NULL;
}

/*
 * Acquisitions per scan for the scans between two steps that both lie in
 * [lo, hi). Returns the number of scans; *mn and *mx get the fewest and
 * most acquisitions of one scan.
 */
static int scans_in(uint64_t lo, uint64_t hi, long long *mn, long long *mx)
{
	int n = 0;

	*mn = -1;
	*mx = -1;
	for (unsigned int s = 0; s + 1 < nstep; s++) {
		long long h = 0;

		if (step_ns[s] < lo || step_ns[s + 1] >= hi)
			continue;
		for (unsigned int i = 0; i < nev; i++)
			h += ev_ns[i] > step_ns[s] && ev_ns[i] < step_ns[s + 1];
		*mn = *mn < 0 || h < *mn ? h : *mn;
		*mx = h > *mx ? h : *mx;
		n++;
	}
	return n;
}

/* The VMAs of this mm, as khugepaged walks them: [vsyscall] is no VMA of the mm. */
static long long count_mm_vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	long long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !strstr(line, "[vsyscall]");
	fclose(f);
	return n;
}

static int test_holds(void)
{
	static const char *const events[] = { "mmap_lock/mmap_lock_acquire_returned", NULL };
	struct mg_trace_pipe tp = { on_line, NULL, 0 };
	uint64_t t[3];
	long long total, ineligible, mn[2], mx[2], want;
	pthread_t tt, pt;
	pid_t kh = mg_find_comm("khugepaged");
	int ns[2];

	ev_ns = calloc(MAX_EVENTS, sizeof(*ev_ns));
	if (kh < 0 || !ev_ns) {
		mg_error(EXP, "no khugepaged thread (or no memory)");
		return MG_EXIT_FAIL;
	}
	if (mg_trace_start(EXP, kh, events, 4096))
		return MG_EXIT_FAIL;
	pthread_create(&tt, NULL, mg_trace_reader, &tp);
	pthread_create(&pt, NULL, poll_scans, NULL);
	/* Every thread exists now: the VMA count stays as it is. */
	if ((total = count_mm_vmas()) < 0) {
		mg_error(EXP, "reading /proc/self/maps failed");
		return MG_EXIT_FAIL;
	}
	ineligible = total - 1; /* every VMA but the MADV_HUGEPAGE region */
	want = 1 + ineligible / opt.batch;
	if (set_or_fail(MG_KNOBS "/khugepaged_skip_batch", opt.batch))
		return MG_EXIT_FAIL;
	mg_sleep_us(2 * SLEEP_MS * 1000);
	t[0] = mg_now_ns();
	mg_sleep_us((unsigned long)opt.seconds * 1000000ul);
	if (set_or_fail(MG_KNOBS "/khugepaged_skip_batch", 0))
		return MG_EXIT_FAIL;
	t[1] = mg_now_ns();
	mg_sleep_us(2 * SLEEP_MS * 1000 + (unsigned long)opt.seconds * 1000000ul);
	t[2] = mg_now_ns();
	mg_sleep_us(2 * SLEEP_MS * 1000);
	__atomic_store_n(&poll_stop, 1, __ATOMIC_RELEASE);
	pthread_join(pt, NULL);
	__atomic_store_n(&tp.stop, 1, __ATOMIC_RELEASE);
	mg_write_file(MG_TRACING "/tracing_on", "0");
	pthread_join(tt, NULL);
	/* The knob is read once per scan: a scan begun before a change keeps the old value. */
	ns[0] = scans_in(t[0], t[1], &mn[0], &mx[0]);
	ns[1] = scans_in(t[1] + 2 * SLEEP_MS * 1000000ull, t[2], &mn[1], &mx[1]);
	{
		struct mg_json j;

		mgj_start(&j, "sample", EXP);
		mgj_str(&j, "test", "holds");
		mgj_int(&j, "vmas_total", total);
		mgj_int(&j, "ineligible_vmas", ineligible);
		mgj_int(&j, "khugepaged_skip_batch", opt.batch);
		mgj_int(&j, "holds_per_scan_want", want);
		mgj_int(&j, "scans_batch", ns[0]);
		mgj_int(&j, "holds_per_scan_min", mn[0]);
		mgj_int(&j, "holds_per_scan_max", mx[0]);
		mgj_int(&j, "scans_batch0", ns[1]);
		mgj_int(&j, "holds_per_scan_batch0_min", mn[1]);
		mgj_int(&j, "holds_per_scan_batch0_max", mx[1]);
		mgj_int(&j, "acquisitions_traced", nev);
		mgj_emit(&j);
	}
	mg_test_record(EXP, "todo2_drops_every_batch", ns[0] >= 2 && mn[0] == want && mx[0] == want,
		    "khugepaged_skip_batch %lld, %lld ineligible VMAs: %d whole scans took the lock "
		    "%lld..%lld times each (want %lld: the first lock, then a retake every %lld)",
		    opt.batch, ineligible, ns[0], mn[0], mx[0], want, opt.batch);
	mg_test_record(EXP, "batch_zero_is_stock", ns[1] >= 2 && mn[1] == 1 && mx[1] == 1,
		    "khugepaged_skip_batch 0: %d whole scans took the lock %lld..%lld times each "
		    "(want 1: stock 6.12 never drops it while skipping)", ns[1], mn[1], mx[1]);
	return MG_EXIT_OK;
}

/* ---- policy: the retake against a writer -------------------------------- */

static int phase = MG_PHASE_IDLE;

static int test_policy(void)
{
	static struct mg_lat lat[2];
	struct mg_writer w = { &phase, lat, 200 };
	long long steal[2], nosteal[2], scans[2];
	pthread_t wt;

	if (set_or_fail(MG_KHUGEPAGED "/scan_sleep_millisecs", 0) ||
	    set_or_fail(MG_KNOBS "/khugepaged_skip_batch", opt.batch))
		return MG_EXIT_FAIL;
	for (int p = 0; p < 2; p++)
		mg_lat_init(&lat[p], 1 << 16);
	pthread_create(&wt, NULL, mg_mmap_writer, &w);
	for (int p = 0; p < 2; p++) {
		if (set_or_fail(MG_KNOBS "/rwsem_steal_policy", p))
			return MG_EXIT_FAIL;
		mg_write_file(MG_LOCKEV "/.reset_counts", "1");
		scans[p] = khp("full_scans");
		__atomic_store_n(&phase, p, __ATOMIC_RELEASE);
		mg_sleep_us((unsigned long)opt.seconds * 1000000ul);
		__atomic_store_n(&phase, MG_PHASE_IDLE, __ATOMIC_RELEASE);
		steal[p] = lockev("rwsem_rlock_steal");
		nosteal[p] = lockev("rwsem_rlock_nosteal");
		scans[p] = khp("full_scans") - scans[p];
	}
	__atomic_store_n(&phase, MG_PHASE_STOP, __ATOMIC_RELEASE);
	pthread_join(wt, NULL);
	for (int p = 0; p < 2; p++) {
		struct mg_json j;

		mgj_start(&j, "sample", EXP);
		mgj_str(&j, "test", "policy");
		mgj_int(&j, "rwsem_steal_policy", p);
		mgj_int(&j, "full_scans", scans[p]);
		mgj_int(&j, "writer_calls", (long long)lat[p].count);
		mgj_int(&j, "rwsem_rlock_steal", steal[p]);
		mgj_int(&j, "rwsem_rlock_nosteal", nosteal[p]);
		mgj_emit(&j);
	}
	mg_test_record(EXP, "todo2_retake_follows_policy", nosteal[0] == 0 && nosteal[1] > 0 && steal[1] <= 2,
		    "policy 0: %lld steals, %lld nosteal retakes (want 0); policy 1: %lld steals "
		    "(want none), %lld nosteal retakes (want > 0), in %lld scans", steal[0], nosteal[0],
		    steal[1], nosteal[1], scans[1]);
	return MG_EXIT_OK;
}

/* ---- unmaps: VMAs at the batch boundaries come and go -------------------- */

static void *churn(void *arg)
{
	long long *cycles = arg;

	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != MG_PHASE_STOP) {
		/* The VMA whose skip completes a batch, then the one after it. */
		for (long long i = opt.batch - 1; i + 1 < opt.vmas; i += opt.batch) {
			for (int k = 0; k < 2; k++) {
				uintptr_t a = SMALL_BASE + (uintptr_t)(i + k) * 4096;
				int prot = ((i + k) & 1) ? PROT_READ : PROT_NONE;

				munmap((void *)a, 4096);
				if (mmap((void *)a, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
					 -1, 0) == MAP_FAILED)
					return NULL;
			}
			(*cycles)++;
		}
	}
	return NULL;
}

static int test_unmaps(void)
{
	long long cycles = 0, s0, huge;
	pthread_t ct;

	if (set_or_fail(MG_KHUGEPAGED "/scan_sleep_millisecs", 0) ||
	    set_or_fail(MG_KNOBS "/khugepaged_skip_batch", opt.batch))
		return MG_EXIT_FAIL;
	s0 = khp("full_scans");
	__atomic_store_n(&phase, 0, __ATOMIC_RELEASE);
	pthread_create(&ct, NULL, churn, &cycles);
	mg_sleep_us((unsigned long)opt.seconds * 1000000ul);
	__atomic_store_n(&phase, MG_PHASE_STOP, __ATOMIC_RELEASE);
	pthread_join(ct, NULL);
	s0 = khp("full_scans") - s0;
	huge = mg_anon_huge_kb();
	mg_test_record(EXP, "walk_survives_unmaps", s0 >= 3 && cycles >= 10 && huge >= (long long)(REGION / 1024),
		    "%lld unmap+map cycles at the batch boundaries, %lld scans (want >= 3), "
		    "AnonHugePages %lld kB (want >= %lu)", cycles, s0, huge, REGION / 1024);
	return MG_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/khugepaged_skip_batch", MG_KNOBS "/rwsem_steal_policy",
		MG_KNOBS "/khugepaged_per_slot_cursor", MG_LOCKEV "/rwsem_rlock_nosteal",
		MG_KHUGEPAGED "/full_scans", MG_TRACING "/events/mmap_lock/mmap_lock_acquire_returned",
		NULL,
	};
	static const struct mg_opt o[] = {
		MG_INT("vmas", &opt.vmas, 200, 100000, 500),
		MG_INT("seconds", &opt.seconds, 1, 60, 1),
		MG_INT("batch", &opt.batch, 2, 4096, MG_NO_QUICK),
		MG_STR("test", &opt.test),
		MG_FLAG("verbose", &opt.verbose, true),
		MG_OPTS_END,
	};
	struct mg_json j;

	opt.quick = mg_parse_opts("skipbatch_check", argc, argv, o, usage);
	if (!opt.test && opt.quick)
		opt.test = "holds";
	if (!opt.test)
		mg_usage_error("skipbatch_check", usage, "--test is required");
	if (strcmp(opt.test, "holds") && strcmp(opt.test, "policy") && strcmp(opt.test, "unmaps"))
		mg_usage_error("skipbatch_check", usage, "--test must be holds, policy or unmaps, not '%s'",
			       opt.test);
	mg_require(EXP, need);
	mg_install_restore();
	mgj_start(&j, "info", EXP);
	mgj_str(&j, "test", opt.test);
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "seconds", opt.seconds);
	mgj_int(&j, "batch", opt.batch);
	mgj_emit(&j);
	if (setup_mm())
		return MG_EXIT_FAIL;
	if (!strcmp(opt.test, "holds"))
		return test_holds();
	if (!strcmp(opt.test, "policy"))
		return test_policy();
	return test_unmaps();
}
