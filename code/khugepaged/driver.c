/* driver.c: khugepaged_model -- run the scanner model on a layout and print simulated figures. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "khugepaged.h"

struct opts {
	unsigned long mms, vmas, pmds, skip_batch, pages, sleep_ms, runs;
	unsigned long long seed, max_passes;
	double contention;
	enum khugepaged_cursor_policy cursor;
	const char *sweep, *out;
	bool trace, random_problem, answers;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: khugepaged_model [options]\n"
"Simulate 6.12's khugepaged scanner on mms made of N ineligible one-page\n"
"VMAs followed by one eligible VMA of M collapsible 2 MiB ranges; print\n"
"passes and simulated time to full collapse and the longest mmap_lock hold.\n"
"\n"
"  --mms N            number of mms on the scan list (1..1000, default 1)\n"
"  --vmas N           ineligible VMAs per mm (0..4000000, default 2000)\n"
"  --pmds N           collapsible PMD ranges per mm (1..100000, default 32)\n"
"  --contention P     chance an mmap_read_trylock() fails (0..1, default 0)\n"
"  --cursor C         global (6.12) or per-slot (patch 2) (default global)\n"
"  --skip-batch N     drop/retake the lock after N skipped VMAs (patch 5);\n"
"                     0 = off (default 0; the patch uses 1024)\n"
"  -s, --seed S       seed of the contention coin (default 1)\n"
"  --pages-to-scan N  budget per pass (1..10000000, default 4096)\n"
"  --sleep-ms N       scan_sleep_millisecs (0..86400000, default 10000)\n"
"  --max-passes N     give up after N passes (1..100000000, default 1000000)\n"
"  --runs N           average over seeds S..S+N-1 (1..1000, default 1;\n"
"                     sweeps default to 5)\n"
"  --trace            print one line per pass\n"
"  --sweep WHAT       contention: both cursors, P = 0..0.8;\n"
"                     vmas: longest hold vs N, skip batch off vs 1024\n"
"  --out FILE         write the sweep's data there (default stdout)\n"
"  --random           make up a problem from the seed (OSTEP-style)\n"
"  -c, --compute      with --random: also print the answers\n"
"  -h, --help         this text\n");
}

static void bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "khugepaged_model: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	exit(2);
}

static unsigned long long num(const char *opt, const char *s,
			      unsigned long long lo, unsigned long long hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!*s || *s == '-')
		bad("%s needs a non-negative integer", opt);
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		fprintf(stderr, "khugepaged_model: %s %s: want an integer in %llu..%llu\n",
			opt, s, lo, hi);
		usage(stderr);
		exit(2);
	}
	return v;
}

static void setup(const struct opts *o, struct mm_struct **mms,
		  unsigned long long seed, double contention,
		  enum khugepaged_cursor_policy cursor, unsigned long vmas,
		  unsigned long skip_batch)
{
	char *pmds = malloc(o->pmds + 1);

	if (!pmds)
		abort();
	memset(pmds, PMD_COLLAPSIBLE, o->pmds);
	pmds[o->pmds] = '\0';
	khugepaged_model_reset();
	khugepaged_pages_to_scan = o->pages;
	khugepaged_scan_sleep_millisecs = o->sleep_ms;
	khugepaged_cursor_policy = cursor;
	khugepaged_max_skip_batch = skip_batch;
	model_contention = contention;
	model_seed(seed);
	for (unsigned long i = 0; i < o->mms; i++) {
		mms[i] = mm_alloc();
		mm_add_ineligible(mms[i], vmas);
		mm_add_eligible(mms[i], pmds);
		khugepaged_enter(mms[i]);
	}
	free(pmds);
}

static void teardown(const struct opts *o, struct mm_struct **mms)
{
	khugepaged_model_reset();
	for (unsigned long i = 0; i < o->mms; i++)
		mm_free(mms[i]);
}

static void trace_pass(uint64_t pass, void *arg)
{
	struct model_stats *last = arg;

	printf("pass %4llu  t=%10.3f s  trylocks %3llu (failed %3llu)  "
	       "visits %7llu  pmds %4llu  collapses %3llu  left %zu\n",
	       (unsigned long long)pass, model_clock_ns / 1e9,
	       (unsigned long long)(model_stats.trylocks - last->trylocks),
	       (unsigned long long)(model_stats.trylock_fails - last->trylock_fails),
	       (unsigned long long)(model_stats.vma_visits - last->vma_visits),
	       (unsigned long long)(model_stats.pmds_scanned - last->pmds_scanned),
	       (unsigned long long)(model_stats.collapses - last->collapses),
	       khugepaged_collapsible_left());
	*last = model_stats;
}

/* Mean over o->runs seeds; *failed counts runs that hit max_passes. */
static struct model_result run_mean(const struct opts *o, double contention,
				     enum khugepaged_cursor_policy cursor,
				     unsigned long vmas, unsigned long batch,
				     struct model_stats *st, unsigned long *failed)
{
	struct mm_struct **mms = calloc(o->mms, sizeof(*mms));
	struct model_result sum = { .collapsed = true };
	double passes = 0, ns = 0;

