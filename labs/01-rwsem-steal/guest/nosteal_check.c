/* Kernel part of lab 01: in-guest tests of down_read_nosteal() and the steal decision in rwsem_down_read_slowpath(). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP "kernel-lab-01"
#define SMALL_BASE 0x100000000ul /* 4 GiB: below the top-down mmap area */
#define PMD_SIZE (2ul << 20)
#define NPOL 3
#define MAX_READERS 4

static struct {
	long long vmas, seconds, readers;
	const char *test;
	bool quick;
} opt = { 20000, 2, 2, NULL, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nosteal_check --test retake|kill|khugepaged [--vmas N] [--seconds S]\n"
		"                     [--readers R] [--quick]\n"
		"\n"
		"The kernel tests of lab 01 (down_read_nosteal() and the steal decision in\n"
		"rwsem_down_read_slowpath(), our patch 0003), run inside the guest. Each\n"
		"test prints {\"type\":\"test\",\"name\":...,\"pass\":...,\"reason\":...}; the host\n"
		"(labs/kernel/klab.py) also fails a test whose run left a splat on the console.\n"
		"\n"
		"  retake      show_smaps_rollup() drops mmap_lock for a queued mmap writer\n"
		"              and retakes it, under rwsem_steal_policy 0, 1 and 2 in turn:\n"
		"                stock_readers_still_steal      policy 0 still steals\n"
		"                todo1_retake_never_steals      policies 1 and 2 steal at most\n"
		"                                               once per read (its first lock)\n"
		"                todo1_declined_steals_counted  rwsem_rlock_nosteal moves under\n"
		"                                               policy 1, not under policy 0\n"
		"  kill        smaps_rollup readers of a process that forks in a loop (each\n"
		"              fork holds its mmap_lock for writing) are SIGKILLed while they\n"
		"              wait in the nosteal retake, under policy 1:\n"
		"                killed_in_retake_clean         every reader dies at once, the\n"
		"                                               kill path ran (rwsem_rlock_fail)\n"
		"  khugepaged  khugepaged's skip-batch retake (patch 0005, down_read_nosteal())\n"
		"              against an mmap writer, policy 0 then 1:\n"
		"                todo2_khugepaged_retake_never_steals\n"
		"\n"
		"  --test T     which test run (required)\n"
		"  --vmas N     small VMAs of the mm under test (100..200000, default 20000; quick 2000)\n"
		"  --seconds S  seconds per position (1..60, default 2; quick 1)\n"
		"  --readers R  reader threads or processes (1..%d, default 2)\n"
		"  --quick      small settings (the smoke boot), --test retake if none is given\n"
		"  --help       this text\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM.\n"
		"Exit: 0 the tests ran (their records say pass or fail), 1 setup failed,\n"
		"2 usage, 3 not the mmlocks kernel.\n", MAX_READERS);
}

static long long lockev(const char *name)
{
	return mg_counter(MG_LOCKEV, name);
}

static void reset_lockev(void)
{
	mg_write_file(MG_LOCKEV "/.reset_counts", "1");
}

static int set_or_fail(const char *path, const char *val)
{
	int err = mg_knob_set(path, val);

	if (err)
		mg_error(EXP, "setting %s to %s: %s", path, val, strerror(-err));
	return err;
}

/* ---- retake: show_smaps_rollup()'s drop and retake --------------------- */

static int phase = MG_PHASE_IDLE;
static unsigned long long reads[NPOL], bad_reads;

