/*
 * Host tests of uprobe_scale's pieces that need no uprobe: the count of the
 * mapper's slow calls split by the --tag-fallbacks tags, and the percentile
 * of a copy that leaves the latencies in the writer's order (the tags are
 * matched to them by position).
 */
#define _GNU_SOURCE
#include "uprobe_scale/probe.h"

#include <criterion/criterion.h>

static uint64_t v[] = { 50, 900, 40, 700, 60, 30, 800, 20 };
static unsigned char tag[] = { 0, 1, 0, 3, US_TAG_BAD, 2, 1, 0 };

Test(slow_calls, split_by_tag_and_skip_unknown)
{
	struct mg_lat l = { .v = v, .n = 8, .cap = 8, .count = 8 };
	long long c[US_SLOW_NR];

	us_slow_calls(&l, tag, 100, c);
	cr_expect_eq(c[US_SLOW], 3);                          /* 900, 700, 800 */
	cr_expect_eq(c[US_CALLS_TAG + 0], 3);                 /* 50, 40, 20 */
	cr_expect_eq(c[US_SLOW_TAG + 0], 0);
	cr_expect_eq(c[US_CALLS_TAG + US_TAG_BEFORE], 2);     /* 900, 800 */
	cr_expect_eq(c[US_SLOW_TAG + US_TAG_BEFORE], 2);
	cr_expect_eq(c[US_CALLS_TAG + US_TAG_DURING], 1);     /* 30 */
	cr_expect_eq(c[US_SLOW_TAG + US_TAG_DURING], 0);
	cr_expect_eq(c[US_SLOW_TAG + 3], 1);                  /* 700; 60's read failed */
}

Test(slow_calls, strictly_above_the_limit_and_no_tags)
{
	struct mg_lat l = { .v = v, .n = 8, .cap = 8, .count = 8 };
	long long c[US_SLOW_NR];

	us_slow_calls(&l, NULL, 800, c);
	cr_expect_eq(c[US_SLOW], 1);
	for (int t = 0; t < 4; t++)
		cr_expect_eq(c[US_CALLS_TAG + t], 0);
}

Test(pct_copy, nearest_rank_and_order_kept)
{
	uint64_t w[] = { 5, 1, 4, 2, 3 };
	struct mg_lat l = { .v = w, .n = 5, .cap = 5, .count = 5 };

	cr_expect_eq(us_pct_copy(&l, 50), 3);
	cr_expect_eq(us_pct_copy(&l, 99), 5);
	cr_expect_eq(w[0], 5);
	cr_expect_eq(w[1], 1);
	cr_expect_eq(w[4], 3);
}
