/* spec_stress_main.c - run the speculation stress from the command line (under TSan, and on the no-retry build that it must catch). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "spec_stress.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stress_speculate [--readers N] [--mapper 0|1] [--ops N] [--seconds S]\n"
		"                        [--perturb N]\n"
		"  N readers hit a uprobe at one address (handle_swbp(): speculation,\n"
		"  then mmap_lock if it fails) while a writer remaps that address\n"
		"  between two files and offsets (at least --ops steps, and on until the\n"
		"  readers made --ops hits; --seconds S stops it earlier) and, with\n"
		"  --mapper 1, another thread maps and unmaps\n"
		"  memory elsewhere. Every answer must be the uprobe of a state the mm\n"
		"  was in during that lookup. --perturb N: at every Nth hook inside a\n"
		"  speculative lookup the reader itself makes one or two writer steps\n"
		"  (0: never; then only the scheduler interleaves). Prints the counts\n"
		"  and counters; exit 1 at the first violation or a broken check.\n"
		"  defaults: --readers 2 --mapper 1 --ops 4000 --seconds 0 --perturb 16\n");
}

static int num(const char *arg, double max, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (!*arg || *end || !(v >= 0) || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "readers", 1, 0, 'r' }, { "mapper", 1, 0, 'm' }, { "ops", 1, 0, 'o' },
		{ "seconds", 1, 0, 's' }, { "perturb", 1, 0, 'p' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	double rd = 2, mp = 1, ops = 4000, secs = 0, pert = 16;
	struct spec_stress_result res;
	struct spec_stress_cfg cfg;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		double *dst = c == 'r' ? &rd : c == 'm' ? &mp : c == 'o' ? &ops :
			      c == 's' ? &secs : c == 'p' ? &pert : NULL;
		double max = c == 'r' ? 64 : c == 'm' ? 1 : c == 'o' ? 1e8 : c == 's' ? 3600 : 1e6;

		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (!dst || num(optarg, max, dst) || (c != 's' && *dst != (long)*dst)) {
			if (dst)
				fprintf(stderr, "stress_speculate: bad value '%s'\n", optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || rd < 1 || ops < 1) {
		fprintf(stderr, "stress_speculate: %s\n", optind < argc ? "unexpected argument"
			: "--readers and --ops must be at least 1");
		usage(stderr);
		return 2;
	}
	cfg = (struct spec_stress_cfg){ .readers = rd, .mapper = mp, .ops = ops,
					.seconds = secs, .perturb = pert };
	spec_stress_run(&cfg, &res);
	printf("stress_speculate: %ld writer steps, %ld hits (%ld with writer steps inside); ",
	       res.steps, res.hits, res.perturbed);
	for (int e = 0; e < NR_UPROBE_EVENTS; e++)
		printf("%s %ld%s", uprobe_event_name(e), res.ev[e],
		       e + 1 < NR_UPROBE_EVENTS ? ", " : ": ");
	printf("%s%s\n", res.ok ? "ok" : "FAIL: ", res.ok ? "" : res.why);
	return res.ok ? 0 : 1;
}
