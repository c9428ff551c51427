/* uprobe_scale --rereg: does a uprobe re-registered through tracefs keep trapping? Calls vs hits vs lookups, per window. */
#define _GNU_SOURCE
#include "probe.h"
#include "mmlocks_guest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_HITTERS 64
#define PARK_WAIT_US 10000000ull /* hitters must park within 10 s */

static struct us_alias al;
static volatile int stop, park;
static int parked;
static long long calls[MAX_HITTERS];

/* What else happens during a series of windows (the --stress's other threads, one at a time). */
enum { QUIET, REMAP, FORK, NDIST };
static const char *const dist_name[NDIST] = { "quiet", "remap", "fork" };
static volatile int dist_stop;
static long long dist_ops, dist_errs;

/*
 * REMAP: replace the alias in place as the --stress does (mmap(MAP_FIXED):
 * uprobe_munmap() on the old VMA, uprobe_mmap() on the new one). FORK: fork
 * children that exit at once (dup_mmap(), then exit_mmap()): they call
 * nothing, so every lookup is the parent's.
 */
static void *disturber(void *arg)
{
	long mode = (long)arg;

	while (!__atomic_load_n(&dist_stop, __ATOMIC_RELAXED) && !mg_stop_signal) {
		if (mode == REMAP) {
			if (mmap(al.page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC,
				 MAP_PRIVATE | MAP_FIXED, al.fd, al.off) != al.page)
				__atomic_fetch_add(&dist_errs, 1, __ATOMIC_RELAXED);
			mg_sleep_us(200);
		} else {
			int st;
			pid_t p = fork();

			if (p == 0)
				_exit(0);
			if (p < 0 || waitpid(p, &st, 0) != p)
				__atomic_fetch_add(&dist_errs, 1, __ATOMIC_RELAXED);
			mg_sleep_us(10000);
		}
		__atomic_fetch_add(&dist_ops, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Even hitters call us_probed() in the program's text, odd ones in the alias. */
static void *hitter(void *arg)
{
	long i = (long)arg;

	return (void *)us_hit_loop(i % 2 ? al.fn : us_probed, &calls[i], &stop, &park, &parked);
}

/*
 * The watcher loads the first byte of us_probed() in both mappings, as the
 * hitters' instruction fetches would find it through the page tables, and
 * counts the loads that do not see the int3.
 */
static long long loads[2], not_int3[2];
static int seen[2] = { -1, -1 }; /* the last byte other than the int3 a load saw */

static void *watcher(void *arg)
{
	volatile unsigned char *p[2] = { (volatile unsigned char *)&us_probed,
					 (volatile unsigned char *)al.fn };

	(void)arg;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19); /* the hitters come first */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && !mg_stop_signal)
		for (int m = 0; m < 2; m++) {
			unsigned char b = *p[m];

			if (b != 0xcc) {
				__atomic_store_n(&seen[m], b, __ATOMIC_RELAXED);
				__atomic_store_n(&not_int3[m], not_int3[m] + 1, __ATOMIC_RELAXED);
			}
			__atomic_store_n(&loads[m], loads[m] + 1, __ATOMIC_RELAXED);
		}
	return NULL;
}

/* What a window counts: calls per mapping, the event's hits, the kernel's lookups, the loads. */
struct snap {
	long long text, alias, hits, cnt[US_NR], loads[2], not_int3[2];
};

/*
 * The calls are read before and after the files (a few system calls, during
 * which the hitters go on): the mean of the two is the estimate, so that the
 * windows' edges do not all lean one way.
 */
static void add_calls(int nhit, struct snap *s)
{
	for (int i = 0; i < nhit; i++)
		*(i % 2 ? &s->alias : &s->text) += __atomic_load_n(&calls[i], __ATOMIC_RELAXED);
}

static bool snap(int nhit, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	add_calls(nhit, s);
	for (int m = 0; m < 2; m++) {
		s->loads[m] = __atomic_load_n(&loads[m], __ATOMIC_RELAXED);
		s->not_int3[m] = __atomic_load_n(&not_int3[m], __ATOMIC_RELAXED);
	}
	s->hits = us_probe_hits();
	if (s->hits < 0 || !us_counters_read(s->cnt))
		return false;
	add_calls(nhit, s);
	s->text /= 2;
	s->alias /= 2;
	return true;
}

/* Park every hitter (none is inside us_probed() or its trap), bounded. */
static bool park_all(int nhit, bool on)
{
	uint64_t end = mg_now_ns() + PARK_WAIT_US * 1000;

	__atomic_store_n(&park, on, __ATOMIC_RELEASE);
	while (on && __atomic_load_n(&parked, __ATOMIC_ACQUIRE) < nhit)
		if (mg_now_ns() > end || mg_stop_signal)
			return false;
		else
			mg_sleep_us(1000);
	return true;
}

static void put_byte(struct mg_json *j, const char *k, int v)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_int3", k);
	if (v < 0)
		mgj_null(j, key);
	else
		mgj_bool(j, key, v == 0xcc);
}

