/* remote_read's reduction of its runs: seed 004's table, the contention rows, the verdicts (see report.h). */
#define _GNU_SOURCE
#include "remote_read/report.h"
#include "mmlocks_guest.h"

#include <math.h> /* NAN: a macro, no libm needed */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rr_set_name[RR_NSET] = { "off", "on", "baseline" };
const char *const rr_set_label[RR_NSET] = {
	"switch 0: stock 6.12, each call under mmap_read_lock",
	"switch 1: single-VMA calls under the VMA lock",
	"no readers (the writer alone)",
};
const char *const rr_ctr_name[RR_NCTR] = {
	"access_remote_vm_vma_locked", "access_remote_vm_mmap_locked", "access_remote_vm_fallback",
	"rwsem_rlock_steal", "rwsem_wlock_handoff", "rwsem_sleep_writer",
};
const size_t rr_size[RR_NSIZES] = { 8, 4096, 65536, 1048576 };
const char *const rr_size_name[RR_NSIZES] = { "8 B", "4 KiB", "64 KiB", "1 MiB" };
const double rr_published_ns[RR_NSIZES][2] = {
	{ 201.7, 170.6 }, { 495, 442 }, { 4115, 3355 }, { 75902, 63641 },
};

#define SEED "seed 004 (Rik van Riel, \"mm: use per-VMA lock in __access_remote_vm() for " \
	     "single-VMA accesses\"), single-threaded /proc/PID/mem reads, median of three " \
	     "pinned repetitions in a VM"

/* ---- part 1: seed 004's table --------------------------------------------------- */

/* region: seed-evaluate */
void rr_seed_evaluate(const struct rr_seed_run *r, int n, struct rr_seed_verdict *v)
{
	double *a = calloc((size_t)n + 1, sizeof(*a));

	memset(v, 0, sizeof(*v));
	v->have_ctr = n > 0;
	for (int i = 0; i < n; i++)
		v->have_ctr = v->have_ctr && r[i].have_ctr;
	for (int s = 0; s < RR_NSIZES; s++) {
		for (int w = 0; w < 2; w++) {
			int k = 0;

			for (int i = 0; a && i < n; i++) {
				if (r[i].size != s || r[i].sw != w)
					continue;
				a[k++] = r[i].ns_per_read;
				v->reads[s][w] += r[i].reads;
				for (int c = 0; c < RR_NCTR; c++)
					v->ctr[s][w][c] += r[i].ctr[c];
			}
			v->n[s][w] = k;
			v->med[s][w] = mg_median(a, (size_t)k); /* sorts: a[0] min, a[k-1] max */
			v->min[s][w] = k ? a[0] : NAN;
			v->max[s][w] = k ? a[k - 1] : NAN;
			/* MB/s as the seed counts them: 10^6 bytes per second. */
			v->mbps[s][w] = (double)rr_size[s] / v->med[s][w] * 1e3;
			v->calls_per_read[s][w] = v->reads[s][w] && v->have_ctr
				? (double)(v->ctr[s][w][RR_C_VMA_LOCKED] + v->ctr[s][w][RR_C_MMAP_LOCKED]) /
				  (double)v->reads[s][w] : NAN;
		}
		v->ratio[s] = v->med[s][RR_SW_OFF] / v->med[s][RR_SW_ON];
		/* The counter that proves the switch acted: VMA-locked calls only under 1. */
		v->acted[s] = v->have_ctr && v->ctr[s][RR_SW_ON][RR_C_VMA_LOCKED] > 0 &&
			      v->ctr[s][RR_SW_OFF][RR_C_VMA_LOCKED] == 0;
		v->goal[s] = v->acted[s] && v->ratio[s] >= RR_SEED_GOAL_RATIO;
	}
	free(a);
	for (int s = 0; s < RR_NSIZES; s++) {
		double calls = (double)((rr_size[s] + 4095) / 4096), saved = v->med[0][0] - v->med[0][1];

		v->ratio_from_8b[s] = v->med[s][0] / (v->med[s][0] - calls * saved);
	}
}
/* endregion: seed-evaluate */

