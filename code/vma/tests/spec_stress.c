/* spec_stress.c - uprobe hits racing a writer that remaps the probed address (see spec_stress.h). */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spec_stress.h"
#include "speculate.h"

/* The layout's inodes and uprobes (speculate.h), here so that stress_speculate needs no test library. */
struct inode sp_i1 = { .i_ino = 1 }, sp_i2 = { .i_ino = 2 };
struct uprobe *sp_uprobe_x;

void sp_uprobes(void)
{
	for (int p = 0; p < SP_UPROBE_PAGES; p++) {
		struct uprobe *u = uprobe_register(&sp_i1, PG(p), SP_ID(1, p));

		if (p == 12)
			sp_uprobe_x = u;
		uprobe_register(&sp_i2, PG(p), SP_ID(2, p));
	}
}

#define NSTATES 6
static const int state_id[NSTATES] = {
	SP_ID(1, 12), SP_ID(1, 12), SP_ID(1, 12), SP_ID(2, 7), SP_ID(2, 7), SP_ID(2, 7),
};
/* Another process's file: it takes the memory of each file the writer's mmap puts. */
static struct inode i3 = { .i_ino = 3 };

static struct {
	const struct spec_stress_cfg *cfg;
	struct spec_stress_result *r;
	struct mm_struct mm;
	atomic_long intent, done;	/* writer steps begun, finished */
	atomic_bool stop, failed;
	bool cut;			/* the writer stopped at --seconds */
	atomic_long hits, checked, perturbed;
	pthread_mutex_t why_lock;
	pthread_mutex_t step_lock;	/* one writer step at a time */
	struct timespec t0;
} st;

static double elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - st.t0.tv_sec) + (t.tv_nsec - st.t0.tv_nsec) / 1e9;
}

static void violation(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&st.why_lock);
	if (!atomic_load(&st.failed)) {
		va_start(ap, fmt);
		vsnprintf(st.r->why, sizeof(st.r->why), fmt, ap);
		va_end(ap);
		atomic_store(&st.failed, true);
	}
	pthread_mutex_unlock(&st.why_lock);
	atomic_store(&st.stop, true);
}

static void step(long g)
{
	static struct file *other;	/* only under step_lock */
	struct mm_struct *mm = &st.mm;
	struct file *f;
	int rc = 0;

	switch (g % NSTATES) {
	case 1: case 4:
		rc = vma_move_start(mm, SP_X, SP_BASE - PG(2));
		break;
	case 2: case 5:
		rc = vma_move_start(mm, SP_X, SP_BASE);
		break;
	case 3: case 0:		/* mmap(MAP_FIXED) over the VMA: it is freed, its file put */
		if (other)
			fput(other);
		f = file_open(g % NSTATES ? &sp_i2 : &sp_i1);
		rc = do_mmap_file(mm, SP_BASE, PG(SP_PAGES), VM_READ | VM_EXEC, f,
				  g % NSTATES ? 3 : SP_PGOFF);
		fput(f);
		other = file_open(&i3);	/* reuses the struct file just put */
		break;
	}
	if (rc)
		violation("writer step %ld failed: %d", g, rc);
}

/* One step of the cycle, by whoever holds step_lock. */
static void next_step(void)
{
	long g = atomic_load(&st.intent) + 1;

	atomic_store(&st.intent, g);
	step(g);
	atomic_store(&st.done, g);
}

static void *writer(void *arg)
{
	(void)arg;
	/* At least ops steps, and on until the readers have made as many hits. */
	while (!atomic_load(&st.stop)) {
		if (st.cfg->seconds > 0 && elapsed() > st.cfg->seconds) {
			st.cut = true;
			break;
		}
		if (atomic_load(&st.done) >= st.cfg->ops && atomic_load(&st.hits) >= st.cfg->ops) {
			if (!st.cfg->perturb || atomic_load(&st.perturbed) > 0 || elapsed() > 30)
				break;
			/*
			 * No reader has made a step inside a lookup yet: on a
			 * loaded host the readers' trylock can miss every gap
			 * between two of our steps. Stop stepping and leave
			 * step_lock free, so the next reader at its hook takes
			 * it (30 s bound: the caller's check then fails).
			 */
			sched_yield();
			continue;
		}
		pthread_mutex_lock(&st.step_lock);
		next_step();
		pthread_mutex_unlock(&st.step_lock);
	}
	atomic_store(&st.stop, true);
	return NULL;
}

