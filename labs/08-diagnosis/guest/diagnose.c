/*
 * Lab 08's workload: a latency-sensitive process ("victim", a thread that
 * maps and unmaps one page and times each call) among processes that look
 * alike, one of which, chosen by the seed, makes the victim wait for its
 * mmap_lock: a reader of /proc/VICTIM/smaps_rollup, a reader of
 * /proc/VICTIM/mem, or khugepaged walking the victim's many VMAs. The
 * others do the same things to a bystander process, where they hurt nobody
 * who is measured, and the bystander's helper threads keep hitting a uprobe
 * (a decoy: with the victim's own threads hitting it, uprobe_speculate=1
 * did not lower the victim's p99 in our runs, labs/08-diagnosis/guest/README.md).
 *
 * Phases, one boot: "before" (every switch at its stock position), then the
 * probe window (the student's commands run; /labs/diag/run.sh ends it by
 * creating /tmp/diagnose.probed), then "after" (the --switch the student
 * named, the rest stock). Each phase prints the victim's latency. The
 * scenario never appears in the output: the grader derives it from the
 * seed, as -c does.
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP "diagnosis"
#define NCULPRIT 3
#define PROBING_FLAG "/tmp/diagnose.probing"
#define PROBED_FLAG "/tmp/diagnose.probed"
#define ENV_FILE "/tmp/diagnose.env"
#define SMALL_BASE 0x100000000000UL /* the small VMAs, in victim and bystander alike */
#define DATA_MB 4
#define HUGE_MB 8
#define LAT_CAP (1 << 18)

/* region: scenario */
/* The culprits, in the order the seed picks them. */
static const char *const culprit_name[NCULPRIT] = { "smaps_rollup", "proc_mem", "khugepaged" };
/* The switch that relieves the victim, and its value. */
static const char *const culprit_switch[NCULPRIT] = {
	"smaps_rollup_vma_lock=1", "access_remote_vm_vma_lock=1",
	"khugepaged_skip_batch=1024,rwsem_steal_policy=1",
};

/* The knobs the run starts from: 6.12 as shipped, in every respect the switches control. */
static const char *const stock[][2] = {
	{ "rwsem_steal_policy", "0" },       { "khugepaged_per_slot_cursor", "0" },
	{ "khugepaged_skip_batch", "0" },    { "smaps_rollup_vma_lock", "0" },
	{ "access_remote_vm_vma_lock", "0" }, { "uprobe_speculate", "0" },
	{ "deferred_split_early_check", "1" },
};
#define NSTOCK (sizeof(stock) / sizeof(stock[0]))

struct scenario {
	int culprit;
	/* svc1..svc3 assigned to the bystander, the smaps reader, the mem reader */
	char bystander[8], scanner[8], memreader[8];
};

/* splitmix64: labs/08-diagnosis/grader/scenario.py computes the same. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void scenario_of(uint64_t seed, struct scenario *s)
{
	uint64_t x = seed;
	int names[3] = { 1, 2, 3 };

	s->culprit = (int)(splitmix64(&x) % NCULPRIT);
	for (int i = 2; i > 0; i--) { /* Fisher-Yates */
		int j = (int)(splitmix64(&x) % (uint64_t)(i + 1)), t = names[i];

		names[i] = names[j];
		names[j] = t;
	}
	snprintf(s->bystander, sizeof(s->bystander), "svc%d", names[0]);
	snprintf(s->scanner, sizeof(s->scanner), "svc%d", names[1]);
	snprintf(s->memreader, sizeof(s->memreader), "svc%d", names[2]);
}

/* The holder the answer must name: a process's comm, or the kernel thread. */
static const char *culprit_process(const struct scenario *s)
{
	switch (s->culprit) {
	case 0: return s->scanner;
	case 1: return s->memreader;
	default: return "khugepaged";
	}
}
/* endregion: scenario */

