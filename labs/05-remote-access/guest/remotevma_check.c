/* Kernel part of lab 05: in-guest tests of __access_remote_vm() under one VMA's lock (patch 0009). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXP "kernel-lab-05"
#define PG 4096ul
/* The target's layout, at fixed addresses far from the mmap area. */
#define A_BASE 0x200000000ul  /* A: 4 pages read-write, written; B: the next 2, read-only */
#define A_PAGES 4
#define B_PAGES 2
#define C_BASE 0x201000000ul  /* C: 2 pages never touched */
#define D_BASE 0x202000000ul  /* D: 2 pages, only the first one written */
#define W_BASE 0x203000000ul  /* W: 2 pages written by the target (its own) */
#define COW_BASE 0x204000000ul /* COW: written by this process before the fork */
#define GAP 0x205000000ul     /* nothing mapped */
#define X_BASE 0x206000000ul  /* churn: unmapped, mapped, split, zapped */
#define X_PAGES 4
#define TRACE_READS 200

static struct {
	long long reads;
	const char *test;
	bool quick;
} opt = { 2000, NULL, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: remotevma_check --test paths|trace|churn [--reads N] [--quick]\n"
		"\n"
		"The kernel tests of lab 05 (__access_remote_vm() served under the per-VMA\n"
		"read lock of the one VMA that holds the range, our patch 0009), run inside\n"
		"the guest. This process forks a target with VMAs at fixed addresses and reads\n"
		"and writes the target's /proc/PID/mem (one __access_remote_vm() call per page),\n"
		"checking the bytes and the switch's counters (access_remote_vm_*):\n"
		"  paths  each path once, switch access_remote_vm_vma_lock 0 then 1:\n"
		"           stock_switch_off_takes_mmap_lock  0: every call takes mmap_lock\n"
		"           gap_fails_as_stock                 no VMA: EIO, _novma, as under 0\n"
		"           todo1_single_vma_under_vma_lock    reads within one VMA, one ending\n"
		"                                              at its last byte: VMA-locked\n"
		"           todo1_span_falls_back              a read across two VMAs: _span\n"
		"           todo1_pfnmap_falls_back            [vvar] (VM_PFNMAP): _pfnmap, as under 0\n"
		"           todo2_page_falls_back              untouched pages: _page, the rest of the\n"
		"                                              call under mmap_lock, right bytes\n"
		"           todo2_write_under_vma_lock         a write to the target's own page\n"
		"           todo2_write_breaks_cow             a write to a page shared copy-on-write\n"
		"                                              with this process: _page, ours unchanged\n"
		"  trace  %d reads of one page, switch 0 then 1, tracing this task's mmap_lock\n"
		"         acquisitions (mmap_lock_acquire_returned):\n"
		"           stock_reads_take_mmap_lock         0: at least one per read\n"
		"           todo1_reads_skip_mmap_lock         1: none (fewer than one in ten reads)\n"
		"  churn  N reads while the target unmaps, maps, splits and zaps the VMA read:\n"
		"           reads_survive_churn                every byte read is the pattern or 0\n"
		"Each test prints {\"type\":\"test\",\"name\":...,\"pass\":...,\"reason\":...}; the host\n"
		"(labs/kernel/klab.py) also fails a test whose run left a splat on the console.\n"
		"\n"
		"  --test T     which test run (required, or --quick: paths)\n"
		"  --reads N    churn: reads per switch position (100..1000000, default 2000;\n"
		"               quick 200)\n"
		"  --quick      small settings (the smoke boot)\n"
		"  --help       this text\n"
		"Every knob it changes is restored on exit, SIGINT and SIGTERM; the target is\n"
		"killed. Exit: 0 the tests ran (their records say pass or fail), 1 setup failed,\n"
		"2 usage, 3 not the mmlocks kernel.\n", TRACE_READS);
}

/* The byte every test expects at address a (never 0). */
static unsigned char pat(uintptr_t a)
{
	unsigned char c = (unsigned char)(a ^ (a >> 12) * 151u ^ (a >> 3));

	return c ? c : 0x5a;
}

static void fill(uintptr_t base, size_t len)
{
	for (uintptr_t a = base; a < base + len; a++)
		*(volatile unsigned char *)a = pat(a);
}

