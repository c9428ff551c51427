/*
 * report.c: khugepaged_hold's analysis after the run. Cuts each window's
 * read holds into complete scans of the mm, and prints one sample per
 * configuration and the summaries, each with its own verdict.
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "report.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* region: per-scan */
/*
 * full_scans steps once per complete scan of the mm, just after the scan's
 * last hold is released and just before the next scan's first trylock, and
 * once per failed trylock. The poller sees each step a little late, at
 * time t, so the complete scans by t are the steps by t minus the failed
 * trylocks traced before t. A boundary is an observation at which that
 * number grows; b[] gets their times, nsc[] by how much (1 unless the
 * poller missed a whole scan).
 */
size_t report_bounds(const struct run *r, size_t s, uint64_t upto, uint64_t *b, long long *nsc, size_t cap)
{
	const struct tlog *o = &r->obs[s];
	const struct tlog *fl = &r->H.fails;
	uint64_t start;
	long long s0, done = 0, nf = 0;
	size_t nb = 0, f = 0;

	if (!o->n)
		return 0;
	start = o->v[0][0];
	s0 = (long long)o->v[0][1];
	for (size_t i = 1; i < o->n && o->v[i][0] <= upto; i++) {
		long long k;

		for (; f < fl->n && fl->v[f][0] < o->v[i][0]; f++)
			nf += fl->v[f][0] >= start;
		k = (long long)o->v[i][1] - s0 - nf;
		if (k > done) {
			if (nb < cap) {
				b[nb] = o->v[i][0];
				nsc[nb] = k - done;
			}
			nb++;
			done = k;
		}
	}
	return nb;
}

/*
 * Scan j of a window is (b[j-1], b[j]] in release time: every hold of the
 * scan completed at b[j] ended before that step, and ended after b[j-1]
 * as long as the poller's lag is shorter than one walk of the VMAs. The
 * scan completed at b[0] began before the knobs were switched: dropped.
 * A configuration's scans are those of its windows, in time order.
 */
void report_cut(struct run *r)
{
	for (size_t s = 0; s < r->H.nspan; s++) {
		int c = r->H.span[s].cfg;
		uint64_t b[MAXB];
		long long nsc[MAXB];
		size_t nb = report_bounds(r, s, UINT64_MAX, b, nsc, MAXB), n;

		nb = nb < MAXB ? nb : MAXB;
		if (nb)
			holds_writer_waits(&r->H, s, b[0]);
		for (size_t j = 0; j < nb; j++)
			r->completed[c] += nsc[j];
		n = MAXB - r->nscan[c] < (size_t)r->scans ? MAXB - r->nscan[c] : (size_t)r->scans;
		n = holds_cut(&r->H, b, nb, r->scan[c] + r->nscan[c], n);
		for (size_t j = 1; j <= n; j++)
			r->merged[c] += nsc[j] > 1;
		for (size_t j = 0; j < n; j++)
			r->with_stops[c] += r->scan[c][r->nscan[c] + j].with_stops;
		r->nscan[c] += n;
	}
}

/* One field of each scan of configuration c (offsetof a struct scan member). */
static size_t scan_field(const struct run *r, int c, size_t off, uint64_t *v)
{
	for (size_t i = 0; i < r->nscan[c]; i++)
		v[i] = *(const uint64_t *)((const char *)&r->scan[c][i] + off);
	return r->nscan[c];
}

static double scan_median_us(const struct run *r, int c, size_t off)
{
	uint64_t u[MAXB];
	double v[MAXB];
	size_t n = scan_field(r, c, off, u);

	for (size_t i = 0; i < n; i++)
		v[i] = (double)u[i] / 1e3;
	return mg_median(v, n);
}

static double scan_absmax_us(const struct run *r, int c)
{
	uint64_t m = 0;

	for (size_t i = 0; i < r->nscan[c]; i++)
		m = r->scan[c][i].max > m ? r->scan[c][i].max : m;
	return (double)m / 1e3;
}
/* endregion: per-scan */