static struct {
	long long seed, seconds, probe_seconds, vmas, pause_us;
	const char *sw;
	bool answer, quick;
} opt = { 1, 8, 60, 80000, 500, NULL, false, false };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: diagnose [-s SEED] [-c] [--seconds S] [--probe-seconds P] [--vmas N]\n"
		"                [--switch NAME=VALUE[,NAME=VALUE]] [--quick] [--help]\n\n"
		"Lab 08 (labs/08-diagnosis/handout.md). A process named victim maps and\n"
		"unmaps one page in a loop and times each call; beside it run processes\n"
		"named svc1, svc2, svc3, khugepaged and a uprobe, one of which (chosen by\n"
		"SEED) makes the victim wait. Phases: before (every mmlocks switch at its\n"
		"stock position), the probe window (it creates %s, and waits\n"
		"until %s exists or P seconds: your commands run then, see\n"
		"%s for the pids), after (--switch set). Each phase prints the\n"
		"victim's latency.\n\n"
		"  -s, --seed SEED        the scenario (0..2^63, default 1)\n"
		"  -c, --answer           print SEED's answer (culprit, process, lock, switch) and exit\n"
		"  --seconds S            length of the before and after phases (1..600, default 8; quick 3)\n"
		"  --probe-seconds P      longest probe window (0..3600, default 60; quick 0)\n"
		"  --vmas N               small VMAs in the victim and the bystander (1000..200000,\n"
		"                         default 80000; quick 10000)\n"
		"  --switch NAME=VALUE[,NAME=VALUE]\n"
		"                         the mmlocks knobs the after phase sets (switches in\n"
		"                         /sys/kernel/debug/mmlocks; the others stay stock)\n"
		"  --quick                small, fast settings (< 30 s under TCG)\n"
		"  --help                 this text\n\n"
		"Output: JSON lines (diagnosis_info with the pids, one diagnosis_phase per phase).\n"
		"Exit: 0 ok, 1 failed, 2 usage, 3 wrong kernel (knobs missing).\n",
		PROBING_FLAG, PROBED_FLAG, ENV_FILE);
}

/* ---- shared state between the parent and its children -------------------- */

enum { PH_SETUP, PH_BEFORE, PH_PROBE, PH_AFTER, PH_STOP };
static const char *const phase_name[] = { "setup", "before", "probe", "after", "stop" };

struct result {
	long long calls;
	double p50_us, p99_us, max_us;
	bool done;
};

struct shared {
	atomic_int phase;
	atomic_int ready;
	struct result res[PH_STOP];
};

static struct shared *sh;

/* ---- the probed function -------------------------------------------------- */

/*
 * The uprobe's function: push %rbp first, which x86 uprobes emulate (one
 * trap per hit), 64-byte aligned so it never crosses a page.
 */
__asm__(".pushsection .text\n"
	".p2align 6\n"
	".globl dg_probed\n"
	".type dg_probed, @function\n"
	"dg_probed:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tlea 1(%rdi), %rax\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size dg_probed, .-dg_probed\n"
	".popsection\n");
long dg_probed(long x);

