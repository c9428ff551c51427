/* proc_vs_map's reduction of its runs: the seed's table, the goal, the summaries (see report.h). */
#define _GNU_SOURCE
#include "proc_vs_map/report.h"
#include "mmlocks_guest.h"

#include <math.h> /* NAN: a macro, no libm needed */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *const pvm_set_name[PVM_NSET] = { "off", "on", "baseline" };
const char *const pvm_set_label[PVM_NSET] = {
	"switch 0: the stock 6.12 walk under mmap_lock",
	"switch 1: the walk under per-VMA locks",
	"no scanners, same busy tasks",
};
const char *const pvm_ctr_name[PVM_NCTR] = {
	"vma_lock_success", "vma_lock_abort", "vma_lock_retry", "vma_lock_miss",
	"rwsem_rlock_steal", "rwsem_rlock_nosteal",
	"smaps_rollup_vma_locked", "smaps_rollup_mmap_locked", "smaps_rollup_mmap_fallback",
	"smaps_rollup_mmap_drop", "smaps_rollup_vma_retry",
};

#define SEED "seed 001 (Suren Baghdasaryan, \"proc/task_mmu: read proc/pid/smaps_rollup " \
	     "under per-vma lock\"), Paul McKenney's proc-mmap_sem-test, 20 samples, --busyduration 2"

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

/* The values of one setting: per-run averages (0), maxima (1), p99s (2), late maxima (3). */
static size_t pick(const struct pvm_run *r, int n, int set, int which, double *out)
{
	size_t k = 0;

	for (int i = 0; i < n; i++)
		if (r[i].set == set)
			out[k++] = which == 3 ? r[i].max_late_ms : which == 2 ? r[i].p99_ms
				 : which ? r[i].max_ms : r[i].avg_ms;
	return k;
}

/* region: evaluate */
void pvm_evaluate(const struct pvm_run *r, int n, struct pvm_verdict *v)
{
	double *a = calloc((size_t)n + 1, sizeof(*a));
	bool have = n > 0;

	memset(v, 0, sizeof(*v));
	for (int s = 0; s < PVM_NSET && a; s++) {
		size_t k = pick(r, n, s, 1, a);

		v->n[s] = (int)k;
		v->max[s] = k ? a[0] : NAN;
		for (size_t i = 1; i < k; i++)
			v->max[s] = dmax(v->max[s], a[i]);
		v->med_max[s] = mg_median(a, k);
		v->med_p99[s] = mg_median(a, pick(r, n, s, 2, a));
		v->med_max_late[s] = mg_median(a, pick(r, n, s, 3, a));
		k = pick(r, n, s, 0, a);
		v->med[s] = mg_median(a, k); /* sorts: a[0] is the minimum */
		v->min[s] = k ? a[0] : NAN;
	}
	free(a);
	for (int i = 0; i < n; i++) {
		for (int c = 0; c < PVM_NCTR; c++)
			v->ctr[r[i].set][c] += r[i].ctr[c];
		v->killed[r[i].set] += r[i].killed;
		have = have && r[i].have[PVM_C_LOCKED];
	}
	/* The counter that proves the switch acted: VMA-locked walks only under switch 1. */
	v->have_switch_ctr = have;
	v->acted = have && v->ctr[PVM_ON][PVM_C_LOCKED] > 0 && v->ctr[PVM_OFF][PVM_C_LOCKED] == 0;
	v->excess_off = v->med[PVM_OFF] - v->med[PVM_BASE];
	v->excess_on = v->med[PVM_ON] - v->med[PVM_BASE];
	v->excess_ratio = v->excess_off / dmax(v->excess_on, PVM_EXCESS_FLOOR_MS);
	/* Goal: the scanners' excess over the baseline >= 5x smaller with switch 1. */
	v->goal = v->acted && v->excess_off > 0 && v->excess_on * 5 <= v->excess_off;
	v->plain = v->acted && v->med[PVM_ON] < v->med[PVM_OFF];
	/* "Not worse": no higher than stock, or than no scanners at all. */
	v->maxima = v->acted && v->med_max[PVM_ON] <= dmax(v->med_max[PVM_OFF], v->med_max[PVM_BASE]);
}
/* endregion: evaluate */

