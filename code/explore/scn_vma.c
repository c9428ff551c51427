/* scn_vma.c - chapter 4: lock_vma_under_rcu() against munmap() and mprotect() of the VMA it found, with and without its re-checks. */
#include "explore.h"
#include "vma.h"

#include <stdlib.h>
#include <string.h>

/*
 * F looks up the VMA A at an address and read-locks it, as a page fault
 * does; M unmaps A. The failure: F ends up holding a read lock on a VMA
 * that munmap() has already detached from the tree, and would go on to
 * fault pages into it (a use-after-detach). 6.12's lock_vma_under_rcu()
 * re-checks vma->detached (and the range) after vma_start_read(); the
 * broken variant below is the same function without that re-check.
 * F stays inside an RCU read-side section from before the lookup until
 * after the use, so a detached A is still allocated when F looks at it;
 * so does the explorer while it prints states (see setup()).
 *
 * The second pair: M mprotect()s all of A instead (A changes in place, no
 * detach). The failure: F holds A read-locked while M still has it
 * write-locked (vm_lock_seq == mm_lock_seq, mmap_lock held for write),
 * reading a VMA halfway through a change. 6.12's vma_start_read()
 * compares the sequence numbers again after its trylock; the broken
 * variant is vma_start_read() without that second comparison.
 *
 * The third pair: M mprotect()s A's lower half; A shrinks in place to
 * [A, A+2) and a new VMA takes [A+2, A+4), where F's address lies. The
 * failure: F uses A for an address A no longer covers. The broken variant
 * is the first pair's (no re-check, so no range check either).
 */
#define A_START	PG(256)
#define A_PAGES	4
#define OBJ_USE	EX_OBJ(1)	/* what F saw, for check() */

enum vma_variant { NO_RECHECK, RECHECK, PROTECT_NO_RECHECK, PROTECT_RECHECK,
		   SHRINK_NO_RECHECK, SHRINK_RECHECK };

struct vma_ctx {
	struct mm_struct mm;
	struct vm_area_struct *a;
	enum vma_variant v;
	bool got, used_detached, used_write_locked;
	bool m_started, spurious;	/* F gave up though M had not begun */
	bool wrong_range;		/* F's VMA does not contain its address */
};

static const char *hook_name(enum vma_hook_point p)
{
	switch (p) {
	case VMA_HOOK_LOOKUP:		return "VMA_HOOK_LOOKUP";
	case VMA_HOOK_TRYLOCK:		return "vma_start_read: TRYLOCK";
	case VMA_HOOK_WRITE_LOCKED:	return "VMA_HOOK_WRITE_LOCKED";
	default:			return "?";
	}
}

static void vma_ex_hook(struct mm_struct *mm, enum vma_hook_point p,
			struct vm_area_struct *vma, void *arg)
{
	(void)mm;
	(void)vma;
	(void)arg;
	ex_yield(hook_name(p), EX_MODEL);
}

/* vma_start_read() from vma_read.c without the comparison after the trylock. */
static bool start_read_norecheck(struct vm_area_struct *vma)
{
	struct mm_struct *mm = vma->vm_mm;

	if (READ_ONCE(vma->vm_lock_seq) == READ_ONCE(mm->mm_lock_seq.sequence))
		return false;
	mm_hook(mm, VMA_HOOK_TRYLOCK, vma);
	return down_read_trylock(&vma->vm_lock->lock) != 0;
	/* (no vm_lock_seq == mm_lock_seq check under the read lock here) */
}

/* lock_vma_under_rcu() calling the vma_start_read() above. */
static struct vm_area_struct *lock_vma_start_norecheck(struct mm_struct *mm,
						       unsigned long address)
{
	struct vm_area_struct *vma;

	rcu_read_lock();
retry:
	vma = vma_lookup(mm, address);
	if (!vma)
		goto inval;
	mm_hook(mm, VMA_HOOK_LOOKUP, vma);
	if (!start_read_norecheck(vma))
		goto inval;
	if (vma->detached) {
		vma_end_read(vma);
		goto retry;
	}
	if (address < vma->vm_start || address >= vma->vm_end) {
		vma_end_read(vma);
		goto inval;
	}
	rcu_read_unlock();
	return vma;
inval:
	rcu_read_unlock();
	return NULL;
}