/* ---- the switch's counters ------------------------------------------------ */

enum { VMA_LOCKED, MMAP_LOCKED, FALLBACK, NOVMA, SPAN, PFNMAP, PAGE, NCNT };
static const char *const cnt_names[NCNT] = {
	"access_remote_vm_vma_locked", "access_remote_vm_mmap_locked", "access_remote_vm_fallback",
	"access_remote_vm_fallback_novma", "access_remote_vm_fallback_span",
	"access_remote_vm_fallback_pfnmap", "access_remote_vm_fallback_page",
};

struct cnt { long long v[NCNT]; };

static void cnt_read(struct cnt *c)
{
	for (int i = 0; i < NCNT; i++)
		c->v[i] = mg_counter(MG_KNOBS, cnt_names[i]);
}

/* *d = now - *c, as "vma_locked=.. mmap_locked=.. ..." in s. */
static void cnt_delta(const struct cnt *c, struct cnt *d, char *s, size_t n)
{
	struct cnt now;
	size_t o = 0;

	cnt_read(&now);
	for (int i = 0; i < NCNT; i++) {
		d->v[i] = now.v[i] - c->v[i];
		if (o < n)
			o += (size_t)snprintf(s + o, n - o, "%s%s=%lld", i ? " " : "",
					      cnt_names[i] + strlen("access_remote_vm_"), d->v[i]);
	}
}

static bool cnt_is(const struct cnt *d, long long vma, long long mmap, long long fb, long long novma,
		   long long span, long long pfnmap, long long page)
{
	const long long want[NCNT] = { vma, mmap, fb, novma, span, pfnmap, page };

	for (int i = 0; i < NCNT; i++)
		if (d->v[i] != want[i])
			return false;
	return true;
}

static int set_switch(int on)
{
	int err = mg_knob_set_ll(MG_KNOBS "/access_remote_vm_vma_lock", on);

	if (err)
		mg_error(EXP, "setting access_remote_vm_vma_lock to %d: %s", on, strerror(-err));
	return err;
}

/* ---- the target ------------------------------------------------------------ */

