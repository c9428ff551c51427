/* fault_scale's JSON records: the run's settings, one sample per cell, a table of spreads, one summary row (A/B) or result row (--no-switch) per pattern. */
#define _GNU_SOURCE
#include "report.h"
#include "mmlocks_guest.h"

#include <math.h> /* NAN, INFINITY: macros, no libm needed */
#include <stdio.h>
#include <string.h>

int fs_nkc;
char fs_kc_names[FS_MAX_KC][FS_KC_NAME];

int fs_position(int rep, int p, int k)
{
	return (rep + p + k) % 2;
}

/* region: compare */
struct fs_cmp fs_compare(const double v[2][FS_MAX_REPS], int reps)
{
	double pairs[FS_MAX_REPS];
	struct fs_cmp c;

	memset(&c, 0, sizeof(c));
	c.pair_min = INFINITY;
	c.pair_max = -INFINITY;
	for (int pos = 0; pos < 2; pos++) {
		double tmp[FS_MAX_REPS];

		memcpy(tmp, v[pos], (size_t)reps * sizeof(*tmp));
		c.med[pos] = mg_median(tmp, (size_t)reps); /* sorts tmp */
		c.min[pos] = tmp[0];
		c.max[pos] = tmp[reps - 1];
		c.spread_pct[pos] = c.med[pos] > 0 ? (c.max[pos] - c.min[pos]) / c.med[pos] * 100 : NAN;
	}
	for (int r = 0; r < reps; r++) {
		double q = v[0][r] > 0 ? v[1][r] / v[0][r] : NAN;

		pairs[r] = q;
		c.pair_min = q < c.pair_min ? q : c.pair_min; /* a NaN never replaces a value */
		c.pair_max = q > c.pair_max ? q : c.pair_max;
	}
	if (!(c.med[0] > 0 && c.med[1] > 0 && c.min[0] > 0)) {
		c.ratio = c.change_pct = c.pair_min = c.pair_max = c.pair_med = NAN;
		return c;
	}
	/* Back-to-back samples share the host's mood: robust to a slow drift. */
	c.pair_med = mg_median(pairs, (size_t)reps);
	c.ratio = c.med[1] / c.med[0];
	c.change_pct = (c.ratio - 1) * 100;
	/* 1e-9: 95/100 is -5.000000000000004 % in doubles */
	c.pass = c.change_pct <= FS_GOAL_PCT + 1e-9 && c.change_pct >= -FS_GOAL_PCT - 1e-9;
	c.resolves = c.spread_pct[0] <= FS_GOAL_PCT && c.spread_pct[1] <= FS_GOAL_PCT;
	return c;
}
/* endregion: compare */

void fs_info_record(long nproc, int threads, const char *thp, const char *release, bool mmlocks)
{
	struct mg_json j;
	char list[128] = "";

	for (int p = 0; p < FS_NPAT; p++)
		if (opt.mask & (1u << p))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", *list ? "," : "",
				 fs_pattern_names[p]);
	mgj_start(&j, "info", FS_EXP);
	mgj_int(&j, "nproc", nproc);
	mgj_int(&j, "threads", threads);
	mgj_str(&j, "patterns", list);
	mgj_int(&j, "region_mib", opt.mib);
	mgj_int(&j, "malloc_bytes", (long long)FS_MALLOC_SIZE);
	mgj_int(&j, "sample_ms", opt.sample_ms);
	mgj_int(&j, "warmup_samples", opt.warmup);
	mgj_int(&j, "samples_per_cell", opt.samples);
	mgj_int(&j, "reps", opt.reps);
	mgj_str(&j, "method", "each worker pinned, bumping its own cache-line counter; a sampler "
		"reads them every sample_ms; warm-up periods dropped; a cell's ops/s is the mean "
		"of its kept periods");
	mgj_str(&j, "mode", opt.no_switch ? "no-switch" : "switch A/B");
	mgj_str(&j, "release", release);
	mgj_bool(&j, "mmlocks_knobs", mmlocks);
	mgj_str(&j, "knob", opt.no_switch ? NULL : opt.knob);
	mgj_str(&j, "dir", opt.dir);
	mgj_str(&j, "thp_enabled", thp);
	for (int i = 0; i < fs_nkc; i++) {
		char k[FS_KC_NAME + 16];

		snprintf(k, sizeof(k), "counter_%d", i);
		mgj_str(&j, k, fs_kc_names[i]);
	}
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);
}

