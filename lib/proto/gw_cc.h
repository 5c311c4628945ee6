/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_cc: congestion control of one lane, and the budget a receiver grants
 * its senders (pure C, no DPDK, no clock).
 *
 * A lane may keep up to its window of frames in flight; on a switched LAN
 * that is far more than a shallow switch port holds when several gateways
 * send to one. The sender keeps a congestion window in bytes (cwnd) and a
 * pacing interval, after Swift (delay-based, SIGCOMM 2020) with loss as
 * the backstop:
 *
 *  - each ack that releases frames brings a round-trip sample; the base
 *    round trip is the smallest sample of the last two base_window_ns;
 *  - below base + target_ns (+ flow scaling: up to fs_range_ns more for a
 *    window under 64 frames, most at a tenth of a frame) the window grows:
 *    by the bytes acked until the first cut (slow start), then by a frame
 *    per window of acks;
 *  - above it the window shrinks, at most once per round trip, by
 *    0.8 * (rtt - limit) / rtt, never by more than half; a window of 16
 *    frames or more only when the standing round trip (the least of the
 *    last half round trip or so, after Copa) is over it too: on a host
 *    whose lcores share CPUs, acks are heard late whenever an lcore was
 *    away, and cutting on those cost half the rate of an idle link;
 *  - a loss (a frame sent again) halves it, once per round trip (cuts it
 *    to 0.7 while competing, below);
 *  - frames leave no closer than bytes * srtt / (window * 5/4): a window
 *    goes out over a round trip, not as one burst, and a window under one
 *    frame still moves (one frame in flight, paced). A lane that was due
 *    while its lcore was away catches up, up to a round trip of frames.
 *
 * A lane whose round trips stay over its limit (80 % of recent samples)
 * while its window is under 32 frames shares its bottleneck with a
 * sender that does not answer delay, such as kernel TCP filling a switch
 * buffer: it stops cutting on delay (loss alone cuts, to 0.7 of the
 * window as CUBIC's does) until the queue comes down, or it would hand
 * that sender the port. Frames the receiver holds out of order do not
 * count against the window (gw_lane_tx_may_send): a loss would otherwise
 * stop the lane for the round trips of its repair as well as cut it.
 *
 * Senders alone each find the port's depth by overflowing it. The receiver
 * sees every lane that sends to it, so it keeps one budget for all of them
 * (one sawtooth at the bottleneck in front of it, not N) and grants each
 * peer an even share in its acks; a lane's window is the smaller of its
 * cwnd and its grant. test/unit/test_cc.c checks both on a simulated
 * port (15 senders: 1.3 % dropped with grants, 2 % without).
 *
 * A disabled controller (gw_cc_params.on false) always says yes: the
 * lane's window alone limits.
 */
#ifndef GW_CC_H
#define GW_CC_H

#include <stdbool.h>
#include <stdint.h>

struct gw_cc_params {
	bool on;
	uint32_t mss;          /* bytes of a full frame: the unit of growth */
	uint32_t cwnd_init;    /* bytes */
	uint32_t cwnd_min;     /* bytes; below one frame the pacing does the rest */
	uint32_t cwnd_max;     /* bytes */
	uint64_t target_ns;    /* queueing delay aimed at, over the base round trip */
	uint64_t fs_range_ns;  /* more of it aimed at by a lane with a small window */
	uint64_t base_window_ns; /* how long a base round-trip sample counts */
};

/* The smallest sample of this period and the last (two buckets): a minimum
 * that follows a rise within two periods, and never loses one to a gap. */
struct gw_cc_min {
	uint64_t cur, prev, since_ns;
};

struct gw_cc {
	struct gw_cc_params p;
	uint64_t cwnd;         /* bytes */
	uint64_t srtt_ns;      /* the lane's, as of the last ack */
	uint64_t base_ns;      /* smallest sample of this and the last base window */
	uint64_t stand_ns;     /* standing round trip: the smallest of the last srtt/2 or so */
	struct gw_cc_min base, stand; /* base_window_ns periods; srtt/2: the standing round trip */
	uint32_t over;         /* share of recent samples over the limit, in 1/1024 */
	bool competing;        /* the queue stays up whatever we do: loss alone cuts */
	uint64_t last_cut_ns;  /* last decrease (0: none yet: slow start) */
	uint64_t next_ns;      /* pacing: earliest time of the next frame */
	bool due;              /* held by pacing alone since next_ns: catches up */
	uint64_t catch_ns;     /* the pass it is catching up in (0: none) */
	uint64_t grant;        /* bytes the receiver lets this lane have in flight */
	bool slow_start;
	/* counters */
	uint64_t cuts_delay, cuts_loss, paced, cwnd_limited;
};

/* The defaults for frames of mss bytes (on, target 500 us, flow scaling
 * up to 2 ms more, a first window of 4 frames). */
void gw_cc_params_default(struct gw_cc_params *p, uint32_t mss);
void gw_cc_init(struct gw_cc *cc, const struct gw_cc_params *p);

/*
 * May a frame go now, with inflight bytes already in flight? Counts why
 * not (cwnd_limited, paced) when the caller asks with count.
 */
bool gw_cc_may_send(struct gw_cc *cc, uint64_t inflight, uint64_t now, bool count);
/* A frame of bytes went out at now (first time or again). */
void gw_cc_on_send(struct gw_cc *cc, uint32_t bytes, uint64_t now);
/* The smoothed round trip after a sample: 7/8 of the last, 1/8 of it. */
static inline uint64_t gw_cc_srtt(uint64_t srtt_ns, uint64_t rtt_ns)
{
	return srtt_ns ? srtt_ns - srtt_ns / 8 + rtt_ns / 8 : rtt_ns;
}

/* An ack released acked bytes at now; rtt_ns is its sample (0: none),
 * srtt_ns the lane's smoothed round trip with it. */
void gw_cc_on_ack(struct gw_cc *cc, uint64_t acked, uint64_t rtt_ns, uint64_t srtt_ns,
		  uint64_t now);
/* Frames had to be sent again at now. */
void gw_cc_on_loss(struct gw_cc *cc, uint64_t now);
/* The receiver lets this lane have bytes in flight (UINT64_MAX: no limit). */
void gw_cc_set_grant(struct gw_cc *cc, uint64_t bytes);

/*
 * The receiving side's budget: bytes in flight toward this receiver over
 * all its lanes, split evenly among the senders (gridwired: the peers
 * with a lane sending, then a peer's share among its lanes; each ack
 * carries the lane's grant). It grows by the bytes delivered until the first
 * loss, then by a frame per budget delivered, and halves on a loss (a
 * frame that arrives past a gap), at most once per budget delivered. One
 * controller for N senders: the bottleneck in front of the receiver sees
 * one sawtooth, not N, and every sender the same share.
 */
struct gw_cc_budget {
	uint64_t bytes, min, max, mss;
	uint64_t since_cut, since_grow;
	bool slow_start;
	uint64_t cuts; /* counter */
};

void gw_cc_budget_init(struct gw_cc_budget *b, uint32_t mss, uint64_t init, uint64_t min,
		       uint64_t max);
void gw_cc_budget_delivered(struct gw_cc_budget *b, uint64_t bytes);
void gw_cc_budget_loss(struct gw_cc_budget *b);
/* The grant of each of n senders (gridwired: lanes); UINT64_MAX (none)
 * for one or none: the budget is there to make N senders one sawtooth,
 * and over one sender's own control it only adds a second cut per loss
 * (beside a TCP flow, a second halving: doc/figures.md). */
uint64_t gw_cc_budget_grant(const struct gw_cc_budget *b, unsigned n);

/* The pacing rate, bytes per second (0: not paced yet, no round trip). */
uint64_t gw_cc_rate(const struct gw_cc *cc);

#endif
