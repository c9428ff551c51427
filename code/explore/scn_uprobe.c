/* scn_uprobe.c - chapter 6: the speculative uprobe lookup against a writer moving the VMA's start, with and without the retry check. */
#include "explore.h"
#include "uprobe.h"

#include <stdlib.h>
#include <string.h>

/*
 * P maps file I1 at [BASE, +8 pages), vm_pgoff 8; I1 has a uprobe at
 * every page offset p, id 100 + p. S looks up the uprobe for address X =
 * BASE + 4 pages (file page 12: id 112) with mmap_lock speculation; M
 * moves P's start down 2 pages, keeping every address's offset
 * (vma_move_start(): vm_pgoff first, then vm_start). Before and after
 * M, X is at file page 12: the hit must run uprobe 112, whichever way
 * it found it. The broken variant is handle_swbp() with patch 0011's
 * speculative lookup minus mmap_lock_speculate_retry(): it may pair one
 * vm_pgoff with the other vm_start (a torn read). The fallback may sleep
 * in mmap_read_lock() while M holds the lock for write.
 */
#define BASE	PG(512)
#define X	(BASE + PG(4))
#define NPAGES	8
#define PGOFF	8
#define ID_X	112
#define OBJ_ID	EX_OBJ(1)

static struct inode i1 = { .i_ino = 1 };

struct up_ctx {
	struct mm_struct mm;
	struct vm_area_struct *p;
	bool retry;
	int id;
};

static const char *hook_name(enum vma_hook_point p)
{
	switch (p) {
	case VMA_HOOK_UPROBE_WRITER:	return "vma_move_start: pgoff moved";
	case VMA_HOOK_UPROBE_OFFSET:	return "vaddr_to_offset: pgoff read";
	case VMA_HOOK_UPROBE_FOUND:	return "find_uprobe_rcu: searched";
	case VMA_HOOK_WRITE_LOCKED:	return "VMA_HOOK_WRITE_LOCKED";
	default:			return "?";
	}
}

static void up_ex_hook(struct mm_struct *mm, enum vma_hook_point p,
		       struct vm_area_struct *vma, void *arg)
{
	(void)mm;
	(void)vma;
	(void)arg;
	ex_yield(hook_name(p), EX_MODEL);
}

/* region: explore-speculate-noretry */
/* find_active_uprobe_speculative() from uprobe_speculate.c without the retry check. */
static struct uprobe *speculate_noretry(struct mm_struct *mm, unsigned long bp_vaddr)
{
	struct vm_area_struct *vma;
	struct file *vm_file;
	unsigned int seq;

	if (!mmap_lock_speculate_try_begin(mm, &seq))
		return NULL;
	vma = vma_lookup(mm, bp_vaddr);
	if (!vma)
		return NULL;
	vm_file = READ_ONCE(vma->vm_file);
	if (!vm_file || !(READ_ONCE(vma->vm_flags) & VM_EXEC))
		return NULL;
	/* (no mmap_lock_speculate_retry(mm, seq) after the search) */
	return find_uprobe_rcu(file_inode(vm_file), vaddr_to_offset(vma, bp_vaddr));
}
/* endregion: explore-speculate-noretry */

/* The uprobe tree is global: register I1's probes once for every schedule. */
static void uprobes_once(void)
{
	static bool done;

	if (done)
		return;
	for (int p = 0; p < 32; p++)
		uprobe_register(&i1, PG(p), 100 + p);
	done = true;
}

static void *setup(bool retry)
{
	struct up_ctx *c = calloc(1, sizeof(*c));
	struct file *f;

	if (!c)
		abort();
	uprobes_once();
	mm_init(&c->mm);
	f = file_open(&i1);
	if (do_mmap_file(&c->mm, BASE, PG(NPAGES), VM_READ | VM_EXEC, f, PGOFF))
		abort();
	fput(f);
	c->p = vma_lookup(&c->mm, BASE);
	c->retry = retry;
	uprobe_hook_mm = &c->mm;
	mm_set_hook(&c->mm, up_ex_hook, c, (1u << VMA_HOOK_UPROBE_WRITER) |
		    (1u << VMA_HOOK_UPROBE_OFFSET) | (1u << VMA_HOOK_UPROBE_FOUND) |
		    (1u << VMA_HOOK_WRITE_LOCKED));
	rcu_read_lock();	/* state() reads P: keep it allocated */
	return c;
}

