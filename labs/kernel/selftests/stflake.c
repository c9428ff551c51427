/*
 * stflake: run a selftest many times under ptrace and, when it stops on a
 * fatal signal, record its heap as the kernel sees it before the signal is
 * delivered. Written for the khugepaged selftest's `free(): invalid
 * pointer` (labs/kernel/RUNNING.md, "Known flake"); any command works.
 * JSON records on stdout:
 *   flake_run     per run: exit status, signal, start_brk, execs, seconds,
 *                 last line and last three lines, /proc/vmstat deltas
 *   flake_maps    at a catch: each line of /proc/PID/maps
 *   flake_page    at a catch: each of the first 64 pages from start_brk:
 *                 PFN, zero words, other addresses mapping that PFN, head
 *   flake_file    at a catch: each stdio FILE there (glibc's 0xfbad magic)
 *                 with the malloc size words of its chunk and its buffer's
 *   flake_stack   at a catch: rip, rsp, stack words into executable maps
 *   flake_summary at the end: runs, clean exits, fatal signals
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mmlocks_guest.h"

#define PROG "stflake"
#define PAGE 4096UL
#define MAX_PAGES 65536 /* pages of the process scanned for a shared PFN */
#define MAX_HEAP_PAGES 64 /* [heap] pages dumped, from start_brk */

static const char *const VMSTAT_KEYS[] = {
	"compact_stall", "compact_success", "compact_fail", "pgmigrate_success", "pgmigrate_fail",
	"thp_fault_alloc", "thp_fault_fallback", "thp_split_page", "thp_split_pmd",
	"thp_deferred_split_page", "thp_collapse_alloc", "pgscan_kswapd", "pgscan_direct", NULL,
};
#define NKEYS (sizeof(VMSTAT_KEYS) / sizeof(VMSTAT_KEYS[0]) - 1)

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--runs N] [--timeout SECONDS] [--out FILE] [--brk-window LO-HI] [--help]\n"
		   "               CMD [ARG...]\n"
		   "\n"
		   "Runs CMD N times (default 1), one after the other, each under ptrace with its\n"
		   "stdout and stderr in FILE (default /tmp/stflake.out, rewritten per run) and\n"
		   "killed after SECONDS (default 600). When CMD stops on SIGABRT, SIGSEGV,\n"
		   "SIGBUS, SIGILL or SIGFPE, the signal is held while its maps, the PFN and\n"
		   "zero count of each [heap] page, and the malloc size words of each stdio FILE\n"
		   "in [heap] are recorded; then it is delivered. One JSON record per run and a\n"
		   "summary on stdout. Each record has the run's start_brk (where the kernel put\n"
		   "the brk heap; /proc/PID/stat field 47, read at the stop after execve). With\n"
		   "--brk-window, a run whose start_brk is outside [LO, HI) is killed at that stop\n"
		   "and CMD is started again until one falls inside (the record counts the execs):\n"
		   "with ASLR, a non-PIE binary's heap starts at a random page in the 1 GiB above\n"
		   "its .bss, so this picks where the heap lies without changing CMD.\n"
		   "Exit status: 0 every run exited 0..125 without a fatal\n"
		   "signal, 1 some run did not, 2 usage.\n");
}

static void vmstat(long long *v)
{
	char buf[16384], *p;

	memset(v, 0, NKEYS * sizeof(*v));
	if (mg_read_file("/proc/vmstat", buf, sizeof(buf)) <= 0)
		return;
	for (size_t k = 0; k < NKEYS; k++) {
		size_t n = strlen(VMSTAT_KEYS[k]);

		for (p = buf; (p = strstr(p, VMSTAT_KEYS[k])); p += n)
			if ((p == buf || p[-1] == '\n') && p[n] == ' ') {
				v[k] = atoll(p + n + 1);
				break;
			}
	}
}

/*
 * The last `lines` non-empty lines (split at \n and \r) of the command's
 * output, joined with " | ".
 */
