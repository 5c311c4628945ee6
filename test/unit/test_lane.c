/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_lane: one case per rule of the state machine, then a simulation that
 * runs a tx lane and an rx lane over a fake lossy link carrying real
 * gw_wire frames, checking every record arrives once and in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_lane.h"
#include "gw_test.h"
#include "gw_wire.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Unit cases use small integers as frame handles and log their release. */
#define H(x) ((void *)(uintptr_t)(x))

struct relog {
	unsigned n;
	uintptr_t id[64];
};

static void relog_release(void *frame, void *ctx)
{
	struct relog *l = ctx;

	if (l->n < ARRAY_SIZE(l->id))
		l->id[l->n] = (uintptr_t)frame;
	l->n++;
}

static struct gw_ack ack_of(uint32_t epoch, uint32_t cum)
{
	return (struct gw_ack){ .acked_epoch = epoch, .cum = cum };
}

/* Say seq is held in an ack built for its cum. */
static void ack_hold(struct gw_ack *a, uint32_t seq)
{
	uint32_t i = seq - a->cum - 1;

	a->sack[i / 8] |= (uint8_t)(1u << (i % 8));
	if (a->nbits < (i / 8 + 1) * 8)
		a->nbits = (uint16_t)((i / 8 + 1) * 8);
}

static struct gw_hdr data_hdr(uint32_t epoch, uint32_t seq, uint32_t base)
{
	return (struct gw_hdr){ .type = GW_FT_DATA, .epoch = epoch, .seq = seq, .base = base };
}

#define EPOCH 7

static void test_init_rejects(void)
{
	struct gw_lane_tx tx;
	struct gw_lane_rx rx;
	struct relog l = { 0 };

	CU_ASSERT_EQUAL(gw_lane_tx_init(&tx, 0, EPOCH, 100, 1000, relog_release, &l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_tx_init(&tx, 3, EPOCH, 100, 1000, relog_release, &l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_tx_init(&tx, 2 * GW_LANE_WIN_MAX, EPOCH, 100, 1000, relog_release,
					&l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_tx_init(&tx, 4, EPOCH, 0, 1000, relog_release, &l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_tx_init(&tx, 4, EPOCH, 1001, 1000, relog_release, &l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_tx_init(&tx, 4, EPOCH, 100, 1000, NULL, &l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_rx_init(&rx, 0, relog_release, &l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_rx_init(&rx, 6, relog_release, &l), -EINVAL);
	CU_ASSERT_EQUAL(gw_lane_rx_init(&rx, 2 * GW_LANE_WIN_MAX, relog_release, &l), -EINVAL);

	for (uint32_t win = 1; win <= GW_LANE_WIN_MAX; win *= 2) {
		CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, win, EPOCH, 100, 100, relog_release, &l),
				      0);
		CU_ASSERT(gw_lane_tx_open(&tx));
		CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), UINT64_MAX);
		gw_lane_tx_fini(&tx);
		CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, win, relog_release, &l), 0);
		CU_ASSERT_PTR_NULL(gw_lane_rx_head(&rx));
		gw_lane_rx_fini(&rx);
	}
	CU_ASSERT_EQUAL(l.n, 0);
}

static void test_window_closes(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 4, EPOCH, 100, 1000, relog_release, &l), 0);
	for (uint32_t i = 0; i < 4; i++) {
		CU_ASSERT(gw_lane_tx_open(&tx));
		CU_ASSERT_EQUAL(gw_lane_tx_push(&tx, H(i + 1), 1000, 0), i);
	}
	CU_ASSERT(!gw_lane_tx_open(&tx));
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 4);
	CU_ASSERT_EQUAL(tx.frames, 4);

	struct gw_ack a = ack_of(EPOCH, 1);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), 1);
	CU_ASSERT(gw_lane_tx_open(&tx));
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 3);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL(l.n, 4);
}

static void test_ack_releases(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 8, EPOCH, 100, 1000, relog_release, &l), 0);
	for (unsigned i = 0; i < 5; i++)
		gw_lane_tx_push(&tx, H(10 + i), 1000, 0);

	struct gw_ack a = ack_of(EPOCH, 3);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 50), 3);
	CU_ASSERT_EQUAL_FATAL(l.n, 3);
	CU_ASSERT_EQUAL(l.id[0], 10);
	CU_ASSERT_EQUAL(l.id[1], 11);
	CU_ASSERT_EQUAL(l.id[2], 12);
	CU_ASSERT_EQUAL(tx.una, 3);
	CU_ASSERT_EQUAL(tx.acks, 1);
	CU_ASSERT_EQUAL(tx.srtt_ns, 50);

	/* The same ack again is valid and releases nothing. */
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 60), 0);
	CU_ASSERT_EQUAL(l.n, 3);
	CU_ASSERT_EQUAL(tx.acks, 2);

	a = ack_of(EPOCH, 5);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 70), 2);
	CU_ASSERT_EQUAL_FATAL(l.n, 5);
	CU_ASSERT_EQUAL(l.id[3], 13);
	CU_ASSERT_EQUAL(l.id[4], 14);
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 0);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), UINT64_MAX);
	CU_ASSERT_EQUAL(tx.bad_acks, 0);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL(l.n, 5);
}

static void test_bad_acks(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 8, EPOCH, 100, 1000, relog_release, &l), 0);
	for (unsigned i = 0; i < 3; i++)
		gw_lane_tx_push(&tx, H(i + 1), 1000, 0);

	struct gw_ack a = ack_of(EPOCH + 1, 1);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), -EINVAL);
	a = ack_of(EPOCH, 4); /* past nxt */
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), -EINVAL);
	a = ack_of(EPOCH, 2);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), 2);
	a = ack_of(EPOCH, 1); /* before una: stale */
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), -EINVAL);
	a = ack_of(EPOCH, 2 + 0x80000000u); /* half the sequence space away */
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), -EINVAL);

	CU_ASSERT_EQUAL(tx.bad_acks, 4);
	CU_ASSERT_EQUAL(tx.acks, 1);
	CU_ASSERT_EQUAL(l.n, 2);
	CU_ASSERT_EQUAL(tx.una, 2);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL(l.n, 3);
}

