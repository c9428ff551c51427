/* Guest stress program "remote-stress": /proc/PID/mem, cmdline, environ and PTRACE_PEEKDATA readers and a /proc/PID/mem writer against a target whose VMAs change, fault and exit, with access_remote_vm_vma_lock flipped 0/1 (patch 0009, for the debug kernel). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "remote_stress/check.h"
#include "remote_stress/target.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static struct {
	long long seconds, readers, flip_ms, life_ms;
	bool quick;
} opt = { 60, 2, 100, 1000, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: remote_stress [--quick] [--seconds S] [--readers R] [--flip-ms F] [--life-ms L]\n"
		"\n"
		"Stress of __access_remote_vm() under both paths of patch 0009 (needs the patched\n"
		"mmlocks 6.12 kernel; meant for the debug kernel, make debug-check). A target\n"
		"process (a child) fills its regions with a pattern that depends only on the\n"
		"address, and runs four threads: one mprotect()s single pages (VMAs split and\n"
		"merge), one maps and unmaps pages in a hole region, one mremap()s a block back\n"
		"and forth, one writes pages and drops them with MADV_DONTNEED. R threads\n"
		"pread() /proc/PID/mem (8 B to 5 pages, often across VMA boundaries or the end\n"
		"of a region, in never-mapped gaps), one reads /proc/PID/cmdline and environ,\n"
		"one pwrite()s the pattern through /proc/PID/mem (also into read-only VMAs:\n"
		"FOLL_FORCE), and the main thread PTRACE_PEEKDATAs a ptrace-stopped thread of\n"
		"the target. Every F ms access_remote_vm_vma_lock flips\n"
		"between 0 and 1; every L ms the target is SIGKILLed, often mid-read, and\n"
		"replaced. Checks: every byte read is the pattern (or 0 where pages are\n"
		"dropped or new); reads of fixed regions return every mapped byte up to the\n"
		"region's end; never-mapped addresses give EIO; cmdline and environ equal\n"
		"ours; on a quiet target both switch positions return the same bytes and\n"
		"errors (also for the [vvar] VM_PFNMAP mapping), position 0 moves only\n"
		"access_remote_vm_mmap_locked, and position 1 serves in-VMA reads under the VMA\n"
		"lock and counts each fallback reason; no\n"
		"target is stuck after SIGKILL. Knobs are restored on exit, SIGINT and SIGTERM.\n"
		"\n"
		"  --seconds S   run time (1..3600, default 60; quick 3)\n"
		"  --readers R   /proc/PID/mem reader threads (1..8, default 2)\n"
		"  --flip-ms F   time per switch position (10..60000, default 100)\n"
		"  --life-ms L   target lifetime (50..600000, default 1000; quick 500)\n"
		"  --quick       short run (< 10 s under TCG)\n"
		"  --help        this text\n"
		"\n"
		"Output: JSON lines (info, check, sample, summary); progress on stderr.\n"
		"Exit: 0 all checks pass, 1 a check failed, 2 usage, 3 wrong kernel.\n");
}

/* ---- the readers, the writer, the ptrace peeks ---------------------------- */

static pid_t cur_pid; /* the target; 0 while there is none */
static int stop;
static unsigned long long n_ok, n_gone, n_peek, n_write, n_cmdline, n_flips;

/* ---- the readers, the writer, the ptrace peeks ---------------------------- */

/* Keep /proc/PID/mem of the current target open; -1 while there is none. */
static int mem_fd(int *fd, pid_t *fd_pid, int flags)
{
	pid_t pid = __atomic_load_n(&cur_pid, __ATOMIC_ACQUIRE);
	char path[64];

	if (pid != *fd_pid) {
		if (*fd >= 0)
			close(*fd);
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		*fd = pid ? open(path, flags | O_CLOEXEC) : -1;
		*fd_pid = *fd >= 0 ? pid : 0;
	}
	return *fd;
}

