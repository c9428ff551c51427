/* vtest.c - gates, hooked mm, bounded threads and death tests for the VMA model's tests and lab 04's grader. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vtest.h"

int vt_wait_s = VT_WAIT_S;

static struct timespec deadline(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += vt_wait_s;
	return ts;
}

void gate_init(struct gate *g, bool stop)
{
	pthread_mutex_init(&g->m, NULL);
	pthread_cond_init(&g->c, NULL);
	g->arrived = g->opened = 0;
	g->stop = stop;
}

void gate_arrive(struct gate *g)
{
	struct timespec ts = deadline();
	int me;

	pthread_mutex_lock(&g->m);
	me = ++g->arrived;
	pthread_cond_broadcast(&g->c);
	while (g->stop && g->opened < me)
		if (pthread_cond_timedwait(&g->c, &g->m, &ts) == ETIMEDOUT) {
			fprintf(stderr, "vtest: a thread waited %d s at a gate nobody opened\n",
				vt_wait_s);
			break;
		}
	pthread_mutex_unlock(&g->m);
}

bool gate_wait(struct gate *g, int n)
{
	struct timespec ts = deadline();
	bool ok = true;

	pthread_mutex_lock(&g->m);
	while (g->arrived < n && ok)
		ok = pthread_cond_timedwait(&g->c, &g->m, &ts) != ETIMEDOUT;
	ok = g->arrived >= n;
	pthread_mutex_unlock(&g->m);
	return ok;
}

void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	g->opened++;
	pthread_cond_broadcast(&g->c);
	pthread_mutex_unlock(&g->m);
}

void gate_open_all(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	g->stop = false;
	pthread_cond_broadcast(&g->c);
	pthread_mutex_unlock(&g->m);
}

int gate_arrivals(struct gate *g)
{
	int n;

	pthread_mutex_lock(&g->m);
	n = g->arrived;
	pthread_mutex_unlock(&g->m);
	return n;
}

static void vt_hook(struct mm_struct *mm, enum vma_hook_point p,
		    struct vm_area_struct *vma, void *arg)
{
	struct vtest *t = arg;

	(void)mm;
	if (t->action[p] && t->action_left[p] > 0) {
		t->action_left[p]--;
		t->action[p](t, vma);
		return;
	}
	if (!t->stop_vma[p] || t->stop_vma[p] == vma)
		gate_arrive(&t->at[p]);
}

void vt_init(struct vtest *t)
{
	memset(t, 0, sizeof(*t));
	mm_init(&t->mm);
	for (int p = 0; p < NR_VMA_HOOKS; p++)
		gate_init(&t->at[p], false);
	gate_init(&t->read_queued, false);
	gate_init(&t->write_sleep, false);
	mm_set_hook(&t->mm, vt_hook, t, 0);
}

void vt_fini(struct vtest *t)
{
	mm_destroy(&t->mm);
}

void vt_stop_at(struct vtest *t, enum vma_hook_point p, struct vm_area_struct *only)
{
	t->at[p].stop = true;
	t->stop_vma[p] = only;
	t->mm.hook_mask |= 1u << p;
}

void vt_count_at(struct vtest *t, enum vma_hook_point p)
{
	t->mm.hook_mask |= 1u << p;
}

void vt_act_at(struct vtest *t, enum vma_hook_point p, vt_action_fn fn, int times)
{
	t->action[p] = fn;
	t->action_left[p] = times;
	t->mm.hook_mask |= 1u << p;
}

static void vt_rwsem_hook(struct rw_semaphore *sem, enum rwsem_hook_point p,
			  void *arg)
{
	struct vtest *t = arg;

	(void)sem;
	if (p == RWSEM_HOOK_READ_QUEUED)
		gate_arrive(&t->read_queued);
	else if (p == RWSEM_HOOK_WRITE_SLEEP)
		gate_arrive(&t->write_sleep);
}

void vt_watch_rwsem(struct vtest *t, struct rw_semaphore *sem)
{
	rwsem_set_hook(sem, vt_rwsem_hook, t);
}

void vt_map(struct vtest *t, unsigned long start, unsigned long pages,
	    vm_flags_t flags, bool populate)
{
	if (do_mmap(&t->mm, start, PG(pages), flags) != 0)
		abort();
	for (unsigned long i = 0; populate && i < pages; i++)
		if (do_user_addr_fault(&t->mm, start + PG(i), false) != 0)
			abort();
}

struct vm_area_struct *vt_vma(struct vtest *t, unsigned long addr)
{
	struct vm_area_struct *vma;

	mmap_read_lock(&t->mm);
	vma = vma_lookup(&t->mm, addr);
	mmap_read_unlock(&t->mm);
	return vma;
}

static void *vt_thread(void *p)
{
	struct vthread *th = p;

	th->fn(th->t, th->arg);
	atomic_store(&th->done, true);
	return NULL;
}

void vt_spawn(struct vthread *th, struct vtest *t,
	      void (*fn)(struct vtest *t, void *arg), void *arg)
{
	th->fn = fn;
	th->t = t;
	th->arg = arg;
	th->joined = false;
	atomic_init(&th->done, false);
	if (pthread_create(&th->th, NULL, vt_thread, th) != 0)
		abort();
}

bool vt_join(struct vthread *th)
{
	struct timespec ts = deadline();

	if (th->joined)
		return true;
	if (pthread_timedjoin_np(th->th, NULL, &ts) != 0)
		return false;
	th->joined = true;
	return true;
}

bool vt_dies_with(void (*fn)(void *arg), void *arg, const char *expect)
{
	char buf[4096];
	int fds[2], status;
	ssize_t n, len = 0;
	pid_t pid;

	fflush(NULL);
	if (pipe(fds) != 0)
		return false;
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		alarm(vt_wait_s);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = 0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)) {
		fprintf(stderr, "vt_dies_with: child did not abort; its stderr: %s\n", buf);
		return false;
	}
	if (!strstr(buf, expect)) {
		fprintf(stderr, "vt_dies_with: expected '%s' in: %s\n", expect, buf);
		return false;
	}
	return true;
}
