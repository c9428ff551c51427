/* stress.c - threads partially unmapping shared folios while the shrinker scans; invariants checked during and after. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"
#include "../thp.h"

/* A thread that cannot start would leave the others waiting: stop here. */
static void die(const char *what)
{
	perror(what);
	exit(1);
}

/*
 * A slot is a folio and a claim counter: a thread claims one of its
 * `hits` page ranges by bumping the counter, zaps it, and so several
 * threads unmap one folio at once; the zap that drops the last reference
 * frees it. A thread that finds a slot freed faults it in again (the
 * busy flag elects one) and then opens its claims (release). Nobody
 * blocks anybody, so the run cannot hang.
 */
struct slot {
	struct folio folio;
	atomic_int claim;	/* next range to unmap; >= hits: none */
	atomic_bool busy;	/* a thread is faulting it in */
};

struct stress {
	const struct stress_cfg *cfg;
	struct deferred_split ds;
	struct slot *slot;
	atomic_bool stop, bad;
	atomic_long faults, scans, checks;
	char why[200];
	pthread_mutex_t why_lock;
};

static void report(struct stress *s, const char *why)
{
	pthread_mutex_lock(&s->why_lock);
	if (!atomic_exchange(&s->bad, true))
		snprintf(s->why, sizeof(s->why), "%s", why);
	pthread_mutex_unlock(&s->why_lock);
}

static unsigned long next_rand(unsigned long *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

struct worker {
	struct stress *s;
	int cpu;
	long zaps;
	pthread_t th;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	const struct stress_cfg *c = s->cfg;
	int per_hit = (1 << c->order) / c->hits;
	unsigned long x = 0x9e3779b97f4a7c15UL * (w->cpu + 1);

	thp_set_cpu(w->cpu);
	while (w->zaps < c->ops && !atomic_load(&s->bad)) {
		struct slot *sl = &s->slot[next_rand(&x) % c->folios];
		int hit = atomic_load_explicit(&sl->claim, memory_order_acquire);

		if (atomic_load_explicit(&sl->folio.freed, memory_order_acquire)) {
			if (!atomic_exchange(&sl->busy, true)) {
				if (atomic_load_explicit(&sl->folio.freed, memory_order_acquire)) {
					do_anonymous_large_fault(&sl->folio);
					atomic_fetch_add(&s->faults, 1);
					atomic_store_explicit(&sl->claim, 0, memory_order_release);
				}
				atomic_store(&sl->busy, false);
			}
			continue;
		}
		while (hit < c->hits &&
		       !atomic_compare_exchange_weak_explicit(&sl->claim, &hit, hit + 1,
							      memory_order_acquire,
							      memory_order_acquire))
			;
		if (hit >= c->hits)
			continue;
		zap_present_ptes(&sl->folio, hit * per_hit, per_hit);
		w->zaps++;
	}
	return NULL;
}

static void *shrinker_main(void *arg)
{
	struct stress *s = arg;
	char why[160];

	thp_set_cpu(THP_NR_CPUS - 1);
	do {	/* at least once, however late this thread starts */
		deferred_split_scan(&s->ds, 1 + atomic_load(&s->scans) % 8);
		if (atomic_fetch_add(&s->scans, 1) % 16 == 0) {
			atomic_fetch_add(&s->checks, 1);
			if (deferred_split_check(&s->ds, NULL, 0, why, sizeof(why)))
				report(s, why);
		}
	} while (!atomic_load(&s->stop) && !atomic_load(&s->bad));
	return NULL;
}

void stress_run(const struct stress_cfg *cfg, struct stress_result *res)
{
	struct stress s = { .cfg = cfg };
	struct worker *w = calloc(cfg->threads, sizeof(*w));
	pthread_t shrinker;
	char why[160];

	memset(res, 0, sizeof(*res));
	s.slot = calloc(cfg->folios, sizeof(*s.slot));
	if (!w || !s.slot) {
		snprintf(res->why, sizeof(res->why), "out of memory");
		free(w);
		free(s.slot);
		return;
	}
	pthread_mutex_init(&s.why_lock, NULL);
	deferred_split_init(&s.ds);
	deferred_split_set_early_check(&s.ds, cfg->early_check);
	/*
	 * Only partial unmaps queue folios here: a folio queued at fault and
	 * partially unmapped while the shrinker holds it on its private list
	 * is a case this model settles by its own rule (shrinker.c).
	 */
	s.ds.split_underused_thp = false;
	for (int i = 0; i < cfg->folios; i++) {
		if (folio_init(&s.slot[i].folio, &s.ds, cfg->order)) {
			snprintf(res->why, sizeof(res->why), "bad order or out of memory");
			goto out;
		}
		atomic_init(&s.slot[i].claim, cfg->hits);
	}
	/*
	 * Warm-up, before any thread runs: slot 0 faulted in and two of its
	 * ranges unmapped, so one partial unmap queues it and the next finds
	 * it marked (with the early check on, without the lock). The counters
	 * show both, whatever the scheduler does after.
	 */
	if (cfg->hits >= 3) {
		int per_hit = (1 << cfg->order) / cfg->hits;

		do_anonymous_large_fault(&s.slot[0].folio);
		atomic_fetch_add(&s.faults, 1);
		zap_present_ptes(&s.slot[0].folio, 0, per_hit);
		zap_present_ptes(&s.slot[0].folio, per_hit, per_hit);
		atomic_store(&s.slot[0].claim, 2);
	}
	if (cfg->shrinker)
		if (pthread_create(&shrinker, NULL, shrinker_main, &s))
			die("pthread_create");
	for (int i = 0; i < cfg->threads; i++) {
		w[i] = (struct worker){ .s = &s, .cpu = i + 1 };
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]))
			die("pthread_create");
	}
	for (int i = 0; i < cfg->threads; i++) {
		pthread_join(w[i].th, NULL);
		res->zaps += w[i].zaps;
	}
	atomic_store(&s.stop, true);
	if (cfg->shrinker)
		pthread_join(shrinker, NULL);

	/* Quiescent: the full check, lost folios included (one slot at a time). */
	for (int i = 0; i < cfg->folios && !atomic_load(&s.bad); i++)
		if (deferred_split_check(&s.ds, &s.slot[i].folio, 1, why, sizeof(why)))
			report(&s, why);
	res->ok = !atomic_load(&s.bad);
	snprintf(res->why, sizeof(res->why), "%s", res->ok ? "" : s.why);
	res->faults = atomic_load(&s.faults);
	res->partial_unmaps = thp_event(&s.ds, DEFERRED_SPLIT_PARTIAL_UNMAPS);
	res->lock_partial = thp_event(&s.ds, DEFERRED_SPLIT_LOCK_TAKEN);
	res->splits = thp_event(&s.ds, THP_SPLIT_PAGE);
	res->scans = atomic_load(&s.scans);
	res->checks = atomic_load(&s.checks);
out:
	for (int i = 0; i < cfg->folios; i++)
		folio_destroy(&s.slot[i].folio);
	pthread_mutex_destroy(&s.why_lock);
	free(s.slot);
	free(w);
}