/* The per-repetition values of one cell, in ps (mgj_num_array's integers, / 1000). */
static void seed_reps(struct mg_json *j, const char *key, const struct rr_seed_run *r, int n,
		      int size, int sw)
{
	uint64_t v[256];
	size_t k = 0;

	for (int i = 0; i < n && k < 256; i++)
		if (r[i].size == size && r[i].sw == sw)
			v[k++] = (uint64_t)(r[i].ns_per_read * 1e3 + 0.5);
	mgj_num_array(j, key, v, k, 1e3);
}

static const char *spread(char *buf, size_t size, double lo, double hi)
{
	if (hi >= 100)
		snprintf(buf, size, "%.0f\u2013%.0f", lo, hi);
	else
		snprintf(buf, size, "%.3g\u2013%.3g", lo, hi);
	return buf;
}

void rr_seed_report(const char *exp, const struct rr_seed_run *r, int n,
		    const struct rr_seed_verdict *v)
{
	struct mg_json j;
	char b0[64], b1[64], pub[160];

	for (int s = 0; s < RR_NSIZES; s++) {
		mgj_start(&j, "table_row", exp);
		mgj_str(&j, "table", "seed 004's table: ns per pread() of /proc/PID/mem, median "
				     "(min\u2013max) over repetitions, switch 0 | switch 1");
		mgj_str(&j, "read size", rr_size_name[s]);
		mgj_num(&j, "switch 0 ns", v->med[s][0]);
		mgj_str(&j, "switch 0 spread", spread(b0, sizeof(b0), v->min[s][0], v->max[s][0]));
		mgj_num(&j, "switch 1 ns", v->med[s][1]);
		mgj_str(&j, "switch 1 spread", spread(b1, sizeof(b1), v->min[s][1], v->max[s][1]));
		mgj_num(&j, "MB/s 0", v->mbps[s][0]);
		mgj_num(&j, "MB/s 1", v->mbps[s][1]);
		mgj_num(&j, "ratio", v->ratio[s]);
		snprintf(pub, sizeof(pub), "%g \u2192 %g", rr_published_ns[s][0], rr_published_ns[s][1]);
		mgj_str(&j, "published ns", pub);
		mgj_num(&j, "calls per read", v->calls_per_read[s][1]);
		mgj_int(&j, "vma_locked, switch 0", v->ctr[s][0][RR_C_VMA_LOCKED]);
		mgj_int(&j, "vma_locked, switch 1", v->ctr[s][1][RR_C_VMA_LOCKED]);
		mgj_int(&j, "fallback, switch 1", v->ctr[s][1][RR_C_FALLBACK]);
		mgj_emit(&j);
	}
	for (int s = 0; s < RR_NSIZES; s++) {
		bool goal_size = rr_size[s] >= 65536;
		char metric[128];

		snprintf(metric, sizeof(metric), "/proc/PID/mem pread() of %s: ns per read, median "
			 "of repetitions", rr_size_name[s]);
		snprintf(pub, sizeof(pub), "%g \u2192 %g ns (%.2fx)", rr_published_ns[s][0],
			 rr_published_ns[s][1], rr_published_ns[s][0] / rr_published_ns[s][1]);
		mgj_start(&j, "summary", exp);
		mgj_str(&j, "metric", metric);
		mgj_str(&j, "unit", "ns");
		mgj_num(&j, "before", v->med[s][0]);
		mgj_num(&j, "after", v->med[s][1]);
		mgj_num(&j, "ratio", v->ratio[s]);
		mgj_str(&j, "published", pub);
		mgj_str(&j, "source", SEED);
		mgj_str(&j, "goal", goal_size ? ">= 1.05x faster with switch 1 (the seed's direction), "
						"and the switch acted"
					      : "the switch acted (the ratio is reported; the seed's "
						"goal is at 64 KiB and 1 MiB)");
		mgj_bool(&j, "pass", goal_size ? v->goal[s] : v->acted[s]);
		mgj_str(&j, "before_label", rr_set_label[RR_SW_OFF]);
		mgj_str(&j, "after_label", rr_set_label[RR_SW_ON]);
		mgj_int(&j, "read_bytes", (long long)rr_size[s]);
		mgj_int(&j, "repetitions", v->n[s][1]);
		mgj_num(&j, "min_before", v->min[s][0]);
		mgj_num(&j, "max_before", v->max[s][0]);
		mgj_num(&j, "min_after", v->min[s][1]);
		mgj_num(&j, "max_after", v->max[s][1]);
		mgj_num(&j, "mb_per_s_before", v->mbps[s][0]);
		mgj_num(&j, "mb_per_s_after", v->mbps[s][1]);
		mgj_num(&j, "published_ns_before", rr_published_ns[s][0]);
		mgj_num(&j, "published_ns_after", rr_published_ns[s][1]);
		mgj_int(&j, "reads_before", v->reads[s][0]);
		mgj_int(&j, "reads_after", v->reads[s][1]);
		mgj_num(&j, "calls_per_read_before", v->calls_per_read[s][0]);
		mgj_num(&j, "calls_per_read_after", v->calls_per_read[s][1]);
		mgj_num(&j, "ratio_from_8_b_saving", v->ratio_from_8b[s]);
		mgj_bool(&j, "switch_acted", v->acted[s]);
		mgj_bool(&j, "switch_counter_present", v->have_ctr);
		for (int w = 0; w < 2; w++)
			for (int c = 0; c < RR_NSWCTR; c++) {
				char key[64];

				snprintf(key, sizeof(key), "%s_switch_%d", rr_ctr_name[c], w);
				mgj_int(&j, key, v->ctr[s][w][c]);
			}
		seed_reps(&j, "rep_ns_switch_0", r, n, s, 0);
		seed_reps(&j, "rep_ns_switch_1", r, n, s, 1);
		mgj_emit(&j);
	}
}

