/*
 * The processes of one proc_vs_map run: mapper, scanners, busy-wait tasks
 * (see tasks.h). Each ends with _exit(): a forked child must not run the
 * parent's atexit restorer or flush its stdio buffers.
 */
#define _GNU_SOURCE
#include "proc_vs_map/tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

const char *const pvm_scan_name[PVM_SCAN_NR] = {
	[PVM_SCAN_OK] = "ok", [PVM_SCAN_GONE] = "gone", [PVM_SCAN_ESRCH] = "esrch",
	[PVM_SCAN_EOF] = "eof", [PVM_SCAN_SHORT] = "short", [PVM_SCAN_ERROR] = "error",
};

/* ---- one read ------------------------------------------------------------- */

/* show_smaps_rollup() prints the header with "[rollup]" and ends with "Locked: N kB\n". */
bool pvm_rollup_complete(const char *buf, size_t n)
{
	const char *last;

	if (n < 2 || buf[n - 1] != '\n' || !memmem(buf, n, "[rollup]\n", 9))
		return false;
	/* The start of the last line. */
	for (last = buf + n - 1; last > buf && last[-1] != '\n'; last--)
		;
	return (size_t)(buf + n - last) > 8 && !strncmp(last, "Locked:", 7) &&
	       !memcmp(buf + n - 4, " kB\n", 4);
}

/* region: scan-once */
enum pvm_scan pvm_scan_fd(int fd, char *buf, size_t size, int *err)
{
	size_t got = 0;

	*err = 0;
	while (got + 1 < size) {
		ssize_t r = read(fd, buf + got, size - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*err = errno;
			/* show_smaps_rollup(): the task is there, its mm is gone. */
			return *err == ESRCH ? PVM_SCAN_ESRCH : PVM_SCAN_ERROR;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	if (!got)
		return PVM_SCAN_EOF;
	return pvm_rollup_complete(buf, got) ? PVM_SCAN_OK : PVM_SCAN_SHORT;
}

enum pvm_scan pvm_scan_once(const char *path, char *buf, size_t size, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	enum pvm_scan s;

	if (fd < 0) {
		*err = errno;
		/* /proc/PID is gone (ENOENT), or the task has no mm any more (ESRCH). */
		return errno == ENOENT || errno == ESRCH ? PVM_SCAN_GONE : PVM_SCAN_ERROR;
	}
	s = pvm_scan_fd(fd, buf, size, err);
	close(fd);
	return s;
}
/* endregion: scan-once */

/* ---- plumbing ------------------------------------------------------------ */

void pvm_send(int fd, int kind, int id, const int64_t *v)
{
	struct pvm_msg m = { .kind = kind, .id = id };

	if (v)
		memcpy(m.v, v, sizeof(m.v));
	/* One write of less than PIPE_BUF bytes: atomic, never interleaved. */
	while (write(fd, &m, sizeof(m)) < 0 && errno == EINTR)
		;
}

uint64_t pvm_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Whether fd has reached EOF (or is readable) within timeout_ms. */
static bool fd_closed(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) > 0;
}

/* ---- the mapper ---------------------------------------------------------- */

/* region: mapper-loop */
void pvm_mapper(const struct pvm_mapper_cfg *c, int report_fd, int go_fd)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = c->region_pages * pg;
	int64_t v[PVM_NV] = { 0 };
	uint64_t seed = c->seed ? c->seed : 1, t_end, t_go;
	struct mg_lat lat;
	char go;
	char *region = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (region == MAP_FAILED) {
		v[0] = errno;
		v[1] = 1;
		pvm_send(report_fd, PVM_MAPPER_FAILED, 0, v);
		_exit(1);
	}
	mg_lat_init(&lat, c->lat_cap);
	v[0] = (int64_t)(uintptr_t)region;
	pvm_send(report_fd, PVM_MAPPER_READY, 0, v);
	/* The parent starts the scanners, then says go; a dead parent is EOF. */
	if (!fd_closed(go_fd, 60000) || read(go_fd, &go, 1) != 1)
		_exit(1);
	t_go = mg_now_ns();
	t_end = t_go + c->seconds_ns;
	for (uint64_t now = t_go; now < t_end; now = mg_now_ns()) {
		uint64_t r = pvm_rand(&seed);
		char *page = region + (r >> 1) % c->region_pages * pg;
		uint64_t t0 = mg_now_ns(), t1;
		bool map = r & 1;
		int failed = map ? mmap(page, pg, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE,
					-1, 0) != page
				 : munmap(page, pg) != 0;

		t1 = mg_now_ns();
		if (failed) {
			v[0] = errno;
			v[1] = 2;
			pvm_send(report_fd, PVM_MAPPER_FAILED, 0, v);
			_exit(1);
		}
		if (t1 - t0 > lat.max) {
			v[PVM_M_MAX_AT] = (int64_t)lat.count;
			v[PVM_M_MAX_MAP] = map;
		}
		/* Where in the window the long calls fall (the first calls meet one big VMA). */
		int64_t *q = &v[PVM_M_MAX_Q + (t0 - t_go) * 4 / c->seconds_ns % 4];
		if ((int64_t)(t1 - t0) > *q)
			*q = (int64_t)(t1 - t0);
		mg_lat_add(&lat, t1 - t0);
		v[map ? PVM_M_MAPS : PVM_M_UNMAPS]++;
		v[PVM_M_SUM_NS] += (int64_t)(t1 - t0);
		if (c->pause_us)
			mg_sleep_us(c->pause_us);
	}
	/* endregion: mapper-loop */
	v[PVM_M_WINDOW_NS] = (int64_t)(mg_now_ns() - t_go);
	v[PVM_M_OPS] = (int64_t)lat.count;
	v[PVM_M_MAX_NS] = (int64_t)lat.max;
	v[PVM_M_P50_NS] = (int64_t)mg_lat_pct(&lat, 50);
	v[PVM_M_P99_NS] = (int64_t)mg_lat_pct(&lat, 99);
	v[PVM_M_VMAS] = mg_count_vmas((uintptr_t)region, (uintptr_t)region + len, NULL);
	pvm_send(report_fd, PVM_MAPPER_DONE, 0, v);
	_exit(0);
}