	if (!mms)
		abort();
	*failed = 0;
	memset(st, 0, sizeof(*st));
	for (unsigned long r = 0; r < o->runs; r++) {
		struct model_stats last = { 0 };
		struct model_result res;

		setup(o, mms, o->seed + r, contention, cursor, vmas, batch);
		res = khugepaged_run(o->max_passes, o->trace ? trace_pass : NULL,
				     &last);
		*failed += !res.collapsed;
		passes += res.passes;
		ns += res.collapsed ? res.collapse_ns : model_clock_ns;
		if (model_stats.longest_hold_ns > st->longest_hold_ns)
			st->longest_hold_ns = model_stats.longest_hold_ns;
		if (model_stats.longest_hold_vmas > st->longest_hold_vmas)
			st->longest_hold_vmas = model_stats.longest_hold_vmas;
		st->trylocks += model_stats.trylocks;
		st->trylock_fails += model_stats.trylock_fails;
		st->vma_visits += model_stats.vma_visits;
		st->pmds_scanned += model_stats.pmds_scanned;
		st->collapses += model_stats.collapses;
		st->skip_batches += model_stats.skip_batches;
		st->nosteal_locks += model_stats.nosteal_locks;
		teardown(o, mms);
	}
	free(mms);
	sum.collapsed = *failed == 0;
	sum.passes = (uint64_t)llround(passes / o->runs);
	sum.collapse_ns = (uint64_t)llround(ns / o->runs);
	return sum;
}

static const char *cursor_name(enum khugepaged_cursor_policy c)
{
	return c == CURSOR_PER_SLOT ? "per-slot" : "global";
}

static void report(const struct opts *o, double contention,
		   enum khugepaged_cursor_policy cursor)
{
	struct model_stats st;
	unsigned long failed;
	struct model_result r = run_mean(o, contention, cursor, o->vmas,
					 o->skip_batch, &st, &failed);

	printf("cursor %-8s  ", cursor_name(cursor));
	if (failed)
		printf("NOT collapsed in %lu of %lu runs (max %llu passes)\n",
		       failed, o->runs, o->max_passes);
	else
		printf("full collapse after %llu pass%s, %.3f s simulated%s\n",
		       (unsigned long long)r.passes, r.passes == 1 ? "" : "es",
		       r.collapse_ns / 1e9, o->runs > 1 ? " (mean)" : "");
	if (o->runs > 1)
		printf("  (counts summed over %lu runs, hold: the longest of them)\n",
		       o->runs);
	printf("  trylocks %llu (%llu failed), VMA visits %llu, PMD scans %llu, collapses %llu\n",
	       (unsigned long long)st.trylocks, (unsigned long long)st.trylock_fails,
	       (unsigned long long)st.vma_visits, (unsigned long long)st.pmds_scanned,
	       (unsigned long long)st.collapses);
	printf("  longest mmap_lock read hold %.1f us (%llu VMA visits); "
	       "skip batches %llu (mmap_read_lock_nosteal %llu)\n",
	       st.longest_hold_ns / 1e3, (unsigned long long)st.longest_hold_vmas,
	       (unsigned long long)st.skip_batches,
	       (unsigned long long)st.nosteal_locks);
}