void fs_emit_sample(const struct fs_sample *s, bool baseline)
{
	struct mg_json j;

	mgj_start(&j, baseline ? "baseline" : "sample", FS_EXP);
	mgj_str(&j, "pattern", fs_pattern_names[s->pattern]);
	mgj_int(&j, "rep", s->rep + 1);
	mgj_int(&j, "threads", s->threads);
	mgj_int(&j, "pinned", s->pinned);
	if (s->pos >= 0) {
		mgj_int(&j, opt.knob, s->pos);
		mgj_int(&j, "knob_readback", s->knob_readback);
	}
	mgj_num(&j, "seconds", s->seconds);
	mgj_int(&j, "ops", s->ops);
	mgj_num(&j, "ops_per_s", s->ops_per_s);
	mgj_num(&j, "period_median", s->per_period.median);
	mgj_num(&j, "period_min", s->per_period.min);
	mgj_num(&j, "period_max", s->per_period.max);
	{
		uint64_t r[FS_MAX_SAMPLES];

		for (int i = 0; i < s->nrate; i++)
			r[i] = s->rate[i] > 0 ? (uint64_t)(s->rate[i] + 0.5) : 0;
		mgj_num_array(&j, "period_ops_per_s", r, (size_t)s->nrate, 1);
	}
	for (int i = 0; i < FS_VM_NR; i++)
		mgj_int(&j, fs_vm_names[i], s->vm[i]);
	for (int i = 0; i < fs_nkc; i++)
		mgj_int(&j, fs_kc_names[i], s->kc[i]);
	mgj_emit(&j);
}

/* Seed 002's will-it-scale averages, 40 threads, before -> after its patch. */
static const char *const published[FS_NPAT] = {
	"5403940 -> 5485892", "5019159 -> 5047923", "971057 -> 982953", "1364730680 -> 1361339890",
};

struct sums {
	long long ops, vm[FS_VM_NR], kc[FS_MAX_KC];
	bool readback_ok;
	struct fs_stats periods; /* every kept period of the position's cells */
};

static struct fs_stats pooled(const struct fs_sample *const *x, int n)
{
	static double v[FS_MAX_STATS];
	int k = 0;

	for (int i = 0; i < n; i++)
		for (int r = 0; r < x[i]->nrate && k < FS_MAX_STATS; r++)
			v[k++] = x[i]->rate[r];
	return fs_stats_of(v, k);
}

static struct sums sum_pos(struct fs_sample s[][FS_NPAT][2], int reps, int p, int pos)
{
	struct sums t;

	const struct fs_sample *cells[FS_MAX_REPS];

	memset(&t, 0, sizeof(t));
	t.readback_ok = true;
	for (int r = 0; r < reps; r++) {
		const struct fs_sample *x = cells[r] = &s[r][p][pos];

		t.ops += x->ops;
		for (int i = 0; i < FS_VM_NR; i++) /* a counter missing once is missing */
			t.vm[i] = t.vm[i] < 0 || x->vm[i] < 0 ? -1 : t.vm[i] + x->vm[i];
		for (int i = 0; i < fs_nkc; i++)
			t.kc[i] += x->kc[i];
		t.readback_ok = t.readback_ok && x->knob_readback == pos;
	}
	t.periods = pooled(cells, reps);
	return t;
}

static double per_op(long long n, long long ops)
{
	return ops > 0 && n >= 0 ? (double)n / (double)ops : NAN; /* n < 0: not counted */
}

