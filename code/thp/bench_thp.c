/* bench_thp.c - throughput of partial unmaps per thread count, 6.12's early check on and off, with a shrinker running. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "thp.h"
#include "../common/bench.h"

/* A thread that cannot start would leave the others waiting: stop here. */
static void die(const char *what)
{
	perror(what);
	exit(1);
}

#define MAX_COUNTS 16
#define MAX_THREADS 64
#define MAX_RUNS 21

static struct {
	int threads[MAX_COUNTS], nthreads;
	long order, hits, folios, duration_ms, runs, shrink_us;
	const char *data;
} opt = { { 1, 2, 4, 8 }, 4, HPAGE_PMD_ORDER, 16, 8, 300, 3, 1000, NULL };

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_thp [options]\n"
"Threads partially unmap large folios of their own, as ld.lld's\n"
"MADV_DONTNEED did in seed 003: fault a folio in, unmap it in --hits\n"
"equal pieces (every piece but the last leaves it partially mapped), free\n"
"it, next folio. A shrinker thread runs deferred_split_scan() meanwhile.\n"
"Per thread count, runs alternate the early check on and off (ABAB) and\n"
"the table gives the median and the spread of unmaps per second, and the\n"
"split_queue_lock acquisitions per partial unmap (the counter that shows\n"
"the switch acted).\n"
"  --threads LIST   thread counts, e.g. 1,2,4,8 (default), each 1..%d\n"
"  --order N        folio order, 2..9 (default 9: a 2 MiB THP)\n"
"  --hits N         unmaps per folio, 2..512, dividing 2^order (default 16)\n"
"  --folios N       folios per thread, 1..256 (default 8)\n"
"  --duration-ms N  per run, 10..60000 (default 300)\n"
"  --runs N         runs per position and thread count, 1..%d (default 3)\n"
"  --shrink-us N    shrinker period, 0 = no shrinker, 0..1000000 (default 1000)\n"
"  --data FILE      also write the plot's data (threads, median/min/max on, off)\n"
"  --quick          --threads 1,2,4 --duration-ms 60 --runs 2\n"
"  --help           this text\n", MAX_THREADS, MAX_RUNS);
}