/* The writer's longest wait in each window of configuration c, ns. */
static size_t window_wmax(const struct run *r, int c, uint64_t *v)
{
	size_t n = 0;

	for (size_t s = 0; s < r->H.nspan; s++)
		if (r->H.span[s].cfg == c)
			v[n++] = r->H.span[s].wwait_max;
	return n;
}

static double pct_us(struct mg_lat *l, double p)
{
	return l->n ? (double)mg_lat_pct(l, p) / 1e3 : -1;
}

void report_sample(struct run *r, int c)
{
	struct window *w = &r->H.win[c];
	const struct config *k = &r->cfg[c];
	struct mg_json j;
	uint64_t v[MAXB];

	mgj_start(&j, "sample", EXP);
	mgj_str(&j, "config", k->name);
	mgj_int(&j, "khugepaged_skip_batch", k->batch);
	mgj_int(&j, "khugepaged_per_slot_cursor", k->cursor);
	mgj_int(&j, "rwsem_steal_policy", k->policy);
	mgj_int(&j, "windows", (long long)window_wmax(r, c, v));
	mgj_int(&j, "complete_scans", r->completed[c]);
	mgj_int(&j, "scans_measured", (long long)r->nscan[c]);
	mgj_num_array(&j, "per_scan_max_us", v, scan_field(r, c, offsetof(struct scan, max), v), 1e3);
	mgj_num_array(&j, "per_scan_max_net_us", v, scan_field(r, c, offsetof(struct scan, net), v), 1e3);
	mgj_num_array(&j, "per_scan_holds", v, scan_field(r, c, offsetof(struct scan, count), v), 1);
	mgj_int(&j, "windows_with_several_scans", r->merged[c]);
	mgj_int(&j, "full_scans_delta", r->dscans[c]);
	mgj_int(&j, "failed_trylocks", w->failed_trylocks);
	mgj_int(&j, "read_holds", (long long)w->rhold.count);
	mgj_num(&j, "max_hold_us", (double)w->rhold.max / 1e3);
	mgj_num(&j, "p99_hold_us", pct_us(&w->rhold, 99));
	mgj_num(&j, "p50_hold_us", pct_us(&w->rhold, 50));
	/* mg_lat_pct() left the samples sorted: the five longest holds. */
	if (w->rhold.n)
		mgj_num_array(&j, "longest_holds_us", w->rhold.v + (w->rhold.n > 5 ? w->rhold.n - 5 : 0),
			      w->rhold.n > 5 ? 5 : w->rhold.n, 1e3);
	mgj_num(&j, "max_write_hold_us", (double)w->whold_max / 1e3);
	{
		uint64_t g[HOLDS_GAP_BINS];

		for (int i = 0; i < HOLDS_GAP_BINS; i++)
			g[i] = (uint64_t)w->gaps[i];
		/* buckets: 0.1-0.25, 0.25-0.5, 0.5-1, 1-2, 2-5, >= 5 ms */
		mgj_num_array(&j, "walk_gaps", g, HOLDS_GAP_BINS, 1);
	}
	mgj_int(&j, "vcpu_stops", w->stops);
	mgj_num(&j, "vcpu_stop_ms_taken_out", (double)w->stop_ns / 1e6);
	mgj_num(&j, "longest_vcpu_stop_us", (double)w->stop_max / 1e3);
	mgj_num(&j, "stop_gap_ms", (double)w->stop_gap_ns / 1e6);
	mgj_num(&j, "irq_ms_in_stop_gaps", (double)w->stop_irq_ns / 1e6);
	mgj_int(&j, "holds_with_stops", r->with_stops[c]);
	mgj_int(&j, "writer_waits", (long long)w->wwait.count);
	mgj_num(&j, "writer_wait_p50_us", pct_us(&w->wwait, 50));
	mgj_num(&j, "writer_wait_p99_us", pct_us(&w->wwait, 99));
	mgj_num(&j, "writer_wait_max_us", (double)w->wwait.max / 1e3);
	mgj_num_array(&j, "writer_wait_max_us_per_window", v, window_wmax(r, c, v), 1e3);
	mgj_int(&j, "rwsem_rlock_steal", r->steals[c]);
	mgj_int(&j, "rwsem_rlock_nosteal", r->nosteals[c]);
	mgj_int(&j, "writer_calls", (long long)r->wlat[c].count);
	mgj_num(&j, "writer_p99_us", pct_us(&r->wlat[c], 99));
	mgj_num(&j, "writer_max_us", (double)r->wlat[c].max / 1e3);
	mgj_num(&j, "seconds", (double)w->seconds_ns / 1e9);
	mgj_emit(&j);
}