static void test_rtt_rto(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };
	struct gw_ack a;
	void *out[4];

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 8, EPOCH, 100, 1000, relog_release, &l), 0);
	gw_lane_tx_push(&tx, H(1), 1000, 0); /* seq 0: no sample yet, rto_min */
	CU_ASSERT_EQUAL(tx.slots[0].rto_ns, 100);
	a = ack_of(EPOCH, 1);
	gw_lane_tx_ack(&tx, &a, 40);
	CU_ASSERT_EQUAL(tx.srtt_ns, 40); /* the first sample sets it */

	gw_lane_tx_push(&tx, H(2), 1000, 100); /* seq 1: 2 * 40 is under rto_min */
	CU_ASSERT_EQUAL(tx.slots[1].rto_ns, 100);
	a = ack_of(EPOCH, 2);
	gw_lane_tx_ack(&tx, &a, 400);
	CU_ASSERT_EQUAL(tx.srtt_ns, 40 - 40 / 8 + 300 / 8);

	gw_lane_tx_push(&tx, H(3), 1000, 400); /* seq 2 */
	CU_ASSERT_EQUAL(tx.slots[2].rto_ns, 2 * 72);
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 544, out, 4), 1);
	a = ack_of(EPOCH, 3);
	gw_lane_tx_ack(&tx, &a, 600);
	CU_ASSERT_EQUAL(tx.srtt_ns, 72); /* Karn: sent twice, no sample */

	gw_lane_tx_push(&tx, H(4), 1000, 600); /* seq 3 */
	a = ack_of(EPOCH, 4);
	gw_lane_tx_ack(&tx, &a, 5600);
	CU_ASSERT_EQUAL(tx.srtt_ns, 72 - 72 / 8 + 5000 / 8);
	gw_lane_tx_push(&tx, H(5), 1000, 5600); /* seq 4: 2 * 688 is capped */
	CU_ASSERT_EQUAL(tx.slots[4].rto_ns, 1000);

	/* Of several frames acked at once, the freshest sample counts. */
	gw_lane_tx_push(&tx, H(6), 1000, 6000);
	gw_lane_tx_push(&tx, H(7), 1000, 6100);
	a = ack_of(EPOCH, 7);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 6200), 3);
	CU_ASSERT_EQUAL(tx.srtt_ns, 688 - 688 / 8 + 100 / 8);
	/* srtt's samples, and only they, in the operators' histogram:
	 * 40, 300, 5000, 100 ns, all in the first bucket (up to 16 us). */
	CU_ASSERT_EQUAL(tx.rtt_hist[0], 4);
	CU_ASSERT_EQUAL(tx.rtt_sum_ns, 40 + 300 + 5000 + 100);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL(l.n, 7);
}

static void test_rtt_buckets(void)
{
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket(0), 0);
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket(16000), 0); /* bounds are inclusive */
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket(16001), 1);
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket(32000), 1);
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket(1000000), 6); /* 1 ms: up to 1.024 ms */
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket(16000ull << 14), 14);
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket((16000ull << 14) + 1), GW_LANE_RTT_BUCKETS - 1);
	CU_ASSERT_EQUAL(gw_lane_rtt_bucket(UINT64_MAX), GW_LANE_RTT_BUCKETS - 1);
}

static void test_timeout_backoff(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };
	void *out[4];

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 4, EPOCH, 100, 350, relog_release, &l), 0);
	gw_lane_tx_push(&tx, H(1), 1000, 0);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 100);
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 99, out, 4), 0);
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_due(&tx, 100, out, 4), 1);
	CU_ASSERT_PTR_EQUAL(out[0], H(1));
	CU_ASSERT_EQUAL(tx.retrans, 1);
	CU_ASSERT_EQUAL(tx.slots[0].nsent, 2);
	CU_ASSERT_EQUAL(tx.slots[0].sent_ns, 100);
	CU_ASSERT_EQUAL(tx.slots[0].rto_ns, 200);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 300);
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 299, out, 4), 0);
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 300, out, 4), 1);
	CU_ASSERT_EQUAL(tx.slots[0].rto_ns, 350); /* doubled, then capped */
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 650);
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 650, out, 4), 1);
	CU_ASSERT_EQUAL(tx.slots[0].rto_ns, 350);
	CU_ASSERT_EQUAL(tx.retrans, 3);

	/* A full out array leaves the rest due now. */
	gw_lane_tx_push(&tx, H(2), 1000, 650);
	gw_lane_tx_push(&tx, H(3), 1000, 650);
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_due(&tx, 750, out, 1), 1);
	CU_ASSERT_PTR_EQUAL(out[0], H(2));
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 750);
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_due(&tx, 750, out, 4), 1);
	CU_ASSERT_PTR_EQUAL(out[0], H(3));
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 950); /* both doubled to 200 */

	struct gw_ack a = ack_of(EPOCH, 3);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 800), 3);
	CU_ASSERT_EQUAL(tx.srtt_ns, 0); /* every frame was sent twice or more */
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), UINT64_MAX);
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 100000, out, 4), 0);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL(l.n, 3);
}

static void test_sack_hole(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };
	struct gw_ack a;
	void *out[8];

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 8, EPOCH, 100, 10000, relog_release, &l), 0);
	for (unsigned i = 0; i < 4; i++)
		gw_lane_tx_push(&tx, H(100 + i), 1000, 0);

	/* 0 delivered, 3 held: 1 and 2 are holes. */
	a = ack_of(EPOCH, 1);
	ack_hold(&a, 3);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 40), 1);
	CU_ASSERT_EQUAL(tx.srtt_ns, 40);
	CU_ASSERT(tx.slots[3].sacked);
	CU_ASSERT(!tx.slots[1].sacked && !tx.slots[2].sacked);
	/* The held frame is off the path: the congestion window counts 2. */
	CU_ASSERT_EQUAL(tx.inflight_bytes - tx.sacked_bytes, 2000);

	/* Guard: srtt + srtt / 4 = 50 since the holes were sent. */
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 40, out, 8), 0);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 50);
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_due(&tx, 50, out, 8), 2);
	CU_ASSERT_PTR_EQUAL(out[0], H(101));
	CU_ASSERT_PTR_EQUAL(out[1], H(102));
	CU_ASSERT_EQUAL(tx.retrans, 2);
	CU_ASSERT_EQUAL(tx.slots[1].rto_ns, 100); /* a hole is no reason to back off */
	CU_ASSERT_EQUAL(tx.slots[1].nsent, 2);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 150);

	/* The same ack again (no progress): no second copy before the timeout. */
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 60), 0);
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 149, out, 8), 0);

	/* A newly held frame is progress: the holes go again. */
	gw_lane_tx_push(&tx, H(104), 1000, 60);
	ack_hold(&a, 4);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 130), 0);
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_due(&tx, 130, out, 8), 2);
	CU_ASSERT_PTR_EQUAL(out[0], H(101));
	CU_ASSERT_PTR_EQUAL(out[1], H(102));
	CU_ASSERT_EQUAL(tx.retrans, 4);

	a = ack_of(EPOCH, 3);
	ack_hold(&a, 4);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 150), 2);
	CU_ASSERT_EQUAL(tx.srtt_ns, 40); /* both were sent three times */
	CU_ASSERT_EQUAL(tx.sacked_bytes, 2000); /* 3 and 4 */

	/* Held frames go again only after rto_max, and not as held. */
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 9999, out, 8), 0);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), 10000);
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_due(&tx, 10000, out, 8), 1);
	CU_ASSERT_PTR_EQUAL(out[0], H(103));
	CU_ASSERT(!tx.slots[3].sacked);
	CU_ASSERT(tx.slots[4].sacked);
	CU_ASSERT_EQUAL(tx.sacked_bytes, 1000); /* sent again: on the path */
	CU_ASSERT_EQUAL(tx.slots[3].rto_ns, 100);
	CU_ASSERT_EQUAL(tx.retrans, 5);

	/* No sample from frames that were held or sent twice. */
	a = ack_of(EPOCH, 5);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10050), 2);
	CU_ASSERT_EQUAL(tx.srtt_ns, 40);
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 0);
	CU_ASSERT_EQUAL(tx.sacked_bytes, 0);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL(l.n, 5);
}

