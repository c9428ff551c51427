/*
 * contend: a short, known mmap_lock contention for the guest tools' smoke
 * check (tools_smoke). The process maps many one-page VMAs; a reader thread
 * reads /proc/self/smaps_rollup in a loop (show_smaps_rollup() walks every
 * VMA under mmap_read_lock) while a writer thread maps and unmaps one page
 * (mmap_write_lock): the writer waits in rwsem_down_write_slowpath(), the
 * reader in rwsem_down_read_slowpath(), and both fire
 * lock:contention_begin/end. Built static by labs/kernel/mktools.sh into
 * the tools overlay as /labs/tools/contend.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static long writer_calls, reader_reads;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: contend [--vmas N] [--ms M] [--help]\n\n"
		"Maps N one-page VMAs (default 2000, 100..200000), then for M ms (default\n"
		"1000, 10..60000) one thread reads /proc/self/smaps_rollup in a loop and\n"
		"another maps and unmaps one page. Prints one JSON line: the writer's\n"
		"calls and the reader's reads. Exit: 0 ok, 1 failed, 2 usage.\n");
}

static void *reader(void *arg)
{
	char buf[4096];
	(void)arg;
	while (!atomic_load(&stop)) {
		int fd = open("/proc/self/smaps_rollup", O_RDONLY);
		if (fd < 0)
			return NULL;
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
		reader_reads++;
	}
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		munmap(p, 4096);
		writer_calls++;
	}
	return NULL;
}

static long num(const char *s, long lo, long hi)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < lo || v > hi)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	long vmas = 2000, ms = 1000;
	pthread_t r, w;
	char *base;
	long i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--vmas") && i + 1 < argc) {
			vmas = num(argv[++i], 100, 200000);
		} else if (!strcmp(argv[i], "--ms") && i + 1 < argc) {
			ms = num(argv[++i], 10, 60000);
		} else {
			fprintf(stderr, "contend: bad argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
		if (vmas < 0 || ms < 0) {
			fprintf(stderr, "contend: %s out of range\n", argv[i - 1]);
			usage(stderr);
			return 2;
		}
	}
	/* Every other page: VMAs that cannot merge with their neighbours. */
	base = mmap(NULL, 2 * vmas * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		perror("contend: mmap");
		return 1;
	}
	for (i = 0; i < vmas; i++)
		if (mprotect(base + 2 * i * 4096, 4096, PROT_READ)) {
			perror("contend: mprotect");
			return 1;
		}
	if (pthread_create(&r, NULL, reader, NULL) || pthread_create(&w, NULL, writer, NULL)) {
		fprintf(stderr, "contend: pthread_create failed\n");
		return 1;
	}
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	pthread_join(r, NULL);
	pthread_join(w, NULL);
	printf("{\"type\":\"contend\",\"vmas\":%ld,\"ms\":%ld,\"writer_calls\":%ld,\"reader_reads\":%ld}\n",
	       vmas, ms, writer_calls, reader_reads);
	return writer_calls > 0 && reader_reads > 0 ? 0 : 1;
}
