/* engine.c - run one schedule: a scenario's threads take turns, one at a time, handing a baton at yield points. */
#define _GNU_SOURCE
#include "explore.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * Each scenario thread is a pthread with its own semaphore, the baton.
 * It runs only after the explorer posts its baton, and it gives control
 * back (posts the explorer's semaphore, waits on its baton) at a yield
 * point, when it must sleep, and when its body returns. So exactly one
 * of the explorer and the scenario threads runs at any time, and what a
 * schedule does depends only on the explorer's picks.
 */
enum ex_state { EX_RUNNABLE, EX_BLOCKED, EX_DONE };

struct ex_thread {
	pthread_t th;
	sem_t baton;
	int id;
	enum ex_state st;
	bool cancel;			/* deadlock: exit at the next resume */
	struct task_struct *task;	/* bound by task_coop.c */
	char label[64];
};

static struct {
	const struct ex_scenario *sc;
	void *ctx;
	struct ex_thread t[EX_MAX_THREADS];
	sem_t ctl;			/* the explorer's own baton */
	unsigned fp;			/* objects the running step touched */
} run;

static __thread struct ex_thread *self;

/* How long one step may run before we call it a hang. */
#define EX_STEP_TIMEOUT_S 20

bool ex_in_thread(void)
{
	return self != NULL;
}

void ex_touch(unsigned mask)
{
	if (self)
		run.fp |= mask;
}

/* Give the baton back and wait for it; on return this thread runs again. */
static void hand_back(void)
{
	struct ex_thread *me = self;

	sem_post(&run.ctl);
	while (sem_wait(&me->baton) != 0)
		;
	if (me->cancel)
		pthread_exit(NULL);
}

void ex_yield(const char *label, unsigned next_mask)
{
	if (!self)
		return;
	snprintf(self->label, sizeof(self->label), "%s", label);
	hand_back();
	run.fp |= next_mask;
}

void ex_block(void)
{
	if (!self)
		return;
	self->st = EX_BLOCKED;
	snprintf(self->label, sizeof(self->label), "sleeps in schedule()");
	hand_back();
	run.fp |= EX_MODEL;	/* it wakes inside a model wait loop */
}

void ex_bind_task(struct task_struct *t)
{
	if (self)
		self->task = t;
}

/* Runs on the waker's thread, inside its step: no switch here. */
void ex_wake(struct task_struct *t)
{
	for (int i = 0; i < EX_MAX_THREADS; i++)
		if (run.t[i].task == t && run.t[i].st == EX_BLOCKED)
			run.t[i].st = EX_RUNNABLE;
}

static void *thread_main(void *arg)
{
	struct ex_thread *me = arg;

	self = me;
	while (sem_wait(&me->baton) != 0)
		;
	run.fp |= run.sc->start_mask[me->id];
	run.sc->body[me->id](run.ctx);
	snprintf(me->label, sizeof(me->label), "ends");
	me->st = EX_DONE;
	self = NULL;
	sem_post(&run.ctl);
	return NULL;
}

static void wait_ctl(void)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += EX_STEP_TIMEOUT_S;
	while (sem_timedwait(&run.ctl, &dl) != 0) {
		if (errno == ETIMEDOUT) {
			fprintf(stderr, "explore: %s: a step ran %d s without reaching a "
				"yield point (a thread spinning on a lock, or sleeping outside "
				"schedule()?)\n", run.sc->name, EX_STEP_TIMEOUT_S);
			_exit(3);
		}
	}
}

/* The default pick once the chooser gave up: keep going, no preemption. */
static int default_pick(unsigned enabled, int last)
{
	if (last >= 0 && (enabled & (1u << last)))
		return last;
	return __builtin_ctz(enabled);
}

void ex_run(const struct ex_scenario *sc, ex_chooser choose, void *cookie,
	    struct ex_run_out *out)
{
	int n = sc->nthreads, last = -1, done = 0;

	memset(&run, 0, sizeof(run));
	out->nsteps = 0;
	out->why = NULL;
	out->abandoned = false;
	run.sc = sc;
	run.ctx = sc->setup(sc);
	sem_init(&run.ctl, 0, 0);
	for (int i = 0; i < n; i++) {
		run.t[i].id = i;
		run.t[i].st = EX_RUNNABLE;
		snprintf(run.t[i].label, sizeof(run.t[i].label), "starts");
		sem_init(&run.t[i].baton, 0, 0);
		if (pthread_create(&run.t[i].th, NULL, thread_main, &run.t[i]) != 0) {
			perror("explore: pthread_create");
			exit(3);
		}
	}

	while (done < n) {
		unsigned enabled = 0;
		int c = -1, d = out->nsteps;

		for (int i = 0; i < n; i++)
			if (run.t[i].st == EX_RUNNABLE)
				enabled |= 1u << i;
		if (!enabled) {
			snprintf(out->whybuf, sizeof(out->whybuf),
				 "deadlock: every unfinished thread sleeps in schedule()");
			out->why = out->whybuf;
			break;
		}
		if (d >= EX_MAX_STEPS) {
			fprintf(stderr, "explore: %s: more than %d steps in one schedule\n",
				sc->name, EX_MAX_STEPS);
			exit(3);
		}
		if (!out->abandoned) {
			c = choose(cookie, d, enabled, last);
			if (c < 0 || c >= n || !(enabled & (1u << c)))
				out->abandoned = true;
		}
		if (out->abandoned)
			c = default_pick(enabled, last);

		run.fp = 0;
		sem_post(&run.t[c].baton);
		wait_ctl();
		if (run.t[c].st == EX_DONE) {
			pthread_join(run.t[c].th, NULL);
			done++;
		}
		out->frame[d] = (struct ex_frame){ enabled, last, c, run.fp };
		if (out->steps) {
			struct ex_step *s = &out->steps[d];

			s->thread = c;
			snprintf(s->label, sizeof(s->label), "%s", run.t[c].label);
			sc->state(run.ctx, s->state, sizeof(s->state));
		}
		out->nsteps = d + 1;
		last = c;
	}

	if (done < n) {
		/* Deadlock: let the sleepers exit where they sleep. */
		for (int i = 0; i < n; i++) {
			if (run.t[i].st == EX_DONE)
				continue;
			run.t[i].cancel = true;
			sem_post(&run.t[i].baton);
			pthread_join(run.t[i].th, NULL);
		}
	} else if (!out->abandoned) {
		out->why = sc->check(run.ctx, out->whybuf, sizeof(out->whybuf));
	}
	for (int i = 0; i < n; i++)
		sem_destroy(&run.t[i].baton);
	sem_destroy(&run.ctl);
	sc->teardown(run.ctx);
}
