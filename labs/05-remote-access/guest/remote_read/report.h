/*
 * report.h: what remote_read makes of its runs. Part 1, seed 004's table:
 * ns per pread() of /proc/PID/mem per size and switch position, median and
 * spread over repetitions, MB/s, the ratio, the counters. Part 2, the
 * contention the seed did not measure: the writer's and readers' p50/p99
 * per setting. The verdicts and the JSON records; no other I/O, so the host
 * tests the arithmetic (tests/test_remote_read.c).
 */
#ifndef REMOTE_READ_REPORT_H
#define REMOTE_READ_REPORT_H

#include "remote_read/tasks.h"

#include <stdbool.h>
#include <stddef.h>

/* Switch positions and the no-reader baseline of part 2. */
enum { RR_SW_OFF, RR_SW_ON, RR_BASE, RR_NSET };
extern const char *const rr_set_name[RR_NSET];
extern const char *const rr_set_label[RR_NSET];

/*
 * Counters read around every measured window: the switch's own (patch 0009,
 * the first RR_NSWCTR), then the rwsem lock events that show why a writer
 * waits (global, CONFIG_LOCK_EVENT_COUNTS; a missing one reads 0).
 */
enum { RR_C_VMA_LOCKED, RR_C_MMAP_LOCKED, RR_C_FALLBACK, RR_NSWCTR,
       RR_C_STEAL = RR_NSWCTR, RR_C_WHANDOFF, RR_C_SLEEPW, RR_NCTR };
extern const char *const rr_ctr_name[RR_NCTR];

/* Part 1: the seed's read sizes and its published medians (ns per read, before/after). */
#define RR_NSIZES 4
extern const size_t rr_size[RR_NSIZES];
extern const char *const rr_size_name[RR_NSIZES];
extern const double rr_published_ns[RR_NSIZES][2];
#define RR_SEED_GOAL_RATIO 1.05	 /* at 64 KiB and 1 MiB */
#define RR_CONT_GOAL_RATIO 5.0	 /* writer p99, switch 0 over switch 1 */

struct rr_seed_run {
	int size, sw;		/* index into rr_size[]; RR_SW_OFF or RR_SW_ON */
	long long reads;	/* whole reads in the window */
	double ns_per_read;	/* window / reads */
	long long ctr[RR_NCTR];
	bool have_ctr;
};

struct rr_seed_verdict {
	int n[RR_NSIZES][2];
	double med[RR_NSIZES][2], min[RR_NSIZES][2], max[RR_NSIZES][2]; /* ns per read */
	double mbps[RR_NSIZES][2];					 /* from the median */
	long long reads[RR_NSIZES][2], ctr[RR_NSIZES][2][RR_NCTR];
	double calls_per_read[RR_NSIZES][2]; /* __access_remote_vm() calls per pread() */
	double ratio[RR_NSIZES];	     /* median ns, switch 0 over switch 1 */
	/*
	 * The ratio if only the per-call cost differed: the 8 B read's saving
	 * (one call) times this size's calls per read, taken off switch 0's time.
	 */
	double ratio_from_8b[RR_NSIZES];
	bool acted[RR_NSIZES];		     /* VMA-locked calls only under switch 1 */
	bool goal[RR_NSIZES];		     /* 64 KiB and 1 MiB: acted and ratio >= 1.05 */
	bool have_ctr;
};

void rr_seed_evaluate(const struct rr_seed_run *r, int n, struct rr_seed_verdict *v);
/* The table rows and one summary record per size. */
void rr_seed_report(const char *exp, const struct rr_seed_run *r, int n,
		    const struct rr_seed_verdict *v);

/* Part 2: one measured slot. */
struct rr_cont_run {
	int set, rep;
	struct rr_cell cell[RR_NROLES]; /* the writer's and the readers' */
	long long ctr[RR_NCTR];
	bool have_ctr;
};

struct rr_cont_verdict {
	int n[RR_NSET];
	/* Medians over the slots of a setting, in us, per role. */
	double p50[RR_NSET][RR_NROLES], p99[RR_NSET][RR_NROLES], max[RR_NSET][RR_NROLES];
	double p99_min[RR_NSET], p99_max[RR_NSET]; /* the writer's, over slots */
	long long count[RR_NSET][RR_NROLES];	   /* ops or whole reads, summed */
	long long bad_reads[RR_NSET][RR_NROLES];   /* reads that were not RR_OK */
	long long ctr[RR_NSET][RR_NCTR];
	double ratio;	  /* writer p99 median, switch 0 over switch 1 */
	bool have_ctr, acted, goal;
};

void rr_cont_evaluate(const struct rr_cont_run *r, int n, struct rr_cont_verdict *v);
void rr_cont_report(const char *exp, const struct rr_cont_run *r, int n,
		    const struct rr_cont_verdict *v, size_t mem_bytes);

/* One part-2 slot's sample record; the bad-input table (switch 0 and 1). */
void rr_cont_sample(const char *exp, const struct rr_cont_run *r, int slot);
void rr_probe_report(const char *exp, const struct rr_probe p[2][RR_NPROBES]);

#endif
