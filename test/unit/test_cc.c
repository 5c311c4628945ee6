/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_cc: one case per rule of the controller, then a simulated bottleneck:
 * N real lanes (gw_lane tx and rx, under the controller) sending full
 * frames through one drop-tail queue of a given rate and depth (a switch
 * port), acked over a fixed delay, in simulated time. The figures asked
 * of a LAN (goodput, drops, retransmissions, fairness) are checked on it,
 * and so is the sim itself: without the controller it must overflow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_cc.h"
#include "gw_lane.h"
#include "gw_test.h"

#define MSS 9014u
#define US 1000ull
#define MS (1000 * US)

/* An ack as a lane gives it: with the lane's smoothed round trip. */
static void ack(struct gw_cc *cc, uint64_t acked, uint64_t rtt_ns, uint64_t now)
{
	gw_cc_on_ack(cc, acked, rtt_ns, rtt_ns ? gw_cc_srtt(cc->srtt_ns, rtt_ns) : cc->srtt_ns, now);
}

static struct gw_cc fresh(void)
{
	struct gw_cc_params p;
	struct gw_cc cc;

	gw_cc_params_default(&p, MSS);
	p.target_ns = 200 * US;
	p.fs_range_ns = 0; /* the rules one at a time; flow scaling has its own case */
	gw_cc_init(&cc, &p);
	return cc;
}

static void test_off_always_sends(void)
{
	struct gw_cc_params p;
	struct gw_cc cc;

	gw_cc_params_default(&p, MSS);
	p.on = false;
	gw_cc_init(&cc, &p);
	ack(&cc, MSS, 100 * US, 1 * MS);
	gw_cc_on_send(&cc, MSS, 1 * MS);
	CU_ASSERT(gw_cc_may_send(&cc, 1u << 30, 1 * MS, true));
	gw_cc_on_loss(&cc, 2 * MS);
	CU_ASSERT_EQUAL(cc.cwnd, p.cwnd_init);
	CU_ASSERT_EQUAL(cc.cuts_loss + cc.paced + cc.cwnd_limited, 0);
}

static void test_window_limits(void)
{
	struct gw_cc cc = fresh();

	CU_ASSERT(gw_cc_may_send(&cc, 0, 0, true));
	CU_ASSERT(gw_cc_may_send(&cc, cc.cwnd - 1, 0, true));
	CU_ASSERT(!gw_cc_may_send(&cc, cc.cwnd, 0, true));
	CU_ASSERT_EQUAL(cc.cwnd_limited, 1);
	/* Under one frame of window, one frame may still be in flight. */
	cc.cwnd = 1000;
	CU_ASSERT(gw_cc_may_send(&cc, 0, 0, false));
	CU_ASSERT(!gw_cc_may_send(&cc, MSS, 0, false));
}

static void test_slow_start_then_additive(void)
{
	struct gw_cc cc = fresh();
	uint64_t w = cc.cwnd;

	ack(&cc, MSS, 100 * US, 1 * MS);
	CU_ASSERT_EQUAL(cc.cwnd, w + MSS); /* slow start: the bytes acked */
	CU_ASSERT_EQUAL(cc.base_ns, 100 * US);
	/* 100 us over base + target: cut by 0.8 * 100 / 400, and slow start ends. */
	w = cc.cwnd;
	ack(&cc, MSS, 400 * US, 2 * MS);
	CU_ASSERT_EQUAL(cc.cwnd, w - w * 20 / 100);
	CU_ASSERT(!cc.slow_start);
	CU_ASSERT_EQUAL(cc.cuts_delay, 1);
	/* Within the target: one mss per window of acks. */
	w = cc.cwnd;
	ack(&cc, w, 150 * US, 3 * MS);
	CU_ASSERT(cc.cwnd >= w + MSS - 1 && cc.cwnd <= w + MSS);
	/* A grant below the window limits it. */
	gw_cc_set_grant(&cc, 2 * MSS);
	CU_ASSERT(gw_cc_may_send(&cc, MSS, 4 * MS, true));
	CU_ASSERT(!gw_cc_may_send(&cc, 2 * MSS, 4 * MS, true));
	gw_cc_set_grant(&cc, UINT64_MAX);
	CU_ASSERT(gw_cc_may_send(&cc, 2 * MSS, 4 * MS, true));
}

