/* scenarios.c - forced interleavings of faults and writers in the VMA model, and the helpers every scenario file uses (see scenarios.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scenarios.h"

bool scn_fail(struct scn *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->ok)
		return false;	/* keep the first reason */
	s->ok = false;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	return false;
}

void scn_begin(struct scn *s)
{
	s->ok = true;
	s->why[0] = 0;
}

void scn_layout(struct vtest *t)
{
	const unsigned long at[] = { SCN_E, SCN_A, SCN_B, SCN_C, SCN_D };

	for (int i = 0; i < 5; i++)
		vt_map(t, at[i], SCN_VMA_PAGES, RW, true);
}

/* ------------------------------------------------------ vma_start_read */

static void write_lock_it(struct vtest *t, struct vm_area_struct *vma)
{
	mmap_write_lock(&t->mm);
	vma_start_write(vma);
}

void scn_start_read_recheck(struct start_read_result *r)
{
	struct vtest t;
	struct vm_area_struct *a;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, true);
	a = vt_vma(&t, SCN_A);
	vt_act_at(&t, VMA_HOOK_TRYLOCK, write_lock_it, 1);
	r->locked = vma_start_read(a);
	r->held = vma_is_read_locked(a);
	r->trylocks = 1 - t.action_left[VMA_HOOK_TRYLOCK];
	if (r->trylocks != 1)
		scn_fail(&r->s, "vma_start_read() never reached the trylock on an unlocked VMA");
	if (r->held)
		up_read(&a->vm_lock->lock);
	if (r->trylocks == 1)
		mmap_write_unlock(&t.mm);
	vt_fini(&t);
}

void scn_start_read_write_locked(struct start_read_result *r)
{
	struct vtest t;
	struct vm_area_struct *a, *b;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, true);
	vt_map(&t, SCN_B, 4, RW, true);
	a = vt_vma(&t, SCN_A);
	b = vt_vma(&t, SCN_B);
	vt_count_at(&t, VMA_HOOK_TRYLOCK);
	mmap_write_lock(&t.mm);
	vma_start_write(a);
	r->locked = vma_start_read(a);
	r->held = vma_is_read_locked(a);
	r->trylocks = gate_arrivals(&t.at[VMA_HOOK_TRYLOCK]);
	if (r->held)
		up_read(&a->vm_lock->lock);
	r->other_locked = vma_start_read(b);
	if (vma_is_read_locked(b))
		up_read(&b->vm_lock->lock);
	mmap_write_unlock(&t.mm);
	r->locked_after_unlock = vma_start_read(a);
	if (vma_is_read_locked(a))
		up_read(&a->vm_lock->lock);
	vt_fini(&t);
}

/* -------------------------------------------------- lookup vs. writer */

static void race_unmap(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_munmap(&t->mm, SCN_A, PG(8));
}

static void race_replace(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_mmap(&t->mm, SCN_A, PG(8), RW);
}

/*
 * mprotect of A's lower half: A keeps [A, A+4) and shrinks in place, a new
 * VMA takes the upper half (6.12's split at the end of a range). (A munmap
 * would not do: 6.12 always detaches the VMA object that covers the
 * unmapped part.)
 */
static void race_shrink(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_mprotect(&t->mm, SCN_A, PG(4), VM_READ);
}

void scn_lookup_race(enum lookup_race race, struct lookup_result *r)
{
	static const vt_action_fn act[] = { race_unmap, race_replace, race_shrink };
	unsigned long addr = SCN_A + PG(6);
	struct vm_area_struct *vma;
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	vt_map(&t, SCN_A, 8, RW, true);
	vt_act_at(&t, VMA_HOOK_LOOKUP, act[race], 1);
	vma = lock_vma_under_rcu(&t.mm, addr);
	if (t.action_left[VMA_HOOK_LOOKUP])
		scn_fail(&r->s, "lock_vma_under_rcu() did not look A up");
	r->got_vma = vma != NULL;
	r->held = vma && vma_is_read_locked(vma);
	if (r->held)
		vma_end_read(vma);
	r->got_current = vma && vma == vt_vma(&t, addr);
	r->miss = vma_lock_event(&t.mm, VMA_LOCK_MISS);
	r->abort = vma_lock_event(&t.mm, VMA_LOCK_ABORT);
	r->success = vma_lock_event(&t.mm, VMA_LOCK_SUCCESS);
	vt_fini(&t);
}

/* ---------------------------------------------------- faults vs. writer */