static long __attribute__((noinline)) dg_plain(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* ---- the roles -------------------------------------------------------------- */

static void name_self(const char *name)
{
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

struct helper_arg {
	const char *name;
	bool probed;
};

/*
 * A helper thread, at nice 15: calls the probed or the plain function
 * without pause. Each uprobe hit takes this mm's mmap_read_lock under
 * stock 6.12; readers that keep arriving steal the lock ahead of a queued
 * writer until its handoff timeout.
 */
#define NHELPERS 2
#define HELPER_NICE 15
static void *helper(void *p)
{
	struct helper_arg *a = p;
	long (*volatile fn)(long) = a->probed ? dg_probed : dg_plain;
	long sink = 0;

	name_self(a->name);
	setpriority(PRIO_PROCESS, (id_t)gettid(), HELPER_NICE);
	while (atomic_load(&sh->phase) != PH_STOP)
		for (int i = 0; i < 64; i++)
			sink += fn(i);
	return (void *)sink;
}

/*
 * The victim and the bystander: N small VMAs, a written data region that
 * the mem reader reads, optionally a MADV_HUGEPAGE region (khugepaged
 * registers the mm and walks every VMA of it), helper threads, and the
 * main thread mapping and unmapping one page; the victim times it.
 */
static void mapped_process(const char *name, bool huge, bool probed_helper, bool measure, int ready_fd)
{
	static struct helper_arg ha;
	static char hname[16];
	pthread_t ht[NHELPERS];
	size_t pg = 4096;
	char *data, *region;
	struct mg_lat lat[PH_STOP];
	int last = PH_SETUP;

	name_self(name);
	if (mg_map_small_vmas(SMALL_BASE, (size_t)opt.vmas))
		_exit(1);
	data = mmap(NULL, DATA_MB << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (data == MAP_FAILED)
		_exit(1);
	for (size_t i = 0; i < (DATA_MB << 20); i += pg)
		data[i] = (char)(i >> 12);
	if (huge) {
		/* 2 MiB-aligned, so that khugepaged can collapse it and keeps the mm. */
		char *raw = mmap(NULL, (HUGE_MB + 2) << 20, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (raw == MAP_FAILED)
			_exit(1);
		region = (char *)(((uintptr_t)raw + (2 << 20) - 1) & ~((uintptr_t)(2 << 20) - 1));
		madvise(region, HUGE_MB << 20, MADV_HUGEPAGE);
		for (size_t i = 0; i < (HUGE_MB << 20); i += pg)
			region[i] = 1;
	}
	snprintf(hname, sizeof(hname), "%s-h", name);
	ha.name = hname;
	ha.probed = probed_helper;
	for (int i = 0; i < NHELPERS; i++)
		if (pthread_create(&ht[i], NULL, helper, &ha))
			_exit(1);
	for (int p = 0; p < PH_STOP; p++)
		mg_lat_init(&lat[p], measure ? LAT_CAP : 1);
	/* The data region's address: the mem reader's target. */
	if (write(ready_fd, &data, sizeof(data)) != (ssize_t)sizeof(data))
		_exit(1);
	close(ready_fd);
	for (;;) {
		int p = atomic_load(&sh->phase);
		uint64_t t0, t1, t2;
		void *m;

		if (p != last && measure && (last == PH_BEFORE || last == PH_AFTER)) {
			struct result *r = &sh->res[last];

			r->calls = (long long)lat[last].count;
			r->p50_us = (double)mg_lat_pct(&lat[last], 50) / 1e3;
			r->p99_us = (double)mg_lat_pct(&lat[last], 99) / 1e3;
			r->max_us = (double)lat[last].max / 1e3;
			__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
		}
		last = p;
		if (p == PH_STOP)
			break;
		t0 = mg_now_ns();
		m = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		t1 = mg_now_ns();
		if (m != MAP_FAILED)
			munmap(m, pg);
		t2 = mg_now_ns();
		if (measure && (p == PH_BEFORE || p == PH_AFTER) && p == atomic_load(&sh->phase)) {
			mg_lat_add(&lat[p], t1 - t0);
			mg_lat_add(&lat[p], t2 - t1);
		}
		mg_sleep_us((unsigned long)opt.pause_us);
	}
	_exit(0);
}

/* A reader of /proc/TARGET/FILE: smaps_rollup whole, or mem in 256 KiB reads. */
static void reader_process(const char *name, pid_t target, bool mem, uintptr_t at, int ready_fd)
{
	char path[64];
	static char buf[256 << 10];
	int fd;

	name_self(name);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)target, mem ? "mem" : "smaps_rollup");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || write(ready_fd, &at, sizeof(at)) != (ssize_t)sizeof(at))
		_exit(1);
	close(ready_fd);
	while (atomic_load(&sh->phase) != PH_STOP) {
		if (mem) {
			if (pread(fd, buf, sizeof(buf), (off_t)at) < 0)
				_exit(1);
		} else {
			lseek(fd, 0, SEEK_SET);
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		}
		mg_sleep_us(2000);
	}
	_exit(0);
}

/* ---- the parent ------------------------------------------------------------- */

struct spawn {
	int role; /* 0 victim, 1 bystander, 2 scanner, 3 memreader */
	pid_t target;
	uintptr_t at;
	const struct scenario *s;
};

static void run_role(int ready_fd, void *p)
{
	const struct spawn *w = p;
	const struct scenario *s = w->s;

	switch (w->role) {
	case 0:
		mapped_process("victim", s->culprit == 2, false, true, ready_fd);
		break;
	case 1:
		mapped_process(s->bystander, s->culprit != 2, true, false, ready_fd);
		break;
	case 2:
		reader_process(s->scanner, w->target, false, 0, ready_fd);
		break;
	default:
		reader_process(s->memreader, w->target, true, w->at, ready_fd);
		break;
	}
	_exit(1);
}

/* ---- the uprobe on dg_probed -------------------------------------------- */

static char up_events[128], up_enable[128];

static int append_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC), e = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		e = -errno;
	close(fd);
	return e;
}

