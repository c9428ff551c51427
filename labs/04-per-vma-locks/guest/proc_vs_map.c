/* Guest experiment "smaps-rollup": how long do a mapper's mmap()/munmap() calls take while /proc/MAPPER/smaps_rollup is read, with the walk under mmap_lock (stock 6.12) and under per-VMA locks? */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "proc_vs_map/report.h"
#include "proc_vs_map/tasks.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP "smaps-rollup"
#define SWITCH MG_KNOBS "/smaps_rollup_vma_lock"
#define MAXRUNS 600

static struct {
	long long samples, seconds, region_mb, scanners, busy, busy_ms, sleep_ms, pause_us;
	long long mapper_cpu, scanner_cpu, seed;
	bool quick;
} opt = { 20, 2, 128, 2, 1, 2, 1, 10, 0, -1, 1, false };

static struct pvm_run runs[MAXRUNS];
static int nruns;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proc_vs_map [--quick] [--samples N] [--seconds S] [--region-mb M]\n"
		"                   [--scanners N] [--busy N] [--busy-ms B] [--sleep-ms Z]\n"
		"                   [--pause-us U] [--mapper-cpu C] [--scanner-cpu C] [--seed X]\n"
		"\n"
		"Experiment \"smaps-rollup\" (needs the patched mmlocks 6.12 kernel with\n"
		"/sys/kernel/debug/mmlocks/smaps_rollup_vma_lock), after Paul McKenney's\n"
		"proc-mmap_sem-test as seed 001 ran it. Each run forks a mapper pinned to\n"
		"--mapper-cpu that maps an M MiB anonymous region (populated) and, for S\n"
		"seconds, mmap()s (MAP_FIXED|MAP_POPULATE) or munmap()s one random page of it,\n"
		"pausing U us between calls and timing every call; N scanners at nice 15 read\n"
		"/proc/MAPPER/smaps_rollup in a loop and the busy tasks spin B ms then sleep\n"
		"Z ms, all pinned to --scanner-cpu. Each sample is three runs, in this order:\n"
		"switch 0 (stock walk under mmap_lock), switch 1 (walk under per-VMA locks),\n"
		"and a baseline with the busy tasks but no scanners. Per setting it reports\n"
		"the median and minimum of the runs' average call latency and the maximum of\n"
		"their maxima, and the vma_lock_* (/proc/vmstat), rwsem steal and switch\n"
		"counters of each run. The switch is restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --samples N      samples (1..200, default 20; quick 3)\n"
		"  --seconds S      measured seconds per run (1..60, default 2; quick 1)\n"
		"  --region-mb M    the mapper's region (1..1024 MiB, default 128; quick 32)\n"
		"  --scanners N     smaps_rollup readers (1..8, default 2)\n"
		"  --busy N         busy-wait tasks (0..4, default 1)\n"
		"  --busy-ms B      busy period (1..100 ms, default 2, as --busyduration 2)\n"
		"  --sleep-ms Z     sleep between busy periods (1..100 ms, default 1)\n"
		"  --pause-us U     mapper pause between calls (0..100000 us, default 10)\n"
		"  --mapper-cpu C   the mapper's CPU (default 0)\n"
		"  --scanner-cpu C  the scanners' and busy tasks' CPU (default: the last CPU)\n"
		"  --seed X         the mapper's page choices (1..2^62, default 1; run k uses X+k)\n"
		"  --quick          small, fast settings (< 30 s under TCG)\n"
		"  --help           this text\n"
		"\n"
		"Output: JSON lines on stdout (info, one sample per run, a table, summaries);\n"
		"progress on stderr. Exit: 0 ok (the summaries say pass/fail), 1 the run\n"
		"failed, 2 usage, 3 the kernel lacks the switch (not measured).\n");
}

static void parse_args(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("samples", &opt.samples, 1, 200, 3),
		MG_INT("seconds", &opt.seconds, 1, 60, 1),
		MG_INT("region-mb", &opt.region_mb, 1, 1024, 32),
		MG_INT("scanners", &opt.scanners, 1, 8, MG_NO_QUICK),
		MG_INT("busy", &opt.busy, 0, 4, MG_NO_QUICK),
		MG_INT("busy-ms", &opt.busy_ms, 1, 100, MG_NO_QUICK),
		MG_INT("sleep-ms", &opt.sleep_ms, 1, 100, MG_NO_QUICK),
		MG_INT("pause-us", &opt.pause_us, 0, 100000, MG_NO_QUICK),
		MG_CPU("mapper-cpu", &opt.mapper_cpu),
		MG_CPU("scanner-cpu", &opt.scanner_cpu),
		MG_INT("seed", &opt.seed, 1, 1ll << 62, MG_NO_QUICK),
		MG_OPTS_END,
	};

	opt.quick = mg_parse_opts("proc_vs_map", argc, argv, o, usage);
	if (opt.mapper_cpu == opt.scanner_cpu)
		mg_usage_error("proc_vs_map", usage, "--mapper-cpu and --scanner-cpu are both CPU %lld: "
			       "the method wants them apart", opt.mapper_cpu);
}

