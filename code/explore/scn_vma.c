/* scn_vma.c - chapter 4: lock_vma_under_rcu() against munmap() of the VMA it found, with and without the re-check. */
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
 */
#define A_START	PG(256)
#define A_PAGES	4
#define OBJ_USE	EX_OBJ(1)	/* what F saw, for check() */

struct vma_ctx {
	struct mm_struct mm;
	struct vm_area_struct *a;
	bool recheck;
	bool got, used_detached;
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

static void *setup(bool recheck)
{
	struct vma_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	mm_init(&c->mm);
	if (do_mmap(&c->mm, A_START, PG(A_PAGES), VM_READ | VM_WRITE) != 0)
		abort();
	c->a = vma_lookup(&c->mm, A_START);
	c->recheck = recheck;
	mm_set_hook(&c->mm, vma_ex_hook, c, (1u << VMA_HOOK_LOOKUP) |
		    (1u << VMA_HOOK_TRYLOCK) | (1u << VMA_HOOK_WRITE_LOCKED));
	/* Until teardown: no grace period ends, A stays readable for state(). */
	rcu_read_lock();
	return c;
}

static void *setup_norecheck(const struct ex_scenario *sc) { (void)sc; return setup(false); }
static void *setup_recheck(const struct ex_scenario *sc) { (void)sc; return setup(true); }

/* region: explore-vma-threads */
static void fault(void *p)
{
	struct vma_ctx *c = p;
	unsigned long addr = A_START + PG(1);
	struct vm_area_struct *vma;

	rcu_read_lock();	/* keeps a detached A allocated for the check */
	vma = c->recheck ? lock_vma_under_rcu(&c->mm, addr)
			 : lock_vma_norecheck(&c->mm, addr);
	ex_yield(vma ? "returns A, read-locked" : "returns NULL", EX_MODEL | OBJ_USE);
	c->got = vma != NULL;
	if (vma) {
		c->used_detached = vma->detached;	/* handle_mm_fault(vma) */
		vma_end_read(vma);
	}
	rcu_read_unlock();
}

static void unmap(void *p)
{
	struct vma_ctx *c = p;

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
	return NULL;
}

static void state(void *p, char *buf, size_t len)
{
	struct vma_ctx *c = p;

	snprintf(buf, len, "mm_lock_seq=%u A.vm_lock_seq=%u A.detached=%d",
		 c->mm.mm_lock_seq.sequence, c->a->vm_lock_seq, c->a->detached);
}

static void teardown(void *p)
{
	struct vma_ctx *c = p;

	rcu_read_unlock();
	mm_destroy(&c->mm);
	free(c);
}

#define VMA_SCENARIO(nm, sum, setupfn, found)				\
	{								\
		.name = nm, .summary = sum,				\
		.bug = "F uses a VMA that munmap() detached",		\
		.expect_found = found, .default_bound = 3, .nthreads = 2, \
		.thread_name = { "F", "M" },				\
		.start_mask = { EX_MODEL, EX_MODEL },			\
		.setup = setupfn, .body = { fault, unmap },		\
		.check = check, .state = state, .teardown = teardown,	\
	}

const struct ex_scenario scn_vma_norecheck = VMA_SCENARIO("vma-norecheck",
	"lock_vma_under_rcu() without the re-check vs munmap()", setup_norecheck, true);
const struct ex_scenario scn_vma_recheck = VMA_SCENARIO("vma-recheck",
	"6.12's lock_vma_under_rcu() vs munmap()", setup_recheck, false);
