/* bench.c - per scenario: how fast the failing schedule is found, and how many schedules a full search runs against the total. */
#include "explore.h"

#include <stdlib.h>
#include <string.h>

/*
 * Four searches per scenario:
 *   first    default bound, stop at the first failure (what `make explore` does)
 *   bounded  default bound, every schedule (a correct variant's proof)
 *   reduced  no bound, sleep sets, every schedule
 *   total    no bound, no reduction: the size of the whole space
 */
static struct ex_result r;

static void run(const struct ex_scenario *sc, int bound, bool reduce, bool all,
		double max_s, long *n, double *s, bool *found, bool *complete)
{
	struct ex_opts o = { .bound = bound, .reduce = reduce, .all = all,
			     .max_seconds = max_s };

	ex_search(sc, &o, &r);
	*n = r.explored;
	*s = r.seconds;
	*found = r.found;
	*complete = r.complete;
}

int main(int argc, char **argv)
{
	double max_s = 60;

	if (argc > 1 && strcmp(argv[1], "--help") == 0) {
		printf("usage: bench_explore [MAX_SECONDS]\n"
		       "Per scenario: schedules run and seconds taken to find the first\n"
		       "failure (default bound), to exhaust within the bound, to exhaust\n"
		       "with sleep sets and no bound, and the total without reduction.\n"
		       "Each search stops after MAX_SECONDS (default 60).\n");
		return 0;
	}
	if (argc > 1) {
		char *end;

		max_s = strtod(argv[1], &end);
		if (*end || max_s <= 0) {
			fprintf(stderr, "bench_explore: '%s' is not a number of seconds\n", argv[1]);
			return 2;
		}
	}
	printf("%-20s %5s | %-18s | %-18s | %-18s | %-12s\n", "scenario", "bound",
	       "first failure", "exhaust, bounded", "sleep sets, no bound", "total");
	for (int i = 0; ex_scenarios[i]; i++) {
		const struct ex_scenario *sc = ex_scenarios[i];
		long n1, n2, n3, n4;
		double s1, s2, s3, s4;
		bool f1, f2, f3, f4, c1, c2, c3, c4;

		run(sc, sc->default_bound, true, false, max_s, &n1, &s1, &f1, &c1);
		run(sc, sc->default_bound, true, true, max_s, &n2, &s2, &f2, &c2);
		run(sc, -1, true, true, max_s, &n3, &s3, &f3, &c3);
		run(sc, -1, false, true, max_s, &n4, &s4, &f4, &c4);
		printf("%-20s %5d | %6ld %-5s %6.2fs | %6ld%s %8.2fs | %6ld%s %8.2fs | %6ld%s %6.2fs\n",
		       sc->name, sc->default_bound, n1, f1 ? "FOUND" : "none", s1,
		       n2, c2 ? " " : "+", s2, n3, c3 ? " " : "+", s3, n4, c4 ? " " : "+", s4);
	}
	printf("(+: search cut short after %.0f s)\n", max_s);
	return 0;
}
