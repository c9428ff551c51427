/*
 * Shared helpers for the in-guest experiment programs (see mmlocks_guest.h):
 * talking to the kernel: files, knobs and their restoration, processes, time,
 * CPU placement. mg_json.c prints records and messages; mg_measure.c has
 * options, statistics, the mmap writer and layouts.
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


/* ---- files ------------------------------------------------------------ */

bool mg_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

ssize_t mg_read_file(const char *path, char *buf, size_t size)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((size_t)got + 1 < size) {
		n = read(fd, buf + got, size - 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += n;
	}
	buf[got] = '\0';
	close(fd);
	return got;
}

int mg_read_ll(const char *path, long long *out)
{
	char buf[256];
	ssize_t n = mg_read_file(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (sscanf(buf, "%lld", out) != 1)
		return -EINVAL;
	return 0;
}

long long mg_counter(const char *dir, const char *name)
{
	char path[256];
	long long v;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	return mg_read_ll(path, &v) ? -1 : v;
}

/* Async-signal-safe: used by the restorer from a signal handler too. */
static int write_file_raw(const char *path, const char *val, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (len && write(fd, val, len) != (ssize_t)len)
		ret = -errno;
	close(fd);
	return ret;
}

int mg_write_file(const char *path, const char *val)
{
	return write_file_raw(path, val, strlen(val));
}

/* ---- knobs and restore ------------------------------------------------ */

#define MG_MAX_KNOBS 32
#define MG_MAX_CHILDREN 16

struct saved_knob {
	char path[192];
	char old[192];
};

static struct saved_knob saved[MG_MAX_KNOBS];
static volatile int nsaved;
static volatile pid_t children[MG_MAX_CHILDREN];
static pid_t owner_pid;
static volatile sig_atomic_t restoring;
static void (*volatile restore_hook)(void);
volatile int mg_stop_signal;

/* "always [madvise] never" -> "madvise"; "7 (expanded: 1408)" -> "1408"; lists kept. */
static void knob_canonical(const char *raw, char *out, size_t size)
{
	const char *lb = strchr(raw, '['), *rb = lb ? strchr(lb, ']') : NULL;
	size_t n = 0;

	if (lb && rb) {
		n = (size_t)(rb - lb - 1);
		if (n >= size)
			n = size - 1;
		memcpy(out, lb + 1, n);
	} else if ((lb = strstr(raw, "(expanded: "))) {
		/* An unexpanded ring buffer: restore the size it would expand to. */
		for (lb += strlen("(expanded: "); lb[n] >= '0' && lb[n] <= '9' && n + 1 < size; n++)
			out[n] = lb[n];
	} else {
		/* Multi-line lists (set_event_pid) become one space-separated line. */
		for (; raw[n] && n + 1 < size; n++)
			out[n] = raw[n] == '\n' ? ' ' : raw[n];
		while (n && out[n - 1] == ' ')
			n--;
	}
	out[n] = '\0';
}

/*
 * Phase marks for the standard tools (labs/kernel/README.md, "Tools in the
 * guest"). With MMLOCKS_MARK set in the environment, a successful write to
 * an mmlocks knob is also written as "mmlocks knob NAME=VALUE" to the
 * trace_marker of every tracefs instance: trace-cmd records into an
 * instance (-B), so its trace shows where a program changed phase, while
 * the top-level buffer, which mg_trace reads, stays as it was. With
 * MMLOCKS_MARK_LOCK_STAT=TEXT the /proc/lock_stat lines holding TEXT follow,
 * one mark each ("mmlocks lock_stat LINE"): the counters at the start of the
 * phase. Off (no environment variable) nothing happens.
 */
static void mark_line(const char *text)
{
	DIR *d = opendir(MG_TRACING "/instances");
	struct dirent *e;
	char path[320];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), MG_TRACING "/instances/%s/trace_marker", e->d_name);
		mg_write_file(path, text);
	}
	closedir(d);
}

static void mark_phase(const char *path, const char *val)
{
	const char *ls = getenv("MMLOCKS_MARK_LOCK_STAT");
	char text[512];

	if (!getenv("MMLOCKS_MARK") || strncmp(path, MG_KNOBS "/", strlen(MG_KNOBS "/")))
		return;
	snprintf(text, sizeof(text), "mmlocks knob %s=%s", path + strlen(MG_KNOBS "/"), val);
	mark_line(text);
	if (ls && *ls) {
		FILE *f = fopen("/proc/lock_stat", "re");
		char line[400];

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, ls)) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(text, sizeof(text), "mmlocks lock_stat %s", line);
				mark_line(text);
			}
		if (f)
			fclose(f);
	}
}

