/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_cc: congestion control of one lane; gw_cc.h has the rules. */
#include <string.h>

#include "gw_cc.h"

/* Swift's: a delay overshoot of d in a round trip of r cuts 0.8 * d / r,
 * and no signal cuts more than half. */
#define GW_CC_BETA_PCT 80
#define GW_CC_MAX_MDF_PCT 50
/* A small window: under 16 frames a lane hears a sample or two per half
 * round trip, too few for a standing value, and does not fill a queue
 * alone. */
#define GW_CC_SMALL_FRAMES 16
/* Competing with a sender that does not answer delay: the round trip
 * over the limit in 80 % of recent samples, with a small window. */
#define GW_CC_COMPETING 800 /* of 1024 */
/* A lane may count as competing up to this window: its share of a port
 * beside one TCP flow is about 15 frames at 400 Mbit/s and 5 ms, so 16
 * (the small window above) kept it from ever reaching it. */
#define GW_CC_COMPETING_FRAMES 32
/* Competing, a loss cuts as CUBIC's does (to 0.7), not by half. Growing
 * faster too (1.5 or 2 frames a round trip) took 0.35 to 0.38 of a port
 * from one CUBIC flow, but 0.8 from a sender that halves and grows by a
 * frame (test_cc's): not a fair neighbour, so growth stays a frame. */
#define GW_CC_COMPETING_MDF_PCT 30

void gw_cc_params_default(struct gw_cc_params *p, uint32_t mss)
{
	*p = (struct gw_cc_params){
		.on = true,
		.mss = mss,
		.cwnd_init = 4 * mss,
		.cwnd_min = mss < 1024 ? mss : 1024,
		.cwnd_max = 256 * mss,
		.target_ns = 500 * 1000ull,
		.fs_range_ns = 2000 * 1000ull,
		.base_window_ns = 5 * 1000 * 1000 * 1000ull,
	};
}

static void gw_cc_clamp(struct gw_cc *cc)
{
	if (cc->cwnd < cc->p.cwnd_min)
		cc->cwnd = cc->p.cwnd_min;
	if (cc->cwnd > cc->p.cwnd_max)
		cc->cwnd = cc->p.cwnd_max;
}

void gw_cc_init(struct gw_cc *cc, const struct gw_cc_params *p)
{
	memset(cc, 0, sizeof(*cc));
	cc->p = *p;
	cc->cwnd = p->cwnd_init;
	gw_cc_clamp(cc);
	cc->grant = UINT64_MAX;
	cc->slow_start = true;
	cc->base_ns = UINT64_MAX;
	cc->base = cc->stand = (struct gw_cc_min){ .cur = UINT64_MAX, .prev = UINT64_MAX };
}

/* At most one cut per round trip: the signal of one overshoot reaches
 * the sender over a round trip's worth of acks. */
static bool gw_cc_cut(struct gw_cc *cc, uint64_t pct, uint64_t now)
{
	if (cc->last_cut_ns && now - cc->last_cut_ns < cc->srtt_ns)
		return false;
	if (pct > GW_CC_MAX_MDF_PCT)
		pct = GW_CC_MAX_MDF_PCT;
	cc->cwnd -= cc->cwnd * pct / 100;
	cc->slow_start = false;
	cc->last_cut_ns = now ? now : 1;
	gw_cc_clamp(cc);
	return true;
}

static uint64_t gw_cc_window(const struct gw_cc *cc)
{
	return cc->cwnd < cc->grant ? cc->cwnd : cc->grant;
}

bool gw_cc_may_send(struct gw_cc *cc, uint64_t inflight, uint64_t now, bool count)
{
	if (!cc->p.on)
		return true;
	/* Not "the next frame must fit": that makes windows whole frames, and
	 * N lanes whose grants pass a frame all step up at once; pacing
	 * spreads the part of a frame that the window lacks. */
	if (inflight && inflight >= gw_cc_window(cc)) {
		cc->cwnd_limited += count;
		cc->due = false;
		cc->catch_ns = 0;
		return false;
	}
	if (now < cc->next_ns) {
		cc->paced += count;
		cc->due = true;
		return false;
	}
	return true;
}

