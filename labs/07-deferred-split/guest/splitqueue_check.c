/* Kernel part of lab 07: in-guest tests of the double-checked queueing of a partially unmapped THP (__folio_remove_rmap()'s early check, deferred_split_folio()'s locked part; patch 0010's switch). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXP "kernel-lab-07"
#define THP_SIZE (2ul << 20)
#define PAGE_SZ 4096ul
#define THP_KB (THP_SIZE / 1024)
#define STATS MG_THP "/hugepages-2048kB/stats"
#define DROP_CACHES "/proc/sys/vm/drop_caches"
#define MAX_HITS 15 /* holes per THP: page 1 + 32 k, inside the THP */

static struct {
	long long thps, hits;
	const char *test;
	bool quick;
} opt = { 32, 4, NULL, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: splitqueue_check --test count|shrink [--thps N] [--hits H] [--quick]\n"
		"\n"
		"The kernel tests of lab 07 (the unlocked early check in __folio_remove_rmap()\n"
		"and the locked re-check and queueing in deferred_split_folio(), seed 003 as\n"
		"6.12 carries it, with patch 0010's switch deferred_split_early_check), run\n"
		"inside the guest. This process faults in N THPs (MADV_HUGEPAGE, then\n"
		"MADV_NOHUGEPAGE so that khugepaged leaves them alone) and cuts one-page\n"
		"MADV_DONTNEED holes into them, each hole one partial unmap. The first round\n"
		"of holes starts with the THP faulted last, the tail of split_queue.\n"
		"  count   H holes in each of N THPs, with the switch at 1 and then at 0 (one\n"
		"          fresh set of THPs each), then munmap():\n"
		"            switch_off_locks_every_partial_unmap  0: deferred_split_lock_taken\n"
		"                                          grows by one per partial unmap\n"
		"            todo1_switch_on_locks_once_per_thp    1: by one per THP (its first\n"
		"                                          hole), N*H partial unmaps counted\n"
		"            todo2_each_thp_marked_once            both: thp_deferred_split_page,\n"
		"                                          split_deferred and nr_anon_partially_mapped\n"
		"                                          grow by N, not more (migrations aside)\n"
		"            free_leaves_nothing_marked            both: after munmap(),\n"
		"                                          nr_anon_partially_mapped is back\n"
		"  shrink  switch 1; 2 written to %s runs the deferred split\n"
		"          shrinker:\n"
		"            underused_thps_are_not_split          N THPs never cut stay huge\n"
		"                                          (queued at fault, max_ptes_none 511)\n"
		"            todo2_shrinker_splits_cut_thps        N THPs with one hole each are\n"
		"                                          split (nr_anon falls by N)\n"
		"            todo2_cut_queues_thps_the_fault_did_not  the same with shrink_underused\n"
		"                                          0: only the partial unmap queues them\n"
		"Each test prints {\"type\":\"test\",\"name\":...,\"pass\":...,\"reason\":...}; the host\n"
		"(labs/kernel/klab.py) also fails a test whose run left a splat on the console.\n"
		"Nothing waits on time: every verdict is a count.\n"
		"\n"
		"  --test T    which test run (required, or --quick: count)\n"
		"  --thps N    THPs per phase (1..256, default 32; quick 4)\n"
		"  --hits H    holes per THP in the count run (2..%d, default 4; quick 2)\n"
		"  --quick     small settings (the smoke boot)\n"
		"  --help      this text\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM.\n"
		"Exit: 0 the tests ran (their records say pass or fail), 1 setup failed,\n"
		"2 usage, 3 not the mmlocks kernel.\n", DROP_CACHES, MAX_HITS);
}

/* ---- counters ----------------------------------------------------------- */

enum { C_PARTIAL, C_LOCK, C_DEFERRED, C_SPLIT_DEFERRED, C_NR_PARTIAL, C_NR_ANON, C_SPLIT, C_MIGRATE, C_NR };

static const char *const cname[C_NR] = {
	"deferred_split_partial_unmaps", "deferred_split_lock_taken", "thp_deferred_split_page",
	"split_deferred", "nr_anon_partially_mapped", "nr_anon", "thp_split_page", "pgmigrate_success",
};

struct snap {
	long long v[C_NR];
};

/* A /proc/vmstat counter, -1 if missing. */
static long long vmstat(const char *name)
{
	static char buf[32768];
	size_t n = strlen(name);

	if (mg_read_file("/proc/vmstat", buf, sizeof(buf)) <= 0)
		return -1;
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ')
			return atoll(p + n + 1);
	return -1;
}