static void test_sack_past_nxt(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 8, EPOCH, 100, 1000, relog_release, &l), 0);
	for (unsigned i = 0; i < 3; i++)
		gw_lane_tx_push(&tx, H(i + 1), 1000, 0);

	struct gw_ack a = ack_of(EPOCH, 0);
	memset(a.sack, 0xff, sizeof(a.sack));
	a.nbits = 1000; /* more than a bitmap holds */
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), 0);
	CU_ASSERT(!tx.slots[0].sacked); /* cum itself is the awaited gap */
	CU_ASSERT(tx.slots[1].sacked && tx.slots[2].sacked);
	for (unsigned i = 3; i < 8; i++)
		CU_ASSERT(!tx.slots[i].sacked);
	CU_ASSERT_EQUAL(tx.acks, 1);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL(l.n, 3);
}

static void test_tx_fini_releases(void)
{
	struct gw_lane_tx tx;
	struct relog l = { 0 };

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 4, EPOCH, 100, 1000, relog_release, &l), 0);
	for (unsigned i = 0; i < 3; i++)
		gw_lane_tx_push(&tx, H(i + 1), 1000, 0);
	struct gw_ack a = ack_of(EPOCH, 1);
	gw_lane_tx_ack(&tx, &a, 10);
	gw_lane_tx_fini(&tx);
	CU_ASSERT_EQUAL_FATAL(l.n, 3);
	CU_ASSERT_EQUAL(l.id[0], 1);
	CU_ASSERT_EQUAL(l.id[1], 2);
	CU_ASSERT_EQUAL(l.id[2], 3);
	CU_ASSERT_PTR_NULL(tx.slots);
}

/* A peer went down: frames are given up oldest first, and a receiver that
 * comes back skips them (even one it held) and takes the next frame. */
static void test_tx_abandon(void)
{
	struct gw_lane_tx tx;
	struct gw_lane_rx rx;
	struct relog l = { 0 }, rl = { 0 };

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 4, EPOCH, 100, 1000, relog_release, &l), 0);
	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 4, relog_release, &rl), 0);
	CU_ASSERT_PTR_NULL(gw_lane_tx_oldest(&tx));
	gw_lane_tx_abandon(&tx); /* nothing in flight: nothing happens */
	CU_ASSERT_EQUAL(tx.una, 0);
	for (unsigned i = 0; i < 3; i++)
		gw_lane_tx_push(&tx, H(i + 1), 1000, 0);
	/* The receiver holds seq 1 only, waiting for 0. */
	struct gw_hdr h = data_hdr(EPOCH, 1, 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(11)), GW_RX_STORED);

	CU_ASSERT_PTR_EQUAL(gw_lane_tx_oldest(&tx), H(1));
	gw_lane_tx_abandon(&tx);
	CU_ASSERT_PTR_EQUAL(gw_lane_tx_oldest(&tx), H(2));
	gw_lane_tx_abandon(&tx);
	CU_ASSERT_EQUAL(tx.una, 2);
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 1);
	CU_ASSERT_EQUAL_FATAL(l.n, 2);
	CU_ASSERT_EQUAL(l.id[0], 1);
	CU_ASSERT_EQUAL(l.id[1], 2);
	/* The last frame is not due any earlier for it. */
	void *due[4];
	CU_ASSERT_EQUAL(gw_lane_tx_due(&tx, 50, due, 4), 0);
	gw_lane_tx_abandon(&tx);
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 0);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&tx), UINT64_MAX);

	/* The next frame carries base 3: the held seq 1 is dropped, not delivered. */
	gw_lane_tx_push(&tx, H(4), 1000, 10);
	h = data_hdr(EPOCH, 3, tx.una);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(14)), GW_RX_STORED);
	CU_ASSERT_PTR_EQUAL(gw_lane_rx_head(&rx), H(14));
	CU_ASSERT_EQUAL_FATAL(rl.n, 1);
	CU_ASSERT_EQUAL(rl.id[0], 11);
	struct gw_ack a;
	gw_lane_rx_pop(&rx);
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 20), 1);
	CU_ASSERT_EQUAL(l.n, 4);
	gw_lane_tx_fini(&tx);
	gw_lane_rx_fini(&rx);
}

static void test_rx_dup(void)
{
	struct gw_lane_rx rx;
	struct relog l = { 0 };
	struct gw_hdr h = data_hdr(5, 0, 0);

	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 4, relog_release, &l), 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(1)), GW_RX_STORED);
	CU_ASSERT(rx.ack_due);
	CU_ASSERT_EQUAL(rx.resets, 0); /* the first frame is no reset */
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(2)), GW_RX_DUP); /* held */
	CU_ASSERT_EQUAL(rx.dups, 1);
	CU_ASSERT_PTR_EQUAL(gw_lane_rx_head(&rx), H(1));

	rx.at.off = 2;
	gw_lane_rx_pop(&rx);
	CU_ASSERT_EQUAL(l.n, 1);
	CU_ASSERT_EQUAL(rx.next, 1);
	CU_ASSERT_EQUAL(rx.at.off, 0);
	CU_ASSERT_PTR_NULL(gw_lane_rx_head(&rx));

	struct gw_ack a;
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT(!rx.ack_due);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(3)), GW_RX_DUP); /* delivered */
	CU_ASSERT(rx.ack_due); /* the sender missed an ack: tell it again */
	h.seq = 2;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(4)), GW_RX_STORED);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(5)), GW_RX_DUP);
	CU_ASSERT_EQUAL(rx.dups, 3);
	CU_ASSERT_EQUAL(rx.frames, 5);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL_FATAL(l.n, 2);
	CU_ASSERT_EQUAL(l.id[1], 4);
}

/* A parallel port: the copy of a transmission that another member brought
 * first is redundant (no ack owed); what a retransmission brings again is a
 * duplicate, on either member. */
static void test_rx_copies(void)
{
	struct gw_lane_rx rx;
	struct relog l = { 0 };
	struct gw_hdr h = data_hdr(5, 0, 0);
	struct gw_ack a;

	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 4, relog_release, &l), 0);
	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_track_copies(&rx), 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(1), 0), GW_RX_STORED);
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(2), 1), GW_RX_REDUNDANT); /* held */
	CU_ASSERT(!rx.ack_due);
	gw_lane_rx_pop(&rx);
	gw_lane_rx_ack(&rx, &a);
	/* Seq 1 came on member 1 only (member 0 lost it); then its copy. */
	h.seq = 1;
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(3), 1), GW_RX_STORED);
	gw_lane_rx_pop(&rx);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(4), 0), GW_RX_REDUNDANT); /* delivered */
	/* Before its CRC: a copy of what the lane has, from a member that had
	 * not brought it; not one it brought, nor one it does not have. */
	h.seq = 2;
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(11), 0), GW_RX_STORED);
	CU_ASSERT(!gw_lane_rx_redundant(&rx, 5, 2, 0));
	CU_ASSERT(!gw_lane_rx_redundant(&rx, 4, 2, 1)); /* another epoch */
	CU_ASSERT(!gw_lane_rx_redundant(&rx, 5, 3, 1)); /* not here */
	CU_ASSERT(gw_lane_rx_redundant(&rx, 5, 2, 1));
	CU_ASSERT(!gw_lane_rx_redundant(&rx, 5, 2, 1)); /* its second copy: a duplicate */
	CU_ASSERT(gw_lane_rx_redundant(&rx, 5, 1, 1) == false); /* member 1 brought seq 1 */
	CU_ASSERT_EQUAL(rx.redundant, 3);
	CU_ASSERT_PTR_EQUAL(gw_lane_rx_head(&rx), H(11));
	gw_lane_rx_pop(&rx);
	/* Seq 0 again: the sender missed our ack and sent it once more. */
	h.seq = 0;
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(5), 0), GW_RX_DUP);
	CU_ASSERT(rx.ack_due);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(6), 1), GW_RX_DUP);
	CU_ASSERT_EQUAL(rx.redundant, 3);
	CU_ASSERT_EQUAL(rx.dups, 2);
	/* The sender restarted: the same seqs are new frames. */
	h = data_hdr(6, 0, 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(7), 1), GW_RX_STORED);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(8), 0), GW_RX_REDUNDANT);
	/* Without tracking, every copy is a duplicate. */
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 4, relog_release, &l), 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(9), 0), GW_RX_STORED);
	CU_ASSERT_EQUAL(gw_lane_rx_accept_on(&rx, &h, H(10), 1), GW_RX_DUP);
	gw_lane_rx_fini(&rx);
}

