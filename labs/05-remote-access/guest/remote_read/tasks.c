/*
 * The processes of a remote_read run: the target with its writer thread,
 * and the readers (see tasks.h). Children end with _exit(): a forked child
 * must not run the parent's atexit restorer or flush its stdio buffers.
 */
#define _GNU_SOURCE
#include "remote_read/tasks.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

const char *const rr_role_name[RR_NROLES] = { "writer", "mem", "cmdline" };

struct rr_shared *rr_shared_new(void)
{
	struct rr_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED)
		return NULL;
	sh->phase = MG_PHASE_IDLE;
	return sh;
}

void rr_cell_from_lat(struct rr_cell *c, struct mg_lat *l)
{
	c->count = (int64_t)l->count;
	c->max = (int64_t)l->max;
	c->sum = 0;
	for (size_t i = 0; i < l->n; i++)
		c->sum += (int64_t)l->v[i];
	c->p50 = (int64_t)mg_lat_pct(l, 50);
	c->p99 = (int64_t)mg_lat_pct(l, 99);
}

/* A child of the experiment dies with its parent (the parent's restorer also kills it). */
static void child_setup(int cpu)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	mg_pin_cpu(cpu);
}

/* ---- the target -------------------------------------------------------------- */

/* region: target */
void rr_target(const struct rr_target_cfg *c, struct rr_shared *sh, int ready_fd, int cmd_fd)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct mg_lat *lat = calloc((size_t)c->nslots, sizeof(*lat));
	struct mg_writer w = { .phase = &sh->phase, .lat = lat, .pause_us = c->pause_us };
	pthread_t writer;
	bool writing = false;
	char *region;

	child_setup(c->cpu);
	/* One page more than asked, unmapped again: the hole the bad-input probes read into. */
	region = mmap((void *)(uintptr_t)RR_REGION_BASE, c->region_bytes + pg, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (region != (void *)(uintptr_t)RR_REGION_BASE || !lat ||
	    munmap(region + c->region_bytes, pg)) {
		if (write(ready_fd, "F", 1) != 1) { /* the parent reports the missing 'R' */ }
		_exit(1);
	}
	rr_fill(region, c->region_bytes); /* touches every page: resident */
	sh->target_mlocked = mlock(region, c->region_bytes) == 0;
	sh->target_mlock_err = sh->target_mlocked ? 0 : errno;
	if (write(ready_fd, "R", 1) != 1)
		_exit(1);
	for (;;) {
		struct pollfd p = { .fd = cmd_fd, .events = POLLIN };
		uint64_t now = mg_now_ns();
		char cmd;

		if (now >= c->deadline_ns)
			break;
		if (poll(&p, 1, (int)((c->deadline_ns - now) / 1000000 + 1)) <= 0)
			continue;
		if (read(cmd_fd, &cmd, 1) != 1)
			break; /* EOF: the parent is done (or gone) */
		if (cmd == 'W' && !writing) {
			/* Latency arrays are touched now, not while measuring. */
			for (int s = 0; s < c->nslots; s++) {
				mg_lat_init(&lat[s], 1 << 16);
				if (lat[s].v)
					memset(lat[s].v, 0, lat[s].cap * sizeof(*lat[s].v));
			}
			writing = pthread_create(&writer, NULL, mg_mmap_writer, &w) == 0;
			/* The parent measures nothing before this byte. */
			if (write(ready_fd, writing ? "S" : "F", 1) != 1)
				break;
		}
	}
	/* endregion: target */
	__atomic_store_n(&sh->phase, MG_PHASE_STOP, __ATOMIC_RELEASE);
	if (writing) {
		/* Every slot's samples were added before STOP: no race with the writer left. */
		pthread_join(writer, NULL);
		for (int s = 0; s < c->nslots; s++)
			rr_cell_from_lat(&sh->cell[RR_WRITER][s], &lat[s]);
	}
	__atomic_store_n(&sh->done[RR_WRITER], 1, __ATOMIC_RELEASE);
	_exit(0);
}

/* ---- a reader -------------------------------------------------------------------- */

enum rr_outcome rr_read_once(const struct rr_reader_cfg *c, int fd, void *buf, uint64_t *ns)
{
	uint64_t t0 = mg_now_ns();
	ssize_t got;
	int err;
	enum rr_outcome o = rr_pread(fd, buf, c->len, c->off, &got, &err);

	*ns = mg_now_ns() - t0;
	if (o != RR_OK)
		errno = err;
	else if (c->expect ? memcmp(buf, c->expect, c->len) != 0
			   : !rr_check(buf, c->len, c->off - RR_REGION_BASE, true))
		o = RR_MISMATCH;
	return o;
}

