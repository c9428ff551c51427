/* test_stream.c - a writer still gets the lock while readers keep dropping and re-taking it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <semaphore.h>

#include "../rwsem.h"
#include "harness.h"
#include "../task.h"

/* Hold the lock a while between drops, as a scan over many VMAs would. */
static void busy_us(long us)
{
	long long end = sched_clock_ns() + us * 1000;

	while (sched_clock_ns() < end)
		;
}

struct stream {
	struct rw_semaphore sem;
	atomic_bool stop;
	atomic_long retakes;
	sem_t started;
};

/* The khugepaged pattern: hold the lock, drop and re-take it now and then. */
static void *drop_retake_reader(void *arg)
{
	struct stream *s = arg;

	down_read(&s->sem);
	sem_post(&s->started);
	while (!atomic_load(&s->stop)) {
		busy_us(20);
		up_read(&s->sem);
		down_read(&s->sem);
		atomic_fetch_add(&s->retakes, 1);
	}
	up_read(&s->sem);
	return NULL;
}

static void stream(enum rwsem_steal_policy policy, int nreaders)
{
	struct stream s = { 0 };
	pthread_t th[4];
	int writes = 20;

	init_rwsem(&s.sem);
	rwsem_set_policy(&s.sem, policy);
	sem_init(&s.started, 0, 0);
	for (int i = 0; i < nreaders; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, drop_retake_reader, &s), 0);
	for (int i = 0; i < nreaders; i++)
		sem_wait(&s.started);	/* the stream is flowing */
	/* A starved writer never returns here; the watchdog fails the test. */
	for (int i = 0; i < writes; i++) {
		down_write(&s.sem);
		up_write(&s.sem);
	}
	atomic_store(&s.stop, true);
	for (int i = 0; i < nreaders; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&s.sem.count), 0);
	cr_assert_gt(atomic_load(&s.retakes), 0, "the readers never dropped the lock");
	cr_log_info("%s x%d: %ld retakes, rlock_steal %ld, wlock_handoff %ld\n",
		    rwsem_policy_name(policy), nreaders, atomic_load(&s.retakes),
		    rwsem_event(&s.sem, LOCKEVENT_rwsem_rlock_steal),
		    rwsem_event(&s.sem, LOCKEVENT_rwsem_wlock_handoff));
	rwsem_destroy(&s.sem);
	sem_destroy(&s.started);
}

TestSuite(stream, .init = harness_watchdog);

Test(stream, steal_one_reader)		{ stream(RWSEM_STEAL, 1); }
Test(stream, steal_two_readers)		{ stream(RWSEM_STEAL, 2); }
Test(stream, nosteal_one_reader)	{ stream(RWSEM_NOSTEAL, 1); }
Test(stream, writer_first_one_reader)	{ stream(RWSEM_WRITER_FIRST, 1); }