static void test_budget(void)
{
	struct gw_cc_budget b;

	gw_cc_budget_init(&b, MSS, 4 * MSS, MSS, 64 * MSS);
	gw_cc_budget_delivered(&b, 4 * MSS); /* slow start: doubles */
	CU_ASSERT_EQUAL(b.bytes, 8 * MSS);
	CU_ASSERT_EQUAL(gw_cc_budget_grant(&b, 4), 2 * MSS);
	CU_ASSERT_EQUAL(gw_cc_budget_grant(&b, 2), 4 * MSS);
	/* One sender (or none): its own control is enough, no grant. */
	CU_ASSERT_EQUAL(gw_cc_budget_grant(&b, 1), UINT64_MAX);
	CU_ASSERT_EQUAL(gw_cc_budget_grant(&b, 0), UINT64_MAX);
	gw_cc_budget_loss(&b);
	CU_ASSERT_EQUAL(b.bytes, 4 * MSS);
	gw_cc_budget_loss(&b); /* the same overflow: nothing delivered since */
	CU_ASSERT_EQUAL(b.bytes, 4 * MSS);
	CU_ASSERT_EQUAL(b.cuts, 1);
	gw_cc_budget_delivered(&b, 4 * MSS); /* a budget delivered: one frame more */
	CU_ASSERT_EQUAL(b.bytes, 5 * MSS);
	gw_cc_budget_loss(&b); /* 4 frames since the cut: still the same overflow */
	CU_ASSERT_EQUAL(b.bytes, 5 * MSS);
	gw_cc_budget_delivered(&b, MSS);
	gw_cc_budget_loss(&b);
	CU_ASSERT_EQUAL(b.bytes, 5 * MSS / 2);
	CU_ASSERT_EQUAL(b.cuts, 2);
	gw_cc_budget_init(&b, MSS, MSS, MSS, 64 * MSS);
	gw_cc_budget_loss(&b);
	CU_ASSERT_EQUAL(b.bytes, MSS); /* the floor */
}

/* A lane with a small window aims at more delay than one with a large one. */
static void test_flow_scaling(void)
{
	struct gw_cc_params p;
	struct gw_cc small, large;

	gw_cc_params_default(&p, MSS);
	gw_cc_init(&small, &p);
	gw_cc_init(&large, &p);
	small.slow_start = large.slow_start = false;
	small.cwnd = MSS / 2;
	large.cwnd = 100 * MSS;
	/* base 100 us; then 100 us + target + 500 us */
	ack(&small, 0, 100 * US, 1 * MS); /* a sample, nothing released */
	ack(&large, 0, 100 * US, 1 * MS);
	uint64_t rtt = 100 * US + p.target_ns + 500 * US;
	for (uint64_t t = 5 * MS; t < 10 * MS; t += 100 * US) {
		ack(&small, MSS / 64, rtt, t);
		ack(&large, MSS / 64, rtt, t);
	}
	CU_ASSERT_EQUAL(small.cuts_delay, 0);
	CU_ASSERT(small.cwnd > MSS / 2);
	CU_ASSERT(large.cuts_delay >= 1);
	CU_ASSERT(large.cwnd < 100 * MSS);
}