/* region: reader-loop */
void rr_reader(const struct rr_reader_cfg *c, struct rr_shared *sh)
{
	int id = c->role - RR_MEM, fd, err = 0;
	enum rr_outcome why;
	struct mg_lat *lat = calloc(RR_MAX_SLOTS, sizeof(*lat));
	char *buf = malloc(c->len);

	child_setup(c->cpu);
	fd = rr_open(c->target, c->role == RR_MEM ? "mem" : "cmdline", &why, &err);
	for (int s = 0; lat && s < RR_MAX_SLOTS; s++)
		mg_lat_init(&lat[s], 1 << 17); /* touched only as used */
	while (fd >= 0 && buf && lat && mg_now_ns() < c->deadline_ns) {
		int p = __atomic_load_n(&sh->phase, __ATOMIC_ACQUIRE);
		int e = __atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE);
		uint64_t ns;

		if (p == MG_PHASE_STOP)
			break;
		if (p < 0 || p >= RR_MAX_SLOTS || !sh->readers_on[p]) {
			__atomic_store_n(&sh->seen[id], e, __ATOMIC_RELEASE);
			mg_sleep_us(1000);
			continue;
		}
		why = rr_read_once(c, fd, buf, &ns);
		err = why == RR_OK ? 0 : errno;
		/* A read that started at epoch e has finished. */
		__atomic_store_n(&sh->seen[id], e, __ATOMIC_RELEASE);
		if (p == __atomic_load_n(&sh->phase, __ATOMIC_ACQUIRE)) {
			sh->cell[c->role][p].outcome[why]++;
			if (why == RR_OK)
				mg_lat_add(&lat[p], ns); /* only whole, correct reads are timed */
			else
				sh->cell[c->role][p].last_err = err;
		}
		if (why == RR_GONE)
			break;
	}
	/* endregion: reader-loop */
	for (int s = 0; lat && s < RR_MAX_SLOTS; s++)
		rr_cell_from_lat(&sh->cell[c->role][s], &lat[s]);
	if (fd < 0) /* the open failed: say why in slot 0 */
		sh->cell[c->role][0].outcome[why]++, sh->cell[c->role][0].last_err = err;
	__atomic_store_n(&sh->done[c->role], 1, __ATOMIC_RELEASE);
	_exit(0);
}

/* ---- starting them ---------------------------------------------------------------- */

static pid_t spawn(void)
{
	pid_t pid;

	fflush(stdout); /* a child must not print the parent's buffer again */
	pid = fork();
	if (pid > 0)
		mg_register_child(pid);
	return pid;
}

/* The target's one-byte answer within 30 s, or 0. */
static char answer(struct rr_procs *p)
{
	struct pollfd pf = { .fd = p->ready_fd, .events = POLLIN };
	char c = 0;

	if (poll(&pf, 1, 30000) != 1 || read(p->ready_fd, &c, 1) != 1)
		return 0;
	return c;
}

bool rr_start_target(struct rr_procs *p, const struct rr_target_cfg *c, const char **why)
{
	int rdy[2], cmd[2];
	char a;

	p->target = -1;
	p->cmd_fd = p->ready_fd = -1;
	if (pipe(rdy) || pipe(cmd)) {
		*why = "pipe() failed";
		return false;
	}
	if ((p->target = spawn()) == 0) {
		close(rdy[0]), close(cmd[1]);
		rr_target(c, p->sh, rdy[1], cmd[0]);
	}
	close(rdy[1]), close(cmd[0]);
	p->cmd_fd = cmd[1];
	p->ready_fd = rdy[0];
	a = p->target > 0 ? answer(p) : 0;
	*why = p->target < 0 ? "fork() failed" : a == 'F' ? "its mmap() at the fixed address failed"
		: a != 'R' ? "no answer within 30 s" : NULL;
	return a == 'R';
}

bool rr_start_writer(struct rr_procs *p)
{
	return write(p->cmd_fd, "W", 1) == 1 && answer(p) == 'S';
}

bool rr_start_reader(struct rr_procs *p, const struct rr_reader_cfg *c)
{
	pid_t pid = spawn();

	if (pid == 0) {
		close(p->cmd_fd), close(p->ready_fd); /* the target sees EOF when the parent closes */
		rr_reader(c, p->sh);
	}
	p->reader[c->role - RR_MEM] = pid;
	return pid > 0;
}

void rr_close_target(struct rr_procs *p)
{
	if (p->cmd_fd >= 0)
		close(p->cmd_fd);
	if (p->ready_fd >= 0)
		close(p->ready_fd);
	p->cmd_fd = p->ready_fd = -1;
}
