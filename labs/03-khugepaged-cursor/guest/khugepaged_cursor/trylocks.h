/*
 * trylocks.h: khugepaged_cursor's count of khugepaged's mmap_read_trylock()
 * attempts and failures, from its mmap_lock trace events, without any I/O,
 * so that the host can test it (tests/test_trylocks.c).
 */
#ifndef KHUGEPAGED_CURSOR_TRYLOCKS_H
#define KHUGEPAGED_CURSOR_TRYLOCKS_H

#include <stdbool.h>

/* The trace_marker text that opens and closes run N's window. */
#define TRYLOCKS_START "mmlocks-cursor start "
#define TRYLOCKS_STOP "mmlocks-cursor stop "

/*
 * What the trace showed between "start N" and "stop N". Every successful
 * read acquire of khugepaged's is a trylock except the blocking
 * mmap_read_lock() that collapse_huge_page() takes after allocating the
 * huge page; each of those is followed by an mm_collapse_huge_page event
 * whose status is not an allocation or charge failure, which turns the
 * last read acquire into a retake.
 */
struct trylocks {
	long long fails;      /* acquire_returned write=false success=false */
	long long ok;         /* acquire_returned write=false success=true */
	long long retakes;    /* of those, collapse_huge_page()'s mmap_read_lock() */
	long long other_mm;   /* events on another mm than the window's first */
	long long lost;       /* ring-buffer overrun markers in the window */
	int run;              /* window open now (N), 0: none */
	int closed;           /* the last window closed */
	bool last_ok_counted; /* the newest read acquire counts in the window */
	char mm[24];          /* the window's mm (hashed pointer), "" until seen */
};

/* One line of trace_pipe (no newline). The caller serialises calls. */
void trylocks_line(struct trylocks *t, const char *line);

/* Attempts in the closed window: failures plus successful trylocks. */
long long trylocks_attempts(const struct trylocks *t);

#endif
