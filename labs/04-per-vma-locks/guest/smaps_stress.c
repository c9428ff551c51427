/* Guest stress program "smaps-stress": /proc/PID/smaps_rollup readers against a target whose VMAs change, fault and exit, under every switch position (patch 0008, for the debug kernel). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define EXP "smaps-stress"
#define PG 4096ul
/* The target's layout, in the order the rollup walk meets it. */
#define CHURN_BASE 0x200000000ul  /* --vmas pages, split into VMAs; mprotect toggles */
#define HOLE_BASE 0x280000000ul   /* HOLE_SLOTS pages mapped and unmapped at random */
#define HOLE_SLOTS 1024
#define FAULT_BASE 0x2c0000000ul  /* FAULT_PAGES pages written, then MADV_DONTNEED */
#define FAULT_PAGES 256
#define STABLE_BASE 0x300000000ul /* STABLE_PAGES pages faulted once, never touched again */
#define STABLE_PAGES 512
#define STABLE_KB (STABLE_PAGES * PG / 1024)
#define KNOB_VMA MG_KNOBS "/smaps_rollup_vma_lock"
#define KNOB_POLICY MG_KNOBS "/rwsem_steal_policy"
#define BUFSZ (1 << 16)

static const char *const counters[] = {
	"smaps_rollup_vma_locked", "smaps_rollup_mmap_locked", "smaps_rollup_mmap_fallback",
	"smaps_rollup_mmap_drop", "smaps_rollup_vma_retry",
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static struct {
	long long seconds, readers, vmas, flip_ms, life_ms;
	bool quick;
} opt = { 60, 2, 4000, 200, 1500, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: smaps_stress [--quick] [--seconds S] [--readers R] [--vmas N] [--flip-ms F]\n"
		"                    [--life-ms L]\n"
		"\n"
		"Stress of /proc/PID/smaps_rollup under both walks of patch 0008 (needs the\n"
		"patched mmlocks 6.12 kernel; meant for the debug kernel, make debug-check).\n"
		"A target process (a child) maps N small VMAs and runs three threads: one\n"
		"mprotect()s random pages of them (VMAs split and merge, also around the point\n"
		"where a reader resumes), one maps and unmaps pages in a hole region (VMAs\n"
		"appear in gaps behind a reader), one writes pages and drops them with\n"
		"MADV_DONTNEED (page faults under per-VMA locks). R reader threads read the\n"
		"target's smaps_rollup in a loop. Every F ms the program moves to the next of\n"
		"the six settings smaps_rollup_vma_lock 0/1 x rwsem_steal_policy 0/1/2; every L\n"
		"ms it SIGKILLs the target, often mid-read, and starts a new one.\n"
		"Checks: every rollup a read returns shows Rss >= the target's never-changing\n"
		"region (%lu kB); a read of a dead target fails with ESRCH or ends early,\n"
		"and is counted; on a quiet target both walks print the same rollup; the\n"
		"per-VMA walk ran (smaps_rollup_vma_locked grew). On a lockdep kernel the\n"
		"sample record also gives debug_locks from /proc/lockdep_stats (1: lockdep\n"
		"still on, no lock splat so far). Knobs are restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --seconds S   run time (1..3600, default 60; quick 8)\n"
		"  --readers R   reader threads (1..8, default 2)\n"
		"  --vmas N      small VMAs in the target (100..50000, default 4000; quick 1000)\n"
		"  --flip-ms F   time per switch setting (10..60000, default 200)\n"
		"  --life-ms L   target lifetime (50..600000, default 1500; quick 700)\n"
		"  --quick       short run (< 30 s under TCG)\n"
		"  --help        this text\n"
		"\n"
		"Output: JSON lines (info, sample, check, summary); progress on stderr.\n"
		"Exit: 0 all checks pass, 1 a check failed, 2 usage, 3 wrong kernel.\n",
		(unsigned long)STABLE_KB);
}