void gw_cc_on_send(struct gw_cc *cc, uint32_t bytes, uint64_t now)
{
	if (!cc->p.on || !cc->srtt_ns)
		return;
	/* 5/4 of the window per round trip: room to grow, no burst. */
	uint64_t w = gw_cc_window(cc);
	uint64_t gap = (uint64_t)bytes * cc->srtt_ns * 4 / ((w ? w : 1) * 5);
	/*
	 * A lane held by pacing alone was ready from next_ns on: if it was not
	 * asked again until later (its lcore slept or was descheduled), it
	 * catches up on the frames it was due, up to a round trip of them, in
	 * the pass that finds it late (the caller's now is one per pass). On
	 * a CPU shared by both gateways that lateness cost half the rate. A
	 * lane that waited on its window, or that ran out of messages while
	 * catching up, saves nothing: the next gap counts from now.
	 */
	bool catching = cc->due || cc->catch_ns == now;
	uint64_t from = cc->next_ns;
	if (!catching)
		from = from > now ? from : now;
	else if (from + cc->srtt_ns < now)
		from = now - cc->srtt_ns;
	cc->next_ns = from + gap;
	cc->due = false;
	cc->catch_ns = catching && cc->next_ns <= now ? now : 0;
}

static uint64_t gw_cc_min_add(struct gw_cc_min *m, uint64_t v, uint64_t now, uint64_t period)
{
	if (now - m->since_ns >= period) {
		m->prev = m->cur;
		m->cur = UINT64_MAX;
		m->since_ns = now;
	}
	if (v < m->cur)
		m->cur = v;
	return m->cur < m->prev ? m->cur : m->prev;
}

static void gw_cc_sample(struct gw_cc *cc, uint64_t rtt, uint64_t now)
{
	/* The base: a path whose round trip rose is taken within two windows. */
	cc->base_ns = gw_cc_min_add(&cc->base, rtt, now, cc->p.base_window_ns);
	/* The standing round trip, after Copa: the smallest of the last half
	 * round trip or so. A queue that stands raises every sample; a host
	 * whose lcores share CPUs raises some (an ack heard late because the
	 * lcore was away) and not the least. */
	cc->stand_ns = gw_cc_min_add(&cc->stand, rtt, now, cc->srtt_ns / 2);
}

static uint64_t gw_cc_isqrt(uint64_t x)
{
	uint64_t r = 0, b = 1ull << 62;
	while (b > x)
		b >>= 2;
	for (; b; b >>= 2) {
		if (x >= r + b) {
			x -= r + b;
			r = (r >> 1) + b;
		} else {
			r >>= 1;
		}
	}
	return r;
}

/* 2^16 / sqrt(w), for w in 1..640 (tenths of a frame). */
static uint64_t gw_cc_inv_sqrt(uint64_t w)
{
	return (1ull << 24) / gw_cc_isqrt(w << 16);
}

/*
 * Swift's flow scaling: a lane with a small window aims at more delay
 * (up to fs_range_ns more at a tenth of a frame, nothing at 64 frames),
 * so small windows grow at the expense of large ones: lanes that took
 * their base round trip from a queue already built would otherwise keep
 * the larger share.
 */
static uint64_t gw_cc_flow_scale(const struct gw_cc *cc)
{
	uint64_t w = cc->cwnd * 10 / cc->p.mss, hi = gw_cc_inv_sqrt(640);
	if (w >= 640 || !cc->p.fs_range_ns)
		return 0;
	return cc->p.fs_range_ns * (gw_cc_inv_sqrt(w ? w : 1) - hi) / (gw_cc_inv_sqrt(1) - hi);
}

