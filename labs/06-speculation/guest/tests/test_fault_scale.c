/*
 * Host tests of fault_scale's pieces (guest/fault_scale/): the interleaving
 * order, the A/A comparison's arithmetic, the option parsers, each pattern's
 * pass (its op count, where its writes land: a private file mapping must
 * leave the file alone, a shared one must write it), the tmpfs files (no
 * name left behind), the counter readers, and the method: the statistics
 * of the kept periods, and one short cell run on the host (pinned workers,
 * warm-up dropped, the counters read at both ends of the kept window, a
 * failing worker and a stop signal end the cell with every thread joined).
 * The host's faults and tmpfs are 6.12's in what these tests look at; only
 * the cells wait on time, a few tenths of a second each.
 */
#define _GNU_SOURCE
#include "fault_scale/report.h"
#include "fault_scale/sampler.h"
#include "mmlocks_guest.h"
#include "fault_scale/workload.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct fs_opts opt = { .knob = "uprobe_speculate", .dir = "/dev/shm" }; /* report.c's */

/* ---- order and arithmetic ------------------------------------------------------ */

Test(order, both_positions_per_rep_first_one_alternates)
{
	for (int p = 0; p < FS_NPAT; p++)
		for (int rep = 0; rep < FS_MAX_REPS; rep++) {
			int a = fs_position(rep, p, 0), b = fs_position(rep, p, 1);

			cr_assert(a + b == 1, "rep %d pattern %d runs %d then %d", rep, p, a, b);
			if (rep)
				cr_assert_neq(a, fs_position(rep - 1, p, 0),
					      "rep %d pattern %d starts with the same position as rep %d", rep, p, rep - 1);
			if (p)
				cr_assert_neq(a, fs_position(rep, p - 1, 0), "patterns %d and %d start alike", p - 1, p);
		}
}

static struct fs_cmp cmp3(double a0, double a1, double a2, double b0, double b1, double b2)
{
	const double v[2][FS_MAX_REPS] = { { a0, a1, a2 }, { b0, b1, b2 } };

	return fs_compare(v, 3);
}

Test(compare, medians_ratio_spreads_and_pairs)
{
	struct fs_cmp c = cmp3(100, 90, 110, 104, 99, 200);

	cr_assert_float_eq(c.med[0], 100, 1e-9);
	cr_assert_float_eq(c.med[1], 104, 1e-9);
	cr_assert_float_eq(c.min[0], 90, 1e-9);
	cr_assert_float_eq(c.max[1], 200, 1e-9);
	cr_assert_float_eq(c.ratio, 1.04, 1e-9, "ratio is position 1 over position 0");
	cr_assert_float_eq(c.change_pct, 4, 1e-9);
	cr_assert(c.pass, "+4 %% is within +-5 %%");
	cr_assert_float_eq(c.spread_pct[0], 20, 1e-9, "(110 - 90) / 100");
	cr_assert_float_eq(c.spread_pct[1], 101 / 1.04, 1e-9);
	cr_assert_not(c.resolves, "a 97 %% spread cannot resolve 5 %%");
	cr_assert_float_eq(c.pair_min, 1.04, 1e-9, "rep 1: 104/100");
	cr_assert_float_eq(c.pair_max, 200.0 / 110, 1e-9, "rep 3: 200/110");
	cr_assert_float_eq(c.pair_med, 1.1, 1e-9, "rep 2: 99/90");
}

Test(compare, the_goal_is_five_percent_either_way)
{
	cr_assert(cmp3(100, 100, 100, 95, 95, 95).pass, "-5 %% passes");
	cr_assert(cmp3(100, 100, 100, 105, 105, 105).pass, "+5 %% passes");
	cr_assert_not(cmp3(100, 100, 100, 94.9, 94.9, 94.9).pass, "-5.1 %% fails");
	cr_assert_not(cmp3(100, 100, 100, 105.1, 105.1, 105.1).pass, "+5.1 %% fails");
	cr_assert(cmp3(100, 101, 99, 100, 102, 98).resolves, "2 %% and 4 %% spreads resolve 5 %%");
}

