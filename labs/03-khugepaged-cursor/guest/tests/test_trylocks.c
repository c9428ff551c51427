/*
 * Host tests of khugepaged_cursor's trylock count (guest/khugepaged_cursor/
 * trylocks.c): the run's window between its trace_marker lines, failures,
 * collapse_huge_page()'s blocking retake told apart from a trylock, and
 * events of another mm or task left out. Lines are in trace_pipe's format.
 */
#include "khugepaged_cursor/trylocks.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MM "00000000dfe40bc1"
#define OTHER "000000001234abcd"

static struct trylocks t;
static double now = 10.0;

static void line(const char *task, const char *event)
{
	char buf[256];

	now += 0.001;
	snprintf(buf, sizeof(buf), "%16s-29      [001] .....  %.6f: %s", task, now, event);
	trylocks_line(&t, buf);
}

static void mark(const char *what, int run)
{
	char ev[80];

	snprintf(ev, sizeof(ev), "tracing_mark_write: %s%d", what, run);
	line("khugepaged_curso", ev);
}

static void acq(const char *mm, bool write, bool ok)
{
	char ev[160];

	snprintf(ev, sizeof(ev), "mmap_lock_acquire_returned: mm=%s memcg_path= write=%s success=%s", mm,
		 write ? "true" : "false", ok ? "true" : "false");
	line("khugepaged", ev);
}

static void rel(bool write)
{
	line("khugepaged", write ? "mmap_lock_released: mm=" MM " memcg_path= write=true"
				 : "mmap_lock_released: mm=" MM " memcg_path= write=false");
}

static void collapse(const char *status)
{
	char ev[160];

	snprintf(ev, sizeof(ev), "mm_collapse_huge_page: mm=%s, isolated=1, status=%s", MM, status);
	line("khugepaged", ev);
}

/* One khugepaged_scan_mm_slot() call that collapses a range (6.12 anon path). */
static void call_with_collapse(void)
{
	acq(MM, false, true);  /* mmap_read_trylock() */
	rel(false);            /* collapse_huge_page(): unlock, allocate */
	acq(MM, false, true);  /* mmap_read_lock(): revalidate */
	rel(false);
	acq(MM, true, true);   /* mmap_write_lock() */
	rel(true);
	collapse("succeeded");
}

static void setup(void)
{
	memset(&t, 0, sizeof(t));
}

TestSuite(trylocks, .init = setup);

Test(trylocks, counts_only_inside_the_window)
{
	acq(MM, false, false); /* before start: not counted */
	mark(TRYLOCKS_START, 1);
	acq(MM, false, false);
	acq(MM, false, true);
	rel(false);
	mark(TRYLOCKS_STOP, 1);
	acq(MM, false, false); /* after stop: not counted */
	cr_assert_eq(t.closed, 1);
	cr_assert_eq(t.fails, 1);
	cr_assert_eq(trylocks_attempts(&t), 2);
}

Test(trylocks, collapse_retake_is_not_a_trylock)
{
	mark(TRYLOCKS_START, 2);
	call_with_collapse();
	call_with_collapse();
	acq(MM, false, false);
	mark(TRYLOCKS_STOP, 2);
	cr_assert_eq(t.retakes, 2);
	cr_assert_eq(t.fails, 1);
	cr_assert_eq(trylocks_attempts(&t), 3, "2 successful trylocks + 1 failure, got %lld",
		     trylocks_attempts(&t));
}

Test(trylocks, failed_allocation_takes_no_lock)
{
	mark(TRYLOCKS_START, 3);
	acq(MM, false, true); /* the trylock */
	rel(false);
	collapse("alloc_huge_page_failed"); /* returned before mmap_read_lock() */
	acq(MM, false, true);  /* next call's trylock */
	rel(false);
	mark(TRYLOCKS_STOP, 3);
	cr_assert_eq(t.retakes, 0);
	cr_assert_eq(trylocks_attempts(&t), 2);
}

Test(trylocks, revalidate_failure_is_still_a_retake)
{
	mark(TRYLOCKS_START, 4);
	acq(MM, false, true);
	rel(false);
	acq(MM, false, true);
	rel(false);
	collapse("vma_check_failed");
	mark(TRYLOCKS_STOP, 4);
	cr_assert_eq(t.retakes, 1);
	cr_assert_eq(trylocks_attempts(&t), 1);
}

Test(trylocks, other_mm_and_other_tasks_left_out)
{
	mark(TRYLOCKS_START, 5);
	acq(MM, false, false);
	acq(OTHER, false, false);
	line("khugepaged_curso", "mmap_lock_acquire_returned: mm=" MM " memcg_path= write=false success=false");
	mark(TRYLOCKS_STOP, 5);
	cr_assert_eq(t.fails, 1);
	cr_assert_eq(t.other_mm, 1);
	cr_assert_str_eq(t.mm, MM);
}

Test(trylocks, stop_of_another_run_does_not_close)
{
	mark(TRYLOCKS_START, 6);
	acq(MM, false, false);
	mark(TRYLOCKS_STOP, 5);
	cr_assert_eq(t.closed, 0);
	cr_assert_eq(t.run, 6);
	line("", "CPU:1 [LOST 12 EVENTS]");
	mark(TRYLOCKS_STOP, 6);
	cr_assert_eq(t.closed, 6);
	cr_assert_eq(t.lost, 1);
}
