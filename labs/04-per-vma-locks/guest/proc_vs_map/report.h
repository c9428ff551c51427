/*
 * report.h: what proc_vs_map makes of its runs: per setting, the seed's
 * table (median and minimum of the runs' average call latency, maximum of
 * their maxima), the goal against the no-scanner baseline, and the proof
 * that the switch acted. No I/O but the JSON records, so the host can test
 * the arithmetic (tests/test_tasks.c).
 */
#ifndef PROC_VS_MAP_REPORT_H
#define PROC_VS_MAP_REPORT_H

#include <stdbool.h>

/* The settings of a sample, in the order they run. */
enum { PVM_OFF, PVM_ON, PVM_BASE, PVM_NSET };
extern const char *const pvm_set_name[PVM_NSET];
extern const char *const pvm_set_label[PVM_NSET];

/* Counters read around each run's measured window. */
enum {
	PVM_C_VMA_SUCCESS, PVM_C_VMA_ABORT, PVM_C_VMA_RETRY, PVM_C_VMA_MISS, /* /proc/vmstat */
	PVM_C_STEAL, PVM_C_NOSTEAL,					     /* lock_event_counts */
	PVM_C_LOCKED, PVM_C_MMAP_LOCKED, PVM_C_FALLBACK, PVM_C_DROP,	     /* the switch's own */
	PVM_C_RETRY,
	PVM_NCTR
};
#define PVM_NVMSTAT 4
#define PVM_NLOCKEV 2
extern const char *const pvm_ctr_name[PVM_NCTR];

struct pvm_run {
	int set;
	double avg_ms, max_ms;	    /* the mapper's average and longest call */
	double p99_ms;		    /* and its 99th percentile */
	double max_late_ms;	    /* its longest call after the first quarter of the run */
	long long ctr[PVM_NCTR];    /* counts in the measured window */
	bool have[PVM_NCTR];	    /* whether the counter exists */
	long long killed;	    /* children that had to be killed */
};

/* The runs of the whole experiment, reduced. */
struct pvm_verdict {
	int n[PVM_NSET];
	double med[PVM_NSET], min[PVM_NSET], max[PVM_NSET]; /* of averages; max of maxima */
	double med_max[PVM_NSET];			      /* median of the maxima */
	double med_p99[PVM_NSET];			      /* median of the p99s */
	double med_max_late[PVM_NSET];			      /* median of max_late_ms */
	long long ctr[PVM_NSET][PVM_NCTR];		      /* sums over runs */
	long long killed[PVM_NSET];
	bool have_switch_ctr;
	bool acted;	       /* switch 1 walks under VMA locks, switch 0 never */
	double excess_off, excess_on, excess_ratio; /* medians minus the baseline's */
	bool goal, plain, maxima;		     /* the three verdicts */
};

/* The floor of an excess in the ratio (1 us): "no excess" is not a division by 0. */
#define PVM_EXCESS_FLOOR_MS 0.001

void pvm_evaluate(const struct pvm_run *r, int n, struct pvm_verdict *v);
/* The table record and the three summary records, on stdout. */
void pvm_report(const char *experiment, const struct pvm_run *r, int n,
		const struct pvm_verdict *v);

#endif