Test(compare, nothing_measured_is_no_pass)
{
	struct fs_cmp c = cmp3(0, 0, 0, 100, 100, 100);

	cr_assert_not(c.pass);
	cr_assert(isnan(c.ratio) && isnan(c.pair_min) && isnan(c.pair_max) && isnan(c.pair_med));
	c = cmp3(100, 0, 100, 100, 100, 100);
	cr_assert(isnan(c.pair_med), "a repetition that measured nothing has no pair ratio");
}

/* ---- options ------------------------------------------------------------------ */

Test(options, pattern_lists)
{
	cr_assert_eq(fs_pattern_list("page_fault1"), 1u << FS_PAGE_FAULT1);
	cr_assert_eq(fs_pattern_list("malloc2,page_fault3"), 1u << FS_MALLOC2 | 1u << FS_PAGE_FAULT3);
	cr_assert_eq(fs_pattern_list("page_fault1,page_fault2,page_fault3,malloc2"), 15u);
	cr_assert_eq(fs_pattern_list(""), 0u);
	cr_assert_eq(fs_pattern_list("page_fault1,"), 0u, "an empty item");
	cr_assert_eq(fs_pattern_list("malloc2,malloc2"), 0u, "a repeat");
	cr_assert_eq(fs_pattern_list("page_fault"), 0u, "a prefix is no name");
	cr_assert_eq(fs_pattern_list("page_fault12"), 0u);
}

/* ---- the passes ------------------------------------------------------------------ */

#define LEN (1ul << 20)

static char *tmpfs_dir(void)
{
	static char dir[] = "/dev/shm/fault_scale_test.XXXXXX";

	if (!fs_dir_is_tmpfs("/dev/shm"))
		cr_skip_test("/dev/shm is not tmpfs on this host");
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

static long run_pass(enum fs_pattern p, int fd, int stop, long long *minflt)
{
	struct fs_worker w = { .pattern = p, .len = LEN, .fd = fd, .stop = &stop };
	struct rusage r0, r1;
	long n;

	getrusage(RUSAGE_THREAD, &r0);
	n = fs_pass(&w);
	getrusage(RUSAGE_THREAD, &r1);
	*minflt = r1.ru_minflt - r0.ru_minflt;
	cr_assert_eq(w.err, 0, "%s: %s", fs_pattern_names[p], strerror(w.err));
	cr_assert_eq(w.ops, n, "%s: published %lld ops, did %ld", fs_pattern_names[p], w.ops, n);
	return n;
}

Test(pass, page_fault1_one_op_and_one_fault_per_page)
{
	long long flt;

	cr_assert_eq(run_pass(FS_PAGE_FAULT1, -1, 0, &flt), (long)(LEN / FS_PAGE));
	cr_assert_geq(flt, (long long)(LEN / FS_PAGE), "only %lld faults for %lu pages", flt, LEN / FS_PAGE);
	cr_assert_eq(run_pass(FS_PAGE_FAULT1, -1, 1, &flt), 0, "a set stop ends the pass at once");
}

/* Count the pages of the file whose first byte is 1. */
static long ones(int fd)
{
	long n = 0;

	for (off_t off = 0; off < (off_t)LEN; off += FS_PAGE) {
		char c = 0;

		cr_assert_eq(pread(fd, &c, 1, off), 1);
		n += c == 1;
	}
	return n;
}

Test(pass, private_file_faults_leave_the_file_alone_shared_ones_write_it)
{
	char *dir = tmpfs_dir();
	int fd = fs_file_create(dir, LEN);
	long long flt;
	struct stat st;

	cr_assert_geq(fd, 0, "fs_file_create: %s", strerror(-fd));
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_size, (off_t)LEN);
	cr_assert_eq(st.st_nlink, 0, "the file must be unlinked once created");
	cr_assert_eq(run_pass(FS_PAGE_FAULT2, fd, 0, &flt), (long)(LEN / FS_PAGE));
	cr_assert_geq(flt, (long long)(LEN / FS_PAGE));
	cr_assert_eq(ones(fd), 0, "a MAP_PRIVATE write reached the file");
	cr_assert_eq(run_pass(FS_PAGE_FAULT3, fd, 0, &flt), (long)(LEN / FS_PAGE));
	cr_assert_eq(ones(fd), (long)(LEN / FS_PAGE), "MAP_SHARED writes must land in the file");
	close(fd);
	cr_assert_eq(rmdir(dir), 0, "fs_file_create left a name in %s", dir);
}

