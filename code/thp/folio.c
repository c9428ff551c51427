/* folio.c - folios and their queue: fault, reference counts, free, per-CPU counters, the invariant checker. */
#include <stdio.h>
#include <stdlib.h>

#include "thp.h"

static _Thread_local int this_cpu;

void thp_set_cpu(int cpu)
{
	this_cpu = cpu % THP_NR_CPUS;
}

int thp_this_cpu(void)
{
	return this_cpu;
}

void count_thp_event(struct deferred_split *ds, enum thp_event e)
{
	atomic_fetch_add_explicit(&ds->pcpu[this_cpu].ev[e], 1, memory_order_relaxed);
}

long thp_event(struct deferred_split *ds, enum thp_event e)
{
	long sum = 0;

	for (int cpu = 0; cpu < THP_NR_CPUS; cpu++)
		sum += atomic_load_explicit(&ds->pcpu[cpu].ev[e], memory_order_relaxed);
	return sum;
}

void thp_events_reset(struct deferred_split *ds)
{
	for (int cpu = 0; cpu < THP_NR_CPUS; cpu++)
		for (int e = 0; e < NR_THP_EVENTS; e++)
			atomic_store(&ds->pcpu[cpu].ev[e], 0);
}

const char *thp_event_name(enum thp_event e)
{
	static const char *const names[NR_THP_EVENTS] = {
		[THP_DEFERRED_SPLIT_PAGE] = "thp_deferred_split_page",
		[THP_SPLIT_PAGE] = "thp_split_page",
		[THP_UNDERUSED_SPLIT_PAGE] = "thp_underused_split_page",
		[DEFERRED_SPLIT_PARTIAL_UNMAPS] = "deferred_split_partial_unmaps",
		[DEFERRED_SPLIT_LOCK_TAKEN] = "deferred_split_lock_taken",
		[SPLIT_QUEUE_LOCK_FAULT] = "split_queue_lock_fault",
		[SPLIT_QUEUE_LOCK_FREE] = "split_queue_lock_free",
		[SPLIT_QUEUE_LOCK_SCAN] = "split_queue_lock_scan",
		[SPLIT_QUEUE_LOCK_CONTENDED] = "split_queue_lock_contended",
	};
	return (unsigned)e < NR_THP_EVENTS ? names[e] : "?";
}

void deferred_split_init(struct deferred_split *ds)
{
	spin_lock_init(&ds->split_queue_lock);
	INIT_LIST_HEAD(&ds->split_queue);
	ds->split_queue_len = 0;
	atomic_init(&ds->early_check, true);
	ds->split_underused_thp = true;
	ds->scan_forget_unlocked = false;
	ds->nr_isolated = 0;
	ds->check_gen = 0;
	ds->hook = NULL;
	ds->hook_arg = NULL;
	thp_events_reset(ds);
}

void deferred_split_set_early_check(struct deferred_split *ds, bool on)
{
	atomic_store(&ds->early_check, on);
}

int folio_init(struct folio *folio, struct deferred_split *ds, unsigned int order)
{
	if (order < 2 || order > HPAGE_PMD_ORDER)
		return -1;
	folio->_mapcount = malloc(sizeof(atomic_int) << order);
	if (!folio->_mapcount)
		return -1;
	for (int i = 0; i < 1 << order; i++)
		atomic_init(&folio->_mapcount[i], -1);
	folio->order = order;
	folio->ds = ds;
	atomic_init(&folio->flags, 0);
	atomic_init(&folio->_refcount, 0);
	atomic_init(&folio->_nr_pages_mapped, 0);
	INIT_LIST_HEAD(&folio->_deferred_list);
	folio->underused = false;
	folio->isolated = false;
	folio->check_mark = 0;
	atomic_init(&folio->freed, true);
	return 0;
}

void folio_destroy(struct folio *folio)
{
	free(folio->_mapcount);
	folio->_mapcount = NULL;
}

/*
 * A freed folio comes back as a fresh large anonymous folio, every page
 * mapped by one PTE that holds one reference (as after
 * __split_huge_pmd(), which adds a reference per PTE). The kernel maps
 * a new PMD-size THP with one PMD; a partial MADV_DONTNEED first splits
 * that PMD into PTEs (__split_huge_pmd()), which is where the model
 * starts. Like __do_huge_pmd_anonymous_page(), a new PMD-size folio goes
 * on the queue at once, as a candidate for the underused-THP shrinker
 * (deferred_split_folio(folio, false)), if split_underused_thp is set.
 */
