/* walk_scenarios.c - forced interleavings of smaps_rollup walkers and writers in the VMA model (see walk_scenarios.h). */
#include <string.h>

#include "walk_scenarios.h"

const char *walk_style_name(enum walk_style s)
{
	return s == WALK_MMAP ? "mmap_lock (6.12)" : "per-VMA (seed 001)";
}

int walk(struct mm_struct *mm, enum walk_style s, struct mem_size_stats *mss)
{
	return s == WALK_MMAP ? smaps_rollup_mmap(mm, mss) : smaps_rollup_vma(mm, mss);
}

struct walk_job {
	enum walk_style style;
	struct mem_size_stats mss;
};

static void walk_fn(struct vtest *t, void *arg)
{
	struct walk_job *j = arg;

	walk(&t->mm, j->style, &j->mss);
}

static void change_fn(struct vtest *t, void *arg)
{
	switch (*(enum walk_change *)arg) {
	case CHANGE_GROW:
		do_mmap(&t->mm, SCN_A + PG(4), PG(4), RW);
		break;
	case CHANGE_UNMAP:
		do_munmap(&t->mm, SCN_B, PG(4));
		break;
	case CHANGE_SPLIT:
		do_mprotect(&t->mm, SCN_B + PG(1), PG(2), VM_READ);
		break;
	}
}

/* The per-VMA walk: change the mm on the second drop of a VMA lock (after A). */
static void change_after_a(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	if (t->action_left[VMA_HOOK_ROLLUP_UNLOCKED] == 0)
		change_fn(t, t->arg);
}

static void finish_walk(struct vtest *t, struct walk_result *r,
			struct walk_job *j)
{
	r->mss = j->mss;
	smaps_recount(&t->mm, &r->recount);
}

void scn_walk_resume(enum walk_style style, enum walk_change change,
		     struct walk_result *r)
{
	struct walk_job j = { .style = style };
	struct vthread wk, wr;
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	scn_layout(&t);
	t.arg = &change;
	if (style == WALK_VMA) {
		/* Walker holds nothing between VMAs: change it right there. */
		vt_act_at(&t, VMA_HOOK_ROLLUP_UNLOCKED, change_after_a, 2);
		walk_fn(&t, &j);
		if (t.action_left[VMA_HOOK_ROLLUP_UNLOCKED])
			scn_fail(&r->s, "the walk did not release a VMA lock after A");
		finish_walk(&t, r, &j);
		vt_fini(&t);
		return;
	}
	/* 6.12: stop after A, make a writer wait, let the walker drop. */
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	vt_stop_at(&t, VMA_HOOK_ROLLUP_GATHERED, vt_vma(&t, SCN_A));
	vt_stop_at(&t, VMA_HOOK_ROLLUP_UNLOCKED, NULL);
	vt_spawn(&wk, &t, walk_fn, &j);
	if (!gate_wait(&t.at[VMA_HOOK_ROLLUP_GATHERED], 1))
		scn_fail(&r->s, "the walker never reported A");
	vt_spawn(&wr, &t, change_fn, &change);
	if (!gate_wait(&t.write_sleep, 1))
		scn_fail(&r->s, "the writer never waited for mmap_lock");
	gate_open(&t.at[VMA_HOOK_ROLLUP_GATHERED]);
	if (!gate_wait(&t.at[VMA_HOOK_ROLLUP_UNLOCKED], 1))
		scn_fail(&r->s, "the walker did not drop the contended mmap_lock");
	if (!vt_join(&wr))
		scn_fail(&r->s, "the writer did not finish while the walker was out");
	gate_open_all(&t.at[VMA_HOOK_ROLLUP_GATHERED]);
	gate_open_all(&t.at[VMA_HOOK_ROLLUP_UNLOCKED]);
	if (!vt_join(&wk) || !vt_join(&wr)) {
		scn_fail(&r->s, "walker or writer did not finish");
		return;
	}
	finish_walk(&t, r, &j);
	vt_fini(&t);
}

static void split_c_once(struct vtest *t, struct vm_area_struct *vma)
{
	struct vm_area_struct **c = t->arg;

	if (vma == *c) {
		*c = NULL;
		do_mprotect(&t->mm, SCN_C + PG(2), PG(2), VM_READ);
	}
}

void scn_walk_split_below(struct walk_result *r)
{
	struct walk_job j = { .style = WALK_VMA };
	struct vm_area_struct *c;
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	scn_layout(&t);
	c = vt_vma(&t, SCN_C);
	t.arg = &c;
	vt_act_at(&t, VMA_HOOK_LOOKUP, split_c_once, 1000);
	walk_fn(&t, &j);
	if (c)
		scn_fail(&r->s, "the walk never looked C up");
	finish_walk(&t, r, &j);
	vt_fini(&t);
}

