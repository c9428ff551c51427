/* Guest experiment "uprobe-speculation": uprobe hits/s and a mapper's mmap/munmap latency with patch 0011's speculative uprobe lookup (switch 1), without it (0), and with no uprobe. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "uprobe_scale/probe.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXP US_EXP
#define MAX_THREADS 64
#define MAX_REPS 25
#define NPOS 3 /* switch 0, switch 1, no uprobe */
#define POS_BASE 2
#define LAT_CAP (1 << 17)

static struct {
	long long threads, ms, reps, pause_us, nice, stress, rereg, timeout;
	bool quick, tag;
} opt = { 0, 1500, 5, 200, 15, 0, 0, 120, false, false };

static const char *const pos_label[NPOS] = { "switch 0 (stock: mmap_read_lock)",
					     "switch 1 (speculation)", "no uprobe" };

static void usage(FILE *f)
{
	us_usage(f, MAX_THREADS, MAX_REPS);
}

struct cell {
	double seconds, hits_per_s, p50_us, p99_us;
	long long hits, ops, cnt[US_NR], slow[US_SLOW_NR];
};

static struct cell cells[MAX_REPS][NPOS];
static struct mg_lat lat[MAX_REPS * NPOS];
static unsigned char *tags[MAX_REPS * NPOS]; /* --tag-fallbacks */
static int phase = MG_PHASE_IDLE;

/* ---- the hitters ----------------------------------------------------------- */

static volatile int stop;
static pthread_barrier_t start_line;

struct hitter {
	pthread_t t;
	long long calls;
	long sink;
};

static void *hitter(void *arg)
{
	struct hitter *h = arg;
	us_fn volatile fn = us_probed;
	long long n = 0;
	long acc = 0;

	/* Linux: nice is per thread. Failure only costs the mapper run-queue waits. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), (int)opt.nice);
	pthread_barrier_wait(&start_line);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		acc = fn(acc);
		n++;
	}
	h->calls = n;
	h->sink = acc;
	return NULL;
}

/* region: one-cell */
static bool measure(int rep, int pos, int nthreads, struct cell *c)
{
	static struct hitter h[MAX_THREADS];
	int idx = rep * NPOS + pos;
	uint64_t t0;
	int e = 0;

	memset(c, 0, sizeof(*c));
	if (pos != POS_BASE)
		e = mg_knob_set_ll(US_KNOB, pos);
	if (!e)
		e = us_probe_enable(pos != POS_BASE);
	if (e || !us_counters_reset()) {
		mg_error(EXP, "cannot set %s, the uprobe's enable or the counters: %s", US_KNOB,
			 strerror(e ? -e : EIO));
		return false;
	}
	stop = 0;
	if (pthread_barrier_init(&start_line, NULL, (unsigned)nthreads + 1))
		return false;
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&h[i].t, NULL, hitter, &h[i])) {
			/* The barrier would never open: the program cannot go on. */
			mg_error(EXP, "cannot start hitter %d of %d", i + 1, nthreads);
			exit(MG_EXIT_FAIL);
		}
	pthread_barrier_wait(&start_line);
	t0 = mg_now_ns();
	__atomic_store_n(&phase, idx, __ATOMIC_RELEASE);
	for (uint64_t end = t0 + (uint64_t)opt.ms * 1000000ull; !mg_stop_signal && mg_now_ns() < end;)
		mg_sleep_us(10000);
	__atomic_store_n(&phase, MG_PHASE_IDLE, __ATOMIC_RELEASE);
	c->seconds = (double)(mg_now_ns() - t0) / 1e9;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(h[i].t, NULL);
		c->hits += h[i].calls;
	}
	pthread_barrier_destroy(&start_line);
	if (!us_counters_read(c->cnt)) {
		mg_error(EXP, "cannot read the uprobe counters in %s", MG_KNOBS);
		return false;
	}
	c->hits_per_s = (double)c->hits / c->seconds;
	return true;
}
/* endregion: one-cell */