static void last_lines(const char *path, int lines, char *out, size_t size)
{
	char buf[2048];
	int fd = open(path, O_RDONLY);
	off_t end;
	ssize_t n = 0;

	out[0] = '\0';
	if (fd < 0)
		return;
	end = lseek(fd, 0, SEEK_END);
	if (end > 0)
		n = pread(fd, buf, sizeof(buf) - 1, end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	char *s = buf + n;
	for (int k = 0; k < lines && s > buf; k++) {
		while (s > buf && (s[-1] == '\n' || s[-1] == '\r'))
			s--;
		while (s > buf && s[-1] != '\n' && s[-1] != '\r')
			s--;
	}
	size_t len = 0;
	for (bool sep = false; *s && len + 4 < size; s++) {
		if (*s == '\n' || *s == '\r') {
			sep = len > 0;
			continue;
		}
		if (sep)
			len += (size_t)snprintf(out + len, size - len, " | ");
		sep = false;
		out[len++] = *s;
	}
	out[len] = '\0';
}

static uint64_t pfn_of(int pm, unsigned long va)
{
	uint64_t e = 0;

	if (pread(pm, &e, sizeof(e), (off_t)(va / PAGE * sizeof(e))) != sizeof(e) || !(e >> 63))
		return 0; /* not present */
	return e & ((1ULL << 55) - 1);
}

static int read_u64(int mem, unsigned long va, uint64_t *out)
{
	return pread(mem, out, sizeof(*out), (off_t)va) == sizeof(*out) ? 0 : -1;
}

/* Everything we record while the fatal signal is held. */
static void catch(pid_t pid, int run, int sig)
{
	char path[64], line[512];
	unsigned long hs = 0, he = 0, s, e;
	static uint64_t pfns[MAX_PAGES];
	static unsigned long vas[MAX_PAGES];
	size_t npfn = 0;
	unsigned long exec_lo[8], exec_hi[8];
	int nexec = 0;
	char perm[5];
	struct mg_json j;
	FILE *maps;
	int pm, mem;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "r");
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	pm = open(path, O_RDONLY);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	mem = open(path, O_RDONLY);
	while (maps && fgets(line, sizeof(line), maps)) {
		line[strcspn(line, "\n")] = '\0';
		mgj_start(&j, "flake_maps", NULL);
		mgj_int(&j, "run", run);
		mgj_str(&j, "line", line);
		mgj_emit(&j);
		if (sscanf(line, "%lx-%lx %4s", &s, &e, perm) != 3)
			continue;
		if (perm[2] == 'x' && nexec < 8) {
			exec_lo[nexec] = s;
			exec_hi[nexec++] = e;
		}
		/* [heap] names every VMA between start_brk and brk, also a foreign one there */
		if (strstr(line, "[heap]")) {
			hs = hs ? hs : s;
			he = e;
		}
		for (unsigned long va = s; pm >= 0 && va < e && npfn < MAX_PAGES && !strstr(line, "[v"); va += PAGE) {
			uint64_t f = pfn_of(pm, va);

			if (f) {
				vas[npfn] = va;
				pfns[npfn++] = f;
			}
		}
	}
	if (maps)
		fclose(maps);
	if (he > hs + MAX_HEAP_PAGES * PAGE)
		he = hs + MAX_HEAP_PAGES * PAGE;
	for (unsigned long va = hs; va < he; va += PAGE) {
		uint64_t w[PAGE / 8], f = pm >= 0 ? pfn_of(pm, va) : 0;
		char hex[80] = "";
		int zeros = 0, shared = 0;
		bool ok = mem >= 0 && pread(mem, w, PAGE, (off_t)va) == (ssize_t)PAGE;

		for (size_t k = 0; ok && k < PAGE / 8; k++)
			zeros += !w[k];
		for (size_t k = 0; f && k < npfn; k++)
			shared += pfns[k] == f && vas[k] != va;
		for (int k = 0; ok && k < 4; k++)
			snprintf(hex + strlen(hex), sizeof(hex) - strlen(hex), "%016llx ", (unsigned long long)w[k]);
		mgj_start(&j, "flake_page", NULL);
		mgj_int(&j, "run", run);
		mgj_int(&j, "addr", (long long)va);
		mgj_int(&j, "pfn", (long long)f);
		mgj_bool(&j, "readable", ok);
		mgj_int(&j, "zero_words", zeros);
		mgj_int(&j, "pfn_also_mapped_elsewhere", shared);
		mgj_str(&j, "head", hex);
		mgj_emit(&j);
	}
	/* stdio FILEs in the heap: _flags (high half 0xfbad) at the chunk's user start. */
	for (unsigned long va = hs; mem >= 0 && va + 16 <= he; va += 16) {
		uint64_t flags, csize = 0, buf = 0, bsize = 0;

		if (read_u64(mem, va, &flags) || (flags & 0xffff0000ULL) != 0xfbad0000ULL || flags >> 32)
			continue;
		read_u64(mem, va - 8, &csize);
		read_u64(mem, va + 56, &buf); /* struct _IO_FILE: _IO_buf_base */
		if (buf >= 16)
			read_u64(mem, buf - 8, &bsize);
		mgj_start(&j, "flake_file", NULL);
		mgj_int(&j, "run", run);
		mgj_int(&j, "addr", (long long)va);
		mgj_int(&j, "flags", (long long)flags);
		mgj_int(&j, "chunk_size_word", (long long)csize);
		mgj_int(&j, "buf", (long long)buf);
		mgj_int(&j, "buf_chunk_size_word", (long long)bsize);
		mgj_emit(&j);
	}
	/* Return addresses: stack words inside the executable mappings. */
	struct user_regs_struct regs;
	static uint64_t stk[512];
	char addrs[3072] = "";

	if (mem >= 0 && !ptrace(PTRACE_GETREGS, pid, 0, &regs) &&
	    pread(mem, stk, sizeof(stk), (off_t)regs.rsp) > 0) {
		for (size_t k = 0; k < 512 && strlen(addrs) < sizeof(addrs) - 20; k++)
			for (int x = 0; x < nexec; x++)
				if (stk[k] >= exec_lo[x] && stk[k] < exec_hi[x])
					snprintf(addrs + strlen(addrs), sizeof(addrs) - strlen(addrs), "%llx ",
						 (unsigned long long)stk[k]);
		mgj_start(&j, "flake_stack", NULL);
		mgj_int(&j, "run", run);
		mgj_int(&j, "rip", (long long)regs.rip);
		mgj_int(&j, "rsp", (long long)regs.rsp);
		mgj_str(&j, "text_words", addrs);
		mgj_emit(&j);
	}
	if (pm >= 0)
		close(pm);
	if (mem >= 0)
		close(mem);
	mg_log("run %d: caught signal %d in pid %d (heap %lx-%lx, %zu other pages)", run, sig, pid, hs, he, npfn);
}