static void *mapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&st.stop)) {
		if (do_mmap(&st.mm, SP_HOLE, PG(1), VM_READ) || do_munmap(&st.mm, SP_HOLE, PG(1)))
			violation("the mapper's mmap or munmap failed");
	}
	return NULL;
}

/* Is the answer the id of one of the states lo..hi? */
static bool linearizable(int id, long lo, long hi)
{
	for (long g = lo; g <= hi && g < lo + NSTATES; g++)
		if (state_id[g % NSTATES] == id)
			return true;
	return false;
}

/* One hit of SP_X, checked against the states the mm was in meanwhile. */
static void one_hit(void)
{
	long lo = atomic_load(&st.done);
	int id = handle_swbp(&st.mm, SP_X);
	long hi = atomic_load(&st.intent);

	atomic_fetch_add_explicit(&st.hits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st.checked, 1, memory_order_relaxed);
	if (!linearizable(id, lo, hi))
		violation("violation: a hit of SP_X returned uprobe %d, but the mm was "
			  "only in states %ld..%ld (ids %d..%d): a torn or stale read",
			  id, lo, hi, state_id[lo % NSTATES], state_id[hi % NSTATES]);
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&st.stop))
		one_hit();
	return NULL;
}

/*
 * Perturbation, at VMA_HOOK_UPROBE_OFFSET and _FOUND: every Nth time, a
 * reader inside a speculative lookup (it holds only RCU) makes one or two
 * writer steps itself, if the writer is not in the middle of one, so
 * that writers land inside speculative lookups however the threads are
 * scheduled. A reader in find_active_uprobe_rcu()
 * holds mmap_lock for read and must not write: it never does this.
 */
static __thread long hook_calls[NR_VMA_HOOKS];	/* per point */

static void hook(struct mm_struct *mm, enum vma_hook_point p, struct vm_area_struct *vma,
		 void *arg)
{
	long n;

	(void)mm, (void)vma, (void)arg;
	if (!st.cfg->perturb || uprobe_mmap_locked_here)
		return;
	/* _FOUND half a period after _OFFSET: each perturbs its own lookups */
	if ((++hook_calls[p] + (p == VMA_HOOK_UPROBE_FOUND) * st.cfg->perturb / 2) %
	    st.cfg->perturb)
		return;
	if (pthread_mutex_trylock(&st.step_lock))
		return;
	for (n = 1 + (hook_calls[p] / st.cfg->perturb) % 2; n > 0; n--)
		next_step();
	pthread_mutex_unlock(&st.step_lock);
	atomic_fetch_add_explicit(&st.perturbed, 1, memory_order_relaxed);
}

