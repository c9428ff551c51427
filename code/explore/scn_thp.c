/* scn_thp.c - chapter 7: the deferred-split shrinker against a partial unmap; 6.12's unlocked drop loses the folio, the locked drop does not. */
#include "explore.h"
#include "thp.h"

#include <stdlib.h>
#include <string.h>

/*
 * One PMD-size anonymous folio, queued at fault as "maybe underused" (not
 * partially mapped; thp_underused() will say no). K runs the shrinker;
 * U unmaps the folio's first 16 pages (a partial unmap). The failure: at
 * the end the folio is large and partially mapped (by its page counts,
 * whatever PG_partially_mapped says), yet on no queue: a lost folio no
 * shrinker will ever split; or deferred_split_check() finds the queue's
 * invariants broken.
 *
 * Broken variant: code/thp's deferred_split_scan() with
 * scan_forget_unlocked set, 6.12.117's order (mm/huge_memory.c): a folio
 * the scan does not split and finds not partially mapped is dropped from
 * the scan's private list with an unlocked list_del_init(). If U's
 * deferred_split_folio() sets partially_mapped between that test and the
 * drop (THP_HOOK_SCAN_FORGET marks the window), it finds the folio on a
 * list (the private one) and does not queue it. Correct variant: the
 * model's default, which forgets folios under split_queue_lock after
 * testing the flag there.
 *
 * No yield point lies inside split_queue_lock, so no thread ever finds
 * the spinlock held and spins.
 */
#define UNMAP_PAGES 16

struct thp_ctx {
	struct deferred_split ds;
	struct folio folio;
	bool locked_drop;
};

static const char *hook_name(enum thp_hook_point p)
{
	switch (p) {
	case THP_HOOK_EARLY_CHECKED:	return "rmap: EARLY_CHECKED";
	case THP_HOOK_SCAN_ISOLATED:	return "scan: SCAN_ISOLATED";
	case THP_HOOK_UNQUEUE_PEEKED:	return "unqueue: UNQUEUE_PEEKED";
	case THP_HOOK_SCAN_FORGET:	return "scan: SCAN_FORGET";
	default:			return "?";
	}
}

static void thp_ex_hook(struct deferred_split *ds, enum thp_hook_point p,
			struct folio *folio, void *arg)
{
	(void)ds;
	(void)folio;
	(void)arg;
	ex_yield(hook_name(p), EX_MODEL);
}

static void *setup(bool locked_drop)
{
	struct thp_ctx *c = aligned_alloc(64, sizeof(*c));

	if (!c)
		abort();
	memset(c, 0, sizeof(*c));
	deferred_split_init(&c->ds);
	c->ds.split_underused_thp = true;	/* 6.12's default */
	if (folio_init(&c->folio, &c->ds, HPAGE_PMD_ORDER) != 0)
		abort();
	c->folio.underused = false;
	do_anonymous_large_fault(&c->folio);	/* queued, not partially mapped */
	c->ds.scan_forget_unlocked = !locked_drop;	/* 6.12.117's order */
	c->ds.hook = thp_ex_hook;
	c->ds.hook_arg = c;
	c->locked_drop = locked_drop;
	return c;
}

static void *setup_unlocked(const struct ex_scenario *sc) { (void)sc; return setup(false); }
static void *setup_locked(const struct ex_scenario *sc) { (void)sc; return setup(true); }

/* region: explore-thp-threads */
static void shrinker(void *p)
{
	struct thp_ctx *c = p;

	deferred_split_scan(&c->ds, 0);
}

static void unmapper(void *p)
{
	struct thp_ctx *c = p;

	folio_remove_rmap_ptes(&c->folio, 0, UNMAP_PAGES);
}
/* endregion: explore-thp-threads */

static const char *check(void *p, char *buf, size_t len)
{
	struct thp_ctx *c = p;
	int mapped = atomic_load(&c->folio._nr_pages_mapped);
	char why[160];

	/* What the pages say, whatever the flag says. */
	if (folio_test_large(&c->folio) && mapped > 0 && mapped < HPAGE_PMD_NR &&
	    list_empty(&c->folio._deferred_list)) {
		snprintf(buf, len, "lost folio: %d of %d pages mapped, on no queue "
			 "(partially_mapped=%d)", mapped, HPAGE_PMD_NR,
			 folio_test_partially_mapped(&c->folio));
		return buf;
	}
	if (deferred_split_check(&c->ds, &c->folio, 1, why, sizeof(why)) != 0) {
		snprintf(buf, len, "lost folio: %s", why);
		return buf;
	}
	return NULL;
}

static void state(void *p, char *buf, size_t len)
{
	struct thp_ctx *c = p;
	const char *where = list_empty(&c->folio._deferred_list) ? "none" :
		c->folio.isolated ? "scan's list" : "split_queue";

	snprintf(buf, len, "partially_mapped=%d list=%s len=%lu",
		 folio_test_partially_mapped(&c->folio), where, c->ds.split_queue_len);
}

static void teardown(void *p)
{
	struct thp_ctx *c = p;

	folio_destroy(&c->folio);
	free(c);
}

#define THP_SCENARIO(nm, sum, setupfn, found)				\
	{								\
		.name = nm, .summary = sum,				\
		.bug = "a partially mapped folio ends up on no queue",	\
		.expect_found = found, .default_bound = 3, .nthreads = 2, \
		.thread_name = { "K", "U" },				\
		.start_mask = { EX_MODEL, EX_MODEL },			\
		.setup = setupfn, .body = { shrinker, unmapper },	\
		.check = check, .state = state, .teardown = teardown,	\
	}

const struct ex_scenario scn_thp_unlocked = THP_SCENARIO("thp-unlocked-drop",
	"6.12's deferred_split_scan() (unlocked drop) vs a partial unmap",
	setup_unlocked, true);
const struct ex_scenario scn_thp_locked = THP_SCENARIO("thp-locked-drop",
	"the model's deferred_split_scan() (drop under the lock) vs a partial unmap",
	setup_locked, false);