static void *mem_reader(void *arg)
{
	unsigned int s = (unsigned int)(uintptr_t)arg;
	unsigned char *buf = malloc(MAXLEN);
	int fd = -1;
	pid_t fd_pid = 0;

	while (buf && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !mg_stop_signal) {
		unsigned long addr;
		size_t len;
		ssize_t n;

		if (mem_fd(&fd, &fd_pid, O_RDONLY) < 0) {
			mg_sleep_us(1000);
			continue;
		}
		pick(&s, false, &addr, &len);
		n = pread(fd, buf, len, (off_t)addr);
		if (n == 0) { /* the target's mm is gone */
			__atomic_fetch_add(&n_gone, 1, __ATOMIC_RELAXED);
			close(fd);
			fd = -1, fd_pid = 0;
			continue;
		}
		if (judge("pread", addr, len, false, n, errno, buf))
			__atomic_fetch_add(&n_ok, 1, __ATOMIC_RELAXED);
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void *mem_writer(void *arg)
{
	static unsigned char buf[MAXLEN];
	unsigned int s = 77;
	int fd = -1;
	pid_t fd_pid = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !mg_stop_signal) {
		unsigned long addr;
		size_t len;
		ssize_t n;

		if (mem_fd(&fd, &fd_pid, O_RDWR) < 0) {
			mg_sleep_us(1000);
			continue;
		}
		pick(&s, true, &addr, &len);
		for (size_t i = 0; i < len; i++)
			buf[i] = pat(addr + i);
		n = pwrite(fd, buf, len, (off_t)addr);
		if (n == 0) {
			close(fd);
			fd = -1, fd_pid = 0;
		} else if (n != (ssize_t)len) {
			bad("pwrite at %#lx+%zu returned %zd (%s)", addr, len, n,
			    n < 0 ? strerror(errno) : "-");
		} else {
			__atomic_fetch_add(&n_write, 1, __ATOMIC_RELAXED);
		}
	}
	if (fd >= 0)
		close(fd);
	return arg;
}

static void *args_reader(void *arg)
{
	static char buf[ARGS_MAX];

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !mg_stop_signal) {
		pid_t pid = __atomic_load_n(&cur_pid, __ATOMIC_ACQUIRE);

		if (!pid) {
			mg_sleep_us(1000);
		} else if (read_args(pid, buf)) {
			__atomic_fetch_add(&n_cmdline, 1, __ATOMIC_RELAXED);
		} else {
			bad("/proc/%d/cmdline or environ differs from ours", (int)pid);
		}
	}
	return arg;
}

/* Flip the switch every --flip-ms, on its own clock (the main loop is slow on a debug kernel). */
static void *flipper(void *arg)
{
	for (int pos = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !mg_stop_signal; pos ^= 1) {
		mg_knob_set_ll(KNOB, pos);
		n_flips++;
		mg_sleep_us((unsigned long)opt.flip_ms * 1000);
	}
	return arg;
}

/* Attach to the target's idle thread and stop it (PTRACE_SEIZE + INTERRUPT), bounded. */
static bool ptrace_stop(pid_t tid)
{
	int st;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return false;
	for (int i = 0; i < 2000; i++) {
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);

		if (r == tid)
			return WIFSTOPPED(st);
		if (r < 0)
			return false;
		mg_sleep_us(1000);
	}
	return false;
}