/* region: explore-lock-vma-norecheck */
/* lock_vma_under_rcu() from vma_read.c without its re-check after the lock. */
static struct vm_area_struct *lock_vma_norecheck(struct mm_struct *mm,
						 unsigned long address)
{
	struct vm_area_struct *vma;

	rcu_read_lock();
	vma = vma_lookup(mm, address);
	if (!vma)
		goto inval;
	mm_hook(mm, VMA_HOOK_LOOKUP, vma);
	if (!vma_start_read(vma))
		goto inval;
	/* (no vma->detached and no vm_start/vm_end check here) */
	rcu_read_unlock();
	return vma;
inval:
	rcu_read_unlock();
	count_vm_vma_lock_event(mm, VMA_LOCK_ABORT);
	return NULL;
}
/* endregion: explore-lock-vma-norecheck */

static void *setup(enum vma_variant v)
{
	struct vma_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	mm_init(&c->mm);
	if (do_mmap(&c->mm, A_START, PG(A_PAGES), VM_READ | VM_WRITE) != 0)
		abort();
	c->a = vma_lookup(&c->mm, A_START);
	c->v = v;
	mm_set_hook(&c->mm, vma_ex_hook, c, (1u << VMA_HOOK_LOOKUP) |
		    (1u << VMA_HOOK_TRYLOCK) | (1u << VMA_HOOK_WRITE_LOCKED));
	/* Until teardown: no grace period ends, A stays readable for state(). */
	rcu_read_lock();
	return c;
}

static void *setup_norecheck(const struct ex_scenario *sc) { (void)sc; return setup(NO_RECHECK); }
static void *setup_recheck(const struct ex_scenario *sc) { (void)sc; return setup(RECHECK); }
static void *setup_pnorecheck(const struct ex_scenario *sc) { (void)sc; return setup(PROTECT_NO_RECHECK); }
static void *setup_precheck(const struct ex_scenario *sc) { (void)sc; return setup(PROTECT_RECHECK); }
static void *setup_snorecheck(const struct ex_scenario *sc) { (void)sc; return setup(SHRINK_NO_RECHECK); }
static void *setup_srecheck(const struct ex_scenario *sc) { (void)sc; return setup(SHRINK_RECHECK); }

/* region: explore-vma-threads */
static void fault(void *p)
{
	struct vma_ctx *c = p;
	unsigned long addr = A_START + PG(c->v >= SHRINK_NO_RECHECK ? 3 : 1);
	struct vm_area_struct *vma;

	rcu_read_lock();	/* keeps a detached A allocated for the check */
	if (c->v == NO_RECHECK || c->v == SHRINK_NO_RECHECK)
		vma = lock_vma_norecheck(&c->mm, addr);
	else if (c->v == PROTECT_NO_RECHECK)
		vma = lock_vma_start_norecheck(&c->mm, addr);
	else
		vma = lock_vma_under_rcu(&c->mm, addr);
	ex_yield(vma ? "returns A, read-locked" : "returns NULL", EX_MODEL | OBJ_USE);
	c->got = vma != NULL;
	c->spurious = !vma && !c->m_started;
	if (vma) {
		c->used_detached = vma->detached;	/* handle_mm_fault(vma) */
		c->wrong_range = addr < vma->vm_start || addr >= vma->vm_end;
		c->used_write_locked = (c->mm.mm_lock_seq.sequence & 1) &&
			vma->vm_lock_seq == c->mm.mm_lock_seq.sequence;
		vma_end_read(vma);
	}
	rcu_read_unlock();
}

static void unmap(void *p)
{
	struct vma_ctx *c = p;

	ex_touch(OBJ_USE);
	c->m_started = true;
	if (c->v == PROTECT_NO_RECHECK || c->v == PROTECT_RECHECK)
		do_mprotect(&c->mm, A_START, PG(A_PAGES), VM_READ);
	else if (c->v == SHRINK_NO_RECHECK || c->v == SHRINK_RECHECK)
		do_mprotect(&c->mm, A_START, PG(2), VM_READ);
	else
		do_munmap(&c->mm, A_START, PG(A_PAGES));
}
/* endregion: explore-vma-threads */

