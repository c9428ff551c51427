/* stress.c - the VMA model under concurrent faults, writers and rollups (see stress.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

#define REGION		PG(1024)		/* start of the stressed range */
#define REGION_PAGES	256UL
#define MIN_ROLLUPS	10	/* per reader, while writers run */

struct stress {
	const struct stress_cfg *cfg;
	struct stress_result *res;
	struct mm_struct mm;
	atomic_int writers_left;
	atomic_int readers_pending;	/* readers short of MIN_ROLLUPS */
	pthread_barrier_t start;
	atomic_long faults, writes, rollups[2], fallbacks, drops, remote_reads[2];
	pthread_mutex_t fail_lock;
};

struct worker {
	struct stress *s;
	int id;
	unsigned seed;
	pthread_t th;
};

static void stress_fail(struct stress *s, const char *why)
{
	pthread_mutex_lock(&s->fail_lock);
	if (s->res->ok) {
		s->res->ok = false;
		snprintf(s->res->why, sizeof(s->res->why), "%s", why);
	}
	pthread_mutex_unlock(&s->fail_lock);
}

static unsigned long rnd(unsigned *seed, unsigned long n)
{
	return (unsigned long)rand_r(seed) % n;
}

static void *writer(void *p)
{
	struct worker *w = p;
	struct stress *s = w->s;

	pthread_barrier_wait(&s->start);
	/* At least cfg->ops, and until every reader overlapped with us. */
	for (long i = 0; i < s->cfg->ops || atomic_load(&s->readers_pending); i++) {
		unsigned long start = REGION + PG(rnd(&w->seed, REGION_PAGES - 8));
		unsigned long len = PG(1 + rnd(&w->seed, 8));
		vm_flags_t flags = rnd(&w->seed, 3) ? (VM_READ | VM_WRITE) : VM_READ;

		switch (rnd(&w->seed, 3)) {
		case 0:
			do_mmap(&s->mm, start, len, flags);
			break;
		case 1:
			do_munmap(&s->mm, start, len);
			break;
		default:
			do_mprotect(&s->mm, start, len, flags);	/* may be ENOMEM */
		}
		atomic_fetch_add(&s->writes, 1);
	}
	atomic_fetch_sub(&s->writers_left, 1);
	return NULL;
}

static void *faulter(void *p)
{
	struct worker *w = p;
	struct stress *s = w->s;

	pthread_barrier_wait(&s->start);
	while (atomic_load(&s->writers_left) > 0) {
		unsigned long addr = REGION + PG(rnd(&w->seed, REGION_PAGES));

		do_user_addr_fault(&s->mm, addr, rnd(&w->seed, 2));
		atomic_fetch_add(&s->faults, 1);
	}
	return NULL;
}

static void *reader(void *p)
{
	struct worker *w = p;
	struct stress *s = w->s;
	int style = w->id % 2;	/* 0: mmap_lock walk, 1: per-VMA walk */
	long n = 0;

	pthread_barrier_wait(&s->start);
	while (atomic_load(&s->writers_left) > 0) {
		struct mem_size_stats mss;

		if (style)
			smaps_rollup_vma(&s->mm, &mss);
		else
			smaps_rollup_mmap(&s->mm, &mss);
		if (mss.size > PG(REGION_PAGES))
			stress_fail(s, "a rollup reported more than the mapped region");
		if (mss.resident > mss.size)
			stress_fail(s, "a rollup reported more resident than size");
		atomic_fetch_add(&s->rollups[style], 1);
		atomic_fetch_add(&s->fallbacks, mss.nr_fallbacks);
		atomic_fetch_add(&s->drops, mss.nr_drops);
		if (++n == MIN_ROLLUPS)
			atomic_fetch_sub(&s->readers_pending, 1);
	}
	return NULL;
}

#define REMOTE_MAX	PG(12)	/* longest remote read */

static int remote_read_style(struct mm_struct *mm, int style, unsigned long addr,
			     unsigned char *buf, int len)
{
	return style ? access_remote_vm_vma(mm, addr, buf, len)
		     : access_remote_vm_mmap(mm, addr, buf, len);
}

static bool remote_bytes_ok(const unsigned char *buf, unsigned long addr, int n)
{
	for (int i = 0; i < n; i++)
		if (buf[i] != page_pattern(addr + i))
			return false;
	return true;
}

/* Reads of random ranges, some crossing VMAs, holes or the region's ends. */
static void *remote_reader(void *p)
{
	struct worker *w = p;
	struct stress *s = w->s;
	int style = w->id % 2;	/* 0: mmap_lock (6.12), 1: per-VMA (seed 004) */
	unsigned char *buf = malloc(REMOTE_MAX);
	long n = 0;

	pthread_barrier_wait(&s->start);
	while (atomic_load(&s->writers_left) > 0) {
		unsigned long addr = REGION - PG(2) + rnd(&w->seed, PG(REGION_PAGES + 4));
		int len = 1 + rnd(&w->seed, rnd(&w->seed, 4) ? PAGE_SIZE : REMOTE_MAX);
		int got = remote_read_style(&s->mm, style, addr, buf, len);

		if (got < 0 || got > len)
			stress_fail(s, "a remote read returned more than it was asked for");
		else if (!remote_bytes_ok(buf, addr, got))
			stress_fail(s, "a remote read returned bytes of the wrong page");
		atomic_fetch_add(&s->remote_reads[style], 1);
		if (++n == MIN_ROLLUPS)
			atomic_fetch_sub(&s->readers_pending, 1);
	}
	free(buf);
	return NULL;
}

