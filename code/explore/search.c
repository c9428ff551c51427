/* search.c - depth-first search over schedules: preemption bound, sleep sets, replay strings. */
#define _GNU_SOURCE
#include "explore.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Stateless search: every schedule runs the scenario from a fresh setup.
 * The stack holds one node per step of the current schedule; a node
 * remembers which threads were enabled there, which ones were tried, and
 * the sleep set. The next schedule replays the stack's prefix up to the
 * deepest node with an untried alternative, takes it, and continues with
 * the default pick (the thread that ran last, if it still can: no
 * preemption) below it.
 *
 * Preemption bound: a pick is a preemption when the thread that ran the
 * step before could run on and another one is picked. Schedules with more
 * than `bound` preemptions are not run (the pruned_bound alternatives).
 *
 * Sleep sets (Godefroid): after the subtree under pick u at node s was
 * explored, a later sibling pick t carries u into its child's sleep set
 * when the steps commute (their object masks are disjoint); a sleeping
 * thread is not picked until a dependent step wakes it. Every schedule
 * cut that way is equivalent (same steps, commuting neighbours swapped)
 * to one that was run, so the assertions at the end see the same state.
 * That argument needs every schedule of the equivalence class to be
 * allowed; a preemption bound breaks it (the one run may need more
 * preemptions than the one cut), so the sleep sets are used only without
 * a bound.
 */
struct node {
	unsigned enabled;
	int last;
	int chosen;
	unsigned tried;
	unsigned sleep;
	unsigned fp_of[EX_MAX_THREADS];	/* steps taken (or asleep) here */
	int preempts;			/* before this node's step */
};

struct search {
	const struct ex_scenario *sc;
	const struct ex_opts *o;
	struct ex_result *r;
	struct ex_run_out *out;
	struct node stack[EX_MAX_STEPS];
	int depth, prefix;
};

static int cost(const struct node *n, int c)
{
	return n->last >= 0 && (n->enabled & (1u << n->last)) && c != n->last;
}

static bool within(const struct search *s, const struct node *n, int c)
{
	return s->o->bound < 0 || n->preempts + cost(n, c) <= s->o->bound;
}

static int search_choose(void *cookie, int d, unsigned enabled, int last)
{
	struct search *s = cookie;
	struct node *n = &s->stack[d];
	unsigned cand;

	if (d < s->prefix) {
		if (n->enabled != enabled || n->last != last) {
			fprintf(stderr, "explore: %s: the scenario is not deterministic "
				"(step %d: other threads can run than last time)\n",
				s->sc->name, d + 1);
			exit(3);
		}
		return n->chosen;
	}
	*n = (struct node){ .enabled = enabled, .last = last, .chosen = -1 };
	if (d > 0) {
		const struct node *p = &s->stack[d - 1];
		unsigned fpc = s->out->frame[d - 1].fp;
		unsigned carry = (p->sleep | p->tried) & ~(1u << p->chosen);

		n->preempts = p->preempts + cost(p, p->chosen);
		for (int u = 0; s->o->reduce && u < EX_MAX_THREADS; u++)
			if ((carry & (1u << u)) && !(p->fp_of[u] & fpc)) {
				n->sleep |= 1u << u;
				n->fp_of[u] = p->fp_of[u];
			}
	}
	s->depth = d + 1;
	cand = enabled & ~n->sleep;
	if (!cand) {
		s->r->sleep_blocked++;
		return -1;	/* every thread that can run is asleep */
	}
	if (last >= 0 && (cand & (1u << last)))
		n->chosen = last;
	else
		for (int c = 0; c < EX_MAX_THREADS && n->chosen < 0; c++)
			if ((cand & (1u << c)) && within(s, n, c))
				n->chosen = c;
	return n->chosen;
}

