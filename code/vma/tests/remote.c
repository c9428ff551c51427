/* remote.c - forced interleavings of remote readers and writers in the VMA model (see remote.h). */
#include <stdlib.h>
#include <string.h>

#include "remote.h"

static void begin(struct remote_result *r)
{
	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
}

const char *remote_style_name(enum remote_style s)
{
	return s == REMOTE_MMAP ? "mmap_lock (6.12)" : "per-VMA (seed 004)";
}

int remote_read(struct mm_struct *mm, enum remote_style s, unsigned long addr,
		void *buf, int len)
{
	return s == REMOTE_MMAP ? access_remote_vm_mmap(mm, addr, buf, len)
				: access_remote_vm_vma(mm, addr, buf, len);
}

/* ------------------------------------------------------------- layout */

unsigned char rm_dev_pattern(unsigned long addr)
{
	return (unsigned char)~page_pattern(addr);
}

unsigned char rm_expected(unsigned long addr)
{
	return addr >= RM_D && addr < RM_D + PG(2) ? rm_dev_pattern(addr)
						   : page_pattern(addr);
}

/* Scenarios run one per process (Criterion): plain counters will do. */
static atomic_int dev_calls, dev_unlocked;

/* generic_access_phys() for D: up to the end of addr's page. */
static int dev_access(struct vm_area_struct *vma, unsigned long addr,
		      void *buf, int len, int write)
{
	int n = PAGE_SIZE - (addr & (PAGE_SIZE - 1));

	(void)write;
	atomic_fetch_add(&dev_calls, 1);
	if (!rwsem_is_locked(&vma->vm_mm->mmap_lock))
		atomic_fetch_add(&dev_unlocked, 1);
	if (n > len)
		n = len;
	for (int i = 0; i < n; i++)
		((unsigned char *)buf)[i] = rm_dev_pattern(addr + i);
	return n;
}

static const struct vm_operations_struct dev_ops = { .access = dev_access };

static void rm_layout(struct vtest *t, bool sparse)
{
	vt_map(t, RM_A, 4, RW, false);
	for (int i = 0; i < 4; i++)
		if (!(sparse && i == 2) && do_user_addr_fault(&t->mm, RM_A + PG(i), true))
			abort();
	vt_map(t, RM_B, 4, VM_READ, true);
	vt_map(t, RM_N, 2, RW, true);
	if (do_mprotect(&t->mm, RM_N, PG(2), VM_NONE) || do_mmap_io(&t->mm, RM_D, PG(2), &dev_ops))
		abort();
	vt_map(t, RM_U, 4, RW, false);
	atomic_store(&dev_calls, 0);
	atomic_store(&dev_unlocked, 0);
}

static void check_bytes(struct remote_result *r, const unsigned char *buf,
			unsigned long addr, int len)
{
	if (r->ret < 0 || r->ret > len) {
		scn_fail(&r->s, "the read returned %d for a %d-byte request", r->ret, len);
		return;
	}
	r->bytes_ok = true;
	for (int i = 0; i < r->ret && r->bytes_ok; i++)
		r->bytes_ok = buf[i] == rm_expected(addr + i);
}

/* Collect the counters and lock state, release what a wrong reader kept. */
static void finish(struct vtest *t, struct remote_result *r)
{
	struct vm_area_struct *v;

	for (int e = 0; e < NR_REMOTE_EVENTS; e++)
		r->ev[e] = remote_event(&t->mm, e);
	r->miss = vma_lock_event(&t->mm, VMA_LOCK_MISS);
	r->abort = vma_lock_event(&t->mm, VMA_LOCK_ABORT);
	r->access_calls = atomic_load(&dev_calls);
	r->access_unlocked = atomic_load(&dev_unlocked);
	r->present_after = page_present(&t->mm, RM_A + PG(2));
	if (rwsem_is_locked(&t->mm.mmap_lock)) {
		scn_fail(&r->s, "the read returned with mmap_lock still held");
		up_read(&t->mm.mmap_lock);
	}
	/* The threads are done: no VMA may be read-locked (mm_destroy() would wait). */
	mmap_read_lock(&t->mm);
	for (v = find_vma(&t->mm, 0); v; v = find_vma(&t->mm, v->vm_end))
		while (vma_is_read_locked(v)) {
			r->vma_held_after = true;
			up_read(&v->vm_lock->lock);
		}
	mmap_read_unlock(&t->mm);
	vt_fini(t);
}

void scn_remote_quiet(enum remote_style s, bool sparse, unsigned long addr,
		      int len, struct remote_result *r)
{
	unsigned char *buf = malloc(len);
	struct vtest t;

	begin(r);
	vt_init(&t);
	rm_layout(&t, sparse);
	r->ret = remote_read(&t.mm, s, addr, buf, len);
	check_bytes(r, buf, addr, len);
	finish(&t, r);
	free(buf);
}

/* ---------------------------------------------------- lookup vs. munmap */

static void unmap_a(struct vtest *t, struct vm_area_struct *vma)
{
	(void)vma;
	do_munmap(&t->mm, RM_A, PG(4));
}

void scn_remote_lookup_unmap(struct remote_result *r)
{
	unsigned char buf[PG(2)];
	struct vtest t;

	begin(r);
	vt_init(&t);
	rm_layout(&t, false);
	vt_act_at(&t, VMA_HOOK_LOOKUP, unmap_a, 1);
	r->ret = access_remote_vm_vma(&t.mm, RM_A, buf, sizeof(buf));
	if (t.action_left[VMA_HOOK_LOOKUP])
		scn_fail(&r->s, "the per-VMA read never looked A up under RCU");
	check_bytes(r, buf, RM_A, sizeof(buf));
	finish(&t, r);
}

