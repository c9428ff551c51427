/* scenarios.c - forced orders shared by code/thp's tests and lab 07's grader. */
#include <stdio.h>
#include <string.h>

#include "scenarios.h"
#include "ttest.h"

static void fail(struct scn_result *r, const char *why)
{
	if (r->ok)
		snprintf(r->why, sizeof(r->why), "%s", why);
	r->ok = false;
}

static void finish(struct ttest *t, struct folio *f, struct scn_result *r)
{
	r->queued = tt_queued(t);
	r->len = t->ds.split_queue_len;
	r->lock_partial = thp_event(&t->ds, DEFERRED_SPLIT_LOCK_TAKEN);
	r->lock_free = thp_event(&t->ds, SPLIT_QUEUE_LOCK_FREE);
	r->deferred_split_page = thp_event(&t->ds, THP_DEFERRED_SPLIT_PAGE);
	r->split_page = thp_event(&t->ds, THP_SPLIT_PAGE);
	r->partially_mapped = folio_test_partially_mapped(f);
	r->large = folio_test_large(f);
	r->freed = atomic_load(&f->freed);
	r->check_ok = deferred_split_check(&t->ds, t->folio, TT_FOLIOS, r->check_why,
					   sizeof(r->check_why)) == 0;
}

static void start(struct ttest *t, struct scn_result *r, bool early_check, bool at_fault)
{
	memset(r, 0, sizeof(*r));
	r->ok = true;
	tt_init(t, early_check, at_fault);
}

struct zap_arg {
	struct folio *f;
	int first, nr;
};

static void zap_fn(void *arg)
{
	struct zap_arg *z = arg;

	zap_present_ptes(z->f, z->first, z->nr);
}

/* CPU 1 zaps [first, first + nr) of f and stops at point; false if it did not. */
static bool zap_and_stop(struct ttest *t, struct tthread *th, struct zap_arg *z,
			 enum thp_hook_point point, struct scn_result *r)
{
	tt_stop_at(t, point, 1);
	tt_spawn_for(t, th, 1, zap_fn, z);
	if (!tt_wait_stopped(t)) {
		fail(r, atomic_load(&th->done) ? "CPU 1 returned without reaching its hook point"
					       : "CPU 1 never reached its hook point");
		tt_release(t);
		tt_join(th);
		return false;
	}
	return true;
}

static void go_on(struct ttest *t, struct tthread *th, struct scn_result *r)
{
	tt_release(t);
	if (!tt_join(th))
		fail(r, "CPU 1 did not finish after it was released (a deadlock?)");
}

void scn_two_cpus(bool early_check, struct scn_result *r)
{
	struct ttest t;
	struct folio *f = &t.folio[0];
	struct zap_arg z = { f, 0, 8 };
	struct tthread th;

	start(&t, r, early_check, false);
	do_anonymous_large_fault(f);
	if (zap_and_stop(&t, &th, &z, THP_HOOK_EARLY_CHECKED, r)) {
		thp_set_cpu(2);
		zap_present_ptes(f, 8, 8);	/* CPU 2, start to end */
		go_on(&t, &th, r);
	}
	finish(&t, f, r);
	zap_present_ptes(f, 16, 8);
	r->lock_after = thp_event(&t.ds, DEFERRED_SPLIT_LOCK_TAKEN);
	tt_fini(&t);
}

void scn_shrink_between_check_and_lock(bool underused, struct scn_result *r)
{
	struct ttest t;
	struct folio *f = &t.folio[0];
	struct zap_arg z = { f, 0, 8 };
	struct tthread th;

	start(&t, r, true, true);
	do_anonymous_large_fault(f);	/* queued, not partially mapped */
	f->underused = underused;
	if (zap_and_stop(&t, &th, &z, THP_HOOK_EARLY_CHECKED, r)) {
		deferred_split_scan(&t.ds, 0);
		go_on(&t, &th, r);
	}
	finish(&t, f, r);
	tt_fini(&t);
}

