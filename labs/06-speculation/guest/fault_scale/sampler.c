/* fault_scale's method (see sampler.h): the cell's workers, their start gate and the per-period sampler. */
#define _GNU_SOURCE
#include "sampler.h"
#include "mmlocks_guest.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct fs_stats fs_stats_of(const double *v, int n)
{
	struct fs_stats s = { 0, 0, 0, 0, n };
	double tmp[FS_MAX_STATS];
	double sum = 0;

	if (n <= 0 || n > (int)(sizeof(tmp) / sizeof(tmp[0]))) {
		s.n = 0;
		return s;
	}
	memcpy(tmp, v, (size_t)n * sizeof(*tmp));
	qsort(tmp, (size_t)n, sizeof(*tmp), cmp_double);
	for (int i = 0; i < n; i++)
		sum += tmp[i];
	s.mean = sum / n;
	s.median = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
	s.min = tmp[0];
	s.max = tmp[n - 1];
	return s;
}

/* ---- the workers and their start gate ------------------------------------ */

static struct fs_worker workers[FS_MAX_THREADS]; /* aligned(64): one cache line each */
static int stop;
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, pinned;

struct start {
	struct fs_worker *w;
	int cpu;
};

/* region: worker */
static void *worker(void *arg)
{
	struct start *st = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(st->cpu, &set);
	if (!pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		__atomic_add_fetch(&pinned, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&gate_lock);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock); /* opened once every thread exists */
	pthread_mutex_unlock(&gate_lock);
	return fs_worker_main(st->w); /* returns at once if stop is already set */
}
/* endregion: worker */

static void open_gate(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static long long sum_ops(int n)
{
	long long s = 0;

	for (int i = 0; i < n; i++)
		s += __atomic_load_n(&workers[i].ops, __ATOMIC_RELAXED);
	return s;
}

/* Sleep until the absolute CLOCK_MONOTONIC time `ns`; false if a stop signal came. */
static bool sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (!mg_stop_signal) {
		int e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);

		if (!e)
			return !mg_stop_signal;
		if (e != EINTR)
			return false;
	}
	return false;
}

/* region: sampler */
int fs_run_cell(struct fs_cell *c)
{
	static struct start st[FS_MAX_THREADS];
	pthread_t t[FS_MAX_THREADS];
	int started = 0, rc = 0, periods = c->warmup + c->samples;
	uint64_t t0, prev_t, period = (uint64_t)c->sample_ms * 1000000ull;
	long long prev_ops, kept0 = 0;
	uint64_t kept_t0;

	if (c->threads < 1 || c->threads > FS_MAX_THREADS || c->samples < 1 ||
	    c->samples > FS_MAX_SAMPLES || c->warmup < 0 || c->sample_ms < 1 || c->ncpu < 1)
		return -EINVAL;
	c->ops = 0;
	c->seconds = 0;
	c->err = 0;
	memset(c->rate, 0, sizeof(c->rate));
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	gate_open = 0;
	pinned = 0;
	for (; started < c->threads; started++) {
		workers[started] = (struct fs_worker){ .pattern = c->pattern, .len = c->len,
						       .fd = c->fds ? c->fds[started] : -1, .stop = &stop };
		st[started] = (struct start){ &workers[started], started % c->ncpu };
		if (pthread_create(&t[started], NULL, worker, &st[started]))
			break;
	}
	if (started < c->threads) {
		rc = -EAGAIN;
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED); /* the started ones return at once */
	}
	if (!rc && !c->warmup && c->mark)
		c->mark(c->arg, 0); /* no warm-up: the kept window is the whole cell */
	open_gate();
	t0 = prev_t = kept_t0 = mg_now_ns();
	prev_ops = 0;
	for (int k = 1; !rc && k <= periods; k++) {
		long long ops;
		uint64_t now;

		if (!sleep_until(t0 + (uint64_t)k * period)) {
			rc = -EINTR;
			break;
		}
		ops = sum_ops(c->threads);
		now = mg_now_ns();
		if (k > c->warmup)
			c->rate[k - c->warmup - 1] = now > prev_t ? (double)(ops - prev_ops) * 1e9 / (double)(now - prev_t) : 0;
		if (k == c->warmup) { /* the kept window starts here */
			kept0 = ops;
			kept_t0 = now;
			if (c->mark)
				c->mark(c->arg, 0);
		}
		prev_ops = ops;
		prev_t = now;
		if (k == periods) {
			c->ops = ops - kept0;
			c->seconds = (double)(now - kept_t0) / 1e9;
			if (c->mark)
				c->mark(c->arg, 1);
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		if (!c->err)
			c->err = workers[i].err;
	}
	c->pinned = __atomic_load_n(&pinned, __ATOMIC_RELAXED);
	if (!rc && c->err)
		rc = -c->err;
	return rc;
}
/* endregion: sampler */
