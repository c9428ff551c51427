/* Shared helpers for the in-guest experiment programs: JSON lines, knobs with restore, timing, statistics. */
#ifndef MMLOCKS_GUEST_H
#define MMLOCKS_GUEST_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where the patched kernel and the stock kernel keep what the labs touch. */
#ifndef MG_KNOBS /* overridable only for throwaway tests on a stock kernel */
#define MG_KNOBS "/sys/kernel/debug/mmlocks"
#endif
#define MG_LOCKEV "/sys/kernel/debug/lock_event_counts"
#define MG_TRACING "/sys/kernel/tracing"
#define MG_THP "/sys/kernel/mm/transparent_hugepage"
#define MG_KHUGEPAGED MG_THP "/khugepaged"

/* Exit codes shared by every guest program (see GUEST-INTERFACE.md). */
enum { MG_EXIT_OK = 0, MG_EXIT_FAIL = 1, MG_EXIT_USAGE = 2, MG_EXIT_WRONG_KERNEL = 3 };

/* ---- JSON lines on stdout --------------------------------------------- */

/*
 * One record is built in a fixed buffer and written with a single write(2),
 * so records from different threads never interleave.
 */
struct mg_json {
	char buf[4096];
	size_t len;
	bool first;
};

void mgj_start(struct mg_json *j, const char *type, const char *experiment);
void mgj_str(struct mg_json *j, const char *key, const char *val); /* NULL -> null */
void mgj_int(struct mg_json *j, const char *key, long long val);
void mgj_num(struct mg_json *j, const char *key, double val); /* NaN/inf -> null */
void mgj_bool(struct mg_json *j, const char *key, bool val);
void mgj_null(struct mg_json *j, const char *key);
/* An array of n numbers, each v[i] / div. */
void mgj_num_array(struct mg_json *j, const char *key, const uint64_t *v, size_t n, double div);
void mgj_emit(struct mg_json *j);

/* {"type":"error","experiment":...,"msg":...} on stdout, the message also on stderr. */
void mg_error(const char *experiment, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Free-form progress on stderr, prefixed with the program name. */
void mg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A kernel lab's test verdict: {"type":"test","name":NAME,"pass":..,
 * "reason":..} on the results port (labs/kernel/klab.py reads it).
 */
void mg_test_record(const char *experiment, const char *name, bool pass,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- option parsing --------------------------------------------------- */

/* Parse a whole decimal integer in [min, max]; false on junk or range. */
bool mg_parse_ll(const char *s, long long min, long long max, long long *out);
/*
 * Parse "A,B,C" (whole numbers in [min, max], at most cap of them) into
 * out[]; the count, or -1 on junk, range, an empty item or too many.
 */
int mg_parse_ll_list(const char *s, long long min, long long max, long long *out, int cap);

/* A quick value that --quick leaves alone. */
#define MG_NO_QUICK LLONG_MIN
#define MG_MAX_OPTS 16

/*
 * One option of a guest program's command line, "--name". An integer
 * option (val set) takes a whole number in [min, max] (even, if asked) and
 * under --quick becomes `quick` unless given (MG_NO_QUICK: keep it). A CPU
 * option is an integer that must name an online CPU; a negative default
 * means the last one. A flag option (val NULL) sets *flag to flag_value. A
 * string option (str set) points *str at its argument; the program checks it.
 */
struct mg_opt {
	const char *name;
	long long *val, min, max, quick;
	bool even, cpu;
	bool *flag, flag_value;
	const char **str;
};

/* Table entries: an integer, an even integer, a CPU, a flag, a string; MG_OPTS_END ends it. */
#define MG_INT(n, v, lo, hi, q) { .name = (n), .val = (v), .min = (lo), .max = (hi), .quick = (q) }
#define MG_EVEN(n, v, lo, hi, q) \
	{ .name = (n), .val = (v), .min = (lo), .max = (hi), .quick = (q), .even = true }
#define MG_CPU(n, v) { .name = (n), .val = (v), .min = 0, .max = 63, .quick = MG_NO_QUICK, .cpu = true }
#define MG_FLAG(n, f, value) { .name = (n), .flag = (f), .flag_value = (value) }
#define MG_STR(n, s) { .name = (n), .str = (s) }
#define MG_OPTS_END { .name = NULL }

/*
 * Parse argv against opts (ended by a zeroed entry) plus --quick and
 * --help. --help prints usage(stdout) and exits 0; an unknown option, a bad
 * value or a stray argument prints "PROG: what is wrong" and usage(stderr)
 * and exits MG_EXIT_USAGE. Returns whether --quick was given.
 */
bool mg_parse_opts(const char *prog, int argc, char **argv, const struct mg_opt *opts,
		   void (*usage)(FILE *));
/* "PROG: what is wrong" and usage(stderr) on stderr, exit MG_EXIT_USAGE: for checks across options. */
void mg_usage_error(const char *prog, void (*usage)(FILE *), const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));

