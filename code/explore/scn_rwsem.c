/* scn_rwsem.c - chapter 1's drop-and-retake: may a reader re-take the rwsem ahead of the writer its drop let in? */
#include "explore.h"
#include "rwsem_internal.h"

#include <stdlib.h>
#include <string.h>

/*
 * R holds the read lock, drops it and takes it again (khugepaged's
 * drop-and-retake); W wants the write lock. The explorer places W's
 * down_write() anywhere around that. The failure: W was queued when R
 * dropped the lock, and R's re-take still got the lock before W.
 * Stock 6.12 (steal policy 0) lets the re-take steal it; NOSTEAL (1)
 * and WRITER_FIRST (2) must not, for any order the explorer can reach.
 */
#define OBJ_ORDER EX_OBJ(1)	/* the acquisition record below */

struct rwsem_ctx {
	struct rw_semaphore sem;
	enum rwsem_steal_policy policy;
	bool nosteal_call;		/* re-take with down_read_nosteal() */
	int seq;			/* acquisitions so far */
	int r_retake, w_acquire[2];	/* their place in that order */
	struct task_struct *w_task[2];
	bool w_queued_at_drop[2];
};

static const char *hook_name(enum rwsem_hook_point p)
{
	switch (p) {
	case RWSEM_HOOK_READ_SLOWPATH:	return "down_read: READ_SLOWPATH";
	case RWSEM_HOOK_READ_QUEUED:	return "down_read: READ_QUEUED";
	case RWSEM_HOOK_WRITE_SLEEP:	return "down_write: WRITE_SLEEP";
	case RWSEM_HOOK_WRITE_WOKEN:	return "down_write: WRITE_WOKEN";
	case RWSEM_HOOK_UP_READ_WAKE:	return "up_read: UP_READ_WAKE";
	default:			return "?";
	}
}

/* Every rwsem hook point is a yield point; what follows is model code. */
static void rwsem_ex_hook(struct rw_semaphore *sem, enum rwsem_hook_point p, void *arg)
{
	(void)sem;
	(void)arg;
	ex_yield(hook_name(p), EX_MODEL);
}

static void *setup(const struct ex_scenario *sc, enum rwsem_steal_policy policy)
{
	struct rwsem_ctx *c = calloc(1, sizeof(*c));

	(void)sc;
	if (!c)
		abort();
	init_rwsem(&c->sem);
	rwsem_set_policy(&c->sem, policy);
	rwsem_set_wait_timeout_ns(&c->sem, 1LL << 62);	/* time is frozen anyway */
	rwsem_set_hook(&c->sem, rwsem_ex_hook, c);
	c->policy = policy;
	return c;
}

static void *setup_steal(const struct ex_scenario *sc) { return setup(sc, RWSEM_STEAL); }
static void *setup_nosteal(const struct ex_scenario *sc) { return setup(sc, RWSEM_NOSTEAL); }
static void *setup_wfirst(const struct ex_scenario *sc) { return setup(sc, RWSEM_WRITER_FIRST); }
/* A stock lock, and the re-take asks down_read_nosteal() (the khugepaged series). */
static void *setup_nosteal_call(const struct ex_scenario *sc)
{
	struct rwsem_ctx *c = setup(sc, RWSEM_STEAL);

	c->nosteal_call = true;
	return c;
}

/* region: explore-rwsem-threads */
static void reader(void *p)
{
	struct rwsem_ctx *c = p;

	down_read(&c->sem);
	ex_yield("down_read() returns", EX_MODEL);
	ex_touch(OBJ_ORDER);
	for (struct list_head *e = c->sem.wait_list.next; e != &c->sem.wait_list; e = e->next)
		for (int i = 0; i < 2; i++)
			if (c->w_task[i] && list_entry(e, struct rwsem_waiter, list)->task == c->w_task[i])
				c->w_queued_at_drop[i] = true;
	up_read(&c->sem);			/* drop ... */
	ex_yield("up_read() returns", EX_MODEL);
	if (c->nosteal_call)			/* ... and re-take */
		down_read_nosteal(&c->sem);
	else
		down_read(&c->sem);
	ex_touch(OBJ_ORDER);
	c->r_retake = ++c->seq;
	ex_yield("down_read() returns", EX_MODEL);
	up_read(&c->sem);
}

