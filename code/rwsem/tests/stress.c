/* stress.c - the rwsem torture loop shared by the Criterion stress test and the TSan program. */
#include "stress.h"
#include "../rwsem_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

struct stress {
	const struct stress_cfg *cfg;
	struct rw_semaphore sem;
	atomic_int readers_in, writers_in;
	atomic_long violations, torn, reads, writes;
	long data_a, data_b;	/* plain: TSan flags any unlocked access */
	atomic_bool probe_queued;
};

static _Thread_local bool is_probe;

/* The sem's hook, while the stress runs: only the probe's queueing counts. */
static void stress_hook(struct rw_semaphore *sem, enum rwsem_hook_point p, void *arg)
{
	struct stress *s = arg;

	(void)sem;
	if (is_probe && p == RWSEM_HOOK_READ_QUEUED)
		atomic_store(&s->probe_queued, true);
}

static void read_section(struct stress *s)
{
	atomic_fetch_add(&s->readers_in, 1);
	if (atomic_load(&s->writers_in) != 0)
		atomic_fetch_add(&s->violations, 1);
	if (s->data_a != s->data_b)
		atomic_fetch_add(&s->torn, 1);
	atomic_fetch_sub(&s->readers_in, 1);
	atomic_fetch_add(&s->reads, 1);
}

static void write_section(struct stress *s, int i)
{
	if (atomic_fetch_add(&s->writers_in, 1) != 0 ||
	    atomic_load(&s->readers_in) != 0)
		atomic_fetch_add(&s->violations, 1);
	s->data_a++;
	if (i % 8 == 0)
		sched_yield();	/* widen the window for a broken lock */
	s->data_b++;
	atomic_fetch_sub(&s->writers_in, 1);
	atomic_fetch_add(&s->writes, 1);
}

static void *reader(void *arg)
{
	struct stress *s = arg;

	for (int i = 0; i < s->cfg->iters; i++) {
		switch (i % 4) {
		case 0:
		case 1:
			down_read(&s->sem);
			break;
		case 2:
			down_read_nosteal(&s->sem);
			break;
		case 3:
			if (!down_read_trylock(&s->sem))
				continue;
			break;
		}
		read_section(s);
		if (i % 16 == 0)
			sched_yield();
		up_read(&s->sem);
	}
	return NULL;
}

static void *writer(void *arg)
{
	struct stress *s = arg;

	for (int i = 0; i < s->cfg->iters; i++) {
		if (i % 8 == 7) {
			if (!down_write_trylock(&s->sem))
				continue;
		} else {
			down_write(&s->sem);
		}
		write_section(s, i);
		if (i % 4 == 1) {
			/* Still exclusive until the downgrade, shared after. */
			downgrade_write(&s->sem);
			read_section(s);
			up_read(&s->sem);
		} else {
			up_write(&s->sem);
		}
	}
	return NULL;
}

/* The probe: one read lock with the run's policy, taken in the forced window. */
static void *probe(void *arg)
{
	struct stress *s = arg;

	is_probe = true;
	down_read_policy(&s->sem, s->cfg->policy);
	read_section(s);
	up_read(&s->sem);
	return NULL;
}

static int queued(struct stress *s)
{
	return rwsem_count_waiters(&s->sem, RWSEM_WAITING_FOR_READ) +
	       rwsem_count_waiters(&s->sem, RWSEM_WAITING_FOR_WRITE);
}

/* Until n threads wait in the queue (each blocks there: no time involved). */
static void wait_queued(struct stress *s, int n)
{
	while (queued(s) < n)
		sched_yield();
}

int stress_run(const struct stress_cfg *cfg, struct stress_result *res)
{
	int n = cfg->readers + cfg->writers;
	pthread_t *th = calloc(n + 1, sizeof(*th));
	struct stress *s = calloc(1, sizeof(*s));
	long before;

	if (!th || !s)
		return -1;
	s->cfg = cfg;
	init_rwsem(&s->sem);
	rwsem_set_policy(&s->sem, cfg->policy);
	/*
	 * No HANDOFF in the window, however slow the host: the threads that
	 * queue now get a deadline an hour away.
	 */
	rwsem_set_wait_timeout_ns(&s->sem, 3600LL * 1000000000LL);
	rwsem_set_hook(&s->sem, stress_hook, s);

	/* The forced window (stress.h): hold the lock while all queue. */
	down_write(&s->sem);
	for (int k = 0; k < n; k++) {
		int i = (cfg->readers + k) % n;		/* the first writer first */

		if (pthread_create(&th[i], NULL, i < cfg->readers ? reader : writer, s))
			abort();
		if (k == 0)
			wait_queued(s, 1);
	}
	wait_queued(s, n);
	/*
	 * Every thread sleeps in the queue with its deadline set: the run's
	 * own timeout from here on (the probe's, and every later wait's).
	 */
	rwsem_set_wait_timeout_ns(&s->sem, cfg->wait_timeout_ns);
	/* up_write(), first half: the lock is free, the waiters still queued. */
	rwsem_clear_owner(&s->sem);
	atomic_fetch_sub_explicit(&s->sem.count, RWSEM_WRITER_LOCKED, memory_order_release);
	before = rwsem_event(&s->sem, LOCKEVENT_rwsem_rlock_steal);
	if (pthread_create(&th[n], NULL, probe, s))
		abort();
	/* The probe either holds the lock (a steal) or has queued. */
	while (rwsem_event(&s->sem, LOCKEVENT_rwsem_rlock_steal) == before &&
	       !atomic_load(&s->probe_queued))
		sched_yield();
	res->window_steals = rwsem_event(&s->sem, LOCKEVENT_rwsem_rlock_steal) - before;
	res->probe_queued = atomic_load(&s->probe_queued);
	/* Second half: the wakeup. */
	rwsem_wake(&s->sem);

	for (int i = 0; i <= n; i++)
		pthread_join(th[i], NULL);

	res->violations = atomic_load(&s->violations);
	res->torn_reads = atomic_load(&s->torn);
	res->reads = atomic_load(&s->reads);
	res->writes = atomic_load(&s->writes);
	res->final_count = atomic_load(&s->sem.count);
	res->waiters_left = queued(s);
	for (int i = 0; i < lockevent_num; i++)
		res->events[i] = rwsem_event(&s->sem, i);
	if (s->data_a != s->data_b || s->data_a != res->writes)
		res->violations++;
	rwsem_destroy(&s->sem);
	free(s);
	free(th);
	return 0;
}
