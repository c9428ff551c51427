/*
 * Host tests of khugepaged_hold's trace bookkeeping (guest/khugepaged_hold/
 * holds.c): pairing of mmap_lock events into holds, the walk-gap buckets,
 * and taking stops of the vCPU out of the holds that contain them. The
 * lines are in trace_pipe's format with the "mono" clock, as in the guest.
 */
#include "khugepaged_hold/holds.h"

#include <criterion/criterion.h>
#include <stdio.h>

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull
#define MM "mm=00000000dfe40bc1 memcg_path="

static struct holds h;

static void setup(void)
{
	holds_init(&h, 500 * US); /* --stall-us 500: stops from 500 us, 250 us kept */
	holds_open(&h, 0, 1 * S);
	holds_close(&h, 2 * S);
	holds_open(&h, 1, 2 * S);
}

static void teardown(void)
{
	holds_free(&h);
}

static void line_pid(const char *task, int pid, uint64_t ns, const char *event)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%16s-%-6d [001] .....  %5llu.%06llu: %s", task, pid,
		 (unsigned long long)(ns / S), (unsigned long long)(ns % S / US), event);
	holds_line(&h, buf);
}

static void line(const char *task, uint64_t ns, const char *event)
{
	line_pid(task, 29, ns, event);
}

/* An interrupt handler on khugepaged's CPU, [a, b). */
static void irq(uint64_t a, uint64_t b)
{
	line("khugepaged", a, "local_timer_entry: vector=236");
	line("khugepaged", b, "local_timer_exit: vector=236");
}

/* The writer (pid 77): one write wait [a, b). */
static void wwait(uint64_t a, uint64_t b)
{
	line_pid("khugepaged_hold", 77, a, "mmap_lock_start_locking: " MM " write=true");
	line_pid("khugepaged_hold", 77, b, "mmap_lock_acquire_returned: " MM " write=true success=true");
	line_pid("khugepaged_hold", 77, b + 10 * US, "mmap_lock_released: " MM " write=true");
}

static void acq(uint64_t ns, bool write, bool ok)
{
	char ev[160];

	snprintf(ev, sizeof(ev), "mmap_lock_acquire_returned: " MM " write=%s success=%s",
		 write ? "true" : "false", ok ? "true" : "false");
	line("khugepaged", ns, ev);
}

static void rel(uint64_t ns, bool write)
{
	line("khugepaged", ns, write ? "mmap_lock_released: " MM " write=true"
				     : "mmap_lock_released: " MM " write=false");
}

static void gap(uint64_t start, uint64_t len)
{
	char ev[160];

	snprintf(ev, sizeof(ev), "mmlocks_khugepaged_walk_gap: mm=00000000dfe40bc1 start_ns=%llu gap_ns=%llu",
		 (unsigned long long)start, (unsigned long long)len);
	line("khugepaged", start + len, ev);
}

/* One read hold [a, b] as khugepaged's two events. */
static void hold(uint64_t a, uint64_t b)
{
	acq(a, false, true);
	rel(b, false);
}

TestSuite(holds, .init = setup, .fini = teardown);

Test(holds, a_read_hold_is_acquire_to_release)
{
	hold(1 * S + 100 * US, 1 * S + 350 * US);
	cr_assert_eq(h.holds.n, 1);
	cr_assert_eq(h.holds.v[0][0], 1 * S + 350 * US, "keyed by release time");
	cr_assert_eq(h.holds.v[0][1], 250 * US);
	cr_assert_eq(h.win[0].rhold.count, 1);
	cr_assert_eq(h.win[1].rhold.count, 0);
	cr_assert_eq(h.last_ts, 1 * S + 350 * US);
}

Test(holds, a_hold_counts_in_the_window_it_was_acquired_in)
{
	hold(2 * S - 100 * US, 2 * S + 100 * US);
	cr_assert_eq(h.win[0].rhold.count, 1);
	cr_assert_eq(h.win[1].rhold.count, 0);
}

Test(holds, a_failed_trylock_is_counted_not_paired)
{
	acq(1 * S + 10 * US, false, false);
	rel(1 * S + 20 * US, false);
	cr_assert_eq(h.fails.n, 1);
	cr_assert_eq(h.win[0].failed_trylocks, 1);
	cr_assert_eq(h.holds.n, 0, "a release without a successful acquire is no hold");
}

Test(holds, write_holds_are_kept_apart)
{
	acq(1 * S, true, true);
	rel(1 * S + 500 * US, true);
	cr_assert_eq(h.holds.n, 0);
	cr_assert_eq(h.win[0].whold_max, 500 * US);
}

Test(holds, other_tasks_are_ignored)
{
	line("kworker/1:1", 1 * S, "mmap_lock_acquire_returned: " MM " write=false success=true");
	line("kworker/1:1", 1 * S + 9 * MS, "mmap_lock_released: " MM " write=false");
	cr_assert_eq(h.holds.n, 0);
	cr_assert_eq(h.lines, 2);
}