/* ---- files, knobs and their restoration ------------------------------- */

bool mg_exists(const char *path);
/* Read a small file; returns bytes read (NUL-terminated) or -errno. */
ssize_t mg_read_file(const char *path, char *buf, size_t size);
/* Read the first integer in a file; -errno on failure. */
int mg_read_ll(const char *path, long long *out);
/* Write a string (O_TRUNC); 0 or -errno. */
int mg_write_file(const char *path, const char *val);
/* The integer in DIR/NAME (a debugfs or sysfs counter), -1 if unreadable. */
long long mg_counter(const char *dir, const char *name);

/*
 * Set a knob, remembering its value from before the first change so that
 * mg_restore_all() can put it back.  Understands sysfs choice files
 * ("always [madvise] never" is remembered as "madvise").  0 or -errno.
 */
int mg_knob_set(const char *path, const char *val);
int mg_knob_set_ll(const char *path, long long val);

/*
 * Install the restorer: at exit and on SIGINT/SIGTERM/SIGHUP, kill the
 * registered child processes and write every saved knob back, newest first.
 * Only the process that called this restores (forked children do not).
 */
void mg_install_restore(void);
void mg_restore_all(void);
/* Run fn (async-signal-safe code only) in mg_restore_all(), before the knobs. */
void mg_on_restore(void (*fn)(void));
void mg_register_child(pid_t pid);
void mg_unregister_child(pid_t pid);
/*
 * Fork a child that runs setup(ready_fd, arg): it sets itself up, writes
 * len bytes to ready_fd (the parent gets them in msg), then goes on until
 * it is killed; it _exit()s on a failure. The child is registered; -1 if
 * fork failed or the child died before writing them (it is reaped then).
 */
pid_t mg_spawn_ready(void (*setup)(int ready_fd, void *arg), void *arg, void *msg, size_t len);
/*
 * SIGKILL a child and reap it within 10 s (waitpid __WALL: the caller may
 * be its tracer); 0 once reaped and unregistered. -1, after an error record
 * of `experiment`, if it is still there: a child stuck in the kernel.
 */
int mg_kill_child(const char *experiment, pid_t pid);
/* Set by the signal handler before it restores; loops may poll it. */
extern volatile int mg_stop_signal;

/*
 * Exit 3 with an error record unless every path exists: the guest programs
 * must refuse to run on a kernel without the mmlocks knobs.
 */
void mg_require(const char *experiment, const char *const *paths);

/* Find a kernel thread's pid by its comm ("khugepaged"); -1 if none. */
pid_t mg_find_comm(const char *comm);

/* ---- time ------------------------------------------------------------- */

uint64_t mg_now_ns(void); /* CLOCK_MONOTONIC, the clock of trace_clock "mono" */
void mg_sleep_us(unsigned long us);