static void *smaps_reader(void *arg)
{
	size_t size = 1 << 16;
	char *buf = malloc(size);

	(void)arg;
	while (buf && __atomic_load_n(&phase, __ATOMIC_ACQUIRE) != MG_PHASE_STOP) {
		int p = __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
		ssize_t n = mg_read_file("/proc/self/smaps_rollup", buf, size);

		if (n <= 0 || !strstr(buf, "Rss:"))
			__atomic_fetch_add(&bad_reads, 1, __ATOMIC_RELAXED);
		else if (p >= 0 && p == __atomic_load_n(&phase, __ATOMIC_ACQUIRE))
			__atomic_fetch_add(&reads[p], 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

static int test_retake(void)
{
	static struct mg_lat lat[NPOL];
	struct mg_writer w = { &phase, lat, 200 };
	pthread_t rt[MAX_READERS], wt;
	long long steal[NPOL], nosteal[NPOL], calls[NPOL];
	struct mg_json j;
	int err;

	if (mg_exists(MG_KNOBS "/smaps_rollup_vma_lock") &&
	    set_or_fail(MG_KNOBS "/smaps_rollup_vma_lock", "0"))
		return MG_EXIT_FAIL;
	if ((err = mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))) {
		mg_error(EXP, "mapping %lld small VMAs: %s", opt.vmas, strerror(-err));
		return MG_EXIT_FAIL;
	}
	for (int p = 0; p < NPOL; p++)
		mg_lat_init(&lat[p], 1 << 16);
	for (int i = 0; i < opt.readers; i++)
		pthread_create(&rt[i], NULL, smaps_reader, NULL);
	pthread_create(&wt, NULL, mg_mmap_writer, &w);
	for (int p = 0; p < NPOL; p++) {
		char v[4];

		snprintf(v, sizeof(v), "%d", p);
		if (set_or_fail(MG_KNOBS "/rwsem_steal_policy", v))
			return MG_EXIT_FAIL;
		reset_lockev();
		__atomic_store_n(&phase, p, __ATOMIC_RELEASE);
		mg_sleep_us((unsigned long)opt.seconds * 1000000ul);
		__atomic_store_n(&phase, MG_PHASE_IDLE, __ATOMIC_RELEASE);
		steal[p] = lockev("rwsem_rlock_steal");
		nosteal[p] = lockev("rwsem_rlock_nosteal");
		calls[p] = (long long)lat[p].count;
	}
	__atomic_store_n(&phase, MG_PHASE_STOP, __ATOMIC_RELEASE);
	for (int i = 0; i < opt.readers; i++)
		pthread_join(rt[i], NULL);
	pthread_join(wt, NULL);

	for (int p = 0; p < NPOL; p++) {
		mgj_start(&j, "sample", EXP);
		mgj_str(&j, "test", "retake");
		mgj_int(&j, "rwsem_steal_policy", p);
		mgj_int(&j, "smaps_rollup_reads", (long long)reads[p]);
		mgj_int(&j, "writer_calls", calls[p]);
		mgj_int(&j, "rwsem_rlock_steal", steal[p]);
		mgj_int(&j, "rwsem_rlock_nosteal", nosteal[p]);
		mgj_emit(&j);
	}
	if (bad_reads) {
		const char *t[] = { "stock_readers_still_steal", "todo1_retake_never_steals",
				    "todo1_declined_steals_counted" };

		for (int i = 0; i < 3; i++)
			mg_test_record(EXP, t[i], false, "%llu reads of /proc/self/smaps_rollup failed or "
				    "returned no Rss line", bad_reads);
		return MG_EXIT_OK;
	}
	/* The stock steal must survive the change: without it there is nothing to decline, either. */
	mg_test_record(EXP, "stock_readers_still_steal", steal[0] >= 20,
		    "policy 0 (stock): %lld steals in %llu reads while the writer made %lld calls%s",
		    steal[0], reads[0], calls[0], steal[0] >= 20 ? "" : " (want >= 20: stock readers "
		    "must still steal, or there was no contention to test)");
	/*
	 * Under policies 1 and 2 a read's first mmap_read_lock_killable() may
	 * still steal (it is no retake; policy 2 declines it too when the
	 * writer is first), so allow one steal per read, plus a little for
	 * the rest of the guest.
	 */
	{
		bool ok = steal[0] >= 20 && steal[1] <= (long long)reads[1] + 5 &&
			  steal[2] <= (long long)reads[2] + 5;

		mg_test_record(EXP, "todo1_retake_never_steals", ok,
			    "steals: policy 0 %lld, policy 1 %lld in %llu reads, policy 2 %lld in %llu "
			    "reads%s", steal[0], steal[1], reads[1], steal[2], reads[2],
			    ok ? "" : steal[0] < 20 ? " (no contention under policy 0: inconclusive)"
			    : " (want at most one per read under policies 1 and 2: the retake must "
			    "queue behind the writer)");
	}
	mg_test_record(EXP, "todo1_declined_steals_counted", nosteal[1] > 0 && nosteal[0] == 0,
		    "rwsem_rlock_nosteal: policy 0 %lld (want 0), policy 1 %lld (want > 0)",
		    nosteal[0], nosteal[1]);
	return MG_EXIT_OK;
}

/* ---- kill: SIGKILL while queued in the nosteal retake ------------------ */

/* Completed fork()s of the target, in a page it shares with us. */
static volatile unsigned long *forks;

static void forker(int ready_fd, void *arg)
{
	struct sigaction sa = { .sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT };
	char ok = 1;

	(void)arg;
	sigaction(SIGCHLD, &sa, NULL); /* children are reaped by the kernel */
	if (mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))
		_exit(1);
	if (write(ready_fd, &ok, 1) != 1)
		_exit(1);
	close(ready_fd);
	/* Every fork() holds this mm's mmap_lock for writing while it copies the VMAs. */
	for (;;) {
		pid_t c = fork();

		if (c == 0)
			_exit(0);
		if (c < 0)
			mg_sleep_us(1000);
		else
			__atomic_fetch_add(forks, 1, __ATOMIC_RELEASE);
	}
}

struct reader_arg {
	pid_t target;
};

static void smaps_proc_reader(int ready_fd, void *arg)
{
	const struct reader_arg *a = arg;
	char path[64], *buf = malloc(1 << 16);
	char ok = 1;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)a->target);
	if (!buf || write(ready_fd, &ok, 1) != 1)
		_exit(1);
	close(ready_fd);
	for (;;)
		mg_read_file(path, buf, 1 << 16);
}