/* ---- part 2: contention ------------------------------------------------------------ */

/* region: cont-evaluate */
void rr_cont_evaluate(const struct rr_cont_run *r, int n, struct rr_cont_verdict *v)
{
	double *a = calloc((size_t)n + 1, sizeof(*a));

	memset(v, 0, sizeof(*v));
	v->have_ctr = n > 0;
	for (int set = 0; set < RR_NSET; set++)
		for (int role = 0; role < RR_NROLES; role++) {
			int k = 0;

			for (int i = 0; a && i < n; i++)
				if (r[i].set == set && r[i].cell[role].count)
					a[k++] = (double)r[i].cell[role].p99 / 1e3;
			v->p99[set][role] = mg_median(a, (size_t)k);
			if (role == RR_WRITER) {
				v->n[set] = k;
				v->p99_min[set] = k ? a[0] : NAN;
				v->p99_max[set] = k ? a[k - 1] : NAN;
			}
			k = 0;
			for (int i = 0; a && i < n; i++)
				if (r[i].set == set && r[i].cell[role].count)
					a[k++] = (double)r[i].cell[role].p50 / 1e3;
			v->p50[set][role] = mg_median(a, (size_t)k);
			k = 0;
			for (int i = 0; a && i < n; i++)
				if (r[i].set == set && r[i].cell[role].count)
					a[k++] = (double)r[i].cell[role].max / 1e3;
			v->max[set][role] = mg_median(a, (size_t)k);
			for (int i = 0; i < n; i++) {
				if (r[i].set != set)
					continue;
				v->count[set][role] += r[i].cell[role].count;
				for (int o = 1; o < RR_NOUT; o++)
					v->bad_reads[set][role] += r[i].cell[role].outcome[o];
			}
		}
	free(a);
	for (int i = 0; i < n; i++) {
		v->have_ctr = v->have_ctr && r[i].have_ctr;
		for (int c = 0; c < RR_NCTR; c++)
			v->ctr[r[i].set][c] += r[i].ctr[c];
	}
	v->ratio = v->p99[RR_SW_OFF][RR_WRITER] / v->p99[RR_SW_ON][RR_WRITER];
	/* The readers ran under both positions, and only switch 1 took VMA locks. */
	v->acted = v->have_ctr && v->ctr[RR_SW_ON][RR_C_VMA_LOCKED] > 0 &&
		   v->ctr[RR_SW_OFF][RR_C_VMA_LOCKED] == 0 && v->count[RR_SW_OFF][RR_MEM] > 0 &&
		   v->count[RR_SW_ON][RR_MEM] > 0;
	v->goal = v->acted && v->ratio >= RR_CONT_GOAL_RATIO;
}
/* endregion: cont-evaluate */

static void slot_p99s(struct mg_json *j, const char *key, const struct rr_cont_run *r, int n, int set)
{
	uint64_t v[RR_MAX_SLOTS];
	size_t k = 0;

	for (int i = 0; i < n && k < RR_MAX_SLOTS; i++)
		if (r[i].set == set && r[i].cell[RR_WRITER].count)
			v[k++] = (uint64_t)r[i].cell[RR_WRITER].p99;
	mgj_num_array(j, key, v, k, 1e3);
}