int mg_knob_set(const char *path, const char *val)
{
	int i, n = nsaved, err;

	for (i = 0; i < n; i++)
		if (!strcmp(saved[i].path, path))
			break;
	if (i == n) {
		char raw[192];
		ssize_t r;

		if (n == MG_MAX_KNOBS || strlen(path) >= sizeof(saved[0].path))
			return -ENOSPC;
		r = mg_read_file(path, raw, sizeof(raw));
		if (r < 0)
			return (int)r;
		snprintf(saved[n].path, sizeof(saved[n].path), "%s", path);
		knob_canonical(raw, saved[n].old, sizeof(saved[n].old));
		__atomic_store_n(&nsaved, n + 1, __ATOMIC_RELEASE);
	}
	err = mg_write_file(path, val);
	if (!err)
		mark_phase(path, val);
	return err;
}

int mg_knob_set_ll(const char *path, long long val)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", val);
	return mg_knob_set(path, num);
}

void mg_on_restore(void (*fn)(void))
{
	restore_hook = fn;
}

void mg_register_child(pid_t pid)
{
	for (int i = 0; i < MG_MAX_CHILDREN; i++)
		if (!children[i]) {
			children[i] = pid;
			return;
		}
}

void mg_unregister_child(pid_t pid)
{
	for (int i = 0; i < MG_MAX_CHILDREN; i++)
		if (children[i] == pid)
			children[i] = 0;
}

pid_t mg_spawn_ready(void (*setup)(int ready_fd, void *arg), void *arg, void *msg, size_t len)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		setup(fds[1], arg);
		_exit(1);
	}
	close(fds[1]);
	if (pid > 0) {
		mg_register_child(pid);
		if (read(fds[0], msg, len) != (ssize_t)len) { /* it died during setup */
			waitpid(pid, NULL, __WALL);
			mg_unregister_child(pid);
			pid = -1;
		}
	}
	close(fds[0]);
	return pid;
}

int mg_kill_child(const char *experiment, pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	for (int ms = 0; ms < 10000; ms++) {
		pid_t r = waitpid(pid, &st, __WALL | WNOHANG);

		if (r == pid && (WIFEXITED(st) || WIFSIGNALED(st))) {
			mg_unregister_child(pid);
			return 0;
		}
		if (r < 0)
			break;
		if (r == 0)
			mg_sleep_us(1000);
	}
	mg_error(experiment, "child %d did not die within 10 s of SIGKILL", (int)pid);
	return -1;
}

void mg_restore_all(void)
{
	if (getpid() != owner_pid || __atomic_exchange_n(&restoring, 1, __ATOMIC_ACQ_REL))
		return;
	/* The end of the last phase, for the tools (not from a signal handler). */
	if (!mg_stop_signal && getenv("MMLOCKS_MARK"))
		mark_line("mmlocks restore");
	/* Children first: they may hold khugepaged work or many VMAs. */
	for (int i = 0; i < MG_MAX_CHILDREN; i++)
		if (children[i] > 0)
			kill(children[i], SIGKILL);
	if (restore_hook)
		restore_hook();
	for (int i = __atomic_load_n(&nsaved, __ATOMIC_ACQUIRE) - 1; i >= 0; i--)
		write_file_raw(saved[i].path, saved[i].old, strlen(saved[i].old));
}

static void on_signal(int sig)
{
	static const char msg[] = "guest program: signal, restoring knobs\n";

	mg_stop_signal = sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more we can do from a signal handler */
	}
	mg_restore_all();
	_exit(128 + sig);
}

void mg_install_restore(void)
{
	struct sigaction sa;

	owner_pid = getpid();
	atexit(mg_restore_all);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void mg_require(const char *experiment, const char *const *paths)
{
	for (; *paths; paths++)
		if (!mg_exists(*paths)) {
			mg_error(experiment,
				 "%s is missing: this program needs the patched mmlocks 6.12 kernel "
				 "with debugfs at /sys/kernel/debug and tracefs at /sys/kernel/tracing",
				 *paths);
			exit(MG_EXIT_WRONG_KERNEL);
		}
}

pid_t mg_find_comm(const char *comm)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = -1;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL) {
		char path[288], buf[64];
		long long pid;

		if (!mg_parse_ll(de->d_name, 1, 1 << 30, &pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (mg_read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (!strcmp(buf, comm)) {
			found = (pid_t)pid;
			break;
		}
	}
	closedir(d);
	return found;
}

/* ---- time ------------------------------------------------------------- */

uint64_t mg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mg_sleep_us(unsigned long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- CPU placement ---------------------------------------------------- */

#include <sched.h> /* cpu_set_t, sched_setaffinity (_GNU_SOURCE above) */

int mg_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}
