/*
 * Host tests of remote_read's pieces (guest/remote_read/): the outcome of
 * every kind of bad read against a real target (the host's /proc/PID/mem
 * behaves as 6.12's: mem_rw() is the same), a target that exits between
 * the open and the read (forced with a zombie, no sleeps), a reader that
 * records only in its slot and stops when the target is gone, the target's
 * writer, and the verdicts' arithmetic. Waits are bounded polls of state
 * the code under test publishes, never sleeps standing in for an order.
 */
#define _GNU_SOURCE
#include "remote_read/access.h"
#include "remote_read/report.h"
#include "remote_read/tasks.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define REGION (64 * 1024)

/* ---- the pattern ------------------------------------------------------------------- */

Test(pattern, whole_and_sampled_checks)
{
	uint64_t *r = malloc(REGION);

	rr_fill(r, REGION);
	cr_assert(rr_check(r, REGION, 0, false));
	cr_assert(rr_check(r + 8, 4096, 64, true));
	cr_assert(!rr_check(r, 4096, 8, false), "a read one word off matched the pattern");
	r[100] ^= 1;
	cr_assert(!rr_check(r, REGION, 0, false), "a changed word matched");
	cr_assert(rr_check(r, REGION, 0, true), "sampled checks only the first and last word");
	r[REGION / 8 - 1] ^= 1;
	cr_assert(!rr_check(r, REGION, 0, true));
	free(r);
}

Test(pattern, unaligned_bytes)
{
	uint64_t w[4];

	rr_fill(w, sizeof(w));
	cr_assert(rr_check((char *)w + 3, 8, 3, false));
	cr_assert(!rr_check((char *)w + 3, 8, 4, false));
}

/* ---- a real target ------------------------------------------------------------------- */

/* rr_start_target() with a REGION-byte region, not pinned. */
static struct rr_procs start_target(int nslots)
{
	struct rr_procs p = { .sh = rr_shared_new() };
	struct rr_target_cfg tc = { .region_bytes = REGION, .cpu = -1, .nslots = nslots,
				    .pause_us = 100, .deadline_ns = mg_now_ns() + 60000000000ull };
	const char *why = "no shared page";

	cr_assert(p.sh && rr_start_target(&p, &tc, &why), "the target did not start: %s", why);
	return p;
}

/* EOF on the target's pipes; its exit status (rr_reap: -1 if it had to be killed). */
static int stop_target(struct rr_procs *p)
{
	rr_close_target(p);
	return rr_reap(p->target, 20000);
}

Test(access, outcomes_of_each_read)
{
	struct rr_procs t = start_target(1);
	char buf[4096];
	enum rr_outcome why;
	ssize_t got;
	int err, fd = rr_open(t.target, "mem", &why, &err);

	cr_assert(fd >= 0, "open: %s", strerror(err));
	cr_assert_eq(rr_pread(fd, buf, 4096, RR_REGION_BASE + 4096, &got, &err), RR_OK);
	cr_assert(rr_check(buf, 4096, 4096, false), "the bytes read are not the target's");
	cr_assert_eq(rr_pread(fd, buf, 8, RR_REGION_BASE + REGION, &got, &err), RR_UNMAPPED);
	cr_assert_eq(err, EIO);
	cr_assert_eq(rr_pread(fd, buf, 24, RR_REGION_BASE + REGION - 16, &got, &err), RR_SHORT);
	cr_assert_eq(got, 16, "a read running into the hole returned %zd bytes", got);
	close(fd);
	cr_assert(t.sh->target_mlocked || t.sh->target_mlock_err, "mlock's result was not recorded");
	cr_assert_eq(stop_target(&t), 0);
}

Test(access, probes_all_as_expected)
{
	struct rr_procs t = start_target(1);
	struct rr_probe p[RR_NPROBES];

	cr_assert(rr_probe_all(t.target, RR_REGION_BASE, REGION, p));
	for (int i = 0; i < RR_NPROBES; i++)
		cr_assert(p[i].ok, "probe %s: got %s", rr_probe_name[i], rr_outcome_name[p[i].got]);
	cr_assert_eq(p[RR_P_CROSSING].bytes, 8);
	cr_assert(p[RR_P_DENIED].skipped || p[RR_P_DENIED].got == RR_DENIED);
	cr_assert_eq(stop_target(&t), 0);
}

