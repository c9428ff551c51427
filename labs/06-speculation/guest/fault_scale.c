/* Guest experiment "speculation-noregress": will-it-scale's page_fault1/2/3 and malloc2, by will-it-scale's method, with the uprobe_speculate switch at 0 and 1 interleaved (or left alone: --no-switch). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "fault_scale/report.h"
#include "fault_scale/workload.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#define EXP FS_EXP
#define MAX_THREADS FS_MAX_THREADS

struct fs_opts opt = { 0, 128, 1000, 1, 3, 3, 300, NULL, "uprobe_speculate", "/tmp", 0, false, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fault_scale [--quick] [--threads N] [--mib M] [--sample-ms MS] [--warmup W]\n"
		"                   [--samples S] [--reps R] [--patterns LIST] [--knob NAME]\n"
		"                   [--dir DIR] [--timeout T] [--no-switch]\n"
		"\n"
		"Experiment \"speculation-noregress\" (needs the patched mmlocks 6.12 kernel,\n"
		"patch 0011's switch /sys/kernel/debug/mmlocks/uprobe_speculate, unless\n"
		"--no-switch). Our will-it-scale: N threads (one per vCPU), each pinned to\n"
		"one CPU, run one pattern without a break:\n"
		"  page_fault1  mmap M MiB private anonymous, write one byte per page, munmap, repeat\n"
		"  page_fault2  the same on the thread's own tmpfs file, MAP_PRIVATE\n"
		"  page_fault3  the same, MAP_SHARED\n"
		"  malloc2      malloc(1 KiB), write it, free, repeat\n"
		"One op is one page written (or one malloc/free pair). Each thread bumps its\n"
		"own counter, alone on its cache line; the main thread reads them every MS\n"
		"ms and records the rate of that period. A cell is W warm-up periods\n"
		"(dropped) and S kept ones; its ops/s is the mean of the kept periods (median,\n"
		"min and max are reported too). Each pattern runs one cell with the switch at\n"
		"0 and one at 1, back to back, the order alternating (0,1 then 1,0) over R\n"
		"repetitions, then one cell with 1 thread (the no-contention baseline). Per\n"
		"pattern: median and min-max over the repetitions per position, the ratio 1/0\n"
		"against the goal \"within +-5 %%\", and each position's spread. Patch 0011\n"
		"changes only the uprobe lookup, so both positions run the same code here:\n"
		"the comparison is an A/A one and its spread is the noise floor. Per cell it\n"
		"records the switch read back, its counters (uprobe_*: 0 here, no uprobe is\n"
		"hit) and pgfault, vma_lock_* of /proc/vmstat over the kept periods.\n"
		"--no-switch: any kernel (the stock one too); one cell per pattern and\n"
		"repetition with the switch left as it is, and a result record per pattern\n"
		"(what labs/kernel/compare-stock.sh compares across boots).\n"
		"The tmpfs files are created in DIR and unlinked at once (will-it-scale's\n"
		"way); a name not yet unlinked is removed on exit, SIGINT and SIGTERM. The\n"
		"switch and THP enabled (set to madvise) are restored then too.\n"
		"\n"
		"  --threads N     workers (0..%d, default 0 = one per vCPU)\n"
		"  --mib M         region per pass of page_fault1/2/3, MiB (1..512, default 128,\n"
		"                  will-it-scale's; quick 16)\n"
		"  --sample-ms MS  one sample period, ms (50..10000, default 1000; quick 250)\n"
		"  --warmup W      warm-up periods dropped per cell (0..30, default 1)\n"
		"  --samples S     kept periods per cell (1..%d, default 3; quick 2)\n"
		"  --reps R        repetitions of each (pattern, position) (1..%d, default 3;\n"
		"                  quick 1)\n"
		"  --patterns L    comma-separated subset of page_fault1,page_fault2,\n"
		"                  page_fault3,malloc2 (default: all four)\n"
		"  --knob NAME     the switch in /sys/kernel/debug/mmlocks (default\n"
		"                  uprobe_speculate; another knob only to test this program)\n"
		"  --dir DIR       tmpfs directory for the files (default /tmp)\n"
		"  --timeout T     bound on the whole program, s (10..3600, default 300; quick 60)\n"
		"  --no-switch     leave the switch alone (it need not exist): stock-kernel runs\n"
		"  --quick         small, fast settings (< 15 s under TCG)\n"
		"  --help          this text\n"
		"\n"
		"Output: JSON lines on stdout (info, sample and baseline per cell, table_row,\n"
		"summary per pattern; with --no-switch info, sample, result). Exit: 0 ok (a\n"
		"FAIL against the goal is a result), 1 failed, 2 usage, 3 wrong kernel (the\n"
		"switch is missing).\n",
		MAX_THREADS, FS_MAX_SAMPLES, FS_MAX_REPS);
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

/* ---- one cell: W workers on one pattern ------------------------------------- */

static int files[MAX_THREADS] = { [0 ... MAX_THREADS - 1] = -1 };

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

/* The counters at both ends of the kept window (fs_cell.mark). */
struct marks {
	long long vm[2][FS_VM_NR], kc[2][FS_MAX_KC];
	bool ok[2];
};

static void mark(void *arg, int end)
{
	struct marks *m = arg;

	m->ok[end] = fs_vm_read(m->vm[end]) && read_kc(m->kc[end]);
}