struct fault_job {
	unsigned long addr;
	vm_fault_t fault;
};

static void fault_fn(struct vtest *t, void *arg)
{
	struct fault_job *j = arg;

	j->fault = do_user_addr_fault(&t->mm, j->addr, false);
}

void scn_mprotect_fn(struct vtest *t, void *arg)
{
	unsigned long addr = *(unsigned long *)arg;

	do_mprotect(&t->mm, addr, PG(SCN_VMA_PAGES), VM_READ);
}

/*
 * The end of every fault-vs-writer scenario: writer w is stopped at
 * VMA_HOOK_WRITE_LOCKED with mmap_lock held for write and fault f is on
 * its way. The fault must queue on mmap_lock; then the writer goes on,
 * both are joined, and the result gets what the fault saw.
 */
static void fault_waits_for_writer(struct vtest *t, struct vthread *w, struct vthread *f,
				   const struct fault_job *job, struct fault_result *r)
{
	r->waited = gate_wait(&t->read_queued, 1);
	if (!r->waited)
		scn_fail(&r->s, "the fault never queued on mmap_lock");
	r->done_before_writer = atomic_load(&f->done);
	gate_open_all(&t->at[VMA_HOOK_WRITE_LOCKED]);
	if (!vt_join(w) || !vt_join(f)) {
		scn_fail(&r->s, "the writer or the fault did not finish");
		return;		/* leave the mm: a thread may still use it */
	}
	r->fault = job->fault;
	r->present = page_present(&t->mm, job->addr);
	r->success = vma_lock_event(&t->mm, VMA_LOCK_SUCCESS);
	r->abort = vma_lock_event(&t->mm, VMA_LOCK_ABORT);
	r->retry = vma_lock_event(&t->mm, VMA_LOCK_RETRY);
	r->miss = vma_lock_event(&t->mm, VMA_LOCK_MISS);
	vt_fini(t);
}

/*
 * Writer W mprotects `changed` and stops with mmap_lock held for write;
 * a fault on `addr` runs meanwhile and must wait for mmap_lock.
 */
static void fault_vs_writer(unsigned long changed, unsigned long addr,
			    struct fault_result *r)
{
	struct vthread w, f;
	struct fault_job job = { .addr = addr };
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, false);	/* no anon_vma yet */
	vt_map(&t, SCN_B, 4, RW, false);
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	vt_stop_at(&t, VMA_HOOK_WRITE_LOCKED, NULL);
	vt_spawn(&w, &t, scn_mprotect_fn, &changed);
	if (!gate_wait(&t.at[VMA_HOOK_WRITE_LOCKED], 1))
		scn_fail(&r->s, "the writer never reached VMA_HOOK_WRITE_LOCKED");
	vt_spawn(&f, &t, fault_fn, &job);
	fault_waits_for_writer(&t, &w, &f, &job, r);
}

void scn_fault_waits_for_writer(struct fault_result *r)
{
	fault_vs_writer(SCN_A, SCN_A + PG(1), r);
}

void scn_fault_retry(struct fault_result *r)
{
	/* B has no anon_vma yet, so its first fault needs mmap_lock. */
	fault_vs_writer(SCN_A, SCN_B + PG(1), r);
}

static void munmap_a_fn(struct vtest *t, void *arg)
{
	(void)arg;
	do_munmap(&t->mm, SCN_A, PG(4));
}

void scn_lookup_vs_munmap_in_progress(struct fault_result *r)
{
	struct fault_job job = { .addr = SCN_A + PG(1) };
	struct vthread w, f;
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	vt_map(&t, SCN_A, 4, RW, true);
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	vt_stop_at(&t, VMA_HOOK_LOOKUP, NULL);
	vt_stop_at(&t, VMA_HOOK_WRITE_LOCKED, NULL);
	vt_spawn(&f, &t, fault_fn, &job);
	if (!gate_wait(&t.at[VMA_HOOK_LOOKUP], 1))
		scn_fail(&r->s, "the fault never looked A up");
	vt_spawn(&w, &t, munmap_a_fn, NULL);
	if (!gate_wait(&t.at[VMA_HOOK_WRITE_LOCKED], 1))
		scn_fail(&r->s, "the munmap never reached VMA_HOOK_WRITE_LOCKED");
	gate_open_all(&t.at[VMA_HOOK_LOOKUP]);
	fault_waits_for_writer(&t, &w, &f, &job, r);
}
