/* test_explore.c - the explorer's own tests: finds each known failure, replays it the same way, clean variants stay clean, the reduction is sound. */
#include "explore.h"
#include "task.h"

#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		passed++;						\
	} else {							\
		failed++;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

static struct ex_result r, r2;

/* Unbounded searches of the big scenarios stop here: `make bench` runs them whole. */
#define TEST_MAX_SCHEDULES 5000

static void search(const struct ex_scenario *sc, int bound, bool reduce, bool all)
{
	struct ex_opts o = { .bound = bound, .reduce = reduce, .all = all,
			     .max_seconds = 120,
			     .max_schedules = bound < 0 ? TEST_MAX_SCHEDULES : 0 };

	ex_search(sc, &o, &r);
}

/* Every broken variant: found within its bound, and found without one. */
static void test_broken_found(void)
{
	for (int i = 0; ex_scenarios[i]; i++) {
		const struct ex_scenario *sc = ex_scenarios[i];

		if (!sc->expect_found)
			continue;
		search(sc, sc->default_bound, true, false);
		CHECK(r.found && r.failures == 1, "%s: not found within bound %d",
		      sc->name, sc->default_bound);
		search(sc, -1, true, false);
		CHECK(r.found, "%s: not found without a bound", sc->name);
	}
}

/* Its replay string fails the same way every time, step for step. */
static void test_replay_deterministic(void)
{
	for (int i = 0; ex_scenarios[i]; i++) {
		const struct ex_scenario *sc = ex_scenarios[i];
		char replay[sizeof(r.replay)], why[sizeof(r.why)], err[200];
		static struct ex_step steps[EX_MAX_STEPS];
		int n;

		if (!sc->expect_found)
			continue;
		search(sc, sc->default_bound, true, false);
		if (!r.found)
			continue;	/* reported above */
		snprintf(replay, sizeof(replay), "%s", r.replay);
		snprintf(why, sizeof(why), "%s", r.why);
		n = r.nsteps;
		memcpy(steps, r.steps, sizeof(steps));
		for (int k = 0; k < 5; k++) {
			int rc = ex_replay(replay, &r2, err, sizeof(err));

			CHECK(rc == 1, "%s: replay %d of %s: rc %d (%s)", sc->name, k, replay, rc,
			      rc == 2 ? err : "passed");
			CHECK(strcmp(r2.why, why) == 0, "%s: replay %d: other failure: %s",
			      sc->name, k, r2.why);
			CHECK(r2.nsteps == n && memcmp(r2.steps, steps, n * sizeof(steps[0])) == 0,
			      "%s: replay %d: other steps or states", sc->name, k);
		}
	}
}

/* Every correct variant: no failure, search complete, with and without a bound. */
static void test_correct_clean(void)
{
	for (int i = 0; ex_scenarios[i]; i++) {
		const struct ex_scenario *sc = ex_scenarios[i];

		if (sc->expect_found)
			continue;
		search(sc, sc->default_bound, true, true);
		CHECK(!r.found && r.failures == 0 && r.complete && r.explored > 0,
		      "%s: %ld failures within bound %d (%s)", sc->name, r.failures,
		      sc->default_bound, r.why);
		search(sc, -1, true, true);
		CHECK(!r.found && (r.complete || r.explored == TEST_MAX_SCHEDULES),
		      "%s: %ld failures without a bound (%s)", sc->name, r.failures, r.why);
	}
}

static void test_bad_replay(void)
{
	static const char *const bad[] = {
		"", "rwsem-steal", ":RW", "nosuch:RW", "rwsem-steal:RX",
		"rwsem-steal:R",			/* ends too early */
		"rwsem-steal:RWWRRRRRRWWWW",		/* one pick too many */
		"rwsem-steal:RWWWRRRRRRWW",		/* W picked while asleep */
	};
	char err[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = ex_replay(bad[i], &r2, err, sizeof(err));

		CHECK(rc == 2 && err[0], "bad replay \"%s\" accepted (rc %d)", bad[i], rc);
	}
}

/*
 * A toy scenario for the reduction: three threads, three steps each,
 * each step touching only its own thread's object, except that thread A's
 * last step reads the flag thread C sets in its first step. 9!/(3!)^3 =
 * 1680 schedules; the only thing that matters is whether C's first step
 * comes before A's last one.
 */
struct toy { int mine[3]; int flag, a_saw; };
#define T_OBJ(i) EX_OBJ(1 + (i))
#define T_FLAG EX_OBJ(4)

static bool toy_shared;		/* false: even the flag is private */
static void *toy_setup(const struct ex_scenario *sc)
{
	(void)sc;
	return calloc(1, sizeof(struct toy));
}
static void toy_a(void *p)
{
	struct toy *t = p;

	t->mine[0]++;
	ex_yield("a1", T_OBJ(0));
	t->mine[0]++;
	ex_yield("a2", T_OBJ(0) | (toy_shared ? T_FLAG : 0));
	if (toy_shared)
		t->a_saw = t->flag;
}
static void toy_b(void *p)
{
	struct toy *t = p;

	t->mine[1]++;
	ex_yield("b1", T_OBJ(1));
	t->mine[1]++;
	ex_yield("b2", T_OBJ(1));
	t->mine[1]++;
}
static void toy_c(void *p)
{
	struct toy *t = p;

	if (toy_shared) {
		ex_touch(T_FLAG);
		t->flag = 1;
	}
	ex_yield("c1", T_OBJ(2));
	t->mine[2]++;
	ex_yield("c2", T_OBJ(2));
	t->mine[2]++;
}
static const char *toy_check(void *p, char *buf, size_t len)
{
	struct toy *t = p;

	if (t->a_saw) {
		snprintf(buf, len, "A saw the flag");
		return buf;
	}
	return NULL;
}
static void toy_state(void *p, char *buf, size_t len)
{
	struct toy *t = p;

	snprintf(buf, len, "%d %d %d", t->mine[0], t->mine[1], t->mine[2]);
}
static const struct ex_scenario toy = {
	.name = "toy", .summary = "", .bug = "", .nthreads = 3,
	.thread_name = { "A", "B", "C" },
	.start_mask = { T_OBJ(0), T_OBJ(1), T_OBJ(2) | T_FLAG },
	.setup = toy_setup, .body = { toy_a, toy_b, toy_c },
	.check = toy_check, .state = toy_state, .teardown = free,
};

static void test_reduction(void)
{
	toy_shared = false;
	search(&toy, -1, false, true);
	CHECK(r.explored == 1680 && r.complete, "toy: %ld schedules without reduction",
	      r.explored);
	search(&toy, -1, true, true);
	CHECK(r.explored == 1 && r.complete && r.pruned_sleep > 0,
	      "toy, independent: sleep sets ran %ld schedules, pruned %ld", r.explored,
	      r.pruned_sleep);

	toy_shared = true;
	search(&toy, -1, false, true);
	CHECK(r.found && r.failures > 0 && r.failures < r.explored,
	      "toy, shared flag: %ld of %ld fail", r.failures, r.explored);
	search(&toy, -1, true, true);
	CHECK(r.found && r.explored >= 2 && r.explored < 1680 && r.failures >= 1,
	      "toy, shared flag, reduced: %ld of %ld fail", r.failures, r.explored);
	CHECK(r.explored - r.failures >= 1, "toy, reduced: lost the passing class");

	/* Bound 0: each thread runs to its end; only the first picks differ. */
	search(&toy, 0, true, true);
	CHECK(r.explored == 6 && r.pruned_bound > 0, "toy, bound 0: %ld schedules",
	      r.explored);
}

/* The rwsem counts the text quotes: every schedule of the broken variant. */
static void test_counts(void)
{
	extern const struct ex_scenario scn_rwsem_steal;

	search(&scn_rwsem_steal, -1, false, true);
	CHECK(r.complete && r.failures > 0 && r.failures < r.explored,
	      "rwsem-steal: %ld of %ld schedules fail", r.failures, r.explored);
	search(&scn_rwsem_steal, 0, false, true);
	CHECK(r.complete && r.explored == 2 && r.failures == 0,
	      "rwsem-steal, bound 0: %ld schedules, %ld fail", r.explored, r.failures);
}

/* Two threads that each sleep with nobody to wake them: a deadlock, reported. */
static void *dl_setup(const struct ex_scenario *sc)
{
	(void)sc;
	return calloc(1, 1);
}
static void dl_sleep(void *p)
{
	(void)p;
	set_current_state(TASK_UNINTERRUPTIBLE);
	schedule();
}
static const char *dl_check(void *p, char *buf, size_t len)
{
	(void)p;
	(void)buf;
	(void)len;
	return NULL;
}
static void dl_state(void *p, char *buf, size_t len)
{
	(void)p;
	snprintf(buf, len, "-");
}
static const struct ex_scenario deadlock = {
	.name = "deadlock", .summary = "", .bug = "", .nthreads = 2,
	.thread_name = { "X", "Y" }, .start_mask = { EX_MODEL, EX_MODEL },
	.setup = dl_setup, .body = { dl_sleep, dl_sleep },
	.check = dl_check, .state = dl_state, .teardown = free,
};

static void test_deadlock(void)
{
	search(&deadlock, -1, true, true);
	CHECK(r.found && strstr(r.why, "deadlock") && r.complete,
	      "deadlock: found %d, \"%s\"", r.found, r.why);
}

/* With no bound, the sleep sets must not change any verdict or count here. */
static void test_reduce_same_verdicts(void)
{
	for (int i = 0; ex_scenarios[i]; i++) {
		const struct ex_scenario *sc = ex_scenarios[i];
		long n, f;

		search(sc, -1, false, true);
		if (!r.complete)
			continue;	/* too big for a test */
		n = r.explored;
		f = r.failures;
		search(sc, -1, true, true);
		CHECK((r.failures > 0) == (f > 0) && r.explored <= n && r.complete,
		      "%s: %ld of %ld fail without reduction, %ld of %ld with", sc->name,
		      f, n, r.failures, r.explored);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		bool help = strcmp(argv[1], "--help") == 0;

		fprintf(help ? stdout : stderr, "%susage: test_explore\n"
			"Runs the explorer's own tests; prints \"N passed, N failed\".\n",
			help ? "" : "test_explore: takes no arguments\n");
		return help ? 0 : 2;
	}
	test_broken_found();
	test_replay_deterministic();
	test_correct_clean();
	test_bad_replay();
	test_reduction();
	test_counts();
	test_deadlock();
	test_reduce_same_verdicts();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
