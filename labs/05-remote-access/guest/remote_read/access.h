/*
 * access.h: one read of another process's memory through /proc/PID/mem (or
 * of its /proc/PID/cmdline), and what the result means. Every outcome but
 * RR_OK is reported and never counted as a measurement. No dependence on
 * the patched kernel, so the host tests it (tests/test_remote_read.c).
 */
#ifndef REMOTE_READ_ACCESS_H
#define REMOTE_READ_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum rr_outcome {
	RR_OK,	      /* all the bytes asked for, and (when checked) the right ones */
	RR_SHORT,     /* fewer bytes: the range runs into an unmapped page */
	RR_UNMAPPED,  /* EIO: nothing mapped at the address (mem_rw() copied 0 bytes) */
	RR_GONE,      /* the target has exited: read returned 0, or ENOENT/ESRCH */
	RR_DENIED,    /* EACCES/EPERM: mm_access() refused (ptrace_may_access()) */
	RR_MISMATCH,  /* the bytes are not the target's known contents */
	RR_ERROR,     /* any other error */
	RR_NOUT
};

extern const char *const rr_outcome_name[RR_NOUT];
/* One sentence a reader understands, for error records. */
const char *rr_outcome_text(enum rr_outcome o);

/* Open /proc/PID/FILE read-only; -1 with *why (GONE, DENIED, ERROR) and *err on failure. */
int rr_open(pid_t pid, const char *file, enum rr_outcome *why, int *err);

/*
 * pread() len bytes at off (retrying EINTR) and classify: RR_OK when all
 * len bytes came back, else SHORT, UNMAPPED, GONE, DENIED or ERROR.
 * *got is the byte count (0 on error), *err the errno (0 if none).
 */
enum rr_outcome rr_pread(int fd, void *buf, size_t len, uint64_t off, ssize_t *got, int *err);

/*
 * The target's region holds a known pattern: the 8 bytes at region offset
 * off (a multiple of 8) are rr_pattern(off). rr_fill() writes it (and so
 * touches every page); rr_check() compares len bytes read from region
 * offset off, every word or (sampled) only the first and last.
 */
uint64_t rr_pattern(uint64_t off);
void rr_fill(void *region, size_t len);
bool rr_check(const void *buf, size_t len, uint64_t off, bool sampled);

/*
 * Wait at most timeout_ms for the child pid, then SIGKILL it; its exit
 * status, or -1 if it had to be killed or died of a signal. Unregisters it
 * from the restorer (mg_register_child).
 */
int rr_reap(pid_t pid, int timeout_ms);

/* ---- bad input: the kernel's answers (never measurements) -------------------- */

enum rr_probe_case {
	RR_P_WHOLE,	/* 4 KiB inside the region: RR_OK with the pattern */
	RR_P_UNMAPPED,	/* 8 B in the unmapped page after it: RR_UNMAPPED (EIO) */
	RR_P_CROSSING,	/* 16 B, the last 8 mapped: RR_SHORT with 8 bytes */
	RR_P_GONE,	/* a process that exited after the open: RR_GONE */
	RR_P_DENIED,	/* opening the target's mem as user nobody: RR_DENIED */
	RR_NPROBES
};
extern const char *const rr_probe_name[RR_NPROBES];

struct rr_probe {
	enum rr_outcome expect, got;
	ssize_t bytes, expect_bytes; /* bytes returned; what the kernel should return */
	int err;		     /* the errno seen */
	bool skipped;		     /* RR_P_DENIED when not root (cannot become nobody) */
	bool ok;
};

/*
 * Probe the target whose region is [base, base + len) with an unmapped page
 * right after it. Every wait is bounded (a probe's child is killed after
 * 10 s). Returns whether every probe that ran got the expected answer.
 */
bool rr_probe_all(pid_t target, uint64_t base, size_t len, struct rr_probe p[RR_NPROBES]);

#endif
