/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_batch: real channels into fake frames; the batching rule and backpressure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw_batch.h"
#include "gw_test.h"

#define CAP 8940 /* payload of a 9000-byte IP MTU frame */
#define MAXF 2048

struct fake {
	unsigned window; /* frames the lane may still take */
	uint16_t unreachable;
	bool reject_busy; /* the sender cannot be told yet */
	unsigned nframes;
	struct {
		uint16_t node, nrec;
		size_t used;
		uint8_t buf[CAP];
	} f[MAXF];
	unsigned nrej;
	int rej_err[64];
	uint32_t rej_id[64];
	uint64_t subscribers[GW_MAX_NODES / 64]; /* the nodes of topic 77 */
};

static int f_open(void *ctx, uint16_t node, struct gw_batch_frame *bf)
{
	struct fake *k = ctx;
	if (node == k->unreachable)
		return -EHOSTUNREACH;
	if (k->window == 0 || k->nframes == MAXF)
		return -EAGAIN;
	k->window--;
	bf->handle = &k->f[k->nframes];
	bf->payload = k->f[k->nframes].buf;
	bf->cap = CAP;
	k->nframes++;
	return 0;
}

static void f_ship(void *ctx, struct gw_batch_frame *bf)
{
	struct fake *k = ctx;
	unsigned i = (unsigned)(((uint8_t *)bf->payload - k->f[0].buf) / sizeof(k->f[0]));
	k->f[i].node = bf->node;
	k->f[i].nrec = bf->nrec;
	k->f[i].used = bf->used;
}

static int f_reject(void *ctx, struct gw_chan *c, const struct gw_chan_msg *m, int err)
{
	struct fake *k = ctx;
	if (k->reject_busy)
		return -EAGAIN;
	k->rej_err[k->nrej] = err;
	k->rej_id[k->nrej++] = m->msg_id;
	return 0;
}

static void f_fanout(void *ctx, uint32_t topic, uint64_t *nodes)
{
	struct fake *k = ctx;
	if (topic == 77)
		memcpy(nodes, k->subscribers, sizeof(k->subscribers));
}

static const struct gw_batch_ops ops = { .open = f_open, .ship = f_ship, .reject = f_reject,
					 .fanout = f_fanout };
static const struct gw_chan_params params = { .ring_count = 4096, .arena_size = 1 << 20, .msg_max = 8192,
						 .rx_parts = 1 };

struct rig {
	struct gw_chan gw[2], cl[2];
	struct gw_chan *chans[2];
	struct fake *k;
	struct gw_batcher b;
};

static void rig_init(struct rig *r, uint16_t max_rec, uint16_t quantum, unsigned window)
{
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_FATAL(gw_chan_create(&r->gw[i], (uint32_t)(10 + i), 1, &params) == 0);
		CU_ASSERT_FATAL(gw_chan_attach(&r->cl[i], dup(r->gw[i].memfd), dup(r->gw[i].efd_rx),
					       dup(r->gw[i].efd_tx)) == 0);
		r->chans[i] = &r->gw[i];
	}
	r->k = calloc(1, sizeof(*r->k));
	r->k->window = window;
	gw_batch_init(&r->b, &ops, r->k, GW_CLASS_BULK, max_rec, quantum);
}

static void rig_fini(struct rig *r)
{
	for (int i = 0; i < 2; i++) {
		gw_chan_close(&r->cl[i]);
		gw_chan_close(&r->gw[i]);
	}
	free(r->k);
}

/* Send n 225-byte messages numbered from first on client i to node. */
static void send_n(struct rig *r, int i, uint16_t node, uint32_t first, unsigned n)
{
	uint8_t msg[225] = { 0 };
	for (unsigned k = 0; k < n; k++) {
		uint32_t v = first + k;
		memcpy(msg, &v, 4);
		CU_ASSERT_FATAL(gw_chan_send(&r->cl[i], node, 77, msg, sizeof(msg)) == 0);
	}
}