static void writer_n(struct rwsem_ctx *c, int i)
{
	ex_touch(OBJ_ORDER);
	c->w_task[i] = current;
	down_write(&c->sem);
	ex_touch(OBJ_ORDER);
	c->w_acquire[i] = ++c->seq;
	ex_yield("down_write() returns", EX_MODEL);
	up_write(&c->sem);
}

static void writer(void *p) { writer_n(p, 0); }
static void writer2(void *p) { writer_n(p, 1); }
/* endregion: explore-rwsem-threads */

static const char *check(void *p, char *buf, size_t len)
{
	struct rwsem_ctx *c = p;

	if (atomic_load(&c->sem.count) != 0) {
		snprintf(buf, len, "count 0x%lx left behind", atomic_load(&c->sem.count));
		return buf;
	}
	for (int i = 0; i < 2; i++)
		if (c->w_queued_at_drop[i] && c->r_retake < c->w_acquire[i]) {
			snprintf(buf, len, "steal before the writer: %s was queued when R "
				 "dropped the lock, and R's re-take got it first (%d before %d)",
				 i ? "X" : "W", c->r_retake, c->w_acquire[i]);
			return buf;
		}
	return NULL;
}

static void state(void *p, char *buf, size_t len)
{
	struct rwsem_ctx *c = p;
	long cnt = atomic_load(&c->sem.count);
	int q = 0;
	struct list_head *e;

	for (e = c->sem.wait_list.next; e != &c->sem.wait_list; e = e->next)
		q++;
	snprintf(buf, len, "count=0x%lx queued=%d", cnt, q);
}

static void teardown(void *p)
{
	struct rwsem_ctx *c = p;

	rwsem_destroy(&c->sem);
	free(c);
}

#define RWSEM_SCENARIO(nm, pol, setupfn, found)				\
	{								\
		.name = nm,						\
		.summary = "drop-and-retake vs a writer, " pol,		\
		.bug = "R's re-take beats the queued writer W",		\
		.expect_found = found, .default_bound = 3, .nthreads = 2, \
		.thread_name = { "R", "W" },				\
		.start_mask = { EX_MODEL, EX_MODEL | OBJ_ORDER },	\
		.setup = setupfn, .body = { reader, writer },		\
		.check = check, .state = state, .teardown = teardown,	\
	}

const struct ex_scenario scn_rwsem_steal =
	RWSEM_SCENARIO("rwsem-steal", "steal policy 0 (STEAL, stock 6.12)", setup_steal, true);
const struct ex_scenario scn_rwsem_nosteal =
	RWSEM_SCENARIO("rwsem-nosteal", "steal policy 1 (NOSTEAL)", setup_nosteal, false);
const struct ex_scenario scn_rwsem_wfirst =
	RWSEM_SCENARIO("rwsem-writer-first", "steal policy 2 (WRITER_FIRST)", setup_wfirst, false);
const struct ex_scenario scn_rwsem_nosteal_call =
	RWSEM_SCENARIO("rwsem-nosteal-call", "policy 0, re-take by down_read_nosteal()",
		       setup_nosteal_call, false);

/* Two writers: W and X. */
#define RWSEM2_SCENARIO(nm, pol, setupfn, found)			\
	{								\
		.name = nm,						\
		.summary = "drop-and-retake vs two writers, " pol,	\
		.bug = "R's re-take beats a writer queued at the drop",	\
		.expect_found = found, .default_bound = 2, .nthreads = 3, \
		.thread_name = { "R", "W", "X" },			\
		.start_mask = { EX_MODEL, EX_MODEL | OBJ_ORDER, EX_MODEL | OBJ_ORDER }, \
		.setup = setupfn, .body = { reader, writer, writer2 },	\
		.check = check, .state = state, .teardown = teardown,	\
	}

const struct ex_scenario scn_rwsem2_steal =
	RWSEM2_SCENARIO("rwsem2-steal", "steal policy 0", setup_steal, true);
const struct ex_scenario scn_rwsem2_nosteal =
	RWSEM2_SCENARIO("rwsem2-nosteal", "steal policy 1", setup_nosteal, false);
const struct ex_scenario scn_rwsem2_wfirst =
	RWSEM2_SCENARIO("rwsem2-writer-first", "steal policy 2", setup_wfirst, false);