static void *setup_noretry(const struct ex_scenario *sc) { (void)sc; return setup(false); }
static void *setup_retry(const struct ex_scenario *sc) { (void)sc; return setup(true); }

/* handle_swbp() with speculate_noretry() for find_active_uprobe(). */
static int handle_swbp_noretry(struct mm_struct *mm, unsigned long bp_vaddr)
{
	struct uprobe *uprobe;
	int id = 0;

	rcu_read_lock();
	uprobe = speculate_noretry(mm, bp_vaddr);
	if (!uprobe)
		uprobe = find_active_uprobe_rcu(mm, bp_vaddr);
	if (uprobe) {
		atomic_fetch_add(&uprobe->hits, 1);
		id = uprobe->id;
	}
	rcu_read_unlock();
	return id;
}

/* region: explore-uprobe-threads */
static void speculate(void *p)
{
	struct up_ctx *c = p;
	int id = c->retry ? handle_swbp(&c->mm, X) : handle_swbp_noretry(&c->mm, X);

	ex_touch(OBJ_ID);
	c->id = id;
}

static void move_start(void *p)
{
	struct up_ctx *c = p;

	vma_move_start(&c->mm, BASE, BASE - PG(2));
}
/* endregion: explore-uprobe-threads */

static const char *check(void *p, char *buf, size_t len)
{
	struct up_ctx *c = p;

	if (c->id == 0) {
		snprintf(buf, len, "no uprobe: the hit at X ran no handler; uprobe 112 "
			 "covers X before and after the move");
		return buf;
	}
	if (c->id != ID_X) {
		snprintf(buf, len, "torn read: the hit at X ran uprobe %d (file page %d); "
			 "X is at file page 12 before and after the move", c->id, c->id - 100);
		return buf;
	}
	return NULL;
}

static void state(void *p, char *buf, size_t len)
{
	struct up_ctx *c = p;

	snprintf(buf, len, "mm_lock_seq=%u P.vm_pgoff=%lu P.vm_start=BASE%+ld",
		 c->mm.mm_lock_seq.sequence, c->p->vm_pgoff,
		 ((long)c->p->vm_start - (long)BASE) / (long)PAGE_SIZE);
}

static void teardown(void *p)
{
	struct up_ctx *c = p;

	rcu_read_unlock();
	uprobe_hook_mm = NULL;
	mm_set_hook(&c->mm, NULL, NULL, 0);
	do_munmap_vma(&c->mm, X);	/* puts the file back in the pool */
	mm_destroy(&c->mm);
	free(c);
}

#define UPROBE_SCENARIO(nm, sum, setupfn, found)			\
	{								\
		.name = nm, .summary = sum,				\
		.bug = "the hit runs another uprobe than 112, or none", \
		.expect_found = found, .default_bound = 3, .nthreads = 2, \
		.thread_name = { "S", "M" },				\
		.start_mask = { EX_MODEL, EX_MODEL },			\
		.setup = setupfn, .body = { speculate, move_start },	\
		.check = check, .state = state, .teardown = teardown,	\
	}

const struct ex_scenario scn_uprobe_noretry = UPROBE_SCENARIO("uprobe-noretry",
	"a uprobe hit, speculation without the retry check, vs vma_move_start()",
	setup_noretry, true);
const struct ex_scenario scn_uprobe_retry = UPROBE_SCENARIO("uprobe-retry",
	"a uprobe hit (patch 0011's speculation, then mmap_lock) vs vma_move_start()", setup_retry, false);
