/* sweep.c - seeded forced schedules of faults and per-VMA walks against writers' changes (see sweep.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"

/* The pages a round touches: the five VMAs, their holes, a margin. */
#define SW_LO		(SCN_BASE - PG(4))
#define SW_PAGES	56UL
#define SW_HI		(SW_LO + PG(SW_PAGES))

enum sw_op {
	SW_MMAP_RW, SW_MMAP_RO, SW_MUNMAP, SW_MPROTECT_RO, SW_MPROTECT_RW, SW_FAULT,
	SW_NR_OPS,				/* faults and walks use the ops above */
	SW_MPROTECT_NONE = SW_NR_OPS, SW_MMAP_IO,
	SW_NR_REMOTE_OPS			/* remote reads, all of them */
};

static const char *const sw_op_name[SW_NR_REMOTE_OPS] = {
	"mmap rw-", "mmap r--", "munmap", "mprotect r--", "mprotect rw-", "write fault at",
	"mprotect ---", "mmap VM_IO",
};

struct sw_change {
	enum sw_op op;
	unsigned long start, len;
};

static unsigned long sw_rnd(unsigned *seed, unsigned long n)
{
	return (unsigned long)rand_r(seed) % n;
}

/* VM_IO memory's ->access(): bytes of its own, only under mmap_lock. */
static atomic_int sw_io_unlocked;

static unsigned char sw_io_pattern(unsigned long addr)
{
	return (unsigned char)~page_pattern(addr);
}

static int sw_io_access(struct vm_area_struct *vma, unsigned long addr, void *buf, int len,
			int write)
{
	int n = PAGE_SIZE - (addr & (PAGE_SIZE - 1));

	(void)write;
	if (!rwsem_is_locked(&vma->vm_mm->mmap_lock))
		atomic_fetch_add(&sw_io_unlocked, 1);
	if (n > len)
		n = len;
	for (int i = 0; i < n; i++)
		((unsigned char *)buf)[i] = sw_io_pattern(addr + i);
	return n;
}

static const struct vm_operations_struct sw_io_ops = { .access = sw_io_access };

static int sw_nops = SW_NR_OPS;		/* the ops this sweep picks from */

static struct sw_change sw_pick(unsigned *seed)
{
	struct sw_change c;

	c.op = sw_rnd(seed, sw_nops);
	c.start = SCN_BASE + PG(sw_rnd(seed, 40));
	c.len = PG(1 + sw_rnd(seed, 8));
	return c;
}

static void sw_apply(struct mm_struct *mm, const struct sw_change *c)
{
	switch (c->op) {
	case SW_MMAP_RW:
		do_mmap(mm, c->start, c->len, RW);
		break;
	case SW_MMAP_RO:
		do_mmap(mm, c->start, c->len, VM_READ);
		break;
	case SW_MUNMAP:
		do_munmap(mm, c->start, c->len);
		break;
	case SW_MPROTECT_RO:
		do_mprotect(mm, c->start, c->len, VM_READ);	/* may be -ENOMEM */
		break;
	case SW_MPROTECT_RW:
		do_mprotect(mm, c->start, c->len, RW);
		break;
	case SW_MPROTECT_NONE:
		do_mprotect(mm, c->start, c->len, VM_NONE);
		break;
	case SW_MMAP_IO:
		do_mmap_io(mm, c->start, c->len, &sw_io_ops);
		break;
	default:
		do_user_addr_fault(mm, c->start, true);		/* may be SIGSEGV */
	}
}

/* "mprotect r-- [base+3, base+5)": pages from SCN_BASE (E is [base+0, base+4)). */
static int sw_describe(char *buf, size_t n, const struct sw_change *c)
{
	long p = ((long)c->start - (long)SCN_BASE) / (long)PAGE_SIZE;

	if (c->op == SW_FAULT)
		return snprintf(buf, n, "%s base%+ld", sw_op_name[c->op], p);
	return snprintf(buf, n, "%s [base%+ld, base%+ld)", sw_op_name[c->op], p,
			p + (long)(c->len / PAGE_SIZE));
}

/* ---------------------------------------------- the round's description */

static char sw_now[320];		/* printed if the round aborts */
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

static void sw_begin(struct sweep_result *r, int nops)
{
	struct sigaction sa = { .sa_handler = sw_abort_handler };

	sw_nops = nops;
	memset(r, 0, sizeof(*r));
	scn_begin(&r->s);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, &sw_old_abrt);
}

static void sw_end(void)
{
	sigaction(SIGABRT, &sw_old_abrt, NULL);
}