static void test_rx_beyond(void)
{
	struct gw_lane_rx rx;
	struct relog l = { 0 };
	struct gw_hdr h = data_hdr(5, 4, 0);
	struct gw_ack a;

	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 4, relog_release, &l), 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(1)), GW_RX_BEYOND);
	CU_ASSERT_EQUAL(rx.out_of_window, 1);
	CU_ASSERT(!rx.ack_due);
	h.seq = 3;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(2)), GW_RX_STORED);
	CU_ASSERT_PTR_NULL(gw_lane_rx_head(&rx));
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.acked_epoch, 5);
	CU_ASSERT_EQUAL(a.cum, 0);
	CU_ASSERT_EQUAL(a.nbits, 8);
	CU_ASSERT_EQUAL(a.sack[0], 1u << 2);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL(l.n, 1);
}

/* A frame past the highest seen says the ones between were lost: one gap,
 * whatever fills it later, and none for frames in order or sent again. */
static void test_rx_gaps(void)
{
	struct gw_lane_rx rx;
	struct relog l = { 0 };
	struct gw_hdr h = data_hdr(5, 0, 0);
	struct gw_ack a;

	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 8, relog_release, &l), 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(1)), GW_RX_STORED);
	CU_ASSERT_EQUAL(rx.gaps, 0);
	h.seq = 3; /* 1 and 2 lost */
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(2)), GW_RX_STORED);
	CU_ASSERT_EQUAL(rx.gaps, 1);
	h.seq = 1;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(3)), GW_RX_STORED);
	h.seq = 2;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(4)), GW_RX_STORED);
	h.seq = 4;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(5)), GW_RX_STORED);
	h.seq = 3; /* again */
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(6)), GW_RX_DUP);
	CU_ASSERT_EQUAL(rx.gaps, 1);
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.grant, 0);
	/* A restarted sender starts at its base: no gap before it. */
	h = data_hdr(6, 100, 100);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(7)), GW_RX_STORED);
	CU_ASSERT_EQUAL(rx.gaps, 1);
	gw_lane_rx_fini(&rx);
}

static void test_rx_ack_bitmap(void)
{
	struct gw_lane_rx rx;
	struct relog l = { 0 };
	struct gw_hdr h = data_hdr(9, 0, 1000);
	struct gw_ack a;

	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, GW_LANE_WIN_MAX, relog_release, &l), 0);
	h.seq = 1001;
	gw_lane_rx_accept(&rx, &h, H(1));
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.cum, 1000);
	CU_ASSERT_EQUAL(a.nbits, 8);
	CU_ASSERT_EQUAL(a.sack[0], 1);

	h.seq = 1009;
	gw_lane_rx_accept(&rx, &h, H(2));
	h.seq = 1000 + GW_LANE_WIN_MAX - 1; /* the last seq of the window */
	gw_lane_rx_accept(&rx, &h, H(3));
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.nbits, GW_SACK_BITS);
	CU_ASSERT_EQUAL(a.sack[0], 1);
	CU_ASSERT_EQUAL(a.sack[1], 1);
	CU_ASSERT_EQUAL(a.sack[GW_SACK_BITS / 8 - 1], 1u << 6);
	CU_ASSERT(!rx.ack_due);

	/* Once the head arrives and goes, bits shift to the new cum. */
	h.seq = 1000;
	gw_lane_rx_accept(&rx, &h, H(4));
	gw_lane_rx_pop(&rx);
	gw_lane_rx_pop(&rx);
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.cum, 1002);
	CU_ASSERT_EQUAL(a.sack[0], 1u << 6);
	CU_ASSERT_EQUAL(a.nbits, GW_SACK_BITS);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL(l.n, 4);

	/* Window 1 never holds anything past next. */
	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 1, relog_release, &l), 0);
	h.seq = 1000;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(5)), GW_RX_STORED);
	h.seq = 1001;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(6)), GW_RX_BEYOND);
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.cum, 1000);
	CU_ASSERT_EQUAL(a.nbits, 0);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL(l.n, 5);
}

static void test_rx_epoch_reset(void)
{
	struct gw_lane_rx rx;
	struct relog l = { 0 };
	struct gw_hdr h = data_hdr(1, 1, 0);

	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 8, relog_release, &l), 0);
	gw_lane_rx_accept(&rx, &h, H(1));
	h.seq = 2;
	gw_lane_rx_accept(&rx, &h, H(2));
	rx.at.off = 1;

	/* The sender restarted: what it sent before is gone with it. */
	h = data_hdr(2, 0, 0);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(3)), GW_RX_STORED);
	CU_ASSERT_EQUAL(rx.resets, 1);
	CU_ASSERT_EQUAL(rx.epoch, 2);
	CU_ASSERT_EQUAL(rx.next, 0);
	CU_ASSERT_EQUAL(rx.at.off, 0);
	CU_ASSERT_EQUAL(l.n, 2);
	CU_ASSERT_PTR_EQUAL(gw_lane_rx_head(&rx), H(3));
	h.seq = 1;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(4)), GW_RX_STORED);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL(l.n, 4);
}

static void test_rx_base_jump(void)
{
	struct gw_lane_rx rx;
	struct relog l = { 0 };
	struct gw_hdr h = data_hdr(1, 0, 0);

	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 8, relog_release, &l), 0);
	gw_lane_rx_accept(&rx, &h, H(1));
	h.seq = 2;
	gw_lane_rx_accept(&rx, &h, H(2));
	h.seq = 4;
	gw_lane_rx_accept(&rx, &h, H(3));
	rx.at.off = 1;

	/* The sender saw 0..2 acked: skip them, keep 4. */
	h = data_hdr(1, 5, 3);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(4)), GW_RX_STORED);
	CU_ASSERT_EQUAL(rx.next, 3);
	CU_ASSERT_EQUAL(rx.at.off, 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 2);
	CU_ASSERT_EQUAL(l.id[0], 1);
	CU_ASSERT_EQUAL(l.id[1], 2);
	CU_ASSERT_EQUAL(rx.resets, 0);

	/* A stale base (a retransmission) changes nothing. */
	h = data_hdr(1, 3, 1);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(5)), GW_RX_STORED);
	CU_ASSERT_EQUAL(rx.next, 3);
	CU_ASSERT_PTR_EQUAL(gw_lane_rx_head(&rx), H(5));

	/* A jump past the whole window drops everything held. */
	h = data_hdr(1, 1000, 1000);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(6)), GW_RX_STORED);
	CU_ASSERT_EQUAL(rx.next, 1000);
	CU_ASSERT_EQUAL(l.n, 5);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL(l.n, 6);
}