static void *map_at(uintptr_t a, size_t len, int prot)
{
	void *p = mmap((void *)a, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	return p == (void *)a ? p : NULL;
}

static void churn_forever(void)
{
	for (unsigned long i = 0;; i++) {
		munmap((void *)X_BASE, X_PAGES * PG);
		if (!map_at(X_BASE, X_PAGES * PG, PROT_READ | PROT_WRITE))
			_exit(1);
		fill(X_BASE, X_PAGES * PG);
		/* split the VMA in three and merge it again */
		mprotect((void *)(X_BASE + PG), PG, PROT_READ);
		mprotect((void *)(X_BASE + PG), PG, PROT_READ | PROT_WRITE);
		if (i & 1)
			madvise((void *)(X_BASE + 2 * PG), 2 * PG, MADV_DONTNEED);
	}
}

static void target_setup(int fd, void *arg)
{
	bool churn = arg != NULL;
	char ok = 1;

	if (churn) {
		if (!map_at(X_BASE, X_PAGES * PG, PROT_READ | PROT_WRITE))
			_exit(1);
		fill(X_BASE, X_PAGES * PG);
		if (write(fd, &ok, 1) != 1)
			_exit(1);
		churn_forever();
	}
	if (!map_at(A_BASE, (A_PAGES + B_PAGES) * PG, PROT_READ | PROT_WRITE) ||
	    !map_at(C_BASE, 2 * PG, PROT_READ | PROT_WRITE) ||
	    !map_at(D_BASE, 2 * PG, PROT_READ | PROT_WRITE) ||
	    !map_at(W_BASE, 2 * PG, PROT_READ | PROT_WRITE))
		_exit(1);
	fill(A_BASE, (A_PAGES + B_PAGES) * PG);
	/* B becomes its own VMA, right after A */
	if (mprotect((void *)(A_BASE + A_PAGES * PG), B_PAGES * PG, PROT_READ))
		_exit(1);
	fill(D_BASE, PG);
	fill(W_BASE, 2 * PG);
	if (write(fd, &ok, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static pid_t target;
static int memfd = -1;

static int start_target(bool churn)
{
	char path[64], ok;

	target = mg_spawn_ready(target_setup, churn ? (void *)1 : NULL, &ok, 1);
	if (target < 0) {
		mg_error(EXP, "the target process failed to set up its VMAs");
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)target);
	memfd = open(path, O_RDWR | O_CLOEXEC);
	if (memfd < 0) {
		mg_error(EXP, "open %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* pread()/pwrite() of the target's memory: bytes, or -errno. */
static long mem_read(uintptr_t a, void *buf, size_t len)
{
	ssize_t r = pread(memfd, buf, len, (off_t)a);

	return r < 0 ? -errno : (long)r;
}

static long mem_write(uintptr_t a, const void *buf, size_t len)
{
	ssize_t r = pwrite(memfd, buf, len, (off_t)a);

	return r < 0 ? -errno : (long)r;
}

/* Read [a, a+len) of the target; true if every byte is pat() (zero_from: 0 from there on). */
static bool read_check(uintptr_t a, size_t len, uintptr_t zero_from, char *why, size_t n)
{
	static unsigned char buf[4 * 4096];
	long r = mem_read(a, buf, len);

	if (r != (long)len) {
		snprintf(why, n, "read of %zu bytes at %#lx returned %ld", len, (unsigned long)a, r);
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char want = a + i >= zero_from ? 0 : pat(a + i);

		if (buf[i] != want) {
			snprintf(why, n, "byte at %#lx is %#x, want %#x", (unsigned long)(a + i), buf[i], want);
			return false;
		}
	}
	snprintf(why, n, "bytes right");
	return true;
}

/* The target's [vvar] (VM_IO | VM_PFNMAP), from /proc/PID/maps; 0 if none. */
static uintptr_t find_vvar(void)
{
	char path[64], line[512];
	uintptr_t lo = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)target);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vvar]")) {
			lo = (uintptr_t)strtoull(line, NULL, 16);
			break;
		}
	fclose(f);
	return lo;
}

/* ---- paths -------------------------------------------------------------------- */

/* The single-VMA reads: {offset in A, length}; calls = one per page mem_rw() touches. */
static const struct { unsigned long off, len; int calls; } sreads[] = {
	{ 0, 4096, 1 },                      /* one whole page */
	{ 100, 3000, 1 },                    /* inside a page */
	{ 4096 - 50, 200, 1 },               /* across a page boundary */
	{ 2 * 4096 + 17, 2 * 4096 - 17, 2 }, /* up to A's last byte: the second call ends at vm_end */
	{ A_PAGES * 4096, 4096, 1 },         /* B, read-only, as a whole */
};

static bool single_reads(char *why, size_t n)
{
	for (size_t i = 0; i < sizeof(sreads) / sizeof(sreads[0]); i++)
		if (!read_check(A_BASE + sreads[i].off, sreads[i].len, ~0ul, why, n))
			return false;
	return true;
}

static int single_calls(void)
{
	int c = 0;

	for (size_t i = 0; i < sizeof(sreads) / sizeof(sreads[0]); i++)
		c += sreads[i].calls;
	return c;
}

static int test_paths(void)
{
	static unsigned char before[64], wbuf[64], rbuf[64];
	char why[256], d[512];
	struct cnt c, dl;
	bool ok, ok2;
	long r0, r1, g0, g1;
	int nc = single_calls();
	uintptr_t vvar;
	unsigned char *cow;

	/* COW: written here, then shared with the target by the fork */
	cow = map_at(COW_BASE, PG, PROT_READ | PROT_WRITE);
	if (!cow) {
		mg_error(EXP, "mapping the copy-on-write page: %s", strerror(errno));
		return MG_EXIT_FAIL;
	}
	fill(COW_BASE, PG);
	if (start_target(false))
		return MG_EXIT_FAIL;
	vvar = find_vvar();

	/* Switch 0: stock. */
	if (set_switch(0))
		return MG_EXIT_FAIL;
	cnt_read(&c);
	ok = single_reads(why, sizeof(why));
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "stock_switch_off_takes_mmap_lock", ok && cnt_is(&dl, 0, nc, 0, 0, 0, 0, 0),
		       "switch 0, %d calls within one VMA: %s; counters %s (want mmap_locked=%d, the rest 0)",
		       nc, why, d, nc);
	g0 = mem_read(GAP, rbuf, 64);
	r0 = vvar ? mem_read(vvar, rbuf, 64) : -ENOENT;

	/* Switch 1: the VMA lock first. */
	if (set_switch(1))
		return MG_EXIT_FAIL;

	cnt_read(&c);
	g1 = mem_read(GAP, rbuf, 64);
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "gap_fails_as_stock", g0 == -EIO && g1 == -EIO && cnt_is(&dl, 0, 1, 1, 1, 0, 0, 0),
		       "a read where nothing is mapped: %ld under 0, %ld under 1 (want -EIO both); counters %s "
		       "(want fallback_novma=1, fallback=1, mmap_locked=1)", g0, g1, d);

	cnt_read(&c);
	ok = single_reads(why, sizeof(why));
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "todo1_single_vma_under_vma_lock", ok && cnt_is(&dl, nc, 0, 0, 0, 0, 0, 0),
		       "switch 1, %d calls within one VMA (one ending at vm_end): %s; counters %s "
		       "(want vma_locked=%d, the rest 0)", nc, why, d, nc);

	cnt_read(&c);
	ok = read_check(A_BASE + A_PAGES * PG - 100, 200, ~0ul, why, sizeof(why));
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "todo1_span_falls_back", ok && cnt_is(&dl, 0, 1, 1, 0, 1, 0, 0),
		       "one call from A's last 100 bytes into B: %s; counters %s "
		       "(want fallback_span=1, fallback=1, mmap_locked=1)", why, d);

	cnt_read(&c);
	r1 = vvar ? mem_read(vvar, rbuf, 64) : -ENOENT;
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "todo1_pfnmap_falls_back", vvar && r1 == r0 && cnt_is(&dl, 0, 1, 1, 0, 0, 1, 0),
		       "64 bytes of the target's [vvar] at %#lx: %ld under 0, %ld under 1 (want the same); "
		       "counters %s (want fallback_pfnmap=1, fallback=1, mmap_locked=1)",
		       (unsigned long)vvar, r0, r1, d);

	/* C: two calls, each on an untouched page; D: one call, its second half untouched. */
	cnt_read(&c);
	ok = read_check(C_BASE, 2 * PG, C_BASE, why, sizeof(why));
	if (ok)
		ok = read_check(D_BASE + PG - 100, 200, D_BASE + PG, why, sizeof(why));
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "todo2_page_falls_back", ok && cnt_is(&dl, 0, 3, 3, 0, 0, 0, 3),
		       "two calls on never-touched pages, one call whose second half is never touched: %s; "
		       "counters %s (want fallback_page=3, fallback=3, mmap_locked=3)", why, d);

	/* W: the target's own page, written under the VMA lock, read back. */
	for (int i = 0; i < 64; i++)
		wbuf[i] = (unsigned char)(0xc0 + i);
	cnt_read(&c);
	r1 = mem_write(W_BASE + 10, wbuf, 64);
	memset(rbuf, 0, sizeof(rbuf));
	ok = r1 == 64 && mem_read(W_BASE + 10, rbuf, 64) == 64 && !memcmp(rbuf, wbuf, 64);
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "todo2_write_under_vma_lock", ok && cnt_is(&dl, 2, 0, 0, 0, 0, 0, 0),
		       "64 bytes written to a page the target wrote (write returned %ld), read back %s; "
		       "counters %s (want vma_locked=2: the write and the read)",
		       r1, ok ? "equal" : "different or failed", d);

	/* COW: the write must break copy-on-write, our copy stays as it was. */
	memcpy(before, cow + 10, 64);
	cnt_read(&c);
	r1 = mem_write(COW_BASE + 10, wbuf, 64);
	memset(rbuf, 0, sizeof(rbuf));
	ok = r1 == 64 && mem_read(COW_BASE + 10, rbuf, 64) == 64 && !memcmp(rbuf, wbuf, 64);
	ok2 = !memcmp(cow + 10, before, 64);
	cnt_delta(&c, &dl, d, sizeof(d));
	mg_test_record(EXP, "todo2_write_breaks_cow", ok && ok2 && cnt_is(&dl, 1, 1, 1, 0, 0, 0, 1),
		       "64 bytes written to a page the target shares copy-on-write with this process: "
		       "the target's copy %s, ours %s; counters %s (want fallback_page=1 for the write, "
		       "which must break COW under mmap_lock, vma_locked=1 for the read back)",
		       ok ? "has them" : "does not", ok2 ? "unchanged" : "CHANGED", d);
	return MG_EXIT_OK;
}