struct run {
	struct deferred_split ds;
	struct folio *folios;		/* opt.folios per thread */
	pthread_barrier_t start;
	atomic_bool stop;
	atomic_long zaps;
	double secs;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct worker {
	struct run *r;
	int cpu;
	pthread_t th;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct folio *mine = w->r->folios + (w->cpu - 1) * opt.folios;
	int piece = (1 << opt.order) / opt.hits;
	long zaps = 0;

	thp_set_cpu(w->cpu);
	pthread_barrier_wait(&w->r->start);
/* region: bench-loop */
	for (long i = 0; !atomic_load_explicit(&w->r->stop, memory_order_relaxed); i++) {
		struct folio *folio = &mine[i % opt.folios];

		/* The shrinker may still hold it: take the next one. */
		if (!atomic_load_explicit(&folio->freed, memory_order_acquire))
			continue;
		do_anonymous_large_fault(folio);
		for (int h = 0; h < opt.hits; h++)
			zap_present_ptes(folio, h * piece, piece);
		zaps += opt.hits;
	}
/* endregion: bench-loop */
	atomic_fetch_add(&w->r->zaps, zaps);
	return NULL;
}

static void *shrinker(void *arg)
{
	struct run *r = arg;
	struct timespec gap = { opt.shrink_us / 1000000, (opt.shrink_us % 1000000) * 1000 };

	thp_set_cpu(THP_NR_CPUS - 1);
	pthread_barrier_wait(&r->start);
	while (!atomic_load(&r->stop)) {
		nanosleep(&gap, NULL);
		deferred_split_scan(&r->ds, DEFERRED_SPLIT_BATCH);
	}
	return NULL;
}

struct sample {
	double rate;		/* unmaps per second, all threads */
	double locks_per_partial, contended_pct;
	long deferred_split_page, splits;
};

static int one_run(int nthreads, bool early_check, struct sample *s)
{
	struct run *r = calloc(1, sizeof(*r));
	struct worker w[MAX_THREADS];
	struct timespec dur = { opt.duration_ms / 1000, (opt.duration_ms % 1000) * 1000000 };
	pthread_t sh;
	long partial, locks;
	double t0;
	int n = nthreads * opt.folios, rc = -1;

	if (!r || !(r->folios = calloc(n, sizeof(struct folio))))
		goto out;
	deferred_split_init(&r->ds);
	deferred_split_set_early_check(&r->ds, early_check);
	for (int i = 0; i < n; i++)
		if (folio_init(&r->folios[i], &r->ds, opt.order))
			goto out;
	pthread_barrier_init(&r->start, NULL, nthreads + 1 + (opt.shrink_us > 0));
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .r = r, .cpu = i + 1 };
		if (pthread_create(&w[i].th, NULL, worker, &w[i]))
			die("pthread_create");
	}
	if (opt.shrink_us)
		if (pthread_create(&sh, NULL, shrinker, r))
			die("pthread_create");
	pthread_barrier_wait(&r->start);
	t0 = now_s();
	nanosleep(&dur, NULL);
	atomic_store(&r->stop, true);
	for (int i = 0; i < nthreads; i++)
		pthread_join(w[i].th, NULL);
	r->secs = now_s() - t0;
	if (opt.shrink_us)
		pthread_join(sh, NULL);
	pthread_barrier_destroy(&r->start);

	partial = thp_event(&r->ds, DEFERRED_SPLIT_PARTIAL_UNMAPS);
	locks = thp_event(&r->ds, DEFERRED_SPLIT_LOCK_TAKEN);
	s->rate = atomic_load(&r->zaps) / r->secs;
	s->locks_per_partial = partial ? (double)locks / partial : 0;
	locks += thp_event(&r->ds, SPLIT_QUEUE_LOCK_FAULT) + thp_event(&r->ds, SPLIT_QUEUE_LOCK_FREE) +
		 thp_event(&r->ds, SPLIT_QUEUE_LOCK_SCAN);
	s->contended_pct = locks ? 100.0 * thp_event(&r->ds, SPLIT_QUEUE_LOCK_CONTENDED) / locks : 0;
	s->deferred_split_page = thp_event(&r->ds, THP_DEFERRED_SPLIT_PAGE);
	s->splits = thp_event(&r->ds, THP_SPLIT_PAGE);
	rc = 0;
out:
	if (r && r->folios)
		for (int i = 0; i < n; i++)
			folio_destroy(&r->folios[i]);
	if (r)
		free(r->folios);
	free(r);
	return rc;
}