/* mm->start_brk of a stopped process: field 47 of /proc/PID/stat; 0 if unknown. */
static unsigned long start_brk(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long v = 0;
	int field = 3;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (mg_read_file(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
		return 0;
	for (p += 2; *p && field < 47; p++) /* p: "S ppid ...", field 3 onwards */
		if (*p == ' ')
			field++;
	if (field == 47)
		v = strtoul(p, NULL, 10);
	return v;
}

static unsigned long brk_lo, brk_hi; /* --brk-window: [lo, hi), 0-0 = any */

static volatile sig_atomic_t alarmed;
static void on_alarm(int sig) { (void)sig; alarmed = 1; }

/*
 * One run; returns the wait status, *caught = the fatal signal seen or 0,
 * *brk = the start_brk it ran with. With --brk-window, a child whose
 * start_brk (known at the stop after execve) is outside the window is
 * killed and forked again; *tries counts the execs.
 */
static int run_once(char **cmd, const char *out, int run, long long tmo, int *caught,
		    unsigned long *brk, long long *tries)
{
	int st = 0;
	pid_t pid;

	*caught = 0;
	*tries = 0;
	alarmed = 0; /* once per run: a SIGALRM that lands in fork() below must not be forgotten */
again:
	if (alarmed)
		return st; /* the time ran out between two tries (st holds the last SIGKILL) */
	if (++*tries > 100000000)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 || ptrace(PTRACE_TRACEME, 0, 0, 0))
			_exit(126);
		execvp(cmd[0], cmd);
		_exit(127);
	}
	if (*tries == 1)
		alarm((unsigned)tmo);
	for (;;) {
		if (alarmed) /* also when SIGALRM landed outside waitpid() */
			kill(pid, SIGKILL);
		if (waitpid(pid, &st, 0) < 0) {
			if (errno == EINTR && alarmed) {
				kill(pid, SIGKILL); /* alarmed stays set: no new try after this one */
				continue;
			}
			st = -1;
			break;
		}
		if (!WIFSTOPPED(st))
			break;
		int sig = WSTOPSIG(st), pass = sig;

		if (sig == SIGTRAP && !*brk) {
			pass = 0; /* the stop after execve */
			*brk = start_brk(pid);
			if (brk_hi && (*brk < brk_lo || *brk >= brk_hi)) {
				kill(pid, SIGKILL);
				while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
					;
				if (alarmed)
					break; /* the time ran out while choosing: SIGKILL */
				*brk = 0;
				goto again;
			}
		}
		else if (!*caught && (sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE)) {
			*caught = sig;
			catch(pid, run, sig);
		}
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)pass);
	}
	alarm(0);
	return st;
}

