/*
 * Host tests of the process and option helpers the guest programs share
 * (labs/kernel/guest: mg_spawn_ready, mg_kill_child, MG_CPU), as
 * remote_stress and smaps_stress use them for their targets: a child is
 * set up before the parent hears from it, a child that dies during setup
 * is reported and reaped, a killed one is reaped, a CPU option is checked
 * against this machine's CPUs. Nothing waits on time. (remote_stress's own
 * target maps at 8 GiB, inside ASan's shadow gap: it cannot run here.)
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* No child left: mg_spawn_ready() and mg_kill_child() reaped what they started. */
static void assert_no_child(void)
{
	cr_assert_eq(waitpid(-1, NULL, __WALL | WNOHANG), -1, "a child is left unreaped");
	cr_assert_eq(errno, ECHILD);
}

static volatile long marker;

/* Set up (the marker), then say so with our pid, then wait to be killed. */
static void marker_setup(int fd, void *arg)
{
	pid_t me = getpid();

	marker = *(long *)arg;
	if (write(fd, &me, sizeof(me)) != sizeof(me))
		_exit(1);
	for (;;)
		pause();
}

Test(spawn_ready, the_child_is_set_up_when_it_returns_and_reaped_when_killed)
{
	long want = 0x5eed;
	pid_t said = 0, pid;
	long got = 0;
	char path[64];
	int fd;

	marker = 0;
	pid = mg_spawn_ready(marker_setup, &want, &said, sizeof(said));
	cr_assert_gt(pid, 0, "mg_spawn_ready failed");
	cr_assert_eq(said, pid, "the ready message is not the child's");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(pread(fd, &got, sizeof(got), (off_t)(uintptr_t)&marker), (ssize_t)sizeof(got));
	close(fd);
	cr_assert_eq(got, want, "the child's setup had not run when mg_spawn_ready returned");
	cr_assert_eq(marker, 0, "the setup ran in the parent");
	cr_assert_eq(mg_kill_child("test", pid), 0);
	assert_no_child();
}

static void fail_setup(int fd, void *arg)
{
	(void)fd;
	_exit(*(int *)arg);
}

static void return_setup(int fd, void *arg)
{
	(void)fd;
	(void)arg;
}

Test(spawn_ready, a_child_that_dies_or_returns_in_setup_is_reported_and_reaped)
{
	int code = 7;
	char msg[4];

	cr_assert_eq(mg_spawn_ready(fail_setup, &code, msg, sizeof(msg)), -1);
	assert_no_child();
	cr_assert_eq(mg_spawn_ready(return_setup, NULL, msg, sizeof(msg)), -1);
	assert_no_child();
}

static void short_setup(int fd, void *arg)
{
	(void)arg;
	if (write(fd, "ab", 2) != 2)
		_exit(1);
	_exit(0); /* two bytes of the four the parent waits for */
}

Test(spawn_ready, a_short_ready_message_is_a_failure)
{
	char msg[4];

	cr_assert_eq(mg_spawn_ready(short_setup, NULL, msg, sizeof(msg)), -1);
	assert_no_child();
}

/* ---- MG_CPU ------------------------------------------------------------ */

static long long cpu_a, cpu_b;

static void usage(FILE *f)
{
	fprintf(f, "usage: test [--a C] [--b C]\n");
}

static void parse(int argc, char **argv)
{
	static const struct mg_opt o[] = { MG_CPU("a", &cpu_a), MG_CPU("b", &cpu_b), MG_OPTS_END };

	optind = 0;
	mg_parse_opts("test", argc, argv, o, usage);
}

Test(cpu_option, a_negative_default_is_the_last_cpu_and_a_given_one_is_kept)
{
	char *argv[] = { "test", "--a", "0", NULL };

	cpu_a = 5, cpu_b = -1;
	parse(3, argv);
	cr_assert_eq(cpu_a, 0);
	cr_assert_eq(cpu_b, sysconf(_SC_NPROCESSORS_ONLN) - 1);
}

Test(cpu_option, a_cpu_this_machine_lacks_is_a_usage_error, .exit_code = MG_EXIT_USAGE,
     .init = cr_redirect_stderr)
{
	char n[24], *argv[] = { "test", "--b", n, NULL };

	snprintf(n, sizeof(n), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	cpu_a = 0, cpu_b = -1;
	parse(3, argv);
	cr_assert_fail("--b %s was accepted", n);
}
