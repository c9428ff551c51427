/* model.c: the model's clock, costs, contention and the khugepaged kthread loop. */
#include <stdlib.h>
#include <string.h>

#include "khugepaged.h"

unsigned int khugepaged_pages_to_scan;
unsigned int khugepaged_scan_sleep_millisecs;
enum khugepaged_cursor_policy khugepaged_cursor_policy;
unsigned int khugepaged_max_skip_batch;

struct model_stats model_stats;
double model_contention;

static uint64_t model_prng_state;
static const char *model_script;
static size_t model_script_pos;

/* region: model-clock */
/*
 * The model's time.  Nothing runs concurrently: every step khugepaged
 * takes adds its cost, so a hold of the mmap_lock is the sum of the costs
 * of the steps taken while holding it.
 */
uint64_t model_clock_ns;

/*
 * Costs.  vma_visit_ns is calibrated on patch 5 of the series ("mm/
 * khugepaged: drop/reacquire mmap read lock if skipped enough VMAs"):
 * ~1M ineligible VMAs held the lock for 95 ms, about 95 ns a VMA; the
 * model uses a round 90 ns, a little below that.  The others
 * are orders of magnitude, not measurements: reading 512 PTEs and
 * their folios, and allocating + copying a 2 MiB page.
 */
static const struct model_costs model_default_costs = {
	.vma_visit_ns = 90,
	.pmd_scan_ns = 5 * 1000,
	.collapse_ns = 200 * 1000,
	.writer_ns = 1000,
};
struct model_costs model_costs;

void model_clock_advance(uint64_t ns)
{
	model_clock_ns += ns;
}

/*
 * The khugepaged() kthread: one pass, then khugepaged_wait_work() sleeps
 * scan_sleep_millisecs, until every collapsible range has collapsed.
 */
struct model_result khugepaged_run(uint64_t max_passes, model_pass_fn after,
				   void *arg)
{
	struct model_result r = { .collapsed = khugepaged_collapsible_left() == 0 };

	for (uint64_t pass = 1; !r.collapsed && pass <= max_passes; pass++) {
		khugepaged_do_scan();
		r.passes = pass;
		if (after)
			after(pass, arg);
		if (khugepaged_collapsible_left() == 0) {
			r.collapsed = true;
			r.collapse_ns = model_stats.last_collapse_ns;
			break;
		}
		model_clock_advance(khugepaged_scan_sleep_millisecs * 1000000ULL);
	}
	return r;
}
/* endregion: model-clock */

/* splitmix64: small, seedable, the same sequence on every machine. */
static uint64_t model_next(void)
{
	uint64_t z = (model_prng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void model_seed(uint64_t seed)
{
	model_prng_state = seed;
}

/* Uniform in [0, 1). */
double model_random(void)
{
	return (double)(model_next() >> 11) * 0x1.0p-53;
}

void model_trylock_script(const char *script)
{
	model_script = script;
	model_script_pos = 0;
}

/* true: this mmap_read_trylock() succeeds. */
bool model_trylock_outcome(void)
{
	if (model_script && model_script[model_script_pos])
		return model_script[model_script_pos++] != 'F';
	if (model_contention <= 0.0)
		return true;
	return model_random() >= model_contention;
}

void khugepaged_model_reset(void)
{
	while (!list_empty(&khugepaged_scan.mm_head)) {
		struct list_head *n = khugepaged_scan.mm_head.next;

		list_del(n);
		free(list_entry(n, struct khugepaged_mm_slot, slot.mm_node));
	}
	khugepaged_scan.mm_slot = NULL;
	khugepaged_scan.address = 0;
	khugepaged_full_scans = 0;
	khugepaged_pages_collapsed = 0;

	khugepaged_pages_to_scan = HPAGE_PMD_NR * 8;
	khugepaged_scan_sleep_millisecs = 10000;
	khugepaged_cursor_policy = CURSOR_GLOBAL_RESET;
	khugepaged_max_skip_batch = 0;

	memset(&model_stats, 0, sizeof(model_stats));
	model_costs = model_default_costs;
	model_clock_ns = 0;
	model_contention = 0.0;
	model_seed(1);
	model_trylock_script(NULL);
}