/*
 * One window: re-register (how: "none", "hot" with the hitters calling,
 * "cold" with them parked), then count ms of calls.
 */
static bool window(const char *how, int dist, int round, int pos, int nhit, long long ms)
{
	long long d0 = __atomic_load_n(&dist_ops, __ATOMIC_RELAXED);
	struct snap g, a, b;
	struct mg_json j;
	int off_rc = 0, on_rc = 0;
	uint64_t t0, t1, t2;
	long long look, glook;
	bool trapped;

	if (mg_knob_set_ll(US_KNOB, pos) || !snap(nhit, &g))
		return false;
	t0 = t1 = t2 = mg_now_ns();
	if (strcmp(how, "none")) {
		bool cold = !strcmp(how, "cold");

		if (cold && !park_all(nhit, true))
			return false;
		t0 = mg_now_ns();
		off_rc = us_probe_enable(false);
		t1 = mg_now_ns();
		on_rc = us_probe_enable(true);
		t2 = mg_now_ns();
		if (cold)
			park_all(nhit, false);
	}
	if (!snap(nhit, &a))
		return false;
	mg_sleep_us((unsigned long)ms * 1000);
	if (!snap(nhit, &b))
		return false;
	glook = (a.cnt[US_SUCCESS] - g.cnt[US_SUCCESS]) + (a.cnt[US_MMAP_LOCKED] - g.cnt[US_MMAP_LOCKED]);
	look = (b.cnt[US_SUCCESS] - a.cnt[US_SUCCESS]) + (b.cnt[US_MMAP_LOCKED] - a.cnt[US_MMAP_LOCKED]);
	mgj_start(&j, "rereg", US_EXP);
	mgj_str(&j, "reregister", how);
	mgj_str(&j, "meanwhile", dist_name[dist]);
	mgj_int(&j, "meanwhile_ops", __atomic_load_n(&dist_ops, __ATOMIC_RELAXED) - d0);
	mgj_int(&j, "round", round);
	mgj_int(&j, "uprobe_speculate", pos);
	mgj_int(&j, "disable_rc", off_rc);
	mgj_int(&j, "enable_rc", on_rc);
	/* the re-registration itself: how long each write took, what was called meanwhile */
	mgj_num(&j, "disable_ms", (double)(t1 - t0) / 1e6);
	mgj_num(&j, "enable_ms", (double)(t2 - t1) / 1e6);
	mgj_int(&j, "gap_calls", a.text + a.alias - g.text - g.alias);
	mgj_int(&j, "gap_probe_hits", a.hits - g.hits);
	mgj_int(&j, "gap_lookups", glook);
	mgj_int(&j, "ms", ms);
	mgj_int(&j, "calls_text", b.text - a.text);
	mgj_int(&j, "calls_alias", b.alias - a.alias);
	mgj_int(&j, "calls", b.text + b.alias - a.text - a.alias);
	mgj_int(&j, "probe_hits", b.hits - a.hits);
	mgj_int(&j, "lookups", look);
	for (int i = 0; i < US_NR; i++)
		mgj_int(&j, us_counter_names[i], b.cnt[i] - a.cnt[i]);
	mgj_int(&j, "loads_text", b.loads[0] - a.loads[0]);
	mgj_int(&j, "loads_text_not_int3", b.not_int3[0] - a.not_int3[0]);
	mgj_int(&j, "loads_alias", b.loads[1] - a.loads[1]);
	mgj_int(&j, "loads_alias_not_int3", b.not_int3[1] - a.not_int3[1]);
	mgj_int(&j, "last_byte_not_int3_text", __atomic_load_n(&seen[0], __ATOMIC_RELAXED));
	mgj_int(&j, "last_byte_not_int3_alias", __atomic_load_n(&seen[1], __ATOMIC_RELAXED));
	/* After the window: is the int3 in each mapping, as the page tables and as loads see it? */
	put_byte(&j, "text_mem", us_mem_byte((uintptr_t)&us_probed));
	put_byte(&j, "alias_mem", us_mem_byte((uintptr_t)al.fn));
	put_byte(&j, "text_load", *(volatile unsigned char *)&us_probed);
	put_byte(&j, "alias_load", *(volatile unsigned char *)al.fn);
	/*
	 * Every call of the window trapped and reached the event's handler: one
	 * hit each (1 % slack for the snapshots' edges).
	 */
	trapped = llabs(b.hits - a.hits - (b.text + b.alias - a.text - a.alias)) <= (b.hits - a.hits) / 100 + 2;
	mgj_bool(&j, "every_call_trapped", trapped);
	mgj_emit(&j);
	return !off_rc && !on_rc;
}

