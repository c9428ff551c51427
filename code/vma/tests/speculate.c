/* speculate.c - forced interleavings of speculative uprobe lookups and writers (see speculate.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "speculate.h"


static bool fail(struct scn *s, const char *fmt, ...)
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

static void map_file(struct mm_struct *mm, unsigned long addr, unsigned long pages,
		     struct inode *inode, unsigned long pgoff)
{
	struct file *f = file_open(inode);

	if (do_mmap_file(mm, addr, PG(pages), VM_READ | VM_EXEC, f, pgoff))
		abort();
	fput(f);	/* close(fd): the VMA keeps its reference */
}

void sp_layout(struct mm_struct *mm)
{
	sp_uprobes();
	map_file(mm, SP_BASE, SP_PAGES, &sp_i1, SP_PGOFF);
	map_file(mm, SP_NOPROBE, 4, &sp_i2, 100);
	if (do_mmap(mm, SP_ANON, PG(4), VM_READ | VM_EXEC))
		abort();
}

/* Scenarios run one per process (Criterion): plain statics will do. */
static struct {
	enum sp_call call;
	unsigned long addr;
	int id;
	atomic_bool done;
	struct gate *done_gate;	/* arrived at when the lookup returns */
} lk;

static int lookup(struct mm_struct *mm, enum sp_call call, unsigned long addr)
{
	struct uprobe *u;
	int id;

	if (call == SP_HIT)
		return handle_swbp(mm, addr);
	rcu_read_lock();
	u = find_active_uprobe_speculative(mm, addr);
	id = u ? u->id : 0;
	rcu_read_unlock();
	return id;
}

static void lookup_thread(struct vtest *t, void *arg)
{
	(void)arg;
	lk.id = lookup(&t->mm, lk.call, lk.addr);
	atomic_store(&lk.done, true);
	if (lk.done_gate)
		gate_arrive(lk.done_gate);
}

static void collect(struct vtest *t, struct spec_result *r, int id_x)
{
	struct uprobe *u;

	for (int e = 0; e < NR_UPROBE_EVENTS; e++)
		r->ev[e] = uprobe_event(&t->mm, e);
	r->offset_hooks = gate_arrivals(&t->at[VMA_HOOK_UPROBE_OFFSET]);
	rcu_read_lock();
	u = find_uprobe_rcu(id_x / 100 == 1 ? &sp_i1 : &sp_i2, PG(id_x % 100));
	r->hits_x = u ? (int)atomic_load(&u->hits) : 0;
	rcu_read_unlock();
}

static void begin(struct vtest *t, struct spec_result *r)
{
	memset(r, 0, sizeof(*r));
	r->s.ok = true;
	memset(&lk, 0, sizeof(lk));
	vt_init(t);
	sp_layout(&t->mm);
	uprobe_hook_mm = &t->mm;
	vt_count_at(t, VMA_HOOK_UPROBE_OFFSET);
}

static void end(struct vtest *t)
{
	uprobe_hook_mm = NULL;
	vt_fini(t);
}

/* ----------------------------------------------------------- helpers */

void scn_spec_helpers(struct spec_helpers *r)
{
	struct vtest t;
	unsigned int seq = 1, seq2 = 1;	/* odd: what a skeleton leaves */

	memset(r, 0, sizeof(*r));
	r->s.ok = true;
	vt_init(&t);
	r->begin_unlocked = mmap_lock_speculate_try_begin(&t.mm, &seq);
	r->seq_matches = seq == t.mm.mm_lock_seq.sequence;
	r->retry_quiet = mmap_lock_speculate_retry(&t.mm, seq);

	mmap_write_lock(&t.mm);
	r->begin_write_locked = mmap_lock_speculate_try_begin(&t.mm, &seq2);
	r->retry_while_locked = mmap_lock_speculate_retry(&t.mm, seq);
	mmap_write_unlock(&t.mm);
	r->retry_after_writer = mmap_lock_speculate_retry(&t.mm, seq);
	r->begin_after_writer = mmap_lock_speculate_try_begin(&t.mm, &seq2) &&
				seq2 == seq + 2;
	vt_fini(&t);
}

/* ----------------------------------------------------------- no writer */

void scn_spec_quiet(enum sp_call call, bool speculate, unsigned long addr,
		    struct spec_result *r)
{
	struct vtest t;

	begin(&t, r);
	uprobe_speculate = speculate;
	r->id = lookup(&t.mm, call, addr);
	uprobe_speculate = 1;
	collect(&t, r, SP_ID_X);
	end(&t);
}