static bool parse_window(const char *s)
{
	char *e;

	errno = 0;
	brk_lo = strtoul(s, &e, 0);
	if (errno || e == s || *e != '-')
		return false;
	s = e + 1;
	brk_hi = strtoul(s, &e, 0);
	return !errno && e != s && !*e && brk_lo < brk_hi;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "runs", required_argument, NULL, 'n' }, { "timeout", required_argument, NULL, 't' },
		{ "out", required_argument, NULL, 'o' }, { "brk-window", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	long long runs = 1, tmo = 600, clean = 0, fatal = 0, other = 0;
	const char *out = "/tmp/stflake.out";
	struct sigaction sa = { .sa_handler = on_alarm };
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if ((c == 'n' && !mg_parse_ll(optarg, 1, 100000, &runs)) ||
		    (c == 't' && !mg_parse_ll(optarg, 1, 86400, &tmo)) || c == '?' || c == ':') {
			fprintf(stderr, PROG ": bad or unknown option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return MG_EXIT_USAGE;
		}
		if (c == 'o')
			out = optarg;
		if (c == 'b' && !parse_window(optarg)) {
			fprintf(stderr, PROG ": --brk-window: expected LO-HI with LO < HI (hex 0x... or decimal), got '%s'\n", optarg);
			usage(stderr);
			return MG_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, PROG ": no command given\n");
		usage(stderr);
		return MG_EXIT_USAGE;
	}
	sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART: waitpid returns EINTR */
	for (int r = 1; r <= runs; r++) {
		long long v0[NKEYS], v1[NKEYS];
		char last[256], tail[512];
		int caught;
		unsigned long brk = 0;
		long long tries;
		uint64_t t0 = mg_now_ns();

		vmstat(v0);
		int st = run_once(argv + optind, out, r, tmo, &caught, &brk, &tries);
		vmstat(v1);
		last_lines(out, 1, last, sizeof(last));
		last_lines(out, 3, tail, sizeof(tail));
		struct mg_json j;

		mgj_start(&j, "flake_run", NULL);
		mgj_int(&j, "run", r);
		if (st != -1 && WIFEXITED(st))
			mgj_int(&j, "rc", WEXITSTATUS(st));
		else
			mgj_null(&j, "rc");
		mgj_int(&j, "signal", st != -1 && WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		mgj_int(&j, "caught", caught);
		mgj_int(&j, "start_brk", (long long)brk);
		mgj_int(&j, "execs", tries);
		mgj_num(&j, "seconds", (double)(mg_now_ns() - t0) / 1e9);
		mgj_str(&j, "last", last);
		mgj_str(&j, "tail", tail);
		for (size_t k = 0; k < NKEYS; k++)
			mgj_int(&j, VMSTAT_KEYS[k], v1[k] - v0[k]);
		mgj_emit(&j);
		if (st != -1 && WIFSIGNALED(st))
			fatal++;
		else if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) <= 125)
			clean++;
		else
			other++;
	}
	struct mg_json j;

	mgj_start(&j, "flake_summary", NULL);
	mgj_int(&j, "runs", runs);
	mgj_int(&j, "exited", clean);
	mgj_int(&j, "killed_by_signal", fatal);
	mgj_int(&j, "other", other);
	mgj_emit(&j);
	return fatal || other ? MG_EXIT_FAIL : MG_EXIT_OK;
}
