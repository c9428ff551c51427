/* scenarios.h - forced orders shared by code/thp's tests and lab 07's grader. */
#ifndef MMLOCKS_THP_SCENARIOS_H
#define MMLOCKS_THP_SCENARIOS_H

#include <stdbool.h>

/*
 * Each scenario builds a queue, forces one interleaving with the hooks
 * and reports what it saw. ok is false (and why says which step) only
 * when the interleaving itself could not be forced, e.g. a thread never
 * reached its hook; the tests judge the rest.
 */
struct scn_result {
	bool ok;
	char why[160];
	int queued;			/* folios on split_queue afterwards */
	unsigned long len;		/* split_queue_len afterwards */
	long lock_partial;		/* deferred_split_lock_taken */
	long lock_free;			/* split_queue_lock taken by the free path */
	long deferred_split_page;	/* thp_deferred_split_page */
	long split_page;		/* thp_split_page */
	long lock_after;		/* deferred_split_lock_taken after one more partial unmap */
	bool partially_mapped;		/* the folio's flag afterwards */
	bool large, freed;
	bool check_ok;			/* deferred_split_check() afterwards */
	char check_why[160];
	bool queued_after;		/* the folio on split_queue after lock_after's unmap */
	long lock_free_after;		/* free path's split_queue_lock once the rest is unmapped */
};

/*
 * CPU 1 partially unmaps folio F and is stopped after its unlocked check;
 * CPU 2 partially unmaps other pages of F to the end; CPU 1 goes on. Then
 * a third partial unmap (lock_after).
 */
void scn_two_cpus(bool early_check, struct scn_result *r);

/*
 * F was queued at fault (not partially mapped). CPU 1 partially unmaps it
 * and is stopped after its unlocked check; the shrinker runs; CPU 1 goes
 * on. underused: the shrinker splits F; otherwise it forgets F.
 */
void scn_shrink_between_check_and_lock(bool underused, struct scn_result *r);

/* F partially unmapped (queued), then the rest unmapped: F is freed. */
void scn_free_queued(struct scn_result *r);

/* F never queued, unmapped whole: the free path must not lock. */
void scn_free_unqueued(struct scn_result *r);

/*
 * F queued; its last PTEs go on CPU 1, whose free path is stopped after
 * its unlocked peek; the shrinker finds F with no references and drops it
 * from the queue; CPU 1 goes on.
 */
void scn_free_after_shrinker_dropped(struct scn_result *r);

/*
 * The shrinker pins queued F and is stopped with the lock dropped; CPU 0
 * unmaps the rest of F; the shrinker goes on, splits F, and its reference
 * is the last one.
 */
void scn_unmap_during_scan(struct scn_result *r);

/*
 * The window of 6.12.117's unlocked forget. F was queued at fault (not
 * partially mapped, not underused). The shrinker pins F, finds it not
 * partially mapped and is stopped before it forgets F; CPU 0 partially
 * unmaps F (flag clear: it locks, sets the flag, does not queue F, which
 * is on the private list); the shrinker goes on. unlocked: forget as
 * 6.12.117 does (the decision already made); otherwise as the model does
 * (the flag tested again under the lock). Then one more partial unmap
 * (lock_after, queued_after), then the rest of F (lock_free_after).
 */
void scn_partial_unmap_before_forget(bool unlocked, bool early_check,
				     struct scn_result *r);

#endif