static void test_one_cut_per_round_trip(void)
{
	struct gw_cc cc = fresh();

	ack(&cc, MSS, 100 * US, 1 * MS);
	uint64_t w = cc.cwnd;
	gw_cc_on_loss(&cc, 2 * MS);
	CU_ASSERT_EQUAL(cc.cwnd, w / 2);
	gw_cc_on_loss(&cc, 2 * MS + 50 * US); /* within srtt: the same episode */
	ack(&cc, MSS, 10 * MS, 2 * MS + 60 * US);
	CU_ASSERT_EQUAL(cc.cwnd, w / 2);
	CU_ASSERT_EQUAL(cc.cuts_loss, 1);
	CU_ASSERT_EQUAL(cc.cuts_delay, 0);
	/* A huge delay cuts at most half. */
	w = cc.cwnd;
	ack(&cc, MSS, 100 * MS, 50 * MS);
	CU_ASSERT_EQUAL(cc.cwnd, w - w * 50 / 100);
	/* Never below cwnd_min. */
	for (unsigned i = 0; i < 40; i++)
		gw_cc_on_loss(&cc, (60 + 200 * i) * MS);
	CU_ASSERT_EQUAL(cc.cwnd, cc.p.cwnd_min);
}

/* Beside a sender that answers loss alone, a loss cuts as CUBIC's does. */
static void test_competing_loss(void)
{
	struct gw_cc cc = fresh();

	ack(&cc, MSS, 100 * US, 1 * MS);
	uint64_t w = cc.cwnd;
	cc.competing = true;
	gw_cc_on_loss(&cc, 2 * MS);
	CU_ASSERT_EQUAL(cc.cwnd, w - w * 30 / 100);
	cc.competing = false;
	w = cc.cwnd;
	gw_cc_on_loss(&cc, 20 * MS);
	CU_ASSERT_EQUAL(cc.cwnd, w - w * 50 / 100);
}

static void test_pacing(void)
{
	struct gw_cc cc = fresh();

	/* No round trip yet: no pacing. */
	gw_cc_on_send(&cc, MSS, 0);
	CU_ASSERT(gw_cc_may_send(&cc, MSS, 0, true));
	ack(&cc, MSS, 100 * US, 1 * MS);
	CU_ASSERT_EQUAL(gw_cc_rate(&cc), cc.cwnd * 5 / 4 * 10000);
	gw_cc_on_send(&cc, MSS, 1 * MS);
	uint64_t gap = (uint64_t)MSS * 100 * US * 4 / (cc.cwnd * 5);
	CU_ASSERT(!gw_cc_may_send(&cc, MSS, 1 * MS + gap - 1, true));
	CU_ASSERT_EQUAL(cc.paced, 1);
	CU_ASSERT(gw_cc_may_send(&cc, MSS, 1 * MS + gap, true));
	/* Held by pacing, then asked late (the lcore was away): in the pass
	 * that finds it late it catches up on what it was due... */
	uint64_t t = 1 * MS + 3 * gap;
	gw_cc_on_send(&cc, MSS, t);
	CU_ASSERT_EQUAL(cc.next_ns, 1 * MS + 2 * gap);
	gw_cc_on_send(&cc, MSS, t);
	CU_ASSERT_EQUAL(cc.next_ns, 1 * MS + 3 * gap);
	gw_cc_on_send(&cc, MSS, t);
	CU_ASSERT_EQUAL(cc.next_ns, 1 * MS + 4 * gap); /* caught up */
	CU_ASSERT(!gw_cc_may_send(&cc, MSS, t, true));
	/* ...up to a round trip of it... */
	gw_cc_on_send(&cc, MSS, 5 * MS);
	CU_ASSERT_EQUAL(cc.next_ns, 5 * MS - 100 * US + gap);
	/* ...and not after: it ran out of messages in that pass, and the next
	 * ones, later, go from then (a 64-frame window once went back to back
	 * after 10 ms idle). */
	gw_cc_on_send(&cc, MSS, 6 * MS);
	CU_ASSERT_EQUAL(cc.next_ns, 6 * MS + gap);
	/* Held by its window: nothing saved, the next gap counts from now (a
	 * quarter of a round trip of credit there made the simulated port
	 * drop 1.2 % of 8 senders' frames, not 0.16 %). */
	CU_ASSERT(!gw_cc_may_send(&cc, MSS, 6 * MS + gap - 1, true));
	CU_ASSERT(!gw_cc_may_send(&cc, cc.cwnd, 7 * MS, true));
	gw_cc_on_send(&cc, MSS, 8 * MS);
	CU_ASSERT_EQUAL(cc.next_ns, 8 * MS + gap);
}