/* -------------------------------------------- the mm, before and after */

struct sw_stats {
	unsigned long size, resident, first_start, last_end;
};

/* What a walk of [lo, hi) would report of the mm as it is now. */
static struct sw_stats sw_range(struct mm_struct *mm, unsigned long lo, unsigned long hi)
{
	struct sw_stats st = { 0 };
	struct vm_area_struct *v;

	mmap_read_lock(mm);
	for (v = find_vma(mm, lo); v && v->vm_start < hi; v = find_vma(mm, v->vm_end)) {
		unsigned long s = v->vm_start > lo ? v->vm_start : lo;
		unsigned long e = v->vm_end < hi ? v->vm_end : hi;

		if (!st.size)
			st.first_start = v->vm_start;
		st.size += e - s;
		for (unsigned long a = s; a < e; a += PAGE_SIZE)
			st.resident += page_present(mm, a) ? PAGE_SIZE : 0;
		st.last_end = v->vm_end;
	}
	mmap_read_unlock(mm);
	return st;
}

/* The first page present outside every VMA, or 0. */
static unsigned long sw_stray_page(struct mm_struct *mm)
{
	unsigned long found = 0;

	mmap_read_lock(mm);
	for (unsigned long a = SW_LO; a < SW_HI && !found; a += PAGE_SIZE)
		if (page_present(mm, a) && !vma_lookup(mm, a))
			found = a;
	mmap_read_unlock(mm);
	return found;
}

/*
 * The start of a VMA the test's thread still holds read-locked, 1 for
 * mmap_lock, 0 for none: a writer's change run now would wait for ever
 * (on the thread that has to let go), and so would the next round's.
 */
static unsigned long sw_held(struct mm_struct *mm)
{
	struct vm_area_struct *v[64];
	unsigned long held = 0;
	int n;

	if (rwsem_is_locked(&mm->mmap_lock))
		return 1;
	mmap_read_lock(mm);
	n = mm_vmas(mm, v, 64);
	for (int k = 0; k < n && !held; k++)
		if (vma_is_read_locked(v[k]))
			held = v[k]->vm_start;
	mmap_read_unlock(mm);
	return held;
}

static const char *sw_held_name(unsigned long held, char *buf, size_t n)
{
	if (held == 1)
		snprintf(buf, n, "mmap_lock");
	else
		snprintf(buf, n, "the VMA at base%+ld", ((long)held - (long)SCN_BASE) /
			 (long)PAGE_SIZE);
	return buf;
}

/*
 * Remote reads: from addr, the first address whose page a VMA-locked read
 * cannot copy (follow_page_vma_locked() would say NULL): not present, or
 * a VMA that GUP refuses. The read copied everything before it.
 */
static unsigned long sw_first_unserved(struct mm_struct *mm, unsigned long addr)
{
	unsigned long a = addr;
	struct vm_area_struct *v;

	mmap_read_lock(mm);
	while ((v = vma_lookup(mm, a)) && !check_vma_flags(v) && page_present(mm, a))
		a = (a & ~(PAGE_SIZE - 1)) + PAGE_SIZE;
	mmap_read_unlock(mm);
	return a;
}

/*
 * What 6.12's read returns from addr, for len bytes, in the mm as it is:
 * up to a hole, or to a VMA GUP refuses that has no ->access().
 */
static long sw_read_extent(struct mm_struct *mm, unsigned long addr, long len)
{
	unsigned long a = addr;
	struct vm_area_struct *v;

	mmap_read_lock(mm);
	while ((long)(a - addr) < len && (v = vma_lookup(mm, a)) &&
	       (!check_vma_flags(v) || (v->vm_ops && v->vm_ops->access)))
		a = (a & ~(PAGE_SIZE - 1)) + PAGE_SIZE;
	mmap_read_unlock(mm);
	return (long)(a - addr) < len ? (long)(a - addr) : len;
}

/*
 * A round's mm: the five VMAs, some pages missing, then up to two
 * random changes. One mm
 * serves every round (a new one per round would wait for a grace period
 * at its end): the last round's VMAs are unmapped first.
 */
