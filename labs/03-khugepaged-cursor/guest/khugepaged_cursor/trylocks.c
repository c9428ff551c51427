/*
 * trylocks.c: khugepaged_cursor's trace bookkeeping. Counts khugepaged's
 * mmap_read_trylock() attempts and failures on the run's mm, between the
 * run's two trace_marker lines.
 */
#define _GNU_SOURCE
#include "trylocks.h"

#include <stdlib.h>
#include <string.h>

/* The mm=%p field; false if the line has none. */
static bool mm_of(const char *ev, char *mm, size_t size)
{
	const char *p = strstr(ev, "mm=");
	size_t n;

	if (!p)
		return false;
	p += 3;
	n = strcspn(p, " ,");
	if (!n || n >= size)
		return false;
	memcpy(mm, p, n);
	mm[n] = '\0';
	return true;
}

/* Is this event about the window's mm? The first one seen defines it. */
static bool same_mm(struct trylocks *t, const char *ev)
{
	char mm[sizeof(t->mm)];

	if (!mm_of(ev, mm, sizeof(mm)))
		return false;
	if (!t->mm[0])
		strcpy(t->mm, mm);
	if (strcmp(mm, t->mm)) {
		t->other_mm++;
		return false;
	}
	return true;
}

static void marker(struct trylocks *t, const char *m)
{
	const char *p;

	if ((p = strstr(m, TRYLOCKS_START))) {
		int run = atoi(p + strlen(TRYLOCKS_START));

		memset(t, 0, sizeof(*t));
		t->run = run;
	} else if ((p = strstr(m, TRYLOCKS_STOP)) && t->run == atoi(p + strlen(TRYLOCKS_STOP))) {
		__atomic_store_n(&t->closed, t->run, __ATOMIC_RELEASE);
		t->run = 0;
	}
}

/* region: trylock-count */
void trylocks_line(struct trylocks *t, const char *line)
{
	const char *ev;

	if ((ev = strstr(line, ": tracing_mark_write: "))) {
		marker(t, ev);
		return;
	}
	if (!t->run)
		return;
	if (strstr(line, "LOST")) { /* ring buffer overrun: the counts are short */
		t->lost++;
		return;
	}
	if (!strstr(line, "khugepaged-"))
		return;
	if ((ev = strstr(line, ": mmap_lock_acquire_returned: ")) && strstr(ev, "write=false")) {
		if (!same_mm(t, ev))
			return;
		if (strstr(ev, "success=false")) {
			t->fails++;
		} else {
			t->ok++;
			t->last_ok_counted = true;
		}
	} else if ((ev = strstr(line, ": mm_collapse_huge_page: "))) {
		/* An allocation that failed returned before mmap_read_lock(). */
		if (strstr(ev, "status=alloc_huge_page_failed") || strstr(ev, "status=ccgroup_charge_failed"))
			return;
		if (same_mm(t, ev) && t->last_ok_counted)
			t->retakes++;
		t->last_ok_counted = false;
	}
}
/* endregion: trylock-count */

long long trylocks_attempts(const struct trylocks *t)
{
	return t->fails + t->ok - t->retakes;
}
