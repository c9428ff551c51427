/*
 * tasks.h: the processes of a remote_read run. The target (a forked child)
 * holds a resident region with a known pattern and, on request, a writer
 * thread doing mmap()/munmap() of single pages elsewhere (mg_mmap_writer);
 * reader processes loop on /proc/TARGET/mem and /proc/TARGET/cmdline. The
 * parent steers them through one MAP_SHARED page: the phase (which slot is
 * being measured), an epoch handshake, and the results each child writes
 * before it exits. Nothing here needs the patched kernel (host-tested).
 */
#ifndef REMOTE_READ_TASKS_H
#define REMOTE_READ_TASKS_H

#include "mmlocks_guest.h"
#include "remote_read/access.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The target's region: at 1 GiB, far below the top-down mmap area where the
 * writer's pages land, and in the low memory ASan leaves to programs (host tests).
 */
#define RR_REGION_BASE 0x40000000ull
#define RR_MAX_SLOTS 120

/* Who writes results: the target's writer thread and the two readers. */
enum { RR_WRITER, RR_MEM, RR_CMDLINE, RR_NROLES };
#define RR_NREADERS 2 /* RR_MEM and RR_CMDLINE */
extern const char *const rr_role_name[RR_NROLES];

/* What one role measured in one slot (latencies in ns). */
struct rr_cell {
	int64_t count, p50, p99, max, sum;
	int64_t outcome[RR_NOUT]; /* readers: reads per outcome (only RR_OK is timed) */
	int64_t last_err;	  /* readers: the errno of the last failed read */
};

struct rr_shared {
	int phase;		   /* slot >= 0, MG_PHASE_IDLE or MG_PHASE_STOP */
	int epoch;		   /* bumped by the parent after each switch write */
	int seen[RR_NREADERS];	   /* the epoch at the start of each reader's last finished read */
	bool readers_on[RR_MAX_SLOTS]; /* false: a baseline slot, the readers wait */
	struct rr_cell cell[RR_NROLES][RR_MAX_SLOTS];
	int done[RR_NROLES];	   /* set by each child after its cells */
	int target_mlocked, target_mlock_err;
};

/* A MAP_SHARED zeroed rr_shared (phase IDLE), or NULL. */
struct rr_shared *rr_shared_new(void);

/* Reduce latencies to a cell (sorts l's samples). */
void rr_cell_from_lat(struct rr_cell *c, struct mg_lat *l);

/* ---- the target ------------------------------------------------------------ */

struct rr_target_cfg {
	size_t region_bytes;	/* mapped at RR_REGION_BASE; the next page stays unmapped */
	int cpu;		/* -1: not pinned */
	int nslots;		/* writer latency slots */
	unsigned long pause_us; /* the writer's pause between mmap+munmap pairs */
	uint64_t deadline_ns;	/* give up waiting for the parent */
};

/*
 * The target: map and fill the region (pattern), mlock() it (the result in
 * sh->target_mlocked / target_mlock_err), write one byte 'R' (or 'F' when
 * the region cannot be mapped) on ready_fd. Then read commands from cmd_fd:
 * 'W' starts the writer thread (mg_mmap_writer on sh->phase, recording into
 * nslots slots) and answers 'S' on ready_fd once it runs ('F' if it cannot
 * start). EOF on cmd_fd (or the deadline) ends it: phase STOP, the
 * writer joined, its cells written, done[RR_WRITER] set. Never returns.
 */
void rr_target(const struct rr_target_cfg *c, struct rr_shared *sh, int ready_fd, int cmd_fd)
	__attribute__((noreturn));

/* ---- a reader --------------------------------------------------------------- */

struct rr_reader_cfg {
	int role;		/* RR_MEM or RR_CMDLINE */
	pid_t target;
	uint64_t off;		/* where to read: RR_REGION_BASE (mem), 0 (cmdline) */
	size_t len;
	const char *expect;	/* cmdline: the bytes expected; mem: NULL (pattern checked) */
	int cpu;
	uint64_t deadline_ns;
};

/*
 * A reader: open /proc/TARGET/mem or cmdline and read it in a loop while
 * sh->phase is a slot with readers_on, timing each read and recording it
 * in that slot if the phase did not change meanwhile; otherwise wait (1 ms
 * naps) and publish the epoch in sh->seen. Stops at STOP, the deadline, or
 * when the target is gone; writes its cells and done[role]; never returns.
 */
void rr_reader(const struct rr_reader_cfg *c, struct rr_shared *sh) __attribute__((noreturn));

/* ---- starting them ------------------------------------------------------------ */

/* The processes of a run and the pipes to the target. */
struct rr_procs {
	struct rr_shared *sh;
	pid_t target, reader[RR_NREADERS];
	int cmd_fd, ready_fd; /* commands to the target, its answers */
};

/*
 * Fork the target (registered with the restorer) and wait at most 30 s for
 * its 'R'. False with *why saying what went wrong; p->target is then -1 or
 * a child the caller reaps.
 */
bool rr_start_target(struct rr_procs *p, const struct rr_target_cfg *c, const char **why);
/* Start the target's writer; true once it said 'S' (at most 30 s). */
bool rr_start_writer(struct rr_procs *p);
/* Fork reader c->role (its copies of the target's pipes closed); false if fork failed. */
bool rr_start_reader(struct rr_procs *p, const struct rr_reader_cfg *c);
/* Close the target's pipes: EOF ends it. */
void rr_close_target(struct rr_procs *p);

/* One reader iteration (the body of rr_reader's loop), for the tests. */
enum rr_outcome rr_read_once(const struct rr_reader_cfg *c, int fd, void *buf, uint64_t *ns);

#endif
