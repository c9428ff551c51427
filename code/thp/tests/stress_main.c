/* stress_main.c - run the deferred split stress test from the command line (used under TSan). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "stress.h"
#include "../../common/bench.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: stress_thp [options]\n"
"  Threads zap page ranges of shared large folios (several threads per\n"
"  folio), a shrinker thread scans and splits meanwhile; the queue's\n"
"  invariants are checked during the run and after it. Prints the counts;\n"
"  exit 1 if an invariant broke.\n"
"  --threads N      unmapping threads, 1..32 (default 4)\n"
"  --folios N       shared folios, 1..1024 (default 8)\n"
"  --order N        folio order, 2..9 (default 5)\n"
"  --hits N         partial unmaps per folio, 2..512, dividing 2^order (default 8)\n"
"  --ops N          zaps per thread, 1..100000000 (default 20000)\n"
"  --early-check B  1: 6.12's early check (default), 0: off\n"
"  --shrinker B     1: run the shrinker thread (default), 0: no shrinker\n"
"  --help           this text\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", 1, 0, 't' }, { "folios", 1, 0, 'f' }, { "order", 1, 0, 'o' },
		{ "hits", 1, 0, 'H' }, { "ops", 1, 0, 'n' }, { "early-check", 1, 0, 'e' },
		{ "shrinker", 1, 0, 's' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	long t = 4, f = 8, o = 5, h = 8, n = 20000, e = 1, s = 1;
	struct stress_result r;
	struct stress_cfg cfg;
	int c, bad = 0;

	while (!bad && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': bad = bench_parse_long(optarg, 1, 32, &t); break;
		case 'f': bad = bench_parse_long(optarg, 1, 1024, &f); break;
		case 'o': bad = bench_parse_long(optarg, 2, 9, &o); break;
		case 'H': bad = bench_parse_long(optarg, 2, 512, &h); break;
		case 'n': bad = bench_parse_long(optarg, 1, 100000000, &n); break;
		case 'e': bad = bench_parse_long(optarg, 0, 1, &e); break;
		case 's': bad = bench_parse_long(optarg, 0, 1, &s); break;
		case 'h': usage(stdout); return 0;
		default: bad = 1; optarg = NULL;
		}
		if (bad && optarg)
			fprintf(stderr, "stress_thp: bad value '%s'\n", optarg);
	}
	if (!bad && optind < argc) {
		fprintf(stderr, "stress_thp: unexpected argument '%s'\n", argv[optind]);
		bad = 1;
	}
	if (!bad && (h > (1L << o) || (1L << o) % h)) {
		fprintf(stderr, "stress_thp: --hits %ld does not divide 2^%ld pages\n", h, o);
		bad = 1;
	}
	if (bad) {
		usage(stderr);
		return 2;
	}
	cfg = (struct stress_cfg){ .threads = t, .folios = f, .order = o, .hits = h,
				   .ops = n, .early_check = e, .shrinker = s };
	stress_run(&cfg, &r);
	printf("zaps %ld faults %ld partial_unmaps %ld deferred_split_lock_taken %ld "
	       "thp_split_page %ld scans %ld checks %ld: %s\n", r.zaps, r.faults,
	       r.partial_unmaps, r.lock_partial, r.splits, r.scans, r.checks,
	       r.ok ? "ok" : r.why);
	return r.ok ? 0 : 1;
}
