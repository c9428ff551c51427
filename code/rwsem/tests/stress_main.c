/* stress_main.c - the stress test as a plain program, so it can run under ThreadSanitizer. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"
#include "../../common/bench.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stress_rwsem [--readers N] [--writers N] [--iters N]\n"
		"Runs N readers and N writers on one rwsem for each steal policy\n"
		"(STEAL, NOSTEAL, WRITER_FIRST) and for wait timeouts 4 ms and 0,\n"
		"and checks mutual exclusion, that every thread finished, and that\n"
		"a reader arriving while a writer heads the queue steals only under STEAL.\n"
		"  --readers N  reader threads, 1..64 (default 4)\n"
		"  --writers N  writer threads, 1..64 (default 2)\n"
		"  --iters N    lock operations per thread, 1..10000000 (default 2000)\n"
		"  --help       this text\n"
		"Exit status: 0 all good, 1 a check failed, 2 bad usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "readers", required_argument, NULL, 'r' },
		{ "writers", required_argument, NULL, 'w' },
		{ "iters", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	long readers = 4, writers = 2, iters = 2000;
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': bad |= bench_parse_long(optarg, 1, 64, &readers); break;
		case 'w': bad |= bench_parse_long(optarg, 1, 64, &writers); break;
		case 'i': bad |= bench_parse_long(optarg, 1, 10000000, &iters); break;
		case 'h': usage(stdout); return 0;
		default: bad = 1;
		}
		if (bad) {
			fprintf(stderr, "stress_rwsem: bad option or value\n");
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "stress_rwsem: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	int failed = 0;
	for (int p = RWSEM_STEAL; p <= RWSEM_WRITER_FIRST; p++) {
		for (int t = 0; t < 2; t++) {
			struct stress_cfg cfg = {
				.readers = readers, .writers = writers, .iters = iters,
				.policy = p, .wait_timeout_ns = t ? 0 : 4000000,
			};
			struct stress_result r;
			int ok;

			if (stress_run(&cfg, &r))
				return 1;
			/* The probe in the forced window (stress.h) steals only under STEAL. */
			ok = !r.violations && !r.torn_reads && !r.final_count &&
			     !r.waiters_left && r.probe_queued == (p != RWSEM_STEAL);
			failed |= !ok;
			printf("%-12s timeout=%-7lld %s reads=%ld writes=%ld "
			       "rlock_steal=%ld wlock_handoff=%ld rlock_handoff=%ld "
			       "sleep_reader=%ld sleep_writer=%ld\n",
			       rwsem_policy_name(p), cfg.wait_timeout_ns,
			       ok ? "ok  " : "FAIL", r.reads, r.writes,
			       r.events[LOCKEVENT_rwsem_rlock_steal],
			       r.events[LOCKEVENT_rwsem_wlock_handoff],
			       r.events[LOCKEVENT_rwsem_rlock_handoff],
			       r.events[LOCKEVENT_rwsem_sleep_reader],
			       r.events[LOCKEVENT_rwsem_sleep_writer]);
		}
	}
	return failed;
}
