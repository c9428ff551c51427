/*
 * Host tests of uprobe_scale's /proc/self/maps line parser
 * (uprobe_scale/maps.c): lines as 6.12's show_map_vma() prints them, and
 * one read from this process's own maps.
 */
#define _GNU_SOURCE
#include "uprobe_scale/probe.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define ADDR 0x55d4c3a01234ul /* in the first line's range */
#define EXE "55d4c3a00000-55d4c3a02000 r-xp 00003000 fd:01 1835021                    "

static bool parse(const char *line, unsigned long *off, char *path, size_t n)
{
	*off = 0xdead;
	snprintf(path, n, "untouched");
	return us_maps_line(line, ADDR, off, path, n);
}

Test(maps_line, exec_file_mapping_gives_offset_and_path)
{
	char path[256];
	unsigned long off;

	cr_assert(parse(EXE "/usr/lib/mmlocks/uprobe_scale\n", &off, path, sizeof(path)));
	cr_assert_str_eq(path, "/usr/lib/mmlocks/uprobe_scale", "the path, without padding or newline");
	cr_assert_eq(off, 0x3000ul + 0x1234ul, "offset %#lx: the line's offset plus addr - start", off);
	cr_assert(parse(EXE "/init", &off, path, sizeof(path)), "a last line with no newline");
	cr_assert_str_eq(path, "/init");
}

Test(maps_line, spaces_in_a_path_are_kept)
{
	char path[256];
	unsigned long off;

	cr_assert(parse(EXE "/tmp/my dir/a  b\n", &off, path, sizeof(path)));
	cr_assert_str_eq(path, "/tmp/my dir/a  b");
}

Test(maps_line, deleted_file_is_refused)
{
	char path[256];
	unsigned long off;

	cr_assert_not(parse(EXE "/tmp/uprobe_scale (deleted)\n", &off, path, sizeof(path)),
		      "d_path()'s \" (deleted)\" names no file tracefs can open");
	cr_assert_not(parse(EXE "/tmp/a (deleted)", &off, path, sizeof(path)));
	cr_assert(parse(EXE "/tmp/deleted\n", &off, path, sizeof(path)), "only the suffix counts");
	cr_assert(parse(EXE "/tmp/x (deleted) y\n", &off, path, sizeof(path)));
	cr_assert_str_eq(path, "/tmp/x (deleted) y");
}

Test(maps_line, non_exec_anonymous_named_and_other_ranges_are_refused)
{
	static const char *const no[] = {
		"55d4c3a00000-55d4c3a02000 r--p 00003000 fd:01 1835021   /usr/bin/uprobe_scale\n",
		"55d4c3a00000-55d4c3a02000 rw-p 00000000 00:00 0 \n",
		"55d4c3a00000-55d4c3a02000 rwxp 00000000 00:00 0\n",
		"55d4c3a00000-55d4c3a02000 r-xp 00000000 00:00 0                          [vdso]\n",
		"55d4c3a02000-55d4c3a04000 r-xp 00003000 fd:01 1835021   /usr/bin/uprobe_scale\n",
		"55d4c39fe000-55d4c3a01234 r-xp 00003000 fd:01 1835021   /usr/bin/uprobe_scale\n",
	};
	char path[256];
	unsigned long off;

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		cr_assert_not(parse(no[i], &off, path, sizeof(path)), "accepted: %s", no[i]);
		cr_assert_eq(off, 0xdead, "a refused line wrote the offset: %s", no[i]);
		cr_assert_str_eq(path, "untouched", "a refused line wrote the path: %s", no[i]);
	}
}

Test(maps_line, malformed_lines_and_short_buffers_are_refused)
{
	static const char *const bad[] = {
		"", "\n", "garbage\n", "55d4c3a00000-55d4c3a02000\n",
		"55d4c3a00000-55d4c3a02000 r-xp\n", "55d4c3a00000-55d4c3a02000 r-xp zz fd:01 1 /x\n",
		"55d4c3a00000 55d4c3a02000 r-xp 00003000 fd:01 1835021 /x\n",
		"55d4c3a00000-55d4c3a02000 r-xp 00003000 fd:01\n",
		"55d4c3a00000-55d4c3a02000 r-xpq 00003000 fd:01 1835021 /x\n",
	};
	char path[256], small[8];
	unsigned long off;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(parse(bad[i], &off, path, sizeof(path)), "accepted: \"%s\"", bad[i]);
	cr_assert(parse(EXE "/abcdef\n", &off, small, sizeof(small)), "7 characters fit in 8 bytes");
	cr_assert_not(parse(EXE "/abcdefg\n", &off, small, sizeof(small)), "8 do not: no cut path");
	cr_assert_str_eq(small, "untouch", "a refused line wrote the path: %s", small);
}

/* The real thing: this test program's code is in an r-xp mapping of its file. */
Test(maps_line, finds_this_program_in_its_own_maps)
{
	uintptr_t addr = (uintptr_t)&us_probed;
	char line[512], path[256] = "";
	unsigned long off = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		found += us_maps_line(line, addr, &off, path, sizeof(path));
	fclose(f);
	cr_assert_eq(found, 1, "%d maps lines hold us_probed() at %#lx", found, (unsigned long)addr);
	cr_assert(strstr(path, "guest-tests"), "path %s", path);
	cr_assert_eq(off & 0xfff, addr & 0xfff, "offset %#lx and address %#lx differ within the page",
		     off, (unsigned long)addr);
}
