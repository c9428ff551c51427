/* sweep.c - seeded forced schedules of the deferred split queue (see sweep.h). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"
#include "ttest.h"

#define SW_FOLIOS	3
#define SW_CHUNKS	4
#define SW_CHUNK_PAGES	(HPAGE_PMD_NR / SW_CHUNKS)
#define SW_STEPS	16

enum { SW_FAULT, SW_ZAP, SW_SCAN, SW_UNDERUSED, SW_NR_OPS };

struct sw {
	struct ttest t;
	unsigned seed;
	bool mapped[SW_FOLIOS][SW_CHUNKS];
	/* the step run inside another */
	int point, k, arrivals;
	bool fired, busy;
	char log[400];
	int len;
	struct thp_sweep_result *r;
};

static char sw_now[480];		/* printed if the round aborts */
static struct sigaction sw_old_abrt;

static void sw_abort_handler(int sig)
{
	static const char head[] = "sweep: the round that aborted: ";

	if (write(2, head, sizeof(head) - 1) < 0 || write(2, sw_now, strlen(sw_now)) < 0 ||
	    write(2, "\n", 1) < 0)
		_exit(3);
	sigaction(SIGABRT, &sw_old_abrt, NULL);
	raise(sig);
}

static unsigned long sw_rnd(struct sw *s, unsigned long n)
{
	return (unsigned long)rand_r(&s->seed) % n;
}

static void sw_log(struct sw *s, const char *fmt, ...)
{
	va_list ap;

	if (s->len >= (int)sizeof(s->log) - 1)
		return;
	va_start(ap, fmt);
	s->len += vsnprintf(s->log + s->len, sizeof(s->log) - s->len, fmt, ap);
	va_end(ap);
	if (s->len > (int)sizeof(s->log) - 1)
		s->len = sizeof(s->log) - 1;
}

static const char *const point_name[NR_THP_HOOKS] = {
	"EARLY_CHECKED", "SCAN_ISOLATED", "UNQUEUE_PEEKED", "SCAN_FORGET",
};

/* One random step; returns false if the one it drew cannot run now. */
static bool sw_step(struct sw *s)
{
	/* Unmaps most often (they queue and free), the shrinker next. */
	static const int weight[SW_NR_OPS] = { 3, 9, 5, 3 };
	int f = sw_rnd(s, SW_FOLIOS), w = sw_rnd(s, 20), op = 0;
	struct folio *folio = &s->t.folio[f];
	int c, n = 0, chunks[SW_CHUNKS];

	while (w >= weight[op])
		w -= weight[op++];
	switch (op) {
	case SW_FAULT:
		if (!atomic_load(&folio->freed))
			return false;
		sw_log(s, "%sfault F%d", s->busy ? " [" : ", ", f);
		for (c = 0; c < SW_CHUNKS; c++)
			s->mapped[f][c] = true;
		do_anonymous_large_fault(folio);
		break;
	case SW_ZAP:
		for (c = 0; c < SW_CHUNKS; c++)
			if (s->mapped[f][c])
				chunks[n++] = c;
		if (!n || atomic_load(&folio->freed))
			return false;
		c = chunks[sw_rnd(s, n)];
		sw_log(s, "%sunmap F%d chunk %d", s->busy ? " [" : ", ", f, c);
		s->mapped[f][c] = false;	/* before: a step inside must not pick it */
		zap_present_ptes(folio, c * SW_CHUNK_PAGES, SW_CHUNK_PAGES);
		break;
	case SW_SCAN:
		n = 1 + sw_rnd(s, 3);
		sw_log(s, "%sshrinker scans %d", s->busy ? " [" : ", ", n);
		deferred_split_scan(&s->t.ds, n);
		break;
	default:
		if (atomic_load(&folio->freed))
			return false;
		folio->underused = !folio->underused;
		sw_log(s, "%sF%d %sunderused", s->busy ? " [" : ", ", f,
		       folio->underused ? "" : "not ");
		break;
	}
	return true;
}

/*
 * What the sweep knows and the flag must say: a large folio with some of
 * its chunks unmapped and some still mapped is partially mapped (so that
 * deferred_split_check() then requires it queued or isolated).
 */
static bool sw_unmarked(struct sw *s, char *why, size_t n)
{
	for (int f = 0; f < SW_FOLIOS; f++) {
		struct folio *folio = &s->t.folio[f];
		int mapped = 0;

		for (int c = 0; c < SW_CHUNKS; c++)
			mapped += s->mapped[f][c];
		if (!atomic_load(&folio->freed) && folio_test_large(folio) && mapped &&
		    mapped < SW_CHUNKS && !folio_test_partially_mapped(folio)) {
			snprintf(why, n, "F%d has %d of its %d chunks mapped but is not marked "
				 "partially mapped", f, mapped, SW_CHUNKS);
			return true;
		}
	}
	return false;
}

/* At the k-th pass through the round's hook point: another step, right here. */
static void sw_hook(struct deferred_split *ds, enum thp_hook_point p, struct folio *folio,
		    void *arg)
{
	struct sw *s = arg;

	(void)ds;
	(void)folio;
	if (s->busy || s->fired || (int)p != s->point || ++s->arrivals != s->k)
		return;
	s->fired = true;
	s->busy = true;
	for (int tries = 0; tries < 8 && !sw_step(s); tries++)
		;
	s->busy = false;
	sw_log(s, " inside, at its pass %d through THP_HOOK_%s]", s->k, point_name[p]);
	s->r->inside++;
}

void thp_sweep(unsigned seed, int rounds, struct thp_sweep_result *r)
{
	struct sigaction sa = { .sa_handler = sw_abort_handler };
	struct sw *s = calloc(1, sizeof(*s));

	memset(r, 0, sizeof(*r));
	r->ok = true;
	s->seed = seed;
	s->r = r;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, &sw_old_abrt);
	for (int i = 0; i < rounds && r->ok; i++) {
		bool early = sw_rnd(s, 4), underused_thp = sw_rnd(s, 2);
		char why[160];

		tt_init(&s->t, early, underused_thp);
		s->t.ds.hook = sw_hook;
		s->t.ds.hook_arg = s;
		memset(s->mapped, 0, sizeof(s->mapped));
		s->point = sw_rnd(s, NR_THP_HOOKS);
		s->k = 1 + sw_rnd(s, 2);
		s->arrivals = 0;
		s->fired = s->busy = false;
		s->len = snprintf(s->log, sizeof(s->log), "round %d (seed %u): early check %s, "
				  "THPs %squeued at fault; steps", i, seed, early ? "on" : "off",
				  underused_thp ? "" : "not ");
		for (int st = 0; st < SW_STEPS && r->ok; st++) {
			if (!sw_step(s))
				continue;
			r->steps++;
			snprintf(sw_now, sizeof(sw_now), "%s", s->log);
			if (deferred_split_check(&s->t.ds, s->t.folio, SW_FOLIOS, why, sizeof(why)) ||
			    sw_unmarked(s, why, sizeof(why))) {
				r->ok = false;
				snprintf(r->why, sizeof(r->why), "%s: then %s", s->log, why);
			}
		}
		r->rounds++;
		r->splits += thp_event(&s->t.ds, THP_SPLIT_PAGE);
		r->underused_splits += thp_event(&s->t.ds, THP_UNDERUSED_SPLIT_PAGE);
		r->frees += thp_event(&s->t.ds, SPLIT_QUEUE_LOCK_FREE);
		tt_fini(&s->t);
	}
	sigaction(SIGABRT, &sw_old_abrt, NULL);
	free(s);
}