static void runs_array(struct mg_json *j, const char *key, const struct pvm_run *r, int n, int set)
{
	uint64_t v[256];
	size_t k = 0;

	for (int i = 0; i < n && k < 256; i++)
		if (r[i].set == set)
			v[k++] = (uint64_t)(r[i].avg_ms * 1e6 + 0.5);
	mgj_num_array(j, key, v, k, 1e6);
}

static void summary_head(struct mg_json *j, const char *exp, const char *metric, double before,
			 double after, double ratio, const char *published, const char *goal, bool pass)
{
	mgj_start(j, "summary", exp);
	mgj_str(j, "metric", metric);
	mgj_str(j, "unit", "ms");
	mgj_num(j, "before", before);
	mgj_num(j, "after", after);
	mgj_num(j, "ratio", ratio);
	mgj_str(j, "published", published);
	mgj_str(j, "source", SEED);
	mgj_str(j, "goal", goal);
	mgj_bool(j, "pass", pass);
	mgj_str(j, "before_label", pvm_set_label[PVM_OFF]);
	mgj_str(j, "after_label", pvm_set_label[PVM_ON]);
}

static void table_row(const char *exp, const char *setting, int runs, double med, double min,
		      double max, double med_max, double med_p99, const long long *ctr,
		      long long killed)
{
	struct mg_json j;

	mgj_start(&j, "table_row", exp);
	mgj_str(&j, "table", "Mapper mmap()/munmap() latency per setting (ms), as seed 001's table");
	mgj_str(&j, "setting", setting);
	mgj_int(&j, "runs", runs);
	mgj_num(&j, "median of averages", med);
	mgj_num(&j, "minimum of averages", min);
	mgj_num(&j, "maximum of maxima", max);
	mgj_num(&j, "median of maxima", med_max);
	mgj_num(&j, "median of p99s", med_p99);
	/* The counters a reader compares across settings; samples have them all. */
	static const int shown[] = { PVM_C_LOCKED, PVM_C_FALLBACK, PVM_C_STEAL, PVM_C_NOSTEAL,
				     PVM_C_VMA_SUCCESS };

	for (size_t k = 0; k < sizeof(shown) / sizeof(shown[0]); k++)
		if (ctr)
			mgj_int(&j, pvm_ctr_name[shown[k]], ctr[shown[k]]);
		else
			mgj_null(&j, pvm_ctr_name[shown[k]]);
	if (ctr)
		mgj_int(&j, "children killed", killed);
	else
		mgj_null(&j, "children killed");
	mgj_emit(&j);
}