/*
 * A reader's first mmap_read_lock_killable() waits for the fork under way;
 * once it has the lock it walks until the next fork() queues, drops the
 * lock and waits in the nosteal retake for that whole fork. So a reader is
 * killed only after at least two forks completed since it started: it is
 * then most likely queued in the retake.
 */
static int test_kill(void)
{
	struct reader_arg ra;
	pid_t rd[MAX_READERS];
	unsigned long born[MAX_READERS];
	long long kills = 0, fail0, nost0;
	uint64_t end;
	unsigned int seed = 12345;
	char ok;
	bool stuck = false;

	forks = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (forks == MAP_FAILED) {
		mg_error(EXP, "mmap of the shared counter: %s", strerror(errno));
		return MG_EXIT_FAIL;
	}
	if (mg_exists(MG_KNOBS "/smaps_rollup_vma_lock") &&
	    set_or_fail(MG_KNOBS "/smaps_rollup_vma_lock", "0"))
		return MG_EXIT_FAIL;
	if (set_or_fail(MG_KNOBS "/rwsem_steal_policy", "1"))
		return MG_EXIT_FAIL;
	ra.target = mg_spawn_ready(forker, NULL, &ok, 1);
	if (ra.target < 0) {
		mg_error(EXP, "the forking target did not start (mapping %lld VMAs?)", opt.vmas);
		return MG_EXIT_FAIL;
	}
	for (int i = 0; i < opt.readers; i++) {
		born[i] = __atomic_load_n(forks, __ATOMIC_ACQUIRE);
		if ((rd[i] = mg_spawn_ready(smaps_proc_reader, &ra, &ok, 1)) < 0) {
			mg_error(EXP, "a reader did not start");
			return MG_EXIT_FAIL;
		}
	}
	reset_lockev();
	fail0 = lockev("rwsem_rlock_fail");
	nost0 = lockev("rwsem_rlock_nosteal");
	end = mg_now_ns() + (uint64_t)opt.seconds * 1000000000ull;
	while (mg_now_ns() < end && !stuck) {
		for (int i = 0; i < opt.readers && !stuck; i++) {
			unsigned long f = __atomic_load_n(forks, __ATOMIC_ACQUIRE);

			if (f < born[i] + 2 + (rand_r(&seed) & 1))
				continue;
			/* Somewhere inside the fork that the retake waits for. */
			mg_sleep_us(1000 + rand_r(&seed) % 5000);
			if (mg_kill_child(EXP, rd[i])) {
				stuck = true;
				break;
			}
			kills++;
			born[i] = __atomic_load_n(forks, __ATOMIC_ACQUIRE);
			if ((rd[i] = mg_spawn_ready(smaps_proc_reader, &ra, &ok, 1)) < 0) {
				mg_error(EXP, "a reader did not start");
				return MG_EXIT_FAIL;
			}
		}
		mg_sleep_us(2000);
	}
	{
		long long fails = lockev("rwsem_rlock_fail") - fail0;
		long long nost = lockev("rwsem_rlock_nosteal") - nost0;
		unsigned long nforks = __atomic_load_n(forks, __ATOMIC_ACQUIRE);
		struct mg_json j;

		mgj_start(&j, "sample", EXP);
		mgj_str(&j, "test", "kill");
		mgj_int(&j, "kills", kills);
		mgj_int(&j, "forks", (long long)nforks);
		mgj_int(&j, "rwsem_rlock_fail", fails);
		mgj_int(&j, "rwsem_rlock_nosteal", nost);
		mgj_emit(&j);
		for (int i = 0; i < opt.readers && !stuck; i++)
			stuck = mg_kill_child(EXP, rd[i]) != 0;
		stuck = stuck || mg_kill_child(EXP, ra.target) != 0;
		/*
		 * The nosteal retakes are reported, not required: on the
		 * skeleton (stock stubs) there are none, and this test checks
		 * what must not break.
		 */
		mg_test_record(EXP, "killed_in_retake_clean", !stuck && fails > 0,
			    "%lld readers SIGKILLed during %lu forks of the target, %s; %lld read-lock "
			    "waits ended by the signal (rwsem_rlock_fail), %lld nosteal retakes%s", kills,
			    nforks, stuck ? "one did NOT die within 10 s" : "each died at once", fails, nost,
			    stuck ? "" : fails == 0 ? " (want > 0: no kill landed in a lock wait, "
			    "inconclusive)" : "");
	}
	return MG_EXIT_OK;
}

