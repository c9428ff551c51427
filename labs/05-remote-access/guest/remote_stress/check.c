/* remote_stress's checks: what an access may return, cmdline/environ, and the quiet-target comparison. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "remote_stress/check.h"
#include "remote_stress/target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned long long n_eio, n_short, n_bad;
char bad_msg[256];

void bad(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&n_bad, 1, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(bad_msg, sizeof(bad_msg), fmt, ap);
	va_end(ap);
}

/*
 * Judge an access of len bytes at addr that returned n (-1: errno err); true
 * if allowed. A whole access (PTRACE_PEEKDATA) cannot be short: it fails
 * with EIO where a read would stop at the end of the mapped part.
 */
bool judge(const char *who, unsigned long addr, size_t len, bool whole, ssize_t n, int err,
	   const unsigned char *buf)
{
	int r = region_of(addr);
	enum check c = regions[r].check;
	unsigned long end = regions[r].base + regions[r].pages * PG;
	size_t want = addr + len > end ? end - addr : len;
	const char *why = NULL;
	ssize_t i = 0;

	if (whole && want < len)
		c = c == EXACT || c == ZERO ? EIO_ONLY : c;
	if (n < 0 && err == EIO)
		__atomic_fetch_add(&n_eio, 1, __ATOMIC_RELAXED);
	if (c == EIO_ONLY)
		why = n < 0 && err == EIO ? NULL : "a never-mapped address did not give EIO";
	else if (n < 0 && (err != EIO || c == EXACT || c == ZERO))
		why = "the read failed";
	else if ((c == EXACT || c == ZERO) && (size_t)n != want)
		why = "short or long read of a fixed region";
	for (; !why && i < n; i++)
		if (buf[i] != pat(addr + i) && (buf[i] || c == EXACT || c == LOOSE))
			why = "a byte is not the pattern";
	if (!why) {
		if (n >= 0 && (size_t)n < len)
			__atomic_fetch_add(&n_short, 1, __ATOMIC_RELAXED);
		return true;
	}
	bad("%s %s at %#lx+%zu (%s): returned %zd (%s), byte %zd", who, why, addr, len,
	    regions[r].name, n, n < 0 ? strerror(err) : "-", i - 1);
	return false;
}

static char self_cmdline[4096], self_environ[ARGS_MAX];
static ssize_t self_cmdline_n, self_environ_n;

int read_self_args(void)
{
	self_cmdline_n = mg_read_file("/proc/self/cmdline", self_cmdline, sizeof(self_cmdline));
	self_environ_n = mg_read_file("/proc/self/environ", self_environ, sizeof(self_environ));
	return self_cmdline_n > 0 && self_environ_n >= 0 ? 0 : -1;
}

/* /proc/PID/cmdline and environ must read as ours (the target is our fork), or as empty. */
bool read_args(pid_t pid, char *buf)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = mg_read_file(path, buf, ARGS_MAX);
	if (n > 0 && (n != self_cmdline_n || memcmp(buf, self_cmdline, (size_t)n)))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	n = mg_read_file(path, buf, ARGS_MAX);
	return n <= 0 || (n == self_environ_n && !memcmp(buf, self_environ, (size_t)n));
}

/* ---- counters and the quiet check -------------------------------------- */

const char *const counters[C_NR] = {
	"access_remote_vm_vma_locked", "access_remote_vm_mmap_locked", "access_remote_vm_fallback",
	"access_remote_vm_fallback_novma", "access_remote_vm_fallback_span",
	"access_remote_vm_fallback_pfnmap", "access_remote_vm_fallback_page",
};

int read_counters(long long *v)
{
	char path[256];

	for (int i = 0; i < C_NR; i++) {
		snprintf(path, sizeof(path), MG_KNOBS "/%s", counters[i]);
		if (mg_read_ll(path, &v[i]))
			return -1;
	}
	return 0;
}

