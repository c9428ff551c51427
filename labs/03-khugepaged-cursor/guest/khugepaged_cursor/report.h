/* report.h: khugepaged_cursor's per-pause results and their JSON records (report.c). */
#ifndef KHUGEPAGED_CURSOR_REPORT_H
#define KHUGEPAGED_CURSOR_REPORT_H

#include <stdbool.h>

#define MAX_RUNS 50

/* The runs at one writer pause; index 0: global cursor (stock), 1: per-slot. */
struct pause_runs {
	long long pause_us;
	int done[2], timeouts[2], untraced[2];
	long long failures[2];            /* failed trylocks, summed over the runs */
	double secs[2][MAX_RUNS];         /* each run's time to full collapse */
	double fail_pct[2][MAX_RUNS];     /* each run's failed / attempted trylocks, %; NaN: unknown */
};

/*
 * A table row and two summaries (time to full collapse, trylock failure
 * rate). Only the main pause's time has a goal (>= 1.5x); at the others
 * it is a point on the model's curve, valid when every per-slot run
 * finished.
 */
void report_pause(const struct pause_runs *r, bool main_pause);

#endif
