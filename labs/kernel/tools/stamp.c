/*
 * stamp: run a program and pass its stdout through, each line preceded by
 * {"type":"stamp","t_mono_ns":N}, N the CLOCK_MONOTONIC time the line was
 * read. perf (record -k mono) and trace-cmd (record -C mono) stamp their
 * events with the same clock, so a tool's events can be cut at the times a
 * guest program printed its records (a program prints a block or sample
 * record when the phase it measured ends). Built static by
 * labs/kernel/mktools.sh into the tools overlay as /labs/tools/stamp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

int main(int argc, char **argv)
{
	int fd[2], status;
	FILE *in;
	char *line = NULL;
	size_t cap = 0;
	struct sigaction sa;

	if (argc < 2 || !strcmp(argv[1], "--help")) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "usage: stamp PROGRAM [ARGS...]\n\n"
			"Runs PROGRAM; each line of its stdout is printed after a record\n"
			"{\"type\":\"stamp\",\"t_mono_ns\":N} (CLOCK_MONOTONIC when the line was read).\n"
			"SIGINT and SIGTERM are passed on. Exit: PROGRAM's status (128+signal if\n"
			"it was killed), 2 usage, 1 if it could not be started.\n");
		return argc < 2 ? 2 : 0;
	}
	if (pipe(fd)) {
		perror("stamp: pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("stamp: fork");
		return 1;
	}
	if (child == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "stamp: cannot run %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	in = fdopen(fd[0], "r");
	if (!in) {
		perror("stamp: fdopen");
		return 1;
	}
	for (;;) {
		ssize_t n = getline(&line, &cap, in);
		struct timespec ts;

		if (n < 0) {
			if (errno == EINTR && !feof(in)) {
				clearerr(in);
				continue;
			}
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		printf("{\"type\":\"stamp\",\"t_mono_ns\":%lld}\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
		fwrite(line, 1, (size_t)n, stdout);
		if (n > 0 && line[n - 1] != '\n')
			putchar('\n');
		fflush(stdout);
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