/*
 * Start one summary record (GUEST-INTERFACE.md): before = configuration
 * b, after = a; it passes when the run was valid and the figure fell by
 * at least min_ratio. The caller adds extras and emits it.
 */
static void summary_start(struct mg_json *j, const struct run *r, const char *metric, int b, int a,
			  double before, double after, const char *published, double min_ratio, bool valid)
{
	static const char *const label[HOLDS_CFGS] = {
		"stock: skip batch 0, global cursor, steal policy 0",
		"skip batch %lld, per-slot cursor, steal policy 1",
		"skip batch %lld, per-slot cursor, steal policy 0",
	};
	char goal[32], bl[80], al[80];

	snprintf(goal, sizeof(goal), ">= %gx", min_ratio);
	snprintf(bl, sizeof(bl), label[b], r->cfg[b].batch);
	snprintf(al, sizeof(al), label[a], r->cfg[a].batch);
	mgj_start(j, "summary", EXP);
	mgj_str(j, "metric", metric);
	mgj_str(j, "unit", "us");
	mgj_num(j, "before", before);
	mgj_num(j, "after", after);
	mgj_num(j, "ratio", after > 0 ? before / after : -1);
	mgj_str(j, "published", published);
	mgj_str(j, "source", "seed 000 patch 5, \"mm/khugepaged: drop/reacquire mmap read lock if skipped enough VMAs\"");
	mgj_str(j, "goal", goal);
	mgj_bool(j, "pass", valid && after > 0 && before >= min_ratio * after);
	mgj_str(j, "before_label", bl);
	mgj_str(j, "after_label", al);
}

/* region: summary */
#define PUB_HOLD "95 ms -> 170 us (~560x), most likely the longest hold"

/* The longest hold per scan, median over scans: as traced, or with the stops taken out. */
static void hold_row(struct run *r, bool net, bool headline, bool valid, const char *scans)
{
	const size_t off = net ? offsetof(struct scan, net) : offsetof(struct scan, max);
	uint64_t v[MAXB];
	struct mg_json j;
	char metric[160];

	snprintf(metric, sizeof(metric), "longest khugepaged mmap_lock hold per scan, %s (%s)",
		 net ? "vCPU stops taken out" : "as traced", scans);
	summary_start(&j, r, metric, CFG_STOCK, CFG_NOSTEAL, scan_median_us(r, CFG_STOCK, off),
		      scan_median_us(r, CFG_NOSTEAL, off), PUB_HOLD, 100, valid);
	mgj_bool(&j, "headline", headline);
	mgj_num_array(&j, "per_scan_max_us_before", v, scan_field(r, CFG_STOCK, off, v), 1e3);
	mgj_num_array(&j, "per_scan_max_us_after", v, scan_field(r, CFG_NOSTEAL, off, v), 1e3);
	/* The plot draws it beside the "after" figures: only when they pair up. */
	if (net && r->nscan[CFG_STOCK] == r->nscan[CFG_NOSTEAL])
		mgj_num_array(&j, "per_scan_max_us_after_as_traced", v,
			      scan_field(r, CFG_NOSTEAL, offsetof(struct scan, max), v), 1e3);
	if (net)
		mgj_int(&j, "stall_us", r->stall_us);
	mgj_emit(&j);
}

