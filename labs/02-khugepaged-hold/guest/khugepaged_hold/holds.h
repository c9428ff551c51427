/*
 * holds.h: the trace bookkeeping of khugepaged_hold, without any I/O, so
 * that the host can test it (tests/test_holds.c). The program feeds every
 * line of trace_pipe to holds_line() and, after the run, cuts the holds
 * into scans with holds_cut().
 */
#ifndef KHUGEPAGED_HOLD_HOLDS_H
#define KHUGEPAGED_HOLD_HOLDS_H

#include "mmlocks_guest.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing log of (a, b) pairs, appended in time order. */
struct tlog {
	uint64_t (*v)[2];
	size_t n, cap;
	long long dropped; /* entries lost to a failed realloc() */
};

void tlog_add(struct tlog *l, uint64_t a, uint64_t b);
void tlog_free(struct tlog *l);

/* Walk gaps (patch 0007) by length: 0.1-0.25, 0.25-0.5, 0.5-1, 1-2, 2-5, >= 5 ms. */
#define HOLDS_GAP_BINS 6

/* What the trace shows of one configuration (skip batch) and its window. */
struct window {
	uint64_t start, end;       /* trace clock (mono) ns; start 0: not opened yet */
	struct mg_lat rhold;       /* read holds by acquire time, ns */
	uint64_t whold_max;        /* longest write hold (collapse_huge_page), ns */
	long long failed_trylocks; /* mmap_read_trylock() failures */
	long long gaps[HOLDS_GAP_BINS]; /* walk gaps by start time */
	long long stops;           /* gaps taken as stops of the vCPU */
	uint64_t stop_ns, stop_max; /* time taken out of holds; longest stop gap */
};

struct holds {
	struct window win[2];
	struct tlog holds; /* (release time, length) of every khugepaged read hold */
	struct tlog fails; /* (time, 0) of every failed trylock */
	struct tlog stops; /* (start, length) of the part of each stop taken out */
	uint64_t keep_ns;  /* kept of a stop as work; gaps of >= 2 * keep_ns are stops */
	uint64_t last_ts;  /* timestamp of the newest mmap_lock event seen */
	uint64_t rheld, wheld; /* acquire time of the hold open now, 0: none */
	long long lines, lost; /* lines seen; ring-buffer overrun markers */
};

/* stall_ns: the shortest walk gap that counts as a stop (--stall-us). */
void holds_init(struct holds *h, uint64_t stall_ns);
void holds_free(struct holds *h);

/* One line of trace_pipe (no newline). The caller serialises calls. */
void holds_line(struct holds *h, const char *line);

/*
 * How much of [a, b] the logged stops cover. For holds in time order pass
 * the same cursor *g (start at 0): stops do not overlap, so it only moves
 * forward.
 */
uint64_t holds_stopped_in(const struct holds *h, uint64_t a, uint64_t b, size_t *g);

/* One scan: its longest read hold, as traced and with stops taken out. */
struct scan {
	uint64_t max, net, count;
	long long with_stops; /* holds that contained a stop */
};

/*
 * Scan j (1 <= j < nb) is every read hold released in (b[j-1], b[j]].
 * Fills out[0 .. min(nb - 1, cap) - 1] and returns how many.
 */
size_t holds_cut(const struct holds *h, const uint64_t *b, size_t nb, struct scan *out, size_t cap);

#endif