/*
 * A gauge of the mTHP stats. sysfs prints the per-CPU sum unsigned, so a
 * wrong answer that decrements it more often than it increments it shows
 * a huge number: read it back as the negative count it is. -1 if unreadable
 * (the caller's mg_require() made sure the file exists).
 */
static long long gauge(const char *name)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), "%s/%s", STATS, name);
	if (mg_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return (long long)strtoull(buf, NULL, 10);
}

static int take(struct snap *s)
{
	s->v[C_PARTIAL] = mg_counter(MG_KNOBS, cname[C_PARTIAL]);
	s->v[C_LOCK] = mg_counter(MG_KNOBS, cname[C_LOCK]);
	s->v[C_DEFERRED] = vmstat(cname[C_DEFERRED]);
	s->v[C_SPLIT_DEFERRED] = mg_counter(STATS, cname[C_SPLIT_DEFERRED]);
	s->v[C_NR_PARTIAL] = gauge(cname[C_NR_PARTIAL]);
	s->v[C_NR_ANON] = gauge(cname[C_NR_ANON]);
	s->v[C_SPLIT] = vmstat(cname[C_SPLIT]);
	s->v[C_MIGRATE] = vmstat(cname[C_MIGRATE]);
	for (int i = 0; i < C_NR; i++) {
		/* The gauges may be below 0 (see gauge()); the counters never are. */
		if (s->v[i] < 0 && i != C_NR_PARTIAL && i != C_NR_ANON) {
			mg_error(EXP, "cannot read the counter %s", cname[i]);
			return -1;
		}
	}
	return 0;
}

static long long d(const struct snap *a, const struct snap *b, int i)
{
	return b->v[i] - a->v[i];
}

static int set_or_fail(const char *path, const char *val)
{
	int err = mg_knob_set(path, val);

	if (err)
		mg_error(EXP, "setting %s to %s: %s", path, val, strerror(-err));
	return err;
}

/* Runs every shrinker once (drop_slab()), the deferred split one among them. */
static int drop_caches(void)
{
	int err = mg_write_file(DROP_CACHES, "2");

	if (err)
		mg_error(EXP, "writing 2 to %s: %s", DROP_CACHES, strerror(-err));
	return err;
}

/* ---- the THPs under test ------------------------------------------------ */

struct region {
	char *map, *base;
	size_t map_len;
};

/*
 * N THPs at a 2 MiB-aligned base, each faulted in by one write (the fault
 * queues it, unmarked, while shrink_underused is 1). MADV_NOHUGEPAGE then
 * keeps khugepaged from collapsing the holes away. Fails unless every fault
 * got a THP.
 */
