/* Guest experiment "rwsem-steal": does show_smaps_rollup()'s drop-and-retake let a queued mmap writer in, per rwsem_steal_policy? */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXP "rwsem-steal"
#define SMALL_BASE 0x100000000ul /* 4 GiB: far below the top-down mmap area */
#define NPOL 3
#define BASE NPOL /* phase of the no-reader baseline: the writer alone */
#define NPOS (NPOL + 1) /* positions in a block: policies 0, 1, 2, then the baseline */
#define MAX_BLOCKS 50
#define VMA_LOCK_SWITCH MG_KNOBS "/smaps_rollup_vma_lock" /* patch 0008 */
#define IDLE MG_PHASE_IDLE
#define STOP MG_PHASE_STOP

/* rwsem_rlock_nosteal is our patch 3's: the steals a policy declined. */
static const char *const counters[] = {
	"rwsem_rlock_steal", "rwsem_rlock_nosteal", "rwsem_rlock_handoff",
	"rwsem_wlock_handoff", "rwsem_wake_writer", "rwsem_sleep_writer",
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static struct {
	long long vmas, seconds, blocks, readers, pause_us;
	bool quick;
} opt = { 50000, 4, 5, 1, 200, false };

/* phase: IDLE between positions, 0..2 while policy i is measured, BASE, STOP at the end. */
static int phase = IDLE;
static struct mg_lat lat[NPOS];
static unsigned long long reads[NPOS], read_ns[NPOS];

/* What one position of one block measured. */
struct cell {
	long long cnt[6], calls, reads;
	double p50, p99, max;
};
static struct cell cells[MAX_BLOCKS][NPOS];

static void usage(FILE *f)
{
	fprintf(f,
		"usage: smaps_steal [--quick] [--vmas N] [--seconds S] [--blocks B] [--readers R]\n"
		"                   [--writer-pause-us U]\n"
		"\n"
		"Experiment \"rwsem-steal\" (needs the patched mmlocks 6.12 kernel).\n"
		"This process maps N small VMAs; R reader threads read /proc/self/smaps_rollup\n"
		"in a loop (show_smaps_rollup() walks every VMA under mmap_read_lock and drops\n"
		"and retakes it when a writer queues); one writer thread does mmap+munmap of\n"
		"one page (each takes mmap_write_lock) with a pause of U us, timing each call.\n"
		"It measures in B blocks, each block in the order rwsem_steal_policy 0, 1, 2,\n"
		"then the writer alone (baseline: the machine's own latency), S seconds each,\n"
		"all in one boot: per position it resets the system-wide lock event counters\n"
		"and prints a block record. Then, per policy and for the baseline, a sample\n"
		"record with the median over blocks and its spread, the excess over the\n"
		"baseline, a table, and summary records.\n"
		"It sets smaps_rollup_vma_lock (patch 0008) to 0, where it exists, so that\n"
		"show_smaps_rollup() takes 6.12's mmap_lock path with its drop-and-retake.\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --vmas N             small VMAs to map (100..1000000, default 50000; quick 20000)\n"
		"  --seconds S          seconds per position of a block (1..600, default 4; quick 1)\n"
		"  --blocks B           blocks of policies 0,1,2 + baseline (1..%d, default 5; quick 2)\n"
		"  --readers R          smaps_rollup reader threads (1..8, default 1)\n"
		"  --writer-pause-us U  pause between writer calls (0..1000000, default 200)\n"
		"  --quick              small, fast settings (< 30 s under TCG)\n"
		"  --help               this text\n"
		"\n"
		"Output: JSON lines on stdout (info, block, sample per policy and baseline,\n"
		"table_row, summary); progress on stderr.\n"
		"Exit: 0 ok, 1 run failed, 2 usage, 3 wrong kernel (knobs missing).\n", MAX_BLOCKS);
}

static void parse_args(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("vmas", &opt.vmas, 100, 1000000, 20000),
		MG_INT("seconds", &opt.seconds, 1, 600, 1),
		MG_INT("blocks", &opt.blocks, 1, MAX_BLOCKS, 2),
		MG_INT("readers", &opt.readers, 1, 8, MG_NO_QUICK),
		MG_INT("writer-pause-us", &opt.pause_us, 0, 1000000, MG_NO_QUICK),
		MG_OPTS_END,
	};

	opt.quick = mg_parse_opts("smaps_steal", argc, argv, o, usage);
}