/* A burst of PTRACE_PEEKDATA, 8 bytes each, judged like a read. */
static void peek_burst(pid_t tid, unsigned int *s)
{
	for (int k = 0; k < 16; k++) {
		unsigned long addr;
		size_t len;
		long v;

		pick(s, false, &addr, &len);
		errno = 0;
		v = ptrace(PTRACE_PEEKDATA, tid, (void *)addr, 0);
		if (errno == ESRCH)
			return;
		/* peekdata is all or nothing: EIO when 8 bytes are not all there */
		judge("peek", addr, 8, true, errno ? -1 : 8, errno, (unsigned char *)&v);
		n_peek++;
	}
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct mg_opt o[] = {
		MG_INT("seconds", &opt.seconds, 1, 3600, 3),
		MG_INT("readers", &opt.readers, 1, 8, MG_NO_QUICK),
		MG_INT("flip-ms", &opt.flip_ms, 10, 60000, MG_NO_QUICK),
		MG_INT("life-ms", &opt.life_ms, 50, 600000, 500),
		MG_OPTS_END,
	};
	static const char *const need[] = {
		KNOB, MG_KNOBS "/access_remote_vm_vma_locked", MG_KNOBS "/access_remote_vm_fallback_page",
		"/proc/self/mem", NULL,
	};
	long long c0[C_NR], c1[C_NR];
	unsigned long long targets = 0;
	uint64_t t0, next_kill, end;
	unsigned long vvar;
	pthread_t th[8 + 3];
	unsigned int seed = 99;
	int nth = 0;
	bool ok = true, attached = false, quiet_ok;
	struct mg_json j;
	pid_t pid = 0, tid = 0;

	opt.quick = mg_parse_opts("remote_stress", argc, argv, o, usage);
	mg_require(EXP, need);
	mg_install_restore();
	vvar = find_vvar();
	if (read_counters(c0) || read_self_args()) {
		mg_error(EXP, "cannot read the access_remote_vm_* counters or our own cmdline/environ");
		return MG_EXIT_FAIL;
	}
	mgj_start(&j, "info", EXP);
	mgj_int(&j, "seconds", opt.seconds);
	mgj_int(&j, "readers", opt.readers);
	mgj_int(&j, "flip_ms", opt.flip_ms);
	mgj_int(&j, "life_ms", opt.life_ms);
	mgj_bool(&j, "vvar_found", vvar != 0);
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);

	for (long long i = 0; i < opt.readers; i++)
		nth += !pthread_create(&th[nth], NULL, mem_reader, (void *)(uintptr_t)(i + 1));
	nth += !pthread_create(&th[nth], NULL, mem_writer, NULL);
	nth += !pthread_create(&th[nth], NULL, args_reader, NULL);
	mg_knob_set_ll(KNOB, 1); /* remembered for the restore before the flipper starts */
	nth += !pthread_create(&th[nth], NULL, flipper, NULL);

	t0 = mg_now_ns();
	end = t0 + (uint64_t)opt.seconds * 1000000000ull;
	next_kill = t0;
	/* region: remote-stress-loop */
	while (mg_now_ns() < end && !mg_stop_signal && ok) {
		uint64_t now = mg_now_ns();

		if (now >= next_kill) { /* readers go on reading the old target while it dies */
			if (pid > 0 && mg_kill_child(EXP, pid)) {
				ok = false;
				break;
			}
			pid = spawn_target(false, &tid);
			if (pid <= 0) {
				mg_error(EXP, "starting a target failed");
				ok = false;
				break;
			}
			targets++;
			attached = ptrace_stop(tid);
			__atomic_store_n(&cur_pid, pid, __ATOMIC_RELEASE);
			next_kill = mg_now_ns() + (uint64_t)opt.life_ms * 1000000ull;
		}
		if (attached)
			peek_burst(tid, &seed);
		mg_sleep_us(1000);
	}
	/* endregion: remote-stress-loop */
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	if (pid > 0 && mg_kill_child(EXP, pid))
		ok = false;
	quiet_ok = ok && !mg_stop_signal && quiet_check(vvar);
	read_counters(c1);
	mg_restore_all();

	mgj_start(&j, "sample", EXP);
	mgj_num(&j, "seconds", (double)(mg_now_ns() - t0) / 1e9);
	mgj_int(&j, "targets", (long long)targets);
	mgj_int(&j, "switch_flips", (long long)n_flips);
	mgj_int(&j, "threads", nth);
	mgj_int(&j, "reads_ok", (long long)n_ok);
	mgj_int(&j, "reads_target_gone", (long long)n_gone);
	mgj_int(&j, "reads_eio", (long long)n_eio);
	mgj_int(&j, "reads_short", (long long)n_short);
	mgj_int(&j, "peeks", (long long)n_peek);
	mgj_int(&j, "writes_ok", (long long)n_write);
	mgj_int(&j, "cmdline_environ_ok", (long long)n_cmdline);
	mgj_int(&j, "bad", (long long)n_bad);
	for (int i = 0; i < C_NR; i++)
		mgj_int(&j, counters[i], c1[i] - c0[i]);
	mgj_emit(&j);
	if (n_bad)
		mg_log("first bad access: %s", bad_msg);

	ok = ok && !mg_stop_signal && quiet_ok && n_bad == 0 && n_ok > 0 && n_peek > 0 && n_write > 0 &&
	     n_cmdline > 0 && nth == opt.readers + 3 && c1[C_VMA] > c0[C_VMA] &&
	     c1[C_FALLBACK] > c0[C_FALLBACK];
	mgj_start(&j, "summary", EXP);
	mgj_str(&j, "goal", "every byte read is the pattern (or 0 where allowed), fixed regions read "
			    "whole, gaps give EIO, cmdline/environ intact, both paths ran, the quiet "
			    "check passed, no target stuck after SIGKILL");
	mgj_bool(&j, "pass", ok);
	if (n_bad)
		mgj_str(&j, "first_bad", bad_msg);
	mgj_emit(&j);
	return ok ? MG_EXIT_OK : MG_EXIT_FAIL;
}