static int fault_thps(struct region *r, long long n)
{
	long long kb0 = mg_anon_huge_kb(), kb;

	r->map_len = (size_t)(n + 1) * THP_SIZE;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->map == MAP_FAILED) {
		mg_error(EXP, "mmap of %zu bytes: %s", r->map_len, strerror(errno));
		return -1;
	}
	r->base = (char *)(((uintptr_t)r->map + THP_SIZE - 1) & ~(THP_SIZE - 1));
	if (madvise(r->base, (size_t)n * THP_SIZE, MADV_HUGEPAGE)) {
		mg_error(EXP, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
		return -1;
	}
	for (long long i = 0; i < n; i++)
		r->base[i * THP_SIZE] = 1;
	if (madvise(r->base, (size_t)n * THP_SIZE, MADV_NOHUGEPAGE)) {
		mg_error(EXP, "madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
		return -1;
	}
	kb = mg_anon_huge_kb();
	if (kb0 < 0 || kb - kb0 != n * (long long)THP_KB) {
		mg_error(EXP, "%lld faults gave %lld kB of THPs, want %lld kB (is THP available?)", n,
			 kb - kb0, n * (long long)THP_KB);
		return -1;
	}
	return 0;
}

/* Hole k (one page) in THP i: one partial unmap. */
static int cut(struct region *r, long long i, long long k)
{
	if (madvise(r->base + i * THP_SIZE + (1 + 32 * k) * PAGE_SZ, PAGE_SZ, MADV_DONTNEED)) {
		mg_error(EXP, "madvise(MADV_DONTNEED): %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Hole k in every THP. Round 0 goes from the THP faulted last, the tail of
 * split_queue, to the first: an answer that links a queued folio again
 * then adds the tail to itself, which list debugging reports at once.
 */
static int cut_round(struct region *r, long long n, long long k)
{
	for (long long j = 0; j < n; j++)
		if (cut(r, k == 0 ? n - 1 - j : j, k))
			return -1;
	return 0;
}

static void unmap(struct region *r)
{
	munmap(r->map, r->map_len);
}

static void sample(const char *phase, int pos, const struct snap *a, const struct snap *b)
{
	struct mg_json j;

	mgj_start(&j, "sample", EXP);
	mgj_str(&j, "phase", phase);
	mgj_int(&j, "deferred_split_early_check", pos);
	mgj_int(&j, "thps", opt.thps);
	for (int i = 0; i < C_NR; i++)
		mgj_int(&j, cname[i], d(a, b, i));
	mgj_emit(&j);
}

/* ---- count: the switch at 1 and at 0 ------------------------------------ */

static int test_count(void)
{
	long long n = opt.thps, h = opt.hits, p[2], l[2], dd[2], sd[2], np[2], npf[2], mig[2];
	bool marked = true, freed = true;
	char why[2][160];

	for (int pos = 1; pos >= 0; pos--) {
		struct region r;
		struct snap s0, s1, s2, s3;

		if (set_or_fail(MG_KNOBS "/deferred_split_early_check", pos ? "1" : "0") || take(&s0) ||
		    fault_thps(&r, n) || take(&s1))
			return MG_EXIT_FAIL;
		for (long long k = 0; k < h; k++)
			if (cut_round(&r, n, k))
				return MG_EXIT_FAIL;
		if (take(&s2))
			return MG_EXIT_FAIL;
		unmap(&r);
		if (take(&s3))
			return MG_EXIT_FAIL;
		sample("cuts", pos, &s1, &s2);
		sample("munmap", pos, &s2, &s3);
		p[pos] = d(&s1, &s2, C_PARTIAL);
		l[pos] = d(&s1, &s2, C_LOCK);
		dd[pos] = d(&s1, &s2, C_DEFERRED);
		sd[pos] = d(&s1, &s2, C_SPLIT_DEFERRED);
		np[pos] = d(&s1, &s2, C_NR_PARTIAL);
		npf[pos] = d(&s0, &s3, C_NR_PARTIAL);
		mig[pos] = d(&s1, &s2, C_MIGRATE);
		/* A migrated marked folio is requeued and counted again (migrate_folio_move()). */
		marked = marked && dd[pos] >= n && dd[pos] <= n + mig[pos] && sd[pos] >= n &&
			 sd[pos] <= n + mig[pos] && np[pos] == n;
		freed = freed && npf[pos] == 0;
		snprintf(why[pos], sizeof(why[pos]),
			 "switch %d: thp_deferred_split_page +%lld, split_deferred +%lld, "
			 "nr_anon_partially_mapped +%lld", pos, dd[pos], sd[pos], np[pos]);
	}
	mg_test_record(EXP, "switch_off_locks_every_partial_unmap",
		       p[0] == n * h && l[0] >= p[0] && l[0] <= p[0] + mig[0],
		       "switch 0: %lld partial unmaps (want %lld: %lld THPs x %lld holes), %lld "
		       "split_queue_lock acquisitions (want one per partial unmap, as before seed 003; "
		       "%lld migrations)", p[0], n * h, n, h, l[0], mig[0]);
	mg_test_record(EXP, "todo1_switch_on_locks_once_per_thp",
		       p[1] == n * h && l[1] >= n && l[1] <= n + mig[1],
		       "switch 1: %lld partial unmaps (want %lld), %lld split_queue_lock acquisitions "
		       "(want %lld: one per THP, at its first hole; %lld migrations)", p[1], n * h, l[1], n,
		       mig[1]);
	mg_test_record(EXP, "todo2_each_thp_marked_once", marked,
		       "%s; %s (want +%lld each: every THP reported partially mapped exactly once)", why[1],
		       why[0], n);
	mg_test_record(EXP, "free_leaves_nothing_marked", freed,
		       "after munmap(): nr_anon_partially_mapped %+lld (switch 1), %+lld (switch 0) "
		       "against before the faults (want +0)", npf[1], npf[0]);
	return MG_EXIT_OK;
}

/* ---- shrink: what the shrinker does with what was queued ---------------- */

/*
 * Fault n THPs, cut `holes` holes in each, run the shrinker; s0 before the
 * faults, s1 and s2 around the shrinker, huge_kb the PMD-mapped THPs' kB
 * after it. A cut splits the THP's PMD, so only nr_anon (the 2 MiB folios
 * alive, which a split of the folio decrements) tells a cut THP from its
 * split.
 */
static int shrink_phase(const char *phase, long long holes, long long *huge_kb, struct snap *s0,
			struct snap *s1, struct snap *s2)
{
	struct region r;

	if (take(s0) || fault_thps(&r, opt.thps))
		return -1;
	for (long long k = 0; k < holes; k++)
		if (cut_round(&r, opt.thps, k))
			return -1;
	if (take(s1) || drop_caches() || take(s2))
		return -1;
	*huge_kb = mg_anon_huge_kb();
	unmap(&r);
	sample(phase, 1, s1, s2);
	return 0;
}

static int test_shrink(void)
{
	long long n = opt.thps, kb[3];
	struct snap a[3], m[3], b[3];

	/*
	 * Empty the queue of whatever was there (this run's THPs are then the
	 * only ones queued), and the switch at 1.
	 */
	if (drop_caches() || set_or_fail(MG_KNOBS "/deferred_split_early_check", "1") ||
	    set_or_fail(MG_THP "/shrink_underused", "1"))
		return MG_EXIT_FAIL;
	if (shrink_phase("underused", 0, &kb[0], &a[0], &m[0], &b[0]) ||
	    shrink_phase("cut", 1, &kb[1], &a[1], &m[1], &b[1]))
		return MG_EXIT_FAIL;
	if (set_or_fail(MG_THP "/shrink_underused", "0") ||
	    shrink_phase("cut-unqueued", 1, &kb[2], &a[2], &m[2], &b[2]))
		return MG_EXIT_FAIL;
	mg_test_record(EXP, "underused_thps_are_not_split",
		       kb[0] == n * (long long)THP_KB && d(&m[0], &b[0], C_NR_ANON) == 0,
		       "%lld THPs queued at fault, never cut: after the shrinker %lld kB still PMD-mapped "
		       "(want %lld: thp_underused() is false with max_ptes_none 511), nr_anon %+lld "
		       "(want +0), thp_split_page %+lld", n, kb[0], n * (long long)THP_KB,
		       d(&m[0], &b[0], C_NR_ANON), d(&m[0], &b[0], C_SPLIT));
	mg_test_record(EXP, "todo2_shrinker_splits_cut_thps",
		       d(&m[1], &b[1], C_NR_ANON) == -n && d(&m[1], &b[1], C_SPLIT) >= n &&
			       d(&a[1], &b[1], C_NR_PARTIAL) == 0,
		       "%lld THPs queued at fault, one hole each: the shrinker took nr_anon %+lld "
		       "(want -%lld: each split), thp_split_page %+lld (want >= %lld); "
		       "nr_anon_partially_mapped %+lld since before the faults (want +0)", n,
		       d(&m[1], &b[1], C_NR_ANON), n, d(&m[1], &b[1], C_SPLIT), n,
		       d(&a[1], &b[1], C_NR_PARTIAL));
	mg_test_record(EXP, "todo2_cut_queues_thps_the_fault_did_not",
		       d(&m[2], &b[2], C_NR_ANON) == -n && d(&m[2], &b[2], C_SPLIT) >= n,
		       "shrink_underused 0 (the fault queues nothing), %lld THPs with one hole each: "
		       "the shrinker took nr_anon %+lld (want -%lld), thp_split_page %+lld (want >= %lld)",
		       n, d(&m[2], &b[2], C_NR_ANON), n, d(&m[2], &b[2], C_SPLIT), n);
	return MG_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/deferred_split_early_check", MG_KNOBS "/deferred_split_partial_unmaps",
		MG_KNOBS "/deferred_split_lock_taken", MG_THP "/enabled", MG_THP "/shrink_underused",
		STATS "/split_deferred", STATS "/nr_anon_partially_mapped", STATS "/nr_anon", DROP_CACHES,
		NULL,
	};
	static const struct mg_opt o[] = {
		MG_INT("thps", &opt.thps, 1, 256, 4),
		MG_INT("hits", &opt.hits, 2, MAX_HITS, 2),
		MG_STR("test", &opt.test),
		MG_OPTS_END,
	};
	struct mg_json j;

	opt.quick = mg_parse_opts("splitqueue_check", argc, argv, o, usage);
	if (!opt.test && opt.quick)
		opt.test = "count";
	if (!opt.test)
		mg_usage_error("splitqueue_check", usage, "--test is required");
	if (strcmp(opt.test, "count") && strcmp(opt.test, "shrink"))
		mg_usage_error("splitqueue_check", usage, "--test must be count or shrink, not '%s'",
			       opt.test);
	mg_require(EXP, need);
	mg_install_restore();
	if (set_or_fail(MG_THP "/enabled", "madvise"))
		return MG_EXIT_FAIL;
	mgj_start(&j, "info", EXP);
	mgj_str(&j, "test", opt.test);
	mgj_int(&j, "thps", opt.thps);
	mgj_int(&j, "hits", opt.hits);
	mgj_emit(&j);
	if (!strcmp(opt.test, "count"))
		return test_count();
	return test_shrink();
}