static const char *check(void *p, char *buf, size_t len)
{
	struct vma_ctx *c = p;

	if (c->used_detached) {
		snprintf(buf, len, "use after detach: F holds A read-locked and uses it, "
			 "but munmap() had already detached A from the tree");
		return buf;
	}
	if (c->wrong_range) {
		snprintf(buf, len, "wrong VMA: F holds A read-locked and uses it for an "
			 "address A no longer covers (mprotect() split it)");
		return buf;
	}
	if (c->spurious) {
		snprintf(buf, len, "no VMA: F's lookup failed although M had not started");
		return buf;
	}
	/* A is still allocated: the explorer's RCU read-side section. */
	if (atomic_load(&c->a->vm_lock->lock.count) != 0) {
		snprintf(buf, len, "A's vm_lock left held: count 0x%lx",
			 atomic_load(&c->a->vm_lock->lock.count));
		return buf;
	}
	if (c->used_write_locked) {
		snprintf(buf, len, "read under a writer: F holds A read-locked and uses it "
			 "while M still has A write-locked (vm_lock_seq == mm_lock_seq)");
		return buf;
	}
	return NULL;
}

static void state(void *p, char *buf, size_t len)
{
	struct vma_ctx *c = p;

	snprintf(buf, len, "mm_lock_seq=%u A.vm_lock_seq=%u A.detached=%d A=+[%lu,%lu)",
		 c->mm.mm_lock_seq.sequence, c->a->vm_lock_seq, c->a->detached,
		 (c->a->vm_start - A_START) / PAGE_SIZE, (c->a->vm_end - A_START) / PAGE_SIZE);
}

static void teardown(void *p)
{
	struct vma_ctx *c = p;

	/* check() reported a lock left held; release it, or mm_destroy() would wait. */
	atomic_store(&c->a->vm_lock->lock.count, 0);
	rcu_read_unlock();
	mm_destroy(&c->mm);
	free(c);
}

#define VMA_SCENARIO(nm, sum, bugtxt, setupfn, found)			\
	{								\
		.name = nm, .summary = sum, .bug = bugtxt,		\
		.expect_found = found, .default_bound = 3, .nthreads = 2, \
		.thread_name = { "F", "M" },				\
		.start_mask = { EX_MODEL, EX_MODEL },			\
		.setup = setupfn, .body = { fault, unmap },		\
		.check = check, .state = state, .teardown = teardown,	\
	}

const struct ex_scenario scn_vma_norecheck = VMA_SCENARIO("vma-norecheck",
	"lock_vma_under_rcu() without the re-check vs munmap()",
	"F uses a VMA that munmap() detached", setup_norecheck, true);
const struct ex_scenario scn_vma_recheck = VMA_SCENARIO("vma-recheck",
	"6.12's lock_vma_under_rcu() vs munmap()",
	"F uses a VMA that munmap() detached", setup_recheck, false);
const struct ex_scenario scn_vma_start_norecheck = VMA_SCENARIO("vma-start-norecheck",
	"vma_start_read() without the check after the trylock vs mprotect()",
	"F read-locks A while M has it write-locked", setup_pnorecheck, true);
const struct ex_scenario scn_vma_start_recheck = VMA_SCENARIO("vma-start-recheck",
	"6.12's vma_start_read() vs mprotect()",
	"F read-locks A while M has it write-locked", setup_precheck, false);
const struct ex_scenario scn_vma_shrink_norecheck = VMA_SCENARIO("vma-shrink-norecheck",
	"lock_vma_under_rcu() without the re-check vs an mprotect() that splits A",
	"F uses A for an address A no longer covers", setup_snorecheck, true);
const struct ex_scenario scn_vma_shrink_recheck = VMA_SCENARIO("vma-shrink-recheck",
	"6.12's lock_vma_under_rcu() vs an mprotect() that splits A",
	"F uses A for an address A no longer covers", setup_srecheck, false);