/* Write to FILE.tmp, then rename: no half-written data file. */
static FILE *out_open(const struct opts *o, char *tmp, size_t n)
{
	FILE *f;

	if (!o->out)
		return stdout;
	snprintf(tmp, n, "%s.tmp.%ld", o->out, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "khugepaged_model: %s: %s\n", tmp, strerror(errno));
		exit(1);
	}
	return f;
}

static void out_close(const struct opts *o, FILE *f, const char *tmp)
{
	if (f == stdout) {
		fflush(f);
		return;
	}
	if (fclose(f) || rename(tmp, o->out)) {
		fprintf(stderr, "khugepaged_model: %s: %s\n", o->out, strerror(errno));
		unlink(tmp);
		exit(1);
	}
}

static void sweep(const struct opts *o)
{
	char tmp[4096];
	FILE *f = out_open(o, tmp, sizeof(tmp));
	struct model_stats st;
	unsigned long failed;

	if (!strcmp(o->sweep, "contention")) {
		fprintf(f, "# khugepaged_model --sweep contention: %lu mm(s), %lu ineligible VMAs, "
			"%lu PMDs, %lu runs from seed %llu\n# P  global_passes global_s "
			"per_slot_passes per_slot_s  (NaN: not collapsed)\n",
			o->mms, o->vmas, o->pmds, o->runs, o->seed);
		for (int i = 0; i <= 16; i++) {
			double p = i * 0.05;

			fprintf(f, "%.2f", p);
			for (int c = 0; c < 2; c++) {
				struct model_result r = run_mean(o, p, c ? CURSOR_PER_SLOT :
								 CURSOR_GLOBAL_RESET, o->vmas,
								 o->skip_batch, &st, &failed);
				if (failed)
					fprintf(f, " NaN NaN");
				else
					fprintf(f, " %llu %.3f", (unsigned long long)r.passes,
						r.collapse_ns / 1e9);
			}
			fprintf(f, "\n");
		}
	} else {
		static const unsigned long ks[] = { 0, 1000, 2000, 5000, 10000, 20000,
			50000, 100000, 200000, 500000, 1000000 };

		fprintf(f, "# khugepaged_model --sweep vmas: per-slot cursor, %lu PMDs\n"
			"# N  hold_us_off hold_vmas_off  hold_us_1024 hold_vmas_1024\n",
			o->pmds);
		for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
			fprintf(f, "%lu", ks[i]);
			for (int b = 0; b < 2; b++) {
				run_mean(o, o->contention, CURSOR_PER_SLOT, ks[i],
					 b ? KHUGEPAGED_MAX_SKIP_BATCH : 0, &st, &failed);
				fprintf(f, " %.1f %llu", st.longest_hold_ns / 1e3,
					(unsigned long long)st.longest_hold_vmas);
			}
			fprintf(f, "\n");
		}
	}
	out_close(o, f, tmp);
}