void rr_cont_report(const char *exp, const struct rr_cont_run *r, int n,
		    const struct rr_cont_verdict *v, size_t mem_bytes)
{
	struct mg_json j;
	char b[64], key[96];

	for (int set = 0; set < RR_NSET; set++) {
		mgj_start(&j, "table_row", exp);
		mgj_str(&j, "table", "Contention: the target's writer (mmap()+munmap() of one page) "
				     "and the readers, medians over slots (us)");
		mgj_str(&j, "setting", rr_set_label[set]);
		mgj_int(&j, "slots", v->n[set]);
		mgj_int(&j, "writer calls", v->count[set][RR_WRITER]);
		mgj_num(&j, "writer p50", v->p50[set][RR_WRITER]);
		mgj_num(&j, "writer p99", v->p99[set][RR_WRITER]);
		mgj_str(&j, "p99 spread", spread(b, sizeof(b), v->p99_min[set], v->p99_max[set]));
		mgj_num(&j, "writer max", v->max[set][RR_WRITER]);
		for (int role = RR_MEM; role < RR_NROLES; role++) {
			snprintf(key, sizeof(key), "%s reads", rr_role_name[role]);
			mgj_int(&j, key, v->count[set][role]);
			snprintf(key, sizeof(key), "%s p50", rr_role_name[role]);
			mgj_num(&j, key, set == RR_BASE ? NAN : v->p50[set][role]);
			snprintf(key, sizeof(key), "%s p99", rr_role_name[role]);
			mgj_num(&j, key, set == RR_BASE ? NAN : v->p99[set][role]);
		}
		for (int c = 0; c < RR_NCTR; c++)
			mgj_int(&j, rr_ctr_name[c] + (c < RR_NSWCTR ? strlen("access_remote_vm_") : 0),
				v->ctr[set][c]);
		mgj_emit(&j);
	}

	mgj_start(&j, "summary", exp);
	mgj_str(&j, "metric", "writer mmap()/munmap() p99 while a /proc/PID/mem and a "
			      "/proc/PID/cmdline reader loop, median over slots");
	mgj_str(&j, "unit", "us");
	mgj_num(&j, "before", v->p99[RR_SW_OFF][RR_WRITER]);
	mgj_num(&j, "after", v->p99[RR_SW_ON][RR_WRITER]);
	mgj_num(&j, "ratio", v->ratio);
	mgj_str(&j, "published", "not measured by the seed (\"that case remains to be quantified\")");
	mgj_str(&j, "source", "seed 004's description; our measurement");
	mgj_str(&j, "goal", ">= 5x lower with switch 1, and the switch acted");
	mgj_bool(&j, "pass", v->goal);
	mgj_str(&j, "before_label", rr_set_label[RR_SW_OFF]);
	mgj_str(&j, "after_label", rr_set_label[RR_SW_ON]);
	mgj_str(&j, "baseline_label", rr_set_label[RR_BASE]);
	mgj_int(&j, "mem_read_bytes", (long long)mem_bytes);
	mgj_int(&j, "slots_per_setting", v->n[RR_SW_ON]);
	mgj_num(&j, "p99_baseline", v->p99[RR_BASE][RR_WRITER]);
	for (int set = 0; set < RR_NSET; set++) {
		static const char *const sfx[RR_NSET] = { "before", "after", "baseline" };

		snprintf(key, sizeof(key), "writer_p50_us_%s", sfx[set]);
		mgj_num(&j, key, v->p50[set][RR_WRITER]);
		snprintf(key, sizeof(key), "writer_p99_min_us_%s", sfx[set]);
		mgj_num(&j, key, v->p99_min[set]);
		snprintf(key, sizeof(key), "writer_p99_max_us_%s", sfx[set]);
		mgj_num(&j, key, v->p99_max[set]);
		snprintf(key, sizeof(key), "writer_calls_%s", sfx[set]);
		mgj_int(&j, key, v->count[set][RR_WRITER]);
		for (int role = RR_MEM; role < RR_NROLES && set != RR_BASE; role++) {
			snprintf(key, sizeof(key), "%s_reader_p50_us_%s", rr_role_name[role], sfx[set]);
			mgj_num(&j, key, v->p50[set][role]);
			snprintf(key, sizeof(key), "%s_reader_p99_us_%s", rr_role_name[role], sfx[set]);
			mgj_num(&j, key, v->p99[set][role]);
			snprintf(key, sizeof(key), "%s_reads_%s", rr_role_name[role], sfx[set]);
			mgj_int(&j, key, v->count[set][role]);
			snprintf(key, sizeof(key), "%s_reads_not_counted_%s", rr_role_name[role], sfx[set]);
			mgj_int(&j, key, v->bad_reads[set][role]);
		}
		for (int c = 0; c < RR_NCTR; c++) {
			snprintf(key, sizeof(key), "%s_%s", rr_ctr_name[c], sfx[set]);
			mgj_int(&j, key, v->ctr[set][c]);
		}
	}
	mgj_bool(&j, "switch_acted", v->acted);
	mgj_bool(&j, "switch_counter_present", v->have_ctr);
	slot_p99s(&j, "slot_p99_us_before", r, n, RR_SW_OFF);
	slot_p99s(&j, "slot_p99_us_after", r, n, RR_SW_ON);
	slot_p99s(&j, "slot_p99_us_baseline", r, n, RR_BASE);
	mgj_emit(&j);
}

