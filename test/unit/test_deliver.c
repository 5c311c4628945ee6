/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_deliver: hold within the bound, refuse past it, open again at half;
 * wake a client on the receiver's CPU when it must run. */
#include <string.h>

#include "gw_deliver.h"
#include "gw_test.h"

#define BLOCK 100

static void test_fresh_open(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_open(&h, false));
	CU_ASSERT_TRUE(gw_deliver_open(&h, true));
	CU_ASSERT_EQUAL(h.full_since_ns, 0);
	CU_ASSERT_FALSE(h.rejecting);
}

/* Held for block_ns from the first full moment, refused from then on. */
static void test_hold_then_refuse(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1000, BLOCK));
	CU_ASSERT_EQUAL(h.full_since_ns, 1000);
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1050, BLOCK));
	/* Still full but not rejecting: deliveries are tried, the clock runs on. */
	CU_ASSERT_TRUE(gw_deliver_open(&h, false));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1099, BLOCK));
	CU_ASSERT_FALSE(h.rejecting);
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1100, BLOCK));
	CU_ASSERT_TRUE(h.rejecting);
}

/* Once refusing, it stays so until below half, however long it takes. */
static void test_stays_refusing(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1000, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1200, BLOCK));
	for (uint64_t t = 1200; t < 1000000; t += 997) {
		CU_ASSERT_FALSE(gw_deliver_open(&h, false));
		CU_ASSERT_FALSE(gw_deliver_full(&h, t, BLOCK));
	}
	/* A huge bound later does not reopen it either: only draining does. */
	CU_ASSERT_FALSE(gw_deliver_full(&h, 2000000, UINT64_MAX));
	CU_ASSERT_FALSE(gw_deliver_open(&h, false));
	CU_ASSERT_TRUE(h.rejecting);
}

/* Below half it opens; the next full moment starts a new clock. */
static void test_reopen_restarts_clock(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1000, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1100, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_open(&h, false));
	CU_ASSERT_TRUE(gw_deliver_open(&h, true));
	CU_ASSERT_EQUAL(h.full_since_ns, 0);
	CU_ASSERT_FALSE(h.rejecting);
	CU_ASSERT_TRUE(gw_deliver_open(&h, false)); /* not full any more */
	CU_ASSERT_TRUE(gw_deliver_full(&h, 5000, BLOCK));
	CU_ASSERT_EQUAL(h.full_since_ns, 5000);
	CU_ASSERT_TRUE(gw_deliver_full(&h, 5099, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 5100, BLOCK));
}

/* Full, then drained before the bound: open, and a fresh clock next time. */
static void test_drained_before_bound(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1000, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1080, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_open(&h, true));
	CU_ASSERT_EQUAL(h.full_since_ns, 0);
	CU_ASSERT_FALSE(h.rejecting);
	/* Past the first clock's bound, but this is a new full moment. */
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1090, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1150, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1189, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1190, BLOCK));
}

/* Drained a little but not to half: the first clock still runs. */
static void test_partial_drain_keeps_clock(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1000, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_open(&h, false));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1090, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_open(&h, false));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1100, BLOCK));
}

static void test_block_zero(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1000, 0));
	CU_ASSERT_TRUE(h.rejecting);
	CU_ASSERT_FALSE(gw_deliver_open(&h, false));
	CU_ASSERT_TRUE(gw_deliver_open(&h, true));
	memset(&h, 0, sizeof(h));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 0, 0));
	CU_ASSERT_FALSE(gw_deliver_open(&h, false));
}

/*
 * A full moment at time 0 starts the clock too. (Kept as 1 ns, since 0
 * means not full. Starting it only at the next non-zero now would hold the
 * lane well past the bound.)
 */
static void test_now_zero(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_full(&h, 0, BLOCK));
	CU_ASSERT_NOT_EQUAL(h.full_since_ns, 0);
	CU_ASSERT_TRUE(gw_deliver_open(&h, false)); /* full, still trying */
	CU_ASSERT_NOT_EQUAL(h.full_since_ns, 0);
	CU_ASSERT_TRUE(gw_deliver_full(&h, 0, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 50, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 150, BLOCK));

	memset(&h, 0, sizeof(h));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 0, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, BLOCK + 1, BLOCK));

	/* Drained after a start at 0: open and reset like any other. */
	memset(&h, 0, sizeof(h));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 0, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_open(&h, true));
	CU_ASSERT_EQUAL(h.full_since_ns, 0);
	CU_ASSERT_TRUE(gw_deliver_full(&h, 60, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 159, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 160, BLOCK));
}