void pvm_report(const char *exp, const struct pvm_run *r, int n, const struct pvm_verdict *v)
{
	struct mg_json j;

	for (int s = 0; s < PVM_NSET; s++)
		table_row(exp, pvm_set_label[s], v->n[s], v->med[s], v->min[s], v->max[s],
			  v->med_max[s], v->med_p99[s], v->ctr[s], v->killed[s]);
	table_row(exp, "published: seed 001, before (stock)", 20, 0.174, 0.161, 5.220, NAN, NAN, NULL, 0);
	table_row(exp, "published: seed 001, after (patched)", 20, 0.007, 0.007, 3.225, NAN, NAN, NULL, 0);

	summary_head(&j, exp, "mapper latency the scanners add (median of per-run averages "
			      "minus the no-scanner baseline's)",
		     v->excess_off, v->excess_on, v->excess_ratio,
		     "no excess published; mapper median 0.174 -> 0.007 ms (~25x)",
		     ">= 5x smaller with switch 1, and the switch acted", v->goal);
	mgj_num(&j, "baseline_median_ms", v->med[PVM_BASE]);
	mgj_num(&j, "excess_floor_ms", PVM_EXCESS_FLOOR_MS);
	mgj_bool(&j, "switch_acted", v->acted);
	mgj_bool(&j, "switch_counter_present", v->have_switch_ctr);
	mgj_int(&j, "vma_locked_walks_switch_1", v->ctr[PVM_ON][PVM_C_LOCKED]);
	mgj_int(&j, "vma_locked_walks_switch_0", v->ctr[PVM_OFF][PVM_C_LOCKED]);
	mgj_int(&j, "mmap_locked_vmas_switch_1", v->ctr[PVM_ON][PVM_C_MMAP_LOCKED]);
	mgj_int(&j, "mmap_fallbacks_switch_1", v->ctr[PVM_ON][PVM_C_FALLBACK]);
	mgj_int(&j, "mmap_drops_switch_1", v->ctr[PVM_ON][PVM_C_DROP]);
	mgj_int(&j, "runs_per_setting", v->n[PVM_ON]);
	runs_array(&j, "run_avg_ms_before", r, n, PVM_OFF);
	runs_array(&j, "run_avg_ms_after", r, n, PVM_ON);
	runs_array(&j, "run_avg_ms_baseline", r, n, PVM_BASE);
	mgj_str(&j, "baseline_label", pvm_set_label[PVM_BASE]);
	mgj_emit(&j);

	summary_head(&j, exp, "mapper mmap()/munmap() latency, median of per-run averages",
		     v->med[PVM_OFF], v->med[PVM_ON], v->med[PVM_OFF] / v->med[PVM_ON],
		     "0.174 -> 0.007 ms (~25x)",
		     "lower with switch 1 (the seed's 25x is out of reach under TCG, whose "
		     "no-scanner floor is the baseline)", v->plain);
	mgj_num(&j, "min_before", v->min[PVM_OFF]);
	mgj_num(&j, "min_after", v->min[PVM_ON]);
	mgj_num(&j, "baseline_median_ms", v->med[PVM_BASE]);
	mgj_int(&j, "rwsem_rlock_steal_switch_0", v->ctr[PVM_OFF][PVM_C_STEAL]);
	mgj_int(&j, "rwsem_rlock_steal_switch_1", v->ctr[PVM_ON][PVM_C_STEAL]);
	mgj_int(&j, "rwsem_rlock_nosteal_switch_0", v->ctr[PVM_OFF][PVM_C_NOSTEAL]);
	mgj_int(&j, "rwsem_rlock_nosteal_switch_1", v->ctr[PVM_ON][PVM_C_NOSTEAL]);
	mgj_emit(&j);

	summary_head(&j, exp, "mapper's longest call per run, median over runs", v->med_max[PVM_OFF],
		     v->med_max[PVM_ON], v->med_max[PVM_OFF] / v->med_max[PVM_ON],
		     "per-run maxima 2.55-5.22 -> 1.95-3.23 ms",
		     "not worse: switch 1 <= max(switch 0, no scanners)", v->maxima);
	mgj_num(&j, "max_of_maxima_before", v->max[PVM_OFF]);
	mgj_num(&j, "max_of_maxima_after", v->max[PVM_ON]);
	mgj_num(&j, "max_of_maxima_baseline", v->max[PVM_BASE]);
	mgj_num(&j, "median_of_maxima_baseline", v->med_max[PVM_BASE]);
	/* A run with more calls has more chances at a long one: the p99s say more. */
	mgj_num(&j, "median_p99_before", v->med_p99[PVM_OFF]);
	mgj_num(&j, "median_p99_after", v->med_p99[PVM_ON]);
	mgj_num(&j, "median_p99_baseline", v->med_p99[PVM_BASE]);
	/* The first calls of a run meet the region as one big VMA that a scanner is walking. */
	mgj_num(&j, "median_max_after_first_quarter_before", v->med_max_late[PVM_OFF]);
	mgj_num(&j, "median_max_after_first_quarter_after", v->med_max_late[PVM_ON]);
	mgj_num(&j, "median_max_after_first_quarter_baseline", v->med_max_late[PVM_BASE]);
	mgj_emit(&j);
}
