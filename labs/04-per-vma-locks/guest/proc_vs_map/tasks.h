/*
 * tasks.h: the processes of one proc_vs_map run (Paul McKenney's
 * proc-mmap_sem-test method, written anew): the mapper, the /proc scanners
 * and the busy-wait tasks. Each is a forked child that reports to the parent
 * in fixed-size messages on one pipe; no I/O here depends on the patched
 * kernel, so the host can test it (tests/test_tasks.c).
 */
#ifndef PROC_VS_MAP_TASKS_H
#define PROC_VS_MAP_TASKS_H

#include "mmlocks_guest.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- reading /proc/PID/smaps_rollup once -------------------------------- */

enum pvm_scan {
	PVM_SCAN_OK,	/* a whole rollup: counted */
	PVM_SCAN_GONE,	/* open failed with ENOENT or ESRCH: the mapper has exited */
	PVM_SCAN_ESRCH,	/* read failed with ESRCH: the mapper's mm went away mid-read */
	PVM_SCAN_EOF,	/* the read returned nothing */
	PVM_SCAN_SHORT,	/* text without its last line ("Locked:") */
	PVM_SCAN_ERROR,	/* any other error */
	PVM_SCAN_NR
};

extern const char *const pvm_scan_name[PVM_SCAN_NR];

/* Whether buf holds a whole smaps_rollup: "[rollup]" header to "Locked: N kB\n". */
bool pvm_rollup_complete(const char *buf, size_t n);
/* Open path and read it into buf (size bytes) once; *err gets the errno, if any. */
enum pvm_scan pvm_scan_once(const char *path, char *buf, size_t size, int *err);
/* The read half, on an open file (tests open it before the target exits). */
enum pvm_scan pvm_scan_fd(int fd, char *buf, size_t size, int *err);

/* ---- messages to the parent ------------------------------------------ */

enum pvm_kind {
	PVM_MAPPER_READY = 1, /* region mapped and populated; v[0] = its address */
	PVM_MAPPER_DONE,      /* v[]: see PVM_M_* */
	PVM_MAPPER_FAILED,    /* v[0] = errno, v[1] = step (1 mmap region, 2 op) */
	PVM_SCANNER_STARTED,  /* first whole rollup read */
	PVM_SCANNER_DONE,     /* v[PVM_SCAN_*] = reads per outcome; v[PVM_S_*] */
	PVM_BUSY_DONE,        /* v[0] = busy periods */
};

/* Mapper results in v[]. */
enum { PVM_M_OPS, PVM_M_MAPS, PVM_M_UNMAPS, PVM_M_SUM_NS, PVM_M_MAX_NS, PVM_M_P50_NS,
       PVM_M_P99_NS, PVM_M_WINDOW_NS, PVM_M_VMAS,
       PVM_M_MAX_AT,   /* which call (0 = the first) was the longest */
       PVM_M_MAX_MAP,  /* and whether it was an mmap() (1) or a munmap() (0) */
       PVM_M_MAX_Q };  /* 4 slots: the longest call of each quarter of the window */
/* Scanner results in v[], after the PVM_SCAN_NR outcome counts. */
enum { PVM_S_SUM_NS = PVM_SCAN_NR, PVM_S_MAX_NS, PVM_S_ERRNO };

#define PVM_NV 16
struct pvm_msg {
	int32_t kind, id;
	int64_t v[PVM_NV];
};

/* Write one message (atomic: smaller than PIPE_BUF). */
void pvm_send(int fd, int kind, int id, const int64_t *v);

/* ---- the child processes ------------------------------------------------ */

struct pvm_mapper_cfg {
	size_t region_pages;   /* the large anonymous mapping, populated */
	uint64_t seconds_ns;   /* measured window, from the "go" byte */
	unsigned long pause_us;
	uint64_t seed;         /* pages and map/unmap choices */
	size_t lat_cap;        /* latencies kept for percentiles */
};

/*
 * The mapper: map the region, send READY, wait (<= 60 s) for a byte on
 * go_fd, then for seconds_ns pick a random page and either mmap() it
 * (MAP_FIXED | MAP_POPULATE) or munmap() it, timing each call, with a
 * pause_us sleep between calls; send DONE and exit. Never returns.
 */
void pvm_mapper(const struct pvm_mapper_cfg *c, int report_fd, int go_fd)
	__attribute__((noreturn));

/*
 * A scanner: read /proc/<target>/smaps_rollup in a loop, counting each
 * outcome; STARTED after the first whole read; stop when the target is gone
 * (GONE or ESRCH), when stop_fd reaches EOF, or at deadline_ns. Then DONE.
 */
void pvm_scanner(int id, pid_t target, int report_fd, int stop_fd, uint64_t deadline_ns)
	__attribute__((noreturn));

/*
 * A busy-wait task: spin busy_ms, then sleep sleep_ms (a poll() on stop_fd),
 * until stop_fd reaches EOF or deadline_ns. Then DONE.
 */
void pvm_busy(int id, int busy_ms, int sleep_ms, int report_fd, int stop_fd,
	      uint64_t deadline_ns) __attribute__((noreturn));

/* The next pseudo-random number (xorshift64*; *s must not be 0). */
uint64_t pvm_rand(uint64_t *s);

#endif
