/* harness.c - actor threads and the hook that routes rwsem hook points to them. */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __thread struct actor *self_actor;

static void actor_log(struct actor *a, int ev)
{
	if (a->nev == ACTOR_MAX_EV)
		abort();	/* a test loop gone wild; never expected */
	a->ev[a->nev++] = ev;
	pthread_cond_broadcast(&a->c);
}

/* TEST HOOK: runs in the thread that reached the point. */
static void harness_hook(struct rw_semaphore *sem, enum rwsem_hook_point point,
			 void *arg)
{
	struct actor *a = self_actor;

	(void)sem;
	(void)arg;
	if (!a)
		return;
	pthread_mutex_lock(&a->m);
	actor_log(a, point);
	if (a->armed & EVBIT(point)) {
		a->armed &= ~EVBIT(point);
		while (!a->released)
			pthread_cond_wait(&a->c, &a->m);
		a->released = false;
	}
	pthread_mutex_unlock(&a->m);
}

static void watchdog_fired(int sig)
{
#define XSTR(x) STR(x)
#define STR(x) #x
	static const char msg[] = "test watchdog: not done after "
		XSTR(HARNESS_WATCHDOG_S) " s (a lost wakeup or a deadlock?)\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Each Criterion test runs in its own process: alarm() bounds just it. */
void harness_watchdog(void)
{
	signal(SIGALRM, watchdog_fired);
	alarm(HARNESS_WATCHDOG_S);
}

void harness_init(struct harness *h, enum rwsem_steal_policy policy,
		  long long wait_timeout_ns)
{
	init_rwsem(&h->sem);
	rwsem_set_policy(&h->sem, policy);
	rwsem_set_wait_timeout_ns(&h->sem, wait_timeout_ns);
	rwsem_set_hook(&h->sem, harness_hook, h);
	atomic_init(&h->seq, 1);
}

void harness_fini(struct harness *h)
{
	cr_assert_eq(atomic_load(&h->sem.count), 0,
		     "count 0x%lx left behind", atomic_load(&h->sem.count));
	cr_assert(list_empty(&h->sem.wait_list), "waiters left behind");
	rwsem_destroy(&h->sem);
}

static void *actor_main(void *arg)
{
	struct actor *a = arg;
	struct rw_semaphore *sem = &a->h->sem;

	self_actor = a;
	for (;;) {
		enum actor_cmd cmd;
		long seq = 0;

		pthread_mutex_lock(&a->m);
		while (!a->has_cmd)
			pthread_cond_wait(&a->c, &a->m);
		a->has_cmd = false;
		cmd = a->cmd;
		pthread_mutex_unlock(&a->m);

		switch (cmd) {
		case CMD_DOWN_READ:	down_read(sem); break;
		case CMD_DOWN_READ_NOSTEAL: down_read_nosteal(sem); break;
		case CMD_UP_READ:	up_read(sem); break;
		case CMD_DOWN_WRITE:	down_write(sem); break;
		case CMD_UP_WRITE:	up_write(sem); break;
		case CMD_EXIT:		break;
		}
		if (cmd == CMD_DOWN_READ || cmd == CMD_DOWN_READ_NOSTEAL ||
		    cmd == CMD_DOWN_WRITE)
			seq = atomic_fetch_add(&a->h->seq, 1);

		pthread_mutex_lock(&a->m);
		if (seq)
			a->acquired_at = seq;
		actor_log(a, EV_DONE);
		pthread_mutex_unlock(&a->m);
		if (cmd == CMD_EXIT)
			return NULL;
	}
}

void actor_start(struct actor *a, struct harness *h, const char *name)
{
	pthread_condattr_t ca;

	*a = (struct actor){ .h = h, .name = name };
	pthread_mutex_init(&a->m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->c, &ca);
	pthread_condattr_destroy(&ca);
	cr_assert_eq(pthread_create(&a->thread, NULL, actor_main, a), 0);
}

void actor_stop(struct actor *a)
{
	actor_do(a, CMD_EXIT);
	actor_expect(a, EV_DONE);
	pthread_join(a->thread, NULL);
	pthread_cond_destroy(&a->c);
	pthread_mutex_destroy(&a->m);
}

void actor_do(struct actor *a, enum actor_cmd cmd)
{
	pthread_mutex_lock(&a->m);
	cr_assert(!a->has_cmd, "%s: previous command not yet taken", a->name);
	a->cmd = cmd;
	a->has_cmd = true;
	pthread_cond_broadcast(&a->c);
	pthread_mutex_unlock(&a->m);
}

/* Next logged event that is in mask; earlier other events are dropped. */
int actor_wait(struct actor *a, unsigned mask)
{
	struct timespec deadline;
	int ev = EV_TIMEOUT;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += HARNESS_WAIT_S;
	pthread_mutex_lock(&a->m);
	for (;;) {
		while (a->rd < a->nev) {
			int e = a->ev[a->rd++];

			if (mask & EVBIT(e)) {
				ev = e;
				goto out;
			}
		}
		if (pthread_cond_timedwait(&a->c, &a->m, &deadline) == ETIMEDOUT)
			break;
	}
out:
	pthread_mutex_unlock(&a->m);
	return ev;
}

void actor_expect(struct actor *a, int ev)
{
	int got = actor_wait(a, EVBIT(ev));

	cr_assert_eq(got, ev, "%s: expected event %s, got %s", a->name,
		     ev_name(ev), ev_name(got));
}

void actor_arm(struct actor *a, enum rwsem_hook_point point)
{
	pthread_mutex_lock(&a->m);
	a->armed |= EVBIT(point);
	pthread_mutex_unlock(&a->m);
}

void actor_release(struct actor *a)
{
	pthread_mutex_lock(&a->m);
	a->released = true;
	pthread_cond_broadcast(&a->c);
	pthread_mutex_unlock(&a->m);
}

const char *ev_name(int ev)
{
	static const char *const names[] = {
		[RWSEM_HOOK_READ_SLOWPATH] = "READ_SLOWPATH",
		[RWSEM_HOOK_READ_QUEUED] = "READ_QUEUED",
		[RWSEM_HOOK_WRITE_SLEEP] = "WRITE_SLEEP",
		[RWSEM_HOOK_WRITE_WOKEN] = "WRITE_WOKEN",
		[RWSEM_HOOK_UP_READ_WAKE] = "UP_READ_WAKE",
		[EV_DONE] = "DONE",
	};

	if (ev < 0)
		return "TIMEOUT";
	return ev <= EV_DONE ? names[ev] : "?";
}