/* Walk every shipped frame in order; check the numbering of one channel's messages. */
static unsigned check_frames(struct rig *r, uint16_t chan, uint32_t *next)
{
	unsigned total = 0;
	for (unsigned i = 0; i < r->k->nframes; i++) {
		size_t off = 0;
		struct gw_rec rec;
		unsigned n = 0;
		while (gw_wire_rec_next(r->k->f[i].buf, r->k->f[i].used, &off, &rec) == 1) {
			n++;
			if (rec.src_chan != chan || rec.dst_ep != 77)
				continue;
			uint32_t v;
			memcpy(&v, rec.data, 4);
			CU_ASSERT_EQUAL(v, *next);
			CU_ASSERT(rec.len == 225 && rec.kind == GW_RK_MSG);
			(*next)++;
			total++;
		}
		CU_ASSERT_EQUAL(n, r->k->f[i].nrec);
	}
	return total;
}

static void test_low_load_one_per_frame(void)
{
	struct rig r;
	rig_init(&r, 0, 256, 1000);
	for (unsigned k = 0; k < 5; k++) {
		send_n(&r, 0, 2, k, 1);
		/* The pass ships at once: no waiting for company. */
		CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 1);
		CU_ASSERT_EQUAL(r.k->nframes, k + 1);
		CU_ASSERT_EQUAL(r.k->f[k].nrec, 1);
	}
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 0);
	CU_ASSERT_EQUAL(r.k->nframes, 5);
	uint32_t next = 0;
	CU_ASSERT_EQUAL(check_frames(&r, 10, &next), 5);
	rig_fini(&r);
}

static void test_backlog_fills_frames(void)
{
	struct rig r;
	rig_init(&r, 0, 4096, 1000);
	send_n(&r, 0, 2, 0, 1000);
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 1000);
	unsigned per = CAP / (GW_REC_HLEN + 225); /* 37 */
	CU_ASSERT_EQUAL(r.k->nframes, (1000 + per - 1) / per);
	for (unsigned i = 0; i + 1 < r.k->nframes; i++)
		CU_ASSERT_EQUAL(r.k->f[i].nrec, per);
	CU_ASSERT_EQUAL(r.k->f[r.k->nframes - 1].nrec, 1000 % per);
	uint32_t next = 0;
	CU_ASSERT_EQUAL(check_frames(&r, 10, &next), 1000);
	CU_ASSERT_EQUAL(r.b.msgs, 1000);
	rig_fini(&r);
}

static void test_batching_off(void)
{
	struct rig r;
	rig_init(&r, 1, 4096, 1000);
	send_n(&r, 0, 2, 0, 300);
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 300);
	CU_ASSERT_EQUAL(r.k->nframes, 300);
	uint32_t next = 0;
	CU_ASSERT_EQUAL(check_frames(&r, 10, &next), 300);
	rig_fini(&r);
}

/* A full window leaves messages in the channel, in order, until it opens. */
static void test_window_backpressure(void)
{
	struct rig r;
	rig_init(&r, 0, 4096, 2);
	send_n(&r, 0, 2, 0, 500);
	unsigned per = CAP / (GW_REC_HLEN + 225);
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 2 * per);
	CU_ASSERT_EQUAL(r.b.full_stops, 1);
	struct gw_chan_msg m[1];
	CU_ASSERT_EQUAL(gw_chan_peek(&r.gw[0], GW_CLASS_BULK, m, 1), 1);
	CU_ASSERT_EQUAL(m[0].msg_id, 2 * per);
	/* The client sees the backpressure once its arena is used up. */
	uint8_t big[8192] = { 0 };
	int rc = 0;
	for (int i = 0; i < 200 && rc == 0; i++)
		rc = gw_chan_send(&r.cl[0], 2, 78, big, sizeof(big));
	CU_ASSERT_EQUAL(rc, -EAGAIN);
	r.k->window = 1000;
	while (gw_batch_pass(&r.b, r.chans, 1))
		;
	uint32_t next = 0;
	CU_ASSERT_EQUAL(check_frames(&r, 10, &next), 500);
	rig_fini(&r);
}