/*
 * The mapper's figures of a cell, once the mapper has stopped (it may still
 * be adding the cell's last call when the cell ends).
 */
static void cell_stats(int rep, int pos, struct cell *c)
{
	struct mg_lat *l = &lat[rep * NPOS + pos];

	c->ops = (long long)l->count / 2;
	c->p50_us = (double)mg_lat_pct(l, 50) / 1e3;
	c->p99_us = (double)mg_lat_pct(l, 99) / 1e3;
}

/*
 * The mapper's calls slower than the no-uprobe cell's p99 of the same
 * repetition (about 1 % of a cell's calls if the hitters changed nothing),
 * counted before cell_stats() sorts the latencies. The test of the fallback
 * reading: a lookup that goes to mmap_read_lock() can delay at most two of
 * the mapper's calls (the one whose mmap_write_unlock() wakes it, and the
 * next, whose mmap_write_lock() waits for it to run and leave), so more
 * slow calls than twice the lookups under the lock cannot all be the
 * fallbacks' doing; --tag-fallbacks says which calls had one nearby.
 */
static void count_slow(int rep)
{
	uint64_t limit = us_pct_copy(&lat[rep * NPOS + POS_BASE], 99);

	for (int pos = 0; pos < NPOS; pos++)
		us_slow_calls(&lat[rep * NPOS + pos], tags[rep * NPOS + pos], limit,
			      cells[rep][pos].slow);
}

static void emit_cell(int rep, int pos, struct cell *c)
{
	struct mg_json j;

	mgj_start(&j, "sample", EXP);
	mgj_int(&j, "rep", rep + 1);
	mgj_str(&j, "position", pos_label[pos]);
	if (pos != POS_BASE)
		mgj_int(&j, "uprobe_speculate", pos);
	mgj_num(&j, "seconds", c->seconds);
	mgj_int(&j, "hits", c->hits);
	mgj_num(&j, "hits_per_s", c->hits_per_s);
	mgj_int(&j, "mapper_pairs", c->ops);
	mgj_num(&j, "mapper_p50_us", c->p50_us);
	mgj_num(&j, "mapper_p99_us", c->p99_us);
	mgj_int(&j, "mapper_calls", (long long)lat[rep * NPOS + pos].n);
	mgj_int(&j, "mapper_calls_over_no_uprobe_p99", c->slow[US_SLOW]);
	for (int t = 0; opt.tag && t < 4; t++) { /* --tag-fallbacks: a lookup under the lock ... */
		static const char *const when[4] = { "none", "before", "during", "both" };
		char k[64];

		snprintf(k, sizeof(k), "mapper_calls_fallback_%s", when[t]);
		mgj_int(&j, k, c->slow[US_CALLS_TAG + t]);
		snprintf(k, sizeof(k), "mapper_slow_calls_fallback_%s", when[t]);
		mgj_int(&j, k, c->slow[US_SLOW_TAG + t]);
	}
	for (int i = 0; i < US_NR; i++)
		mgj_int(&j, us_counter_names[i], c->cnt[i]);
	mgj_emit(&j);
}

/*
 * Did the switch act? Every hit is one lookup (success, or a lookup under
 * mmap_read_lock); under 0 none is speculative, under 1 some are; with no
 * uprobe there is none. The sums are over the repetitions.
 */