static void table_rows(const struct fs_cmp *c, const struct sums t[2], const struct fs_sample *b,
		       int p, int reps, int threads)
{
	for (int pos = 0; pos <= 2; pos++) {
		bool base = pos == 2;
		struct mg_json j;

		mgj_start(&j, "table_row", FS_EXP);
		mgj_str(&j, "table", "ops/s per pattern and switch position, median and range over the repetitions");
		mgj_str(&j, "pattern", fs_pattern_names[p]);
		mgj_int(&j, opt.knob, base ? b->pos : pos);
		mgj_int(&j, "threads", base ? 1 : threads);
		mgj_int(&j, "runs", base ? 1 : reps);
		mgj_num(&j, "median_ops_per_s", base ? b->ops_per_s : c->med[pos]);
		mgj_num(&j, "min_ops_per_s", base ? b->ops_per_s : c->min[pos]);
		mgj_num(&j, "max_ops_per_s", base ? b->ops_per_s : c->max[pos]);
		mgj_num(&j, "spread_pct", base ? NAN : c->spread_pct[pos]);
		mgj_num(&j, "pgfault_per_op", base ? per_op(b->vm[FS_PGFAULT], b->ops)
					       : per_op(t[pos].vm[FS_PGFAULT], t[pos].ops));
		mgj_num(&j, "vma_lock_success_per_op",
			base ? per_op(b->vm[FS_VMA_LOCK_SUCCESS], b->ops)
			     : per_op(t[pos].vm[FS_VMA_LOCK_SUCCESS], t[pos].ops));
		mgj_emit(&j);
	}
}

/* region: summary */
void fs_summary_records(struct fs_sample s[][FS_NPAT][2], const struct fs_sample base[FS_NPAT],
			int reps, int threads)
{
	for (int p = 0; p < FS_NPAT; p++) {
		double v[2][FS_MAX_REPS];
		uint64_t arr[2][FS_MAX_REPS];
		struct sums t[2];
		struct fs_cmp c;
		struct mg_json j;
		char m[128], k[FS_KC_NAME + 16];

		if (!(opt.mask & (1u << p)))
			continue;
		for (int r = 0; r < reps; r++)
			for (int pos = 0; pos < 2; pos++) {
				v[pos][r] = s[r][p][pos].ops_per_s;
				arr[pos][r] = v[pos][r] > 0 ? (uint64_t)(v[pos][r] + 0.5) : 0;
			}
		c = fs_compare(v, reps);
		t[0] = sum_pos(s, reps, p, 0);
		t[1] = sum_pos(s, reps, p, 1);
		table_rows(&c, t, &base[p], p, reps, threads);

		snprintf(m, sizeof(m), "%s ops/s, %d threads", fs_pattern_names[p], threads);
		mgj_start(&j, "summary", FS_EXP);
		mgj_str(&j, "metric", m);
		mgj_str(&j, "pattern", fs_pattern_names[p]);
		mgj_str(&j, "unit", "ops/s");
		mgj_num(&j, "before", c.med[0]);
		mgj_num(&j, "after", c.med[1]);
		mgj_num(&j, "ratio", c.ratio);
		mgj_str(&j, "published", published[p]);
		mgj_str(&j, "source", "seed 002 (Baghdasaryan, sent by Nakryiko), will-it-scale "
			"*_threads -t40 -s60 average, 40 CPUs");
		mgj_str(&j, "goal", "within +-5 %");
		mgj_bool(&j, "pass", c.pass);
		snprintf(m, sizeof(m), "%s 0", opt.knob);
		mgj_str(&j, "before_label", m);
		snprintf(m, sizeof(m), "%s 1", opt.knob);
		mgj_str(&j, "after_label", m);
		mgj_int(&j, "threads", threads);
		mgj_int(&j, "runs", reps);
		mgj_num(&j, "change_pct", c.change_pct);
		mgj_num(&j, "before_min", c.min[0]);
		mgj_num(&j, "before_max", c.max[0]);
		mgj_num(&j, "after_min", c.min[1]);
		mgj_num(&j, "after_max", c.max[1]);
		/* Every kept period of a position (one period is sample_ms long). */
		mgj_num(&j, "before_period_min", t[0].periods.min);
		mgj_num(&j, "before_period_max", t[0].periods.max);
		mgj_num(&j, "after_period_min", t[1].periods.min);
		mgj_num(&j, "after_period_max", t[1].periods.max);
		mgj_int(&j, "samples_per_cell", opt.samples);
		mgj_int(&j, "sample_ms", opt.sample_ms);
		/* The noise: each position alone, and the ratio within one repetition. */
		mgj_num(&j, "before_spread_pct", c.spread_pct[0]);
		mgj_num(&j, "after_spread_pct", c.spread_pct[1]);
		mgj_num(&j, "pair_ratio_min", c.pair_min);
		mgj_num(&j, "pair_ratio_max", c.pair_max);
		mgj_num(&j, "pair_ratio_median", c.pair_med);
		mgj_bool(&j, "spread_within_goal", c.resolves);
		mgj_num(&j, "one_thread_ops_per_s", base[p].ops_per_s);
		mgj_num(&j, "scaling_vs_one_thread", base[p].ops_per_s > 0 ? c.med[1] / base[p].ops_per_s : NAN);
		/* The counters that show what happened: the switch, the faults, the uprobe path. */
		mgj_bool(&j, "knob_read_back", t[0].readback_ok && t[1].readback_ok);
		mgj_num(&j, "pgfault_per_op_before", per_op(t[0].vm[FS_PGFAULT], t[0].ops));
		mgj_num(&j, "pgfault_per_op_after", per_op(t[1].vm[FS_PGFAULT], t[1].ops));
		mgj_num(&j, "vma_lock_success_per_op_after", per_op(t[1].vm[FS_VMA_LOCK_SUCCESS], t[1].ops));
		for (int i = 0; i < fs_nkc; i++)
			for (int pos = 0; pos < 2; pos++) {
				snprintf(k, sizeof(k), "%.63s_%s", fs_kc_names[i], pos ? "after" : "before");
				mgj_int(&j, k, t[pos].kc[i]);
			}
		mgj_num_array(&j, "ops_per_s_pos0", arr[0], (size_t)reps, 1);
		mgj_num_array(&j, "ops_per_s_pos1", arr[1], (size_t)reps, 1);
		mgj_str(&j, "note", "A/A: the switch changes only the uprobe lookup, so both positions "
			"run the same code here; the spreads are the noise the +-5 % goal is read against");
		mgj_emit(&j);
	}
}
/* endregion: summary */

