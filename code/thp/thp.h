/* thp.h - the deferred split queue of Linux 6.12 in userspace: large folios, partial unmaps, split_queue_lock, the shrinker. */
#ifndef MMLOCKS_THP_H
#define MMLOCKS_THP_H

#include <stdatomic.h>
#include <stdbool.h>

#include "../common/list.h"
#include "spinlock.h"

/*
 * The story (chapter 7). A large anonymous folio that loses some of its
 * pages' mappings but not all is "partially mapped": memory the process
 * gave back but the kernel cannot free without splitting the folio. The
 * unmap path, __folio_remove_rmap() (mm/rmap.c), puts such a folio on a
 * queue, struct deferred_split, under split_queue_lock; a shrinker,
 * deferred_split_scan() (mm/huge_memory.c), splits queued folios when
 * memory is short; freeing a folio takes it off the queue. Seed 003: an
 * unmap that hits a folio already queued must not need the lock at all.
 * 6.12 checks folio_test_partially_mapped() before calling
 * deferred_split_folio(); the early_check switch turns that check off.
 */

#define HPAGE_PMD_ORDER	9
#define HPAGE_PMD_NR	(1 << HPAGE_PMD_ORDER)

/* Folio flags (the model keeps them in one atomic word). */
enum pageflags {
	PG_locked,		/* folio_trylock(): deferred_split_scan() splits only what it locked */
	PG_head,		/* a large folio; split_folio() clears it (folio_test_large()) */
	PG_anon,		/* folio_test_anon(); the kernel keeps it in folio->mapping */
	PG_partially_mapped,	/* set and cleared under split_queue_lock */
};

/* region: struct-folio */
struct folio {
	atomic_ulong flags;
	unsigned int order;		/* folio_order(): 2..HPAGE_PMD_ORDER */
	atomic_int _refcount;
	atomic_int _nr_pages_mapped;	/* pages mapped by at least one PTE */
	atomic_int *_mapcount;		/* page->_mapcount per page: -1 = unmapped */
	struct list_head _deferred_list; /* on split_queue, under split_queue_lock */
	struct deferred_split *ds;	/* get_deferred_split_queue(folio) */
	/* model only */
	bool underused;			/* what thp_underused() would find */
	bool isolated;			/* on a deferred_split_scan() private list (under the lock) */
	unsigned long check_mark;	/* deferred_split_check() (under the lock) */
	atomic_bool freed;		/* free_folio() finished: the folio may be reused */
};
/* endregion: struct-folio */

/*
 * Per-CPU event counts, like the kernel's vm_event_states: a thread
 * counts on its own cache line (thp_set_cpu()), a reader sums them.
 */
enum thp_event {
	THP_DEFERRED_SPLIT_PAGE,	/* a folio became partially mapped (vmstat thp_deferred_split_page) */
	THP_SPLIT_PAGE,			/* split_folio() succeeded */
	THP_UNDERUSED_SPLIT_PAGE,	/* ... of a folio that was queued only as underused */
	DEFERRED_SPLIT_PARTIAL_UNMAPS,	/* __folio_remove_rmap() left an anon folio partially mapped */
	DEFERRED_SPLIT_LOCK_TAKEN,	/* split_queue_lock taken for a partial unmap */
	SPLIT_QUEUE_LOCK_FAULT,		/* ... by the fault path (deferred_split_folio(folio, false)) */
	SPLIT_QUEUE_LOCK_FREE,		/* ... by __folio_unqueue_deferred_split() */
	SPLIT_QUEUE_LOCK_SCAN,		/* ... by deferred_split_scan() and split_folio() */
	SPLIT_QUEUE_LOCK_CONTENDED,	/* any of them found the lock held */
	NR_THP_EVENTS
};
#define THP_NR_CPUS 64

struct thp_cpu_events {
	atomic_long ev[NR_THP_EVENTS];
} __attribute__((aligned(64)));

enum thp_hook_point {
	THP_HOOK_EARLY_CHECKED,	/* __folio_remove_rmap() is about to call deferred_split_folio() */
	THP_HOOK_SCAN_ISOLATED,	/* deferred_split_scan() dropped the lock, folios on its list */
	THP_HOOK_UNQUEUE_PEEKED,	/* folio_unqueue_deferred_split() is about to take the lock */
	THP_HOOK_SCAN_FORGET,	/* deferred_split_scan() saw a pinned folio not partially mapped, lock not held */
	NR_THP_HOOKS
};
struct deferred_split;
typedef void (*thp_hook_fn)(struct deferred_split *ds, enum thp_hook_point p,
			    struct folio *folio, void *arg);