/* ---- the records of single slots and probes ---------------------------------------- */

void rr_cont_sample(const char *exp, const struct rr_cont_run *r, int slot)
{
	struct mg_json j;

	mgj_start(&j, "sample", exp);
	mgj_str(&j, "part", "contention");
	mgj_int(&j, "slot", slot);
	mgj_int(&j, "rep", r->rep);
	mgj_str(&j, "setting", rr_set_name[r->set]);
	mgj_int(&j, "access_remote_vm_vma_lock", r->set == RR_SW_OFF ? 0 : 1);
	mgj_int(&j, "readers", r->set == RR_BASE ? 0 : RR_NREADERS);
	for (int role = 0; role < RR_NROLES; role++) {
		const struct rr_cell *c = &r->cell[role];
		char key[64];

		snprintf(key, sizeof(key), "%s_%s", rr_role_name[role], role ? "reads" : "calls");
		mgj_int(&j, key, c->count);
		snprintf(key, sizeof(key), "%s_p50_us", rr_role_name[role]);
		mgj_num(&j, key, (double)c->p50 / 1e3);
		snprintf(key, sizeof(key), "%s_p99_us", rr_role_name[role]);
		mgj_num(&j, key, (double)c->p99 / 1e3);
		snprintf(key, sizeof(key), "%s_max_us", rr_role_name[role]);
		mgj_num(&j, key, (double)c->max / 1e3);
		for (int o = 1; role && o < RR_NOUT; o++)
			if (c->outcome[o]) { /* reads that were reported, not counted */
				snprintf(key, sizeof(key), "%s_reads_%s", rr_role_name[role],
					 rr_outcome_name[o]);
				mgj_int(&j, key, c->outcome[o]);
			}
	}
	for (int c = 0; c < RR_NCTR; c++)
		if (r->have_ctr)
			mgj_int(&j, rr_ctr_name[c], r->ctr[c]);
		else
			mgj_null(&j, rr_ctr_name[c]);
	mgj_emit(&j);
}

void rr_probe_report(const char *exp, const struct rr_probe p[2][RR_NPROBES])
{
	struct mg_json j;

	for (int i = 0; i < RR_NPROBES; i++) {
		mgj_start(&j, "table_row", exp);
		mgj_str(&j, "table", "Bad input: what each read returned (never a measurement)");
		mgj_str(&j, "case", rr_probe_name[i]);
		mgj_str(&j, "expected", rr_outcome_name[p[0][i].expect]);
		for (int sw = 0; sw < 2; sw++) {
			char v[96], key[32];

			if (p[sw][i].skipped)
				snprintf(v, sizeof(v), "skipped (not root)");
			else
				snprintf(v, sizeof(v), "%s, %zd B%s%s", rr_outcome_name[p[sw][i].got],
					 p[sw][i].bytes, p[sw][i].err ? ", " : "",
					 p[sw][i].err ? strerrorname_np(p[sw][i].err) : "");
			snprintf(key, sizeof(key), "switch %d", sw);
			mgj_str(&j, key, v);
		}
		mgj_emit(&j);
	}
}
