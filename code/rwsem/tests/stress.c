/* stress.c - the rwsem torture loop shared by the Criterion stress test and the TSan program. */
#include "stress.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

struct stress {
	const struct stress_cfg *cfg;
	struct rw_semaphore sem;
	atomic_int readers_in, writers_in;
	atomic_long violations, torn, reads, writes;
	long data_a, data_b;	/* plain: TSan flags any unlocked access */
};

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

int stress_run(const struct stress_cfg *cfg, struct stress_result *res)
{
	int n = cfg->readers + cfg->writers;
	pthread_t *th = calloc(n, sizeof(*th));
	struct stress *s = calloc(1, sizeof(*s));

	if (!th || !s)
		return -1;
	s->cfg = cfg;
	init_rwsem(&s->sem);
	rwsem_set_policy(&s->sem, cfg->policy);
	rwsem_set_wait_timeout_ns(&s->sem, cfg->wait_timeout_ns);

	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, i < cfg->readers ? reader : writer, s))
			abort();
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);

	res->violations = atomic_load(&s->violations);
	res->torn_reads = atomic_load(&s->torn);
	res->reads = atomic_load(&s->reads);
	res->writes = atomic_load(&s->writes);
	res->final_count = atomic_load(&s->sem.count);
	res->waiters_left = rwsem_count_waiters(&s->sem, RWSEM_WAITING_FOR_READ) +
			    rwsem_count_waiters(&s->sem, RWSEM_WAITING_FOR_WRITE);
	for (int i = 0; i < lockevent_num; i++)
		res->events[i] = rwsem_event(&s->sem, i);
	if (s->data_a != s->data_b || s->data_a != res->writes)
		res->violations++;
	rwsem_destroy(&s->sem);
	free(s);
	free(th);
	return 0;
}
