/* Guest experiment "remote-access": /proc/PID/mem reads with __access_remote_vm() under mmap_read_lock (stock 6.12) and under a VMA lock (patch 0009): seed 004's table, and a writer's latency while readers loop. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "remote_read/access.h"
#include "remote_read/report.h"
#include "remote_read/tasks.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP "remote-access"
#define SWITCH MG_KNOBS "/access_remote_vm_vma_lock"
#define REGION_BYTES (2u << 20) /* the 1 MiB reads start at its beginning */
#define SEC 1000000000ull

static struct {
	long long reps, window_ms, slots, slot_ms, mem_bytes, pause_us, target_cpu, reader_cpu, part;
	bool quick;
} opt = { 9, 150, 7, 1000, 1048576, 50, 0, -1, 0, false };

static struct rr_procs P = { .target = -1 };
static struct rr_seed_run seed_runs[RR_NSIZES * 2 * 64];
static struct rr_cont_run cont_runs[RR_MAX_SLOTS];

static void usage(FILE *f)
{
	fprintf(f,
		"usage: remote_read [--quick] [--reps N] [--window-ms W] [--slots N] [--slot-ms M]\n"
		"                   [--mem-bytes B] [--pause-us U] [--target-cpu C] [--reader-cpu C]\n"
		"                   [--part 0|1|2]\n"
		"\n"
		"Experiment \"remote-access\" (needs the patched mmlocks 6.12 kernel with\n"
		"/sys/kernel/debug/mmlocks/access_remote_vm_vma_lock: 0 = stock 6.12, every\n"
		"__access_remote_vm() call under mmap_read_lock; 1 = a call that fits one VMA\n"
		"under that VMA's lock). It forks a target that fills a 2 MiB region at 1 GiB\n"
		"with a known pattern (resident, mlock()ed) and pins it to --target-cpu; this\n"
		"process runs on --reader-cpu.\n"
		"Bad input first: under both positions it reads an unmapped page (EIO), a\n"
		"range running into it (a short read), the memory of a process that has\n"
		"exited, and the target as an unprivileged user (refused), and requires the\n"
		"kernel's usual answer; none of these reads is a measurement.\n"
		"Part 1, seed 004's table: single-threaded pread() of /proc/TARGET/mem of\n"
		"8 B, 4 KiB, 64 KiB and 1 MiB for W ms per window; per repetition every size\n"
		"under switch 0 then switch 1 (interleaved); ns per read and MB/s, median and\n"
		"min-max over N repetitions, the ratio, and the switch's counters.\n"
		"Part 2, contention: a thread in the target mmap()s and munmap()s one page\n"
		"(each takes mmap_write_lock; pause U us) while one reader process preads\n"
		"B bytes of /proc/TARGET/mem and another preads /proc/TARGET/cmdline, both on\n"
		"--reader-cpu; slots of M ms in the order switch 0, switch 1, no readers,\n"
		"N times; the writer's and the readers' p50/p99 per setting.\n"
		"The switch is restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --reps N         part 1 repetitions (1..64, default 9; quick 2)\n"
		"  --window-ms W    part 1 window per size and position (10..5000, default 150; quick 40)\n"
		"  --slots N        part 2 slots per setting (1..40, default 7; quick 2)\n"
		"  --slot-ms M      part 2 slot length (100..10000, default 1000; quick 300)\n"
		"  --mem-bytes B    part 2 /proc/PID/mem read size (8..1048576, default 1048576)\n"
		"  --pause-us U     the writer's pause between mmap+munmap pairs (0..100000, default 50)\n"
		"  --target-cpu C   the target's CPU (default 0)\n"
		"  --reader-cpu C   the readers' and this process's CPU (default: the last CPU)\n"
		"  --part P         1 or 2: only that part (default 0: both)\n"
		"  --quick          small, fast settings (< 25 s under TCG)\n"
		"  --help           this text\n"
		"\n"
		"Output: JSON lines on stdout (info, table_row: the bad-input table and one\n"
		"table per part, sample per window or slot, summary); progress on stderr.\n"
		"Exit: 0 ok (the summaries say pass/fail), 1 the run failed (a probe, a\n"
		"read or a child), 2 usage, 3 the kernel lacks the switch (not measured).\n");
}

