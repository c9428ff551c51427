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
static unsigned char tag[] = { 0, 1, 0, 0, 2, 1, 1, 0 };

Test(slow_calls, split_by_tag_and_skip_unknown)
{
	struct mg_lat l = { .v = v, .n = 8, .cap = 8, .count = 8 };
	long long c[US_SLOW_NR];

	us_slow_calls(&l, tag, 100, c);
	cr_expect_eq(c[US_SLOW], 3);          /* 900, 700, 800 */
	cr_expect_eq(c[US_TAGGED], 3);        /* 900, 30, 800 */
	cr_expect_eq(c[US_SLOW_TAGGED], 2);   /* 900, 800 */
	cr_expect_eq(c[US_UNTAGGED], 4);      /* 50, 40, 700, 20; 60's tag says the read failed */
	cr_expect_eq(c[US_SLOW_UNTAGGED], 1); /* 700 */
}

Test(slow_calls, strictly_above_the_limit_and_no_tags)
{
	struct mg_lat l = { .v = v, .n = 8, .cap = 8, .count = 8 };
	long long c[US_SLOW_NR];

	us_slow_calls(&l, NULL, 800, c);
	cr_expect_eq(c[US_SLOW], 1);
	cr_expect_eq(c[US_TAGGED] + c[US_UNTAGGED], 0);
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