/* region: smaps-reader */
static void *reader(void *arg)
{
	size_t size = 1 << 16;
	char *buf = malloc(size);

	(void)arg;
	while (buf && __atomic_load_n(&phase, __ATOMIC_ACQUIRE) != STOP) {
		uint64_t t0 = mg_now_ns();
		int p = __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
		ssize_t n;

		if (p == BASE) { /* the baseline measures the writer without us */
			mg_sleep_us(10000);
			continue;
		}
		n = mg_read_file("/proc/self/smaps_rollup", buf, size);

		if (n <= 0)
			break;
		if (p >= 0 && p == __atomic_load_n(&phase, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&reads[p], 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&read_ns[p], mg_now_ns() - t0, __ATOMIC_RELAXED);
		}
	}
	free(buf);
	return NULL;
}
/* endregion: smaps-reader */


static int read_counters(long long *v)
{
	char path[256];

	for (size_t i = 0; i < NCOUNTERS; i++) {
		snprintf(path, sizeof(path), MG_LOCKEV "/%s", counters[i]);
		if (mg_read_ll(path, &v[i]))
			return -1;
	}
	return 0;
}

static void summary(const char *metric, const char *unit, double before, double after,
		    double ratio, const char *goal, bool pass, const char *source,
		    const char *after_label)
{
	struct mg_json j;

	mgj_start(&j, "summary", EXP);
	mgj_str(&j, "metric", metric);
	mgj_str(&j, "unit", unit);
	mgj_num(&j, "before", before);
	mgj_num(&j, "after", after);
	mgj_num(&j, "ratio", ratio);
	mgj_null(&j, "published");
	mgj_str(&j, "source", source);
	mgj_str(&j, "goal", goal);
	mgj_bool(&j, "pass", pass);
	mgj_str(&j, "before_label", "steal policy 0 (stock)");
	mgj_str(&j, "after_label", after_label);
	mgj_emit(&j);
}

static void block_record(int b, int pos, const struct cell *c)
{
	struct mg_json j;

	mgj_start(&j, "block", EXP);
	mgj_int(&j, "block", b);
	if (pos < NPOL) {
		mgj_int(&j, "rwsem_steal_policy", pos);
		for (size_t i = 0; i < NCOUNTERS; i++)
			mgj_int(&j, counters[i], c->cnt[i]);
	} else {
		mgj_bool(&j, "baseline", true);
	}
	mgj_int(&j, "writer_calls", c->calls);
	mgj_num(&j, "writer_p50_us", c->p50);
	mgj_num(&j, "writer_p99_us", c->p99);
	mgj_num(&j, "writer_max_us", c->max);
	if (pos < NPOL)
		mgj_num(&j, "smaps_rollup_reads_per_s", (double)c->reads / (double)opt.seconds);
	mgj_emit(&j);
}

/* Median over blocks of a per-position field, and its range (the spread). */
struct spread {
	double med, min, max;
};

static struct spread spread_of(int nb, int pos, size_t off)
{
	double v[MAX_BLOCKS];
	struct spread s = { 0, 0, 0 };

	for (int b = 0; b < nb; b++)
		v[b] = *(const double *)((const char *)&cells[b][pos] + off);
	s.med = mg_median(v, (size_t)nb); /* sorts v */
	s.min = v[0];
	s.max = v[nb - 1];
	return s;
}

/* Per position, over all blocks: summed counts, median latencies. */
static struct {
	long long cnt[6], calls, reads;
	double p50, p99;
} agg[NPOS];

