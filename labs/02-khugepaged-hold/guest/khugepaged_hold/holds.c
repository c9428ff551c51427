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
	for (int c = 0; c < HOLDS_CFGS; c++) {
		mg_lat_init(&h->win[c].rhold, 1 << 20);
		mg_lat_init(&h->win[c].wwait, 1 << 18);
	}
}

void holds_free(struct holds *h)
{
	for (int c = 0; c < HOLDS_CFGS; c++) {
		mg_lat_free(&h->win[c].rhold);
		mg_lat_free(&h->win[c].wwait);
	}
	tlog_free(&h->holds);
	tlog_free(&h->fails);
	tlog_free(&h->stops);
	tlog_free(&h->irqs);
	tlog_free(&h->wwaits);
}

bool holds_open(struct holds *h, int cfg, uint64_t ts)
{
	if (h->nspan == HOLDS_SPANS || cfg < 0 || cfg >= HOLDS_CFGS)
		return false;
	h->span[h->nspan] = (struct span){ ts, UINT64_MAX, cfg, 0 };
	h->nspan++;
	return true;
}

void holds_close(struct holds *h, uint64_t ts)
{
	struct span *s = h->nspan ? &h->span[h->nspan - 1] : NULL;

	if (s && s->end == UINT64_MAX) {
		s->end = ts;
		h->win[s->cfg].seconds_ns += ts - s->start;
	}
}

static struct span *span_of(struct holds *h, uint64_t ts)
{
	for (size_t i = h->nspan; i-- > 0;)
		if (ts >= h->span[i].start && ts < h->span[i].end)
			return &h->span[i];
	return NULL;
}

static struct window *window_of(struct holds *h, uint64_t ts)
{
	struct span *s = span_of(h, ts);

	return s ? &h->win[s->cfg] : NULL;
}

/*
 * Interrupt handlers on khugepaged's CPU while khugepaged is current (the
 * irq, irq_vectors events: irq_handler_entry, softirq_entry,
 * local_timer_entry, ... and their _exit), outermost entry to exit.
 */
static void irq_event(struct holds *h, const char *line, const char *ev, bool entry)
{
	uint64_t ts;

	while (ev > line && ev[-1] != ' ')
		ev--;
	if (!mg_trace_ts(line, ev, &ts))
		return;
	if (entry && h->irq_depth++ == 0)
		h->irq_start = ts;
	else if (!entry && h->irq_depth > 0 && --h->irq_depth == 0)
		tlog_add(&h->irqs, h->irq_start, ts - h->irq_start);
}

/* How much of [a, b) the logged interrupt handlers cover (newest first: they end before b). */
static uint64_t irq_in(const struct holds *h, uint64_t a, uint64_t b)
{
	uint64_t sum = 0;

	for (size_t i = h->irqs.n; i-- > 0;) {
		uint64_t lo = h->irqs.v[i][0], hi = lo + h->irqs.v[i][1];

		if (hi <= a)
			break;
		lo = lo > a ? lo : a;
		hi = hi < b ? hi : b;
		sum += hi > lo ? hi - lo : 0;
	}
	return sum;
}

/* Log [a, b) less the interrupt handlers in it as stop pieces; their total. */
static uint64_t log_stop(struct holds *h, uint64_t a, uint64_t b)
{
	size_t i = h->irqs.n;
	uint64_t sum = 0;

	while (i > 0 && h->irqs.v[i - 1][0] + h->irqs.v[i - 1][1] > a)
		i--;
	for (; a < b; i++) {
		uint64_t lo = i < h->irqs.n ? h->irqs.v[i][0] : b;
		uint64_t hi = i < h->irqs.n ? lo + h->irqs.v[i][1] : b;

		lo = lo < b ? lo : b;
		if (lo > a) {
			tlog_add(&h->stops, a, lo - a);
			sum += lo - a;
		}
		a = hi > a ? hi : a;
		if (i >= h->irqs.n)
			break;
	}
	return sum;
}

/* region: walk-gaps */
/*
 * "khugepaged-35 [001] .....  12.3: mmlocks_khugepaged_walk_gap: mm=... start_ns=N gap_ns=G"
 * (patch 0007: G ns between two checkpoints 16 VMAs apart, lock held, no
 * reschedule in between). Gaps are bucketed by length in the window of
 * their start. One of at least twice keep_ns (--stall-us) is a stop of
 * the vCPU: keep_ns of it is kept as work, and of the rest, [start + keep,
 * start + gap), the time no interrupt handler ran on khugepaged's CPU is
 * logged to be taken out of the hold that contains it. Interrupt work is
 * wait for a writer as much as the walk is: it is never taken out.
 */