/* region: one-sample */
static bool measure(int p, int pos, int rep, int nthreads, long nproc, struct fs_sample *s)
{
	static struct fs_cell c;
	struct marks m = { .ok = { false, false } };
	char knob[256];
	int rc;

	snprintf(knob, sizeof(knob), MG_KNOBS "/%s", opt.knob);
	memset(s, 0, sizeof(*s));
	*s = (struct fs_sample){ .pattern = p, .pos = pos, .rep = rep, .threads = nthreads,
				 .knob_readback = -1 };
	if (pos >= 0 && (mg_knob_set_ll(knob, pos) || mg_read_ll(knob, &s->knob_readback) ||
			 s->knob_readback != pos)) {
		mg_error(EXP, "cannot set %s to %d (read back %lld)", knob, pos, s->knob_readback);
		return false;
	}
	c = (struct fs_cell){ .pattern = p, .threads = nthreads, .ncpu = (int)nproc,
			      .warmup = (int)opt.warmup, .samples = (int)opt.samples,
			      .sample_ms = (long)opt.sample_ms, .len = (size_t)opt.mib << 20,
			      .fds = files, .mark = mark, .arg = &m };
	rc = fs_run_cell(&c);
	if (rc == -EINTR)
		return false;
	if (rc) {
		mg_error(EXP, "%s: %s", c.err ? (p == FS_MALLOC2 ? "malloc in a worker" : "mmap in a worker")
					     : "cannot start the workers", strerror(-rc));
		return false;
	}
	if (!m.ok[0] || !m.ok[1]) {
		mg_error(EXP, "cannot read /proc/vmstat or the %s_* counters", opt.knob);
		return false;
	}
	for (int i = 0; i < FS_VM_NR; i++)
		s->vm[i] = m.vm[0][i] < 0 || m.vm[1][i] < 0 ? -1 : m.vm[1][i] - m.vm[0][i];
	for (int i = 0; i < fs_nkc; i++)
		s->kc[i] = m.kc[1][i] - m.kc[0][i];
	s->ops = c.ops;
	s->seconds = c.seconds;
	s->pinned = c.pinned;
	s->nrate = c.samples;
	memcpy(s->rate, c.rate, sizeof(s->rate));
	s->per_period = fs_stats_of(c.rate, c.samples);
	s->ops_per_s = s->per_period.mean; /* will-it-scale's average */
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
		MG_INT("mib", &opt.mib, 1, 512, 16),
		MG_INT("sample-ms", &opt.sample_ms, 50, 10000, 250),
		MG_INT("warmup", &opt.warmup, 0, 30, MG_NO_QUICK),
		MG_INT("samples", &opt.samples, 1, FS_MAX_SAMPLES, 2),
		MG_INT("reps", &opt.reps, 1, FS_MAX_REPS, 1),
		MG_INT("timeout", &opt.timeout, 10, 3600, 60),
		MG_STR("patterns", &opt.patterns),
		MG_STR("knob", &opt.knob),
		MG_STR("dir", &opt.dir),
		MG_FLAG("no-switch", &opt.no_switch, true),
		MG_OPTS_END,
	};
	static struct fs_sample cells[FS_MAX_REPS][FS_NPAT][2], base[FS_NPAT], one[FS_MAX_REPS][FS_NPAT];
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);
	char knob[256], thp[64] = "none";
	struct utsname u;
	bool mmlocks;
	int threads;

	opt.quick = mg_parse_opts("fault_scale", argc, argv, o, usage);
	check_opts();
	snprintf(knob, sizeof(knob), MG_KNOBS "/%s", opt.knob);
	mmlocks = mg_exists(MG_KNOBS);
	if (!opt.no_switch && !mg_exists(knob)) {
		mg_error(EXP, "%s is missing: this program needs the patched mmlocks 6.12 kernel with "
			 "patch 0011 (the uprobe_speculate switch) and debugfs at /sys/kernel/debug "
			 "(or --no-switch)", knob);
		return MG_EXIT_WRONG_KERNEL;
	}
	mg_install_restore();
	mg_on_restore(fs_unlink_pending);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)opt.timeout);
	nproc = nproc < 1 ? 1 : nproc;
	threads = opt.threads ? (int)opt.threads : (int)(nproc < MAX_THREADS ? nproc : MAX_THREADS);
	fs_nkc = opt.no_switch ? 0 : fs_knob_counters(MG_KNOBS, opt.knob, fs_kc_names);
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
	fs_info_record(nproc, threads, thp, uname(&u) ? "unknown" : u.release, mmlocks);
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
			for (int k = 0; k < (opt.no_switch ? 1 : 2); k++) {
				int pos = opt.no_switch ? -1 : fs_position(rep, p, k);
				struct fs_sample *s = pos < 0 ? &one[rep][p] : &cells[rep][p][pos & 1];

				if (pos < 0)
					mg_log("rep %d, %s", rep + 1, fs_pattern_names[p]);
				else
					mg_log("rep %d, %s, %s %d", rep + 1, fs_pattern_names[p], opt.knob, pos);
				if (!measure(p, pos, rep, threads, nproc, s))
					return MG_EXIT_FAIL;
				fs_emit_sample(s, false);
			}
		}
	}
	/* The no-contention baseline: one thread, the default position (1). */
	for (int p = 0; p < FS_NPAT && !opt.no_switch && !mg_stop_signal; p++) {
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
	if (opt.no_switch)
		fs_result_records(one, (int)opt.reps, threads);
	else
		fs_summary_records(cells, base, (int)opt.reps, threads);
	return MG_EXIT_OK;
}