/* A large window cuts on the standing round trip (the least of about half
 * a round trip), not on one late ack among prompt ones: on a CPU shared
 * by lcores an ack is heard late whenever its lcore was away. */
static void test_standing(void)
{
	struct gw_cc cc = fresh();

	cc.slow_start = false;
	cc.cwnd = 100 * MSS;
	uint64_t t = 1 * MS;
	for (unsigned i = 0; i < 8; i++, t += 20 * US)
		ack(&cc, MSS, 100 * US, t);
	ack(&cc, MSS, 2 * MS, t); /* late, among prompt ones */
	CU_ASSERT_EQUAL(cc.cuts_delay, 0);
	/* A queue: every sample high, for longer than half a round trip. */
	for (unsigned i = 0; i < 40; i++, t += 100 * US)
		ack(&cc, MSS, 2 * MS, t);
	CU_ASSERT(cc.cuts_delay >= 1);
	CU_ASSERT(cc.cwnd < 100 * MSS);
	/* A small window cuts on its own sample: it hears too few. */
	struct gw_cc small = fresh();
	small.slow_start = false;
	small.cwnd = 4 * MSS;
	ack(&small, MSS, 100 * US, 1 * MS);
	ack(&small, MSS, 2 * MS, 1 * MS + 20 * US);
	CU_ASSERT_EQUAL(small.cuts_delay, 1);
}

static void test_base_window(void)
{
	struct gw_cc cc = fresh();
	uint64_t win = cc.p.base_window_ns;

	ack(&cc, MSS, 100 * US, 1);
	ack(&cc, MSS, 300 * US, win / 2);
	CU_ASSERT_EQUAL(cc.base_ns, 100 * US);
	ack(&cc, MSS, 300 * US, win + 1); /* a new window: the last one's min stays */
	CU_ASSERT_EQUAL(cc.base_ns, 100 * US);
	ack(&cc, MSS, 300 * US, 2 * win + 2); /* two windows on: the path changed */
	CU_ASSERT_EQUAL(cc.base_ns, 300 * US);
}

/* --- the simulated bottleneck --- */

#define SIM_SENDERS_MAX 16
#define SIM_QMAX 4096

struct sim_frame {
	unsigned sender;
	uint32_t seq, base, bytes;
	uint64_t at; /* when it leaves the queue it is in */
};

struct sim_fifo {
	struct sim_frame f[SIM_QMAX];
	unsigned head, n;
};

struct sim_ackev {
	unsigned sender;
	struct gw_ack ack;
	uint64_t at, grant;
};

struct sim_cfg {
	unsigned senders;
	uint64_t rate_bps;   /* the port's */
	uint64_t buf_bytes;  /* its queue */
	uint64_t rtt_ns;     /* base round trip, half each way */
	uint64_t jitter_ns;  /* added to each ack's trip, uniform */
	bool cc_on;
	bool budget; /* the receiver grants */
	bool tcp;    /* the last sender answers loss alone (as kernel TCP does), ungranted */
	uint32_t tcp_bytes; /* its segments (0: full frames); a drop-tail port drops
			     * a jumbo frame where a 1500-byte segment still fits */
	/* A shared CPU: each sender runs present_ns, then is away away_ns (its
	 * lcore descheduled), from a phase of its own; it sends and hears
	 * acks only while present. 0: always present. */
	uint64_t present_ns, away_ns;
	uint64_t run_ns, measure_from_ns;
};

struct sim_out {
	uint64_t sent, dropped, retrans, delivered_bytes;
	double goodput;      /* delivered bytes over the port's capacity, measured part */
	double jain;
	uint64_t per[SIM_SENDERS_MAX];
	uint64_t max_queue;
};

struct sim_rxf {
	uint32_t bytes;
};

static void sim_free(void *frame, void *ctx)
{
	(void)ctx;
	free(frame);
}

static void sim_nothing(void *frame, void *ctx)
{
	(void)frame;
	(void)ctx;
}