/* ---- a scanner ----------------------------------------------------------- */

/* region: scanner-loop */
void pvm_scanner(int id, pid_t target, int report_fd, int stop_fd, uint64_t deadline_ns)
{
	size_t size = 1 << 16;
	char path[64], *buf = malloc(size);
	int64_t v[PVM_NV] = { 0 };
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)target);
	while (buf && mg_now_ns() < deadline_ns && !fd_closed(stop_fd, 0)) {
		uint64_t t0 = mg_now_ns(), dt;
		enum pvm_scan s = pvm_scan_once(path, buf, size, &err);

		v[s]++;
		if (s == PVM_SCAN_OK) {
			dt = mg_now_ns() - t0;
			v[PVM_S_SUM_NS] += (int64_t)dt;
			if ((int64_t)dt > v[PVM_S_MAX_NS])
				v[PVM_S_MAX_NS] = (int64_t)dt;
			if (v[PVM_SCAN_OK] == 1)
				pvm_send(report_fd, PVM_SCANNER_STARTED, id, NULL);
		} else if (s == PVM_SCAN_GONE || s == PVM_SCAN_ESRCH) {
			break; /* the mapper has exited: this read is not counted */
		} else if (s == PVM_SCAN_ERROR) {
			v[PVM_S_ERRNO] = err;
		}
	}
	/* endregion: scanner-loop */
	free(buf);
	pvm_send(report_fd, PVM_SCANNER_DONE, id, v);
	_exit(0);
}

/* ---- a busy-wait task ---------------------------------------------------- */

void pvm_busy(int id, int busy_ms, int sleep_ms, int report_fd, int stop_fd,
	      uint64_t deadline_ns)
{
	int64_t v[PVM_NV] = { 0 };

	for (;;) {
		uint64_t until = mg_now_ns() + (uint64_t)busy_ms * 1000000u;

		while (mg_now_ns() < until)
			;
		v[0]++;
		/* The sleep is a poll on the stop pipe: EOF ends the task at once. */
		if (mg_now_ns() >= deadline_ns || fd_closed(stop_fd, sleep_ms))
			break;
	}
	pvm_send(report_fd, PVM_BUSY_DONE, id, v);
	_exit(0);
}