/* OSTEP-style: a layout and a contention level drawn from the seed. */
static void random_problem(struct opts *o)
{
	khugepaged_model_reset();
	model_seed(o->seed);
	o->vmas = (unsigned long)(model_random() * 6000);
	o->pmds = 4 + (unsigned long)(model_random() * 28);
	o->contention = (double)(1 + (int)(model_random() * 6)) / 10;
	o->runs = 1;
	printf("Problem %llu: one mm, %lu ineligible one-page VMAs, then one VMA of %lu\n"
	       "collapsible 2 MiB ranges; pages_to_scan %lu; each mmap_read_trylock()\n"
	       "fails with probability %.1f (seed %llu).\n"
	       "  Q1. How much budget does one walk of the ineligible VMAs use?\n"
	       "  Q2. Which cursor needs fewer passes to collapse everything, and why?\n"
	       "  Q3. How long is the longest mmap_lock read hold, in VMA visits?\n",
	       o->seed, o->vmas, o->pmds, o->pages, o->contention, o->seed);
	if (!o->answers) {
		printf("(run again with -c for the answers)\n");
		return;
	}
	printf("Answers:\n  A1. %lu (1 for the trylock + 1 per VMA)%s\n", o->vmas + 1,
	       o->vmas + 1 >= o->pages ? ": more than the budget, yet one PMD is "
	       "still scanned, because the budget is only checked after a PMD" : "");
	printf("  A2, A3: the two runs below (same seed, so the same coin flips):\n");
	report(o, o->contention, CURSOR_GLOBAL_RESET);
	report(o, o->contention, CURSOR_PER_SLOT);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mms", 1, 0, 'm' }, { "vmas", 1, 0, 'v' }, { "pmds", 1, 0, 'p' },
		{ "contention", 1, 0, 'C' }, { "cursor", 1, 0, 'u' },
		{ "skip-batch", 1, 0, 'b' }, { "seed", 1, 0, 's' },
		{ "pages-to-scan", 1, 0, 'P' }, { "sleep-ms", 1, 0, 'S' },
		{ "max-passes", 1, 0, 'M' }, { "runs", 1, 0, 'r' },
		{ "trace", 0, 0, 't' }, { "sweep", 1, 0, 'w' }, { "out", 1, 0, 'o' },
		{ "random", 0, 0, 'R' }, { "compute", 0, 0, 'c' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	struct opts o = { .mms = 1, .vmas = 2000, .pmds = 32, .pages = 4096,
			  .sleep_ms = 10000, .seed = 1, .max_passes = 1000000,
			  .cursor = CURSOR_GLOBAL_RESET };
	bool runs_set = false;
	char *end;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "hs:c", lo, NULL)) != -1) {
		switch (c) {
		case 'm': o.mms = num("--mms", optarg, 1, 1000); break;
		case 'v': o.vmas = num("--vmas", optarg, 0, 4000000); break;
		case 'p': o.pmds = num("--pmds", optarg, 1, 100000); break;
		case 'b': o.skip_batch = num("--skip-batch", optarg, 0, 10000000); break;
		case 's': o.seed = num("--seed", optarg, 0, ~0ULL); break;
		case 'P': o.pages = num("--pages-to-scan", optarg, 1, 10000000); break;
		case 'S': o.sleep_ms = num("--sleep-ms", optarg, 0, 86400000); break;
		case 'M': o.max_passes = num("--max-passes", optarg, 1, 100000000); break;
		case 'r': o.runs = num("--runs", optarg, 1, 1000); runs_set = true; break;
		case 'C':
			errno = 0;
			o.contention = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o.contention) ||
			    o.contention < 0 || o.contention > 1)
				bad("--contention %s: want a probability in [0, 1]", optarg);
			break;
		case 'u':
			if (!strcmp(optarg, "global"))
				o.cursor = CURSOR_GLOBAL_RESET;
			else if (!strcmp(optarg, "per-slot"))
				o.cursor = CURSOR_PER_SLOT;
			else
				bad("--cursor %s: want global or per-slot", optarg);
			break;
		case 'w':
			if (strcmp(optarg, "contention") && strcmp(optarg, "vmas"))
				bad("--sweep %s: want contention or vmas", optarg);
			o.sweep = optarg;
			break;
		case 'o': o.out = optarg; break;
		case 't': o.trace = true; break;
		case 'R': o.random_problem = true; break;
		case 'c': o.answers = true; break;
		case 'h': usage(stdout); return 0;
		default:
			bad("bad option or missing value: %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad("unexpected argument: %s", argv[optind]);
	if (o.out && !o.sweep)
		bad("%s", "--out needs --sweep");
	if (o.answers && !o.random_problem)
		bad("%s", "-c needs --random");
	if (!o.runs)
		o.runs = o.sweep && !runs_set ? 5 : 1;

	if (o.random_problem) {
		random_problem(&o);
		return 0;
	}
	if (o.sweep) {
		sweep(&o);
		return 0;
	}
	printf("layout: %lu mm x (%lu ineligible VMAs + %lu collapsible PMD ranges); "
	       "pages_to_scan %lu, scan_sleep_millisecs %lu\n"
	       "contention %.2f (seed %llu), skip batch %lu%s\n",
	       o.mms, o.vmas, o.pmds, o.pages, o.sleep_ms, o.contention, o.seed,
	       o.skip_batch, o.skip_batch ? "" : " (off)");
	report(&o, o.contention, o.cursor);
	return 0;
}