void scn_free_queued(struct scn_result *r)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	start(&t, r, true, false);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, 8);
	zap_present_ptes(f, 8, HPAGE_PMD_NR - 8);
	finish(&t, f, r);
	tt_fini(&t);
}

void scn_free_unqueued(struct scn_result *r)
{
	struct ttest t;
	struct folio *f = &t.folio[0];

	start(&t, r, true, false);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, HPAGE_PMD_NR);
	finish(&t, f, r);
	tt_fini(&t);
}

void scn_free_after_shrinker_dropped(struct scn_result *r)
{
	struct ttest t;
	struct folio *f = &t.folio[0];
	struct zap_arg z = { f, 8, HPAGE_PMD_NR - 8 };
	struct tthread th;

	start(&t, r, true, false);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, 8);	/* queued */
	if (zap_and_stop(&t, &th, &z, THP_HOOK_UNQUEUE_PEEKED, r)) {
		if (atomic_load(&f->_refcount) != 0)
			fail(r, "CPU 1 stopped in the free path with references left");
		deferred_split_scan(&t.ds, 0);
		go_on(&t, &th, r);
	}
	finish(&t, f, r);
	tt_fini(&t);
}

static void scan_fn(void *arg)
{
	deferred_split_scan(arg, 0);
}

void scn_unmap_during_scan(struct scn_result *r)
{
	struct ttest t;
	struct folio *f = &t.folio[0];
	struct tthread th;

	start(&t, r, true, false);
	do_anonymous_large_fault(f);
	zap_present_ptes(f, 0, 8);	/* queued */
	tt_stop_at(&t, THP_HOOK_SCAN_ISOLATED, 1);
	tt_spawn_for(&t, &th, 1, scan_fn, &t.ds);
	if (!tt_wait_stopped(&t)) {
		fail(r, "the shrinker never reached its hook point");
		tt_release(&t);
		tt_join(&th);
	} else {
		zap_present_ptes(f, 8, HPAGE_PMD_NR - 8);
		if (atomic_load(&f->freed))
			fail(r, "F was freed while the shrinker held a reference");
		go_on(&t, &th, r);
	}
	finish(&t, f, r);
	tt_fini(&t);
}

void scn_partial_unmap_before_forget(bool unlocked, bool early_check,
				     struct scn_result *r)
{
	struct ttest t;
	struct folio *f = &t.folio[0];
	struct tthread th;

	start(&t, r, early_check, true);
	t.ds.scan_forget_unlocked = unlocked;
	do_anonymous_large_fault(f);	/* queued as a possibly underused THP */
	tt_stop_at(&t, THP_HOOK_SCAN_FORGET, 1);
	tt_spawn_for(&t, &th, 1, scan_fn, &t.ds);
	if (!tt_wait_stopped(&t)) {
		fail(r, "the shrinker never reached the point where it forgets F");
		tt_release(&t);
		tt_join(&th);
	} else {
		zap_present_ptes(f, 0, 8);	/* CPU 0: the first partial unmap */
		if (!folio_test_partially_mapped(f))
			fail(r, "CPU 0's partial unmap did not mark F");
		go_on(&t, &th, r);
	}
	finish(&t, f, r);
	zap_present_ptes(f, 16, 8);	/* a later partial unmap */
	r->lock_after = thp_event(&t.ds, DEFERRED_SPLIT_LOCK_TAKEN);
	r->queued_after = tt_on_queue(&t, f);
	zap_present_ptes(f, 8, 8);
	zap_present_ptes(f, 24, HPAGE_PMD_NR - 24);	/* F is freed */
	if (!atomic_load(&f->freed))
		fail(r, "F was not freed when its last PTE went");
	r->lock_free_after = thp_event(&t.ds, SPLIT_QUEUE_LOCK_FREE);
	tt_fini(&t);
}
