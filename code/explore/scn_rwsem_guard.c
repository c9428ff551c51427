/* scn_rwsem_guard.c - chapter 1's second reader: 6.12's guard keeps a reader from stealing past a queued writer while other readers hold the lock. */
#include "explore.h"
#include "rwsem.h"

#include <stdlib.h>
#include <string.h>

/*
 * A takes the read lock once and drops it; W takes the write lock; B takes
 * the read lock once. The failure: B's down_read() returns while A holds
 * the read lock and W is queued: B got in ahead of a queued writer although
 * the lock was not free for a moment, which 6.12's guard in
 * rwsem_down_read_slowpath() (RWSEM_READER_OWNED and rcnt > 1: do not
 * steal) forbids under every policy. B's check runs in the same step as
 * its acquisition, so nothing can change in between.
 *
 * The broken variant gives B a reader-preferring read lock instead of
 * down_read(): add the reader bias, and back off only from a writer that
 * holds the lock, ignoring RWSEM_FLAG_WAITERS (down_read_trylock() would
 * not do: it fails on that flag). B tries at most READ_TRIES times, so
 * every schedule ends.
 */
#define READ_TRIES 3
#define OBJ_FLAGS EX_OBJ(1)	/* a_holds, bad */

struct guard_ctx {
	struct rw_semaphore sem;
	bool prefer_reader;
	bool a_holds, bad;
};

static void guard_hook(struct rw_semaphore *sem, enum rwsem_hook_point p, void *arg)
{
	static const char *const name[] = {
		[RWSEM_HOOK_READ_SLOWPATH] = "down_read: READ_SLOWPATH",
		[RWSEM_HOOK_READ_QUEUED] = "down_read: READ_QUEUED",
		[RWSEM_HOOK_WRITE_SLEEP] = "down_write: WRITE_SLEEP",
		[RWSEM_HOOK_WRITE_WOKEN] = "down_write: WRITE_WOKEN",
		[RWSEM_HOOK_UP_READ_WAKE] = "up_read: UP_READ_WAKE",
	};

	(void)sem;
	(void)arg;
	ex_yield(p < RWSEM_NR_HOOKS ? name[p] : "?", EX_MODEL);
}

static void *setup(bool prefer_reader)
{
	struct guard_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	init_rwsem(&c->sem);
	rwsem_set_wait_timeout_ns(&c->sem, 1LL << 62);
	rwsem_set_hook(&c->sem, guard_hook, c);
	c->prefer_reader = prefer_reader;
	return c;
}

static void *setup_stock(const struct ex_scenario *sc) { (void)sc; return setup(false); }
static void *setup_prefer(const struct ex_scenario *sc) { (void)sc; return setup(true); }

static void reader_a(void *p)
{
	struct guard_ctx *c = p;

	down_read(&c->sem);
	ex_touch(OBJ_FLAGS);
	c->a_holds = true;
	ex_yield("down_read() returns", EX_MODEL | OBJ_FLAGS);
	c->a_holds = false;
	up_read(&c->sem);
}

static void writer(void *p)
{
	struct guard_ctx *c = p;

	down_write(&c->sem);
	ex_yield("down_write() returns", EX_MODEL);
	up_write(&c->sem);
}

static void reader_b(void *p)
{
	struct guard_ctx *c = p;

	if (c->prefer_reader) {
		int tries = 0;

		for (;;) {
			long cnt = atomic_fetch_add(&c->sem.count, RWSEM_READER_BIAS);

			if (!(cnt & RWSEM_WRITER_LOCKED))
				break;
			atomic_fetch_sub(&c->sem.count, RWSEM_READER_BIAS);
			if (++tries == READ_TRIES)
				return;		/* gives up: takes nothing */
			ex_yield("backs off from the writer", EX_MODEL);
		}
	} else {
		down_read(&c->sem);
	}
	ex_touch(OBJ_FLAGS);
	c->bad = c->a_holds && rwsem_count_waiters(&c->sem, RWSEM_WAITING_FOR_WRITE) > 0;
	ex_yield("down_read() returns", EX_MODEL);
	up_read(&c->sem);
}

static const char *check(void *p, char *buf, size_t len)
{
	struct guard_ctx *c = p;

	if (atomic_load(&c->sem.count) != 0) {
		snprintf(buf, len, "count 0x%lx left behind", atomic_load(&c->sem.count));
		return buf;
	}
	if (c->bad) {
		snprintf(buf, len, "B took the read lock while A held it and W was queued: "
			 "a reader got ahead of a queued writer");
		return buf;
	}
	return NULL;
}

static void state(void *p, char *buf, size_t len)
{
	struct guard_ctx *c = p;
	struct list_head *e;
	int q = 0;

	for (e = c->sem.wait_list.next; e != &c->sem.wait_list; e = e->next)
		q++;
	snprintf(buf, len, "count=0x%lx queued=%d", atomic_load(&c->sem.count), q);
}

static void teardown(void *p)
{
	struct guard_ctx *c = p;

	rwsem_destroy(&c->sem);
	free(c);
}

#define GUARD_SCENARIO(nm, sum, setupfn, found)				\
	{								\
		.name = nm, .summary = sum,				\
		.bug = "B gets the read lock past queued W while A holds it", \
		.expect_found = found, .default_bound = 2, .nthreads = 3, \
		.thread_name = { "A", "W", "B" },			\
		.start_mask = { EX_MODEL, EX_MODEL, EX_MODEL },		\
		.setup = setupfn, .body = { reader_a, writer, reader_b }, \
		.check = check, .state = state, .teardown = teardown,	\
	}

const struct ex_scenario scn_rwsem_guard_prefer = GUARD_SCENARIO("rwsem-guard-prefer",
	"a reader-preferring second reader vs A and W",
	setup_prefer, true);
const struct ex_scenario scn_rwsem_guard = GUARD_SCENARIO("rwsem-guard",
	"6.12's second reader (the rcnt > 1 guard) vs A and W", setup_stock, false);
