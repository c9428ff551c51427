/* uprobe_scale: the probed function, its tracefs uprobe, patch 0011's switch and counters. */
#define _GNU_SOURCE
#include "probe.h"
#include "mmlocks_guest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <unistd.h>

/* push/mov/lea/pop/ret, 64-byte aligned: never across a page boundary. */
__asm__(".pushsection .text\n"
	".p2align 6\n"
	".globl us_probed\n"
	".type us_probed, @function\n"
	"us_probed:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tlea 1(%rdi), %rax\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size us_probed, .-us_probed\n"
	".popsection\n");

const char *const us_counter_names[US_NR] = {
	"uprobe_speculate_attempt", "uprobe_speculate_success", "uprobe_speculate_fail_begin",
	"uprobe_speculate_fail_lookup", "uprobe_speculate_fail_retry", "uprobe_mmap_locked",
};

static char cnt_path[US_NR][128];

static const char *counter_path(int i)
{
	if (!cnt_path[i][0])
		snprintf(cnt_path[i], sizeof(cnt_path[i]), MG_KNOBS "/%s", us_counter_names[i]);
	return cnt_path[i];
}

bool us_counters_reset(void)
{
	for (int i = 0; i < US_NR; i++)
		if (mg_write_file(counter_path(i), "0"))
			return false;
	return true;
}

bool us_counters_read(long long v[US_NR])
{
	for (int i = 0; i < US_NR; i++)
		if (mg_read_ll(counter_path(i), &v[i]))
			return false;
	return true;
}

bool us_find_target(struct us_target *t)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	memset(t, 0, sizeof(*t));
	t->addr = (uintptr_t)&us_probed;
	if (!f) {
		mg_error(US_EXP, "cannot open /proc/self/maps: %s", strerror(errno));
		return false;
	}
	while (!found && fgets(line, sizeof(line), f))
		found = us_maps_line(line, t->addr, &t->file_off, t->path, sizeof(t->path));
	fclose(f);
	if (!found)
		mg_error(US_EXP, "us_probed() (%#" PRIxPTR ") is not in a file mapping of /proc/self/maps",
			 t->addr);
	return found;
}

bool us_map_alias(const struct us_target *t, struct us_alias *a)
{
	long pg = sysconf(_SC_PAGESIZE);

	a->fd = open(t->path, O_RDONLY | O_CLOEXEC);
	a->off = (off_t)(t->file_off & ~((unsigned long)pg - 1));
	a->page = a->fd < 0 ? MAP_FAILED
			    : mmap(NULL, (size_t)pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, a->fd, a->off);
	if (a->page == MAP_FAILED) {
		mg_error(US_EXP, "cannot map %s at offset %#lx: %s", t->path, (unsigned long)a->off,
			 strerror(errno));
		return false;
	}
	a->fn = (us_fn)((char *)a->page + (t->file_off & ((unsigned long)pg - 1)));
	return true;
}

int us_mem_byte(uintptr_t addr)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	unsigned char b;
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, &b, 1, (off_t)addr);
	close(fd);
	return n == 1 ? b : -1;
}

/* ---- tracefs ------------------------------------------------------------ */

static const char *tdir;
static char ev_path[160], en_path[200];

const char *us_tracefs(void)
{
	static const char *const dirs[] = { MG_TRACING, "/sys/kernel/debug/tracing" };

	for (size_t i = 0; !tdir && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char p[128];

		snprintf(p, sizeof(p), "%s/uprobe_events", dirs[i]);
		if (mg_exists(p))
			tdir = dirs[i];
	}
	return tdir;
}

/* write(2) of s to path, appending (O_TRUNC would clear every uprobe); 0 or -errno. */
static int append(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC), e = 0;
	size_t len = strlen(s);

	if (fd < 0)
		return -errno;
	if (write(fd, s, len) != (ssize_t)len)
		e = -errno;
	close(fd);
	return e;
}

int us_probe_enable(bool on)
{
	return append(en_path, on ? "1" : "0");
}

void us_probe_remove(void)
{
	if (!ev_path[0])
		return;
	append(en_path, "0");
	append(ev_path, "-:" US_GROUP "/" US_EVENT);
}

long long us_probe_hits(void)
{
	char path[160], buf[4096], *l;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/uprobe_profile", tdir ? tdir : MG_TRACING);
	n = mg_read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return -1;
	/* "  FILE EVENT HITS" per probe (probes_profile_seq_show(): the name without its group) */
	for (l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char file[256], ev[128];
		long long hits;

		if (sscanf(l, "%255s %127s %lld", file, ev, &hits) == 3 &&
		    !strcmp(ev, US_EVENT))
			return hits;
	}
	return -1;
}

bool us_probe_add(const struct us_target *t)
{
	char def[400];
	int e;

	if (!us_tracefs()) {
		mg_error(US_EXP, "no uprobe_events in %s or /sys/kernel/debug/tracing: "
			 "this kernel lacks CONFIG_UPROBE_EVENTS", MG_TRACING);
		return false;
	}
	snprintf(ev_path, sizeof(ev_path), "%s/uprobe_events", tdir);
	snprintf(en_path, sizeof(en_path), "%s/events/" US_GROUP "/" US_EVENT "/enable", tdir);
	us_probe_remove(); /* a previous run's, if it died without cleaning up */
	snprintf(def, sizeof(def), "p:" US_GROUP "/" US_EVENT " %s:%#lx\n", t->path, t->file_off);
	e = append(ev_path, def);
	if (e) {
		ev_path[0] = 0;
		mg_error(US_EXP, "cannot define the uprobe (%.*s) in %s: %s",
			 (int)strcspn(def, "\n"), def, "uprobe_events", strerror(-e));
		return false;
	}
	mg_on_restore(us_probe_remove);
	return true;
}

long us_hit_loop(us_fn fn, long long *calls, volatile int *stop, volatile int *park, int *parked)
{
	long acc = 0;
	long long n = 0;

	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 15);
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED) && !mg_stop_signal) {
		if (park && __atomic_load_n(park, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(parked, 1, __ATOMIC_ACQ_REL);
			while (__atomic_load_n(park, __ATOMIC_ACQUIRE) && !mg_stop_signal &&
			       !__atomic_load_n(stop, __ATOMIC_RELAXED))
				mg_sleep_us(1000);
			__atomic_fetch_sub(parked, 1, __ATOMIC_ACQ_REL);
			continue;
		}
		acc = fn(acc);
		__atomic_store_n(calls, ++n, __ATOMIC_RELAXED);
	}
	return acc;
}