/* ---- counters ------------------------------------------------------------- */

static void read_counters(long long *v, bool *have)
{
	char buf[16384], path[160];
	ssize_t n = mg_read_file("/proc/vmstat", buf, sizeof(buf));

	for (int i = 0; i < PVM_NCTR; i++) {
		have[i] = false;
		if (i < PVM_NVMSTAT) {
			size_t len = strlen(pvm_ctr_name[i]);

			for (char *p = n > 0 ? buf : NULL; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
				if (!strncmp(p, pvm_ctr_name[i], len) && p[len] == ' ')
					have[i] = sscanf(p + len, "%lld", &v[i]) == 1;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", i < PVM_NVMSTAT + PVM_NLOCKEV ? MG_LOCKEV : MG_KNOBS,
			 pvm_ctr_name[i]);
		have[i] = mg_read_ll(path, &v[i]) == 0;
	}
}

/* ---- one run --------------------------------------------------------------- */

/* The parent's view of a run: who has reported what. */
struct live {
	pid_t mapper, kids[12];
	int nkids, nscan, started, scanned, done;
	struct pvm_msg mapper_msg;
	bool ready, mapper_done, failed;
	int64_t scan[PVM_NV], busy_periods;
};

/* Read messages until pred() holds, the deadline passes or every writer is gone. */
static bool pump(struct live *l, int fd, uint64_t deadline, bool (*pred)(const struct live *))
{
	while (!pred(l) && !l->failed) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = mg_now_ns();
		struct pvm_msg m;

		if (now >= deadline || mg_stop_signal)
			return false;
		if (poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) <= 0)
			continue;
		if (read(fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
			return false; /* EOF: every child has exited */
		switch (m.kind) {
		case PVM_MAPPER_READY: l->ready = true; break;
		case PVM_MAPPER_DONE: l->mapper_done = true; l->mapper_msg = m; break;
		case PVM_MAPPER_FAILED:
			mg_error(EXP, "mapper: %s failed: %s", m.v[1] == 1 ? "mapping the region" : "mmap/munmap",
				 strerror((int)m.v[0]));
			l->failed = true;
			break;
		case PVM_SCANNER_STARTED: l->started++; break;
		case PVM_SCANNER_DONE:
			for (int i = 0; i < PVM_NV; i++)
				l->scan[i] = i == PVM_S_MAX_NS ? (m.v[i] > l->scan[i] ? m.v[i] : l->scan[i])
				: i == PVM_S_ERRNO ? (m.v[i] ? m.v[i] : l->scan[i]) : l->scan[i] + m.v[i];
			l->scanned++;
			l->done++;
			break;
		case PVM_BUSY_DONE: l->busy_periods += m.v[0]; l->done++; break;
		}
	}
	return !l->failed && pred(l);
}

static bool is_ready(const struct live *l) { return l->ready; }
static bool all_started(const struct live *l) { return l->started == l->nscan; }
static bool all_scanned(const struct live *l) { return l->scanned == l->nscan; }
static bool is_done(const struct live *l) { return l->mapper_done; }
static bool all_done(const struct live *l) { return l->done == l->nkids; }

/* Wait for pid at most timeout_ms, then SIGKILL it; true if it exited by itself. */
static bool reap(pid_t pid, int timeout_ms)
{
	uint64_t end = mg_now_ns() + (uint64_t)timeout_ms * 1000000u;
	bool self = true;

	while (waitpid(pid, NULL, WNOHANG) == 0) {
		if (mg_now_ns() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			self = false;
			break;
		}
		poll(NULL, 0, 5);
	}
	mg_unregister_child(pid);
	return self;
}

static pid_t spawn(void)
{
	pid_t pid = fork();

	if (pid > 0)
		mg_register_child(pid);
	return pid;
}

/* region: run-one */
static int run_one(int sample, int set, struct pvm_run *out)
{
	struct pvm_mapper_cfg mc = {
		.region_pages = (size_t)opt.region_mb << 8, .seconds_ns = (uint64_t)opt.seconds * 1000000000u,
		.pause_us = (unsigned long)opt.pause_us, .seed = (uint64_t)(opt.seed + nruns), .lat_cap = 1 << 20,
	};
	int rep[2], go[2], stop[2], nscan = set == PVM_BASE ? 0 : (int)opt.scanners, err;
	long long before[PVM_NCTR], after[PVM_NCTR];
	bool hb[PVM_NCTR], ha[PVM_NCTR], ok;
	struct live l = { 0 };
	uint64_t t0 = mg_now_ns(), deadline = t0 + mc.seconds_ns + 120 * 1000000000ull;
	struct mg_json j;

	if (set != PVM_BASE && (err = mg_knob_set_ll(SWITCH, set == PVM_ON))) {
		mg_error(EXP, "writing %s=%d: %s", SWITCH, set == PVM_ON, strerror(-err));
		return -1;
	}
	if (pipe(rep) || pipe(go) || pipe(stop)) {
		mg_error(EXP, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((l.mapper = spawn()) == 0) {
		close(rep[0]), close(go[1]), close(stop[0]), close(stop[1]);
		mg_pin_cpu((int)opt.mapper_cpu);
		pvm_mapper(&mc, rep[1], go[0]);
	}
	close(go[0]);
	ok = l.mapper > 0 && pump(&l, rep[0], t0 + 60 * 1000000000ull, is_ready);
	for (int i = 0; ok && i < nscan + (int)opt.busy; i++) {
		pid_t pid = spawn();

		if (pid == 0) {
			close(rep[0]), close(go[1]), close(stop[1]);
			mg_pin_cpu((int)opt.scanner_cpu);
			if (i >= nscan)
				pvm_busy(i, (int)opt.busy_ms, (int)opt.sleep_ms, rep[1], stop[0], deadline);
			setpriority(PRIO_PROCESS, 0, 15);
			pvm_scanner(i, l.mapper, rep[1], stop[0], deadline);
		}
		if (pid > 0)
			l.kids[l.nkids++] = pid;
		if (pid > 0 && i < nscan)
			l.nscan++; /* the scanners actually started */
		ok = pid > 0;
	}
	close(rep[1]), close(stop[0]);
	/* Measure only once every scanner has read a whole rollup. */
	ok = ok && (!nscan || pump(&l, rep[0], t0 + 90 * 1000000000ull, all_started));
	read_counters(before, hb);
	ok = ok && write(go[1], "g", 1) == 1 && pump(&l, rep[0], deadline, is_done);
	read_counters(after, ha);
	/*
	 * Reap the mapper first, and let each scanner end as in Paul's method,
	 * on a read that finds the mapper gone (not counted); then EOF on
	 * stop[] ends the busy tasks and any scanner still reading.
	 */
	close(go[1]);
	if (l.mapper > 0)
		reap(l.mapper, 10000);
	pump(&l, rep[0], mg_now_ns() + 10 * 1000000000ull, all_scanned);
	close(stop[1]);
	pump(&l, rep[0], mg_now_ns() + 10 * 1000000000ull, all_done);
	for (int i = 0; i < l.nkids; i++)
		out->killed += !reap(l.kids[i], 100);
	close(rep[0]);
	/* endregion: run-one */
	if (!ok || !l.mapper_done) {
		if (!l.failed)
			mg_error(EXP, "run %d (%s): %s", nruns, pvm_set_name[set],
				 mg_stop_signal ? "interrupted" : "a child did not report in time");
		return -1;
	}

	const int64_t *m = l.mapper_msg.v;
	double ops = (double)(m[PVM_M_OPS] ? m[PVM_M_OPS] : 1);
	out->set = set;
	out->avg_ms = (double)m[PVM_M_SUM_NS] / ops / 1e6;
	out->max_ms = (double)m[PVM_M_MAX_NS] / 1e6;
	out->p99_ms = (double)m[PVM_M_P99_NS] / 1e6;
	mgj_start(&j, "sample", EXP);
	mgj_int(&j, "sample", sample);
	mgj_int(&j, "run", nruns);
	mgj_str(&j, "setting", pvm_set_name[set]);
	if (set == PVM_BASE)
		mgj_null(&j, "smaps_rollup_vma_lock");
	else
		mgj_int(&j, "smaps_rollup_vma_lock", set == PVM_ON);
	mgj_int(&j, "scanners", nscan);
	mgj_int(&j, "busy_tasks", opt.busy);
	mgj_int(&j, "mapper_ops", m[PVM_M_OPS]);
	mgj_int(&j, "mapper_maps", m[PVM_M_MAPS]);
	mgj_int(&j, "mapper_unmaps", m[PVM_M_UNMAPS]);
	mgj_num(&j, "op_avg_ms", out->avg_ms);
	mgj_num(&j, "op_max_ms", out->max_ms);
	mgj_num(&j, "op_p50_ms", (double)m[PVM_M_P50_NS] / 1e6);
	mgj_num(&j, "op_p99_ms", out->p99_ms);
	mgj_int(&j, "op_max_at_call", m[PVM_M_MAX_AT]);
	mgj_str(&j, "op_max_call", m[PVM_M_MAX_MAP] ? "mmap" : "munmap");
	mgj_num_array(&j, "op_max_ms_by_quarter", (const uint64_t *)&m[PVM_M_MAX_Q], 4, 1e6);
	out->max_late_ms = 0;
	for (int q = 1; q < 4; q++)
		if ((double)m[PVM_M_MAX_Q + q] / 1e6 > out->max_late_ms)
			out->max_late_ms = (double)m[PVM_M_MAX_Q + q] / 1e6;
	mgj_num(&j, "window_s", (double)m[PVM_M_WINDOW_NS] / 1e9);
	mgj_num(&j, "run_wall_s", (double)(mg_now_ns() - t0) / 1e9);
	mgj_int(&j, "region_vmas_at_end", m[PVM_M_VMAS]);
	for (int i = 0; i < PVM_SCAN_NR; i++) {
		char key[32];

		snprintf(key, sizeof(key), "scan_%s", pvm_scan_name[i]);
		mgj_int(&j, key, l.scan[i]);
	}
	mgj_num(&j, "scan_mean_ms", l.scan[PVM_SCAN_OK] ? (double)l.scan[PVM_S_SUM_NS] / (double)l.scan[PVM_SCAN_OK] / 1e6 : NAN);
	mgj_num(&j, "scan_max_ms", (double)l.scan[PVM_S_MAX_NS] / 1e6);
	if (l.scan[PVM_S_ERRNO])
		mgj_str(&j, "scan_errno", strerror((int)l.scan[PVM_S_ERRNO]));
	mgj_int(&j, "busy_periods", l.busy_periods);
	mgj_int(&j, "children_killed", out->killed);
	for (int i = 0; i < PVM_NCTR; i++) {
		out->have[i] = hb[i] && ha[i];
		out->ctr[i] = out->have[i] ? after[i] - before[i] : 0;
		if (out->have[i])
			mgj_int(&j, pvm_ctr_name[i], out->ctr[i]);
		else
			mgj_null(&j, pvm_ctr_name[i]);
	}
	mgj_emit(&j);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const need[] = { SWITCH, "/proc/self/smaps_rollup", NULL };
	long long policy = -1, sw = -1, own_cpu = -1;
	struct pvm_verdict verdict;
	struct mg_json j;

	parse_args(argc, argv);
	for (int i = 0; need[i]; i++)
		if (!mg_exists(need[i])) {
			mg_error(EXP, "%s is missing: this kernel lacks the smaps_rollup switch "
				      "(patch 0008 of the mmlocks series, with debugfs at /sys/kernel/debug); "
				      "not measured", need[i]);
			return MG_EXIT_WRONG_KERNEL;
		}
	mg_install_restore();
	signal(SIGPIPE, SIG_IGN);
	/* The method's third CPU: this process, away from the mapper and the scanners. */
	for (int c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < 64; c++)
		if (c != opt.mapper_cpu && c != opt.scanner_cpu) {
			own_cpu = mg_pin_cpu(c) ? -1 : c;
			break;
		}
	mg_read_ll(SWITCH, &sw);
	mg_read_ll(MG_KNOBS "/rwsem_steal_policy", &policy);

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "samples", opt.samples);
	mgj_int(&j, "seconds_per_run", opt.seconds);
	mgj_int(&j, "region_mb", opt.region_mb);
	mgj_int(&j, "scanners", opt.scanners);
	mgj_int(&j, "busy_tasks", opt.busy);
	mgj_int(&j, "busy_ms", opt.busy_ms);
	mgj_int(&j, "sleep_ms", opt.sleep_ms);
	mgj_int(&j, "pause_us", opt.pause_us);
	mgj_int(&j, "mapper_cpu", opt.mapper_cpu);
	mgj_int(&j, "scanner_cpu", opt.scanner_cpu);
	mgj_int(&j, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
	if (own_cpu >= 0)
		mgj_int(&j, "control_cpu", own_cpu);
	else
		mgj_str(&j, "control_cpu", "none: fewer than 3 CPUs, the method wants 3");
	mgj_int(&j, "seed", opt.seed);
	mgj_int(&j, "smaps_rollup_vma_lock_before", sw);
	if (policy >= 0)
		mgj_int(&j, "rwsem_steal_policy", policy);
	mgj_str(&j, "order", "per sample: switch 0, switch 1, baseline");
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);

	for (int s = 0; s < opt.samples && !mg_stop_signal; s++)
		for (int set = 0; set < PVM_NSET; set++) {
			mg_log("sample %d/%lld: %s", s + 1, opt.samples, pvm_set_label[set]);
			if (nruns == MAXRUNS || run_one(s, set, &runs[nruns])) {
				mg_restore_all();
				return MG_EXIT_FAIL;
			}
			nruns++;
		}
	mg_restore_all();
	pvm_evaluate(runs, nruns, &verdict);
	pvm_report(EXP, runs, nruns, &verdict);
	return 0;
}
