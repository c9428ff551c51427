/*
 * report.c: khugepaged_cursor's records for one writer pause: a table row
 * of medians, the time-to-collapse summary (the fields every reference run
 * has) and the trylock failure-rate summary, the counter that shows the
 * contention acted.
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "report.h"

#include <math.h> /* NAN: a macro, no libm needed */
#include <stdio.h>
#include <string.h>

#define EXP "khugepaged-cursor"

/* Median, min and max of n values; NaNs (unknown) left out, NaN if none is left. */
static double stats(const double *v, int n, double *lo, double *hi)
{
	double tmp[2 * MAX_RUNS];
	int k = 0;

	for (int i = 0; i < n; i++)
		if (v[i] == v[i])
			tmp[k++] = v[i];
	if (!k) {
		*lo = *hi = NAN;
		return NAN;
	}
	double med = mg_median(tmp, (size_t)k);

	*lo = tmp[0];
	*hi = tmp[k - 1];
	return med;
}

static double median_of(const double *v, int n)
{
	double lo, hi;

	return stats(v, n, &lo, &hi);
}

static void start(struct mg_json *j, const char *metric, const char *unit, double before, double after)
{
	mgj_start(j, "summary", EXP);
	mgj_str(j, "metric", metric);
	mgj_str(j, "unit", unit);
	mgj_num(j, "before", before);
	mgj_num(j, "after", after);
	mgj_num(j, "ratio", after > 0 ? before / after : -1);
}

/* region: summary */
void report_pause(const struct pause_runs *r, bool main_pause)
{
	char metric[128];
	double bm, blo, bhi, am, alo, ahi, fb, fa, all[2 * MAX_RUNS];
	int n = r->done[0] < r->done[1] ? r->done[0] : r->done[1];
	struct mg_json j;

	bm = stats(r->secs[0], n, &blo, &bhi);
	am = stats(r->secs[1], n, &alo, &ahi);
	fb = median_of(r->fail_pct[0], n);
	fa = median_of(r->fail_pct[1], n);
	memcpy(all, r->fail_pct[0], (size_t)n * sizeof(double));
	memcpy(all + n, r->fail_pct[1], (size_t)n * sizeof(double));

	mgj_start(&j, "table_row", EXP);
	mgj_str(&j, "table", "medians per writer pause (s; trylock failures in % of attempts)");
	mgj_int(&j, "writer_pause_us", r->pause_us);
	mgj_int(&j, "runs", n);
	mgj_num(&j, "stock_s", bm);
	mgj_num(&j, "per_slot_s", am);
	mgj_num(&j, "ratio", am > 0 ? bm / am : -1);
	mgj_int(&j, "stock_timeouts", r->timeouts[0]);
	mgj_int(&j, "per_slot_timeouts", r->timeouts[1]);
	mgj_num(&j, "stock_fail_pct", fb);
	mgj_num(&j, "per_slot_fail_pct", fa);
	mgj_num(&j, "fail_pct", median_of(all, 2 * n));
	mgj_emit(&j);

	snprintf(metric, sizeof(metric), "time to full collapse (median), writer pause %lld us", r->pause_us);
	start(&j, metric, "s", bm, am);
	mgj_str(&j, "published", "10.8 s -> 3.6 s (3.0x)");
	mgj_str(&j, "source", "seed 000 patch 2, \"mm/khugepaged: scan mm's more efficiently under mmap_lock contention\"");
	mgj_str(&j, "goal", main_pause ? ">= 1.5x" : "none: a point on the model's curve");
	/* A timed-out stock run only makes the ratio a lower bound; a timed-out patched run fails. */
	mgj_bool(&j, "pass", r->timeouts[1] == 0 && am > 0 && (!main_pause || bm >= 1.5 * am));
	mgj_bool(&j, "main", main_pause);
	mgj_str(&j, "before_label", "global cursor (stock)");
	mgj_str(&j, "after_label", "per-slot cursor");
	mgj_int(&j, "writer_pause_us", r->pause_us);
	mgj_int(&j, "runs", n);
	mgj_num(&j, "before_min", blo);
	mgj_num(&j, "before_max", bhi);
	mgj_num(&j, "after_min", alo);
	mgj_num(&j, "after_max", ahi);
	mgj_int(&j, "before_timeouts", r->timeouts[0]);
	mgj_int(&j, "after_timeouts", r->timeouts[1]);
	mgj_num(&j, "trylock_fail_pct", median_of(all, 2 * n));
	mgj_emit(&j);

	/* The counter that shows the contention acted: khugepaged's failed trylocks. */
	snprintf(metric, sizeof(metric), "khugepaged mmap_read_trylock() failure rate (median), writer pause %lld us",
		 r->pause_us);
	start(&j, metric, "%", fb, fa);
	mgj_str(&j, "published", "none (\"heavy mmap_lock contention\")");
	mgj_str(&j, "source", "mmap_lock_acquire_returned trace events of khugepaged, per run");
	mgj_str(&j, "goal", "failures under both settings");
	mgj_bool(&j, "pass", !r->untraced[0] && !r->untraced[1] && r->failures[0] > 0 && r->failures[1] > 0);
	mgj_str(&j, "before_label", "global cursor (stock)");
	mgj_str(&j, "after_label", "per-slot cursor");
	mgj_int(&j, "writer_pause_us", r->pause_us);
	mgj_int(&j, "runs", n);
	mgj_int(&j, "before_failures", r->failures[0]);
	mgj_int(&j, "after_failures", r->failures[1]);
	mgj_int(&j, "runs_untraced", r->untraced[0] + r->untraced[1]);
	mgj_emit(&j);
}
/* endregion: summary */
