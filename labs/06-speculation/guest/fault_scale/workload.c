/* fault_scale's workloads (see workload.h): the four will-it-scale patterns, tmpfs files, /proc/vmstat, the switch's counters. */
#define _GNU_SOURCE
#include "workload.h"
#include "mmlocks_guest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994 /* linux/magic.h */
#endif

const char *const fs_pattern_names[FS_NPAT] = { "page_fault1", "page_fault2", "page_fault3",
						"malloc2" };

int fs_pattern_find(const char *name)
{
	for (int p = 0; p < FS_NPAT; p++)
		if (!strcmp(name, fs_pattern_names[p]))
			return p;
	return -1;
}

unsigned fs_pattern_list(const char *s)
{
	char item[32];
	unsigned mask = 0;

	if (!s || !*s)
		return 0;
	for (;;) {
		size_t len = strcspn(s, ",");
		int p;

		if (!len || len >= sizeof(item))
			return 0;
		memcpy(item, s, len);
		item[len] = '\0';
		p = fs_pattern_find(item);
		if (p < 0 || mask & (1u << p))
			return 0;
		mask |= 1u << p;
		if (!s[len])
			return mask;
		s += len + 1;
	}
}

bool fs_pattern_has_file(enum fs_pattern p)
{
	return p == FS_PAGE_FAULT2 || p == FS_PAGE_FAULT3;
}

/* ---- the passes ----------------------------------------------------------- */

static bool stopped(const struct fs_worker *w)
{
	return __atomic_load_n(w->stop, __ATOMIC_RELAXED);
}

static void count_op(struct fs_worker *w, long long done)
{
	__atomic_store_n(&w->ops, done, __ATOMIC_RELAXED);
}

static long fail(struct fs_worker *w, int err)
{
	w->err = err;
	return -err;
}

/* region: page-fault-pass */
static long fault_pass(struct fs_worker *w)
{
	static const int flags[] = {
		[FS_PAGE_FAULT1] = MAP_PRIVATE | MAP_ANONYMOUS,
		[FS_PAGE_FAULT2] = MAP_PRIVATE,
		[FS_PAGE_FAULT3] = MAP_SHARED,
	};
	long long done = w->ops;
	long n = 0;
	char *c = mmap(NULL, w->len, PROT_READ | PROT_WRITE, flags[w->pattern],
		       w->pattern == FS_PAGE_FAULT1 ? -1 : w->fd, 0);

	if (c == MAP_FAILED)
		return fail(w, errno);
	for (size_t off = 0; off < w->len && !stopped(w); off += FS_PAGE) {
		((volatile char *)c)[off] = 1; /* a write fault */
		n++;
		count_op(w, ++done);
	}
	munmap(c, w->len);
	return n;
}
/* endregion: page-fault-pass */

static long malloc_pass(struct fs_worker *w)
{
	long long done = w->ops;
	long n = 0;

	for (int i = 0; i < FS_MALLOC_BATCH && !stopped(w); i++) {
		char *p = malloc(FS_MALLOC_SIZE);

		if (!p)
			return fail(w, ENOMEM);
		p[0] = 1;
		/* The compiler may not drop the malloc/free pair as unused. */
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		n++;
		count_op(w, ++done);
	}
	return n;
}

long fs_pass(struct fs_worker *w)
{
	return w->pattern == FS_MALLOC2 ? malloc_pass(w) : fault_pass(w);
}

void *fs_worker_main(void *arg)
{
	struct fs_worker *w = arg;

	while (!stopped(w))
		if (fs_pass(w) < 0)
			break;
	return NULL;
}

/* ---- tmpfs files ------------------------------------------------------------ */

bool fs_dir_is_tmpfs(const char *dir)
{
	struct statfs sf;
	struct stat st;

	return !stat(dir, &st) && S_ISDIR(st.st_mode) && !statfs(dir, &sf) &&
	       sf.f_type == TMPFS_MAGIC;
}

#define FS_MAX_PENDING 4
static char pending[FS_MAX_PENDING][PATH_MAX];
static int pending_set[FS_MAX_PENDING];

void fs_unlink_pending(void)
{
	for (int i = 0; i < FS_MAX_PENDING; i++)
		if (__atomic_exchange_n(&pending_set[i], 0, __ATOMIC_ACQ_REL))
			unlink(pending[i]);
}

int fs_file_create(const char *dir, size_t len)
{
	int slot = -1, fd, err;

	for (int i = 0; i < FS_MAX_PENDING && slot < 0; i++)
		if (!__atomic_load_n(&pending_set[i], __ATOMIC_ACQUIRE))
			slot = i;
	if (slot < 0)
		return -EBUSY;
	if (snprintf(pending[slot], PATH_MAX, "%s/fault_scale.XXXXXX", dir) >= PATH_MAX)
		return -ENAMETOOLONG;
	/*
	 * The name goes on the list before the file exists: a signal between
	 * mkstemp and unlink removes it (a name whose X's are still X's names no file).
	 */
	__atomic_store_n(&pending_set[slot], 1, __ATOMIC_RELEASE);
	fd = mkostemp(pending[slot], O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		__atomic_store_n(&pending_set[slot], 0, __ATOMIC_RELEASE);
		return -err;
	}
	err = fallocate(fd, 0, 0, (off_t)len) ? errno : 0;
	if (__atomic_exchange_n(&pending_set[slot], 0, __ATOMIC_ACQ_REL))
		unlink(pending[slot]);
	if (err) {
		close(fd);
		return -err;
	}
	return fd;
}

/* ---- counters ----------------------------------------------------------------- */

const char *const fs_vm_names[FS_VM_NR] = { "pgfault", "vma_lock_success", "vma_lock_abort",
					    "vma_lock_retry", "vma_lock_miss" };

bool fs_vm_parse(const char *text, long long v[FS_VM_NR])
{
	bool any = false;

	for (int i = 0; i < FS_VM_NR; i++)
		v[i] = -1;
	while (text && *text) {
		char key[64];
		long long val;

		if (sscanf(text, "%63s %lld", key, &val) == 2)
			for (int i = 0; i < FS_VM_NR; i++)
				if (!strcmp(key, fs_vm_names[i])) {
					v[i] = val;
					any = true;
				}
		text = strchr(text, '\n');
		if (text)
			text++;
	}
	return any;
}

bool fs_vm_read(long long v[FS_VM_NR])
{
	static char buf[32768];
	ssize_t n = mg_read_file("/proc/vmstat", buf, sizeof(buf));

	return n > 0 && fs_vm_parse(buf, v);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int fs_knob_counters(const char *dir, const char *knob, char names[FS_MAX_KC][FS_KC_NAME])
{
	/* The family: "uprobe_" of "uprobe_speculate", "deferred_split_" of ... */
	size_t plen = strcspn(knob, "_") + 1;
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL && n < FS_MAX_KC) {
		size_t len = strlen(de->d_name);

		if (len < plen || strncmp(de->d_name, knob, plen) || !strcmp(de->d_name, knob) ||
		    len >= FS_KC_NAME || de->d_type == DT_DIR)
			continue;
		memcpy(names[n++], de->d_name, len + 1);
	}
	closedir(d);
	qsort(names, (size_t)n, FS_KC_NAME, cmp_name);
	return n;
}