static void aggregate(int nb)
{
	struct spread base50 = spread_of(nb, BASE, offsetof(struct cell, p50));
	struct spread base99 = spread_of(nb, BASE, offsetof(struct cell, p99));
	struct mg_json j;

	for (int pos = 0; pos < NPOS; pos++) {
		struct spread p50 = spread_of(nb, pos, offsetof(struct cell, p50));
		struct spread p99 = spread_of(nb, pos, offsetof(struct cell, p99));
		struct spread mx = spread_of(nb, pos, offsetof(struct cell, max));

		for (int b = 0; b < nb; b++) {
			for (size_t i = 0; i < NCOUNTERS; i++)
				agg[pos].cnt[i] += cells[b][pos].cnt[i];
			agg[pos].calls += cells[b][pos].calls;
			agg[pos].reads += cells[b][pos].reads;
		}
		agg[pos].p50 = p50.med;
		agg[pos].p99 = p99.med;

		mgj_start(&j, "sample", EXP);
		if (pos < NPOL) {
			mgj_str(&j, "phase", "policy");
			mgj_int(&j, "rwsem_steal_policy", pos);
			for (size_t i = 0; i < NCOUNTERS; i++)
				mgj_int(&j, counters[i], agg[pos].cnt[i]);
		} else {
			mgj_str(&j, "phase", "baseline: writer alone, no reader");
		}
		mgj_int(&j, "blocks", nb);
		mgj_int(&j, "writer_calls", agg[pos].calls);
		mgj_num(&j, "writer_p50_us", p50.med);
		mgj_num(&j, "writer_p50_min_us", p50.min);
		mgj_num(&j, "writer_p50_max_us", p50.max);
		mgj_num(&j, "writer_p99_us", p99.med);
		mgj_num(&j, "writer_p99_min_us", p99.min);
		mgj_num(&j, "writer_p99_max_us", p99.max);
		mgj_num(&j, "writer_max_us", mx.max);
		if (pos < NPOL) {
			mgj_num(&j, "writer_p50_excess_us", p50.med - base50.med);
			mgj_num(&j, "writer_p99_excess_us", p99.med - base99.med);
			mgj_num(&j, "smaps_rollup_reads_per_s",
				(double)agg[pos].reads / (double)(opt.seconds * nb));
		}
		mgj_emit(&j);
	}
	/* The same, as a table for the run's summary. */
	for (int pos = 0; pos < NPOS; pos++) {
		struct spread p50 = spread_of(nb, pos, offsetof(struct cell, p50));
		struct spread p99 = spread_of(nb, pos, offsetof(struct cell, p99));
		char range[64];

		mgj_start(&j, "table_row", EXP);
		mgj_str(&j, "table", "Per position, over blocks (median, min-max); counts summed");
		mgj_str(&j, "position", pos < NPOL ? (const char *[]){ "policy 0 (stock)",
			"policy 1 (nosteal)", "policy 2 (writer first)" }[pos] : "writer alone");
		mgj_int(&j, "steals", pos < NPOL ? agg[pos].cnt[0] : 0);
		mgj_int(&j, "declined steals", pos < NPOL ? agg[pos].cnt[1] : 0);
		mgj_int(&j, "writer handoffs", pos < NPOL ? agg[pos].cnt[3] : 0);
		mgj_int(&j, "writer calls", agg[pos].calls);
		snprintf(range, sizeof(range), "%.0f (%.0f-%.0f)", p50.med, p50.min, p50.max);
		mgj_str(&j, "p50 us", range);
		snprintf(range, sizeof(range), "%.0f (%.0f-%.0f)", p99.med, p99.min, p99.max);
		mgj_str(&j, "p99 us", range);
		mgj_num(&j, "p99 excess us", p99.med - base99.med);
		mgj_emit(&j);
	}
}