/* region: fault */
void do_anonymous_large_fault(struct folio *folio)
{
	int nr = folio_nr_pages(folio);

	for (int i = 0; i < nr; i++)
		atomic_store_explicit(&folio->_mapcount[i], 0, memory_order_relaxed);
	atomic_store_explicit(&folio->_nr_pages_mapped, nr, memory_order_relaxed);
	atomic_store_explicit(&folio->flags, (1UL << PG_head) | (1UL << PG_anon),
			      memory_order_relaxed);
	atomic_store_explicit(&folio->_refcount, nr, memory_order_relaxed);
	atomic_store_explicit(&folio->freed, false, memory_order_release);
	if (folio_order(folio) == HPAGE_PMD_ORDER)
		deferred_split_folio(folio, false);	/* returns at once without split_underused_thp */
}
/* endregion: fault */

bool folio_try_get(struct folio *folio)
{
	int ref = atomic_load(&folio->_refcount);

	while (ref > 0)
		if (atomic_compare_exchange_weak(&folio->_refcount, &ref, ref + 1))
			return true;
	return false;
}

/* The last reference frees the folio: off the queue first. */
static void free_folio(struct folio *folio)
{
	folio_unqueue_deferred_split(folio);
	/* free_pages_prepare() clears what is left of the folio's flags */
	atomic_store_explicit(&folio->flags, 0, memory_order_relaxed);
	atomic_store_explicit(&folio->freed, true, memory_order_release);
}

void folio_put_refs(struct folio *folio, int refs)
{
	if (atomic_fetch_sub_explicit(&folio->_refcount, refs, memory_order_acq_rel) == refs)
		free_folio(folio);
}

void folio_put(struct folio *folio)
{
	folio_put_refs(folio, 1);
}

/*
 * zap_present_ptes() for nr PTEs of one folio: the rmap first, then the
 * PTEs' references (the kernel drops them after the TLB flush). So the
 * folio cannot be freed under __folio_remove_rmap().
 */
/* region: zap */
void zap_present_ptes(struct folio *folio, int first, int nr)
{
	folio_remove_rmap_ptes(folio, first, nr);
	folio_put_refs(folio, nr);
}
/* endregion: zap */

bool folio_trylock(struct folio *folio)
{
	return !(atomic_fetch_or_explicit(&folio->flags, 1UL << PG_locked,
					  memory_order_acquire) & (1UL << PG_locked));
}

void folio_unlock(struct folio *folio)
{
	atomic_fetch_and_explicit(&folio->flags, ~(1UL << PG_locked), memory_order_release);
}

int deferred_split_check(struct deferred_split *ds, struct folio *folios, int nr,
			 char *why, unsigned long whylen)
{
	unsigned long gen, count = 0, limit;
	struct list_head *pos;
	int bad = 0;

	spin_lock(&ds->split_queue_lock);	/* not counted: the model's own */
	gen = ++ds->check_gen;
	limit = ds->split_queue_len + 1;	/* a corrupt list may loop */
	for (pos = ds->split_queue.next; pos != &ds->split_queue; pos = pos->next) {
		struct folio *f = list_entry(pos, struct folio, _deferred_list);

		if (++count > limit) {
			snprintf(why, whylen, "more than split_queue_len + 1 = %lu folios on "
				 "split_queue (queued twice, or a loop)", limit);
			bad = 1;
			break;
		}
		if (f->check_mark == gen) {
			snprintf(why, whylen, "a folio is on split_queue twice");
			bad = 1;
			break;
		}
		f->check_mark = gen;
		if (atomic_load(&f->freed) || !folio_test_large(f)) {
			snprintf(why, whylen, "a %s folio is on split_queue",
				 atomic_load(&f->freed) ? "freed" : "split");
			bad = 1;
			break;
		}
	}
	if (!bad && count + ds->nr_isolated != ds->split_queue_len) {
		snprintf(why, whylen, "split_queue_len is %lu, but %lu folios are queued "
			 "and %lu isolated", ds->split_queue_len, count, ds->nr_isolated);
		bad = 1;
	}
	for (int i = 0; !bad && folios && i < nr; i++) {
		struct folio *f = &folios[i];

		if (!atomic_load(&f->freed) && folio_test_large(f) &&
		    folio_test_partially_mapped(f) && f->check_mark != gen && !f->isolated) {
			snprintf(why, whylen, "folio %d is partially mapped but not queued (lost)", i);
			bad = 1;
		}
	}
	spin_unlock(&ds->split_queue_lock);
	return bad ? -1 : 0;
}
