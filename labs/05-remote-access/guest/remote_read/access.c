/* One read of /proc/PID/mem or /proc/PID/cmdline and its classification (see access.h). */
#define _GNU_SOURCE
#include "remote_read/access.h"
#include "mmlocks_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const rr_outcome_name[RR_NOUT] = {
	[RR_OK] = "ok", [RR_SHORT] = "short", [RR_UNMAPPED] = "unmapped", [RR_GONE] = "gone",
	[RR_DENIED] = "denied", [RR_MISMATCH] = "mismatch", [RR_ERROR] = "error",
};

const char *rr_outcome_text(enum rr_outcome o)
{
	switch (o) {
	case RR_OK: return "a whole read with the expected bytes";
	case RR_SHORT: return "a short read: the range runs into an unmapped page";
	case RR_UNMAPPED: return "EIO: nothing is mapped at the address";
	case RR_GONE: return "the target has exited (its mm is gone)";
	case RR_DENIED: return "permission refused (mm_access()/ptrace_may_access())";
	case RR_MISMATCH: return "the bytes read are not the target's";
	default: return "an unexpected error";
	}
}

int rr_open(pid_t pid, const char *file, enum rr_outcome *why, int *err)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	*err = fd < 0 ? errno : 0;
	if (fd < 0)
		*why = *err == ENOENT || *err == ESRCH ? RR_GONE
		     : *err == EACCES || *err == EPERM ? RR_DENIED : RR_ERROR;
	else
		*why = RR_OK;
	return fd;
}

/* region: classify-read */
enum rr_outcome rr_pread(int fd, void *buf, size_t len, uint64_t off, ssize_t *got, int *err)
{
	ssize_t r;

	do
		r = pread(fd, buf, len, (off_t)off);
	while (r < 0 && errno == EINTR);
	*err = r < 0 ? errno : 0;
	*got = r < 0 ? 0 : r;
	if (r == (ssize_t)len)
		return RR_OK;
	if (r > 0)
		return RR_SHORT;     /* mem_rw() stops at the first page it cannot reach */
	if (r == 0)
		return RR_GONE;      /* mem_rw(): mmget_not_zero() failed, the mm has exited */
	switch (*err) {
	case EIO: return RR_UNMAPPED; /* mem_rw(): access_remote_vm() transferred nothing */
	case ESRCH: return RR_GONE;
	case EACCES: case EPERM: return RR_DENIED;
	default: return RR_ERROR;
	}
}
/* endregion: classify-read */

uint64_t rr_pattern(uint64_t off)
{
	/* Distinct in every word and page: a stale or shifted page cannot match. */
	return (off + 0x5a17) * 0x9e3779b97f4a7c15ull;
}

void rr_fill(void *region, size_t len)
{
	uint64_t *w = region;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = rr_pattern(i * 8);
}

bool rr_check(const void *buf, size_t len, uint64_t off, bool sampled)
{
	const unsigned char *b = buf;
	size_t n = len / 8, step = sampled && n > 1 ? n - 1 : 1;
	uint64_t w;

	if (off % 8 || len % 8) { /* an unaligned read (8 B at an odd offset): bytewise */
		for (size_t i = 0; i < len; i++) {
			uint64_t at = off + i;

			w = rr_pattern(at & ~7ull);
			if (b[i] != ((const unsigned char *)&w)[at & 7])
				return false;
		}
		return true;
	}
	for (size_t i = 0; i < n; i += step) {
		memcpy(&w, b + i * 8, 8);
		if (w != rr_pattern(off + i * 8))
			return false;
	}
	return true;
}

/* ---- bad input ------------------------------------------------------------------ */

const char *const rr_probe_name[RR_NPROBES] = {
	[RR_P_WHOLE] = "whole read in the region", [RR_P_UNMAPPED] = "read of an unmapped page",
	[RR_P_CROSSING] = "read running into an unmapped page",
	[RR_P_GONE] = "read after the target exited", [RR_P_DENIED] = "open as an unprivileged user",
};