static void parse_args(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("reps", &opt.reps, 1, 64, 2),
		MG_INT("window-ms", &opt.window_ms, 10, 5000, 40),
		MG_INT("slots", &opt.slots, 1, RR_MAX_SLOTS / RR_NSET, 2),
		MG_INT("slot-ms", &opt.slot_ms, 100, 10000, 300),
		MG_INT("mem-bytes", &opt.mem_bytes, 8, 1048576, MG_NO_QUICK),
		MG_INT("pause-us", &opt.pause_us, 0, 100000, MG_NO_QUICK),
		MG_CPU("target-cpu", &opt.target_cpu),
		MG_CPU("reader-cpu", &opt.reader_cpu),
		MG_INT("part", &opt.part, 0, 2, MG_NO_QUICK),
		MG_OPTS_END,
	};

	opt.quick = mg_parse_opts("remote_read", argc, argv, o, usage);
}

/* ---- switch and counters ---------------------------------------------------------- */

static bool set_switch(int v)
{
	int err = mg_knob_set_ll(SWITCH, v);

	if (err)
		mg_error(EXP, "writing %s=%d: %s", SWITCH, v, strerror(-err));
	return !err;
}

/* The counters now; false if a switch counter is missing (then its effect is unproven). */
static bool read_ctr(long long *v)
{
	char path[160];
	bool ok = true;

	for (int c = 0; c < RR_NCTR; c++) {
		v[c] = 0; /* a missing counter reads as 0 */
		snprintf(path, sizeof(path), "%s/%s", c < RR_NSWCTR ? MG_KNOBS : MG_LOCKEV, rr_ctr_name[c]);
		ok = (mg_read_ll(path, &v[c]) == 0 || c >= RR_NSWCTR) && ok;
	}
	return ok;
}

static void ctr_delta(long long *out, const long long *a, const long long *b)
{
	for (int c = 0; c < RR_NCTR; c++)
		out[c] = b[c] - a[c];
}

/* ---- the target ----------------------------------------------------------------------- */

static bool start_target(uint64_t deadline)
{
	struct rr_target_cfg tc = {
		.region_bytes = REGION_BYTES, .cpu = (int)opt.target_cpu,
		.nslots = (int)opt.slots * RR_NSET, .pause_us = (unsigned long)opt.pause_us,
		.deadline_ns = deadline,
	};
	const char *why;

	if (rr_start_target(&P, &tc, &why))
		return true;
	mg_error(EXP, "the target did not map its region at %#llx: %s", RR_REGION_BASE, why);
	return false;
}

/* ---- bad input, under both positions ------------------------------------------------- */

static bool probes(void)
{
	struct rr_probe p[2][RR_NPROBES];
	bool ok = true;

	for (int sw = 0; sw < 2; sw++)
		ok = set_switch(sw) && rr_probe_all(P.target, RR_REGION_BASE, REGION_BYTES, p[sw]) && ok;
	if (ok)
		rr_probe_report(EXP, p);
	for (int sw = 0; sw < 2; sw++)
		for (int i = 0; i < RR_NPROBES; i++)
			if (!p[sw][i].ok)
				mg_error(EXP, "bad-input probe '%s' under switch %d: expected %s (%zd bytes), "
					 "got %s (%zd bytes, %s): %s", rr_probe_name[i], sw,
					 rr_outcome_name[p[sw][i].expect], p[sw][i].expect_bytes,
					 rr_outcome_name[p[sw][i].got], p[sw][i].bytes,
					 p[sw][i].err ? strerror(p[sw][i].err) : "no errno",
					 rr_outcome_text(p[sw][i].got));
	return ok;
}