/* The writer's wait for mmap_lock in the kernel (trace), p99: configuration b against a. */
static void writer_row(struct run *r, const char *metric, int b, int a, const char *published, double goal)
{
	struct window *wb = &r->H.win[b], *wa = &r->H.win[a];
	bool valid = wb->wwait.n > 0 && wa->wwait.n > 0;
	uint64_t v[MAXB];
	struct mg_json j;

	summary_start(&j, r, metric, b, a, pct_us(&wb->wwait, 99), pct_us(&wa->wwait, 99), published, goal,
		      valid);
	mgj_int(&j, "waits_before", (long long)wb->wwait.count);
	mgj_int(&j, "waits_after", (long long)wa->wwait.count);
	mgj_num(&j, "p50_us_before", pct_us(&wb->wwait, 50));
	mgj_num(&j, "p50_us_after", pct_us(&wa->wwait, 50));
	mgj_num(&j, "max_us_before", (double)wb->wwait.max / 1e3);
	mgj_num(&j, "max_us_after", (double)wa->wwait.max / 1e3);
	mgj_num_array(&j, "before_max_us_per_window", v, window_wmax(r, b, v), 1e3);
	mgj_num_array(&j, "after_max_us_per_window", v, window_wmax(r, a, v), 1e3);
	mgj_emit(&j);
}

void report_summaries(struct run *r)
{
	const struct window *ws = &r->H.win[CFG_STOCK], *wn = &r->H.win[CFG_NOSTEAL];
	bool valid = r->nscan[CFG_STOCK] >= 1 && r->nscan[CFG_NOSTEAL] >= 1 && wn->rhold.count > 0;
	uint64_t gap = ws->stop_gap_ns + wn->stop_gap_ns, irq = ws->stop_irq_ns + wn->stop_irq_ns;
	double wb = (double)r->wlat[CFG_STOCK].max / 1e3, wa = (double)r->wlat[CFG_NOSTEAL].max / 1e3;
	struct mg_json j;
	char scans[48];
	/*
	 * Which hold row is the headline, decided from this run's data: the
	 * one with stops taken out only if interrupt handlers ran in less
	 * than a tenth of the stop gaps (both windows): then the gaps are
	 * mostly time in which khugepaged's vCPU executed nothing at all.
	 * (What is taken out never includes interrupt time in any case.)
	 */
	bool net_first = irq * 10 < gap || gap == 0;

	if (r->nscan[CFG_STOCK] == r->nscan[CFG_NOSTEAL])
		snprintf(scans, sizeof(scans), "median of %zu scans", r->nscan[CFG_STOCK]);
	else
		snprintf(scans, sizeof(scans), "median of %zu and %zu scans", r->nscan[CFG_STOCK],
			 r->nscan[CFG_NOSTEAL]);
	hold_row(r, net_first, true, valid, scans);
	hold_row(r, !net_first, false, valid, scans);

	summary_start(&j, r, "absolute longest khugepaged mmap_lock hold (any scan, as traced)", CFG_STOCK,
		      CFG_NOSTEAL, scan_absmax_us(r, CFG_STOCK), scan_absmax_us(r, CFG_NOSTEAL), PUB_HOLD, 10,
		      valid);
	mgj_str(&j, "note", "the single longest hold over all measured scans; one vCPU stop inside a short "
		 "batch hold sets it under TCG");
	mgj_emit(&j);

	writer_row(r, "writer wait for mmap_lock (trace, p99)", CFG_STOCK, CFG_NOSTEAL,
		   "stalls \"of a similar duration\" reduced (no figure)", 10);
	writer_row(r, "writer wait for mmap_lock with the skip batch (trace, p99): retake steals vs nosteal",
		   CFG_STEAL, CFG_NOSTEAL, "no figure: the seed's reason for a nosteal retake", 2);

	summary_start(&j, r, "writer worst mmap/munmap latency (cross-check)", CFG_STOCK, CFG_NOSTEAL, wb, wa,
		      "stalls \"of a similar duration\" reduced (no figure)", 10,
		      valid && r->wlat[CFG_STOCK].count && r->wlat[CFG_NOSTEAL].count);
	mgj_emit(&j);
}
/* endregion: summary */