int main(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/rwsem_steal_policy", MG_LOCKEV "/rwsem_rlock_steal",
		MG_LOCKEV "/rwsem_rlock_handoff", MG_LOCKEV "/rwsem_wlock_handoff",
		MG_LOCKEV "/rwsem_sleep_writer", MG_LOCKEV "/rwsem_wake_writer",
		MG_LOCKEV "/rwsem_rlock_nosteal", MG_LOCKEV "/.reset_counts",
		"/proc/self/smaps_rollup", "/proc/sys/vm/max_map_count", NULL,
	};
	long long mmc;
	pthread_t rt[8], wt;
	bool failed = false;
	int done_blocks = 0;
	struct mg_writer wr = { &phase, lat, 0 };
	struct mg_json j;
	long total, inside;
	int err;

	parse_args(argc, argv);
	mg_require(EXP, need);
	mg_install_restore();

	mgj_start(&j, "info", EXP);
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "seconds_per_position", opt.seconds);
	mgj_int(&j, "blocks", opt.blocks);
	mgj_str(&j, "order", "each block: rwsem_steal_policy 0, 1, 2, then the writer alone");
	mgj_int(&j, "readers", opt.readers);
	mgj_int(&j, "writer_pause_us", opt.pause_us);
	mgj_bool(&j, "quick", opt.quick);
	mgj_str(&j, "note", "lock_event_counts are system-wide: they count every rwsem in the "
			    "guest, not only this mm's mmap_lock; the guest runs nothing else "
			    "meanwhile. The knob's boot default is 1, not stock; it is restored.");
	mgj_emit(&j);

	if (mg_read_ll("/proc/sys/vm/max_map_count", &mmc) == 0 && mmc < opt.vmas + 10000 &&
	    (err = mg_knob_set_ll("/proc/sys/vm/max_map_count", opt.vmas + 10000))) {
		mg_error(EXP, "cannot raise vm.max_map_count: %s", strerror(-err));
		return MG_EXIT_FAIL;
	}
	/*
	 * Patch 0008 (default 1) walks smaps_rollup under per-VMA locks and
	 * then never holds mmap_lock against our writer: this experiment is
	 * about 6.12's mmap_lock walk and its drop-and-retake, so switch 0008
	 * off (restored at exit) on kernels that have it.
	 */
	if (mg_exists(VMA_LOCK_SWITCH) && (err = mg_knob_set_ll(VMA_LOCK_SWITCH, 0))) {
		mg_error(EXP, "writing smaps_rollup_vma_lock=0: %s", strerror(-err));
		return MG_EXIT_FAIL;
	}
	mgj_start(&j, "info", EXP);
	mgj_bool(&j, "smaps_rollup_vma_lock_switched_off", mg_exists(VMA_LOCK_SWITCH));
	mgj_emit(&j);
	uint64_t t0 = mg_now_ns();
	if ((err = mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))) {
		mg_error(EXP, "mapping %lld small VMAs failed: %s", opt.vmas, strerror(-err));
		return MG_EXIT_FAIL;
	}
	inside = mg_count_vmas(SMALL_BASE, SMALL_BASE + (uintptr_t)opt.vmas * 4096, &total);
	mgj_start(&j, "info", EXP);
	mgj_int(&j, "small_vmas_mapped", inside);
	mgj_int(&j, "total_vmas", total);
	mgj_num(&j, "setup_seconds", (double)(mg_now_ns() - t0) / 1e9);
	mgj_emit(&j);
	if (inside != opt.vmas) {
		mg_error(EXP, "expected %lld separate VMAs, /proc/self/maps shows %ld", opt.vmas, inside);
		return MG_EXIT_FAIL;
	}

	for (int i = 0; i < NPOS; i++)
		mg_lat_init(&lat[i], 1 << 20);
	for (int i = 0; i < opt.readers; i++)
		pthread_create(&rt[i], NULL, reader, NULL);
	wr.pause_us = (unsigned long)opt.pause_us;
	pthread_create(&wt, NULL, mg_mmap_writer, &wr);

	/*
	 * Positions 0, 1, 2 (the steal policies) and BASE (the writer alone, no
	 * reader: what the machine adds by itself, under TCG mostly the host
	 * descheduling a vCPU thread) are interleaved in blocks, so that a
	 * change of the host's load over the run hits every position alike.
	 */
	/* region: policy-loop */
	for (int b = 0; b < opt.blocks && !mg_stop_signal && !failed; b++) {
		for (int pos = 0; pos < NPOS && !mg_stop_signal; pos++) {
			struct cell *c = &cells[b][pos];
			long long before_cnt[NCOUNTERS], after_cnt[NCOUNTERS];

			if (pos < NPOL &&
			    (err = mg_knob_set_ll(MG_KNOBS "/rwsem_steal_policy", pos))) {
				mg_error(EXP, "writing rwsem_steal_policy=%d: %s", pos, strerror(-err));
				failed = true;
				break;
			}
			mg_log("block %d, %s: measuring %lld s", b,
			       pos < NPOL ? (const char *[]){ "policy 0", "policy 1", "policy 2" }[pos]
					  : "baseline", opt.seconds);
			/* Let calls that started under the old position finish before counting. */
			mg_sleep_us(200000);
			mg_write_file(MG_LOCKEV "/.reset_counts", "1");
			if (read_counters(before_cnt)) {
				mg_error(EXP, "reading lock_event_counts failed");
				failed = true;
				break;
			}
			__atomic_store_n(&phase, pos, __ATOMIC_RELEASE);
			for (long long ms = 0; ms < opt.seconds * 1000 && !mg_stop_signal; ms += 100)
				mg_sleep_us(100000);
			__atomic_store_n(&phase, IDLE, __ATOMIC_RELEASE);
			if (read_counters(after_cnt)) {
				mg_error(EXP, "reading lock_event_counts failed");
				failed = true;
				break;
			}
			/* The writer may still be adding a sample from before IDLE: let it finish. */
			mg_sleep_us(50000);
			for (size_t i = 0; i < NCOUNTERS; i++)
				c->cnt[i] = after_cnt[i] - before_cnt[i];
			c->calls = (long long)lat[pos].count;
			c->p50 = (double)mg_lat_pct(&lat[pos], 50) / 1000;
			c->p99 = (double)mg_lat_pct(&lat[pos], 99) / 1000;
			c->max = (double)lat[pos].max / 1000;
			c->reads = (long long)reads[pos];
			mg_lat_reset(&lat[pos]);
			reads[pos] = read_ns[pos] = 0;
			block_record(b, pos, c);
			done_blocks = b + 1;
		}
	}
	/* endregion: policy-loop */

	__atomic_store_n(&phase, STOP, __ATOMIC_RELEASE);
	pthread_join(wt, NULL);
	for (int i = 0; i < opt.readers; i++)
		pthread_join(rt[i], NULL);
	mg_restore_all();
	if (mg_stop_signal || failed || done_blocks < opt.blocks) {
		mg_error(EXP, "not every block was measured");
		return MG_EXIT_FAIL;
	}
	aggregate(done_blocks);

	/* region: pass-criteria */
	for (int pol = 1; pol < NPOL; pol++) {
		const char *src = pol == 1
			? "seed 000 patches 3-4 (down_read_nosteal()), applied by mmlocks to show_smaps_rollup(): the seed does not convert that site"
			: "seed 000, Peter Zijlstra's review of patch 3 (never steal behind pending writers)";
		const char *label = pol == 1 ? "steal policy 1 (nosteal at drop-and-retake)"
					     : "steal policy 2 (never steal behind a writer)";
		long long s0 = agg[0].cnt[0], sp = agg[pol].cnt[0];

		/* Without contention under policy 0 there is nothing to remove: a fail. */
		summary("rwsem_rlock_steal events", "count", (double)s0, (double)sp,
			(double)s0 / (sp ? (double)sp : 1.0), "after <= 10% of before (before >= 100)",
			s0 >= 100 && sp * 10 <= s0, src, label);
		summary("writer mmap/munmap p99 latency, median over blocks", "us",
			agg[0].p99, agg[pol].p99,
			agg[pol].p99 > 0 ? agg[0].p99 / agg[pol].p99 : agg[0].p99,
			">= 2x lower", agg[pol].p99 * 2 <= agg[0].p99, src, label);
	}
	/* endregion: pass-criteria */
	return 0;
}