void scn_walk_fallback(bool drop, struct walk_result *r)
{
	struct walk_job j = { .style = WALK_VMA };
	unsigned long b = SCN_B, e = SCN_E;
	struct vthread w1, w2 = { 0 }, wk;
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	scn_layout(&t);
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	vt_stop_at(&t, VMA_HOOK_WRITE_LOCKED, NULL);
	if (drop)
		vt_stop_at(&t, VMA_HOOK_ROLLUP_GATHERED, vt_vma(&t, SCN_B));
	vt_spawn(&w1, &t, scn_mprotect_fn, &b);
	if (!gate_wait(&t.at[VMA_HOOK_WRITE_LOCKED], 1))
		scn_fail(&r->s, "the writer never write-locked B");
	vt_spawn(&wk, &t, walk_fn, &j);
	if (!gate_wait(&t.read_queued, 1))
		scn_fail(&r->s, "the walker never waited for mmap_lock after B's lock failed");
	gate_open(&t.at[VMA_HOOK_WRITE_LOCKED]);
	if (!vt_join(&w1))
		scn_fail(&r->s, "the first writer did not finish");
	if (drop) {
		if (!gate_wait(&t.at[VMA_HOOK_ROLLUP_GATHERED], 1))
			scn_fail(&r->s, "the walker never reported B");
		vt_spawn(&w2, &t, scn_mprotect_fn, &e);
		if (!gate_wait(&t.write_sleep, 1))
			scn_fail(&r->s, "the second writer never waited for mmap_lock");
		gate_open(&t.at[VMA_HOOK_ROLLUP_GATHERED]);
		/* The second writer stops holding mmap_lock for write. */
		r->walker_first = vt_join(&wk);
		if (!r->walker_first)
			scn_fail(&r->s, "the walker could not finish while a writer held mmap_lock: "
				 "after the drop it waited for mmap_lock again, where it should have "
				 "tried the next VMA's own lock");
	}
	gate_open_all(&t.at[VMA_HOOK_WRITE_LOCKED]);
	gate_open_all(&t.at[VMA_HOOK_ROLLUP_GATHERED]);
	if (!vt_join(&wk) || !vt_join(&w1) || (drop && !vt_join(&w2))) {
		scn_fail(&r->s, "walker or writers did not finish");
		return;
	}
	finish_walk(&t, r, &j);
	vt_fini(&t);
}

static void merge_a_and_b_fn(struct vtest *t, void *arg)
{
	(void)arg;
	do_mmap(&t->mm, SCN_A + PG(SCN_VMA_PAGES), SCN_B - SCN_A - PG(SCN_VMA_PAGES), RW);
}

void scn_walk_grown_during_fallback(struct walk_result *r)
{
	struct walk_job j = { .style = WALK_VMA };
	struct vthread wk, wr;
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	scn_layout(&t);
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	vt_stop_at(&t, VMA_HOOK_ROLLUP_UNLOCKED, NULL);
	vt_stop_at(&t, VMA_HOOK_WRITE_LOCKED, NULL);
	vt_spawn(&wk, &t, walk_fn, &j);
	if (!gate_wait(&t.at[VMA_HOOK_ROLLUP_UNLOCKED], 1))
		scn_fail(&r->s, "the walker never released E's VMA lock");
	gate_open(&t.at[VMA_HOOK_ROLLUP_UNLOCKED]);
	if (!gate_wait(&t.at[VMA_HOOK_ROLLUP_UNLOCKED], 2))
		scn_fail(&r->s, "the walker never released A's VMA lock");
	vt_spawn(&wr, &t, merge_a_and_b_fn, NULL);
	if (!gate_wait(&t.at[VMA_HOOK_WRITE_LOCKED], 1))
		scn_fail(&r->s, "the writer never merged A, the hole and B");
	gate_open_all(&t.at[VMA_HOOK_ROLLUP_UNLOCKED]);
	if (!gate_wait(&t.read_queued, 1))
		scn_fail(&r->s, "the walker never waited for mmap_lock after the merged VMA's "
			 "lock failed");
	gate_open_all(&t.at[VMA_HOOK_WRITE_LOCKED]);
	if (!vt_join(&wk) || !vt_join(&wr)) {
		scn_fail(&r->s, "walker or writer did not finish");
		return;
	}
	finish_walk(&t, r, &j);
	vt_fini(&t);
}

void scn_walk_writer_waits(struct walk_result *r)
{
	struct walk_job j = { .style = WALK_VMA };
	unsigned long a = SCN_A;
	struct vthread wk, wr;
	struct vm_area_struct *va;
	struct vtest t;

	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	vt_init(&t);
	scn_layout(&t);
	va = vt_vma(&t, SCN_A);
	vt_watch_rwsem(&t, &va->vm_lock->lock);
	vt_stop_at(&t, VMA_HOOK_ROLLUP_GATHERED, va);
	vt_spawn(&wk, &t, walk_fn, &j);
	if (!gate_wait(&t.at[VMA_HOOK_ROLLUP_GATHERED], 1))
		scn_fail(&r->s, "the walker never reported A");
	vt_spawn(&wr, &t, scn_mprotect_fn, &a);
	r->writer_blocked = gate_wait(&t.write_sleep, 1) && !atomic_load(&wr.done);
	if (!r->writer_blocked)
		scn_fail(&r->s, "the writer did not wait for A's VMA lock");
	gate_open_all(&t.at[VMA_HOOK_ROLLUP_GATHERED]);
	if (!vt_join(&wk) || !vt_join(&wr)) {
		scn_fail(&r->s, "walker or writer did not finish");
		return;
	}
	finish_walk(&t, r, &j);
	vt_fini(&t);
}