Test(pass, malloc2_one_batch)
{
	long long flt;

	cr_assert_eq(run_pass(FS_MALLOC2, -1, 0, &flt), FS_MALLOC_BATCH);
}

Test(files, only_tmpfs_directories)
{
	cr_assert_not(fs_dir_is_tmpfs("/proc"), "procfs is no tmpfs");
	cr_assert_not(fs_dir_is_tmpfs("/nonexistent/dir"));
	if (fs_dir_is_tmpfs("/dev/shm")) {
		char *dir = tmpfs_dir();
		char file[128];
		int fd;

		snprintf(file, sizeof(file), "%s/f", dir);
		fd = open(file, O_CREAT | O_WRONLY, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
		cr_assert_not(fs_dir_is_tmpfs(file), "a file on tmpfs is no directory");
		unlink(file);
		rmdir(dir);
	}
	cr_assert_lt(fs_file_create("/nonexistent/dir", LEN), 0);
}

/* ---- counters --------------------------------------------------------------------- */

Test(counters, vmstat_exact_names)
{
	long long v[FS_VM_NR];

	cr_assert(fs_vm_parse("pgmajfault 5\npgfault 1234\nvma_lock_success 7\n"
			      "vma_lock_retry 2\nvma_lock_missx 9\n", v));
	cr_assert_eq(v[FS_PGFAULT], 1234, "pgmajfault must not be read as pgfault");
	cr_assert_eq(v[FS_VMA_LOCK_SUCCESS], 7);
	cr_assert_eq(v[FS_VMA_LOCK_RETRY], 2);
	cr_assert_eq(v[FS_VMA_LOCK_ABORT], -1, "a missing counter reads -1");
	cr_assert_eq(v[FS_VMA_LOCK_MISS], -1, "vma_lock_missx is another counter");
	cr_assert_not(fs_vm_parse("nr_free_pages 1\n", v));
}

Test(counters, the_switch_s_own_counters_sorted)
{
	char dir[] = "/tmp/fault_scale_kc.XXXXXX", path[256], names[FS_MAX_KC][FS_KC_NAME];
	static const char *const files[] = { "uprobe_speculate", "uprobe_speculate_success",
					     "uprobe_speculate_attempt", "uprobe_mmap_locked", "uprobe",
					     "uprobex_y", "deferred_split_early_check" };
	int n;

	cr_assert_not_null(mkdtemp(dir));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		close(open(path, O_CREAT | O_WRONLY, 0600));
	}
	n = fs_knob_counters(dir, "uprobe_speculate", names);
	cr_assert_eq(n, 3, "found %d", n);
	cr_assert_str_eq(names[0], "uprobe_mmap_locked");
	cr_assert_str_eq(names[1], "uprobe_speculate_attempt");
	cr_assert_str_eq(names[2], "uprobe_speculate_success");
	cr_assert_eq(fs_knob_counters(dir, "deferred_split_early_check", names), 0,
		     "the switch is not its own counter");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
	cr_assert_lt(fs_knob_counters("/nonexistent/dir", "x", names), 0);
}

/* ---- the method ------------------------------------------------------------------ */