/* ---- part 1: seed 004's table ------------------------------------------------------------ */

/* region: seed-window */
static bool seed_window(int fd, char *buf, int size, int sw, int rep, struct rr_seed_run *out)
{
	size_t len = rr_size[size];
	uint64_t t0, t, end;
	long long before[RR_NCTR], after[RR_NCTR], n = 0;
	ssize_t got;
	int err;
	bool have;
	enum rr_outcome o;
	struct mg_json j;

	if (!set_switch(sw))
		return false;
	/* One untimed read, every byte checked: the window then times the same read. */
	o = rr_pread(fd, buf, len, RR_REGION_BASE, &got, &err);
	if (o == RR_OK && !rr_check(buf, len, 0, false))
		o = RR_MISMATCH;
	have = read_ctr(before);
	for (t0 = t = mg_now_ns(), end = t0 + (uint64_t)opt.window_ms * 1000000u; o == RR_OK && t < end;
	     t = mg_now_ns(), n++)
		o = rr_pread(fd, buf, len, RR_REGION_BASE, &got, &err);
	have = read_ctr(after) && have;
	/* endregion: seed-window */
	if (o != RR_OK) {
		mg_error(EXP, "pread of %zu bytes of /proc/%d/mem under switch %d: %s (%zd bytes, %s): "
			 "not a measurement", len, (int)P.target, sw, rr_outcome_text(o), got,
			 err ? strerror(err) : "no errno");
		return false;
	}
	*out = (struct rr_seed_run){ .size = size, .sw = sw, .reads = n, .have_ctr = have,
				     .ns_per_read = (double)(t - t0) / (double)n };
	ctr_delta(out->ctr, before, after);
	mgj_start(&j, "sample", EXP);
	mgj_str(&j, "part", "seed");
	mgj_int(&j, "rep", rep);
	mgj_int(&j, "read_bytes", (long long)len);
	mgj_int(&j, "access_remote_vm_vma_lock", sw);
	mgj_int(&j, "reads", n);
	mgj_num(&j, "ns_per_read", out->ns_per_read);
	mgj_num(&j, "mb_per_s", (double)len / out->ns_per_read * 1e3);
	for (int c = 0; c < RR_NCTR; c++)
		if (have)
			mgj_int(&j, rr_ctr_name[c], out->ctr[c]);
		else
			mgj_null(&j, rr_ctr_name[c]);
	mgj_emit(&j);
	return true;
}