/* Both halves across 2^32: the tx starts there, the rx follows its base. */
static void test_wrap(void)
{
	struct gw_lane_tx tx;
	struct gw_lane_rx rx;
	struct relog lt = { 0 }, lr = { 0 };
	struct gw_hdr h;
	struct gw_ack a;
	void *out[8];

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 8, EPOCH, 100, 1000, relog_release, &lt), 0);
	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 8, relog_release, &lr), 0);
	tx.una = tx.nxt = 0xfffffffc;
	for (unsigned i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(gw_lane_tx_push(&tx, H(i + 1), 1000, 0), 0xfffffffc + i);
	CU_ASSERT_EQUAL(tx.nxt, 2);
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 6);

	/* 0 and 0xfffffffe arrive first. */
	h = data_hdr(EPOCH, 0, 0xfffffffc);
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(5)), GW_RX_STORED);
	h.seq = 0xfffffffe;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(3)), GW_RX_STORED);
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.cum, 0xfffffffc);
	CU_ASSERT_EQUAL(a.sack[0], (1u << 1) | (1u << 3));
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 10), 0);
	CU_ASSERT(tx.slots[0xfffffffe & 7].sacked && tx.slots[0].sacked);
	CU_ASSERT(!tx.slots[0xffffffff & 7].sacked);

	/* 0xfffffffc, 0xfffffffd and 0xffffffff are holes: they go again. */
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_due(&tx, 100, out, 8), 4);
	CU_ASSERT_PTR_EQUAL(out[0], H(1));
	CU_ASSERT_PTR_EQUAL(out[1], H(2));
	CU_ASSERT_PTR_EQUAL(out[2], H(4));
	CU_ASSERT_PTR_EQUAL(out[3], H(6)); /* 1 is above every held frame: timeout */

	h.seq = 0xfffffffc;
	gw_lane_rx_accept(&rx, &h, H(1));
	h.seq = 0xfffffffd;
	gw_lane_rx_accept(&rx, &h, H(2));
	h.seq = 0xfffffffb;
	CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(99)), GW_RX_DUP);
	h.seq = 0xffffffff;
	gw_lane_rx_accept(&rx, &h, H(4));
	while (gw_lane_rx_head(&rx))
		gw_lane_rx_pop(&rx);
	CU_ASSERT_EQUAL(rx.next, 1);
	gw_lane_rx_ack(&rx, &a);
	CU_ASSERT_EQUAL(a.nbits, 0);
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 120), 5);
	CU_ASSERT_EQUAL(tx.una, 1);
	a.cum = 0xffffffff; /* stale, from before the wrap */
	CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, 130), -EINVAL);
	gw_lane_tx_fini(&tx);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL(lt.n, 6);
	CU_ASSERT_EQUAL(lr.n, 5);

	/* A perfect link across the wrap, acking every other frame. */
	lt.n = lr.n = 0;
	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx, 8, EPOCH, 100, 1000, relog_release, &lt), 0);
	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx, 8, relog_release, &lr), 0);
	tx.una = tx.nxt = 0xffffff00;
	for (unsigned i = 0; i < 512; i++) {
		CU_ASSERT_FATAL(gw_lane_tx_open(&tx));
		h = data_hdr(EPOCH, tx.nxt, tx.una);
		gw_lane_tx_push(&tx, H(i + 1), 1000, i);
		CU_ASSERT_EQUAL(gw_lane_rx_accept(&rx, &h, H(i + 1)), GW_RX_STORED);
		CU_ASSERT_PTR_EQUAL(gw_lane_rx_head(&rx), H(i + 1));
		gw_lane_rx_pop(&rx);
		if (i % 2) {
			gw_lane_rx_ack(&rx, &a);
			CU_ASSERT_EQUAL(gw_lane_tx_ack(&tx, &a, i), 2);
		}
	}
	CU_ASSERT_EQUAL(tx.una, 0x100);
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&tx), 0);
	CU_ASSERT_EQUAL(tx.retrans + tx.bad_acks + rx.dups, 0);
	gw_lane_tx_fini(&tx);
	gw_lane_rx_fini(&rx);
	CU_ASSERT_EQUAL(lt.n, 512);
	CU_ASSERT_EQUAL(lr.n, 512);
}

/*
 * Simulation. A fake clock, one tx lane, one rx lane and a link that loses,
 * duplicates, delays and corrupts gw_wire frames in each direction. DATA
 * frames carry records whose payload is (frame seq, record index).
 */

#define SIM_DELAY_NS 5000     /* one-way propagation */
#define SIM_SER_NS 200        /* one frame on the wire */
#define SIM_REORDER_NS 30000  /* extra delay of a reordered frame, at most */
#define SIM_RTO_MIN_NS 100000
#define SIM_RTO_MAX_NS 10000000
#define SIM_TIME_LIMIT_NS 60000000000ull
#define SIM_PORT_TX 7000
#define SIM_PORT_RX 7001
#define SIM_RX_EPOCH 0xacc

/* Per-direction impairments, in parts per million. */
struct sim_dir {
	unsigned loss, dup, reorder, corrupt;
};

enum {
	SIM_CLEAN = 1 << 0,   /* no retransmission, duplicate or stale ack at all */
	SIM_RETRANS = 1 << 1, /* retrans > 0 */
	SIM_DUPS = 1 << 2,    /* rx dups > 0 */
	SIM_CRC = 1 << 3,     /* corrupted frames seen */
	SIM_ACKLOSS = 1 << 4, /* data all arrives once: every retransmission is a dup */
	SIM_STALE = 1 << 5,   /* reordered acks: some arrive stale */
	SIM_BEYOND = 1 << 6,  /* rx window smaller than tx window */
	SIM_NO_RETRANS = 1 << 7, /* parallel: no retransmission, no duplicate */
	SIM_EVERY_COPY = 1 << 8, /* parallel: one redundant copy per frame */
};

struct sim_scenario {
	uint32_t tx_win, rx_win;
	unsigned nframes;
	struct sim_dir data, ack;
	uint64_t dest_ns; /* time the destination takes per record; 0: instant */
	unsigned expect;
	/* A parallel port: every frame, both ways, also on a second member
	 * whose data direction is data2; member 0 is cut (loses everything)
	 * from cut_ns for cut_len_ns. */
	bool parallel;
	struct sim_dir data2;
	uint64_t cut_ns, cut_len_ns;
};

enum { SIM_DATA, SIM_ACK };

struct sim_pkt {
	uint64_t at, order; /* delivery time, then send order: a stable heap */
	int dir;
	unsigned member;
	bool corrupt;
	size_t len;
	const uint8_t *payload; /* once parsed and held by the rx lane */
	uint16_t nrec;
	uint32_t plen;
	uint8_t buf[];
};

/* A frame the tx lane owns: the bytes to send again. */
struct sim_txf {
	size_t len;
	uint8_t buf[];
};