Test(method, stats_of_the_kept_periods)
{
	const double v[] = { 5, 1, 4, 2 };
	struct fs_stats s = fs_stats_of(v, 4);

	cr_assert_eq(s.n, 4);
	cr_assert_float_eq(s.mean, 3, 1e-12);
	cr_assert_float_eq(s.median, 3, 1e-12, "the mean of the two middle values");
	cr_assert_float_eq(s.min, 1, 1e-12);
	cr_assert_float_eq(s.max, 5, 1e-12);
	s = fs_stats_of(v, 3);
	cr_assert_float_eq(s.median, 4, 1e-12, "5 1 4 sorted is 1 4 5");
	cr_assert_float_eq(v[0], 5, 1e-12, "the input is left alone");
	cr_assert_eq(fs_stats_of(v, 0).n, 0);
	cr_assert_eq(fs_stats_of(v, FS_MAX_STATS + 1).n, 0, "too many values: nothing");
}

struct marked {
	int calls[2];
	long long at[2];
	struct fs_cell *c;
};

static void on_mark(void *arg, int end)
{
	struct marked *m = arg;

	m->calls[end]++;
	m->at[end] = (long long)mg_now_ns();
}

Test(method, a_cell_drops_the_warm_up_and_reads_the_counters_around_the_kept_window)
{
	struct marked m = { { 0, 0 }, { 0, 0 }, NULL };
	struct fs_cell c = { .pattern = FS_PAGE_FAULT1, .threads = 2, .ncpu = 1, .warmup = 2,
			     .samples = 3, .sample_ms = 60, .len = LEN, .mark = on_mark, .arg = &m };
	long long t0 = (long long)mg_now_ns();
	double sum = 0;

	cr_assert_eq(fs_run_cell(&c), 0, "err %d", c.err);
	cr_assert_eq(m.calls[0], 1);
	cr_assert_eq(m.calls[1], 1);
	cr_assert_geq(m.at[0] - t0, 2 * 60 * 1000000ll * 95 / 100, "the kept window began inside the warm-up");
	cr_assert_geq(m.at[1] - m.at[0], 3 * 60 * 1000000ll * 90 / 100, "the kept window is 3 periods");
	cr_assert_eq(c.pinned, 2, "both workers pinned to CPU 0");
	cr_assert_gt(c.ops, 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_gt(c.rate[i], 0, "period %d measured nothing", i);
		sum += c.rate[i] * c.seconds / 3;
	}
	cr_assert_eq(c.rate[3], 0, "only the kept periods are recorded");
	/* The periods tile the kept window: their ops add up to the window's. */
	cr_assert_float_eq(sum, (double)c.ops, (double)c.ops * 0.2, "%g vs %lld", sum, c.ops);
}

Test(method, a_failing_worker_ends_the_cell)
{
	const int fds[2] = { -1, -1 };
	struct fs_cell c = { .pattern = FS_PAGE_FAULT2, .threads = 2, .ncpu = 2, .warmup = 0,
			     .samples = 2, .sample_ms = 50, .len = LEN, .fds = fds };

	cr_assert_eq(fs_run_cell(&c), -EBADF, "mmap of fd -1 fails");
	cr_assert_eq(c.err, EBADF);
}

Test(method, a_stop_signal_ends_the_cell_and_bad_cells_are_refused)
{
	struct fs_cell c = { .pattern = FS_MALLOC2, .threads = 1, .ncpu = 1, .warmup = 1,
			     .samples = 2, .sample_ms = 10000 };

	mg_stop_signal = 1;
	cr_assert_eq(fs_run_cell(&c), -EINTR);
	mg_stop_signal = 0;
	c.samples = FS_MAX_SAMPLES + 1;
	cr_assert_eq(fs_run_cell(&c), -EINVAL);
	c.samples = 1;
	c.threads = 0;
	cr_assert_eq(fs_run_cell(&c), -EINVAL);
}