/* region: result */
void fs_result_records(struct fs_sample s[][FS_NPAT], int reps, int threads)
{
	for (int p = 0; p < FS_NPAT; p++) {
		const struct fs_sample *cells[FS_MAX_REPS];
		double v[FS_MAX_REPS];
		uint64_t arr[FS_MAX_REPS];
		long long ops = 0, flt = 0, vls = 0;
		struct fs_stats c, per;
		struct mg_json j;

		if (!(opt.mask & (1u << p)))
			continue;
		for (int r = 0; r < reps; r++) {
			cells[r] = &s[r][p];
			v[r] = s[r][p].ops_per_s;
			arr[r] = v[r] > 0 ? (uint64_t)(v[r] + 0.5) : 0;
			ops += s[r][p].ops;
			flt = flt < 0 || s[r][p].vm[FS_PGFAULT] < 0 ? -1 : flt + s[r][p].vm[FS_PGFAULT];
			vls = vls < 0 || s[r][p].vm[FS_VMA_LOCK_SUCCESS] < 0 ? -1 :
			      vls + s[r][p].vm[FS_VMA_LOCK_SUCCESS];
		}
		c = fs_stats_of(v, reps);
		per = pooled(cells, reps);
		mgj_start(&j, "result", FS_EXP);
		mgj_str(&j, "pattern", fs_pattern_names[p]);
		mgj_str(&j, "unit", "ops/s");
		mgj_int(&j, "threads", threads);
		mgj_int(&j, "runs", reps);
		mgj_int(&j, "samples_per_cell", opt.samples);
		mgj_int(&j, "sample_ms", opt.sample_ms);
		mgj_num(&j, "median_ops_per_s", c.median);
		mgj_num(&j, "mean_ops_per_s", c.mean);
		mgj_num(&j, "min_ops_per_s", c.min);
		mgj_num(&j, "max_ops_per_s", c.max);
		mgj_num(&j, "spread_pct", c.median > 0 ? (c.max - c.min) / c.median * 100 : NAN);
		mgj_num(&j, "period_min", per.min);
		mgj_num(&j, "period_median", per.median);
		mgj_num(&j, "period_max", per.max);
		mgj_num(&j, "pgfault_per_op", per_op(flt, ops));
		mgj_num(&j, "vma_lock_success_per_op", per_op(vls, ops));
		mgj_num_array(&j, "ops_per_s_cells", arr, (size_t)reps, 1);
		mgj_emit(&j);
	}
}
/* endregion: result */