static void sw_setup(struct vtest *t, unsigned *seed, char *desc, size_t n)
{
	int pre = sw_rnd(seed, 3), len = 0;

	t->mm.hook_mask = 0;
	memset(t->action, 0, sizeof(t->action));
	memset(t->action_left, 0, sizeof(t->action_left));
	do_munmap(&t->mm, SW_LO, PG(SW_PAGES));
	/* The five VMAs of scn_layout(), three pages in four present. */
	for (int v = 0; v < 5; v++) {
		vt_map(t, SCN_E + PG(8 * v), SCN_VMA_PAGES, RW, false);
		for (int i = 0; i < SCN_VMA_PAGES; i++)
			if (sw_rnd(seed, 4))
				do_user_addr_fault(&t->mm, SCN_E + PG(8 * v + i), true);
	}
	desc[0] = 0;
	for (int i = 0; i < pre; i++) {
		struct sw_change c = sw_pick(seed);

		sw_apply(&t->mm, &c);
		len += snprintf(desc + len, n - len, "%s", i ? ", " : "layout, then ");
		len += sw_describe(desc + len, n - len, &c);
	}
	if (!pre)
		snprintf(desc, n, "layout");
}

/* ------------------------------------------------- the change, in a hook */

struct sw_trigger {
	enum vma_hook_point point;
	int k, arrivals;
	struct sw_change change;
	bool done;
	unsigned long last_vma_end;	/* walks: L, from VMA_HOOK_ROLLUP_GATHERED */
	unsigned long at_l;		/* L when the change ran */
	struct sw_stats before;		/* walks: the mm below L, just before it */
	unsigned long read_addr;	/* remote reads: where the read starts, */
	unsigned long switch_at;	/* ... and where its bytes start coming from the mm after */
	unsigned long held;		/* what the thread held at the hook (no change ran) */
};

static const char *sw_point_name(enum vma_hook_point p)
{
	return p == VMA_HOOK_LOOKUP ? "VMA_HOOK_LOOKUP" :
	       p == VMA_HOOK_TRYLOCK ? "VMA_HOOK_TRYLOCK" :
	       p == VMA_HOOK_REMOTE_UNLOCKED ? "VMA_HOOK_REMOTE_UNLOCKED" :
	       "VMA_HOOK_ROLLUP_UNLOCKED";
}

static void sw_fire(struct vtest *t, struct vm_area_struct *vma)
{
	struct sw_trigger *g = t->arg;

	(void)vma;
	if (g->done || g->held || ++g->arrivals != g->k)
		return;
	/* At these points the thread holds no lock: if it does, say so, change nothing. */
	if ((g->held = sw_held(&t->mm)))
		return;
	g->done = true;
	g->at_l = g->last_vma_end;
	g->before = sw_range(&t->mm, 0, g->at_l);
	if (g->point == VMA_HOOK_REMOTE_UNLOCKED)	/* the first page the lock did not serve */
		g->switch_at = sw_first_unserved(&t->mm, g->read_addr);
	else
		g->switch_at = g->read_addr;
	sw_apply(&t->mm, &g->change);
}

static void sw_gathered(struct vtest *t, struct vm_area_struct *vma)
{
	struct sw_trigger *g = t->arg;

	g->last_vma_end = vma->vm_end;
}

static int sw_round_desc(char *buf, size_t n, int round, unsigned seed, const char *what,
			 const char *setup, const struct sw_trigger *g)
{
	int len = snprintf(buf, n, "round %d (seed %u): %s; %s; at its %d%s %s: ", round, seed,
			   setup, what, g->k, g->k == 1 ? "st" : g->k == 2 ? "nd" : g->k == 3 ?
			   "rd" : "th", sw_point_name(g->point));

	return len + sw_describe(buf + len, n - len, &g->change);
}

/*
 * A lock the fault, walk or read still held at its hook point (where it
 * holds none) or after it returned: the round fails, and the sweep stops
 * where it is, leaving the mm (cleaning it up would wait for that lock).
 */
static bool sw_left_locked(struct vtest *t, const struct sw_trigger *g, struct sweep_result *r,
			   const char *who)
{
	unsigned long held = g->held ? g->held : sw_held(&t->mm);
	char b[48];

	if (!held)
		return false;
	scn_fail(&r->s, "%s: the %s still held %s %s", sw_now, who, sw_held_name(held, b, sizeof(b)),
		 g->held ? "at that hook point, where it holds no lock" : "when it returned");
	return true;
}

/* ------------------------------------------------------------- faults */

static bool sw_access_ok(struct vm_area_struct *vma, bool write)
{
	if (write)
		return vma->vm_flags & VM_WRITE;
	return vma->vm_flags & (VM_READ | VM_WRITE | VM_EXEC);
}

