/*
 * Host tests of proc_vs_map's pieces (guest/proc_vs_map/): what counts as a
 * whole smaps_rollup, a target that exits before the open or between open
 * and read (forced with a zombie, no sleeps), a scanner that outlives its
 * mapper, and the goal's arithmetic. The host kernel's smaps_rollup has the
 * same shape as 6.12's.
 */
#define _GNU_SOURCE
#include "proc_vs_map/report.h"
#include "proc_vs_map/tasks.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char rollup[] =
	"55d0c0a00000-7ffd8b5f3000 ---p 00000000 00:00 0                          [rollup]\n"
	"Rss:                1516 kB\n"
	"Pss:                 252 kB\n"
	"SwapPss:               0 kB\n"
	"Locked:                0 kB\n";

Test(rollup, whole_text_is_complete)
{
	cr_assert(pvm_rollup_complete(rollup, strlen(rollup)));
}

Test(rollup, every_truncation_is_short)
{
	for (size_t n = 0; n < strlen(rollup); n++)
		cr_assert(!pvm_rollup_complete(rollup, n), "a rollup cut at %zu bytes counted as whole", n);
}

Test(rollup, no_header_is_short)
{
	const char *t = strstr(rollup, "Rss:");

	cr_assert(!pvm_rollup_complete(t, strlen(t)));
}

/* A child that sits in pause() until killed; the caller reaps it. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

/* Kill pid and wait until it is a zombie, leaving it unreaped (WNOWAIT). */
static void make_zombie(pid_t pid)
{
	siginfo_t si;

	kill(pid, SIGKILL);
	cr_assert(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0);
}