void spec_stress_run(const struct spec_stress_cfg *cfg, struct spec_stress_result *r)
{
	pthread_t w, m, rd[64];
	int nr = cfg->readers < 64 ? cfg->readers : 64;
	struct file *f;
	int id;

	memset(r, 0, sizeof(*r));
	memset(&st, 0, sizeof(st));
	st.cfg = cfg;
	st.r = r;
	pthread_mutex_init(&st.why_lock, NULL);
	pthread_mutex_init(&st.step_lock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &st.t0);
	mm_init(&st.mm);
	sp_uprobes();
	for (int p = 0; p < SP_UPROBE_PAGES; p++)
		uprobe_register(&i3, PG(p), SP_ID(3, p));
	f = file_open(&sp_i1);
	if (do_mmap_file(&st.mm, SP_BASE, PG(SP_PAGES), VM_READ | VM_EXEC, f, SP_PGOFF))
		abort();
	fput(f);
	uprobe_hook_mm = &st.mm;
	mm_set_hook(&st.mm, hook, NULL,
		    1u << VMA_HOOK_UPROBE_OFFSET | 1u << VMA_HOOK_UPROBE_FOUND);

	/*
	 * A forced prefix, before any thread starts: 20 * perturb hits in
	 * this thread alone, whose perturbations nobody can refuse (no
	 * writer holds step_lock yet). The same writer steps land inside the
	 * same lookups on every run and host, through all six states, so a
	 * lookup that keeps a torn or stale answer fails here, every time.
	 */
	for (int i = 0; cfg->perturb && i < 20 * cfg->perturb && !atomic_load(&st.failed); i++)
		one_hit();
	if (cfg->perturb && !atomic_load(&st.failed) && !atomic_load(&st.perturbed))
		violation("%d hits of SP_X in a quiet mm never passed VMA_HOOK_UPROBE_OFFSET or "
			  "_FOUND: no speculative lookup got as far as the VMA's offset",
			  20 * cfg->perturb);

	for (int i = 0; i < nr; i++)
		if (pthread_create(&rd[i], NULL, reader, NULL))
			abort();
	if (cfg->mapper && pthread_create(&m, NULL, mapper, NULL))
		abort();
	if (pthread_create(&w, NULL, writer, NULL))
		abort();
	pthread_join(w, NULL);
	if (cfg->mapper)
		pthread_join(m, NULL);
	for (int i = 0; i < nr; i++)
		pthread_join(rd[i], NULL);

	r->ok = !atomic_load(&st.failed);
	r->steps = atomic_load(&st.done);
	/* Quiescent: the state is known, and speculation must succeed. */
	mm_set_hook(&st.mm, NULL, NULL, 0);
	uprobe_hook_mm = NULL;
	{
		long before = uprobe_event(&st.mm, UPROBE_SPECULATE_SUCCESS);

		id = handle_swbp(&st.mm, SP_X);
		if (r->ok && id != state_id[r->steps % NSTATES]) {
			r->ok = false;
			snprintf(r->why, sizeof(r->why), "quiescent: uprobe %d, want %d", id,
				 state_id[r->steps % NSTATES]);
		}
		if (r->ok && id && uprobe_event(&st.mm, UPROBE_SPECULATE_SUCCESS) != before + 1) {
			r->ok = false;
			snprintf(r->why, sizeof(r->why), "quiescent: the hit did not succeed speculatively");
		}
	}
	r->hits = atomic_load(&st.hits);
	r->checked = atomic_load(&st.checked);
	r->perturbed = atomic_load(&st.perturbed);
	for (int e = 0; e < NR_UPROBE_EVENTS; e++)
		r->ev[e] = uprobe_event(&st.mm, e);
	if (r->ok && r->ev[UPROBE_SPECULATE_ATTEMPT] !=
	    r->ev[UPROBE_SPECULATE_SUCCESS] + r->ev[UPROBE_SPECULATE_FAIL_BEGIN] +
	    r->ev[UPROBE_SPECULATE_FAIL_LOOKUP] + r->ev[UPROBE_SPECULATE_FAIL_RETRY]) {
		r->ok = false;
		snprintf(r->why, sizeof(r->why), "counters: attempt != success + fail_*");
	}
	/* Each of those had a writer inside its window: it cannot have succeeded. */
	if (r->ok && r->ev[UPROBE_SPECULATE_FAIL_RETRY] < r->perturbed) {
		r->ok = false;
		snprintf(r->why, sizeof(r->why), "%ld lookups had writer steps inside, but only "
			 "%ld retries failed", r->perturbed, r->ev[UPROBE_SPECULATE_FAIL_RETRY]);
	}
	if (r->ok && !st.cut &&
	    (!r->ev[UPROBE_SPECULATE_SUCCESS] || !r->ev[UPROBE_SPECULATE_FAIL_RETRY])) {
		r->ok = false;
		snprintf(r->why, sizeof(r->why), "no speculation succeeded or none was retried: "
			 "the run proves nothing");
	}
	mm_destroy(&st.mm);
	pthread_mutex_destroy(&st.why_lock);
	pthread_mutex_destroy(&st.step_lock);
}