int rr_reap(pid_t pid, int timeout_ms)
{
	int st = 0;
	pid_t r;

	for (int ms = 0; (r = waitpid(pid, &st, WNOHANG)) == 0 && ms < timeout_ms; ms += 2)
		poll(NULL, 0, 2);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	mg_unregister_child(pid);
	return r == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void probe_read(struct rr_probe *p, int fd, uint64_t off, size_t n, char *buf)
{
	p->got = rr_pread(fd, buf, n, off, &p->bytes, &p->err);
}

/* region: probes */
bool rr_probe_all(pid_t target, uint64_t base, size_t len, struct rr_probe p[RR_NPROBES])
{
	char buf[4096];
	enum rr_outcome why;
	int err, fd = rr_open(target, "mem", &why, &err);
	bool all = true;
	pid_t pid;

	memset(p, 0, sizeof(*p) * RR_NPROBES);
	p[RR_P_WHOLE] = (struct rr_probe){ .expect = RR_OK, .expect_bytes = 4096 };
	p[RR_P_UNMAPPED] = (struct rr_probe){ .expect = RR_UNMAPPED, .expect_bytes = 0 };
	p[RR_P_CROSSING] = (struct rr_probe){ .expect = RR_SHORT, .expect_bytes = 8 };
	p[RR_P_GONE] = (struct rr_probe){ .expect = RR_GONE, .expect_bytes = 0 };
	p[RR_P_DENIED] = (struct rr_probe){ .expect = RR_DENIED, .expect_bytes = 0 };
	if (fd < 0) {
		for (int i = 0; i < RR_P_GONE; i++)
			p[i].got = why, p[i].err = err;
	} else {
		probe_read(&p[RR_P_WHOLE], fd, base, 4096, buf);
		if (p[RR_P_WHOLE].got == RR_OK && !rr_check(buf, 4096, 0, false))
			p[RR_P_WHOLE].got = RR_MISMATCH;
		probe_read(&p[RR_P_UNMAPPED], fd, base + len, 8, buf);
		probe_read(&p[RR_P_CROSSING], fd, base + len - 8, 16, buf);
		if (p[RR_P_CROSSING].got == RR_SHORT && !rr_check(buf, 8, len - 8, false))
			p[RR_P_CROSSING].got = RR_MISMATCH;
		close(fd);
	}

	/* A process that exits between our open and our read: mem_rw() finds no mm. */
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	fd = pid > 0 ? rr_open(pid, "mem", &why, &err) : -1;
	if (pid > 0) {
		kill(pid, SIGKILL);
		rr_reap(pid, 10000);
	}
	if (fd >= 0) {
		probe_read(&p[RR_P_GONE], fd, base, 8, buf); /* any address: there is no mm */
		close(fd);
	} else {
		p[RR_P_GONE].got = RR_ERROR, p[RR_P_GONE].err = pid < 0 ? errno : err;
	}

	/* mm_access(): ptrace_may_access() refuses another user (no CAP_SYS_PTRACE). */
	if (geteuid() != 0) {
		p[RR_P_DENIED].skipped = true;
	} else if ((pid = fork()) == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(RR_NOUT + 1);
		fd = rr_open(target, "mem", &why, &err);
		_exit(fd >= 0 ? RR_OK : (int)why);
	} else {
		int st = pid > 0 ? rr_reap(pid, 10000) : -1;

		p[RR_P_DENIED].got = st >= 0 && st < RR_NOUT ? (enum rr_outcome)st : RR_ERROR;
	}
	/* endregion: probes */
	for (int i = 0; i < RR_NPROBES; i++) {
		p[i].ok = p[i].skipped ||
			  (p[i].got == p[i].expect && (i == RR_P_DENIED || p[i].bytes == p[i].expect_bytes));
		all = all && p[i].ok;
	}
	return all;
}
