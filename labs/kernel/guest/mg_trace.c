/*
 * Shared helpers for the guest programs that read ftrace (see
 * mmlocks_guest.h): the timestamp of a trace line, starting the mmap_lock
 * events for one task, and a thread that feeds trace_pipe to a callback.
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "   khugepaged-35  [001] .....  123.456789: mmap_lock_released: mm=... write=false" */
bool mg_trace_ts(const char *line, const char *ev, uint64_t *ns)
{
	const char *p = ev, *start;
	unsigned long long sec = 0, frac = 0;
	int digits = 0;

	while (p > line && p[-1] == ' ')
		p--;
	start = p;
	while (start > line && start[-1] != ' ')
		start--;
	if (sscanf(start, "%llu.", &sec) != 1)
		return false;
	start = strchr(start, '.');
	if (!start || start > p)
		return false;
	for (start++; start < p && *start >= '0' && *start <= '9' && digits < 9; start++, digits++)
		frac = frac * 10 + (unsigned long long)(*start - '0');
	for (; digits < 9; digits++)
		frac *= 10;
	*ns = sec * 1000000000ull + frac;
	return true;
}

int mg_trace_start(const char *experiment, pid_t pid, const char *const *events, long long buffer_kb)
{
	char num[32], path[256];
	int err;

	snprintf(num, sizeof(num), "%lld", buffer_kb);
	if ((err = mg_knob_set(MG_TRACING "/tracing_on", "0")) ||
	    (err = mg_knob_set(MG_TRACING "/buffer_size_kb", num)) ||
	    (err = mg_knob_set(MG_TRACING "/trace_clock", "mono"))) {
		mg_error(experiment, "setting up %s: %s", MG_TRACING, strerror(-err));
		return err;
	}
	snprintf(num, sizeof(num), "%d", (int)pid);
	if ((err = mg_knob_set(MG_TRACING "/set_event_pid", num))) {
		mg_error(experiment, "writing %s to set_event_pid: %s", num, strerror(-err));
		return err;
	}
	for (; *events; events++) {
		snprintf(path, sizeof(path), MG_TRACING "/events/%s/enable", *events);
		if ((err = mg_knob_set(path, "1"))) {
			mg_error(experiment, "enabling trace event %s: %s", *events, strerror(-err));
			return err;
		}
	}
	mg_write_file(MG_TRACING "/trace", ""); /* empty the ring buffer */
	if ((err = mg_knob_set(MG_TRACING "/tracing_on", "1")))
		mg_error(experiment, "writing 1 to tracing_on: %s", strerror(-err));
	return err;
}

/* region: trace-pipe-reader */
void *mg_trace_reader(void *arg)
{
	static char buf[1 << 16];
	struct mg_trace_pipe *tp = arg;
	size_t have = 0;
	int fd = open(MG_TRACING "/trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		mg_log("open trace_pipe: %s", strerror(errno));
		return NULL;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line, *nl;

		if (n <= 0) {
			/* Empty: stop only once asked to and drained. */
			if (__atomic_load_n(&tp->stop, __ATOMIC_ACQUIRE))
				break;
			mg_sleep_us(20000);
			continue;
		}
		have += (size_t)n;
		buf[have] = '\0';
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = '\0';
			tp->line(tp->arg, line);
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1) /* absurdly long line: drop it */
			have = 0;
	}
	close(fd);
	return NULL;
}
/* endregion: trace-pipe-reader */