Test(access, probes_catch_a_wrong_region)
{
	struct rr_procs t = start_target(1);
	struct rr_probe p[RR_NPROBES];

	/* Told the region is one page longer, the "unmapped" and "crossing" reads land in the hole's wrong place. */
	cr_assert(!rr_probe_all(t.target, RR_REGION_BASE, REGION - 4096, p));
	cr_assert(!p[RR_P_UNMAPPED].ok && !p[RR_P_CROSSING].ok);
	cr_assert(p[RR_P_WHOLE].ok && p[RR_P_GONE].ok);
	cr_assert_eq(stop_target(&t), 0);
}

Test(access, target_gone_between_open_and_read)
{
	pid_t pid = fork();
	siginfo_t si;
	enum rr_outcome why;
	char buf[16];
	ssize_t got;
	int err, fd;

	cr_assert(pid >= 0);
	if (pid == 0)
		for (;;)
			pause();
	fd = rr_open(pid, "mem", &why, &err);
	cr_assert(fd >= 0);
	/* A zombie: the task is there, its mm is gone. */
	kill(pid, SIGKILL);
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	cr_assert_eq(rr_pread(fd, buf, 8, 4096, &got, &err), RR_GONE);
	waitpid(pid, NULL, 0);
	/* Reaped: /proc/PID is gone too. */
	cr_assert_eq(rr_open(pid, "mem", &why, &err), -1);
	cr_assert_eq(why, RR_GONE);
	cr_assert_eq(rr_pread(fd, buf, 8, 4096, &got, &err), RR_GONE);
	close(fd);
}

Test(access, mismatch_is_not_a_read)
{
	struct rr_procs t = start_target(1);
	struct rr_reader_cfg c = { .role = RR_MEM, .target = t.target, .off = RR_REGION_BASE + 8, .len = 64 };
	char buf[64];
	enum rr_outcome why;
	uint64_t ns;
	int err, fd = rr_open(t.target, "mem", &why, &err);

	cr_assert(fd >= 0);
	cr_assert_eq(rr_read_once(&c, fd, buf, &ns), RR_OK);
	c.expect = "not the target's bytes, 64 of them ..................................";
	cr_assert_eq(rr_read_once(&c, fd, buf, &ns), RR_MISMATCH);
	close(fd);
	cr_assert_eq(stop_target(&t), 0);
}

/* ---- the reader and the writer ------------------------------------------------------ */

/* Bump the epoch twice, each time until every running reader has seen it (see settle()). */
static void settle(struct rr_shared *sh, int nreaders)
{
	for (int round = 0; round < 2; round++) {
		int e = __atomic_add_fetch(&sh->epoch, 1, __ATOMIC_ACQ_REL);

		for (int i = 0; i < nreaders; i++)
			for (int ms = 0; __atomic_load_n(&sh->seen[i], __ATOMIC_ACQUIRE) != e; ms++) {
				cr_assert(ms < 20000, "reader %d never saw epoch %d", i, e);
				poll(NULL, 0, 1);
			}
	}
}

static pid_t start_reader(struct rr_procs *t, int role, const char *expect, size_t len)
{
	struct rr_reader_cfg c = { .role = role, .target = t->target, .cpu = -1, .len = len,
				   .off = role == RR_MEM ? RR_REGION_BASE : 0, .expect = expect,
				   .deadline_ns = mg_now_ns() + 60000000000ull };

	cr_assert(rr_start_reader(t, &c));
	return t->reader[role - RR_MEM];
}

static void wait_exit(pid_t pid)
{
	cr_assert_eq(rr_reap(pid, 20000), 0, "child %d did not exit by itself with status 0", (int)pid);
}

Test(reader, records_only_in_its_slot)
{
	struct rr_procs t = start_target(2);
	static char cmdline[4096];
	ssize_t clen = mg_read_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
	pid_t mem = start_reader(&t, RR_MEM, NULL, 8192), cmd = start_reader(&t, RR_CMDLINE, cmdline, (size_t)clen);
	struct rr_shared *sh = t.sh;

	cr_assert(clen > 0);
	settle(sh, 2); /* both wait in IDLE */
	sh->readers_on[1] = true;
	__atomic_store_n(&sh->phase, 1, __ATOMIC_RELEASE);
	settle(sh, 2); /* each has finished a read begun in slot 1 */
	__atomic_store_n(&sh->phase, 0, __ATOMIC_RELEASE); /* slot 0: a baseline, readers off */
	settle(sh, 2);
	__atomic_store_n(&sh->phase, MG_PHASE_STOP, __ATOMIC_RELEASE);
	wait_exit(mem);
	wait_exit(cmd);
	for (int role = RR_MEM; role <= RR_CMDLINE; role++) {
		const struct rr_cell *c1 = &sh->cell[role][1], *c0 = &sh->cell[role][0];

		cr_assert(sh->done[role]);
		cr_assert(c1->count >= 1 && c1->outcome[RR_OK] == c1->count, "%s: %lld reads, %lld ok",
			  rr_role_name[role], (long long)c1->count, (long long)c1->outcome[RR_OK]);
		cr_assert(c1->p50 > 0 && c1->p50 <= c1->p99 && c1->p99 <= c1->max);
		for (int o = 1; o < RR_NOUT; o++)
			cr_assert_eq(c1->outcome[o], 0, "%s: a %s read", rr_role_name[role], rr_outcome_name[o]);
		cr_assert_eq(c0->count, 0, "%s read in a baseline slot", rr_role_name[role]);
	}
	cr_assert_eq(stop_target(&t), 0);
}