/* region: struct-deferred-split */
struct deferred_split {
	spinlock_t split_queue_lock;
	struct list_head split_queue;
	unsigned long split_queue_len;	/* under the lock; includes isolated folios */
	/* model only */
	atomic_bool early_check;	/* debugfs deferred_split_early_check: 1 = 6.12 */
	bool split_underused_thp;	/* queue new PMD-size folios at fault (6.12: true) */
	bool scan_forget_unlocked;	/* forget folios without the lock, as 6.12.117 does (loses one: chapter 7) */
	unsigned long nr_isolated;	/* under the lock: on scan-private lists */
	unsigned long check_gen;	/* under the lock: deferred_split_check() */
	thp_hook_fn hook;
	void *hook_arg;
	struct thp_cpu_events pcpu[THP_NR_CPUS];
};
/* endregion: struct-deferred-split */

/* Queue and folios (folio.c). */
void deferred_split_init(struct deferred_split *ds);
void deferred_split_set_early_check(struct deferred_split *ds, bool on);
int folio_init(struct folio *folio, struct deferred_split *ds, unsigned int order);
void folio_destroy(struct folio *folio);	/* frees the model's memory */
void do_anonymous_large_fault(struct folio *folio);
void folio_put(struct folio *folio);
void folio_put_refs(struct folio *folio, int refs);
void zap_present_ptes(struct folio *folio, int first, int nr);	/* rmap, then put */
bool folio_try_get(struct folio *folio);
bool folio_trylock(struct folio *folio);
void folio_unlock(struct folio *folio);

/* The unmap path (rmap.c): pages [first, first + nr) lose their PTE. */
void folio_remove_rmap_ptes(struct folio *folio, int first, int nr);

/* The queue (deferred_split.c). */
void deferred_split_folio(struct folio *folio, bool partially_mapped);
bool folio_unqueue_deferred_split(struct folio *folio);
bool __folio_unqueue_deferred_split(struct folio *folio);

/* The shrinker and the split (shrinker.c). */
#define DEFERRED_SPLIT_BATCH 128	/* SHRINK_BATCH: folios per scan, at most */
unsigned long deferred_split_count(struct deferred_split *ds);
unsigned long deferred_split_scan(struct deferred_split *ds, unsigned long nr_to_scan);
int split_folio(struct folio *folio);

/*
 * Invariants, checked under split_queue_lock: split_queue_len equals
 * the folios on split_queue plus those on scan-private lists; no folio
 * is queued twice; every queued folio is large and not freed. With
 * folios != NULL also: none of those folios is lost (large, live,
 * partially mapped, yet neither queued nor isolated). Returns 0, or -1
 * and a reason in why.
 */
int deferred_split_check(struct deferred_split *ds, struct folio *folios, int nr,
			 char *why, unsigned long whylen);

/* Counters and the per-CPU identity of the calling thread. */
void thp_set_cpu(int cpu);
int thp_this_cpu(void);
void count_thp_event(struct deferred_split *ds, enum thp_event e);
long thp_event(struct deferred_split *ds, enum thp_event e);
void thp_events_reset(struct deferred_split *ds);
const char *thp_event_name(enum thp_event e);

/* Helpers with the kernel's names. */
static inline bool test_flag(const struct folio *f, enum pageflags b)
{
	return atomic_load_explicit((atomic_ulong *)&f->flags, memory_order_relaxed) & (1UL << b);
}
static inline void set_flag(struct folio *f, enum pageflags b)
{
	atomic_fetch_or(&f->flags, 1UL << b);
}
static inline void clear_flag(struct folio *f, enum pageflags b)
{
	atomic_fetch_and(&f->flags, ~(1UL << b));
}
static inline bool folio_test_large(const struct folio *f) { return test_flag(f, PG_head); }
static inline bool folio_test_anon(const struct folio *f) { return test_flag(f, PG_anon); }
static inline bool folio_test_partially_mapped(const struct folio *f)
{
	return test_flag(f, PG_partially_mapped);
}
static inline void folio_set_partially_mapped(struct folio *f) { set_flag(f, PG_partially_mapped); }
static inline void folio_clear_partially_mapped(struct folio *f)
{
	clear_flag(f, PG_partially_mapped);
}
static inline unsigned int folio_order(const struct folio *f) { return f->order; }
static inline int folio_nr_pages(const struct folio *f) { return 1 << f->order; }

static inline void thp_hook(struct deferred_split *ds, enum thp_hook_point p,
			    struct folio *folio)
{
	if (ds->hook)
		ds->hook(ds, p, folio, ds->hook_arg);
}

/* split_queue_lock, counted per call site; the contended ones too. */
static inline void split_queue_lock(struct deferred_split *ds, enum thp_event site)
{
	if (spin_lock(&ds->split_queue_lock))
		count_thp_event(ds, SPLIT_QUEUE_LOCK_CONTENDED);
	count_thp_event(ds, site);
}
static inline void split_queue_unlock(struct deferred_split *ds)
{
	spin_unlock(&ds->split_queue_lock);
}

#endif