/* ---- trace: this task's mmap_lock acquisitions, switch 0 against 1 ----------------- */

#define MAX_EVENTS 65536
static uint64_t ev_ns[MAX_EVENTS];
static unsigned int nev;

static void on_line(void *arg, const char *line)
{
	const char *ev = strstr(line, "mmap_lock_acquire_returned:");
	uint64_t ns;

	(void)arg;
	if (ev && strstr(ev, "success=true") && mg_trace_ts(line, ev, &ns) && nev < MAX_EVENTS)
		ev_ns[nev++] = ns;
}

static long long events_in(uint64_t lo, uint64_t hi)
{
	long long n = 0;

	for (unsigned int i = 0; i < nev; i++)
		n += ev_ns[i] >= lo && ev_ns[i] < hi;
	return n;
}

static int test_trace(void)
{
	static const char *const events[] = { "mmap_lock/mmap_lock_acquire_returned", NULL };
	struct mg_trace_pipe tp = { on_line, NULL, 0 };
	static unsigned char buf[64];
	uint64_t t[2][2];
	long long ev[2], bad[2];
	struct cnt c, dl[2];
	char d[2][512];
	pthread_t tt;

	if (start_target(false))
		return MG_EXIT_FAIL;
	if (mg_trace_start(EXP, getpid(), events, 1024))
		return MG_EXIT_FAIL;
	pthread_create(&tt, NULL, mg_trace_reader, &tp);
	for (int p = 0; p < 2; p++) {
		if (set_switch(p))
			return MG_EXIT_FAIL;
		bad[p] = 0;
		cnt_read(&c);
		t[p][0] = mg_now_ns();
		for (int i = 0; i < TRACE_READS; i++) {
			uintptr_t a = A_BASE + (uintptr_t)(i % A_PAGES) * PG + 64;

			bad[p] += mem_read(a, buf, 64) != 64 || buf[0] != pat(a) || buf[63] != pat(a + 63);
		}
		t[p][1] = mg_now_ns();
		cnt_delta(&c, &dl[p], d[p], sizeof(d[p]));
	}
	/* Every event of the window is in the ring once the pipe is drained. */
	mg_write_file(MG_TRACING "/tracing_on", "0");
	__atomic_store_n(&tp.stop, 1, __ATOMIC_RELEASE);
	pthread_join(tt, NULL);
	for (int p = 0; p < 2; p++) {
		struct mg_json j;

		ev[p] = events_in(t[p][0], t[p][1]);
		mgj_start(&j, "sample", EXP);
		mgj_str(&j, "test", "trace");
		mgj_int(&j, "access_remote_vm_vma_lock", p);
		mgj_int(&j, "reads", TRACE_READS);
		mgj_int(&j, "mmap_lock_acquisitions", ev[p]);
		mgj_int(&j, "vma_locked", dl[p].v[VMA_LOCKED]);
		mgj_int(&j, "mmap_locked", dl[p].v[MMAP_LOCKED]);
		mgj_num(&j, "seconds", (double)(t[p][1] - t[p][0]) / 1e9);
		mgj_emit(&j);
	}
	mg_test_record(EXP, "stock_reads_take_mmap_lock",
		       !bad[0] && ev[0] >= TRACE_READS && dl[0].v[MMAP_LOCKED] == TRACE_READS,
		       "switch 0: %d reads (%lld wrong), this task took mmap_lock %lld times (want >= %d); "
		       "counters %s", TRACE_READS, bad[0], ev[0], TRACE_READS, d[0]);
	mg_test_record(EXP, "todo1_reads_skip_mmap_lock",
		       !bad[1] && ev[1] < TRACE_READS / 10 && dl[1].v[VMA_LOCKED] == TRACE_READS &&
		       dl[1].v[MMAP_LOCKED] == 0,
		       "switch 1: %d reads (%lld wrong), this task took mmap_lock %lld times (want < %d, "
		       "stock took it %lld times); counters %s (want vma_locked=%d, mmap_locked=0)",
		       TRACE_READS, bad[1], ev[1], TRACE_READS / 10, ev[0], d[1], TRACE_READS);
	return MG_EXIT_OK;
}

