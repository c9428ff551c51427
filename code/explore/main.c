/* main.c - the explore command: search scenarios for a failing schedule, replay one, draw it. */
#include "explore.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
"usage: explore [options] [SCENARIO...]\n"
"       explore --replay SCENARIO:PICKS [--dot FILE]\n"
"Runs each scenario's threads one at a time, switching only at the models'\n"
"hook points, and searches the schedules depth-first for one that breaks\n"
"the scenario's assertion. No SCENARIO: all of them (--list names them).\n"
"Exit status: 0 every result as expected, 1 some result unexpected (or, with\n"
"--replay, the schedule fails), 2 bad usage or a bad replay string.\n"
"  --list            the scenarios, with what each expects\n"
"  --bound N         at most N preemptions per schedule (default: the\n"
"                    scenario's own); 'none' or -1: no bound\n"
"  --no-reduce       no sleep sets (they apply only without a bound)\n"
"  --exhaust         do not stop at the first failure: count them all\n"
"  --total           also count every schedule (no bound, no reduction)\n"
"  --max-seconds S   stop a search after S seconds (default 120)\n"
"  --replay STRING   run one schedule, as printed after FOUND\n"
"  --dot FILE        write the failing (or replayed) schedule as Graphviz\n"
"  --quiet           no timelines\n"
"  --help            this text\n");
}

static int parse_int(const char *opt, const char *s, int lo, int hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "explore: %s: '%s' is not a number from %d to %d\n",
			opt, s, lo, hi);
		exit(2);
	}
	return (int)v;
}

static void print_line(const struct ex_scenario *sc, const struct ex_result *r,
		       const char *total, int bound, bool ok)
{
	char b[16];

	if (bound < 0)
		snprintf(b, sizeof(b), "none");
	else
		snprintf(b, sizeof(b), "%d", bound);
	printf("%-20s bound %-4s explored %-7ld pruned %-7ld total %-9s %7.2f s  %-5s "
	       "(expected %s)%s%s\n", sc->name, b, r->explored,
	       r->pruned_bound + r->pruned_sleep, total, r->seconds,
	       r->found ? "FOUND" : "NONE", sc->expect_found ? "FOUND" : "NONE",
	       ok ? "" : "  UNEXPECTED", r->complete || r->found ? "" : " [search cut short]");
}

static int do_replay(const char *str, const char *dot, bool quiet)
{
	static struct ex_result r;
	char err[200];
	int rc = ex_replay(str, &r, err, sizeof(err));
	const struct ex_scenario *sc;

	if (rc == 2) {
		fprintf(stderr, "explore: %s\n", err);
		return 2;
	}
	sc = ex_find(r.replay[0] ? strtok(strdup(r.replay), ":") : "");
	printf("%s: %s\n", r.replay, rc ? r.why : "no failure");
	if (!quiet)
		ex_print_timeline(stdout, sc, &r);
	if (dot && ex_write_dot(dot, sc, &r) != 0) {
		fprintf(stderr, "explore: cannot write %s: %s\n", dot, strerror(errno));
		return 2;
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "list", no_argument, NULL, 'l' },
		{ "bound", required_argument, NULL, 'b' },
		{ "no-reduce", no_argument, NULL, 'n' },
		{ "exhaust", no_argument, NULL, 'e' },
		{ "total", no_argument, NULL, 't' },
		{ "max-seconds", required_argument, NULL, 's' },
		{ "replay", required_argument, NULL, 'r' },
		{ "dot", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	static struct ex_result r, tot;
	const char *replay = NULL, *dot = NULL;
	bool list = false, total = false, quiet = false, bound_set = false;
	struct ex_opts o = { .bound = -1, .reduce = true, .max_seconds = 120 };
	int opt, bad = 0, nsc = 0;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'h': usage(stdout); return 0;
		case 'l': list = true; break;
		case 'b':
			bound_set = true;
			o.bound = strcmp(optarg, "none") == 0 ? -1 :
				parse_int("--bound", optarg, -1, 100);
			break;
		case 'n': o.reduce = false; break;
		case 'e': o.all = true; break;
		case 't': total = true; break;
		case 's': o.max_seconds = parse_int("--max-seconds", optarg, 1, 86400); break;
		case 'r': replay = optarg; break;
		case 'd': dot = optarg; break;
		case 'q': quiet = true; break;
		default: usage(stderr); return 2;
		}
	}
	if (list) {
		for (int i = 0; ex_scenarios[i]; i++)
			printf("%-20s %s; expects %s (%s)\n", ex_scenarios[i]->name,
			       ex_scenarios[i]->summary,
			       ex_scenarios[i]->expect_found ? "FOUND" : "NONE",
			       ex_scenarios[i]->bug);
		return 0;
	}
	if (replay) {
		if (optind < argc) {
			fprintf(stderr, "explore: --replay takes no SCENARIO arguments\n");
			return 2;
		}
		return do_replay(replay, dot, quiet);
	}
	for (int i = optind; i < argc; i++)
		if (!ex_find(argv[i])) {
			fprintf(stderr, "explore: no scenario \"%s\" (--list names them)\n", argv[i]);
			return 2;
		}
	if (dot && argc - optind != 1) {
		fprintf(stderr, "explore: --dot needs exactly one SCENARIO\n");
		return 2;
	}

	for (int i = 0; optind < argc ? i < argc - optind : ex_scenarios[i] != NULL; i++) {
		const struct ex_scenario *sc =
			optind < argc ? ex_find(argv[optind + i]) : ex_scenarios[i];
		struct ex_opts so = o;
		char tbuf[32] = "-";
		bool ok;

		if (!bound_set)
			so.bound = sc->default_bound;
		ex_search(sc, &so, &r);
		if (total) {
			struct ex_opts to = { .bound = -1, .reduce = false, .all = true,
					      .max_seconds = o.max_seconds };

			ex_search(sc, &to, &tot);
			snprintf(tbuf, sizeof(tbuf), "%s%ld", tot.complete ? "" : ">", tot.explored);
		}
		ok = r.found == sc->expect_found && (r.found || r.complete);
		bad += !ok;
		nsc++;
		print_line(sc, &r, tbuf, so.bound, ok);
		if (r.found) {
			printf("  %s\n  --replay %s\n", r.why, r.replay);
			if (o.all)
				printf("  failing schedules: %ld of %ld\n", r.failures, r.explored);
			if (!quiet)
				ex_print_timeline(stdout, sc, &r);
			if (dot && ex_write_dot(dot, sc, &r) != 0) {
				fprintf(stderr, "explore: cannot write %s: %s\n", dot, strerror(errno));
				return 2;
			}
		}
	}
	if (nsc > 1)
		printf("%d scenarios, %d as expected, %d unexpected\n", nsc, nsc - bad, bad);
	return bad ? 1 : 0;
}
