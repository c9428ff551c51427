/*
 * Shared helpers for the in-guest experiment programs (see mmlocks_guest.h):
 * measuring: command-line options, latency statistics and the mmap writer,
 * VMA layouts. mg_json.c prints records; mmlocks_guest.c has files, knobs
 * and their restoration, processes, time and CPU placement.
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <getopt.h>
#include <math.h> /* isfinite, NAN: macros, no libm needed */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- options ---------------------------------------------------------- */

bool mg_parse_ll(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

int mg_parse_ll_list(const char *s, long long min, long long max, long long *out, int cap)
{
	char item[32];
	int n = 0;

	if (!s || !*s)
		return -1;
	for (;;) {
		size_t len = strcspn(s, ",");

		if (!len || len >= sizeof(item) || n == cap)
			return -1;
		memcpy(item, s, len);
		item[len] = '\0';
		if (!mg_parse_ll(item, min, max, &out[n++]))
			return -1;
		if (!s[len])
			return n;
		s += len + 1;
	}
}

void mg_usage_error(const char *prog, void (*usage)(FILE *), const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	usage(stderr);
	exit(MG_EXIT_USAGE);
}

bool mg_parse_opts(const char *prog, int argc, char **argv, const struct mg_opt *o,
		   void (*usage)(FILE *))
{
	struct option lo[MG_MAX_OPTS + 3];
	bool set[MG_MAX_OPTS] = { false }, quick = false;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = 0;
	int c, i = 0;

	for (; o[n].name; n++) {
		if (n == MG_MAX_OPTS) {
			fprintf(stderr, "%s: more than %d options: raise MG_MAX_OPTS\n", prog, MG_MAX_OPTS);
			exit(MG_EXIT_FAIL);
		}
		lo[n] = (struct option){ o[n].name, o[n].val || o[n].str ? required_argument : no_argument,
					 NULL, 'o' };
	}
	lo[n] = (struct option){ "quick", no_argument, NULL, 'q' };
	lo[n + 1] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n + 2] = (struct option){ NULL, 0, NULL, 0 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lo, &i)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		} else if (c == 'q') {
			quick = true;
		} else if (c != 'o') {
			mg_usage_error(prog, usage, "unknown or incomplete option '%s'", argv[optind - 1]);
		} else if (o[i].str) {
			*o[i].str = optarg;
		} else if (!o[i].val) {
			*o[i].flag = o[i].flag_value;
		} else if (!mg_parse_ll(optarg, o[i].min, o[i].max, o[i].val) || (o[i].even && *o[i].val % 2)) {
			mg_usage_error(prog, usage, "--%s: expected %s in %lld..%lld, got '%s'", o[i].name,
				    o[i].even ? "an even integer" : "an integer", o[i].min, o[i].max, optarg);
		} else {
			set[i] = true;
		}
	}
	if (optind < argc)
		mg_usage_error(prog, usage, "unexpected argument '%s'", argv[optind]);
	for (size_t k = 0; quick && k < n; k++)
		if (o[k].val && o[k].quick != MG_NO_QUICK && !set[k])
			*o[k].val = o[k].quick;
	for (size_t k = 0; k < n; k++) {
		if (!o[k].cpu)
			continue;
		if (*o[k].val < 0) /* the default: the last CPU */
			*o[k].val = ncpu - 1;
		if (*o[k].val >= ncpu)
			mg_usage_error(prog, usage, "--%s %lld: this machine has %ld CPUs (0..%ld)",
				       o[k].name, *o[k].val, ncpu, ncpu - 1);
	}
	return quick;
}

/* ---- statistics ------------------------------------------------------- */

void mg_lat_init(struct mg_lat *l, size_t cap)
{
	memset(l, 0, sizeof(*l));
	l->v = malloc(cap * sizeof(*l->v));
	l->cap = l->v ? cap : 0;
}

void mg_lat_reset(struct mg_lat *l)
{
	l->n = 0;
	l->count = 0;
	l->max = 0;
}

void mg_lat_add(struct mg_lat *l, uint64_t ns)
{
	if (l->n < l->cap)
		l->v[l->n++] = ns;
	l->count++;
	if (ns > l->max)
		l->max = ns;
}

/* region: mmap-writer */
void *mg_mmap_writer(void *arg)
{
	const struct mg_writer *w = arg;
	int p;

	while ((p = __atomic_load_n(w->phase, __ATOMIC_ACQUIRE)) != MG_PHASE_STOP) {
		uint64_t t0 = mg_now_ns(), t1, t2;
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		t1 = mg_now_ns();
		if (m != MAP_FAILED)
			munmap(m, 4096);
		t2 = mg_now_ns();
		if (p >= 0 && p == __atomic_load_n(w->phase, __ATOMIC_ACQUIRE)) {
			mg_lat_add(&w->lat[p], t1 - t0);
			mg_lat_add(&w->lat[p], t2 - t1);
		}
		if (w->pause_us)
			mg_sleep_us(w->pause_us);
	}
	return NULL;
}
/* endregion: mmap-writer */

void mg_lat_free(struct mg_lat *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

uint64_t mg_lat_pct(struct mg_lat *l, double p)
{
	double r = p / 100.0 * (double)l->n;
	size_t rank;

	if (!l->n)
		return 0;
	qsort(l->v, l->n, sizeof(*l->v), cmp_u64);
	/* Nearest rank: ceil(p/100 * n), without libm. */
	rank = (size_t)r;
	if ((double)rank < r)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > l->n)
		rank = l->n;
	return l->v[rank - 1];
}

int mg_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double mg_median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), mg_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* ---- layouts ---------------------------------------------------------- */

int mg_map_small_vmas(uintptr_t base, size_t npages)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap((void *)base, npages * pg, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	if ((uintptr_t)p != base) { /* kernels before 4.17 ignore the flag */
		munmap(p, npages * pg);
		return -EEXIST;
	}
	for (size_t i = 1; i < npages; i += 2)
		if (mprotect(p + i * pg, pg, PROT_READ))
			return -errno;
	return 0;
}

long mg_count_vmas(uintptr_t lo, uintptr_t hi, long *total)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	long inside = 0, all = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		all++;
		if (s >= lo && e <= hi)
			inside++;
	}
	fclose(f);
	if (total)
		*total = all;
	return inside;
}

long long mg_anon_huge_kb(void)
{
	char buf[4096], *p;

	if (mg_read_file("/proc/self/smaps_rollup", buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "AnonHugePages:");
	if (!p)
		return -1;
	return strtoll(p + strlen("AnonHugePages:"), NULL, 10);
}