static bool proven(const long long s[NPOS][US_NR + 1], char *why, size_t n)
{
	for (int p = 0; p < POS_BASE; p++) {
		long long hits = s[p][US_NR], look = s[p][US_SUCCESS] + s[p][US_MMAP_LOCKED];

		if (hits <= 0 || llabs(look - hits) > hits / 100 + 2) {
			snprintf(why, n, "%s: %lld lookups for %lld hits", pos_label[p], look, hits);
			return false;
		}
	}
	if (s[0][US_ATTEMPT] != 0 || s[1][US_SUCCESS] <= 0 || s[POS_BASE][US_MMAP_LOCKED] != 0) {
		snprintf(why, n, "counters do not follow the switch (attempts under 0: %lld, successes "
			 "under 1: %lld, lookups with no uprobe: %lld)", s[0][US_ATTEMPT],
			 s[1][US_SUCCESS], s[POS_BASE][US_MMAP_LOCKED]);
		return false;
	}
	return true;
}

struct spread {
	double med, min, max;
	uint64_t v[MAX_REPS];
};

static struct spread spread_of(int reps, int pos, bool p99, double scale)
{
	struct spread r;
	double tmp[MAX_REPS];

	for (int i = 0; i < reps; i++) {
		tmp[i] = p99 ? cells[i][pos].p99_us : cells[i][pos].hits_per_s;
		r.v[i] = (uint64_t)(tmp[i] * scale + 0.5);
	}
	r.med = mg_median(tmp, (size_t)reps);
	r.min = tmp[0];
	r.max = tmp[reps - 1];
	return r;
}

static void put_spread(struct mg_json *j, const char *k, const struct spread *s)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_min", k);
	mgj_num(j, key, s->min);
	snprintf(key, sizeof(key), "%s_max", k);
	mgj_num(j, key, s->max);
}

/* region: summary */
static void summary(int reps, int nthreads)
{
	struct spread h[NPOS], l[NPOS];
	long long s[NPOS][US_NR + 1] = { { 0 } };
	double hr, lr;
	bool ok, goal;
	struct mg_json j;
	char why[200] = "", m[128];

	for (int p = 0; p < NPOS; p++) {
		h[p] = spread_of(reps, p, false, 1);
		l[p] = spread_of(reps, p, true, 1000); /* the arrays in ns */
		for (int r = 0; r < reps; r++) {
			for (int i = 0; i < US_NR; i++)
				s[p][i] += cells[r][p].cnt[i];
			s[p][US_NR] += cells[r][p].hits;
		}
		mgj_start(&j, "table_row", EXP);
		mgj_str(&j, "table", "Patch 0011's counters per position, summed over the repetitions");
		mgj_str(&j, "position", pos_label[p]);
		mgj_int(&j, "hits", s[p][US_NR]);
		for (int i = 0; i < US_NR; i++)
			mgj_int(&j, us_counter_names[i], s[p][i]);
		mgj_emit(&j);
	}
	ok = proven(s, why, sizeof(why));
	hr = h[0].med > 0 ? h[1].med / h[0].med : -1;
	lr = l[1].med > 0 ? l[0].med / l[1].med : -1;
	goal = ok && (hr >= 1.5 || lr >= 2);

	for (int row = 0; row < 2; row++) {
		const struct spread *v = row ? l : h;

		if (row)
			snprintf(m, sizeof(m), "mapper mmap/munmap p99 while %d threads hit a uprobe", nthreads);
		else
			snprintf(m, sizeof(m), "uprobe hits/s, %d threads, a mapper thread alongside", nthreads);
		mgj_start(&j, "summary", EXP);
		mgj_str(&j, "metric", m);
		mgj_str(&j, "unit", row ? "us" : "hits/s");
		mgj_num(&j, "before", v[0].med);
		mgj_num(&j, "after", v[1].med);
		mgj_num(&j, "ratio", row ? lr : hr);
		if (row) {
			mgj_str(&j, "published", "no published figure");
		} else {
			mgj_str(&j, "published", "uprobe-nop, 2 CPUs: 5.456 -> 6.701 M/s "
				"(80 CPUs: 8.992 -> 142.037 M/s)");
			mgj_str(&j, "source", "upstream follow-up e0925f2dc4de (Andrii Nakryiko), "
				"bench uprobe-nop, 80-core Xeon Gold 6138");
		}
		mgj_str(&j, "goal", row ? ">= 2x lower, or hits/s >= 1.5x (row above)"
					: ">= 1.5x, or mapper p99 >= 2x lower (row below)");
		mgj_bool(&j, "pass", goal);
		if (!ok)
			mgj_str(&j, "note", why);
		mgj_str(&j, "before_label", "switch 0");
		mgj_str(&j, "after_label", "switch 1");
		mgj_str(&j, "baseline_label", "no uprobe");
		mgj_int(&j, "runs", reps);
		mgj_int(&j, "threads", nthreads);
		put_spread(&j, "before", &v[0]);
		put_spread(&j, "after", &v[1]);
		mgj_num(&j, "no_uprobe", v[POS_BASE].med);
		put_spread(&j, "no_uprobe", &v[POS_BASE]);
		mgj_int(&j, "switch1_success", s[1][US_SUCCESS]);
		mgj_int(&j, "switch1_fail_begin", s[1][US_FAIL_BEGIN]);
		mgj_int(&j, "switch1_fail_lookup", s[1][US_FAIL_LOOKUP]);
		mgj_int(&j, "switch1_fail_retry", s[1][US_FAIL_RETRY]);
		mgj_int(&j, "switch1_mmap_locked", s[1][US_MMAP_LOCKED]);
		mgj_int(&j, "switch0_mmap_locked", s[0][US_MMAP_LOCKED]);
		if (row) { /* per-repetition p99, for the plot; hits/s has no baseline on that scale */
			mgj_num_array(&j, "mapper_p99_us_before", v[0].v, (size_t)reps, 1000);
			mgj_num_array(&j, "mapper_p99_us_after", v[1].v, (size_t)reps, 1000);
			mgj_num_array(&j, "mapper_p99_us_baseline", v[POS_BASE].v, (size_t)reps, 1000);
		}
		mgj_emit(&j);
	}
}
/* endregion: summary */