Test(reader, stops_when_the_target_is_gone)
{
	struct rr_procs t = start_target(1);
	pid_t mem = start_reader(&t, RR_MEM, NULL, 64);

	t.sh->readers_on[0] = true;
	__atomic_store_n(&t.sh->phase, 0, __ATOMIC_RELEASE);
	settle(t.sh, 1);
	kill(t.target, SIGKILL);
	waitpid(t.target, NULL, 0);
	wait_exit(mem); /* by itself: the phase never said stop */
	cr_assert_eq(t.sh->cell[RR_MEM][0].outcome[RR_GONE], 1);
	cr_assert(t.sh->cell[RR_MEM][0].outcome[RR_OK] >= 1);
	rr_close_target(&t);
}

/* The writer thread's voluntary context switches (one per pause): proof it has done calls. */
static long writer_switches(pid_t pid)
{
	char path[96], buf[4096], *p;
	long best = -1;

	for (int tid = pid + 1; tid < pid + 64; tid++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, tid);
		if (mg_read_file(path, buf, sizeof(buf)) > 0 && (p = strstr(buf, "voluntary_ctxt_switches:")))
			best = atol(p + strlen("voluntary_ctxt_switches:"));
	}
	return best;
}

Test(target, writer_records_its_calls_per_slot)
{
	struct rr_procs t = start_target(3);

	__atomic_store_n(&t.sh->phase, 2, __ATOMIC_RELEASE);
	cr_assert(rr_start_writer(&t), "the target did not say its writer started");
	for (int ms = 0; writer_switches(t.target) < 3; ms++) {
		cr_assert(ms < 20000, "the writer thread did not run");
		poll(NULL, 0, 1);
	}
	cr_assert_eq(stop_target(&t), 0);
	cr_assert(t.sh->done[RR_WRITER]);
	cr_assert(t.sh->cell[RR_WRITER][2].count >= 4, "%lld calls", (long long)t.sh->cell[RR_WRITER][2].count);
	cr_assert_eq(t.sh->cell[RR_WRITER][0].count, 0);
	cr_assert(t.sh->cell[RR_WRITER][2].p99 <= t.sh->cell[RR_WRITER][2].max);
}

/* ---- the verdicts ------------------------------------------------------------------------- */

static struct rr_seed_run seed_run(int size, int sw, double ns, long long vma, long long mmap)
{
	return (struct rr_seed_run){ .size = size, .sw = sw, .reads = 10, .ns_per_read = ns,
				     .have_ctr = true, .ctr = { vma, mmap, 0 } };
}

Test(verdict, seed_medians_ratio_and_counters)
{
	struct rr_seed_run r[12];
	struct rr_seed_verdict v;
	int n = 0;

	for (int rep = 0; rep < 3; rep++) {
		r[n++] = seed_run(2, 0, 100 + rep, 0, 160);
		r[n++] = seed_run(2, 1, 95, 160, 0);	/* 101 / 95 = 1.063: the goal */
		r[n++] = seed_run(3, 0, 1000, 0, 2560);
		r[n++] = seed_run(3, 1, 960 + rep * 100, 2560, 0); /* 1000 / 1060: no goal */
	}
	rr_seed_evaluate(r, n, &v);
	cr_assert_float_eq(v.med[2][0], 101, 1e-9);
	cr_assert_float_eq(v.min[2][0], 100, 1e-9);
	cr_assert_float_eq(v.max[2][0], 102, 1e-9);
	cr_assert(v.acted[2] && v.goal[2]);
	cr_assert(v.acted[3] && !v.goal[3]);
	cr_assert_float_eq(v.calls_per_read[3][1], 256, 1e-9);
	cr_assert_float_eq(v.mbps[2][1], 65536 / 95.0 * 1e3, 1e-6);
	cr_assert(!v.acted[0], "a size with no runs cannot have acted");
}

