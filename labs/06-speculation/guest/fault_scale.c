/* Guest experiment "speculation-noregress": will-it-scale's page_fault1/2/3 and malloc2 with the uprobe_speculate switch at 0 and 1, interleaved. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "fault_scale/report.h"
#include "fault_scale/workload.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXP FS_EXP
#define MAX_THREADS 64

struct fs_opts opt = { 0, 4, 600, 5, 150, NULL, "uprobe_speculate", "/tmp", 0, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fault_scale [--quick] [--threads N] [--mib M] [--ms MS] [--reps R]\n"
		"                   [--patterns LIST] [--knob NAME] [--dir DIR] [--timeout T]\n"
		"\n"
		"Experiment \"speculation-noregress\" (needs the patched mmlocks 6.12 kernel,\n"
		"patch 0011's switch /sys/kernel/debug/mmlocks/uprobe_speculate).\n"
		"Our will-it-scale: N threads (one per vCPU) each run one pattern for MS ms:\n"
		"  page_fault1  mmap M MiB private anonymous, write every page, munmap, repeat\n"
		"  page_fault2  the same on the thread's own tmpfs file, MAP_PRIVATE\n"
		"  page_fault3  the same, MAP_SHARED\n"
		"  malloc2      malloc(1 KiB), write it, free, repeat\n"
		"ops/s = pages written (or malloc/free pairs) per second, all threads. Each\n"
		"pattern runs with the switch at 0 and at 1 back to back, the order\n"
		"alternating (0,1 then 1,0) over R repetitions, then once with 1 thread (the\n"
		"no-contention baseline). Per pattern: median and min-max per position, the\n"
		"ratio 1/0 against the goal \"within +-5 %%\", and each position's spread.\n"
		"Patch 0011 changes only the uprobe lookup, so both positions run the same\n"
		"code here: the comparison is an A/A one and its spread is the noise floor.\n"
		"Per sample it records the switch read back, its counters (uprobe_*: 0\n"
		"here, no uprobe is hit) and pgfault, vma_lock_* of /proc/vmstat.\n"
		"M is 4 MiB, not will-it-scale's 128 MiB: a fault under QEMU TCG costs\n"
		"far more than on hardware (more again on a loaded host), so a 128 MiB pass\n"
		"(32768 faults, then one munmap) would outlast a sample; 4 MiB (1024 faults)\n"
		"keeps several passes per worker in every sample, so each sample has the\n"
		"same mix of faults and unmaps. On KVM or hardware, --mib 128.\n"
		"The tmpfs files are created in DIR and unlinked at once (will-it-scale's\n"
		"way); a name not yet unlinked is removed on exit, SIGINT and SIGTERM. The\n"
		"switch and THP enabled (set to madvise) are restored then too.\n"
		"\n"
		"  --threads N     workers (0..%d, default 0 = one per vCPU)\n"
		"  --mib M         region per pass of page_fault1/2/3, MiB (1..512, default 4)\n"
		"  --ms MS         length of one sample, ms (50..60000, default 600; quick 200)\n"
		"  --reps R        repetitions of each (pattern, position) (1..%d, default 5;\n"
		"                  quick 2)\n"
		"  --patterns L    comma-separated subset of page_fault1,page_fault2,\n"
		"                  page_fault3,malloc2 (default: all four)\n"
		"  --knob NAME     the switch in /sys/kernel/debug/mmlocks (default\n"
		"                  uprobe_speculate; another knob only to test this program)\n"
		"  --dir DIR       tmpfs directory for the files (default /tmp)\n"
		"  --timeout T     bound on the whole program, s (10..3600, default 150; quick 60)\n"
		"  --quick         small, fast settings (< 10 s under TCG)\n"
		"  --help          this text\n"
		"\n"
		"Output: JSON lines on stdout (info, sample and baseline per cell, table_row,\n"
		"summary per pattern). Exit: 0 ok (a FAIL against the goal is a result),\n"
		"1 failed, 2 usage, 3 wrong kernel (the switch is missing).\n",
		MAX_THREADS, FS_MAX_REPS);
}

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "fault_scale: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	exit(MG_EXIT_USAGE);
}

static void check_opts(void)
{
	opt.mask = opt.patterns ? fs_pattern_list(opt.patterns) : (1u << FS_NPAT) - 1;
	if (!opt.mask)
		usage_error("--patterns: expected distinct names of page_fault1, page_fault2, "
			    "page_fault3, malloc2, got '%s'", opt.patterns);
	if (!*opt.knob || strlen(opt.knob) >= FS_KC_NAME / 2 ||
	    strspn(opt.knob, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(opt.knob))
		usage_error("--knob: expected a file name of [a-z0-9_], got '%s'", opt.knob);
	if (!fs_dir_is_tmpfs(opt.dir))
		usage_error("--dir: '%s' is not a directory on tmpfs", opt.dir);
}

/* ---- one sample: W workers on one pattern for opt.ms ------------------------ */