void gw_cc_on_ack(struct gw_cc *cc, uint64_t acked, uint64_t rtt_ns, uint64_t srtt_ns,
		  uint64_t now)
{
	if (!cc->p.on)
		return;
	cc->srtt_ns = srtt_ns;
	if (rtt_ns)
		gw_cc_sample(cc, rtt_ns, now);
	if (!acked || !rtt_ns)
		return;
	uint64_t limit = cc->base_ns + cc->p.target_ns + gw_cc_flow_scale(cc);
	/* Grow on a sample under the limit; cut only when the standing round
	 * trip is over it too (a queue, not an ack heard late); between the
	 * two, hold. */
	uint64_t stand = cc->stand_ns;
	/* How often lately the round trip was over the limit (in 1/1024, an
	 * average over about 32 samples). Lanes that answer delay keep the
	 * queue near it, about half the time over; a queue that stays over
	 * it while this lane's window is small is held by a sender that does
	 * not answer delay (kernel TCP filling a switch buffer), and
	 * answering it would hand that sender the port. Loss alone cuts then,
	 * as it does for TCP, until the queue comes down again. */
	/* A window under a frame hears a sample every few round trips: each
	 * counts for the frames it stands for (up to 8), or a lane that TCP
	 * pushed down to a fraction of a frame would take seconds to see it
	 * competes. */
	uint64_t w = 32 * (cc->cwnd < cc->p.mss ? cc->p.mss / cc->cwnd : 1);
	w = w > 256 ? 256 : w;
	cc->over = (uint32_t)((cc->over * (1024 - w) + (rtt_ns > limit ? 1024 * w : 0)) / 1024);
	cc->competing = cc->over > GW_CC_COMPETING &&
			cc->cwnd < GW_CC_COMPETING_FRAMES * (uint64_t)cc->p.mss;
	if (rtt_ns <= limit || cc->competing) {
		if (cc->slow_start) {
			cc->cwnd += acked;
		} else {
			/* mss / share per round trip: a window's worth of acks
			 * comes back each round trip. */
			uint64_t ai = cc->p.mss;
			uint64_t per = cc->cwnd > cc->p.mss ? cc->cwnd : cc->p.mss;
			uint64_t add = ai * acked / per;
			cc->cwnd += add ? add : 1;
		}
		gw_cc_clamp(cc);
	} else if ((stand > limit || gw_cc_window(cc) < GW_CC_SMALL_FRAMES * (uint64_t)cc->p.mss) &&
		   gw_cc_cut(cc, (rtt_ns - limit) * GW_CC_BETA_PCT / rtt_ns, now)) {
		cc->cuts_delay++;
	}
}

void gw_cc_on_loss(struct gw_cc *cc, uint64_t now)
{
	if (cc->p.on &&
	    gw_cc_cut(cc, cc->competing ? GW_CC_COMPETING_MDF_PCT : GW_CC_MAX_MDF_PCT, now))
		cc->cuts_loss++;
}

void gw_cc_set_grant(struct gw_cc *cc, uint64_t bytes)
{
	cc->grant = bytes;
}

void gw_cc_budget_init(struct gw_cc_budget *b, uint32_t mss, uint64_t init, uint64_t min,
		       uint64_t max)
{
	*b = (struct gw_cc_budget){
		.bytes = init, .min = min, .max = max, .mss = mss, .slow_start = true,
	};
}

void gw_cc_budget_delivered(struct gw_cc_budget *b, uint64_t bytes)
{
	b->since_cut += bytes;
	if (b->slow_start) {
		b->bytes += bytes;
	} else if ((b->since_grow += bytes) >= b->bytes) {
		b->since_grow -= b->bytes;
		b->bytes += b->mss;
	}
	if (b->bytes > b->max)
		b->bytes = b->max;
}

void gw_cc_budget_loss(struct gw_cc_budget *b)
{
	if (!b->slow_start && b->since_cut < b->bytes)
		return; /* the same overflow, still being heard of */
	b->bytes /= 2;
	if (b->bytes < b->min)
		b->bytes = b->min;
	b->slow_start = false;
	b->since_cut = b->since_grow = 0;
	b->cuts++;
}

uint64_t gw_cc_budget_grant(const struct gw_cc_budget *b, unsigned n)
{
	return n > 1 ? b->bytes / n : UINT64_MAX;
}

uint64_t gw_cc_rate(const struct gw_cc *cc)
{
	if (!cc->srtt_ns)
		return 0;
	return gw_cc_window(cc) * 5 / 4 * 1000000000ull / cc->srtt_ns;
}