Test(holds, a_lost_events_marker_breaks_the_pair)
{
	acq(1 * S, false, true);
	holds_line(&h, "CPU:1 [LOST 120 EVENTS]");
	rel(1 * S + 5 * MS, false);
	cr_assert_eq(h.holds.n, 0);
	cr_assert_eq(h.lost, 1);
}

Test(holds, walk_gaps_are_bucketed_and_long_ones_are_stops)
{
	static const uint64_t len[] = { 150 * US, 300 * US, 700 * US, 1500 * US, 3 * MS, 6 * MS };

	for (int i = 0; i < 6; i++)
		gap(1 * S + (uint64_t)i * 10 * MS, len[i]);
	for (int i = 0; i < HOLDS_GAP_BINS; i++)
		cr_assert_eq(h.win[0].gaps[i], 1, "bin %d", i);
	cr_assert_eq(h.win[0].stops, 4, "700 us and longer");
	cr_assert_eq(h.win[0].stop_ns, (450 + 1250 + 2750 + 5750) * US, "250 us of each kept");
	cr_assert_eq(h.win[0].stop_max, 6 * MS);
	cr_assert_eq(h.stops.n, 4);
	cr_assert_eq(h.stops.v[0][0], 1 * S + 20 * MS + 250 * US, "the kept part comes first");
	cr_assert_eq(h.stops.v[0][1], 450 * US);
}

Test(holds, a_stop_comes_out_of_the_hold_that_contains_it)
{
	uint64_t b[] = { 1 * S, 1 * S + 500 * MS };
	struct scan sc[2];

	acq(1 * S + 100 * MS, false, true);
	gap(1 * S + 100 * MS + 100 * US, 3 * MS);
	rel(1 * S + 100 * MS + 3300 * US, false);
	cr_assert_eq(holds_cut(&h, b, 2, sc, 2), 1);
	cr_assert_eq(sc[0].count, 1);
	cr_assert_eq(sc[0].max, 3300 * US);
	cr_assert_eq(sc[0].net, 550 * US, "3.3 ms less (3 ms - 250 us)");
	cr_assert_eq(sc[0].with_stops, 1);
}

Test(holds, a_short_gap_stays_in_the_hold)
{
	uint64_t b[] = { 1 * S, 1 * S + 500 * MS };
	struct scan sc[1];

	acq(1 * S + 100 * MS, false, true);
	gap(1 * S + 100 * MS + 50 * US, 400 * US);
	rel(1 * S + 100 * MS + 700 * US, false);
	cr_assert_eq(holds_cut(&h, b, 2, sc, 1), 1);
	cr_assert_eq(sc[0].net, sc[0].max);
	cr_assert_eq(sc[0].with_stops, 0);
	cr_assert_eq(h.win[0].gaps[1], 1, "counted in the 0.25-0.5 ms bin");
}

Test(holds, only_the_overlap_of_a_stop_is_taken_out)
{
	size_t g = 0;

	tlog_add(&h.stops, 10 * MS, 10 * MS); /* [10, 20) ms */
	tlog_add(&h.stops, 40 * MS, 5 * MS);  /* [40, 45) ms */
	cr_assert_eq(holds_stopped_in(&h, 0, 9 * MS, &g), 0);
	cr_assert_eq(holds_stopped_in(&h, 15 * MS, 30 * MS, &g), 5 * MS);
	cr_assert_eq(holds_stopped_in(&h, 30 * MS, 50 * MS, &g), 5 * MS);
	cr_assert_eq(g, 1, "the cursor moved past the first stop");
	g = 0;
	cr_assert_eq(holds_stopped_in(&h, 0, 100 * MS, &g), 15 * MS, "two stops in one hold");
}

Test(holds, holds_are_cut_into_scans_by_release_time)
{
	uint64_t b[] = { 1 * S + 50 * MS, 1 * S + 250 * MS, 1 * S + 450 * MS };
	struct scan sc[4];

	hold(1 * S + 40 * MS, 1 * S + 40 * MS + 900 * US);   /* before b[0]: the mixed scan */
	hold(1 * S + 100 * MS, 1 * S + 100 * MS + 100 * US);
	hold(1 * S + 200 * MS, 1 * S + 200 * MS + 300 * US);
	hold(1 * S + 300 * MS, 1 * S + 300 * MS + 200 * US);
	hold(1 * S + 400 * MS, 1 * S + 400 * MS + 50 * US);
	hold(1 * S + 480 * MS, 1 * S + 480 * MS + 800 * US); /* after the last bound */
	cr_assert_eq(holds_cut(&h, b, 3, sc, 4), 2);
	cr_assert_eq(sc[0].count, 2);
	cr_assert_eq(sc[0].max, 300 * US);
	cr_assert_eq(sc[1].count, 2);
	cr_assert_eq(sc[1].max, 200 * US);
	cr_assert_eq(holds_cut(&h, b, 3, sc, 1), 1, "at most cap scans");
}