static void uprobe_remove(void)
{
	if (!up_events[0])
		return;
	mg_write_file(up_enable, "0");
	append_file(up_events, "-:diag/probe\n");
}

static bool uprobe_add(void)
{
	char line[512], path[256] = "", def[400];
	uintptr_t addr = (uintptr_t)&dg_probed;
	unsigned long off = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e, pgoff;
		char perm[8];
		int n = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &s, &e, perm, &pgoff, &n) >= 4 && n &&
		    addr >= s && addr < e && line[n] == '/') {
			snprintf(path, sizeof(path), "%s", line + n);
			path[strcspn(path, "\n")] = 0;
			off = addr - s + pgoff;
		}
	}
	if (f)
		fclose(f);
	if (!path[0]) {
		mg_error(EXP, "dg_probed is not in a file mapping");
		return false;
	}
	snprintf(up_events, sizeof(up_events), MG_TRACING "/uprobe_events");
	snprintf(up_enable, sizeof(up_enable), MG_TRACING "/events/diag/probe/enable");
	append_file(up_events, "-:diag/probe\n"); /* a previous run's */
	snprintf(def, sizeof(def), "p:diag/probe %s:%#lx\n", path, off);
	if (append_file(up_events, def) || mg_write_file(up_enable, "1")) {
		mg_error(EXP, "cannot define or enable the uprobe %s:%#lx in %s", path, off, up_events);
		up_events[0] = 0;
		return false;
	}
	return true;
}

static void on_restore(void)
{
	uprobe_remove();
}

static bool wait_done(int p, long long ms)
{
	for (long long t = 0; t < ms; t += 20) {
		if (__atomic_load_n(&sh->res[p].done, __ATOMIC_ACQUIRE))
			return true;
		mg_sleep_us(20000);
	}
	return false;
}

static void phase_record(int p, const char *sw)
{
	struct mg_json j;
	const struct result *r = &sh->res[p];

	mgj_start(&j, "diagnosis_phase", EXP);
	mgj_int(&j, "seed", opt.seed);
	mgj_str(&j, "phase", phase_name[p]);
	mgj_str(&j, "switch", sw);
	mgj_int(&j, "victim_calls", r->calls);
	mgj_num(&j, "victim_p50_us", r->p50_us);
	mgj_num(&j, "victim_p99_us", r->p99_us);
	mgj_num(&j, "victim_max_us", r->max_us);
	mgj_emit(&j);
}

/*
 * NAME=VALUE[,NAME=VALUE...]: each NAME one of the switches. With set,
 * writes them; 0, or -EINVAL (malformed), -ENOENT (not a switch), or a
 * write's -errno (a value the knob refuses).
 */
