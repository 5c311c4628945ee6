/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_fault: rates, determinism, the delay queue. */
#include <string.h>

#include "gw_fault.h"
#include "gw_test.h"

static void test_off(void)
{
	struct gw_fault_conf c = { .seed = 7 };
	struct gw_fault f;
	gw_fault_init(&f, &c);
	CU_ASSERT_FALSE(gw_fault_enabled(&c));
	for (int i = 0; i < 10000; i++)
		CU_ASSERT_EQUAL(gw_fault_decide(&f), GW_FAULT_PASS);
}

/* Each fault happens at about its rate; the bands never overlap. */
static void test_rates(void)
{
	struct gw_fault_conf c = {
		.drop_ppm = 10000, .dup_ppm = 20000, .corrupt_ppm = 30000, .reorder_ppm = 40000,
		.delay_us = 100, .seed = 42,
	};
	struct gw_fault f;
	gw_fault_init(&f, &c);
	const int n = 1000000;
	for (int i = 0; i < n; i++) {
		enum gw_fault_verdict v = gw_fault_decide(&f);
		if (v == GW_FAULT_DELAY)
			gw_fault_drain(&f); /* keep room so DELAY is never downgraded */
	}
	CU_ASSERT(f.counts[GW_FAULT_DROP] > 9000 && f.counts[GW_FAULT_DROP] < 11000);
	CU_ASSERT(f.counts[GW_FAULT_DUP] > 18000 && f.counts[GW_FAULT_DUP] < 22000);
	CU_ASSERT(f.counts[GW_FAULT_CORRUPT] > 27000 && f.counts[GW_FAULT_CORRUPT] < 33000);
	CU_ASSERT(f.counts[GW_FAULT_DELAY] > 36000 && f.counts[GW_FAULT_DELAY] < 44000);
	uint64_t sum = 0;
	for (int v = 0; v <= GW_FAULT_DELAY; v++)
		sum += f.counts[v];
	CU_ASSERT_EQUAL(sum, (uint64_t)n);
}

/* The same seed gives the same decisions: a failing run can be replayed. */
static void test_seeded(void)
{
	struct gw_fault_conf c = { .drop_ppm = 300000, .corrupt_ppm = 300000, .seed = 99 };
	struct gw_fault a, b;
	gw_fault_init(&a, &c);
	gw_fault_init(&b, &c);
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(gw_fault_decide(&a), gw_fault_decide(&b));
	uint8_t ma, mb;
	size_t pa = gw_fault_corrupt_at(&a, 9000, &ma), pb = gw_fault_corrupt_at(&b, 9000, &mb);
	CU_ASSERT(pa == pb && ma == mb && pa < 9000 && ma && !(ma & (ma - 1)));
	c.seed = 100;
	gw_fault_init(&b, &c);
	int same = 0;
	for (int i = 0; i < 1000; i++)
		same += gw_fault_decide(&a) == gw_fault_decide(&b);
	CU_ASSERT(same < 1000);
}

/* Held frames come back in order, not before their time, and all of them. */
static void test_delay_queue(void)
{
	struct gw_fault_conf c = { .reorder_ppm = 1000000, .delay_us = 10, .seed = 1 };
	struct gw_fault f;
	gw_fault_init(&f, &c);
	static int frames[GW_FAULT_HELD_MAX + 1];
	for (int i = 0; i < GW_FAULT_HELD_MAX; i++) {
		CU_ASSERT_EQUAL(gw_fault_decide(&f), GW_FAULT_DELAY);
		gw_fault_hold(&f, &frames[i], 1000 + (uint64_t)i);
	}
	/* Full: the next frame is passed rather than held. */
	CU_ASSERT_EQUAL(gw_fault_decide(&f), GW_FAULT_PASS);
	CU_ASSERT_PTR_NULL(gw_fault_release(&f, 1000 + 9999));
	CU_ASSERT_PTR_EQUAL(gw_fault_release(&f, 1000 + 10000), &frames[0]);
	CU_ASSERT_PTR_NULL(gw_fault_release(&f, 1000 + 10000));
	int k = 1;
	void *p;
	while ((p = gw_fault_drain(&f)) != NULL)
		CU_ASSERT_PTR_EQUAL(p, &frames[k++]);
	CU_ASSERT_EQUAL(k, GW_FAULT_HELD_MAX);
}

static const struct gw_test_case cases[] = {
	{ "off by default", test_off },
	{ "rates", test_rates },
	{ "seeded and replayable", test_seeded },
	{ "delay queue", test_delay_queue },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("fault", cases);
}