static void fifo_put(struct sim_fifo *q, const struct sim_frame *f)
{
	CU_ASSERT_FATAL(q->n < SIM_QMAX);
	q->f[(q->head + q->n++) % SIM_QMAX] = *f;
}

static struct sim_frame *fifo_head(struct sim_fifo *q)
{
	return q->n ? &q->f[q->head] : NULL;
}

static void fifo_pop(struct sim_fifo *q)
{
	q->head = (q->head + 1) % SIM_QMAX;
	q->n--;
}

static uint64_t sim_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A frame reaches the port: queued, or dropped when its queue is full. */
static void sim_port_put(const struct sim_cfg *c, struct sim_out *o, struct sim_fifo *port,
			 uint64_t *qbytes, const struct sim_frame *f)
{
	o->sent++;
	if (*qbytes + f->bytes > c->buf_bytes) {
		o->dropped++;
		return;
	}
	*qbytes += f->bytes;
	fifo_put(port, f);
	if (*qbytes > o->max_queue)
		o->max_queue = *qbytes;
}

static bool sim_present(const struct sim_cfg *c, unsigned s, uint64_t now)
{
	uint64_t cycle = c->present_ns + c->away_ns;
	return !c->away_ns || (now + s * cycle / SIM_SENDERS_MAX) % cycle < c->present_ns;
}

/* The bytes of sender s's frames. */
static uint32_t sim_bytes(const struct sim_cfg *c, unsigned s)
{
	return c->tcp && c->tcp_bytes && s == c->senders - 1 ? c->tcp_bytes : MSS;
}