struct sim {
	const struct sim_scenario *sc;
	uint64_t rng, now, order;
	struct sim_pkt **q; /* min-heap on (at, order) */
	size_t qn, qcap;
	uint64_t free_at[2][2]; /* when each member's wire in each direction is next idle */
	struct gw_addr addr_tx, addr_rx;
	struct gw_lane_tx tx;
	struct gw_lane_rx rx;
	/* sender */
	uint32_t first;
	unsigned pushed, tx_live, records_sent;
	/* receiver */
	uint32_t expect_seq;
	unsigned rx_live, records_got, frames_got;
	uint64_t dest_free_at;
	/* link */
	unsigned lost, duped, delayed, corrupted, crc_rejects, cut;
	unsigned errors;
};

/* xorshift64*: small, seeded, reproducible. */
static uint64_t sim_rand(struct sim *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545f4914f6cdd1dull;
}

static bool sim_chance(struct sim *s, unsigned ppm)
{
	return ppm && sim_rand(s) % 1000000 < ppm;
}

static uint64_t sim_below(struct sim *s, uint64_t n)
{
	return sim_rand(s) % n;
}

/* Record the first failures and make the run stop, rather than flood CUnit. */
#define SIM_CHECK(s, cond)                                                              \
	do {                                                                            \
		if (!(cond) && (s)->errors++ < 5)                                       \
			fprintf(stderr, "sim: %s:%d: %s failed at %llu ns\n", __FILE__, \
				__LINE__, #cond, (unsigned long long)(s)->now);         \
	} while (0)

static bool sim_pkt_before(const struct sim_pkt *a, const struct sim_pkt *b)
{
	return a->at != b->at ? a->at < b->at : a->order < b->order;
}

static void sim_q_push(struct sim *s, struct sim_pkt *p)
{
	if (s->qn == s->qcap) {
		s->qcap = s->qcap ? 2 * s->qcap : 256;
		s->q = realloc(s->q, s->qcap * sizeof(*s->q));
		CU_ASSERT_PTR_NOT_NULL_FATAL(s->q);
	}
	size_t i = s->qn++;
	while (i && sim_pkt_before(p, s->q[(i - 1) / 2])) {
		s->q[i] = s->q[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->q[i] = p;
}

static struct sim_pkt *sim_q_pop(struct sim *s)
{
	struct sim_pkt *top = s->q[0], *last = s->q[--s->qn];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= s->qn)
			break;
		if (c + 1 < s->qn && sim_pkt_before(s->q[c + 1], s->q[c]))
			c++;
		if (!sim_pkt_before(s->q[c], last))
			break;
		s->q[i] = s->q[c];
		i = c;
	}
	if (s->qn)
		s->q[i] = last;
	return top;
}

/* Flip one bit the CRC covers and parse checks nothing else against. */
static void sim_corrupt(struct sim *s, struct sim_pkt *p)
{
	const size_t gh = GW_OUTER_HLEN;
	/* Skip magic, version and type (gh + 0..3) and the length (gh + 24..27). */
	size_t off = gh + 4 + sim_below(s, p->len - gh - 8);

	if (off >= gh + 24)
		off += 4;
	p->buf[off] ^= (uint8_t)(1u << sim_below(s, 8));
	p->corrupt = true;
	s->corrupted++;
}

static void sim_send_on(struct sim *s, unsigned member, int dir, const uint8_t *buf, size_t len)
{
	const struct sim_scenario *sc = s->sc;
	const struct sim_dir *d = dir == SIM_ACK ? &sc->ack : member ? &sc->data2 : &sc->data;
	uint64_t *free_at = &s->free_at[member][dir];

	*free_at = (*free_at > s->now ? *free_at : s->now) + SIM_SER_NS;
	if (member == 0 && s->now >= sc->cut_ns && s->now - sc->cut_ns < sc->cut_len_ns) {
		s->cut++;
		return;
	}
	if (sim_chance(s, d->loss)) {
		s->lost++;
		return;
	}
	unsigned copies = 1;
	if (sim_chance(s, d->dup)) {
		copies++;
		s->duped++;
	}
	for (unsigned c = 0; c < copies; c++) {
		struct sim_pkt *p = malloc(sizeof(*p) + len);

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		memset(p, 0, sizeof(*p));
		memcpy(p->buf, buf, len);
		p->len = len;
		p->dir = dir;
		p->member = member;
		p->order = s->order++;
		p->at = *free_at + SIM_DELAY_NS;
		if (c)
			p->at += sim_below(s, 2 * SIM_DELAY_NS);
		if (sim_chance(s, d->reorder)) {
			p->at += 1 + sim_below(s, SIM_REORDER_NS);
			s->delayed++;
		}
		if (sim_chance(s, d->corrupt))
			sim_corrupt(s, p);
		sim_q_push(s, p);
	}
}

/* Onto the link: each member of a parallel port carries its own copy. */
static void sim_send(struct sim *s, int dir, const uint8_t *buf, size_t len)
{
	for (unsigned m = 0; m < (s->sc->parallel ? 2u : 1u); m++)
		sim_send_on(s, m, dir, buf, len);
}

static void sim_txf_release(void *frame, void *ctx)
{
	struct sim *s = ctx;

	free(frame);
	s->tx_live--;
}

static void sim_pkt_release(void *frame, void *ctx)
{
	struct sim *s = ctx;

	free(frame);
	s->rx_live--;
}

/* Build the next DATA frame: 1 to 4 records of (seq, index). */
static void sim_push(struct sim *s)
{
	uint8_t buf[1024];
	uint8_t *payload = buf + GW_FRAME_MIN;
	size_t used = 0;
	uint32_t seq = s->tx.nxt;
	unsigned nrec = 1 + (unsigned)sim_below(s, 4);

	for (unsigned i = 0; i < nrec; i++) {
		uint32_t data[2] = { seq, i };
		struct gw_rec r = {
			.kind = GW_RK_MSG,
			.len = sizeof(data),
			.dst_ep = 1,
			.src_chan = 2,
			.msg_id = s->records_sent++,
			.data = (const uint8_t *)data,
		};
		SIM_CHECK(s, gw_wire_rec_put(payload, sizeof(buf) - GW_FRAME_MIN, &used, &r) == 0);
	}
	struct gw_hdr h = {
		.type = GW_FT_DATA,
		.src_node = 1,
		.dst_node = 2,
		.nrec = (uint16_t)nrec,
		.epoch = s->tx.epoch,
		.seq = seq,
		.base = s->tx.una,
		.len = (uint32_t)used,
	};
	size_t len = gw_wire_seal(buf, &s->addr_tx, &s->addr_rx, &h);
	struct sim_txf *f = malloc(sizeof(*f) + len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	f->len = len;
	memcpy(f->buf, buf, len);
	s->tx_live++;
	SIM_CHECK(s, gw_lane_tx_push(&s->tx, f, 1000, s->now) == seq);
	s->pushed++;
	sim_send(s, SIM_DATA, f->buf, f->len);
}

/* Hand records of head frames to the destination, as far as it takes them. */
static void sim_deliver(struct sim *s)
{
	struct sim_pkt *p;

	while ((p = gw_lane_rx_head(&s->rx))) {
		size_t off = 0;
		struct gw_rec r;
		unsigned i = 0;
		int rc;

		while ((rc = gw_wire_rec_next(p->payload, p->plen, &off, &r)) == 1) {
			uint32_t data[2];

			if (i++ < s->rx.at.off)
				continue;
			if (s->sc->dest_ns) {
				if (s->dest_free_at > s->now)
					return;
				s->dest_free_at = s->now + s->sc->dest_ns;
			}
			SIM_CHECK(s, r.len == sizeof(data));
			memcpy(data, r.data, sizeof(data));
			SIM_CHECK(s, data[0] == s->expect_seq && data[0] == s->rx.next);
			SIM_CHECK(s, data[1] == s->rx.at.off);
			s->rx.at.off++;
			s->records_got++;
		}
		SIM_CHECK(s, rc == 0 && i == p->nrec);
		gw_lane_rx_pop(&s->rx);
		s->expect_seq++;
		s->frames_got++;
	}
}

static void sim_send_ack(struct sim *s)
{
	uint8_t buf[GW_FRAME_MIN + 64];
	struct gw_ack a;

	if (!s->rx.ack_due)
		return;
	gw_lane_rx_ack(&s->rx, &a);
	struct gw_hdr h = {
		.type = GW_FT_ACK,
		.src_node = 2,
		.dst_node = 1,
		.epoch = SIM_RX_EPOCH,
		.len = (uint32_t)gw_wire_ack_put(buf + GW_FRAME_MIN, &a),
	};
	sim_send(s, SIM_ACK, buf, gw_wire_seal(buf, &s->addr_rx, &s->addr_tx, &h));
}

static void sim_arrive(struct sim *s, struct sim_pkt *p)
{
	struct gw_hdr h;
	const uint8_t *payload;
	int rc = gw_wire_parse(p->buf, p->len, p->dir == SIM_DATA ? SIM_PORT_RX : SIM_PORT_TX,
			       &h, &payload, NULL);

	if (p->corrupt) {
		SIM_CHECK(s, rc == GW_EWIRE_CRC);
		s->crc_rejects += rc == GW_EWIRE_CRC;
		free(p);
		return;
	}
	SIM_CHECK(s, rc == 0);
	if (rc) {
		free(p);
		return;
	}
	if (p->dir == SIM_ACK) {
		struct gw_ack a;

		SIM_CHECK(s, h.type == GW_FT_ACK);
		rc = gw_wire_ack_get(payload, h.len, &a);
		SIM_CHECK(s, rc == 0);
		if (!rc)
			gw_lane_tx_ack(&s->tx, &a, s->now); /* a stale one is counted, no more */
		free(p);
		return;
	}
	SIM_CHECK(s, h.type == GW_FT_DATA);
	p->payload = payload;
	p->plen = h.len;
	p->nrec = h.nrec;
	if (gw_lane_rx_accept_on(&s->rx, &h, p, p->member) == GW_RX_STORED)
		s->rx_live++;
	else
		free(p);
}

static void sim_retransmit(struct sim *s)
{
	void *out[32];
	unsigned n;

	do {
		n = gw_lane_tx_due(&s->tx, s->now, out, ARRAY_SIZE(out));
		for (unsigned i = 0; i < n; i++) {
			struct sim_txf *f = out[i];

			sim_send(s, SIM_DATA, f->buf, f->len);
		}
	} while (n == ARRAY_SIZE(out));
}

static uint64_t sim_next_event(const struct sim *s)
{
	uint64_t t = gw_lane_tx_next_deadline(&s->tx);

	if (s->qn && s->q[0]->at < t)
		t = s->q[0]->at;
	if (gw_lane_rx_head(&s->rx) && s->dest_free_at > s->now && s->dest_free_at < t)
		t = s->dest_free_at;
	return t;
}

static void sim_run(const struct sim_scenario *sc, uint64_t seed)
{
	struct sim s = {
		.sc = sc,
		.rng = seed * 0x9e3779b97f4a7c15ull + 1,
		.addr_tx = { .mac = { 2, 0, 0, 0, 0, 1 }, .ip = 0x0a000001, .port = SIM_PORT_TX },
		.addr_rx = { .mac = { 2, 0, 0, 0, 0, 2 }, .ip = 0x0a000002, .port = SIM_PORT_RX },
	};

	CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&s.tx, sc->tx_win, 0xe0000000u | (uint32_t)seed,
					      SIM_RTO_MIN_NS, SIM_RTO_MAX_NS, sim_txf_release, &s),
			      0);
	CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&s.rx, sc->rx_win, sim_pkt_release, &s), 0);
	if (sc->parallel)
		CU_ASSERT_EQUAL_FATAL(gw_lane_rx_track_copies(&s.rx), 0);
	/* Odd seeds cross 2^32 half way through. */
	if (seed % 2)
		s.tx.una = s.tx.nxt = 0u - sc->nframes / 2;
	s.first = s.expect_seq = s.tx.nxt;

	while (!s.errors) {
		while (s.pushed < sc->nframes && gw_lane_tx_open(&s.tx))
			sim_push(&s);
		if (s.pushed == sc->nframes && !gw_lane_tx_inflight(&s.tx))
			break;

		uint64_t t = sim_next_event(&s);

		SIM_CHECK(&s, t <= SIM_TIME_LIMIT_NS); /* else stalled */
		if (s.errors)
			break;
		if (t > s.now)
			s.now = t;
		if (s.qn && s.q[0]->at <= s.now)
			sim_arrive(&s, sim_q_pop(&s));
		sim_deliver(&s);
		sim_send_ack(&s);
		sim_retransmit(&s);
	}
	/* Let what is still on the wire arrive, answering nothing, to balance the counters. */
	while (s.qn) {
		struct sim_pkt *p = sim_q_pop(&s);

		s.now = p->at > s.now ? p->at : s.now;
		sim_arrive(&s, p);
	}

	CU_ASSERT_EQUAL(s.errors, 0);
	CU_ASSERT_EQUAL(s.frames_got, sc->nframes);
	CU_ASSERT_EQUAL(s.records_got, s.records_sent);
	CU_ASSERT_EQUAL(s.expect_seq, s.first + sc->nframes);
	CU_ASSERT_EQUAL(gw_lane_tx_inflight(&s.tx), 0);
	CU_ASSERT_EQUAL(s.tx_live, 0);
	CU_ASSERT_EQUAL(s.tx.frames, sc->nframes);
	CU_ASSERT_EQUAL(gw_lane_tx_next_deadline(&s.tx), UINT64_MAX);
	CU_ASSERT_EQUAL(s.rx.resets, 0);

	unsigned e = sc->expect;
	if (e & SIM_CLEAN)
		CU_ASSERT_EQUAL(s.tx.retrans + s.tx.bad_acks + s.rx.dups + s.rx.out_of_window, 0);
	if (e & SIM_RETRANS)
		CU_ASSERT(s.tx.retrans > 0);
	if (e & SIM_DUPS)
		CU_ASSERT(s.rx.dups > 0);
	if (e & SIM_CRC)
		CU_ASSERT(s.crc_rejects > 0);
	if (e & SIM_ACKLOSS) {
		CU_ASSERT_EQUAL(s.rx.dups, s.tx.retrans);
		CU_ASSERT_EQUAL(s.rx.frames, s.tx.frames + s.tx.retrans);
	}
	if (e & SIM_STALE)
		CU_ASSERT(s.tx.bad_acks > 0);
	if (e & SIM_NO_RETRANS)
		CU_ASSERT_EQUAL(s.tx.retrans + s.rx.dups, 0);
	if (e & SIM_EVERY_COPY)
		CU_ASSERT_EQUAL(s.rx.redundant, s.tx.frames);
	if (sc->cut_len_ns)
		CU_ASSERT(s.cut > 0);
	/* CU_ASSERT is a block: braces keep the else attached. */
	if (e & SIM_BEYOND) {
		CU_ASSERT(s.rx.out_of_window > 0);
	} else {
		CU_ASSERT_EQUAL(s.rx.out_of_window, 0);
	}

	printf("\n    seed %llu: %u frames %u records, %.1f ms; lost %u cut %u dup %u delayed %u "
	       "corrupt %u (crc %u); retrans %llu bad_acks %llu rx dups %llu redundant %llu "
	       "beyond %llu",
	       (unsigned long long)seed, s.frames_got, s.records_got, s.now / 1e6, s.lost, s.cut,
	       s.duped, s.delayed, s.corrupted, s.crc_rejects, (unsigned long long)s.tx.retrans,
	       (unsigned long long)s.tx.bad_acks, (unsigned long long)s.rx.dups,
	       (unsigned long long)s.rx.redundant, (unsigned long long)s.rx.out_of_window);

	gw_lane_tx_fini(&s.tx);
	gw_lane_rx_fini(&s.rx);
	CU_ASSERT_EQUAL(s.rx_live, 0);
	free(s.q);
}