/* Times near the top of the range, and a clock that steps back, hold. */
static void test_odd_clocks(void)
{
	struct gw_deliver_hold h = { 0 };
	uint64_t t = UINT64_MAX - 50;
	CU_ASSERT_TRUE(gw_deliver_full(&h, t, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, t - 10, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, UINT64_MAX, BLOCK));
	CU_ASSERT_FALSE(h.rejecting);
	memset(&h, 0, sizeof(h));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1000, BLOCK));
	CU_ASSERT_TRUE(gw_deliver_full(&h, 10, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1100, BLOCK));
}

/* A REJECT holds while its reader moves, whatever the messages' state,
 * up to GW_DELIVER_OWED_BLOCKS block_ns in all. */
static void test_owed_reader_moves(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_full(&h, 1000, BLOCK));
	CU_ASSERT_FALSE(gw_deliver_full(&h, 1100, BLOCK)); /* messages refused */
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 1100, BLOCK, 7));
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 1199, BLOCK, 7));
	/* It reads on: held again and again, past one block_ns. */
	uint64_t t = 1199;
	uint32_t pos = 8;
	for (; t < 1100 + GW_DELIVER_OWED_BLOCKS * BLOCK; t += 90, pos++)
		CU_ASSERT_TRUE(gw_deliver_owed(&h, t, BLOCK, pos));
	/* But not for longer than the whole bound, reading or not; and the
	 * next REJECT that finds it full is given up too, until one gets in. */
	CU_ASSERT_FALSE(gw_deliver_owed(&h, t, BLOCK, pos + 1));
	CU_ASSERT_FALSE(gw_deliver_owed(&h, t + 1, BLOCK, pos + 2));
	CU_ASSERT_TRUE(h.rejecting); /* the messages' state is its own */
	gw_deliver_owed_done(&h);
	CU_ASSERT_TRUE(gw_deliver_owed(&h, t + 2, BLOCK, pos + 2));
}

static void test_owed_reader_stopped(void)
{
	struct gw_deliver_hold h = { 0 };
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 5000, BLOCK, 3));
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 5099, BLOCK, 3));
	CU_ASSERT_FALSE(gw_deliver_owed(&h, 5100, BLOCK, 3));
	CU_ASSERT_FALSE(gw_deliver_owed(&h, 5300, BLOCK, 3));
	/* Reading again (the count wraps like any counter): held again. */
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 5301, BLOCK, 4));
	/* Delivered: the next wait starts its own clock, at the same position. */
	gw_deliver_owed_done(&h);
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 20000, BLOCK, 4));
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 20099, BLOCK, 4));
	CU_ASSERT_FALSE(gw_deliver_owed(&h, 20100, BLOCK, 4));
	/* At time 0, and with a clock stepping back. */
	memset(&h, 0, sizeof(h));
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 0, BLOCK, 0));
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 0, BLOCK, 0));
	CU_ASSERT_FALSE(gw_deliver_owed(&h, BLOCK + 1, BLOCK, 0));
	CU_ASSERT_TRUE(gw_deliver_owed(&h, 10, BLOCK, UINT32_MAX));
}

/* An empty set is never woken, whatever the step says. */
static void test_wake_empty(void)
{
	struct gw_deliver_wakes w = { 0 };
	CU_ASSERT_FALSE(gw_deliver_wake_due(&w, 0, false, false, false));
	CU_ASSERT_FALSE(gw_deliver_wake_due(&w, UINT64_MAX, false, true, true));
	CU_ASSERT_EQUAL(gw_deliver_wake_count(&w), 0);
}

/* Left asleep while steps find work; woken by a step without, a held
 * frame, a stop, or the oldest's age, each on its own. */
static void test_wake_when(void)
{
	struct gw_deliver_wakes w = { 0 };
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 7, 1000));
	CU_ASSERT_EQUAL(gw_deliver_wake_count(&w), 1);
	CU_ASSERT_FALSE(gw_deliver_wake_due(&w, 1000, true, false, false));
	CU_ASSERT_FALSE(gw_deliver_wake_due(&w, 1000 + GW_DELIVER_WAKE_WAIT_NS - 1, true, false, false));
	CU_ASSERT_EQUAL(gw_deliver_wake_due(&w, 1000 + GW_DELIVER_WAKE_WAIT_NS, true, false, false),
			GW_DELIVER_WAKE_AGE);
	CU_ASSERT_EQUAL(gw_deliver_wake_due(&w, 1001, false, false, false), GW_DELIVER_WAKE_IDLE);
	CU_ASSERT_EQUAL(gw_deliver_wake_due(&w, 1001, true, true, false), GW_DELIVER_WAKE_HELD);
	CU_ASSERT_EQUAL(gw_deliver_wake_due(&w, 1001, true, false, true), GW_DELIVER_WAKE_STOP);
	/* The first reason that holds is the one given. */
	CU_ASSERT_EQUAL(gw_deliver_wake_due(&w, 1000 + GW_DELIVER_WAKE_WAIT_NS, false, true, true),
			GW_DELIVER_WAKE_IDLE);
	CU_ASSERT_EQUAL(gw_deliver_wake_due(&w, 1000 + GW_DELIVER_WAKE_WAIT_NS, true, true, true),
			GW_DELIVER_WAKE_HELD);
	/* A clock that steps back wakes: early is safe, late is not. */
	CU_ASSERT_EQUAL(gw_deliver_wake_due(&w, 999, true, false, false), GW_DELIVER_WAKE_AGE);
	gw_deliver_wake_done(&w);
	CU_ASSERT_EQUAL(gw_deliver_wake_count(&w), 0);
	CU_ASSERT_FALSE(gw_deliver_wake_due(&w, 1001, false, true, true));
}