Test(holds, the_interrupts_inside_a_stop_stay_in_the_hold)
{
	uint64_t b[] = { 1 * S, 1 * S + 500 * MS }, t = 1 * S + 100 * MS;
	struct scan sc[1];

	acq(t, false, true);
	irq(t + 1 * MS, t + 1200 * US); /* in the kept 250 us: no change */
	irq(t + 2 * MS, t + 2500 * US); /* 500 us inside the part taken out */
	line("khugepaged", t + 2600 * US, "softirq_entry: vec=1 [action=TIMER]");
	line("khugepaged", t + 2700 * US, "tasklet_entry: tasklet=x"); /* nested */
	line("khugepaged", t + 2800 * US, "tasklet_exit: tasklet=x");
	line("khugepaged", t + 2900 * US, "softirq_exit: vec=1 [action=TIMER]");
	gap(t + 1 * MS, 3 * MS);      /* [1, 4) ms; taken out: [1.25, 4) less irqs */
	rel(t + 5 * MS, false);
	cr_assert_eq(h.irqs.n, 3, "the nested tasklet is inside the softirq");
	cr_assert_eq(h.win[0].stop_ns, (2750 - 500 - 300) * US);
	cr_assert_eq(h.win[0].stop_gap_ns, 3 * MS);
	cr_assert_eq(h.win[0].stop_irq_ns, (200 + 500 + 300) * US);
	cr_assert_eq(h.stops.n, 3, "pieces between the interrupts");
	cr_assert_eq(holds_cut(&h, b, 2, sc, 1), 1);
	cr_assert_eq(sc[0].net, 5 * MS - (2750 - 800) * US);
}

Test(holds, an_interrupt_covering_a_whole_stop_takes_nothing_out)
{
	irq(1 * S + 10 * MS, 1 * S + 20 * MS);
	gap(1 * S + 11 * MS, 2 * MS);
	cr_assert_eq(h.win[0].stops, 1);
	cr_assert_eq(h.win[0].stop_ns, 0);
	cr_assert_eq(h.stops.n, 0);
}

Test(holds, the_writers_waits_are_paired_by_pid)
{
	wwait(1 * S + 10 * MS, 1 * S + 14 * MS);
	wwait(2 * S - 1 * MS, 2 * S + 2 * MS); /* began in window 0 */
	wwait(2 * S + 5 * MS, 2 * S + 5 * MS + 300 * US);
	cr_assert_eq(h.wwaits.n, 0, "no writer pid set yet");
	h.writer_pid = 77;
	wwait(1 * S + 10 * MS, 1 * S + 14 * MS);
	wwait(2 * S - 1 * MS, 2 * S + 2 * MS);
	wwait(2 * S + 5 * MS, 2 * S + 5 * MS + 300 * US);
	wwait(2 * S + 6 * MS, 2 * S + 9 * MS);
	line_pid("khugepaged_hold", 77, 2 * S + 9 * MS, "mmap_lock_start_locking: " MM " write=false");
	line_pid("khugepaged_hold", 77, 2 * S + 19 * MS, "mmap_lock_acquire_returned: " MM " write=false success=true");
	cr_assert_eq(h.wwaits.n, 4, "read acquisitions are not writer waits");
	holds_writer_waits(&h, 0, 1 * S);
	holds_writer_waits(&h, 1, 2 * S + 5 * MS + 500 * US); /* the window's first boundary */
	cr_assert_eq(h.win[0].wwait.count, 2);
	cr_assert_eq(h.win[0].wwait.max, 4 * MS);
	cr_assert_eq(h.win[1].wwait.count, 1, "a wait before the first boundary is left out");
	cr_assert_eq(h.span[0].wwait_max, 4 * MS);
	cr_assert_eq(h.span[1].wwait_max, 3 * MS);
	cr_assert_eq(h.holds.n, 0, "the writer's lines are not khugepaged's");
}

Test(holds, windows_of_one_configuration_add_up)
{
	holds_close(&h, 3 * S);
	holds_open(&h, 0, 4 * S);
	hold(1 * S + 1 * MS, 1 * S + 2 * MS);
	hold(3 * S + 1 * MS, 3 * S + 2 * MS); /* between windows */
	hold(4 * S + 1 * MS, 4 * S + 3 * MS);
	cr_assert_eq(h.win[0].rhold.count, 2);
	cr_assert_eq(h.win[0].rhold.max, 2 * MS);
	cr_assert_eq(h.win[1].rhold.count, 0);
	cr_assert_eq(h.win[0].seconds_ns, 1 * S);
	cr_assert_eq(h.win[1].seconds_ns, 1 * S);
	cr_assert(!holds_open(&h, HOLDS_CFGS, 5 * S), "no such configuration");
}