/* ---- latency samples and statistics ----------------------------------- */

/* Samples in ns; once the array is full, only count and max keep growing. */
struct mg_lat {
	uint64_t *v;
	size_t n, cap;
	uint64_t count, max;
};

void mg_lat_init(struct mg_lat *l, size_t cap);
void mg_lat_reset(struct mg_lat *l);
void mg_lat_add(struct mg_lat *l, uint64_t ns);
void mg_lat_free(struct mg_lat *l);
/* Nearest-rank percentile (0 < p <= 100) of the stored samples; sorts them. */
uint64_t mg_lat_pct(struct mg_lat *l, double p);

/* ---- the mmap writer of the lock experiments --------------------------- */

#define MG_PHASE_IDLE (-1) /* between configurations: latencies not recorded */
#define MG_PHASE_STOP (-2) /* the writer returns */

/*
 * mg_mmap_writer(w) loops until *w->phase is MG_PHASE_STOP: mmap() and
 * munmap() of one anonymous page (each takes mmap_write_lock on this
 * process's mm), both latencies added to w->lat[p] while *w->phase is some
 * p >= 0 (and still p afterwards), then a pause of w->pause_us. Only the
 * writer touches w->lat[]: read it while the phase is MG_PHASE_IDLE.
 */
struct mg_writer {
	const int *phase;
	struct mg_lat *lat;
	unsigned long pause_us;
};

void *mg_mmap_writer(void *w);

int mg_cmp_double(const void *a, const void *b);
/* Median of n values (sorts the array in place). */
double mg_median(double *v, size_t n);

/* ---- ftrace (mg_trace.c) ---------------------------------------------- */

/*
 * The timestamp of a trace line (trace_clock "mono", so comparable with
 * mg_now_ns()): the "SECONDS.FRACTION:" field just before `ev`, a pointer
 * into `line` at the event name. False if there is none.
 */
bool mg_trace_ts(const char *line, const char *ev, uint64_t *ns);

/*
 * Trace only task `pid`'s events (set_event_pid), each of `events`
 * ("system/event", NULL-terminated) enabled, trace_clock mono, a ring
 * buffer of buffer_kb per CPU, emptied; then tracing_on. Every knob goes
 * back through mg_restore_all(). 0, or -errno after an error record.
 */
int mg_trace_start(const char *experiment, pid_t pid, const char *const *events, long long buffer_kb);

/*
 * mg_trace_reader(tp), a thread body: reads trace_pipe and calls
 * tp->line(tp->arg, line) for each line (no newline), in order, until
 * tp->stop is set and the pipe is empty.
 */
struct mg_trace_pipe {
	void (*line)(void *arg, const char *line);
	void *arg;
	int stop;
};

void *mg_trace_reader(void *tp);

/* ---- address-space layouts -------------------------------------------- */

/*
 * Map npages pages at exactly `base` (MAP_FIXED_NOREPLACE) as PROT_NONE and
 * make every odd page PROT_READ, which splits the mapping into npages VMAs
 * that cannot merge (neighbours differ in protection) and that khugepaged
 * must skip.  Returns 0 or -errno.
 */
int mg_map_small_vmas(uintptr_t base, size_t npages);
/* Count the VMAs in /proc/self/maps that lie entirely inside [lo, hi); -errno on failure. */
long mg_count_vmas(uintptr_t lo, uintptr_t hi, long *total);
/* Parse "AnonHugePages:" (kB) from /proc/self/smaps_rollup; -1 on failure. */
long long mg_anon_huge_kb(void);

/* ---- CPU placement ---------------------------------------------------- */

/*
 * Pin the calling thread (a child process's only thread: the process) to
 * one CPU, so that a method's roles (writer, reader, scanner) run apart
 * and TCG's vCPU threads are not shared. cpu < 0: leave it where it is.
 * 0 or -errno.
 */
int mg_pin_cpu(int cpu);

#endif