static void info_record(long nproc, int nthreads, const struct us_target *t)
{
	struct mg_json j;

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "nproc", nproc);
	mgj_int(&j, "threads", nthreads);
	mgj_int(&j, "cell_ms", opt.ms);
	mgj_int(&j, "reps", opt.reps);
	mgj_int(&j, "mapper_pause_us", opt.pause_us);
	mgj_int(&j, "hitter_nice", opt.nice);
	mgj_int(&j, "stress_s", opt.stress);
	mgj_int(&j, "rereg_rounds", opt.rereg);
	mgj_bool(&j, "tag_fallbacks", opt.tag);
	mgj_str(&j, "probe_file", t->path);
	mgj_int(&j, "probe_offset", (long long)t->file_off);
	mgj_str(&j, "tracefs", us_tracefs());
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);
}

/* SIGALRM (the --timeout bound) takes the SIGTERM path: uprobe removed, knobs restored. */
static void on_alarm(int sig)
{
	(void)sig;
	kill(getpid(), SIGTERM);
}

int main(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("threads", &opt.threads, 0, MAX_THREADS, MG_NO_QUICK),
		MG_INT("ms", &opt.ms, 50, 60000, 300),
		MG_INT("reps", &opt.reps, 1, MAX_REPS, 2),
		MG_INT("pause-us", &opt.pause_us, 0, 100000, MG_NO_QUICK),
		MG_INT("nice", &opt.nice, 0, 19, MG_NO_QUICK),
		MG_INT("stress", &opt.stress, 0, 3600, MG_NO_QUICK),
		MG_INT("rereg", &opt.rereg, 0, 100, MG_NO_QUICK),
		MG_FLAG("tag-fallbacks", &opt.tag, true),
		MG_INT("timeout", &opt.timeout, 10, 7200, 60),
		MG_OPTS_END,
	};
	static const char *const need[] = { US_KNOB, MG_KNOBS "/uprobe_speculate_attempt",
					    MG_KNOBS "/uprobe_mmap_locked", NULL };
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);
	struct mg_writer w = { &phase, lat, 0 };
	struct us_tagged tw = { &phase, lat, tags, 0 };
	struct us_target t;
	pthread_t mapper;
	int nthreads;

	opt.quick = mg_parse_opts("uprobe_scale", argc, argv, o, usage);
	mg_require(EXP, need);
	if (!us_tracefs()) {
		mg_error(EXP, "no uprobe_events under %s or /sys/kernel/debug/tracing: this kernel "
			 "lacks CONFIG_UPROBE_EVENTS (labs/kernel/config.fragment has it)", MG_TRACING);
		return MG_EXIT_WRONG_KERNEL;
	}
	mg_install_restore();
	signal(SIGALRM, on_alarm);
	alarm((unsigned)(opt.stress ? opt.stress + opt.timeout : opt.timeout));
	nproc = nproc < 1 ? 1 : nproc;
	nthreads = opt.threads ? (int)opt.threads : (int)(nproc < MAX_THREADS ? nproc : MAX_THREADS);
	if (!us_find_target(&t))
		return MG_EXIT_FAIL;
	info_record(nproc, nthreads, &t);
	/* tracing_on 0: the event stays registered, a hit writes nothing. */
	if (mg_knob_set(MG_TRACING "/tracing_on", "0") && mg_knob_set("/sys/kernel/debug/tracing/tracing_on", "0"))
		mg_log("cannot set tracing_on to 0: hits also write the ring buffer");
	if (!us_probe_add(&t))
		return MG_EXIT_FAIL;
	if (opt.stress) {
		bool ok = us_stress(&t, 2 * nthreads, opt.stress);

		mg_restore_all();
		return ok && !mg_stop_signal ? MG_EXIT_OK : MG_EXIT_FAIL;
	}
	if (opt.rereg) {
		bool ok = us_rereg(&t, nthreads, opt.rereg, opt.ms);

		mg_restore_all();
		return ok ? MG_EXIT_OK : MG_EXIT_FAIL;
	}

	w.pause_us = tw.pause_us = (unsigned long)opt.pause_us;
	for (int i = 0; i < opt.reps * NPOS; i++) {
		mg_lat_init(&lat[i], LAT_CAP);
		if (opt.tag && !(tags[i] = calloc(LAT_CAP, 1))) {
			mg_error(EXP, "out of memory for the mapper's tags");
			return MG_EXIT_FAIL;
		}
	}
	if (pthread_create(&mapper, NULL, opt.tag ? us_tagged_writer : mg_mmap_writer,
			   opt.tag ? (void *)&tw : (void *)&w)) {
		mg_error(EXP, "cannot start the mapper thread");
		return MG_EXIT_FAIL;
	}
	/* region: run-loop */
	for (int rep = 0; rep < opt.reps && !mg_stop_signal; rep++) {
		for (int pos = 0; pos < NPOS; pos++) { /* 0, 1, no uprobe, 0, 1, ... */
			mg_log("rep %d: %s", rep + 1, pos_label[pos]);
			if (!measure(rep, pos, nthreads, &cells[rep][pos]))
				return MG_EXIT_FAIL;
		}
	}
	/* endregion: run-loop */
	__atomic_store_n(&phase, MG_PHASE_STOP, __ATOMIC_RELEASE);
	pthread_join(mapper, NULL);
	mg_restore_all();
	if (mg_stop_signal)
		return MG_EXIT_FAIL;
	for (int rep = 0; rep < opt.reps; rep++) {
		count_slow(rep);
		for (int pos = 0; pos < NPOS; pos++)
			cell_stats(rep, pos, &cells[rep][pos]);
	}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int pos = 0; pos < NPOS; pos++)
			emit_cell(rep, pos, &cells[rep][pos]);
	summary((int)opt.reps, nthreads);
	return MG_EXIT_OK;
}