Test(scan, live_target_reads_whole)
{
	char buf[65536], path[64];
	pid_t pid = sleeper();
	int err;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	cr_assert_eq(pvm_scan_once(path, buf, sizeof(buf), &err), PVM_SCAN_OK, "err %d: %s", err, buf);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(scan, exited_target_is_gone_not_counted)
{
	char buf[65536], path[64];
	pid_t pid = sleeper();
	int err;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	make_zombie(pid); /* /proc/PID is still there, the mm is not */
	cr_assert_eq(pvm_scan_once(path, buf, sizeof(buf), &err), PVM_SCAN_GONE);
	cr_assert_eq(err, ESRCH);
	waitpid(pid, NULL, 0); /* now /proc/PID is gone too */
	cr_assert_eq(pvm_scan_once(path, buf, sizeof(buf), &err), PVM_SCAN_GONE);
	cr_assert_eq(err, ENOENT);
}

Test(scan, exit_between_open_and_read_is_esrch)
{
	char buf[65536], path[64];
	pid_t pid = sleeper();
	int err, fd;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	make_zombie(pid);
	cr_assert_eq(pvm_scan_fd(fd, buf, sizeof(buf), &err), PVM_SCAN_ESRCH, "err %d", err);
	close(fd);
	waitpid(pid, NULL, 0);
}

/* A mapper, a scanner and a busy task talking to this process as to proc_vs_map. */
Test(tasks, scanner_stops_when_the_mapper_exits)
{
	struct pvm_mapper_cfg mc = { .region_pages = 64, .seconds_ns = 100000000, .pause_us = 10,
				     .seed = 7, .lat_cap = 1024 };
	int rep[2], go[2], stop[2], got_done = 0;
	struct pvm_msg m, scan = { 0 }, mapper = { 0 };
	pid_t mp, sp;

	cr_assert(pipe(rep) == 0 && pipe(go) == 0 && pipe(stop) == 0);
	if ((mp = fork()) == 0)
		pvm_mapper(&mc, rep[1], go[0]);
	cr_assert(read(rep[0], &m, sizeof(m)) == sizeof(m));
	cr_assert_eq(m.kind, PVM_MAPPER_READY);
	if ((sp = fork()) == 0) /* stop[] stays open: only the mapper's exit can end it */
		pvm_scanner(3, mp, rep[1], stop[0], UINT64_MAX);
	cr_assert(read(rep[0], &m, sizeof(m)) == sizeof(m));
	cr_assert_eq(m.kind, PVM_SCANNER_STARTED);
	cr_assert(write(go[1], "g", 1) == 1);
	while (got_done < 2 && read(rep[0], &m, sizeof(m)) == sizeof(m)) {
		if (m.kind == PVM_MAPPER_DONE) {
			mapper = m;
			waitpid(mp, NULL, 0);
			got_done++;
		} else if (m.kind == PVM_SCANNER_DONE) {
			scan = m;
			got_done++;
		}
	}
	waitpid(sp, NULL, 0);
	cr_assert_eq(got_done, 2);
	cr_assert_eq(scan.id, 3);
	cr_assert_gt(mapper.v[PVM_M_OPS], 0);
	cr_assert_eq(mapper.v[PVM_M_OPS], mapper.v[PVM_M_MAPS] + mapper.v[PVM_M_UNMAPS]);
	cr_assert_geq(mapper.v[PVM_M_MAX_NS] * mapper.v[PVM_M_OPS], mapper.v[PVM_M_SUM_NS]);
	cr_assert_lt(mapper.v[PVM_M_MAX_AT], mapper.v[PVM_M_OPS]);
	int64_t qmax = 0;
	for (int q = 0; q < 4; q++)
		qmax = mapper.v[PVM_M_MAX_Q + q] > qmax ? mapper.v[PVM_M_MAX_Q + q] : qmax;
	cr_assert_eq(qmax, mapper.v[PVM_M_MAX_NS], "the longest call is in one of the quarters");
	cr_assert_geq(scan.v[PVM_SCAN_OK], 1);
	/* Exactly one read met the exit, and it was not counted as a read. */
	cr_assert_eq(scan.v[PVM_SCAN_GONE] + scan.v[PVM_SCAN_ESRCH], 1);
	cr_assert_eq(scan.v[PVM_SCAN_SHORT] + scan.v[PVM_SCAN_EOF] + scan.v[PVM_SCAN_ERROR], 0);
}

Test(tasks, busy_task_stops_on_eof_of_stop_pipe)
{
	int rep[2], stop[2];
	struct pvm_msg m;
	pid_t pid;

	cr_assert(pipe(rep) == 0 && pipe(stop) == 0);
	/* Closed before the fork: the stop pipe is at EOF from the start, so
	 * the first poll ends the task whatever the scheduler does (closing it
	 * after the fork raced the child's first 1 ms poll on a loaded host). */
	close(stop[1]);
	if ((pid = fork()) == 0)
		pvm_busy(5, 1, 1, rep[1], stop[0], UINT64_MAX);
	cr_assert(read(rep[0], &m, sizeof(m)) == sizeof(m));
	cr_assert_eq(m.kind, PVM_BUSY_DONE);
	cr_assert_eq(m.id, 5);
	cr_assert_eq(m.v[0], 1, "one busy period, then EOF");
	waitpid(pid, NULL, 0);
}

/* ---- the goal's arithmetic ------------------------------------------------ */

static struct pvm_run mk(int set, double avg, double max, long long locked)
{
	struct pvm_run r = { .set = set, .avg_ms = avg, .max_ms = max, .p99_ms = max / 2 };

	for (int c = 0; c < PVM_NCTR; c++)
		r.have[c] = true;
	r.ctr[PVM_C_LOCKED] = locked;
	return r;
}

/* Three samples: off, on, base each. */
static void three(struct pvm_run *r, double off, double on, double base, long long locked_on)
{
	for (int s = 0; s < 3; s++) {
		r[3 * s] = mk(PVM_OFF, off + 0.01 * s, 5 + s, 0);
		r[3 * s + 1] = mk(PVM_ON, on + 0.01 * s, 3 + s, locked_on);
		r[3 * s + 2] = mk(PVM_BASE, base + 0.01 * s, 4 + s, 0);
	}
}

Test(evaluate, excess_five_times_smaller_passes)
{
	struct pvm_run r[9];
	struct pvm_verdict v;

	three(r, 0.52, 0.15, 0.12, 40);
	pvm_evaluate(r, 9, &v);
	cr_assert_float_eq(v.med[PVM_OFF], 0.53, 1e-9);
	cr_assert_float_eq(v.min[PVM_OFF], 0.52, 1e-9);
	cr_assert_float_eq(v.max[PVM_OFF], 7, 1e-9);
	cr_assert_float_eq(v.med_max[PVM_ON], 4, 1e-9);
	cr_assert_float_eq(v.med_p99[PVM_ON], 2, 1e-9);
	cr_assert_float_eq(v.excess_off, 0.40, 1e-9);
	cr_assert_float_eq(v.excess_on, 0.03, 1e-9);
	cr_assert(v.acted && v.goal && v.plain && v.maxima);
	cr_assert_eq(v.ctr[PVM_ON][PVM_C_LOCKED], 120);
}

Test(evaluate, excess_four_times_smaller_fails)
{
	struct pvm_run r[9];
	struct pvm_verdict v;

	three(r, 0.52, 0.22, 0.12, 40);
	pvm_evaluate(r, 9, &v);
	cr_assert_float_eq(v.excess_ratio, 4, 1e-9);
	cr_assert(!v.goal && v.plain);
}

Test(evaluate, below_the_baseline_uses_the_floor)
{
	struct pvm_run r[9];
	struct pvm_verdict v;

	three(r, 0.52, 0.11, 0.12, 40);
	pvm_evaluate(r, 9, &v);
	cr_assert_float_eq(v.excess_ratio, 0.40 / PVM_EXCESS_FLOOR_MS, 1e-6);
	cr_assert(v.goal);
}

Test(evaluate, no_proof_that_the_switch_acted_fails)
{
	struct pvm_run r[9];
	struct pvm_verdict v;

	three(r, 0.52, 0.15, 0.12, 0); /* switch 1 never walked under VMA locks */
	pvm_evaluate(r, 9, &v);
	cr_assert(!v.acted && !v.goal && !v.plain && !v.maxima);
	three(r, 0.52, 0.15, 0.12, 40);
	r[0].ctr[PVM_C_LOCKED] = 1; /* ... or switch 0 did */
	pvm_evaluate(r, 9, &v);
	cr_assert(!v.acted && !v.goal);
	three(r, 0.52, 0.15, 0.12, 40);
	r[4].have[PVM_C_LOCKED] = false; /* ... or the counter is missing */
	pvm_evaluate(r, 9, &v);
	cr_assert(!v.have_switch_ctr && !v.goal);
}

Test(evaluate, no_excess_to_remove_fails)
{
	struct pvm_run r[9];
	struct pvm_verdict v;

	three(r, 0.12, 0.12, 0.12, 40);
	pvm_evaluate(r, 9, &v);
	cr_assert(!v.goal);
}

Test(evaluate, worse_maxima_fail)
{
	struct pvm_run r[9];
	struct pvm_verdict v;

	three(r, 0.52, 0.15, 0.12, 40);
	r[1].max_ms = r[4].max_ms = r[7].max_ms = 9; /* above off (6) and base (5) */
	pvm_evaluate(r, 9, &v);
	cr_assert(!v.maxima && v.goal);
}
