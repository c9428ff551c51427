/* uprobe_scale --stress: uprobe hits against remaps, VMA churn, forks, switch flips and re-registration (for debug kernels). */
#define _GNU_SOURCE
#include "probe.h"
#include "mmlocks_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_HITTERS 128
#define PG 4096ul

static volatile int stop;
static struct us_alias al;  /* a second private mapping of the probed page */
static long long hits[MAX_HITTERS], remaps, churns, forks, fork_fail, flips, reregs, errs;

/* Odd hitters call through the alias, even ones the original text. */
static void *hitter(void *arg)
{
	long i = (long)arg;

	/* As in the measurement: the churn, fork and flip threads must get CPU (nice 15). */
	return (void *)us_hit_loop(i % 2 ? al.fn : us_probed, &hits[i], &stop, NULL, NULL);
}

static long long calls_so_far(int nhit)
{
	long long n = 0;

	for (int i = 0; i < nhit; i++)
		n += __atomic_load_n(&hits[i], __ATOMIC_RELAXED);
	return n;
}

/*
 * Replace the alias in place (MAP_FIXED: one mmap_write_lock, no moment
 * without a mapping; uprobe_mmap() installs the breakpoint in the new VMA),
 * and change other mappings: map, split by mprotect, grow or move by mremap,
 * unmap.
 */
static void *churner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && !mg_stop_signal) {
		char *m, *r;

		if (mmap(al.page, PG, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, al.fd, al.off) != al.page)
			__atomic_fetch_add(&errs, 1, __ATOMIC_RELAXED);
		remaps++;
		m = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			__atomic_fetch_add(&errs, 1, __ATOMIC_RELAXED);
			continue;
		}
		m[0] = 1;
		mprotect(m + 4 * PG, 4 * PG, PROT_READ);
		r = mremap(m, 16 * PG, 32 * PG, MREMAP_MAYMOVE);
		munmap(r == MAP_FAILED ? m : r, r == MAP_FAILED ? 16 * PG : 32 * PG);
		churns++;
		mg_sleep_us(200);
	}
	return NULL;
}

/* Children inherit the breakpoints (dup_mmap), hit them in their own mm, and exit. */
static void *forker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && !mg_stop_signal) {
		int st;
		pid_t p = fork();

		if (p == 0) {
			long acc = 0;

			for (int i = 0; i < 50; i++)
				acc = al.fn(us_probed(acc));
			_exit(acc == 100 ? 0 : 1);
		}
		if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
			fork_fail++;
		else
			forks++;
		mg_sleep_us(10000);
	}
	return NULL;
}

bool us_stress(const struct us_target *t, int nhit, long long seconds)
{
	pthread_t th[MAX_HITTERS + 2];
	long long c[US_NR] = { 0 }, total = 0, alias_total = 0, gap_calls = 0;
	uint64_t gap_ns = 0;
	int started = 0;
	struct mg_json j;
	uint64_t end;
	bool ok;

	nhit = nhit < 2 ? 2 : nhit > MAX_HITTERS ? MAX_HITTERS : nhit;
	if (!us_map_alias(t, &al) || mg_knob_set_ll(US_KNOB, 1) || us_probe_enable(true) ||
	    !us_counters_reset()) {
		mg_error(US_EXP, "stress: cannot set up the alias, the switch, the uprobe or the counters");
		return false;
	}
	for (long i = 0; i < nhit; i++)
		started += !pthread_create(&th[started], NULL, hitter, (void *)i);
	started += !pthread_create(&th[started], NULL, churner, NULL);
	started += !pthread_create(&th[started], NULL, forker, NULL);
	end = mg_now_ns() + (uint64_t)seconds * 1000000000ull;
	for (int i = 1; started == nhit + 2 && !mg_stop_signal && mg_now_ns() < end; i++) {
		mg_sleep_us(200000);
		flips += !mg_knob_set_ll(US_KNOB, i % 2 ? 0 : 1);
		if (i % 5 == 0) { /* unregister, then register again: hitters may be mid-trap */
			long long c0 = calls_so_far(nhit);
			uint64_t t0 = mg_now_ns();

			reregs += !us_probe_enable(false) && !us_probe_enable(true);
			/* calls from the start of the unregistration to the end of the registration */
			gap_ns += mg_now_ns() - t0;
			gap_calls += calls_so_far(nhit) - c0;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	ok = started == nhit + 2 && us_counters_read(c);
	for (int i = 0; i < nhit; i++) {
		total += hits[i];
		alias_total += i % 2 ? hits[i] : 0;
	}
	mgj_start(&j, "stress", US_EXP);
	mgj_int(&j, "seconds", seconds);
	mgj_int(&j, "hitters", nhit);
	mgj_int(&j, "hits", total);
	mgj_int(&j, "hits_alias", alias_total);
	mgj_int(&j, "alias_remaps", remaps);
	mgj_int(&j, "churn_cycles", churns);
	mgj_int(&j, "forks", forks);
	mgj_int(&j, "fork_failures", fork_fail);
	mgj_int(&j, "switch_flips", flips);
	mgj_int(&j, "reregistrations", reregs);
	mgj_num(&j, "reregistration_seconds", (double)gap_ns / 1e9);
	mgj_int(&j, "hits_during_reregistration", gap_calls);
	mgj_int(&j, "mapping_errors", errs);
	for (int i = 0; i < US_NR; i++)
		mgj_int(&j, us_counter_names[i], c[i]);
	/*
	 * Not a check: calls outside the re-registrations against the lookups
	 * (children's calls add lookups; a remap of the alias lets a few calls
	 * run the original instruction, see the README's --rereg).
	 */
	mgj_int(&j, "calls_outside_reregistration", total - gap_calls);
	mgj_int(&j, "lookups", c[US_SUCCESS] + c[US_MMAP_LOCKED]);
	mgj_int(&j, "child_calls", 100 * forks);
	/* Both lookup paths ran, and every moving part moved. */
	ok = ok && total > 0 && c[US_SUCCESS] > 0 && c[US_MMAP_LOCKED] > 0 && remaps > 0 &&
	     forks > 0 && !fork_fail && flips > 0 && reregs > 0 && !errs;
	mgj_bool(&j, "exercised", ok);
	mgj_emit(&j);
	if (!ok)
		mg_error(US_EXP, "stress: a thread did not start, a child or mapping failed, or a "
			 "lookup path never ran (see the stress record)");
	return ok;
}