static int stop;
static pthread_barrier_t start_line;
static struct fs_worker workers[MAX_THREADS];
static int files[MAX_THREADS] = { [0 ... MAX_THREADS - 1] = -1 };

struct start {
	struct fs_worker *w;
	int cpu;
};

static void *worker(void *arg)
{
	struct start *st = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(st->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
	pthread_barrier_wait(&start_line);
	return fs_worker_main(st->w);
}

/* Run nthreads workers; *ops and *seconds cover the window until the count. */
static bool run_workers(int p, int nthreads, long nproc, long long *ops, double *seconds)
{
	static struct start st[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	uint64_t t0, end;
	int started = 0, err = 0;

	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	if (pthread_barrier_init(&start_line, NULL, (unsigned)nthreads + 1))
		return false;
	for (; started < nthreads; started++) {
		workers[started] = (struct fs_worker){ .pattern = p, .len = (size_t)opt.mib << 20,
						       .fd = files[started], .stop = &stop };
		st[started] = (struct start){ &workers[started], (int)(started % nproc) };
		if (pthread_create(&t[started], NULL, worker, &st[started]))
			break;
	}
	if (started < nthreads) { /* the barrier would never open */
		mg_error(EXP, "cannot start thread %d of %d", started + 1, nthreads);
		exit(MG_EXIT_FAIL);
	}
	pthread_barrier_wait(&start_line);
	t0 = mg_now_ns();
	end = t0 + (uint64_t)opt.ms * 1000000ull;
	while (!mg_stop_signal && mg_now_ns() < end)
		mg_sleep_us(5000);
	/* region: window */
	*ops = 0;
	for (int i = 0; i < nthreads; i++)
		*ops += __atomic_load_n(&workers[i].ops, __ATOMIC_RELAXED);
	*seconds = (double)(mg_now_ns() - t0) / 1e9;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	/* endregion: window */
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		err = err ? err : workers[i].err;
	}
	pthread_barrier_destroy(&start_line);
	if (err)
		mg_error(EXP, "%s in a worker: %s", p == FS_MALLOC2 ? "malloc" : "mmap", strerror(err));
	return !err;
}

static bool read_kc(long long v[FS_MAX_KC])
{
	char path[256];

	for (int i = 0; i < fs_nkc; i++) {
		snprintf(path, sizeof(path), MG_KNOBS "/%.63s", fs_kc_names[i]);
		if (mg_read_ll(path, &v[i]))
			return false;
	}
	return true;
}

/* region: one-sample */
static bool measure(int p, int pos, int rep, int nthreads, long nproc, struct fs_sample *s)
{
	long long vm0[FS_VM_NR], vm1[FS_VM_NR], kc0[FS_MAX_KC], kc1[FS_MAX_KC];
	char knob[256];

	snprintf(knob, sizeof(knob), MG_KNOBS "/%s", opt.knob);
	memset(s, 0, sizeof(*s));
	*s = (struct fs_sample){ .pattern = p, .pos = pos, .rep = rep, .threads = nthreads,
				 .knob_readback = -1 };
	if (mg_knob_set_ll(knob, pos) || mg_read_ll(knob, &s->knob_readback) || s->knob_readback != pos) {
		mg_error(EXP, "cannot set %s to %d (read back %lld)", knob, pos, s->knob_readback);
		return false;
	}
	if (!fs_vm_read(vm0) || !read_kc(kc0)) {
		mg_error(EXP, "cannot read /proc/vmstat or the %s_* counters", opt.knob);
		return false;
	}
	if (!run_workers(p, nthreads, nproc, &s->ops, &s->seconds))
		return false;
	if (!fs_vm_read(vm1) || !read_kc(kc1)) {
		mg_error(EXP, "cannot read /proc/vmstat or the %s_* counters", opt.knob);
		return false;
	}
	for (int i = 0; i < FS_VM_NR; i++)
		s->vm[i] = vm0[i] < 0 || vm1[i] < 0 ? -1 : vm1[i] - vm0[i];
	for (int i = 0; i < fs_nkc; i++)
		s->kc[i] = kc1[i] - kc0[i];
	s->ops_per_s = s->seconds > 0 ? (double)s->ops / s->seconds : 0;
	return true;
}
/* endregion: one-sample */

static void close_files(void)
{
	for (int i = 0; i < MAX_THREADS; i++)
		if (files[i] >= 0) {
			close(files[i]);
			files[i] = -1;
		}
}

/* SIGALRM (the --timeout bound) takes the SIGTERM path: files, switch and THP restored, exit. */
static void on_alarm(int sig)
{
	(void)sig;
	kill(getpid(), SIGTERM);
}

int main(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("threads", &opt.threads, 0, MAX_THREADS, MG_NO_QUICK),
		MG_INT("mib", &opt.mib, 1, 512, MG_NO_QUICK),
		MG_INT("ms", &opt.ms, 50, 60000, 200),
		MG_INT("reps", &opt.reps, 1, FS_MAX_REPS, 2),
		MG_INT("timeout", &opt.timeout, 10, 3600, 60),
		MG_STR("patterns", &opt.patterns),
		MG_STR("knob", &opt.knob),
		MG_STR("dir", &opt.dir),
		MG_OPTS_END,
	};
	static struct fs_sample cells[FS_MAX_REPS][FS_NPAT][2], base[FS_NPAT];
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);
	char knob[256], thp[64] = "none";
	int threads;

	opt.quick = mg_parse_opts("fault_scale", argc, argv, o, usage);
	check_opts();
	snprintf(knob, sizeof(knob), MG_KNOBS "/%s", opt.knob);
	if (!mg_exists(knob)) {
		mg_error(EXP, "%s is missing: this program needs the patched mmlocks 6.12 kernel with "
			 "patch 0011 (the uprobe_speculate switch) and debugfs at /sys/kernel/debug", knob);
		return MG_EXIT_WRONG_KERNEL;
	}
	mg_install_restore();
	mg_on_restore(fs_unlink_pending);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)opt.timeout);
	nproc = nproc < 1 ? 1 : nproc;
	threads = opt.threads ? (int)opt.threads : (int)(nproc < MAX_THREADS ? nproc : MAX_THREADS);
	fs_nkc = fs_knob_counters(MG_KNOBS, opt.knob, fs_kc_names);
	if (fs_nkc < 0) {
		mg_error(EXP, "cannot list %s: %s", MG_KNOBS, strerror(-fs_nkc));
		return MG_EXIT_FAIL;
	}
	/* No THP for the page_fault regions (never madvised): 4 KiB faults only. */
	if (mg_exists(MG_THP "/enabled") && mg_knob_set(MG_THP "/enabled", "madvise")) {
		mg_error(EXP, "cannot set %s to madvise", MG_THP "/enabled");
		return MG_EXIT_FAIL;
	}
	if (mg_exists(MG_THP "/enabled"))
		snprintf(thp, sizeof(thp), "madvise");
	fs_info_record(nproc, threads, thp);
	for (int i = 0; i < threads && opt.mask & (1u << FS_PAGE_FAULT2 | 1u << FS_PAGE_FAULT3); i++) {
		files[i] = fs_file_create(opt.dir, (size_t)opt.mib << 20);
		if (files[i] < 0) {
			mg_error(EXP, "cannot create a %lld MiB file in %s: %s", opt.mib, opt.dir,
				 strerror(-files[i]));
			return MG_EXIT_FAIL;
		}
	}

	/* region: run-loop */
	for (int rep = 0; rep < opt.reps && !mg_stop_signal; rep++) {
		for (int p = 0; p < FS_NPAT; p++) {
			if (!(opt.mask & (1u << p)))
				continue;
			for (int k = 0; k < 2; k++) {
				int pos = fs_position(rep, p, k);
				struct fs_sample *s = &cells[rep][p][pos];

				mg_log("rep %d, %s, %s %d", rep + 1, fs_pattern_names[p], opt.knob, pos);
				if (!measure(p, pos, rep, threads, nproc, s))
					return MG_EXIT_FAIL;
				fs_emit_sample(s, false);
			}
		}
	}
	/* The no-contention baseline: one thread, the default position (1). */
	for (int p = 0; p < FS_NPAT && !mg_stop_signal; p++) {
		if (!(opt.mask & (1u << p)))
			continue;
		if (!measure(p, 1, 0, 1, nproc, &base[p]))
			return MG_EXIT_FAIL;
		fs_emit_sample(&base[p], true);
	}
	/* endregion: run-loop */
	close_files();
	mg_restore_all();
	if (mg_stop_signal)
		return MG_EXIT_FAIL;
	fs_summary_records(cells, base, (int)opt.reps, threads);
	return MG_EXIT_OK;
}