static void sim_scenario(const struct sim_scenario *sc)
{
	static const uint64_t seeds[] = { 1, 2, 3, 0xdeadbeef };

	for (unsigned i = 0; i < ARRAY_SIZE(seeds); i++)
		sim_run(sc, seeds[i]);
	printf("\n    ");
}

#define SIM_CASE(fn, ...)                                             \
	static void fn(void)                                          \
	{                                                             \
		static const struct sim_scenario sc = { __VA_ARGS__ }; \
		sim_scenario(&sc);                                    \
	}

#define LOSSY(ppm) { .loss = (ppm) }

SIM_CASE(test_sim_clean, 64, 64, 3000, .expect = SIM_CLEAN)
SIM_CASE(test_sim_loss1, 64, 64, 3000, LOSSY(10000), LOSSY(10000), .expect = SIM_RETRANS)
SIM_CASE(test_sim_loss5, 64, 64, 3000, LOSSY(50000), LOSSY(50000), .expect = SIM_RETRANS)
SIM_CASE(test_sim_loss20, 64, 64, 3000, LOSSY(200000), LOSSY(200000),
	 .expect = SIM_RETRANS | SIM_DUPS)
SIM_CASE(test_sim_ack_loss, 64, 64, 3000, .ack = LOSSY(500000), .expect = SIM_ACKLOSS)
SIM_CASE(test_sim_dup, 64, 64, 3000, { .dup = 100000 }, { .dup = 100000 },
	 .expect = SIM_DUPS)
