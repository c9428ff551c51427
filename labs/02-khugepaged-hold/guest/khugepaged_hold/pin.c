/* pin.c: khugepaged_hold's CPU placement (declared in report.h). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "report.h"

#include <sched.h>
#include <unistd.h>

/*
 * khugepaged calls cond_resched() for every VMA while it holds mmap_lock.
 * If this program's threads (trace reader, writer, poller) wake on its
 * CPU, khugepaged yields to them with the lock held and the hold we
 * measure includes our own work. So khugepaged gets the last CPU and we
 * get the others; its old mask is put back by the restorer.
 */
static pid_t pinned_pid;
static cpu_set_t pinned_old;

static void unpin(void)
{
	if (pinned_pid > 0)
		sched_setaffinity(pinned_pid, sizeof(pinned_old), &pinned_old);
}

int pin_cpus(pid_t kthread)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t k, self;

	if (n < 2 || sched_getaffinity(kthread, sizeof(pinned_old), &pinned_old))
		return -1;
	CPU_ZERO(&k);
	CPU_SET((int)n - 1, &k);
	CPU_ZERO(&self);
	for (int i = 0; i < n - 1; i++)
		CPU_SET(i, &self);
	pinned_pid = kthread;
	mg_on_restore(unpin);
	if (sched_setaffinity(kthread, sizeof(k), &k) || sched_setaffinity(0, sizeof(self), &self))
		return -1;
	return (int)n - 1;
}