/* Deepest node with an untried alternative: make it the next prefix. */
static bool backtrack(struct search *s)
{
	while (s->depth > 0) {
		struct node *n = &s->stack[s->depth - 1];
		unsigned alt = n->enabled & ~n->tried & ~n->sleep;

		for (int c = 0; c < EX_MAX_THREADS; c++) {
			if (!(alt & (1u << c)))
				continue;
			if (within(s, n, c)) {
				n->chosen = c;
				s->prefix = s->depth;
				return true;
			}
			s->r->pruned_bound++;
			n->tried |= 1u << c;	/* counted once */
		}
		s->r->pruned_sleep += __builtin_popcount(n->enabled & n->sleep & ~n->tried);
		s->depth--;
	}
	return false;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Fixed picks, for recording a found schedule and for --replay. */
struct fixed {
	const int *pick;
	int n;
	int bad_at;		/* first step the string could not supply, or -1 */
};

static int fixed_choose(void *cookie, int d, unsigned enabled, int last)
{
	struct fixed *f = cookie;

	(void)last;
	if (d >= f->n || !(enabled & (1u << f->pick[d]))) {
		if (f->bad_at < 0)
			f->bad_at = d;
		return -1;
	}
	return f->pick[d];
}

static void make_replay(const struct ex_scenario *sc, const int *pick, int n,
			char *buf, size_t len)
{
	size_t k = (size_t)snprintf(buf, len, "%s:", sc->name);

	for (int i = 0; i < n && k + 1 < len; i++)
		buf[k++] = sc->thread_name[pick[i]][0];
	buf[k < len ? k : len - 1] = 0;
}

/* Run the picks again, this time keeping each step's label and state. */
static void record(const struct ex_scenario *sc, const int *pick, int n,
		   struct ex_result *r)
{
	static struct ex_run_out out;
	struct fixed f = { pick, n, -1 };

	out.steps = r->steps;
	ex_run(sc, fixed_choose, &f, &out);
	r->nsteps = out.nsteps;
	snprintf(r->why, sizeof(r->why), "%s", out.why ? out.why : "");
	make_replay(sc, pick, n, r->replay, sizeof(r->replay));
}

void ex_search(const struct ex_scenario *sc, const struct ex_opts *o,
	       struct ex_result *r)
{
	static struct search s;
	static struct ex_run_out out;
	struct ex_opts opts = *o;
	double t0 = now_s();

	if (opts.bound >= 0)
		opts.reduce = false;
	memset(r, 0, sizeof(*r));
	memset(&s, 0, sizeof(s));
	s.sc = sc;
	s.o = &opts;
	s.r = r;
	s.out = &out;
	out.steps = NULL;
	for (;;) {
		ex_run(sc, search_choose, &s, &out);
		for (int d = 0; d < s.depth; d++) {
			struct node *n = &s.stack[d];

			if (n->chosen >= 0) {
				n->tried |= 1u << n->chosen;
				n->fp_of[n->chosen] = out.frame[d].fp;
			}
		}
		if (!out.abandoned) {
			r->explored++;
			if (out.why) {
				r->failures++;
				if (!r->found) {
					int pick[EX_MAX_STEPS];

					for (int d = 0; d < out.nsteps; d++)
						pick[d] = out.frame[d].chosen;
					r->found = true;
					record(sc, pick, out.nsteps, r);
				}
				if (!opts.all)
					break;
			}
		}
		if (!backtrack(&s)) {
			r->complete = true;
			break;
		}
		if ((opts.max_schedules && r->explored >= opts.max_schedules) ||
		    (opts.max_seconds > 0 && now_s() - t0 > opts.max_seconds))
			break;
	}
	r->seconds = now_s() - t0;
}

int ex_replay(const char *replay, struct ex_result *r, char *err, size_t errlen)
{
	static int pick[EX_MAX_STEPS];
	const struct ex_scenario *sc;
	const char *colon = strchr(replay, ':');
	char name[64];
	int n = 0;

	memset(r, 0, sizeof(*r));
	if (!colon || colon == replay || (size_t)(colon - replay) >= sizeof(name)) {
		snprintf(err, errlen, "replay string \"%s\": expected SCENARIO:PICKS, "
			 "e.g. rwsem-steal:RWRRRW", replay);
		return 2;
	}
	memcpy(name, replay, colon - replay);
	name[colon - replay] = 0;
	sc = ex_find(name);
	if (!sc) {
		snprintf(err, errlen, "replay string: no scenario \"%s\" (--list names them)", name);
		return 2;
	}
	for (const char *p = colon + 1; *p; p++) {
		int t = -1;

		for (int i = 0; i < sc->nthreads; i++)
			if (sc->thread_name[i][0] == *p)
				t = i;
		if (t < 0) {
			snprintf(err, errlen, "replay string: '%c' at pick %d is not a thread "
				 "of %s", *p, n + 1, sc->name);
			return 2;
		}
		if (n == EX_MAX_STEPS) {
			snprintf(err, errlen, "replay string: more than %d picks", EX_MAX_STEPS);
			return 2;
		}
		pick[n++] = t;
	}

	static struct ex_run_out out;
	struct fixed f = { pick, n, -1 };

	out.steps = r->steps;
	ex_run(sc, fixed_choose, &f, &out);
	r->nsteps = out.nsteps;
	if (f.bad_at >= 0 || out.nsteps != n) {
		if (f.bad_at >= n)
			snprintf(err, errlen, "replay string: ends after %d picks, the "
				 "schedule goes on", n);
		else if (f.bad_at >= 0)
			snprintf(err, errlen, "replay string: pick %d ('%c'): that thread "
				 "cannot run there (asleep or finished)", f.bad_at + 1,
				 sc->thread_name[pick[f.bad_at]][0]);
		else
			snprintf(err, errlen, "replay string: %d picks, but the schedule "
				 "ends after %d", n, out.nsteps);
		return 2;
	}
	r->explored = 1;
	r->found = out.why != NULL;
	r->failures = r->found;
	snprintf(r->why, sizeof(r->why), "%s", out.why ? out.why : "");
	make_replay(sc, pick, n, r->replay, sizeof(r->replay));
	return r->found;
}