/* The age is the oldest's: clients shown later, or the same one shown
 * again, do not restart it; after a wake the next one starts it anew. */
static void test_wake_oldest(void)
{
	struct gw_deliver_wakes w = { 0 };
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 3, 5000));
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 4, 5000 + GW_DELIVER_WAKE_WAIT_NS / 2));
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 3, 5000 + GW_DELIVER_WAKE_WAIT_NS - 1));
	CU_ASSERT_EQUAL(gw_deliver_wake_count(&w), 2);
	CU_ASSERT_TRUE(gw_deliver_wake_due(&w, 5000 + GW_DELIVER_WAKE_WAIT_NS, true, false, false));
	gw_deliver_wake_done(&w);
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 4, 9000000));
	CU_ASSERT_EQUAL(gw_deliver_wake_count(&w), 1);
	CU_ASSERT_EQUAL(w.id[0], 4);
	CU_ASSERT_FALSE(gw_deliver_wake_due(&w, 9000000 + GW_DELIVER_WAKE_WAIT_NS - 1, true, false,
					    false));
	/* At time 0 too: emptiness is the count, not a zero clock. */
	gw_deliver_wake_done(&w);
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 0, 0));
	CU_ASSERT_FALSE(gw_deliver_wake_due(&w, 0, true, false, false));
	CU_ASSERT_TRUE(gw_deliver_wake_due(&w, GW_DELIVER_WAKE_WAIT_NS, true, false, false));
}

/* Every id shown is in the set once, until a full set says so and
 * nothing is dropped: the caller wakes it and adds again. */
static void test_wake_full(void)
{
	struct gw_deliver_wakes w = { 0 };
	for (uint16_t id = 0; id < GW_DELIVER_WAKES_MAX; id++)
		CU_ASSERT_TRUE(gw_deliver_wake_later(&w, (uint16_t)(id * 1000 + 1), id));
	CU_ASSERT_EQUAL(gw_deliver_wake_count(&w), GW_DELIVER_WAKES_MAX);
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 1, 100)); /* there already */
	CU_ASSERT_FALSE(gw_deliver_wake_later(&w, 2, 100));
	CU_ASSERT_EQUAL(gw_deliver_wake_count(&w), GW_DELIVER_WAKES_MAX);
	bool seen[GW_DELIVER_WAKES_MAX] = { false };
	for (unsigned k = 0; k < GW_DELIVER_WAKES_MAX; k++) {
		CU_ASSERT_EQUAL(w.id[k] % 1000, 1);
		unsigned i = w.id[k] / 1000;
		CU_ASSERT_FALSE(seen[i]);
		seen[i] = true;
	}
	CU_ASSERT_EQUAL(w.since_ns, 0);
	gw_deliver_wake_done(&w);
	CU_ASSERT_TRUE(gw_deliver_wake_later(&w, 2, 100));
	CU_ASSERT_EQUAL(w.id[0], 2);
	CU_ASSERT_EQUAL(w.since_ns, 100);
}

static const struct gw_test_case cases[] = {
	{ "zeroed state is open", test_fresh_open },
	{ "holds within block_ns, refuses after", test_hold_then_refuse },
	{ "stays refusing until below half", test_stays_refusing },
	{ "below half opens, clock restarts", test_reopen_restarts_clock },
	{ "drained before the bound: fresh clock", test_drained_before_bound },
	{ "not to half: the first clock runs on", test_partial_drain_keeps_clock },
	{ "block_ns 0 refuses at once", test_block_zero },
	{ "a full moment at now 0 starts the clock", test_now_zero },
	{ "clocks near the top, and stepping back", test_odd_clocks },
	{ "a REJECT holds while its reader moves, within a bound", test_owed_reader_moves },
	{ "a REJECT is given up once its reader stops", test_owed_reader_stopped },
	{ "an empty wake set is never due", test_wake_empty },
	{ "woken with no work, a held frame, a stop, or at age", test_wake_when },
	{ "the age is the oldest client's", test_wake_oldest },
	{ "a full wake set says so, dropping none", test_wake_full },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("deliver", cases);
}