/* Fixed probes of a quiet target, one per fallback reason and per kind of success. */
static struct probe {
	unsigned long addr;
	size_t len;
	ssize_t n[2];
	int err[2];
	unsigned char buf[2][3 * PG];
} probes[] = {
	{ .addr = SLOT(R_STABLE) + 8, .len = 8 },                         /* inside one VMA: VMA lock */
	{ .addr = SLOT(R_STABLE) + 4 * PG - 4, .len = 8 },                /* across two VMAs: span */
	{ .addr = SLOT(R_STABLE) + 3 * PG + 100, .len = 3 * PG },         /* across three */
	{ .addr = SLOT(R_STABLE) + 64 * PG - 16, .len = 64 },             /* into the gap: short */
	{ .addr = SLOT(R_WRITE) + 5 * PG + 1, .len = PG },                /* a read-only VMA */
	{ .addr = SLOT(R_DONTNEED) + 40 * PG + 3, .len = PG },            /* dropped: page (first time) */
	{ .addr = SLOT(R_GAP) + 100, .len = 8 },                          /* never mapped: novma, EIO */
	{ .addr = 0, .len = 8 },                                          /* [vvar]: pfnmap, EIO */
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

/* Read every probe (and cmdline, environ) with the switch at `pos`; the counter deltas in d. */
static bool quiet_round(int fd, pid_t pid, int pos, int slot, long long *d)
{
	static char args[ARGS_MAX];
	long long c0[C_NR], c1[C_NR];
	bool ok;

	mg_knob_set_ll(KNOB, pos);
	ok = !read_counters(c0);
	for (size_t i = 0; i < NPROBES; i++) {
		struct probe *p = &probes[i];

		if (!p->addr)
			continue;
		p->n[slot] = pread(fd, p->buf[slot], p->len, (off_t)p->addr);
		p->err[slot] = p->n[slot] < 0 ? errno : 0;
		if (i != NPROBES - 1) /* [vvar]: only compared */
			ok = judge("quiet pread", p->addr, p->len, false, p->n[slot], p->err[slot],
				   p->buf[slot]) && ok;
	}
	ok = read_args(pid, args) && ok;
	ok = !read_counters(c1) && ok;
	for (int i = 0; i < C_NR; i++)
		d[i] = c1[i] - c0[i];
	return ok;
}

bool quiet_check(unsigned long vvar)
{
	long long d[4][C_NR];
	pid_t tid, pid = spawn_target(true, &tid);
	char path[64];
	bool ok = pid > 0, same = true, counted;
	int fd = -1;
	struct mg_json j;

	probes[NPROBES - 1].addr = vvar;
	if (ok) {
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ok = fd >= 0;
	}
	/* Rounds 1, 0, 1, 0: the first meets the dropped pages, so it must count "page". */
	for (int k = 0; k < 4 && ok; k++) {
		ok = quiet_round(fd, pid, !(k & 1), k & 1, d[k]) && ok;
		for (size_t i = 0; (k & 1) && i < NPROBES; i++) {
			struct probe *p = &probes[i];

			same = same && (!p->addr || (p->n[0] == p->n[1] && p->err[0] == p->err[1] &&
				(p->n[0] <= 0 || !memcmp(p->buf[0], p->buf[1], (size_t)p->n[0]))));
		}
	}
	counted = ok && d[0][C_VMA] > 0 && d[0][C_SPAN] > 0 && d[0][C_NOVMA] > 0 && d[0][C_PAGE] > 0 &&
		  (!vvar || d[0][C_PFNMAP] > 0) && d[2][C_PAGE] == 0 && d[2][C_VMA] > d[0][C_VMA];
	for (int k = 1; k < 4; k += 2)
		for (int i = 0; i < C_NR; i++)
			counted = counted && (i == C_MMAP ? d[k][i] > 0 : d[k][i] == 0);
	if (fd >= 0)
		close(fd);
	if (pid > 0 && mg_kill_child(EXP, pid))
		ok = false;
	mgj_start(&j, "check", EXP);
	mgj_str(&j, "check", "quiet target: switch 0 and 1 return the same bytes and errors; 1 counts "
			     "each fallback reason, 0 only access_remote_vm_mmap_locked");
	mgj_bool(&j, "pass", ok && same && counted);
	mgj_bool(&j, "same", same);
	mgj_bool(&j, "counted", counted);
	mgj_bool(&j, "vvar_found", vvar != 0);
	for (int i = 0; i < C_NR; i++) {
		char key[64];

		snprintf(key, sizeof(key), "%s_pos1", counters[i]);
		mgj_int(&j, key, d[0][i]);
		snprintf(key, sizeof(key), "%s_pos0", counters[i]);
		mgj_int(&j, key, d[1][i]);
	}
	mgj_emit(&j);
	return ok && same && counted;
}

unsigned long find_vvar(void)
{
	static char maps[65536];
	char *p;

	if (mg_read_file("/proc/self/maps", maps, sizeof(maps)) <= 0 || !(p = strstr(maps, "[vvar]\n")))
		return 0;
	while (p > maps && p[-1] != '\n')
		p--;
	return strtoul(p, NULL, 16);
}