static void sim_run(const struct sim_cfg *c, struct sim_out *o)
{
	static struct gw_lane_tx tx[SIM_SENDERS_MAX];
	static struct gw_lane_rx rx[SIM_SENDERS_MAX];
	static struct sim_fifo port, wire; /* the switch queue; after it, toward the receiver */
	static struct sim_ackev acks[SIM_QMAX];
	unsigned ahead = 0, an = 0;
	uint64_t rng = 88172645463325252ull, qbytes = 0, busy_until = 0;
	const uint64_t tick = 1 * US, half = c->rtt_ns / 2;
	struct gw_cc_params p;
	struct gw_cc_budget bud;
	uint32_t top[SIM_SENDERS_MAX] = { 0 };    /* one past the highest seq seen */
	uint64_t last_del[SIM_SENDERS_MAX] = { 0 }; /* when it last delivered */

	gw_cc_budget_init(&bud, MSS, 4 * MSS, MSS, 256 * MSS);
	memset(o, 0, sizeof(*o));
	memset(&port, 0, sizeof(port));
	memset(&wire, 0, sizeof(wire));
	gw_cc_params_default(&p, MSS);
	p.on = c->cc_on;
	for (unsigned s = 0; s < c->senders; s++) {
		CU_ASSERT_EQUAL_FATAL(gw_lane_tx_init(&tx[s], 256, 100 + s, 20 * MS, 200 * MS,
						      sim_nothing, NULL), 0);
		struct gw_cc_params q = p;
		if (c->tcp && s == c->senders - 1) {
			gw_cc_params_default(&q, sim_bytes(c, s));
			q.target_ns = 10000 * MS; /* never a delay cut */
			q.fs_range_ns = 0;
		}
		gw_lane_tx_set_cc(&tx[s], &q);
		CU_ASSERT_EQUAL_FATAL(gw_lane_rx_init(&rx[s], 256, sim_free, NULL), 0);
	}
	for (uint64_t now = tick, k = 0; now < c->run_ns; now += tick, k++) {
		/* Senders, a different one first each tick: what is due again,
		 * then new frames while allowed. */
		for (unsigned i = 0; i < c->senders; i++) {
			unsigned s = (unsigned)((i + k) % c->senders);
			if (!sim_present(c, s, now))
				continue;
			struct sim_frame f = { .sender = s, .bytes = sim_bytes(c, s), .base = tx[s].una };
			void *due[32];
			unsigned n = gw_lane_tx_due(&tx[s], now, due, 32);
			o->retrans += n;
			for (unsigned d = 0; d < n; d++) {
				f.seq = (uint32_t)(uintptr_t)due[d];
				sim_port_put(c, o, &port, &qbytes, &f);
			}
			while (gw_lane_tx_may_send(&tx[s], now)) {
				f.seq = tx[s].nxt;
				f.base = tx[s].una;
				gw_lane_tx_push(&tx[s], (void *)(uintptr_t)f.seq, f.bytes, now);
				sim_port_put(c, o, &port, &qbytes, &f);
			}
		}
		/* The port serves its head at the rate. */
		struct sim_frame *h;
		while ((h = fifo_head(&port)) && busy_until <= now) {
			uint64_t start = busy_until > now - tick ? busy_until : now - tick;
			busy_until = start + (uint64_t)h->bytes * 8 * 1000000000ull / c->rate_bps;
			struct sim_frame out = *h;
			out.at = busy_until + half;
			qbytes -= h->bytes;
			fifo_pop(&port);
			fifo_put(&wire, &out);
		}
		/* The receiver: take, deliver in order, ack. */
		while ((h = fifo_head(&wire)) && h->at <= now) {
			unsigned s = h->sender;
			struct gw_hdr hd = { .type = GW_FT_DATA, .epoch = 100 + s, .seq = h->seq,
					     .base = h->base };
			struct sim_rxf *rf = malloc(sizeof(*rf));
			CU_ASSERT_PTR_NOT_NULL_FATAL(rf);
			rf->bytes = h->bytes;
			bool granted = !(c->tcp && s == c->senders - 1);
			/* Past a gap: the port dropped something. */
			if ((int32_t)(h->seq - top[s]) > 0 && granted)
				gw_cc_budget_loss(&bud);
			if ((int32_t)(h->seq + 1 - top[s]) > 0)
				top[s] = h->seq + 1;
			if (gw_lane_rx_accept(&rx[s], &hd, rf) != GW_RX_STORED)
				free(rf);
			while ((rf = gw_lane_rx_head(&rx[s]))) {
				if (now >= c->measure_from_ns) {
					o->delivered_bytes += rf->bytes;
					o->per[s] += rf->bytes;
				}
				if (granted) {
					gw_cc_budget_delivered(&bud, rf->bytes);
					last_del[s] = now;
				}
				gw_lane_rx_pop(&rx[s]);
			}
			fifo_pop(&wire);
			if (rx[s].ack_due) {
				CU_ASSERT_FATAL(an < SIM_QMAX);
				struct sim_ackev *a = &acks[(ahead + an++) % SIM_QMAX];
				a->sender = s;
				gw_lane_rx_ack(&rx[s], &a->ack);
				unsigned active = 0;
				for (unsigned q = 0; q < c->senders; q++)
					active += last_del[q] && now - last_del[q] < 2 * MS;
				a->grant = c->budget && granted ? gw_cc_budget_grant(&bud, active) : UINT64_MAX;
				a->at = now + half + (c->jitter_ns ? sim_rng(&rng) % c->jitter_ns : 0);
			}
		}
		/* Acks, in order sent (jitter only delays). */
		while (an && acks[ahead].at <= now && sim_present(c, acks[ahead].sender, now)) {
			gw_cc_set_grant(&tx[acks[ahead].sender].cc, acks[ahead].grant);
			gw_lane_tx_ack(&tx[acks[ahead].sender], &acks[ahead].ack, now);
			ahead = (ahead + 1) % SIM_QMAX;
			an--;
		}
	}
	double cap = (double)c->rate_bps / 8 * (double)(c->run_ns - c->measure_from_ns) / 1e9;
	double sum = 0, sq = 0;
	o->goodput = (double)o->delivered_bytes / cap;
	for (unsigned s = 0; s < c->senders; s++) {
		sum += (double)o->per[s];
		sq += (double)o->per[s] * (double)o->per[s];
		gw_lane_tx_fini(&tx[s]);
		gw_lane_rx_fini(&rx[s]);
	}
	o->jain = sq > 0 ? sum * sum / (c->senders * sq) : 0;
	printf("\n    %u senders, %.0f Mbit/s, %.0f KB queue, cc %s%s: goodput %.3f, sent %lu, "
	       "dropped %lu (%.2f%%), retrans %lu (%.2f%%), jain %.3f, max queue %lu KB ",
	       c->senders, c->rate_bps / 1e6, c->buf_bytes / 1e3, c->cc_on ? "on" : "off",
	       c->budget ? " with grants" : "",
	       o->goodput, (unsigned long)o->sent, (unsigned long)o->dropped,
	       100.0 * (double)o->dropped / (double)o->sent, (unsigned long)o->retrans,
	       100.0 * (double)o->retrans / (double)o->sent, o->jain,
	       (unsigned long)(o->max_queue / 1000));
}