Test(verdict, seed_switch_must_act)
{
	struct rr_seed_run r[2] = { seed_run(3, 0, 2000, 5, 2556), seed_run(3, 1, 1000, 2560, 0) };
	struct rr_seed_verdict v;

	rr_seed_evaluate(r, 2, &v);
	cr_assert(!v.acted[3] && !v.goal[3], "VMA-locked calls under switch 0: the switch did not act");
	r[0].ctr[RR_C_VMA_LOCKED] = 0;
	r[1].have_ctr = false;
	rr_seed_evaluate(r, 2, &v);
	cr_assert(!v.goal[3] && isnan(v.calls_per_read[3][1]), "no counters, no proof");
}

Test(verdict, seed_ratio_from_the_8_b_saving)
{
	struct rr_seed_run r[4] = { seed_run(0, 0, 300, 0, 10), seed_run(0, 1, 200, 10, 0),
				    seed_run(2, 0, 8000, 0, 160), seed_run(2, 1, 7900, 160, 0) };
	struct rr_seed_verdict v;

	rr_seed_evaluate(r, 4, &v);
	/* 100 ns saved per call, 16 calls per 64 KiB read: 8000 / 6400. */
	cr_assert_float_eq(v.ratio_from_8b[2], 1.25, 1e-9);
	cr_assert_float_eq(v.ratio_from_8b[0], 1.5, 1e-9);
	cr_assert(!v.goal[2], "measured 8000 / 7900 is below 1.05 whatever the prediction");
}

static struct rr_cont_run cont_run(int set, int64_t p99_us, long long vma)
{
	struct rr_cont_run r = { .set = set, .have_ctr = true, .ctr = { vma, 0, 0 } };

	r.cell[RR_WRITER] = (struct rr_cell){ .count = 100, .p50 = 1000, .p99 = p99_us * 1000, .max = p99_us * 2000 };
	if (set != RR_BASE)
		r.cell[RR_MEM] = r.cell[RR_CMDLINE] = (struct rr_cell){ .count = 10, .p50 = 5000, .p99 = 9000, .max = 9000 };
	return r;
}

Test(verdict, contention_goal_is_five_times)
{
	struct rr_cont_run r[9];
	struct rr_cont_verdict v;

	for (int i = 0; i < 3; i++) {
		r[3 * i] = cont_run(RR_SW_OFF, 500 + i, 0);
		r[3 * i + 1] = cont_run(RR_SW_ON, 100 + i, 50);
		r[3 * i + 2] = cont_run(RR_BASE, 90, 0);
	}
	rr_cont_evaluate(r, 9, &v);
	cr_assert_float_eq(v.p99[RR_SW_OFF][RR_WRITER], 501, 1e-9);
	cr_assert_float_eq(v.ratio, 501.0 / 101, 1e-9);
	cr_assert(v.acted && !v.goal, "4.96x is not 5x");
	r[4].cell[RR_WRITER].p99 = 100000;
	r[7].cell[RR_WRITER].p99 = 100000; /* median now 100 us: 5.01x */
	rr_cont_evaluate(r, 9, &v);
	cr_assert(v.goal);
	cr_assert_eq(v.n[RR_BASE], 3);
	cr_assert_float_eq(v.p99_min[RR_SW_ON], 100, 1e-9);
	r[0].ctr[RR_C_VMA_LOCKED] = 1;
	rr_cont_evaluate(r, 9, &v);
	cr_assert(!v.acted && !v.goal);
}

/* The longest record must fit mg_json's buffer: a truncated line is not JSON. */
Test(verdict, contention_summary_fits_one_record)
{
	static struct rr_cont_run r[RR_MAX_SLOTS];
	struct rr_cont_verdict v;
	char out[65536];
	int pfd[2], saved = dup(1);
	ssize_t n;

	for (int i = 0; i < RR_MAX_SLOTS; i++)
		r[i] = cont_run(i % RR_NSET, 123456789, i % RR_NSET == RR_SW_ON ? 123456789 : 0);
	rr_cont_evaluate(r, RR_MAX_SLOTS, &v);
	cr_assert(!pipe(pfd) && saved >= 0);
	fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20);
	dup2(pfd[1], 1);
	rr_cont_report("x", r, RR_MAX_SLOTS, &v, 1048576);
	dup2(saved, 1);
	close(pfd[1]);
	n = read(pfd[0], out, sizeof(out) - 1);
	cr_assert(n > 0);
	out[n] = '\0';
	for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1)
		cr_assert(nl > line && nl[-1] == '}' && (nl - line < 2 || nl[-2] != '\\'),
			  "a record was cut: %.120s", line);
	cr_assert(strstr(out, "\"slot_p99_us_baseline\":["), "the last field is missing");
	close(pfd[0]);
	close(saved);
}