/* ---- the target ---------------------------------------------------------- */

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void *churn_mprotect(void *arg)
{
	unsigned int seed = 1;

	for (;;) {
		size_t i = rnd(&seed) % (size_t)opt.vmas;

		mprotect((void *)(CHURN_BASE + i * PG), PG, rnd(&seed) & 1 ? PROT_READ : PROT_NONE);
	}
	return arg;
}

static void *churn_holes(void *arg)
{
	unsigned int seed = 2;

	for (;;) {
		void *a = (void *)(HOLE_BASE + (rnd(&seed) % HOLE_SLOTS) * 2 * PG);
		void *p = mmap(a, PG, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p == MAP_FAILED)
			munmap(a, PG); /* EEXIST: it was mapped, unmap it */
		else
			*(volatile char *)p = 1;
	}
	return arg;
}

static void *churn_faults(void *arg)
{
	char *p = (char *)FAULT_BASE;

	for (;;) {
		for (size_t i = 0; i < FAULT_PAGES; i++)
			p[i * PG] = 1;
		madvise(p, FAULT_PAGES * PG, MADV_DONTNEED);
	}
	return arg;
}

/* The child: set up, report ready on `ready_fd`, churn (unless *quiet) until killed. */
static void __attribute__((noreturn)) target(int ready_fd, void *quiet)
{
	static void *(*const churn[])(void *) = { churn_mprotect, churn_holes, churn_faults };
	char *stable, *fault;
	pthread_t t;

	/* No THP: khugepaged must not change a quiet target between two reads. */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	stable = mmap((void *)STABLE_BASE, STABLE_PAGES * PG, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	fault = mmap((void *)FAULT_BASE, FAULT_PAGES * PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (stable != (void *)STABLE_BASE || fault != (void *)FAULT_BASE ||
	    mg_map_small_vmas(CHURN_BASE, (size_t)opt.vmas))
		_exit(1);
	for (size_t i = 0; i < STABLE_PAGES; i++)
		stable[i * PG] = 1;
	for (size_t i = 0; !*(bool *)quiet && i < sizeof(churn) / sizeof(churn[0]); i++)
		if (pthread_create(&t, NULL, churn[i], NULL))
			_exit(1);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static pid_t spawn_target(bool quiet)
{
	char ready;

	return mg_spawn_ready(target, &quiet, &ready, 1);
}

/* ---- the readers ------------------------------------------------------- */

static pid_t cur_pid;    /* the target readers read; 0 while there is none */
static int stop;
static unsigned long long n_ok, n_gone, n_short, n_bad, kill_epoch, n_overlap;
static char bad_sample[512];

static long long rss_kb(const char *buf)
{
	const char *p = strstr(buf, "\nRss:");

	return p ? strtoll(p + 5, NULL, 10) : -1;
}

static void *reader(void *arg)
{
	char *buf = malloc(BUFSZ), path[64];

	(void)arg;
	while (buf && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !mg_stop_signal) {
		pid_t pid = __atomic_load_n(&cur_pid, __ATOMIC_ACQUIRE);
		unsigned long long e0 = __atomic_load_n(&kill_epoch, __ATOMIC_ACQUIRE);
		ssize_t n;
		long long rss;

		if (!pid) {
			mg_sleep_us(1000);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
		n = mg_read_file(path, buf, BUFSZ);
		if (__atomic_load_n(&kill_epoch, __ATOMIC_ACQUIRE) != e0)
			__atomic_fetch_add(&n_overlap, 1, __ATOMIC_RELAXED);
		if (n == -ESRCH || n == -ENOENT) {
			__atomic_fetch_add(&n_gone, 1, __ATOMIC_RELAXED);
			continue;
		}
		rss = n > 0 ? rss_kb(buf) : -1;
		if (n < 0 || rss < 0) { /* EOF before the rollup, or another error */
			__atomic_fetch_add(&n_short, 1, __ATOMIC_RELAXED);
			continue;
		}
		/* The stable region is mapped and resident for the target's whole life. */
		if (rss < (long long)STABLE_KB) {
			if (__atomic_fetch_add(&n_bad, 1, __ATOMIC_RELAXED) == 0)
				snprintf(bad_sample, sizeof(bad_sample), "%s", buf);
			continue;
		}
		__atomic_fetch_add(&n_ok, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

static int read_counters(long long *v)
{
	char path[256];

	for (size_t i = 0; i < NCOUNTERS; i++) {
		snprintf(path, sizeof(path), MG_KNOBS "/%s", counters[i]);
		if (mg_read_ll(path, &v[i]))
			return -1;
	}
	return 0;
}

/* debug_locks from /proc/lockdep_stats: 1 lockdep on, 0 off (after a splat), -1 no lockdep. */
static long long lockdep_debug_locks(void)
{
	static char buf[8192];
	const char *p;

	if (mg_read_file("/proc/lockdep_stats", buf, sizeof(buf)) <= 0 ||
	    !(p = strstr(buf, "debug_locks:")))
		return -1;
	return strtoll(p + strlen("debug_locks:"), NULL, 10);
}

/* ---- the quiet check: both walks print the same rollup ------------------ */

static bool quiet_check(unsigned long long *locked)
{
	static char a[BUFSZ], b[BUFSZ];
	char path[64];
	long long c0[NCOUNTERS], c1[NCOUNTERS];
	pid_t pid = spawn_target(true);
	bool same = pid > 0;
	struct mg_json j;

	if (pid > 0) {
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
		read_counters(c0);
		for (int k = 0; k < 4 && same; k++) {
			mg_knob_set_ll(KNOB_VMA, 0);
			same = mg_read_file(path, a, sizeof(a)) > 0;
			mg_knob_set_ll(KNOB_VMA, 1);
			same = same && mg_read_file(path, b, sizeof(b)) > 0 && !strcmp(a, b);
		}
		read_counters(c1);
		*locked = (unsigned long long)(c1[0] - c0[0]);
		mg_kill_child(EXP, pid);
	}
	mgj_start(&j, "check", EXP);
	mgj_str(&j, "check", "quiet target: smaps_rollup_vma_lock 0 and 1 print the same rollup, 4 times");
	mgj_bool(&j, "pass", same && *locked > 0);
	mgj_int(&j, "rss_kb", same ? rss_kb(a) : -1);
	mgj_int(&j, "vma_locked_delta", (long long)*locked);
	mgj_emit(&j);
	if (!same)
		mg_log("quiet check failed:\n--- walk 0:\n%s--- walk 1:\n%s", a, b);
	return same && *locked > 0;
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("seconds", &opt.seconds, 1, 3600, 8),
		MG_INT("readers", &opt.readers, 1, 8, MG_NO_QUICK),
		MG_INT("vmas", &opt.vmas, 100, 50000, 1000),
		MG_INT("flip-ms", &opt.flip_ms, 10, 60000, MG_NO_QUICK),
		MG_INT("life-ms", &opt.life_ms, 50, 600000, 700),
		MG_OPTS_END,
	};
	static const char *const need[] = {
		KNOB_VMA, KNOB_POLICY, MG_KNOBS "/smaps_rollup_vma_locked",
		MG_KNOBS "/smaps_rollup_mmap_fallback", "/proc/self/smaps_rollup", NULL,
	};
	long long c0[NCOUNTERS], c1[NCOUNTERS];
	unsigned long long targets = 0, setting_reads[6] = { 0 }, quiet_locked = 0;
	uint64_t t0, next_flip, next_kill, end;
	pthread_t rt[8];
	struct mg_json j;
	int setting = 0;
	bool ok, quiet_ok;
	pid_t pid;

	opt.quick = mg_parse_opts("smaps_stress", argc, argv, o, usage);
	mg_require(EXP, need);
	mg_install_restore();

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "seconds", opt.seconds);
	mgj_int(&j, "readers", opt.readers);
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "flip_ms", opt.flip_ms);
	mgj_int(&j, "life_ms", opt.life_ms);
	mgj_int(&j, "stable_kb", (long long)STABLE_KB);
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);

	if (read_counters(c0)) {
		mg_error(EXP, "cannot read the smaps_rollup_* counters");
		return MG_EXIT_FAIL;
	}
	for (int i = 0; i < opt.readers; i++)
		pthread_create(&rt[i], NULL, reader, NULL);

	t0 = mg_now_ns();
	end = t0 + (uint64_t)opt.seconds * 1000000000ull;
	next_flip = next_kill = t0;
	pid = 0;
	ok = true;
	/* region: stress-loop */
	while (mg_now_ns() < end && !mg_stop_signal && ok) {
		uint64_t now = mg_now_ns();

		if (now >= next_flip) { /* setting k: vma_lock k % 2, steal policy k / 2 */
			setting = (int)(((now - t0) / ((uint64_t)opt.flip_ms * 1000000ull)) % 6);
			mg_knob_set_ll(KNOB_VMA, setting % 2);
			mg_knob_set_ll(KNOB_POLICY, setting / 2);
			next_flip = now + (uint64_t)opt.flip_ms * 1000000ull;
		}
		if (now >= next_kill) {
			if (pid > 0) {
				__atomic_fetch_add(&kill_epoch, 1, __ATOMIC_ACQ_REL);
				if (mg_kill_child(EXP, pid)) {
					ok = false;
					break;
				}
			}
			__atomic_store_n(&cur_pid, 0, __ATOMIC_RELEASE);
			pid = spawn_target(false);
			if (pid <= 0) {
				mg_error(EXP, "starting a target failed");
				ok = false;
				break;
			}
			targets++;
			__atomic_store_n(&cur_pid, pid, __ATOMIC_RELEASE);
			next_kill = mg_now_ns() + (uint64_t)opt.life_ms * 1000000ull;
		}
		setting_reads[setting]++; /* loop turns per setting: shows each one ran */
		mg_sleep_us(2000);
	}
	/* endregion: stress-loop */
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < opt.readers; i++)
		pthread_join(rt[i], NULL);
	if (pid > 0 && mg_kill_child(EXP, pid))
		ok = false;
	quiet_ok = ok && !mg_stop_signal && quiet_check(&quiet_locked);
	read_counters(c1);
	mg_restore_all();

	mgj_start(&j, "sample", EXP);
	mgj_num(&j, "seconds", (double)(mg_now_ns() - t0) / 1e9);
	mgj_int(&j, "targets", (long long)targets);
	mgj_int(&j, "reads_ok", (long long)n_ok);
	mgj_int(&j, "reads_target_gone", (long long)n_gone);
	mgj_int(&j, "reads_short", (long long)n_short);
	mgj_int(&j, "reads_overlapping_a_kill", (long long)n_overlap);
	mgj_int(&j, "reads_rss_below_stable", (long long)n_bad);
	mgj_int(&j, "lockdep_debug_locks", lockdep_debug_locks());
	for (size_t i = 0; i < NCOUNTERS; i++)
		mgj_int(&j, counters[i], c1[i] - c0[i]);
	for (int s = 0; s < 6; s++) {
		char key[48];

		snprintf(key, sizeof(key), "ticks_vma_lock%d_policy%d", s % 2, s / 2);
		mgj_int(&j, key, (long long)setting_reads[s]);
	}
	mgj_emit(&j);
	if (n_bad)
		mg_log("first rollup with Rss below %lu kB:\n%s", (unsigned long)STABLE_KB, bad_sample);

	ok = ok && !mg_stop_signal && quiet_ok && n_bad == 0 && n_ok > 0 && c1[0] > c0[0];
	mgj_start(&j, "summary", EXP);
	mgj_str(&j, "goal", "no rollup with Rss below the stable region; both walks equal on a quiet "
			    "target; the per-VMA walk ran; no target stuck after SIGKILL");
	mgj_bool(&j, "pass", ok);
	mgj_emit(&j);
	return ok ? MG_EXIT_OK : MG_EXIT_FAIL;
}