/* The port: 400 Mbit/s, 256 KB of queue (a frame takes 180 us). */
static struct sim_cfg incast(unsigned senders, bool cc_on, bool budget)
{
	return (struct sim_cfg){
		.senders = senders, .rate_bps = 400000000ull, .buf_bytes = 256 * 1024,
		.rtt_ns = 100 * US, .jitter_ns = 20 * US, .cc_on = cc_on, .budget = budget,
		.run_ns = 2000 * MS, .measure_from_ns = 500 * MS,
	};
}

/* 8 senders: the targets (goodput 0.9, drops 1 %, retransmissions 2 %). */
static void test_sim_incast_8(void)
{
	struct sim_cfg c = incast(8, true, true);
	struct sim_out o;

	sim_run(&c, &o);
	CU_ASSERT(o.goodput >= 0.9);
	CU_ASSERT(o.dropped * 100 <= o.sent);
	CU_ASSERT(o.retrans * 50 <= o.sent);
	CU_ASSERT(o.jain >= 0.95);
}

/* 15 senders: a share of 27 Mbit/s each, under a frame per round trip. */
static void test_sim_incast_15(void)
{
	struct sim_cfg c = incast(15, true, true);
	struct sim_out o;

	sim_run(&c, &o);
	CU_ASSERT(o.goodput >= 0.8);
	CU_ASSERT(o.dropped * 50 <= o.sent);
	CU_ASSERT(o.jain >= 0.95);
}

/* The same with every sender's lcore away half the time (1 ms in 2, from
 * phases of their own), as on a host whose CPUs the gateways share: acks
 * wait for their lane, lanes catch up on waking. 15 senders drop about
 * 3 % here (2.7 % without the catching up): the bound is that, not the
 * 2 % of an always-present CPU. */
static void test_sim_incast_shared_cpu(void)
{
	struct sim_cfg c = incast(8, true, true);
	struct sim_out o;

	c.present_ns = c.away_ns = 1 * MS;
	sim_run(&c, &o);
	CU_ASSERT(o.dropped * 100 <= o.sent);
	CU_ASSERT(o.jain >= 0.95);
	c = incast(15, true, true);
	c.present_ns = c.away_ns = 1 * MS;
	sim_run(&c, &o);
	CU_ASSERT(o.dropped * 25 <= o.sent);
	CU_ASSERT(o.jain >= 0.95);
}

/* The sim is honest: with the lane window alone, the port overflows. */
static void test_sim_incast_without_cc(void)
{
	struct sim_cfg c = incast(8, false, false);
	struct sim_out o;

	sim_run(&c, &o);
	CU_ASSERT(o.dropped * 10 > o.sent);
}

/* One budget at the receiver, one sawtooth at the port: fewer drops than
 * 15 senders each finding the port's depth alone. */
static void test_sim_incast_grants(void)
{
	struct sim_cfg c = incast(15, true, false);
	struct sim_out alone, granted;

	sim_run(&c, &alone);
	c.budget = true;
	sim_run(&c, &granted);
	CU_ASSERT(granted.dropped < alone.dropped);
	CU_ASSERT(granted.jain >= 0.95);
}