bool us_rereg(const struct us_target *t, int nhit, long long rounds, long long ms)
{
	pthread_t th[MAX_HITTERS], wt;
	int started = 0;
	bool ok, watching;

	nhit = nhit < 2 ? 2 : nhit > MAX_HITTERS ? MAX_HITTERS : nhit;
	if (!us_map_alias(t, &al) || mg_knob_set_ll(US_KNOB, 0) || us_probe_enable(true) ||
	    us_probe_hits() < 0) {
		mg_error(US_EXP, "rereg: cannot map the alias, set the switch, enable the uprobe or "
			 "read uprobe_profile");
		return false;
	}
	for (long i = 0; i < nhit; i++)
		started += !pthread_create(&th[started], NULL, hitter, (void *)i);
	watching = !pthread_create(&wt, NULL, watcher, NULL);
	ok = started == nhit && watching;
	for (long d = 0; ok && d < NDIST && !mg_stop_signal; d++) {
		pthread_t dt;

		__atomic_store_n(&dist_stop, d == QUIET, __ATOMIC_RELAXED);
		if (d != QUIET && pthread_create(&dt, NULL, disturber, (void *)d))
			ok = false;
		ok = ok && window("none", (int)d, 0, 0, nhit, ms);
		for (int r = 1; ok && r <= rounds && !mg_stop_signal; r++)
			ok = window("hot", (int)d, r, (r - 1) % 2, nhit, ms) &&
			     window("cold", (int)d, r, (r - 1) % 2, nhit, ms);
		__atomic_store_n(&dist_stop, 1, __ATOMIC_RELAXED);
		if (d != QUIET)
			pthread_join(dt, NULL);
	}
	ok = ok && !dist_errs;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	park_all(nhit, false);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (watching)
		pthread_join(wt, NULL);
	if (!ok)
		mg_error(US_EXP, "rereg: a thread did not start, a hitter did not park, or a tracefs "
			 "write, a remap or a fork failed (see the rereg records)");
	return ok && !mg_stop_signal;
}