SIM_CASE(test_sim_reorder, 64, 64, 3000, { .reorder = 200000 }, { .reorder = 200000 },
	 .expect = SIM_STALE)
SIM_CASE(test_sim_corrupt, 64, 64, 3000, { .corrupt = 50000 }, { .corrupt = 50000 },
	 .expect = SIM_CRC | SIM_RETRANS)
SIM_CASE(test_sim_all, 64, 64, 3000, { 50000, 50000, 100000, 20000 },
	 { 50000, 50000, 100000, 20000 }, .expect = SIM_RETRANS | SIM_DUPS | SIM_CRC)
SIM_CASE(test_sim_win1, 1, 1, 1000, { 50000, 50000, 100000, 20000 },
	 { 50000, 50000, 100000, 20000 }, .expect = SIM_RETRANS | SIM_DUPS | SIM_CRC)
SIM_CASE(test_sim_win256, 256, 256, 5000, { 50000, 50000, 100000, 20000 },
	 { 50000, 50000, 100000, 20000 }, .expect = SIM_RETRANS | SIM_DUPS | SIM_CRC)
SIM_CASE(test_sim_small_rx_win, 64, 16, 3000, LOSSY(10000), LOSSY(10000),
	 .expect = SIM_RETRANS | SIM_BEYOND)
SIM_CASE(test_sim_slow_dest, 256, 256, 3000, LOSSY(10000), LOSSY(10000), .dest_ns = 1000,
	 .expect = SIM_RETRANS)
/* A parallel port: the far end keeps the first copy; losing one member's
 * frames, all of them for a while or a fifth of them, costs nothing. */
SIM_CASE(test_sim_parallel, 64, 64, 3000, .parallel = true, .expect = SIM_NO_RETRANS | SIM_EVERY_COPY)
SIM_CASE(test_sim_parallel_cut, 64, 64, 3000, .parallel = true, .cut_ns = 100000,
	 .cut_len_ns = 300000, .expect = SIM_NO_RETRANS)
SIM_CASE(test_sim_parallel_lossy, 64, 64, 3000, .parallel = true, .data2 = LOSSY(200000),
	 .expect = SIM_NO_RETRANS)
SIM_CASE(test_sim_parallel_both, 64, 64, 3000, LOSSY(50000), .parallel = true,
	 .data2 = { 50000, 50000, 100000, 20000 }, .expect = SIM_RETRANS)

static const struct gw_test_case cases[] = {
	{ "init rejects bad arguments", test_init_rejects },
	{ "full window closes", test_window_closes },
	{ "ack releases exactly the acked frames", test_ack_releases },
	{ "bad epoch and out-of-range acks", test_bad_acks },
	{ "rtt sampling (Karn) and rto", test_rtt_rto },
	{ "rtt histogram buckets", test_rtt_buckets },
	{ "timeout retransmits with doubling rto", test_timeout_backoff },
	{ "sack-revealed holes retransmitted once per progress", test_sack_hole },
	{ "sack bits past nxt ignored", test_sack_past_nxt },
	{ "tx fini releases in-flight frames", test_tx_fini_releases },
	{ "tx abandon: peer lost, receiver skips", test_tx_abandon },
	{ "rx duplicate suppression", test_rx_dup },
	{ "rx beyond window", test_rx_beyond },
	{ "rx gaps", test_rx_gaps },
	{ "rx copies on parallel members", test_rx_copies },
	{ "rx ack bitmap", test_rx_ack_bitmap },
	{ "rx epoch reset", test_rx_epoch_reset },
	{ "rx base jump", test_rx_base_jump },
	{ "wrap-around at 2^32", test_wrap },
	{ "sim: clean link", test_sim_clean },
	{ "sim: 1% loss", test_sim_loss1 },
	{ "sim: 5% loss", test_sim_loss5 },
	{ "sim: 20% loss", test_sim_loss20 },
	{ "sim: 50% ack loss only", test_sim_ack_loss },
	{ "sim: duplication", test_sim_dup },
	{ "sim: reordering", test_sim_reorder },
	{ "sim: corruption", test_sim_corrupt },
	{ "sim: everything", test_sim_all },
	{ "sim: window 1", test_sim_win1 },
	{ "sim: window 256", test_sim_win256 },
	{ "sim: rx window smaller than tx", test_sim_small_rx_win },
	{ "sim: slow destination", test_sim_slow_dest },
	{ "sim: parallel members", test_sim_parallel },
	{ "sim: parallel, member 0 cut", test_sim_parallel_cut },
	{ "sim: parallel, member 1 loses 20%", test_sim_parallel_lossy },
	{ "sim: parallel, both lossy", test_sim_parallel_both },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("lane", cases);
}