/* --------------------------------------------- a writer holds mmap_lock */

static void move_down_thread(struct vtest *t, void *arg)
{
	(void)arg;
	if (vma_move_start(&t->mm, SP_X, SP_BASE - PG(2)))
		abort();
}

void scn_spec_write_locked(enum sp_call call, struct spec_result *r)
{
	struct vthread writer, reader;
	struct vtest t;

	begin(&t, r);
	vt_stop_at(&t, VMA_HOOK_UPROBE_WRITER, NULL);
	vt_spawn(&writer, &t, move_down_thread, NULL);
	if (!gate_wait(&t.at[VMA_HOOK_UPROBE_WRITER], 1))
		fail(&r->s, "the writer never got halfway");
	/* The lookup's return and its wait in mmap_read_lock() both arrive here. */
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	lk.done_gate = &t.read_queued;
	lk.call = call;
	lk.addr = SP_X;
	vt_spawn(&reader, &t, lookup_thread, NULL);
	if (!gate_wait(&t.read_queued, 1))
		fail(&r->s, "the lookup neither returned nor waited for mmap_lock");
	r->waited = !atomic_load(&lk.done);
	gate_open_all(&t.at[VMA_HOOK_UPROBE_WRITER]);
	if (!vt_join(&writer) || !vt_join(&reader))
		fail(&r->s, "a thread did not finish (deadlock?)");
	r->id = lk.id;
	collect(&t, r, SP_ID_X);
	end(&t);
}

/* ------------------------------------------ a writer inside the lookup */

int sp_race_new_id(enum sp_race race)
{
	return race == SP_RACE_REPLACE ? SP_ID(2, 7) : SP_ID_X;
}

static void race_writer(struct vtest *t, enum sp_race race, struct spec_result *r)
{
	struct vm_area_struct *old;
	struct file *f;

	switch (race) {
	case SP_RACE_REPLACE:
		old = vt_vma(t, SP_X);
		if (do_munmap_vma(&t->mm, SP_X))
			fail(&r->s, "munmap failed");
		f = file_open(&sp_i2);		/* takes the file P just put */
		/* old is detached, not freed: the reader's RCU keeps it. */
		r->file_reused = f == old->vm_file;
		if (do_mmap_file(&t->mm, SP_BASE, PG(SP_PAGES), VM_READ | VM_EXEC, f, 3))
			fail(&r->s, "mmap failed");
		fput(f);
		break;
	case SP_RACE_MOVE:
		if (vma_move_start(&t->mm, SP_X, SP_BASE - PG(2)))
			fail(&r->s, "vma_move_start failed");
		break;
	case SP_RACE_UNRELATED:
		if (do_mmap(&t->mm, SP_HOLE, PG(1), VM_READ))
			fail(&r->s, "mmap failed");
		break;
	case SP_RACE_UNREGISTER:
		uprobe_unregister(sp_uprobe_x);	/* freed after the reader's RCU */
		break;
	}
}

/*
 * The writer runs inside the lookup's own thread, at the hook (vt_act_at):
 * the lookup holds only RCU there, so the writer waits for nobody. A hook
 * reached first under mmap_read_lock() (6.12's path) must not write: the
 * scenario then fails at once (the speculation never got that far).
 */
struct race_ctx {
	enum sp_race race;
	struct spec_result *r;
	bool ran;
};

static void race_action(struct vtest *t, struct vm_area_struct *vma)
{
	struct race_ctx *c = t->arg;

	(void)vma;
	if (uprobe_mmap_locked_here)
		return;
	c->ran = true;
	race_writer(t, c->race, c->r);
}

void scn_spec_race(enum sp_call call, enum vma_hook_point point, enum sp_race race,
		   struct spec_result *r)
{
	struct race_ctx c = { .race = race, .r = r };
	struct vtest t;

	begin(&t, r);
	t.arg = &c;
	vt_act_at(&t, point, race_action, 1);
	r->id = lookup(&t.mm, call, SP_X);
	if (!c.ran)
		fail(&r->s, "the speculative lookup never reached the hook (%s): no writer ran",
		     point == VMA_HOOK_UPROBE_OFFSET ? "vaddr_to_offset()" : "find_uprobe_rcu()");
	else if (race == SP_RACE_REPLACE && !r->file_reused)
		fail(&r->s, "scenario: the new file did not reuse P's file");
	collect(&t, r, sp_race_new_id(race));
	end(&t);
}