static void walk_gap(struct holds *h, const char *ev)
{
	static const uint64_t edge[HOLDS_GAP_BINS - 1] = { 250000, 500000, 1000000, 2000000, 5000000 };
	unsigned long long start, gap;
	const char *f = strstr(ev, "start_ns=");
	struct window *w;
	uint64_t out;
	int b = 0;

	if (!f || sscanf(f, "start_ns=%llu gap_ns=%llu", &start, &gap) != 2)
		return;
	while (b < HOLDS_GAP_BINS - 1 && gap >= edge[b])
		b++;
	if ((w = window_of(h, start)))
		w->gaps[b]++;
	if (gap >= 2 * h->keep_ns) {
		out = log_stop(h, start + h->keep_ns, start + gap);
		if (w) {
			w->stops++;
			w->stop_ns += out;
			w->stop_gap_ns += gap;
			w->stop_irq_ns += irq_in(h, start, start + gap);
			w->stop_max = gap > w->stop_max ? gap : w->stop_max;
		}
	}
}
/* endregion: walk-gaps */

/* region: hold-pairing */
/* The pid of a trace line's task ("   comm-PID   [001] ..."); -1 if none. */
static long line_pid(const char *line)
{
	const char *p = strstr(line, " [");
	long pid = 0, mul = 1;

	if (!p)
		return -1;
	while (p > line && p[-1] == ' ')
		p--;
	for (; p > line && p[-1] >= '0' && p[-1] <= '9'; p--, mul *= 10)
		pid += (p[-1] - '0') * mul;
	return p > line && p[-1] == '-' && mul > 1 ? pid : -1;
}

/* The writer thread's write waits: start_locking -> acquire_returned(success). */
static void writer_line(struct holds *h, const char *line)
{
	const char *st = strstr(line, ": mmap_lock_start_locking:");
	const char *acq = st ? NULL : strstr(line, ": mmap_lock_acquire_returned:");
	uint64_t ts;

	if ((!st && !acq) || !strstr(line, "write=true") || !mg_trace_ts(line, (st ? st : acq) + 1, &ts))
		return;
	if (st) {
		h->wstart = ts;
	} else if (h->wstart) {
		if (strstr(acq, "success=true"))
			tlog_add(&h->wwaits, h->wstart, ts - h->wstart);
		h->wstart = 0;
	}
}

void holds_line(struct holds *h, const char *line)
{
	const char *acq = strstr(line, ": mmap_lock_acquire_returned:");
	const char *rel = acq ? NULL : strstr(line, ": mmap_lock_released:");
	const char *ev = acq ? acq : rel, *gap, *irq;
	struct window *w;
	uint64_t ts;
	bool write;

	h->lines++;
	if (strstr(line, "LOST")) { /* ring buffer overrun: pairs are unknown */
		h->lost++;
		h->rheld = h->wheld = h->wstart = 0;
		h->irq_depth = 0;
		return;
	}
	if (h->writer_pid > 0 && line_pid(line) == h->writer_pid) {
		writer_line(h, line);
		return;
	}
	if (!strstr(line, "khugepaged-"))
		return;
	if (!ev && (gap = strstr(line, ": mmlocks_khugepaged_walk_gap:"))) {
		walk_gap(h, gap);
		return;
	}
	if (!ev && ((irq = strstr(line, "_entry: ")) || (irq = strstr(line, "_exit: ")))) {
		irq_event(h, line, irq, irq[1] == 'e' && irq[2] == 'n');
		return;
	}
	if (!ev || !mg_trace_ts(line, ev + 1, &ts))
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

void holds_writer_waits(struct holds *h, size_t s, uint64_t from)
{
	struct span *sp = &h->span[s];

	for (size_t i = 0; i < h->wwaits.n; i++) {
		uint64_t t = h->wwaits.v[i][0], len = h->wwaits.v[i][1];

		if (t < from || t < sp->start || t >= sp->end)
			continue;
		mg_lat_add(&h->win[sp->cfg].wwait, len);
		sp->wwait_max = len > sp->wwait_max ? len : sp->wwait_max;
	}
}

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
