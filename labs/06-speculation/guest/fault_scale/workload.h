/* fault_scale's workloads: will-it-scale's page_fault1/2/3 and malloc2, their tmpfs files, the counters read around a sample. */
#ifndef FAULT_SCALE_WORKLOAD_H
#define FAULT_SCALE_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>

#define FS_PAGE 4096ul
#define FS_MALLOC_SIZE 1024ul	/* malloc2: 1 KiB malloc/free */
#define FS_MALLOC_BATCH 1024	/* malloc2 ops per fs_pass() */

/* The patterns, named as will-it-scale names its tests. */
enum fs_pattern { FS_PAGE_FAULT1, FS_PAGE_FAULT2, FS_PAGE_FAULT3, FS_MALLOC2, FS_NPAT };
extern const char *const fs_pattern_names[FS_NPAT];

/* The pattern called `name`, or -1. */
int fs_pattern_find(const char *name);
/* Parse "page_fault1,malloc2" into a bit mask (bit = pattern); 0 on junk or repeats. */
unsigned fs_pattern_list(const char *s);
/* Does the pattern map a file (page_fault2, page_fault3)? */
bool fs_pattern_has_file(enum fs_pattern p);

/*
 * One worker's state. `ops` is published (relaxed) after every op so the
 * main thread can read a worker's count at the end of the timed window
 * without stopping it; each worker has its own cache line.
 */
struct fs_worker {
	long long ops;
	enum fs_pattern pattern;
	size_t len;		/* bytes mapped per pass (page_fault*) */
	int fd;			/* the worker's tmpfs file (page_fault2/3), else -1 */
	const int *stop;	/* the pass returns early once *stop is set */
	int err;		/* errno of a failed mmap/malloc, 0 if none */
} __attribute__((aligned(64)));

/*
 * One pass of the pattern, as will-it-scale's loop body:
 *   page_fault1  mmap(len, MAP_PRIVATE | MAP_ANONYMOUS), write one byte in
 *                every page (one fault each), munmap
 *   page_fault2  the same on the worker's tmpfs file, MAP_PRIVATE (each write
 *                fault copies the file's page into a new anonymous page)
 *   page_fault3  the same, MAP_SHARED (each write fault maps the file's page)
 *   malloc2      FS_MALLOC_BATCH times malloc(1 KiB), write it, free
 * One op is one page written or one malloc/free pair. Writes the value 1
 * (will-it-scale writes 0: the fault is the same; a 1 lets the host test see
 * where the write went). Stops early once *w->stop is set (the mapping is
 * unmapped all the same). Returns the ops done, or -errno (w->err set).
 */
long fs_pass(struct fs_worker *w);

/* Thread body: fs_pass() until *w->stop; w->ops counts every op. */
void *fs_worker_main(void *w);

/*
 * Whether `dir` is a directory on tmpfs (statfs TMPFS_MAGIC): the file
 * patterns are about tmpfs files, as will-it-scale's /tmp files were.
 */
bool fs_dir_is_tmpfs(const char *dir);

/*
 * A tmpfs file of len bytes, all allocated (fallocate: the first pass must
 * not allocate the page cache when the later ones do not), created in dir
 * with mkstemp and unlinked at once, as will-it-scale does; the fd, or
 * -errno. Until it is unlinked its name is on a list that fs_unlink_pending()
 * (installed with mg_on_restore(), async-signal-safe) removes, so a SIGTERM
 * in between leaves no file behind.
 */
int fs_file_create(const char *dir, size_t len);
void fs_unlink_pending(void);

/* The /proc/vmstat counters of a sample (missing ones read -1). */
enum fs_vm { FS_PGFAULT, FS_VMA_LOCK_SUCCESS, FS_VMA_LOCK_ABORT, FS_VMA_LOCK_RETRY,
	     FS_VMA_LOCK_MISS, FS_VM_NR };
extern const char *const fs_vm_names[FS_VM_NR];

/* Fill v[] from the text of /proc/vmstat; false if no counter was found. */
bool fs_vm_parse(const char *text, long long v[FS_VM_NR]);
/* Read /proc/vmstat (main thread only); false on failure. */
bool fs_vm_read(long long v[FS_VM_NR]);

/*
 * The switch's counters: every file in dir whose name starts with the
 * switch's first word and '_' ("uprobe_" for uprobe_speculate: 0011's
 * uprobe_speculate_* and uprobe_mmap_locked), the switch itself excepted,
 * sorted, at most FS_MAX_KC. Their number (0 is fine), or -errno.
 */
#define FS_MAX_KC 8
#define FS_KC_NAME 64
int fs_knob_counters(const char *dir, const char *knob, char names[FS_MAX_KC][FS_KC_NAME]);

#endif
