/* uprobe_scale --tag-fallbacks: the mapper of the measurement, each call tagged with whether a lookup went to mmap_read_lock() around it. */
#define _GNU_SOURCE
#include "probe.h"
#include "mmlocks_guest.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* uprobe_mmap_locked through an open descriptor: a pread at 0 reads the sum afresh. */
static long long locked_now(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atoll(buf);
}

/* region: tagged-writer */
void *us_tagged_writer(void *arg)
{
	const struct us_tagged *w = arg;
	char path[128];
	int fd, p;
	long long prev = -1;

	snprintf(path, sizeof(path), MG_KNOBS "/%s", us_counter_names[US_MMAP_LOCKED]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	while ((p = __atomic_load_n(w->phase, __ATOMIC_ACQUIRE)) != MG_PHASE_STOP) {
		long long before = locked_now(fd), after;
		uint64_t t0 = mg_now_ns(), t1, t2;
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		t1 = mg_now_ns();
		if (m != MAP_FAILED)
			munmap(m, 4096);
		t2 = mg_now_ns();
		after = locked_now(fd);
		if (p >= 0 && p == __atomic_load_n(w->phase, __ATOMIC_ACQUIRE) && w->lat[p].n + 2 <= w->lat[p].cap) {
			/* From before the previous pair (and its pause) to after this one. */
			unsigned char tag = prev < 0 || before < 0 || after < 0 ? 2 : after > prev;
			size_t n = w->lat[p].n;

			mg_lat_add(&w->lat[p], t1 - t0);
			mg_lat_add(&w->lat[p], t2 - t1);
			w->tag[p][n] = w->tag[p][n + 1] = tag;
		}
		prev = before;
		if (w->pause_us)
			mg_sleep_us(w->pause_us);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}
/* endregion: tagged-writer */

void us_slow_calls(const struct mg_lat *l, const unsigned char *tag, uint64_t limit, long long out[US_SLOW_NR])
{
	memset(out, 0, sizeof(long long) * US_SLOW_NR);
	for (size_t i = 0; i < l->n; i++) {
		bool slow = l->v[i] > limit;

		out[US_SLOW] += slow;
		if (!tag || tag[i] > 1)
			continue;
		out[tag[i] ? US_TAGGED : US_UNTAGGED]++;
		out[tag[i] ? US_SLOW_TAGGED : US_SLOW_UNTAGGED] += slow;
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
