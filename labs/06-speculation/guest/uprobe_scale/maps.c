/* uprobe_scale: where us_probed() lives, read from one /proc/self/maps line (host-tested). */
#define _GNU_SOURCE
#include "probe.h"

#include <stdio.h>
#include <string.h>

/*
 * 6.12's show_map_vma() (fs/proc/task_mmu.c) prints "start-end perms
 * offset dev inode", pads with spaces and, for a file, the path that
 * d_path() gives: a path may hold spaces, and an unlinked file's ends in
 * " (deleted)" (fs/d_path.c), which no tracefs definition can name. The
 * probed code runs, so its mapping has 'x'; a path that does not start
 * with '/' is a name such as [vdso] or [heap], or nothing (anonymous).
 */
/* region: maps-line */
bool us_maps_line(const char *line, uintptr_t addr, unsigned long *off, char *path, size_t n)
{
	static const char deleted[] = " (deleted)";
	unsigned long lo, hi, pgoff;
	char perms[8];
	size_t len;
	int pos = 0;

	if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &pgoff, &pos) != 4 || !pos)
		return false;
	if (addr < lo || addr >= hi || strlen(perms) != 4 || perms[2] != 'x' || line[pos] != '/')
		return false;
	len = strcspn(line + pos, "\n");
	if (len >= n || (len >= sizeof(deleted) - 1 &&
			 !memcmp(line + pos + len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1)))
		return false;
	memcpy(path, line + pos, len);
	path[len] = 0;
	*off = pgoff + (addr - lo);
	return true;
}
/* endregion: maps-line */