/* Beside a sender that answers loss alone and fills the queue (kernel TCP
 * into a drop-tail port), a delay-based lane would keep backing off; it
 * sees the queue stay up whatever it does, and competes on loss too. */
static void test_sim_beside_tcp(void)
{
	struct sim_cfg c = incast(2, true, true);
	struct sim_out o;

	c.tcp = true;
	for (unsigned seg = 0; seg <= 1; seg++) {
		c.tcp_bytes = seg ? 1500 : 0;
		sim_run(&c, &o);
		double share0 = (double)o.per[0] / (double)o.delivered_bytes;
		printf("shares: gridwire %.2f, tcp-like (%u-byte segments) %.2f ", share0,
		       seg ? c.tcp_bytes : MSS, 1 - share0);
		CU_ASSERT(share0 >= 0.35 && share0 <= 0.65);
		CU_ASSERT(o.goodput >= 0.9);
	}
}

/* One sender alone on a fast link still fills it. */
static void test_sim_alone_fast(void)
{
	struct sim_cfg c = {
		.senders = 1, .rate_bps = 10000000000ull, .buf_bytes = 2 * 1024 * 1024,
		.rtt_ns = 50 * US, .jitter_ns = 20 * US, .cc_on = true, .budget = true,
		.run_ns = 300 * MS, .measure_from_ns = 100 * MS,
	};
	struct sim_out o;

	sim_run(&c, &o);
	CU_ASSERT(o.goodput >= 0.95);
	CU_ASSERT_EQUAL(o.dropped, 0);
}

/*
 * One sender on an idle 10 Gbit/s link, its lcore sharing a CPU (present
 * 1 ms, away 1 ms, as on a 2-core host running both gateways): the
 * controller must not cost it the rate the lane window alone gets.
 */
static void test_sim_alone_shared_cpu(void)
{
	struct sim_cfg c = {
		.senders = 1, .rate_bps = 10000000000ull, .buf_bytes = 2 * 1024 * 1024,
		.rtt_ns = 50 * US, .jitter_ns = 20 * US, .cc_on = false, .budget = true,
		.present_ns = 1 * MS, .away_ns = 1 * MS,
		.run_ns = 300 * MS, .measure_from_ns = 100 * MS,
	};
	struct sim_out off, on;

	sim_run(&c, &off);
	c.cc_on = true;
	sim_run(&c, &on);
	printf("on/off %.3f ", on.goodput / off.goodput);
	CU_ASSERT(on.goodput >= 0.95 * off.goodput);
	CU_ASSERT_EQUAL(on.dropped, 0);
}

int main(void)
{
	static const struct gw_test_case cases[] = {
		{ "off always sends", test_off_always_sends },
		{ "window limits, one frame under a frame's window", test_window_limits },
		{ "slow start, cut on delay, additive, granted", test_slow_start_then_additive },
		{ "one cut per round trip, at most half", test_one_cut_per_round_trip },
		{ "competing: a loss cuts to 0.7", test_competing_loss },
		{ "pacing", test_pacing },
		{ "the standing round trip", test_standing },
		{ "the receiver's budget", test_budget },
		{ "flow scaling", test_flow_scaling },
		{ "base round trip over two windows", test_base_window },
		{ "sim: 8 into a 400 Mbit/s port", test_sim_incast_8 },
		{ "sim: 15 into a 400 Mbit/s port", test_sim_incast_15 },
		{ "sim: 8 and 15 on a shared CPU", test_sim_incast_shared_cpu },
		{ "sim: 8 without control overflow it", test_sim_incast_without_cc },
		{ "sim: grants drop less of 15", test_sim_incast_grants },
		{ "sim: beside a loss-based flow, each about half", test_sim_beside_tcp },
		{ "sim: one alone fills 10 Gbit/s", test_sim_alone_fast },
		{ "sim: one alone on a shared CPU, as fast as without", test_sim_alone_shared_cpu },
		{ NULL, NULL },
	};
	return gw_test_run("cc", cases);
}