static void test_unreachable_rejected(void)
{
	struct rig r;
	rig_init(&r, 0, 4096, 1000);
	r.k->unreachable = 3;
	send_n(&r, 0, 2, 0, 2);
	send_n(&r, 0, 3, 100, 1); /* msg_id 2 */
	send_n(&r, 0, 2, 2, 2);
	/* While the sender cannot be told, the message waits in its channel. */
	r.k->reject_busy = true;
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 2);
	CU_ASSERT_EQUAL(r.k->nrej, 0);
	r.k->reject_busy = false;
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 3);
	CU_ASSERT_EQUAL(r.k->nrej, 1);
	CU_ASSERT_EQUAL(r.k->rej_err[0], -EHOSTUNREACH);
	CU_ASSERT_EQUAL(r.k->rej_id[0], 2);
	uint32_t next = 0;
	CU_ASSERT_EQUAL(check_frames(&r, 10, &next), 4);
	rig_fini(&r);
}

/* PUB records of frame i, to node: their numbers into got[], how many. */
/* The publications of channel chan (10, 11) in frame i for node, by number. */
static unsigned pubs_of(struct rig *r, unsigned i, uint16_t node, uint32_t chan, uint32_t *got)
{
	size_t off = 0;
	struct gw_rec rec;
	unsigned n = 0;
	while (r->k->f[i].node == node &&
	       gw_wire_rec_next(r->k->f[i].buf, r->k->f[i].used, &off, &rec) == 1)
		if (rec.kind == GW_RK_PUB && rec.dst_ep == 77 && rec.src_chan == chan)
			memcpy(&got[n++], rec.data, 4);
	return n;
}

static unsigned pubs_in(struct rig *r, unsigned i, uint16_t node, uint32_t *got)
{
	return pubs_of(r, i, node, 10, got);
}

/*
 * A publication: one PUB record per subscribing node, in order; a full
 * lane stops it, and the next pass reaches only the nodes it had not (no
 * node gets one twice); a node that cannot be reached is skipped, and a
 * topic without subscribers is not an error.
 */
/*
 * Two channels' publications both stopped part-way by a full lane: each
 * keeps the nodes it has still to reach, and no node gets either twice
 * (the batcher drains the other channel between the two passes).
 */
static void test_publish_interleaved(void)
{
	struct rig r;
	rig_init(&r, 0, 4096, 1);
	r.k->subscribers[0] = 1u << 2 | 1u << 3;
	send_n(&r, 0, GW_CHAN_NODE_TOPIC, 0, 1);
	send_n(&r, 1, GW_CHAN_NODE_TOPIC, 0, 1);
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 2), 0); /* node 2's frame only */
	r.k->window = 10;
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 2), 2);
	for (uint32_t chan = 10; chan <= 11; chan++)
		for (uint16_t node = 2; node <= 3; node++) {
			uint32_t got[8];
			unsigned n = 0;
			for (unsigned i = 0; i < r.k->nframes; i++)
				n += pubs_of(&r, i, node, chan, got + n);
			CU_ASSERT_EQUAL(n, 1);
		}
	CU_ASSERT_EQUAL(r.b.pub_records, 4);
	rig_fini(&r);
}

static void test_publish(void)
{
	struct rig r;
	rig_init(&r, 0, 4096, 1);
	r.k->subscribers[0] = 1u << 2 | 1u << 3 | 1u << 5;
	r.k->unreachable = 5;
	send_n(&r, 0, GW_CHAN_NODE_TOPIC, 0, 3);
	/* A window of one frame: node 2 gets message 0, node 3 waits. */
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 0);
	CU_ASSERT_EQUAL(r.k->nframes, 1);
	r.k->window = 10;
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 3);
	uint32_t got[2][8], n[2] = { 0, 0 };
	for (unsigned i = 0; i < r.k->nframes; i++)
		for (unsigned k = 0; k < 2; k++)
			n[k] += pubs_in(&r, i, (uint16_t)(2 + k), got[k] + n[k]);
	CU_ASSERT(n[0] == 3 && n[1] == 3);
	for (unsigned k = 0; k < 2; k++)
		for (unsigned j = 0; j < n[k] && j < 3; j++)
			CU_ASSERT_EQUAL(got[k][j], j);
	CU_ASSERT_EQUAL(r.b.pub_records, 6);
	CU_ASSERT_EQUAL(r.b.pub_unreachable, 3);
	CU_ASSERT_EQUAL(r.k->nrej, 0);
	/* Nobody subscribes: taken, counted. */
	memset(r.k->subscribers, 0, sizeof(r.k->subscribers));
	send_n(&r, 0, GW_CHAN_NODE_TOPIC, 3, 2);
	unsigned frames = r.k->nframes;
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 2);
	CU_ASSERT_EQUAL(r.k->nframes, frames);
	CU_ASSERT_EQUAL(r.b.pub_unsubscribed, 2);
	rig_fini(&r);
}