/* ---- khugepaged: the skip-batch retake --------------------------------- */

static long long khp(const char *name)
{
	return mg_counter(MG_KHUGEPAGED, name);
}

static int test_khugepaged(void)
{
	static struct mg_lat lat[2];
	struct mg_writer w = { &phase, lat, 200 };
	const size_t region = 2 * PMD_SIZE;
	long long steal[2], nosteal[2], scans[2];
	uintptr_t raddr;
	pthread_t wt;
	char *r;
	int err;

	if (set_or_fail(MG_THP "/enabled", "madvise") ||
	    set_or_fail(MG_KHUGEPAGED "/scan_sleep_millisecs", "0") ||
	    set_or_fail(MG_KNOBS "/khugepaged_skip_batch", "64") ||
	    set_or_fail(MG_KNOBS "/rwsem_steal_policy", "0"))
		return MG_EXIT_FAIL;
	if ((err = mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))) {
		mg_error(EXP, "mapping %lld small VMAs: %s", opt.vmas, strerror(-err));
		return MG_EXIT_FAIL;
	}
	/* A region above them makes khugepaged walk this mm: MADV_HUGEPAGE registers it. */
	raddr = (SMALL_BASE + (uintptr_t)opt.vmas * 4096 + 2 * PMD_SIZE) & ~(PMD_SIZE - 1);
	r = mmap((void *)raddr, region, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (r == MAP_FAILED) {
		mg_error(EXP, "mapping the region: %s", strerror(errno));
		return MG_EXIT_FAIL;
	}
	for (size_t off = 0; off < region; off += 4096)
		r[off] = 1;
	if (madvise(r, region, MADV_HUGEPAGE)) {
		mg_error(EXP, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
		return MG_EXIT_FAIL;
	}
	pthread_create(&wt, NULL, mg_mmap_writer, &w);
	for (int p = 0; p < 2; p++)
		mg_lat_init(&lat[p], 1 << 16);
	for (int p = 0; p < 2; p++) {
		char v[4];

		snprintf(v, sizeof(v), "%d", p);
		if (set_or_fail(MG_KNOBS "/rwsem_steal_policy", v))
			return MG_EXIT_FAIL;
		reset_lockev();
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
		mgj_str(&j, "test", "khugepaged");
		mgj_int(&j, "rwsem_steal_policy", p);
		mgj_int(&j, "full_scans", scans[p]);
		mgj_int(&j, "writer_calls", (long long)lat[p].count);
		mgj_int(&j, "rwsem_rlock_steal", steal[p]);
		mgj_int(&j, "rwsem_rlock_nosteal", nosteal[p]);
		mgj_emit(&j);
	}
	{
		/* Only khugepaged retakes this mm's lock for reading: its first lock is a trylock. */
		bool ok = steal[0] >= 5 && steal[1] <= 2 && nosteal[1] > 0;

		mg_test_record(EXP, "todo2_khugepaged_retake_never_steals", ok,
			    "khugepaged_skip_batch 64, %lld small VMAs: policy 0 %lld steals in %lld "
			    "scans, policy 1 %lld steals and %lld nosteal retakes in %lld scans%s",
			    opt.vmas, steal[0], scans[0], steal[1], nosteal[1], scans[1],
			    ok ? "" : steal[0] < 5 ? " (no steal under policy 0: no contention, "
			    "inconclusive)" : " (want no steal and some nosteal retakes under "
			    "policy 1: down_read_nosteal() must queue behind the writer)");
	}
	return MG_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/rwsem_steal_policy", MG_LOCKEV "/rwsem_rlock_steal",
		MG_LOCKEV "/rwsem_rlock_nosteal", MG_LOCKEV "/rwsem_rlock_fail",
		MG_LOCKEV "/.reset_counts", NULL,
	};
	static const struct mg_opt o[] = {
		MG_INT("vmas", &opt.vmas, 100, 200000, 2000),
		MG_INT("seconds", &opt.seconds, 1, 60, 1),
		MG_INT("readers", &opt.readers, 1, MAX_READERS, MG_NO_QUICK),
		MG_STR("test", &opt.test),
		MG_OPTS_END,
	};
	struct mg_json j;

	opt.quick = mg_parse_opts("nosteal_check", argc, argv, o, usage);
	if (!opt.test && opt.quick)
		opt.test = "retake";
	if (!opt.test)
		mg_usage_error("nosteal_check", usage, "--test is required");
	if (strcmp(opt.test, "retake") && strcmp(opt.test, "kill") && strcmp(opt.test, "khugepaged"))
		mg_usage_error("nosteal_check", usage, "--test must be retake, kill or khugepaged, not '%s'",
			       opt.test);
	mg_require(EXP, need);
	mg_install_restore();
	mgj_start(&j, "info", EXP);
	mgj_str(&j, "test", opt.test);
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "seconds", opt.seconds);
	mgj_int(&j, "readers", opt.readers);
	mgj_emit(&j);
	if (!strcmp(opt.test, "retake"))
		return test_retake();
	if (!strcmp(opt.test, "kill"))
		return test_kill();
	return test_khugepaged();
}
