/* uprobe_scale --tag-fallbacks: the mapper of the measurement, each call tagged with whether a lookup went to mmap_read_lock() around it. */
#define _GNU_SOURCE
#include "probe.h"
#include "mmlocks_guest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* uprobe_mmap_locked, or -1 (a simple_attr file: not seekable, so open, read, close each time). */
static long long locked_now(const char *path)
{
	long long v;

	return mg_read_ll(path, &v) ? -1 : v;
}

/* region: tagged-writer */
void *us_tagged_writer(void *arg)
{
	const struct us_tagged *w = arg;
	char path[128];
	int p;
	long long last = -1; /* the count after the previous call */

	snprintf(path, sizeof(path), MG_KNOBS "/%s", us_counter_names[US_MMAP_LOCKED]);
	while ((p = __atomic_load_n(w->phase, __ATOMIC_ACQUIRE)) != MG_PHASE_STOP) {
		long long r0 = locked_now(path), r1, r2;
		uint64_t t0 = mg_now_ns(), t1, t2, t3;
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		t1 = mg_now_ns();
		r1 = locked_now(path);
		t2 = mg_now_ns();
		if (m != MAP_FAILED)
			munmap(m, 4096);
		t3 = mg_now_ns();
		r2 = locked_now(path);
		if (p >= 0 && p == __atomic_load_n(w->phase, __ATOMIC_ACQUIRE) && w->lat[p].n + 2 <= w->lat[p].cap) {
			size_t n = w->lat[p].n;
			bool bad = last < 0 || r0 < 0 || r1 < 0 || r2 < 0;

			mg_lat_add(&w->lat[p], t1 - t0);
			mg_lat_add(&w->lat[p], t3 - t2);
			/* mmap: "before" is the previous munmap, its pause and read; munmap: the mmap */
			w->tag[p][n] = bad ? US_TAG_BAD : (r0 > last) * US_TAG_BEFORE | (r1 > r0) * US_TAG_DURING;
			w->tag[p][n + 1] = bad ? US_TAG_BAD : (r1 > r0) * US_TAG_BEFORE | (r2 > r1) * US_TAG_DURING;
		}
		last = r2;
		if (w->pause_us)
			mg_sleep_us(w->pause_us);
	}
	return NULL;
}
/* endregion: tagged-writer */

void us_slow_calls(const struct mg_lat *l, const unsigned char *tag, uint64_t limit, long long out[US_SLOW_NR])
{
	memset(out, 0, sizeof(long long) * US_SLOW_NR);
	for (size_t i = 0; i < l->n; i++) {
		bool slow = l->v[i] > limit;

		out[US_SLOW] += slow;
		if (!tag || tag[i] == US_TAG_BAD)
			continue;
		out[US_CALLS_TAG + tag[i]]++;
		out[US_SLOW_TAG + tag[i]] += slow;
	}
}

uint64_t us_pct_copy(const struct mg_lat *l, double pct)
{
	struct mg_lat c = *l;
	uint64_t r;

	c.v = malloc(l->n ? l->n * sizeof(*l->v) : 1);
	if (!c.v)
		return 0;
	memcpy(c.v, l->v, l->n * sizeof(*l->v));
	r = mg_lat_pct(&c, pct);
	free(c.v);
	return r;
}