static bool part_seed(void)
{
	enum rr_outcome why;
	int err, fd = rr_open(P.target, "mem", &why, &err), n = 0;
	char *buf = malloc(rr_size[RR_NSIZES - 1]);
	struct rr_seed_verdict v;
	bool ok = fd >= 0 && buf;

	if (fd < 0)
		mg_error(EXP, "opening /proc/%d/mem: %s", (int)P.target, rr_outcome_text(why));
	if (buf)
		memset(buf, 0, rr_size[RR_NSIZES - 1]); /* resident before timing */
	/* Interleaved: each repetition reads every size under switch 0, then switch 1. */
	for (int rep = 0; ok && rep < opt.reps && !mg_stop_signal; rep++) {
		mg_log("part 1, repetition %d/%lld", rep + 1, opt.reps);
		for (int s = 0; ok && s < RR_NSIZES; s++)
			for (int sw = 0; ok && sw < 2; sw++)
				ok = seed_window(fd, buf, s, sw, rep, &seed_runs[n++]);
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	if (!ok || mg_stop_signal)
		return false;
	rr_seed_evaluate(seed_runs, n, &v);
	rr_seed_report(EXP, seed_runs, n, &v);
	return true;
}

/* ---- part 2: contention ---------------------------------------------------------------- */

static bool start_readers(uint64_t deadline)
{
	static char cmdline[4096];
	ssize_t clen = mg_read_file("/proc/self/cmdline", cmdline, sizeof(cmdline));

	/* The target is a fork of this process: its cmdline is ours. */
	if (clen <= 0) {
		mg_error(EXP, "reading /proc/self/cmdline: %s", strerror((int)-clen));
		return false;
	}
	for (int i = 0; i < RR_NREADERS; i++) {
		struct rr_reader_cfg rc = {
			.role = RR_MEM + i, .target = P.target, .cpu = (int)opt.reader_cpu,
			.off = i ? 0 : RR_REGION_BASE, .len = i ? (size_t)clen : (size_t)opt.mem_bytes,
			.expect = i ? cmdline : NULL, .deadline_ns = deadline,
		};

		if (!rr_start_reader(&P, &rc)) {
			mg_error(EXP, "fork: %s", strerror(errno));
			return false;
		}
	}
	return true;
}

/* Switch while the readers wait; then no read from before the switch may still be running. */
static bool settle(int sw)
{
	uint64_t end = mg_now_ns() + 10 * SEC;
	int e;

	if (!set_switch(sw))
		return false;
	e = __atomic_add_fetch(&P.sh->epoch, 1, __ATOMIC_ACQ_REL);
	for (int i = 0; i < RR_NREADERS; i++)
		while (__atomic_load_n(&P.sh->seen[i], __ATOMIC_ACQUIRE) != e) {
			if (mg_now_ns() > end || mg_stop_signal ||
			    __atomic_load_n(&P.sh->done[RR_MEM + i], __ATOMIC_ACQUIRE)) {
				mg_error(EXP, "the %s reader did not finish a read within 10 s, or stopped",
					 rr_role_name[RR_MEM + i]);
				return false;
			}
			poll(NULL, 0, 1);
		}
	return true;
}

/* region: contention-loop */
static bool part_contention(uint64_t deadline)
{
	int n = 0;
	bool ok = start_readers(deadline);

	if (ok && !(ok = rr_start_writer(&P)))
		mg_error(EXP, "the target's writer thread did not start within 30 s");

	for (int rep = 0; ok && rep < opt.slots && !mg_stop_signal; rep++)
		for (int set = 0; ok && set < RR_NSET && !mg_stop_signal; set++, n++) {
			struct rr_cont_run *r = &cont_runs[n];
			long long before[RR_NCTR], after[RR_NCTR];

			mg_log("part 2, slot %d/%lld: %s", rep + 1, opt.slots, rr_set_label[set]);
			P.sh->readers_on[n] = set != RR_BASE;
			/* The baseline keeps the boot default (1): no reader calls it anyway. */
			ok = settle(set == RR_SW_OFF ? 0 : 1);
			r->set = set, r->rep = rep;
			r->have_ctr = read_ctr(before);
			__atomic_store_n(&P.sh->phase, n, __ATOMIC_RELEASE);
			for (long long ms = 0; ok && ms < opt.slot_ms && !mg_stop_signal; ms += 50)
				mg_sleep_us(50000);
			__atomic_store_n(&P.sh->phase, MG_PHASE_IDLE, __ATOMIC_RELEASE);
			r->have_ctr = read_ctr(after) && r->have_ctr;
			ctr_delta(r->ctr, before, after);
		}
	/* endregion: contention-loop */
	/* Stop everyone; each child writes its cells, then exits. */
	__atomic_store_n(&P.sh->phase, MG_PHASE_STOP, __ATOMIC_RELEASE);
	rr_close_target(&P);
	for (int i = 0; i < RR_NREADERS; i++)
		if (P.reader[i] > 0 && rr_reap(P.reader[i], 10000) != 0) {
			mg_error(EXP, "the %s reader did not exit cleanly", rr_role_name[RR_MEM + i]);
			ok = false;
		}
	if (rr_reap(P.target, 20000) != 0 || !P.sh->done[RR_WRITER]) {
		mg_error(EXP, "the target did not exit cleanly with its writer's latencies");
		ok = false;
	}
	P.target = -1;
	if (!ok || mg_stop_signal || n < opt.slots * RR_NSET)
		return false;
	for (int i = 0; i < n; i++) {
		struct rr_cont_run *r = &cont_runs[i];

		for (int role = 0; role < RR_NROLES; role++)
			r->cell[role] = P.sh->cell[role][i];
		rr_cont_sample(EXP, r, i);
	}
	struct rr_cont_verdict v;

	rr_cont_evaluate(cont_runs, n, &v);
	rr_cont_report(EXP, cont_runs, n, &v, (size_t)opt.mem_bytes);
	return true;
}

int main(int argc, char **argv)
{
	long long sw = -1, policy = -1, dummy[RR_NCTR];
	uint64_t t0 = mg_now_ns(), deadline;
	struct mg_json j;
	bool ok;

	parse_args(argc, argv);
	if (!mg_exists(SWITCH)) {
		mg_error(EXP, "%s is missing: this kernel lacks the access_remote_vm switch (patch 0009 "
			      "of the mmlocks series, with debugfs at /sys/kernel/debug); not measured", SWITCH);
		return MG_EXIT_WRONG_KERNEL;
	}
	/* Longer than any run of these settings, shorter than /init's limit. */
	deadline = t0 + 60 * SEC + (uint64_t)(opt.reps * opt.window_ms * 8 +
					      opt.slots * opt.slot_ms * RR_NSET * 2) * 1000000u;
	P.sh = rr_shared_new();
	if (!P.sh) {
		mg_error(EXP, "mmap of the shared page: %s", strerror(errno));
		return MG_EXIT_FAIL;
	}
	mg_install_restore();
	signal(SIGPIPE, SIG_IGN);
	mg_read_ll(SWITCH, &sw);
	mg_read_ll(MG_KNOBS "/rwsem_steal_policy", &policy);
	ok = start_target(deadline);
	mg_pin_cpu((int)opt.reader_cpu);

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "reps", opt.reps);
	mgj_int(&j, "window_ms", opt.window_ms);
	mgj_int(&j, "slots", opt.slots);
	mgj_int(&j, "slot_ms", opt.slot_ms);
	mgj_int(&j, "mem_read_bytes", opt.mem_bytes);
	mgj_int(&j, "writer_pause_us", opt.pause_us);
	mgj_int(&j, "target_cpu", opt.target_cpu);
	mgj_int(&j, "reader_cpu", opt.reader_cpu);
	mgj_int(&j, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
	mgj_int(&j, "part", opt.part);
	mgj_int(&j, "region_bytes", REGION_BYTES);
	mgj_bool(&j, "region_mlocked", P.sh->target_mlocked);
	if (!P.sh->target_mlocked)
		mgj_str(&j, "mlock_error", strerror(P.sh->target_mlock_err));
	mgj_int(&j, "access_remote_vm_vma_lock_before", sw);
	mgj_bool(&j, "switch_counters_present", read_ctr(dummy));
	if (policy >= 0)
		mgj_int(&j, "rwsem_steal_policy", policy);
	mgj_str(&j, "order", "part 1: per repetition, each size under switch 0 then 1; "
			     "part 2: per round, switch 0, switch 1, no readers");
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);

	ok = ok && probes();
	if (ok && opt.part != 2)
		ok = part_seed();
	if (ok && opt.part != 1)
		ok = part_contention(deadline);
	if (P.target > 0) {
		rr_close_target(&P);
		rr_reap(P.target, 10000);
	}
	mg_restore_all();
	if (!ok)
		mg_error(EXP, "%s: not every part was measured", mg_stop_signal ? "interrupted" : "failed");
	mg_log("done in %.1f s", (double)(mg_now_ns() - t0) / 1e9);
	return ok ? MG_EXIT_OK : MG_EXIT_FAIL;
}