static int apply_switch(const char *sw, bool set)
{
	char buf[256], *save = NULL, *item;

	if (strlen(sw) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, sw);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), path[160];
		size_t i;

		if (!eq || eq == item || !eq[1])
			return -EINVAL;
		*eq = 0;
		for (i = 0; i < NSTOCK && strcmp(stock[i][0], item); i++)
			;
		if (i == NSTOCK)
			return -ENOENT;
		snprintf(path, sizeof(path), MG_KNOBS "/%s", item);
		if (set) {
			int e = mg_knob_set(path, eq + 1);

			if (e)
				return e;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, 0, 's' }, { "answer", no_argument, 0, 'c' },
		{ "seconds", required_argument, 0, 'S' }, { "probe-seconds", required_argument, 0, 'P' },
		{ "vmas", required_argument, 0, 'V' }, { "switch", required_argument, 0, 'W' },
		{ "quick", no_argument, 0, 'q' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	bool given_s = false, given_p = false, given_v = false;
	struct scenario s;
	struct spawn roles[4];
	pid_t pid[4];
	const char *const req[] = { MG_KNOBS "/smaps_rollup_vma_lock", MG_KNOBS "/uprobe_speculate",
				    MG_KNOBS "/access_remote_vm_vma_lock", MG_KNOBS "/khugepaged_skip_batch",
				    NULL };
	struct mg_json j;
	uintptr_t msg[4];
	int c, rc = MG_EXIT_OK;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:c", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!mg_parse_ll(optarg, 0, LLONG_MAX, &opt.seed))
				mg_usage_error("diagnose", usage, "-s needs a whole number >= 0");
			break;
		case 'c': opt.answer = true; break;
		case 'S':
			if (!mg_parse_ll(optarg, 1, 600, &opt.seconds))
				mg_usage_error("diagnose", usage, "--seconds must be 1..600");
			given_s = true;
			break;
		case 'P':
			if (!mg_parse_ll(optarg, 0, 3600, &opt.probe_seconds))
				mg_usage_error("diagnose", usage, "--probe-seconds must be 0..3600");
			given_p = true;
			break;
		case 'V':
			if (!mg_parse_ll(optarg, 1000, 200000, &opt.vmas))
				mg_usage_error("diagnose", usage, "--vmas must be 1000..200000");
			given_v = true;
			break;
		case 'W': opt.sw = optarg; break;
		case 'q': opt.quick = true; break;
		case 'h': usage(stdout); return MG_EXIT_OK;
		default: mg_usage_error("diagnose", usage, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		mg_usage_error("diagnose", usage, "stray argument '%s'", argv[optind]);
	if (opt.quick) {
		if (!given_s)
			opt.seconds = 3;
		if (!given_p)
			opt.probe_seconds = 0;
		if (!given_v)
			opt.vmas = 10000;
	}
	scenario_of((uint64_t)opt.seed, &s);
	if (opt.answer) {
		printf("seed %lld: culprit=%s process=%s lock=mmap_lock switch=%s\n", opt.seed,
		       culprit_name[s.culprit], culprit_process(&s), culprit_switch[s.culprit]);
		return MG_EXIT_OK;
	}

	mg_require(EXP, req);
	mg_install_restore();
	mg_on_restore(on_restore);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		mg_error(EXP, "mmap of the shared page: %s", strerror(errno));
		return MG_EXIT_FAIL;
	}
	/* Stock 6.12 in every respect the switches control; khugepaged scans without pause. */
	for (size_t i = 0; i < NSTOCK; i++) {
		char path[160];

		snprintf(path, sizeof(path), MG_KNOBS "/%s", stock[i][0]);
		if (mg_knob_set(path, stock[i][1])) {
			mg_error(EXP, "cannot set %s", path);
			return MG_EXIT_WRONG_KERNEL;
		}
	}
	/* Two processes of --vmas VMAs each: above the default 65530 per mm. */
	if (mg_knob_set("/proc/sys/vm/max_map_count", "262144") ||
	    mg_knob_set(MG_THP "/enabled", "madvise") ||
	    mg_knob_set(MG_KHUGEPAGED "/scan_sleep_millisecs", "0") ||
	    mg_knob_set(MG_KHUGEPAGED "/alloc_sleep_millisecs", "0")) {
		mg_error(EXP, "cannot set up vm.max_map_count, transparent_hugepage, khugepaged");
		return MG_EXIT_FAIL;
	}
	if (opt.sw && apply_switch(opt.sw, false)) {
		/* Checked now, before anything runs: a typo must not cost a run. */
		mg_error(EXP, "--switch %s: not NAME=VALUE[,NAME=VALUE...] of the mmlocks switches", opt.sw);
		return MG_EXIT_USAGE;
	}
	if (!uprobe_add())
		return MG_EXIT_FAIL;

	/* The victim and the bystander first: the readers need their pids. */
	roles[0] = (struct spawn){ .role = 0, .s = &s };
	roles[1] = (struct spawn){ .role = 1, .s = &s };
	for (int i = 0; i < 2; i++)
		if ((pid[i] = mg_spawn_ready(run_role, &roles[i], &msg[i], sizeof(msg[i]))) < 0) {
			mg_error(EXP, "a child did not start");
			return MG_EXIT_FAIL;
		}
	roles[2] = (struct spawn){ .role = 2, .s = &s, .target = s.culprit == 0 ? pid[0] : pid[1] };
	roles[3] = (struct spawn){ .role = 3, .s = &s, .target = s.culprit == 1 ? pid[0] : pid[1],
				   .at = s.culprit == 1 ? msg[0] : msg[1] };
	for (int i = 2; i < 4; i++)
		if ((pid[i] = mg_spawn_ready(run_role, &roles[i], &msg[i], sizeof(msg[i]))) < 0) {
			mg_error(EXP, "a reader did not start");
			return MG_EXIT_FAIL;
		}
	{
		FILE *f = fopen(ENV_FILE, "we");

		if (f) {
			fprintf(f, "VICTIM=%d\n%s=%d\n%s=%d\n%s=%d\n", (int)pid[0], s.bystander,
				(int)pid[1], s.scanner, (int)pid[2], s.memreader, (int)pid[3]);
			fclose(f);
		}
	}
	unlink(PROBED_FLAG);
	unlink(PROBING_FLAG);
	mgj_start(&j, "diagnosis_info", EXP);
	mgj_int(&j, "seed", opt.seed);
	mgj_int(&j, "victim_pid", pid[0]);
	{
		/* The three svcN by name, in name order: roles stay hidden. */
		const char *nm[3] = { "svc1", "svc2", "svc3" };

		for (int k = 0; k < 3; k++) {
			char key[16];
			pid_t p = !strcmp(nm[k], s.bystander) ? pid[1] : !strcmp(nm[k], s.scanner) ? pid[2] : pid[3];

			snprintf(key, sizeof(key), "%s_pid", nm[k]);
			mgj_int(&j, key, p);
		}
	}
	mgj_int(&j, "khugepaged_pid", mg_find_comm("khugepaged"));
	mgj_int(&j, "vmas", opt.vmas);
	mgj_int(&j, "seconds", opt.seconds);
	mgj_str(&j, "switch", opt.sw);
	mgj_bool(&j, "quick", opt.quick);
	mgj_emit(&j);

	/* Warm-up: khugepaged finds the registered mm, the readers get going. */
	mg_sleep_us(1000000);
	atomic_store(&sh->phase, PH_BEFORE);
	mg_sleep_us((unsigned long)opt.seconds * 1000000);
	atomic_store(&sh->phase, PH_PROBE);
	if (!wait_done(PH_BEFORE, 30000)) {
		mg_error(EXP, "the victim did not report the before phase");
		rc = MG_EXIT_FAIL;
	} else {
		phase_record(PH_BEFORE, NULL);
	}
	{
		int fd = open(PROBING_FLAG, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
	}
	mg_log("probe window: up to %lld s, until %s exists", opt.probe_seconds, PROBED_FLAG);
	for (long long ms = 0; rc == MG_EXIT_OK && ms < opt.probe_seconds * 1000 && !mg_exists(PROBED_FLAG);
	     ms += 100)
		mg_sleep_us(100000);
	if (rc == MG_EXIT_OK && opt.sw) {
		int e = apply_switch(opt.sw, true);

		if (e) {
			mg_error(EXP, "--switch %s: %s", opt.sw, strerror(-e));
			rc = MG_EXIT_FAIL;
		}
	}
	if (rc == MG_EXIT_OK) {
		mg_sleep_us(500000);
		atomic_store(&sh->phase, PH_AFTER);
		mg_sleep_us((unsigned long)opt.seconds * 1000000);
		atomic_store(&sh->phase, PH_STOP);
		if (!wait_done(PH_AFTER, 30000)) {
			mg_error(EXP, "the victim did not report the after phase");
			rc = MG_EXIT_FAIL;
		} else {
			phase_record(PH_AFTER, opt.sw);
		}
	}
	atomic_store(&sh->phase, PH_STOP);
	for (int i = 3; i >= 0; i--)
		if (mg_kill_child(EXP, pid[i]))
			rc = MG_EXIT_FAIL;
	mg_restore_all();
	return rc;
}