/* ---- churn: the VMA read comes and goes ---------------------------------------------- */

static int test_churn(void)
{
	static unsigned char buf[2 * 4096];
	long long reads[2] = { 0 }, data[2] = { 0 }, wrong = 0;
	char first[160] = "", d[2][512];
	struct cnt c, dl[2];
	unsigned int seed = 1;

	if (start_target(true))
		return MG_EXIT_FAIL;
	for (int p = 1; p >= 0; p--) {
		if (set_switch(p))
			return MG_EXIT_FAIL;
		cnt_read(&c);
		for (long long i = 0; i < opt.reads; i++) {
			uintptr_t a = X_BASE + (rand_r(&seed) % (X_PAGES * PG));
			size_t len = 1 + rand_r(&seed) % (2 * PG);
			long r;

			if (a + len > X_BASE + X_PAGES * PG)
				len = X_BASE + X_PAGES * PG - a;
			r = mem_read(a, buf, len);
			reads[p]++;
			if (r <= 0)
				continue;
			data[p]++;
			for (long k = 0; k < r; k++)
				if (buf[k] && buf[k] != pat(a + (uintptr_t)k)) {
					if (!wrong++)
						snprintf(first, sizeof(first), "byte at %#lx is %#x, want %#x or 0",
							 (unsigned long)(a + (uintptr_t)k), buf[k], pat(a + (uintptr_t)k));
					break;
				}
		}
		cnt_delta(&c, &dl[p], d[p], sizeof(d[p]));
	}
	for (int p = 0; p < 2; p++) {
		struct mg_json j;

		mgj_start(&j, "sample", EXP);
		mgj_str(&j, "test", "churn");
		mgj_int(&j, "access_remote_vm_vma_lock", p);
		mgj_int(&j, "reads", reads[p]);
		mgj_int(&j, "reads_with_data", data[p]);
		for (int i = 0; i < NCNT; i++)
			mgj_int(&j, cnt_names[i], dl[p].v[i]);
		mgj_emit(&j);
	}
	mg_test_record(EXP, "reads_survive_churn", !wrong && reads[0] == opt.reads && reads[1] == opt.reads,
		       "%lld reads under each switch position while the target unmaps, maps, splits and "
		       "zaps the VMA: %lld and %lld returned data, %lld had a wrong byte%s%s; counters under 1: %s",
		       opt.reads, data[0], data[1], wrong, wrong ? ": " : "", first, d[1]);
	return MG_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const char *const need[] = {
		MG_KNOBS "/access_remote_vm_vma_lock", MG_KNOBS "/access_remote_vm_vma_locked",
		MG_KNOBS "/access_remote_vm_fallback_page",
		MG_TRACING "/events/mmap_lock/mmap_lock_acquire_returned", NULL,
	};
	static const struct mg_opt o[] = {
		MG_INT("reads", &opt.reads, 100, 1000000, 200),
		MG_STR("test", &opt.test),
		MG_OPTS_END,
	};
	struct mg_json j;
	int rc;

	opt.quick = mg_parse_opts("remotevma_check", argc, argv, o, usage);
	if (!opt.test && opt.quick)
		opt.test = "paths";
	if (!opt.test)
		mg_usage_error("remotevma_check", usage, "--test is required");
	if (strcmp(opt.test, "paths") && strcmp(opt.test, "trace") && strcmp(opt.test, "churn"))
		mg_usage_error("remotevma_check", usage, "--test must be paths, trace or churn, not '%s'",
			       opt.test);
	mg_require(EXP, need);
	mg_install_restore();
	mgj_start(&j, "info", EXP);
	mgj_str(&j, "test", opt.test);
	mgj_int(&j, "reads", opt.reads);
	mgj_emit(&j);
	if (!strcmp(opt.test, "paths"))
		rc = test_paths();
	else if (!strcmp(opt.test, "trace"))
		rc = test_trace();
	else
		rc = test_churn();
	if (target > 0 && mg_kill_child(EXP, target))
		return MG_EXIT_FAIL;
	return rc;
}