void scn_sweep_faults(unsigned seed, int rounds, struct sweep_result *r)
{
	unsigned rs = seed;
	struct vtest t;

	sw_begin(r, SW_NR_OPS);
	vt_init(&t);
	for (int i = 0; i < rounds && r->s.ok; i++) {
		char setup[160], what[64];
		struct sw_trigger g = { 0 };
		unsigned long x, stray;
		struct vm_area_struct *v;
		vm_fault_t fault;
		bool write, want;

		sw_setup(&t, &rs, setup, sizeof(setup));
		/* Mostly inside one of the five VMAs, sometimes anywhere. */
		if (sw_rnd(&rs, 4))
			x = SCN_E + PG(8 * sw_rnd(&rs, 5)) + sw_rnd(&rs, PG(SCN_VMA_PAGES));
		else
			x = SW_LO + sw_rnd(&rs, PG(SW_PAGES));
		write = sw_rnd(&rs, 2);
		g.point = sw_rnd(&rs, 2) ? VMA_HOOK_LOOKUP : VMA_HOOK_TRYLOCK;
		g.k = sw_rnd(&rs, 4) ? 1 : 2;	/* the 2nd: after a retry, if any */
		g.change = sw_pick(&rs);
		snprintf(what, sizeof(what), "a %s fault at base%+ld (byte %#lx)",
			 write ? "write" : "read", ((long)x - (long)SCN_BASE) / (long)PAGE_SIZE,
			 x & (PAGE_SIZE - 1));
		sw_round_desc(sw_now, sizeof(sw_now), i, seed, what, setup, &g);
		t.arg = &g;
		vt_act_at(&t, g.point, sw_fire, 1000);

		fault = do_user_addr_fault(&t.mm, x, write);

		r->rounds++;
		r->changed += g.done;
		if (sw_left_locked(&t, &g, r, "fault"))
			goto leave;
		v = vt_vma(&t, x);
		want = v && sw_access_ok(v, write);
		if (want && fault)
			scn_fail(&r->s, "%s: the fault failed (%#x), but the address is mapped "
				 "with that access after the change", sw_now, fault);
		else if (!want && fault != VM_FAULT_SIGSEGV)
			scn_fail(&r->s, "%s: the fault returned %#x, want SIGSEGV: the address is "
				 "%s after the change", sw_now, fault, v ? "not accessible so" : "unmapped");
		else if (want && !page_present(&t.mm, x))
			scn_fail(&r->s, "%s: the fault succeeded but no page is present", sw_now);
		else if ((stray = sw_stray_page(&t.mm)))
			scn_fail(&r->s, "%s: a page is present at base%+ld, where nothing is mapped "
				 "(a fault went on with a VMA the writer had detached?)", sw_now,
				 ((long)stray - (long)SCN_BASE) / (long)PAGE_SIZE);
	}
	vt_fini(&t);
leave:
	sw_end();
}

/* -------------------------------------------------------------- walks */

void scn_sweep_walks(unsigned seed, int rounds, struct sweep_result *r)
{
	unsigned rs = seed;
	struct vtest t;

	sw_begin(r, SW_NR_OPS);
	vt_init(&t);
	for (int i = 0; i < rounds && r->s.ok; i++) {
		struct sw_stats below = { 0 }, above, whole;
		unsigned long size, resident, start, last;
		struct mem_size_stats mss;
		struct sw_trigger g = { 0 };
		char setup[160];

		sw_setup(&t, &rs, setup, sizeof(setup));
		g.point = sw_rnd(&rs, 2) ? VMA_HOOK_LOOKUP : VMA_HOOK_ROLLUP_UNLOCKED;
		g.k = 1 + sw_rnd(&rs, 6);
		g.change = sw_pick(&rs);
		sw_round_desc(sw_now, sizeof(sw_now), i, seed, "a per-VMA walk", setup, &g);
		t.arg = &g;
		vt_act_at(&t, VMA_HOOK_ROLLUP_GATHERED, sw_gathered, 1000);
		vt_act_at(&t, g.point, sw_fire, 1000);

		smaps_rollup_vma(&t.mm, &mss);

		r->rounds++;
		r->changed += g.done;
		if (sw_left_locked(&t, &g, r, "walk"))
			goto leave;
		r->fallbacks += mss.nr_fallbacks > 0;
		r->resumed += mss.nr_resumed_inside > 0;
		if (g.done) {
			below = g.before;
			above = sw_range(&t.mm, g.at_l, TASK_SIZE);
		} else {
			above = sw_range(&t.mm, 0, TASK_SIZE);
		}
		whole = above;
		size = below.size + above.size;
		resident = below.resident + above.resident;
		start = below.size ? below.first_start : whole.first_start;
		last = above.size ? above.last_end : g.done ? g.at_l : 0;
		if (mss.size != size || mss.resident != resident)
			scn_fail(&r->s, "%s: reported %lu pages (%lu resident), want %lu (%lu): "
				 "below %s the mm before the change, from there on the mm after it",
				 sw_now, mss.size / PAGE_SIZE, mss.resident / PAGE_SIZE,
				 size / PAGE_SIZE, resident / PAGE_SIZE,
				 g.done ? "last_vma_end at the change," : "(no change ran)");
		else if (mss.vma_start != start || mss.last_vma_end != last)
			scn_fail(&r->s, "%s: reported [%#lx, %#lx), want [%#lx, %#lx)", sw_now,
				 mss.vma_start, mss.last_vma_end, start, last);
	}
	vt_fini(&t);
leave:
	sw_end();
}

