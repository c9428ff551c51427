/* uprobe_scale: the probed function, its tracefs uprobe, patch 0011's switch and counters. */
#ifndef US_PROBE_H
#define US_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "mmlocks_guest.h"

#define US_EXP "uprobe-speculation"
#define US_KNOB MG_KNOBS "/uprobe_speculate"
#define US_GROUP "mmlocks"
#define US_EVENT "spec"

/*
 * The function the hitter threads call and the uprobe sits on: a few
 * instructions in .text, written in assembly so that its first instruction
 * is `push %rbp`, which 6.12's x86 uprobes emulate (push_setup_xol_ops()):
 * a hit is one trap, with no single-step out of line. It returns x + 1 and
 * is position-independent, so it also runs from another mapping of the
 * same file page (the --stress alias).
 */
long us_probed(long x);
typedef long (*us_fn)(long);

/* The usage text (uprobe_scale --help). */
void us_usage(FILE *f, int max_threads, int max_reps);

/* patch 0011's counters, /sys/kernel/debug/mmlocks/<name> */
enum us_counter {
	US_ATTEMPT, US_SUCCESS, US_FAIL_BEGIN, US_FAIL_LOOKUP, US_FAIL_RETRY, US_MMAP_LOCKED, US_NR
};
extern const char *const us_counter_names[US_NR];
bool us_counters_reset(void);
bool us_counters_read(long long v[US_NR]);

/*
 * A hitter's loop, shared by --stress and --rereg: call fn until *stop or a
 * stop signal, publishing the number of calls in *calls, at nice 15 as in
 * the measurement (the other threads must get CPU). While *park is set
 * (park may be NULL) it waits instead, counted in *parked. Returns the
 * last value fn returned.
 */
long us_hit_loop(us_fn fn, long long *calls, volatile int *stop, volatile int *park, int *parked);

/* Where us_probed() lives: the file mapped there and its offset in it. */
struct us_target {
	char path[256];
	unsigned long file_off;
	uintptr_t addr;
};

/*
 * One /proc/self/maps line (maps.c): if it maps addr from a file with 'x',
 * the file offset of addr and the path (spaces kept). False for other
 * lines, non-exec, anonymous and [named] mappings, a deleted file, junk.
 */
bool us_maps_line(const char *line, uintptr_t addr, unsigned long *off, char *path, size_t n);
/* Find us_probed() in /proc/self/maps; false after an error record. */
bool us_find_target(struct us_target *t);

/*
 * A second private mapping of the page that holds us_probed() (PROT_READ |
 * PROT_EXEC, from an O_RDONLY descriptor of the same file): uprobes installs
 * the breakpoint in it too. fn is us_probed() there.
 */
struct us_alias {
	void *page;
	us_fn fn;
	int fd;
	off_t off;
};
/* Map it; false after an error record. */
bool us_map_alias(const struct us_target *t, struct us_alias *a);

/*
 * The byte at addr as this process's page tables map it, read through
 * /proc/self/mem (what uprobe_write_opcode() left there), or -1.
 */
int us_mem_byte(uintptr_t addr);

/*
 * The tracefs directory with uprobe_events (/sys/kernel/tracing, else
 * debugfs' tracing/), or NULL: a kernel without CONFIG_UPROBE_EVENTS.
 */
const char *us_tracefs(void);
/*
 * Define "p:mmlocks/spec PATH:0xOFF" in uprobe_events (disabled) and make
 * mg_restore_all() remove it. Removes a stale definition of a previous run
 * first. False after an error record.
 */
bool us_probe_add(const struct us_target *t);
/* Enable (uprobe_register) or disable (unregister) the event. 0 or -errno. */
int us_probe_enable(bool on);
/* Disable and delete the event; async-signal-safe, idempotent. */
void us_probe_remove(void);
/*
 * The event's hit count in tracefs uprobe_profile (trace_uprobe's nhits,
 * counted by uprobe_dispatcher(), i.e. by handler_chain() for each hit the
 * kernel matched to the uprobe), or -1.
 */
long long us_probe_hits(void);

/*
 * --stress: `hitters` threads hit the probe for `seconds` while the mappings
 * around it change, children fork, the switch flips and the uprobe comes
 * and goes. Emits one "stress" record; false if it failed or was not
 * exercised.
 */
bool us_stress(const struct us_target *t, int hitters, long long seconds);

/*
 * --rereg R: does a uprobe that is unregistered and registered again
 * (tracefs enable 0, 1) keep trapping? Hitters call us_probed() through the
 * text and through an alias; after a first window, R rounds each
 * re-register once while they run ("hot") and once while they are parked
 * ("cold"), then count a window of ms: calls, the uprobe's hits and the
 * kernel's lookups, and the byte at each address. One "rereg" record per
 * window; false if a tracefs write failed.
 */
bool us_rereg(const struct us_target *t, int hitters, long long rounds, long long ms);

/*
 * --tag-fallbacks: the mapper of the measurement (mmap() and munmap() of one
 * page, pause_us between pairs, latencies into lat[phase]) that also reads
 * uprobe_mmap_locked before, between and after the two calls, outside their
 * timed parts, and tags each call in tag[phase][]: US_TAG_BEFORE if a lookup
 * went to mmap_read_lock() during the call before it (for an mmap(), the
 * previous munmap() and the pause), US_TAG_DURING if one did during the call
 * itself, both, neither (0), or US_TAG_BAD if a read failed.
 */
enum { US_TAG_BEFORE = 1, US_TAG_DURING = 2, US_TAG_BAD = 4 };
struct us_tagged {
	const int *phase;
	struct mg_lat *lat;
	unsigned char **tag;
	unsigned long pause_us;
};
void *us_tagged_writer(void *w);

/*
 * Calls of l slower than limit (out[US_SLOW]) and, with tags, the calls and
 * the slow calls of each tag 0..3 (out[US_CALLS_TAG + t], out[US_SLOW_TAG + t]);
 * l in the order the writer added.
 */
enum { US_SLOW, US_CALLS_TAG, US_SLOW_TAG = US_CALLS_TAG + 4, US_SLOW_NR = US_SLOW_TAG + 4 };
void us_slow_calls(const struct mg_lat *l, const unsigned char *tag, uint64_t limit,
		   long long out[US_SLOW_NR]);
/* mg_lat_pct() of a copy: l keeps its order. */
uint64_t us_pct_copy(const struct mg_lat *l, double pct);

#endif