/* Quiescent: both remote readers return exactly the mapped extent. */
static void check_remote(struct stress *s)
{
	unsigned char *buf = malloc(REMOTE_MAX);
	unsigned seed = s->cfg->seed;

	for (int i = 0; i < 200; i++) {
		unsigned long addr = REGION + rnd(&seed, PG(REGION_PAGES));
		int len = 1 + rnd(&seed, REMOTE_MAX), want = 0;
		struct vm_area_struct *v;

		mmap_read_lock(&s->mm);
		for (unsigned long a = addr; (long)want < len && (v = vma_lookup(&s->mm, a));
		     a = v->vm_end)
			want += v->vm_end - a;
		mmap_read_unlock(&s->mm);
		if (want > len)
			want = len;
		for (int style = 0; style < 2; style++) {
			int got = remote_read_style(&s->mm, style, addr, buf, len);

			if (got != want || !remote_bytes_ok(buf, addr, got))
				stress_fail(s, "a quiescent remote read differs from the mapped extent");
		}
	}
	free(buf);
}

/* The quiescent mm: sorted, disjoint, attached, inside the region. */
static void check_tree(struct stress *s)
{
	unsigned long prev_end = 0;

	mmap_read_lock(&s->mm);
	for (struct vm_area_struct *v = find_vma(&s->mm, 0); v;
	     v = find_vma(&s->mm, v->vm_end)) {
		if (v->vm_start >= v->vm_end || v->vm_start < prev_end)
			stress_fail(s, "VMAs overlap or are empty");
		if (v->detached || v->vm_mod)
			stress_fail(s, "a detached or half-changed VMA is in the tree");
		if (v->vm_start < REGION || v->vm_end > REGION + PG(REGION_PAGES))
			stress_fail(s, "a VMA outside the stressed region");
		prev_end = v->vm_end;
	}
	mmap_read_unlock(&s->mm);
}

static bool same(const struct mem_size_stats *a, const struct mem_size_stats *b)
{
	return a->resident == b->resident && a->size == b->size &&
	       a->vma_start == b->vma_start && a->last_vma_end == b->last_vma_end;
}

void stress_run(const struct stress_cfg *cfg, struct stress_result *res)
{
	int n = cfg->faulters + cfg->writers + cfg->readers + cfg->remote;
	struct worker *w = calloc(n, sizeof(*w));
	struct stress *s = calloc(1, sizeof(*s));
	struct mem_size_stats re, m1, m2;

	memset(res, 0, sizeof(*res));
	res->ok = true;
	s->cfg = cfg;
	s->res = res;
	pthread_mutex_init(&s->fail_lock, NULL);
	mm_init(&s->mm);
	do_mmap(&s->mm, REGION, PG(REGION_PAGES), (VM_READ | VM_WRITE));
	atomic_init(&s->writers_left, cfg->writers);
	atomic_init(&s->readers_pending, cfg->readers + cfg->remote);
	/*
	 * Warm-up, before any thread runs: a fault under the VMA lock and,
	 * with remote readers, one read each way (a page present: under the
	 * VMA lock; a page missing: the fallback). So the run's counters
	 * show every path once, whatever the scheduler does after.
	 */
	do_user_addr_fault(&s->mm, REGION, true);
	if (cfg->remote) {
		unsigned char b[2];

		access_remote_vm_vma(&s->mm, REGION, b, 1);
		access_remote_vm_vma(&s->mm, REGION + PG(1), b, 1);
	}
	pthread_barrier_init(&s->start, NULL, n);
	for (int i = 0; i < n; i++) {
		int first_remote = cfg->writers + cfg->faulters + cfg->readers;
		void *(*fn)(void *) = i < cfg->writers ? writer :
			i < cfg->writers + cfg->faulters ? faulter :
			i < first_remote ? reader : remote_reader;

		w[i] = (struct worker){ .s = s, .seed = cfg->seed * 7919 + i,
			.id = fn == remote_reader ? i - first_remote : i };
		if (pthread_create(&w[i].th, NULL, fn, &w[i]) != 0)
			abort();
	}
	for (int i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);

	check_tree(s);
	check_remote(s);
	smaps_recount(&s->mm, &re);
	smaps_rollup_mmap(&s->mm, &m1);
	smaps_rollup_vma(&s->mm, &m2);
	if (!same(&re, &m1) || !same(&re, &m2))
		stress_fail(s, "a rollup of the quiescent mm differs from the recount");
	if (m2.nr_fallbacks || m2.nr_mmap_locked)
		stress_fail(s, "the quiescent per-VMA walk took mmap_lock");
	res->faults = s->faults;
	res->writes = s->writes;
	res->rollups[0] = s->rollups[0];
	res->rollups[1] = s->rollups[1];
	res->fallbacks = s->fallbacks;
	res->drops = s->drops;
	res->remote_reads[0] = s->remote_reads[0];
	res->remote_reads[1] = s->remote_reads[1];
	for (int e = 0; e < NR_REMOTE_EVENTS; e++)
		res->remote_events[e] = remote_event(&s->mm, e);
	for (int e = 0; e < NR_VMA_LOCK_EVENTS; e++)
		res->events[e] = vma_lock_event(&s->mm, e);
	mm_destroy(&s->mm);
	pthread_mutex_destroy(&s->fail_lock);
	pthread_barrier_destroy(&s->start);
	free(s);
	free(w);
}