/* -------------------------------------------------------- remote reads */

#define SW_READ_MAX	PG(12)

void scn_sweep_remote(unsigned seed, int rounds, struct sweep_result *r)
{
	static unsigned char buf[SW_READ_MAX];
	unsigned rs = seed;
	struct vtest t;

	sw_begin(r, SW_NR_REMOTE_OPS);
	vt_init(&t);
	for (int i = 0; i < rounds && r->s.ok; i++) {
		char setup[160], what[80];
		struct sw_trigger g = { 0 };
		unsigned long addr, at;
		long len, want;
		int ret, p;

		sw_setup(&t, &rs, setup, sizeof(setup));
		/* Mostly from inside one of the five VMAs, sometimes anywhere. */
		if (sw_rnd(&rs, 4))
			addr = SCN_E + PG(8 * sw_rnd(&rs, 5)) + sw_rnd(&rs, PG(SCN_VMA_PAGES));
		else
			addr = SW_LO + sw_rnd(&rs, PG(SW_PAGES));
		len = 1 + sw_rnd(&rs, sw_rnd(&rs, 3) ? PG(2) : SW_READ_MAX);
		if (addr + len > SW_HI)
			len = SW_HI - addr;
		p = sw_rnd(&rs, 4);
		g.point = p == 0 ? VMA_HOOK_LOOKUP : p == 1 ? VMA_HOOK_TRYLOCK :
			  VMA_HOOK_REMOTE_UNLOCKED;
		g.k = 1;
		g.change = sw_pick(&rs);
		g.read_addr = addr;
		snprintf(what, sizeof(what), "a per-VMA remote read of %ld bytes at base%+ld (byte %#lx)",
			 len, ((long)addr - (long)SCN_BASE) / (long)PAGE_SIZE, addr & (PAGE_SIZE - 1));
		sw_round_desc(sw_now, sizeof(sw_now), i, seed, what, setup, &g);
		t.arg = &g;
		vt_act_at(&t, g.point, sw_fire, 1);
		atomic_store(&sw_io_unlocked, 0);
		memset(buf, 0, len);

		ret = access_remote_vm_vma(&t.mm, addr, buf, len);

		r->rounds++;
		r->changed += g.done;
		if (sw_left_locked(&t, &g, r, "read"))
			goto leave;
		/* Before the switch point, bytes of the mm before the change; from it on, after. */
		at = g.done ? g.switch_at : addr;	/* no change: all of it is the mm as it is */
		if (at > addr + len)
			at = addr + len;
		want = (long)(at - addr) + (at < addr + len ?
					    sw_read_extent(&t.mm, at, len - (long)(at - addr)) : 0);
		if (atomic_load(&sw_io_unlocked))
			scn_fail(&r->s, "%s: ->access() ran without mmap_lock", sw_now);
		else if (ret != want)
			scn_fail(&r->s, "%s: read %d bytes, want %ld (%s)", sw_now, ret, want,
				 g.done && g.point == VMA_HOOK_REMOTE_UNLOCKED ?
				 "what the VMA lock served, then 6.12's read of the mm after the change "
				 "from the page where the lock was dropped" :
				 "6.12's read of the mm after the change");
		for (long k = 0; k < ret && r->s.ok; k++) {
			unsigned long a = addr + k;
			struct vm_area_struct *v = a < at ? NULL : vt_vma(&t, a);
			unsigned char w = v && (v->vm_flags & VM_IO) ? sw_io_pattern(a) : page_pattern(a);

			if (buf[k] != w)
				scn_fail(&r->s, "%s: byte %ld (at base%+ld + %#lx) is %#x, want %#x: "
					 "not what the page or VMA_IO memory there holds", sw_now, k,
					 ((long)a - (long)SCN_BASE) / (long)PAGE_SIZE,
					 a & (PAGE_SIZE - 1), buf[k], w);
		}
	}
	vt_fini(&t);
leave:
	sw_end();
}