/* ------------------------------------- changes while the reader is unlocked */

struct unlocked_job {
	enum remote_change change;
	bool locked;		/* the reader held a lock at VMA_HOOK_REMOTE_UNLOCKED */
};

static void change_unlocked(struct vtest *t, struct vm_area_struct *vma)
{
	struct unlocked_job *j = t->arg;

	/* A writer here would wait for the reader's own thread: report it instead. */
	j->locked = rwsem_is_locked(&t->mm.mmap_lock) || vma_is_read_locked(vma);
	if (j->locked)
		return;
	switch (j->change) {
	case RCHANGE_UNMAP:
		do_munmap(&t->mm, RM_A, PG(4));
		break;
	case RCHANGE_REPLACE:
		do_mmap(&t->mm, RM_A, PG(4), RW);
		break;
	case RCHANGE_SHRINK:
		do_munmap(&t->mm, RM_A + PG(2), PG(2));
		break;
	}
	rcu_barrier();	/* the VMA the reader held is freed now */
}

void scn_remote_unlocked_change(enum remote_change c, struct remote_result *r)
{
	struct unlocked_job j = { .change = c };
	unsigned char buf[PG(4)];
	struct vtest t;

	begin(r);
	vt_init(&t);
	rm_layout(&t, true);
	t.arg = &j;
	vt_act_at(&t, VMA_HOOK_REMOTE_UNLOCKED, change_unlocked, 1);
	r->ret = access_remote_vm_vma(&t.mm, RM_A, buf, sizeof(buf));
	if (t.action_left[VMA_HOOK_REMOTE_UNLOCKED])
		scn_fail(&r->s, "the read never dropped A's lock at the missing page");
	if (j.locked)
		scn_fail(&r->s, "the reader still held A's lock or mmap_lock after dropping A's lock "
		     "(VMA_HOOK_REMOTE_UNLOCKED)");
	check_bytes(r, buf, RM_A, sizeof(buf));
	finish(&t, r);
}

/* --------------------------------------------------- readers vs. writers */

struct read_job {
	enum remote_style style;
	unsigned long addr;
	int len, ret;
	unsigned char buf[PG(4)];
};

static void read_fn(struct vtest *t, void *arg)
{
	struct read_job *j = arg;

	j->ret = remote_read(&t->mm, j->style, j->addr, j->buf, j->len);
}

struct write_job {
	bool unrelated;		/* mmap U, else mprotect A */
	atomic_bool finished;
};

/* Arrives at write_sleep when done too: the test waits for either. */
static void write_fn(struct vtest *t, void *arg)
{
	struct write_job *j = arg;

	if (j->unrelated)
		do_mmap(&t->mm, RM_U, PG(4), RW);
	else
		do_mprotect(&t->mm, RM_A, PG(4), VM_READ);
	atomic_store(&j->finished, true);
	gate_arrive(&t->write_sleep);
}

/*
 * Reader stopped after its first page with its lock held; the writer
 * either finishes or sleeps on the watched rwsem; then the reader goes on.
 */
static void reader_vs_writer(struct vtest *t, struct read_job *rj,
			     struct write_job *wj, struct remote_result *r)
{
	struct vthread rd, wr;

	vt_spawn(&rd, t, read_fn, rj);
	if (!gate_wait(&t->at[VMA_HOOK_REMOTE_COPIED], 1))
		scn_fail(&r->s, "the reader never copied A's first page");
	vt_spawn(&wr, t, write_fn, wj);
	if (!gate_wait(&t->write_sleep, 1))
		scn_fail(&r->s, "the writer neither finished nor waited");
	r->writer_done_first = atomic_load(&wj->finished);
	r->writer_blocked = !r->writer_done_first;
	gate_open_all(&t->at[VMA_HOOK_REMOTE_COPIED]);
	r->reader_done = vt_join(&rd);
	if (!r->reader_done || !vt_join(&wr)) {
		scn_fail(&r->s, "%s did not finish (a deadlock?)",
		     r->reader_done ? "the writer" : "the reader");
		return;		/* leave the mm: a thread may still use it */
	}
	r->ret = rj->ret;
	check_bytes(r, rj->buf, rj->addr, rj->len);
	finish(t, r);
}

void scn_remote_unrelated_writer(enum remote_style s, struct remote_result *r)
{
	struct read_job rj = { .style = s, .addr = RM_A, .len = PG(2) };
	struct write_job wj = { .unrelated = true };
	struct vtest t;

	begin(r);
	vt_init(&t);
	rm_layout(&t, false);
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	vt_stop_at(&t, VMA_HOOK_REMOTE_COPIED, NULL);
	reader_vs_writer(&t, &rj, &wj, r);
}

void scn_remote_vma_writer(bool sparse, struct remote_result *r)
{
	struct read_job rj = { .style = REMOTE_VMA, .addr = RM_A, .len = PG(4) };
	struct write_job wj = { .unrelated = false };
	struct vm_area_struct *a;
	struct vtest t;

	begin(r);
	vt_init(&t);
	rm_layout(&t, sparse);
	a = vt_vma(&t, RM_A);
	/* On A's lock if the reader holds A; on mmap_lock if it took that. */
	vt_watch_rwsem(&t, &a->vm_lock->lock);
	vt_watch_rwsem(&t, &t.mm.mmap_lock);
	vt_stop_at(&t, VMA_HOOK_REMOTE_COPIED, a);
	reader_vs_writer(&t, &rj, &wj, r);
}