static int parse_threads(const char *arg)
{
	char s[256], *save = NULL;
	long v;

	if (strlen(arg) >= sizeof(s))
		return -1;
	strcpy(s, arg);
	opt.nthreads = 0;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (opt.nthreads == MAX_COUNTS || bench_parse_long(tok, 1, MAX_THREADS, &v))
			return -1;
		opt.threads[opt.nthreads++] = v;
	}
	return opt.nthreads ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", 1, 0, 't' }, { "order", 1, 0, 'o' }, { "hits", 1, 0, 'H' },
		{ "folios", 1, 0, 'f' }, { "duration-ms", 1, 0, 'd' }, { "runs", 1, 0, 'r' },
		{ "shrink-us", 1, 0, 's' }, { "data", 1, 0, 'D' }, { "quick", 0, 0, 'q' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	int c, bad = 0;
	FILE *data = NULL;
	char tmp[4096];

	while (!bad && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': bad = parse_threads(optarg); break;
		case 'o': bad = bench_parse_long(optarg, 2, HPAGE_PMD_ORDER, &opt.order); break;
		case 'H': bad = bench_parse_long(optarg, 2, 512, &opt.hits); break;
		case 'f': bad = bench_parse_long(optarg, 1, 256, &opt.folios); break;
		case 'd': bad = bench_parse_long(optarg, 10, 60000, &opt.duration_ms); break;
		case 'r': bad = bench_parse_long(optarg, 1, MAX_RUNS, &opt.runs); break;
		case 's': bad = bench_parse_long(optarg, 0, 1000000, &opt.shrink_us); break;
		case 'D': opt.data = optarg; break;
		case 'q':
			opt.nthreads = 3;
			opt.duration_ms = 60;
			opt.runs = 2;
			break;
		case 'h': usage(stdout); return 0;
		default: bad = 1; optarg = NULL;
		}
		if (bad && optarg)
			fprintf(stderr, "bench_thp: bad value '%s'\n", optarg);
	}
	if (!bad && optind < argc) {
		fprintf(stderr, "bench_thp: unexpected argument '%s'\n", argv[optind]);
		bad = 1;
	}
	if (!bad && (opt.hits > (1L << opt.order) || (1L << opt.order) % opt.hits)) {
		fprintf(stderr, "bench_thp: --hits %ld does not divide 2^%ld pages\n",
			opt.hits, opt.order);
		bad = 1;
	}
	if (bad) {
		usage(stderr);
		return 2;
	}
	/* The data file appears whole or not at all: written aside, renamed. */
	if (opt.data && (snprintf(tmp, sizeof(tmp), "%s.tmp", opt.data) >= (int)sizeof(tmp) ||
			 !(data = fopen(tmp, "w")))) {
		perror(opt.data);
		return 1;
	}

	bench_print_host("# ", 0, "");
	printf("# order %ld folios, %ld unmaps each, %ld folios per thread, %ld ms per run, "
	       "%ld runs per position (ABAB), shrinker %s\n", opt.order, opt.hits, opt.folios,
	       opt.duration_ms, opt.runs, opt.shrink_us ? "on" : "off");
	printf("%7s %5s %12s %12s %12s %13s %10s %10s %8s\n", "threads", "check",
	       "unmaps/s", "min", "max", "locks/partial", "contended%", "deferred", "splits");
	if (data)
		fprintf(data, "# threads on_median on_min on_max off_median off_min off_max (unmaps/s)\n");
	for (int t = 0; t < opt.nthreads; t++) {
		double rate[2][MAX_RUNS], lpp[2][MAX_RUNS], cont[2][MAX_RUNS];
		long dsp[2] = { 0, 0 }, spl[2] = { 0, 0 };
		double med[2], lo[2], hi[2];

		for (int run = 0; run < opt.runs; run++)
			for (int pos = 0; pos < 2; pos++) {	/* on, off, on, off ... */
				struct sample s;

				if (one_run(opt.threads[t], pos == 0, &s)) {
					fprintf(stderr, "bench_thp: out of memory\n");
					if (data) {
						fclose(data);
						remove(tmp);
					}
					return 1;
				}
				rate[pos][run] = s.rate;
				lpp[pos][run] = s.locks_per_partial;
				cont[pos][run] = s.contended_pct;
				dsp[pos] += s.deferred_split_page;
				spl[pos] += s.splits;
			}
		for (int pos = 0; pos < 2; pos++) {
			med[pos] = bench_median(rate[pos], opt.runs);
			lo[pos] = rate[pos][0];
			hi[pos] = rate[pos][opt.runs - 1];
			printf("%7d %5s %12.0f %12.0f %12.0f %13.3f %10.1f %10ld %8ld\n",
			       opt.threads[t], pos ? "off" : "on", med[pos], lo[pos], hi[pos],
			       bench_median(lpp[pos], opt.runs), bench_median(cont[pos], opt.runs),
			       dsp[pos], spl[pos]);
		}
		if (data)
			fprintf(data, "%d %.0f %.0f %.0f %.0f %.0f %.0f\n", opt.threads[t],
				med[0], lo[0], hi[0], med[1], lo[1], hi[1]);
	}
	if (data && (fclose(data) || rename(tmp, opt.data))) {
		perror(opt.data);
		remove(tmp);
		return 1;
	}
	return 0;
}
