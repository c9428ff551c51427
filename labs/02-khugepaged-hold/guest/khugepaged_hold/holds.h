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
#define HOLDS_CFGS 3    /* configurations compared (the program's windows cycle through them) */
#define HOLDS_SPANS 64  /* measurement windows, at most */

/* What the trace shows of one configuration, summed over its windows. */
struct window {
	struct mg_lat rhold;       /* khugepaged's read holds by acquire time, ns */
	struct mg_lat wwait;       /* the writer's waits (holds_writer_waits()), ns */
	uint64_t whold_max;        /* longest write hold (collapse_huge_page), ns */
	long long failed_trylocks; /* mmap_read_trylock() failures */
	long long gaps[HOLDS_GAP_BINS]; /* walk gaps by start time */
	long long stops;           /* gaps taken as stops of the vCPU */
	uint64_t stop_ns, stop_max; /* time taken out of holds; longest stop gap */
	uint64_t stop_gap_ns;      /* the stop gaps' whole length */
	uint64_t stop_irq_ns;      /* interrupt handlers inside the stop gaps */
	uint64_t seconds_ns;       /* the windows' total length */
};

/* One measurement window: [start, end) on the trace clock, of configuration cfg. */
struct span {
	uint64_t start, end;
	int cfg;
	uint64_t wwait_max; /* the writer's longest wait counted in it, ns */
};

struct holds {
	struct window win[HOLDS_CFGS];
	struct span span[HOLDS_SPANS];
	size_t nspan;
	struct tlog holds; /* (release time, length) of every khugepaged read hold */
	struct tlog fails; /* (time, 0) of every failed trylock */
	struct tlog stops; /* (start, length) of each piece of a stop taken out */
	struct tlog irqs;  /* (start, length) of khugepaged's CPU in interrupt handlers */
	struct tlog wwaits; /* (start, length) of the writer's waits: start_locking -> acquire_returned */
	uint64_t keep_ns;  /* kept of a stop as work; gaps of >= 2 * keep_ns are stops */
	uint64_t last_ts;  /* timestamp of the newest mmap_lock event seen */
	uint64_t rheld, wheld; /* acquire time of the hold open now, 0: none */
	long writer_pid;   /* the writer thread, whose waits are paired; 0: none */
	uint64_t wstart;   /* the writer's start_locking (write) now open, 0: none */
	int irq_depth;     /* nesting of *_entry/_exit events on khugepaged's CPU */
	uint64_t irq_start;
	long long lines, lost; /* lines seen; ring-buffer overrun markers */
};

/* stall_ns: the shortest walk gap that counts as a stop (--stall-us). */
void holds_init(struct holds *h, uint64_t stall_ns);
void holds_free(struct holds *h);

/*
 * Open a window of configuration cfg at ts (false: no room); close the
 * newest one at ts. Events count in the window open at their time.
 */
bool holds_open(struct holds *h, int cfg, uint64_t ts);
void holds_close(struct holds *h, uint64_t ts);

/*
 * One line of trace_pipe (no newline). The caller serialises calls.
 * Lines of task "khugepaged": read holds, failed trylocks, walk gaps and
 * interrupt handlers (every "_entry" and "_exit" event, nested). Lines of
 * writer_pid: its write waits. Everything else is ignored.
 */
void holds_line(struct holds *h, const char *line);

/*
 * How much of [a, b] the logged stops cover. For holds in time order pass
 * the same cursor *g (start at 0): stops do not overlap, so it only moves
 * forward.
 */
uint64_t holds_stopped_in(const struct holds *h, uint64_t a, uint64_t b, size_t *g);

/*
 * Count the writer's waits that began in window s from `from` on (its
 * first scan boundary: a wait before it may be behind a hold begun in the
 * window before) in the configuration's wwait and the window's wwait_max.
 */
void holds_writer_waits(struct holds *h, size_t s, uint64_t from);

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
