/* stress_main.c - run the VMA model's stress test from the command line (used under TSan). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stress_vma [--faulters N] [--writers N] [--readers N] [--remote N] [--ops N]\n"
		"                  [--seed N]\n"
		"  faulters, mmap/munmap/mprotect writers, smaps_rollup readers (even:\n"
		"  mmap_lock walk, odd: per-VMA walk) and access_remote_vm() readers\n"
		"  (even: 6.12's mmap_lock, odd: seed 004's VMA lock) on one mm, all\n"
		"  started together; each writer does at least --ops operations, and\n"
		"  goes on until every reader has done 10 rollups or reads. Prints the\n"
		"  counts; exit 1 if an invariant broke.\n"
		"  defaults: --faulters 2 --writers 1 --readers 2 --remote 0 --ops 2000 --seed 1\n");
}

static int num(const char *arg, long max, long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (!*arg || *end || v < 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "faulters", 1, 0, 'f' }, { "writers", 1, 0, 'w' },
		{ "readers", 1, 0, 'r' }, { "remote", 1, 0, 'm' }, { "ops", 1, 0, 'o' },
		{ "seed", 1, 0, 's' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	long f = 2, w = 1, r = 2, m = 0, ops = 2000, seed = 1;
	struct stress_result res;
	struct stress_cfg cfg;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		long *dst = c == 'f' ? &f : c == 'w' ? &w : c == 'r' ? &r : c == 'm' ? &m :
			    c == 'o' ? &ops : c == 's' ? &seed : NULL;

		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (!dst || num(optarg, c == 'o' ? 10000000 : c == 's' ? 1L << 30 : 64, dst)) {
			if (dst)
				fprintf(stderr, "stress_vma: bad value '%s'\n", optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || w < 1) {
		fprintf(stderr, "stress_vma: %s\n", w < 1 ? "--writers must be at least 1"
			: "unexpected argument");
		usage(stderr);
		return 2;
	}
	cfg = (struct stress_cfg){ .faulters = f, .writers = w, .readers = r,
				   .remote = m, .ops = ops, .seed = seed };
	stress_run(&cfg, &res);
	printf("stress_vma: %ld writes, %ld faults, %ld mmap_lock rollups, %ld per-VMA rollups "
	       "(%ld fallbacks, %ld drops); vma_lock success %ld abort %ld retry %ld miss %ld: %s%s\n",
	       res.writes, res.faults, res.rollups[0], res.rollups[1], res.fallbacks,
	       res.drops, res.events[VMA_LOCK_SUCCESS], res.events[VMA_LOCK_ABORT],
	       res.events[VMA_LOCK_RETRY], res.events[VMA_LOCK_MISS],
	       res.ok ? "ok" : "FAIL: ", res.ok ? "" : res.why);
	if (m)
		printf("stress_vma: %ld remote reads under mmap_lock, %ld per-VMA style: "
		       "vma_locked %ld mmap_locked %ld fallback %ld (novma %ld span %ld "
		       "pfnmap %ld page %ld)\n", res.remote_reads[0], res.remote_reads[1],
		       res.remote_events[ACCESS_REMOTE_VM_VMA_LOCKED],
		       res.remote_events[ACCESS_REMOTE_VM_MMAP_LOCKED],
		       res.remote_events[ACCESS_REMOTE_VM_FALLBACK],
		       res.remote_events[ACCESS_REMOTE_VM_FALLBACK_NOVMA],
		       res.remote_events[ACCESS_REMOTE_VM_FALLBACK_SPAN],
		       res.remote_events[ACCESS_REMOTE_VM_FALLBACK_PFNMAP],
		       res.remote_events[ACCESS_REMOTE_VM_FALLBACK_PAGE]);
	return res.ok ? 0 : 1;
}
