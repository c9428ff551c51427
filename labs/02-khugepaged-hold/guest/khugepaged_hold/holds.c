/*
 * holds.c: khugepaged_hold's trace bookkeeping. Pairs khugepaged's
 * mmap_lock events into holds, buckets the walk gaps of patch 0007 and
 * takes the stops among them out of the holds that contain them.
 */
#define _GNU_SOURCE
#include "holds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tlog_add(struct tlog *l, uint64_t a, uint64_t b)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4096;
		void *v = realloc(l->v, cap * sizeof(*l->v));

		if (!v) {
			l->dropped++;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n][0] = a;
	l->v[l->n][1] = b;
	l->n++;
}

void tlog_free(struct tlog *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void holds_init(struct holds *h, uint64_t stall_ns)
{
	memset(h, 0, sizeof(*h));
	h->keep_ns = stall_ns / 2;
	for (int c = 0; c < 2; c++)
		mg_lat_init(&h->win[c].rhold, 1 << 20);
}

void holds_free(struct holds *h)
{
	for (int c = 0; c < 2; c++)
		mg_lat_free(&h->win[c].rhold);
	tlog_free(&h->holds);
	tlog_free(&h->fails);
	tlog_free(&h->stops);
}

static struct window *window_of(struct holds *h, uint64_t ts)
{
	for (int i = 0; i < 2; i++)
		if (h->win[i].start && ts >= h->win[i].start && ts < h->win[i].end)
			return &h->win[i];
	return NULL;
}

/* region: walk-gaps */
/*
 * "khugepaged-35 [001] .....  12.3: mmlocks_khugepaged_walk_gap: mm=... start_ns=N gap_ns=G"
 * (patch 0007: G ns between two checkpoints 16 VMAs apart, lock held, no
 * reschedule in between). Gaps are bucketed by length in the window of
 * their start. One of at least twice keep_ns (--stall-us) is a stop of
 * the vCPU: keep_ns of it is kept as work (a tick and its softirq take
 * ~0.1-0.25 ms under TCG) and the rest, [start + keep, start + gap), is
 * logged to be taken out of the hold that contains it.
 */
static void walk_gap(struct holds *h, const char *ev)
{
	static const uint64_t edge[HOLDS_GAP_BINS - 1] = { 250000, 500000, 1000000, 2000000, 5000000 };
	unsigned long long start, gap;
	const char *f = strstr(ev, "start_ns=");
	struct window *w;
	int b = 0;

	if (!f || sscanf(f, "start_ns=%llu gap_ns=%llu", &start, &gap) != 2)
		return;
	while (b < HOLDS_GAP_BINS - 1 && gap >= edge[b])
		b++;
	if ((w = window_of(h, start)))
		w->gaps[b]++;
	if (gap >= 2 * h->keep_ns) {
		tlog_add(&h->stops, start + h->keep_ns, gap - h->keep_ns);
		if (w) {
			w->stops++;
			w->stop_ns += gap - h->keep_ns;
			w->stop_max = gap > w->stop_max ? gap : w->stop_max;
		}
	}
}
/* endregion: walk-gaps */

/* region: hold-pairing */
void holds_line(struct holds *h, const char *line)
{
	const char *acq = strstr(line, ": mmap_lock_acquire_returned:");
	const char *rel = acq ? NULL : strstr(line, ": mmap_lock_released:");
	const char *ev = acq ? acq : rel, *gap;
	struct window *w;
	uint64_t ts;
	bool write;

	h->lines++;
	if (strstr(line, "LOST")) { /* ring buffer overrun: pairs are unknown */
		h->lost++;
		h->rheld = h->wheld = 0;
		return;
	}
	if (!ev && (gap = strstr(line, ": mmlocks_khugepaged_walk_gap:"))) {
		walk_gap(h, gap);
		return;
	}
	if (!ev || !strstr(line, "khugepaged-") || !mg_trace_ts(line, ev + 1, &ts))
		return;
	write = strstr(ev, "write=true") != NULL;
	h->last_ts = ts;
	if (acq && strstr(ev, "success=false")) {
		if ((w = window_of(h, ts)))
			w->failed_trylocks++;
		tlog_add(&h->fails, ts, 0);
	} else if (acq) {
		*(write ? &h->wheld : &h->rheld) = ts;
	} else if (!write && h->rheld) {
		if ((w = window_of(h, h->rheld)))
			mg_lat_add(&w->rhold, ts - h->rheld);
		tlog_add(&h->holds, ts, ts - h->rheld); /* keyed by release: see holds_cut() */
		h->rheld = 0;
	} else if (write && h->wheld) {
		if ((w = window_of(h, h->wheld)) && ts - h->wheld > w->whold_max)
			w->whold_max = ts - h->wheld;
		h->wheld = 0;
	}
}
/* endregion: hold-pairing */

uint64_t holds_stopped_in(const struct holds *h, uint64_t a, uint64_t b, size_t *g)
{
	const struct tlog *s = &h->stops;
	uint64_t sum = 0;

	while (*g < s->n && s->v[*g][0] + s->v[*g][1] <= a)
		(*g)++;
	for (size_t i = *g; i < s->n && s->v[i][0] < b; i++) {
		uint64_t lo = s->v[i][0] > a ? s->v[i][0] : a;
		uint64_t hi = s->v[i][0] + s->v[i][1];

		hi = hi < b ? hi : b;
		sum += hi > lo ? hi - lo : 0;
	}
	return sum;
}

size_t holds_cut(const struct holds *h, const uint64_t *b, size_t nb, struct scan *out, size_t cap)
{
	size_t n = 0, i = 0, g = 0;

	for (size_t j = 1; j < nb && n < cap; j++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		for (; i < h->holds.n && h->holds.v[i][0] <= b[j]; i++) {
			uint64_t rel = h->holds.v[i][0], len = h->holds.v[i][1], off;

			if (rel <= b[j - 1])
				continue;
			off = holds_stopped_in(h, rel - len, rel, &g);
			out[n].with_stops += off > 0;
			out[n].count++;
			out[n].max = len > out[n].max ? len : out[n].max;
			out[n].net = len - off > out[n].net ? len - off : out[n].net;
		}
	}
	return n;
}