/* Two destinations: one open frame each, per-sender order within each. */
static void test_two_destinations(void)
{
	struct rig r;
	rig_init(&r, 0, 4096, 1000);
	for (uint32_t k = 0; k < 100; k++)
		send_n(&r, 0, (uint16_t)(2 + k % 2), k, 1);
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 1), 100);
	CU_ASSERT_EQUAL(r.k->nframes, 4); /* 50 each: 37 + 13 */
	uint32_t want[2] = { 0, 1 };
	for (unsigned i = 0; i < r.k->nframes; i++) {
		size_t off = 0;
		struct gw_rec rec;
		int d = r.k->f[i].node - 2;
		while (gw_wire_rec_next(r.k->f[i].buf, r.k->f[i].used, &off, &rec) == 1) {
			uint32_t v;
			memcpy(&v, rec.data, 4);
			CU_ASSERT_EQUAL(v, want[d]);
			want[d] += 2;
		}
	}
	CU_ASSERT(want[0] == 100 && want[1] == 101);
	rig_fini(&r);
}

/* A window that opens a frame at a time still serves every channel in turn. */
static void test_window_fairness(void)
{
	struct rig r;
	rig_init(&r, 1, 4096, 0);
	send_n(&r, 0, 2, 0, 50);
	send_n(&r, 1, 2, 0, 50);
	unsigned got[2] = { 0, 0 };
	for (int pass = 0; pass < 40; pass++) {
		r.k->window = 1; /* one frame's room per pass, as a busy lane gives */
		unsigned before = r.k->nframes;
		gw_batch_pass(&r.b, r.chans, 2);
		for (unsigned f = before; f < r.k->nframes; f++) {
			size_t off = 0;
			struct gw_rec rec;
			while (gw_wire_rec_next(r.k->f[f].buf, r.k->f[f].used, &off, &rec) == 1)
				got[rec.src_chan - 10]++;
		}
	}
	/* Alternating, not all to the first channel. */
	CU_ASSERT_EQUAL(got[0], 20);
	CU_ASSERT_EQUAL(got[1], 20);
	rig_fini(&r);
}

/* The quantum keeps one busy client from starving another. */
static void test_quantum_fairness(void)
{
	struct rig r;
	rig_init(&r, 0, 10, 1000);
	send_n(&r, 0, 2, 0, 100);
	send_n(&r, 1, 2, 0, 100);
	CU_ASSERT_EQUAL(gw_batch_pass(&r.b, r.chans, 2), 20);
	CU_ASSERT_EQUAL(r.k->nframes, 1); /* both channels share the frame to node 2 */
	while (gw_batch_pass(&r.b, r.chans, 2))
		;
	uint32_t n10 = 0, n11 = 0;
	CU_ASSERT_EQUAL(check_frames(&r, 10, &n10), 100);
	CU_ASSERT_EQUAL(check_frames(&r, 11, &n11), 100);
	rig_fini(&r);
}

static const struct gw_test_case cases[] = {
	{ "low load: one message per frame, no wait", test_low_load_one_per_frame },
	{ "backlog: full frames", test_backlog_fills_frames },
	{ "batching off: one per frame", test_batching_off },
	{ "full window holds the channel", test_window_backpressure },
	{ "unreachable node rejected", test_unreachable_rejected },
	{ "a publication: one record per subscribing node, never two", test_publish },
	{ "two destinations keep order", test_two_destinations },
	{ "a window opening a frame at a time serves every channel", test_window_fairness },
	{ "two publications stopped part-way: none twice to a node", test_publish_interleaved },
	{ "quantum fairness", test_quantum_fairness },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("batch", cases);
}
