/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/proto: the input is a script of operations on
 * one gw_lane_tx and one gw_lane_rx joined by a fake link that the script
 * controls (which frames and acks arrive, in what order, how often), plus
 * forged headers and acks, time steps and restarts of either half. After
 * every operation the invariants below are checked; a broken one traps
 * (CHECK), which libFuzzer reports as a crash and saves.
 *
 * Always:
 *   - inflight <= win, and the tx owns exactly the frames in [una, nxt);
 *   - every frame handle is released exactly once, by the half that owns
 *     it (a table records who owns what), and after fini none is left;
 *   - the rx holds only frames of its epoch inside [next, next + win), at
 *     the slot of their seq, and its head is the frame whose seq is next;
 *   - the rx's acks say exactly what it holds, and a tx of the same epoch
 *     accepts them when they are in [una, nxt];
 *   - with a parallel port's copies tracked (up to 8 members), a frame is
 *     dropped as another member's copy only when the rx holds it or is past
 *     it;
 *   - gw_lane_tx_due hands out in-flight frames only, oldest first, never
 *     one sent less than rto_min / 4 ago, always one sent rto_max ago or
 *     more, and nothing twice at one instant; the tx's next deadline is
 *     never later than the earliest frame's (a late one stalls the lane).
 * While nothing was forged ("clean"), end to end:
 *   - nothing lost: the tx releases a frame on an ack only once a copy of it
 *     was delivered (popped) by the rx (a frame given up on a peer's
 *     timeout is released unacked: its senders are told);
 *   - nothing twice: no frame is delivered twice unless the rx restarted
 *     (or saw a frame of an older sender instance, see deliver());
 *   - at the end, with a perfect link and retransmissions only, the lane
 *     drains: every frame in flight gets acknowledged.
 *
 * Frame handles point into a table of small tagged records (seq, base,
 * epoch, owner) so that a release can be checked before anything is read
 * through the pointer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_lane.h"
#include "gw_wire.h"
#include "fz_input.h"

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_lane: check failed at line %d: %s\n", __LINE__, \
				#c);                                                       \
			fz_dump();                                                         \
			__builtin_trap();                                                  \
		}                                                                          \
	} while (0)

/*
 * FZ_TRACE=1 in the environment prints every operation: for reproducers.
 * FZ_NO_DRAIN=1 skips the drain check, to look past a known stall.
 */
static bool fz_trace, fz_no_drain;
#define TRACE(...)                                                                         \
	do {                                                                               \
		if (fz_trace)                                                              \
			fprintf(stderr, __VA_ARGS__);                                      \
	} while (0)

enum fz_owner { FZ_TX = 1, FZ_RX, FZ_GONE };

struct fz_frame {
	uint32_t seq, base, epoch;
	uint32_t gen;     /* tx instance that pushed it (or its original's) */
	int32_t origin;   /* rx copy: index of the tx frame it copies; -1 forged */
	uint8_t owner;    /* enum fz_owner */
	uint16_t popped;  /* tx frame: deliveries of a copy */
	uint64_t sent_ns; /* tx frame: last (re)transmission, as we saw it */
};

/*
 * Enough for a 4 KB script (at most one tx frame and one rx copy per
 * operation) and the drain after it; handles are never reused within an
 * input, so a late second release is still caught.
 */
#define FZ_FRAMES (1u << 16)
#define FZ_OPS_FRAMES (FZ_FRAMES / 2)
#define FZ_LINK 64
#define FZ_ACKQ 16
/* Beyond this the liveness checks (and the drain) do not apply. */
#define FZ_RTO_FINITE (1ull << 40)
#define FZ_NOW_MAX (1ull << 62)

static struct fz_frame pool[FZ_FRAMES];

static struct fz {
	struct gw_lane_tx tx;
	struct gw_lane_rx rx;
	unsigned npool;
	uint64_t now;
	uint32_t gen;    /* tx instances so far */
	uint32_t rx_gen; /* tx instance whose epoch the rx follows */
	bool dirty;      /* something forged: end-to-end checks are off */
	bool copies;     /* the rx tracks members' copies (a parallel port) */
	bool dup_ok;     /* rx restart or stale epoch: redelivery is allowed */
	bool gave_up;    /* the tx abandoned frames: una may pass the rx's next, */
	uint32_t ab_lo;  /* but not una before the first of them */
	/* Releases expected from the tx: seqs in [rel_lo, rel_hi); acked or fini. */
	bool rel_open, rel_acked;
	uint32_t rel_lo, rel_hi;
	unsigned tx_released;
	struct fz_frame *pop_expect; /* the one frame gw_lane_rx_pop may release */
	unsigned tx_live, rx_live;
	int32_t tx_ring[GW_LANE_WIN_MAX]; /* frame of seq s at s & (win - 1) */
	int32_t link[FZ_LINK];            /* frames on the wire towards the rx */
	unsigned nlink;
	struct gw_ack ackq[FZ_ACKQ]; /* acks on the wire towards the tx */
	unsigned nack;
	void *out[GW_LANE_WIN_MAX];
	/* rx state after the previous operation, for monotonicity */
	bool prev_active;
	uint32_t prev_epoch, prev_next;
	unsigned ops;
} z;

static void fz_dump(void)
{
	fprintf(stderr,
		"fuzz_lane: after %u ops: now %llu tx epoch %08x una %u nxt %u win %u | rx %s "
		"epoch %08x next %u win %u%s | gen %u rx_gen %u dirty %d dup_ok %d gave_up %d "
		"(from %u)\n",
		z.ops, (unsigned long long)z.now, z.tx.epoch, z.tx.una, z.tx.nxt, z.tx.win,
		z.rx.active ? "active" : "idle", z.rx.epoch, z.rx.next, z.rx.win,
		z.copies ? " copies" : "", z.gen, z.rx_gen, z.dirty, z.dup_ok, z.gave_up, z.ab_lo);
}


/*
 * The checks walk whole windows after every operation: they are the
 * oracle, not code under test, so they go uninstrumented (libFuzzer's
 * comparison tracing in them took most of an execution's time).
 */
#define FZ_ORACLE __attribute__((no_sanitize("coverage")))

static inline bool seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static struct fz_frame *fz_alloc(unsigned limit)
{
	if (z.npool >= limit)
		return NULL;
	struct fz_frame *f = &pool[z.npool++];
	memset(f, 0, sizeof(*f));
	f->origin = -1;
	return f;
}

/* A handle from the library: one of ours, checked before it is read. */
FZ_ORACLE static struct fz_frame *fz_frame_of(void *p)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)pool;
	CHECK(a >= b && a < b + z.npool * sizeof(pool[0]));
	CHECK((a - b) % sizeof(pool[0]) == 0);
	return p;
}

static void fz_release(void *frame, void *ctx)
{
	struct fz_frame *f = fz_frame_of(frame);

	if (ctx == &z.tx) {
		CHECK(f->owner == FZ_TX); /* the tx's own, and not released before */
		CHECK(z.rel_open && f->seq - z.rel_lo < z.rel_hi - z.rel_lo);
		/* Nothing lost: an ack covers only what the rx delivered. */
		if (z.rel_acked && !z.dirty)
			CHECK(f->popped > 0);
		z.tx_live--;
		z.tx_released++;
	} else {
		CHECK(ctx == &z.rx);
		CHECK(f->owner == FZ_RX);
		CHECK(!z.pop_expect || f == z.pop_expect);
		z.rx_live--;
	}
	f->owner = FZ_GONE;
}

/* The earliest retransmission time by the rules in gw_lane.h (white box). */
FZ_ORACLE static uint64_t ref_deadline(const struct gw_lane_tx *tx)
{
	uint64_t guard = tx->srtt_ns + tx->srtt_ns / 4;
	uint64_t d = UINT64_MAX;

	if (guard < tx->rto_min_ns / 4)
		guard = tx->rto_min_ns / 4;
	for (uint32_t seq = tx->una; seq != tx->nxt; seq++) {
		const struct gw_lane_slot *s = &tx->slots[seq & (tx->win - 1)];
		uint64_t wait = s->rto_ns;
		if (s->sacked)
			wait = tx->rto_max_ns;
		else if (seq - tx->una < tx->sack_hi - tx->una && s->sent_ns < tx->progress_ns)
			wait = guard < s->rto_ns ? guard : s->rto_ns;
		uint64_t t = s->sent_ns > UINT64_MAX - wait ? UINT64_MAX : s->sent_ns + wait;
		if (t < d)
			d = t;
	}
	return d;
}

/*
 * The invariants, after an operation. walk: also those that walk the
 * windows (every few operations and at the end of a script: a broken
 * window stays broken until it is looked at).
 */
FZ_ORACLE static void check_all(bool walk)
{
	const struct gw_lane_tx *tx = &z.tx;
	const struct gw_lane_rx *rx = &z.rx;
	uint32_t inflight = gw_lane_tx_inflight(tx);

	CHECK(inflight <= tx->win);
	CHECK(gw_lane_tx_open(tx) == (inflight < tx->win));
	/* Every frame here is 1000 bytes; the controller stays in its bounds
	 * whatever acks, losses and time do to it. */
	CHECK(tx->inflight_bytes == 1000ull * inflight);
	CHECK(!tx->cc.p.on || (tx->cc.cwnd >= tx->cc.p.cwnd_min && tx->cc.cwnd <= tx->cc.p.cwnd_max));
	/* In [una, nxt] while anything is in flight (pinned again on a push). */
	CHECK(!inflight || tx->sack_hi - tx->una <= inflight);
	CHECK(z.tx_live == inflight);
	/* The pipe: what the receiver holds is exactly the sacked slots'. */
	uint64_t sacked = 0;
	for (uint32_t seq = tx->una; walk && seq != tx->nxt; seq++) {
		struct fz_frame *f = &pool[z.tx_ring[seq & (tx->win - 1)]];
		CHECK(f->owner == FZ_TX && f->seq == seq && f->gen == z.gen);
		CHECK(tx->slots[seq & (tx->win - 1)].frame == f);
		sacked += tx->slots[seq & (tx->win - 1)].sacked ? tx->slots[seq & (tx->win - 1)].bytes : 0;
	}
	CHECK(!walk || tx->sacked_bytes == sacked);
	/* Time never goes back: a deadline already passed counts as now. */
	if (walk) {
		uint64_t ref = ref_deadline(tx);
		CHECK(gw_lane_tx_next_deadline(tx) <= (ref > z.now ? ref : z.now));
	}

	/* Every frame the rx owns sits in its window, at the slot of its seq. */
	unsigned held = 0;
	for (uint32_t i = 0; walk && i < rx->win; i++) {
		void *p = rx->held[(rx->next + i) & (rx->win - 1)];
		if (!p)
			continue;
		struct fz_frame *f = fz_frame_of(p);
		CHECK(rx->active && f->owner == FZ_RX);
		CHECK(f->seq == rx->next + i && f->epoch == rx->epoch);
		held++;
	}
	CHECK(!walk || held == z.rx_live);
	void *head = gw_lane_rx_head(rx);
	if (head) {
		struct fz_frame *f = fz_frame_of(head);
		CHECK(f->seq == rx->next && f->epoch == rx->epoch);
	}
	/*
	 * Within one epoch delivery only moves forward: by up to 2^31 (a base
	 * exactly half the sequence space ahead counts as ahead), never back.
	 */
	if (z.prev_active && rx->active && rx->epoch == z.prev_epoch)
		CHECK(z.prev_next - rx->next - 1 >= 0x7fffffffu);
	z.prev_active = rx->active;
	z.prev_epoch = rx->epoch;
	z.prev_next = rx->next;

	/*
	 * Clean: the tx never counts as acked what the rx has not delivered. A
	 * restarted rx may start below una (from a retransmission's base), which
	 * only the drain can judge. Frames given up let una pass next, until a
	 * later frame's base moves next past them.
	 */
	if (!z.dirty && !z.dup_ok && rx->active && rx->epoch == tx->epoch) {
		if (z.gave_up && !seq_before(rx->next, tx->una))
			z.gave_up = false;
		CHECK(!seq_before(rx->next, z.gave_up ? z.ab_lo : tx->una));
	}
}

static void tx_setup(struct fz_in *in, uint32_t epoch)
{
	uint8_t w = rd8(in);
	uint8_t r = rd8(in);
	uint64_t rto_min = (r & 0x80) ? 1 + (uint64_t)rd16(in) : 1 + (uint64_t)rd16(in) * 1000;
	uint64_t rto_max = rto_min * (1 + (r & 31));
	if (r & 0x40)
		rto_max = UINT64_MAX; /* "as large as the caller likes": saturation */
	CHECK(gw_lane_tx_init(&z.tx, 1u << (w % 9), epoch, rto_min, rto_max, fz_release,
			      &z.tx) == 0);
	if (r & 0x20) { /* under congestion control, with its targets from the input */
		struct gw_cc_params p;
		gw_cc_params_default(&p, 1 + rd16(in));
		p.target_ns = rd16(in) * 100ull;
		p.fs_range_ns = rd16(in) * 100ull;
		p.base_window_ns = 1 + rd16(in) * 1000ull;
		gw_lane_tx_set_cc(&z.tx, &p);
	}
	if (w & 0x80) {
		/* Allowed right after init: start anywhere, near the wrap usually. */
		uint32_t start = (w & 0x40) ? rd32(in) : UINT32_MAX - rd8(in);
		z.tx.una = z.tx.nxt = start;
	}
	z.gen++;
	TRACE("tx init gen %u epoch %08x win %u una %u rto %llu..%llu\n", z.gen, epoch, z.tx.win,
	      z.tx.una, (unsigned long long)rto_min, (unsigned long long)rto_max);
}

static void rx_setup(uint8_t w)
{
	CHECK(gw_lane_rx_init(&z.rx, 1u << (w % 9), fz_release, &z.rx) == 0);
	z.copies = w & 0x80;
	if (z.copies)
		CHECK(gw_lane_rx_track_copies(&z.rx) == 0);
	z.prev_active = false;
	TRACE("rx init win %u%s\n", z.rx.win, z.copies ? ", copies tracked" : "");
}

/* The tx may release seqs [lo, hi) now (acked: only delivered ones), until
 * rel_open is cleared. */
static void rel_expect(uint32_t lo, uint32_t hi, bool acked)
{
	z.rel_open = true;
	z.rel_acked = acked;
	z.rel_lo = lo;
	z.rel_hi = hi;
}

static void tx_fini(void)
{
	rel_expect(z.tx.una, z.tx.nxt, false);
	gw_lane_tx_fini(&z.tx);
	z.rel_open = false;
	CHECK(z.tx_live == 0);
}

static void rx_fini(void)
{
	gw_lane_rx_fini(&z.rx);
	CHECK(z.rx_live == 0);
}

/* Push up to n frames while the window is open; each lost on the way or not. */
static void op_push(unsigned n, bool lost)
{
	while (n--) {
		if (!gw_lane_tx_open(&z.tx)) {
			CHECK(gw_lane_tx_inflight(&z.tx) == z.tx.win);
			CHECK(!gw_lane_tx_may_send(&z.tx, z.now));
			return;
		}
		/* The controller only says when: a push it would hold is still
		 * taken (a caller that knows better, as a test does). */
		(void)gw_lane_tx_may_send(&z.tx, z.now);
		struct fz_frame *f = fz_alloc(FZ_OPS_FRAMES);
		if (!f)
			return;
		/* Built as the worker builds it: seq = nxt, base = una. */
		f->seq = z.tx.nxt;
		f->base = z.tx.una;
		f->epoch = z.tx.epoch;
		f->gen = z.gen;
		f->owner = FZ_TX;
		f->sent_ns = z.now;
		z.tx_ring[f->seq & (z.tx.win - 1)] = (int32_t)(f - pool);
		z.tx_live++;
		CHECK(gw_lane_tx_push(&z.tx, f, 1000, z.now) == f->seq);
		TRACE("push seq %u base %u%s\n", f->seq, f->base, lost ? " (lost)" : "");
		if (!lost && z.nlink < FZ_LINK)
			z.link[z.nlink++] = (int32_t)(f - pool);
	}
}

/*
 * Offer the rx a copy of frame o (a tx frame), or a forged header when o is
 * NULL, and check the verdict against what the rules say it must be.
 */
/*
 * A parallel port asks first whether a frame is another member's copy, and
 * drops it unchecked if so: only ever one the lane no longer needs (before
 * next, which never moves back) or holds now.
 */
static bool rx_redundant(const struct gw_hdr *h, unsigned member)
{
	struct gw_lane_rx *rx = &z.rx;

	if (!gw_lane_rx_redundant(rx, h->epoch, h->seq, member)) {
		CHECK(z.copies || rx->redundant == 0);
		return false;
	}
	void *slot = rx->held[h->seq & (rx->win - 1)];
	CHECK(z.copies && rx->active && rx->epoch == h->epoch);
	CHECK(seq_before(h->seq, rx->next) ||
	      (h->seq - rx->next < rx->win && slot && fz_frame_of(slot)->seq == h->seq));
	TRACE("seq %u on member %u: redundant\n", h->seq, member);
	return true;
}

/* ask: as port RX on the lane's own lcore does; a frame handed to the
 * lane's receiver from another lcore goes straight to the accept. */
static void rx_offer(const struct fz_frame *o, const struct gw_hdr *h, unsigned limit,
		     unsigned member, bool ask)
{
	struct gw_lane_rx *rx = &z.rx;
	if (ask && rx_redundant(h, member))
		return;
	struct fz_frame *c = fz_alloc(limit);
	if (!c)
		return;
	c->seq = h->seq;
	c->base = h->base;
	c->epoch = h->epoch;
	c->gen = o ? o->gen : UINT32_MAX;
	c->origin = o ? (int32_t)(o - pool) : -1;
	c->owner = FZ_RX;
	z.rx_live++;

	bool reset = !rx->active || h->epoch != rx->epoch;
	uint32_t next = reset ? h->base : seq_before(rx->next, h->base) ? h->base : rx->next;
	bool moved = reset || next != rx->next;
	if (o && reset)
		z.rx_gen = o->gen;
	if (moved)
		rx->at.off = 0x5eed; /* a new head must start at record 0 */

	z.pop_expect = NULL;
	enum gw_lane_rx_verdict v = gw_lane_rx_accept_on(rx, h, c, member);
	/* A copy another member brought first: a duplicate that asks no ack. */
	bool dup = v == GW_RX_DUP || (v == GW_RX_REDUNDANT && z.copies);
	TRACE("offer seq %u base %u epoch %08x%s -> %d, next %u\n", h->seq, h->base, h->epoch,
	      o ? "" : " (forged)", v, rx->next);
	CHECK(rx->active && rx->epoch == h->epoch && rx->next == next);
	CHECK(!moved || rx->at.off == 0);
	void *slot = rx->held[h->seq & (rx->win - 1)];
	if (seq_before(h->seq, next)) {
		CHECK(dup && (rx->ack_due || v == GW_RX_REDUNDANT));
	} else if (h->seq - next >= rx->win) {
		CHECK(v == GW_RX_BEYOND);
	} else if (dup) {
		/* Already held: the slot has the earlier copy of the same seq. */
		CHECK(slot && slot != c && fz_frame_of(slot)->seq == h->seq &&
		      (rx->ack_due || v == GW_RX_REDUNDANT));
	} else {
		CHECK(v == GW_RX_STORED && slot == c && rx->ack_due);
	}
	if (v != GW_RX_STORED) {
		/* The caller frees what the lane did not take. */
		CHECK(c->owner == FZ_RX);
		c->owner = FZ_GONE;
		z.rx_live--;
	}
}

static void deliver(const struct fz_frame *o, unsigned limit, unsigned member, bool ask)
{
	struct gw_hdr h = {
		.type = GW_FT_DATA, .epoch = o->epoch, .seq = o->seq, .base = o->base,
	};
	/*
	 * A frame from an older sender instance than the one the rx follows
	 * (delayed across a sender restart). Epochs are random, so the rx takes
	 * it for a new restart and resets, and the current instance's next frame
	 * resets it again to that frame's base: what was delivered since is
	 * delivered again. A known limit of the epoch design, not checked.
	 */
	if (z.rx.active && o->gen < z.rx_gen) {
		TRACE("stale epoch (gen %u < %u)\n", o->gen, z.rx_gen);
		z.dup_ok = true;
	}
	rx_offer(o, &h, limit, member, ask);
}

static void op_deliver(struct fz_in *in, bool keep, unsigned member)
{
	if (!z.nlink)
		return;
	uint8_t b = rd8(in);
	unsigned i = (b & 0x7f) % z.nlink;
	const struct fz_frame *o = &pool[z.link[i]];
	/* Taking one from the middle is reordering; keeping it, duplication. */
	if (!keep)
		z.link[i] = z.link[--z.nlink];
	deliver(o, FZ_OPS_FRAMES, member, !(b & 0x80));
}

/*
 * The peer timed out: the oldest n frames in flight given up, as the worker
 * does (their senders told). Each is released once, not as acked; the
 * next frames' base then moves the rx past them, which the drain checks.
 */
static void op_abandon(unsigned n)
{
	struct gw_lane_tx *tx = &z.tx;
	void *p;

	while (n-- && (p = gw_lane_tx_oldest(tx))) {
		struct fz_frame *f = fz_frame_of(p);
		uint32_t una = tx->una;
		CHECK(f->seq == una && f->owner == FZ_TX);
		rel_expect(una, una + 1, false);
		gw_lane_tx_abandon(tx);
		z.rel_open = false;
		CHECK(f->owner == FZ_GONE && tx->una == una + 1);
		if (!z.gave_up)
			z.ab_lo = una;
		z.gave_up = true;
		TRACE("abandon seq %u\n", una);
	}
}

static void op_pop(unsigned n)
{
	struct gw_lane_rx *rx = &z.rx;
	void *p;

	while (n-- && (p = gw_lane_rx_head(rx))) {
		struct fz_frame *f = fz_frame_of(p);
		uint32_t next = rx->next;
		CHECK(f->seq == next && f->owner == FZ_RX);
		if (f->origin >= 0) {
			struct fz_frame *o = &pool[f->origin];
			/* Nothing twice, unless a restarted rx could not know. */
			if (!z.dirty && !z.dup_ok)
				CHECK(o->popped == 0);
			if (o->popped != UINT16_MAX)
				o->popped++;
		}
		TRACE("pop seq %u\n", f->seq);
		rx->at.off = 7; /* the caller's progress in the head frame */
		z.pop_expect = f;
		gw_lane_rx_pop(rx);
		z.pop_expect = NULL;
		CHECK(f->owner == FZ_GONE && rx->next == next + 1 && rx->at.off == 0 && rx->ack_due);
	}
}

/* Build the rx's ack and check it says exactly what the rx holds. */
FZ_ORACLE static bool ack_build(struct gw_ack *a)
{
	const struct gw_lane_rx *rx = &z.rx;

	/* The gateway acks only once a frame arrived (ack_due); never from idle. */
	if (!rx->active)
		return false;
	memset(a, 0xff, sizeof(*a));
	gw_lane_rx_ack(&z.rx, a);
	CHECK(!rx->ack_due && a->acked_epoch == rx->epoch && a->cum == rx->next);
	CHECK(a->nbits % 8 == 0 && a->nbits <= GW_SACK_BITS);
	unsigned top = 0;
	for (unsigned i = 0; i < GW_SACK_BITS; i++) {
		bool bit = a->sack[i / 8] >> (i % 8) & 1;
		bool is_held = i + 1 < rx->win && rx->held[(rx->next + 1 + i) & (rx->win - 1)];
		CHECK(bit == is_held);
		if (bit)
			top = i + 1;
	}
	CHECK(a->nbits == (top + 7) / 8 * 8);

	/* And it survives the wire unchanged. */
	uint8_t buf[12 + GW_SACK_BITS / 8];
	struct gw_ack b;
	size_t n = gw_wire_ack_put(buf, a);
	CHECK(gw_wire_ack_get(buf, n, &b) == 0);
	CHECK(b.acked_epoch == a->acked_epoch && b.cum == a->cum && b.nbits == a->nbits &&
	      memcmp(b.sack, a->sack, sizeof(b.sack)) == 0);
	return true;
}

/* Apply an ack to the tx and check the verdict; forged says who made it. */
static void ack_apply(const struct gw_ack *a, bool forged)
{
	struct gw_lane_tx *tx = &z.tx;
	uint32_t una = tx->una;
	uint64_t bad = tx->bad_acks;
	bool ok = a->acked_epoch == tx->epoch && a->cum - una <= tx->nxt - una;

	if (forged && ok) {
		/* Truthful only if it acks no more than the rx delivered. */
		bool truthful = z.rx.active && z.rx.epoch == tx->epoch &&
				!seq_before(z.rx.next, a->cum);
		if (!truthful)
			z.dirty = true;
	}
	/* Clean: an rx of this epoch never acks what was never sent. */
	if (!forged && !z.dirty && a->acked_epoch == tx->epoch)
		CHECK(!seq_before(tx->nxt, a->cum));

	rel_expect(una, ok ? a->cum : una, true);
	z.tx_released = 0;
	/* As the worker does: the grant first, then the ack. */
	gw_cc_set_grant(&tx->cc, a->grant ? a->grant * (uint64_t)GW_ACK_GRANT_UNIT : UINT64_MAX);
	int rc = gw_lane_tx_ack(tx, a, z.now);
	z.rel_open = false;
	TRACE("ack%s epoch %08x cum %u nbits %u -> %d, una %u\n", forged ? " (forged)" : "",
	      a->acked_epoch, a->cum, a->nbits, rc, tx->una);
	if (ok) {
		CHECK(rc >= 0 && (uint32_t)rc == a->cum - una && tx->una == a->cum);
		CHECK(z.tx_released == (unsigned)rc);
	} else {
		CHECK(rc == -EINVAL && tx->una == una && tx->bad_acks == bad + 1);
		CHECK(z.tx_released == 0);
	}
}

static void op_ack_build(bool lost)
{
	struct gw_ack a;

	if (!ack_build(&a) || lost)
		return;
	if (z.nack == FZ_ACKQ) /* the oldest is overtaken anyway */
		memmove(z.ackq, z.ackq + 1, sizeof(z.ackq[0]) * --z.nack);
	z.ackq[z.nack++] = a;
}

static void op_ack_deliver(struct fz_in *in, bool keep)
{
	if (!z.nack)
		return;
	unsigned i = rd8(in) % z.nack;
	struct gw_ack a = z.ackq[i];
	if (!keep)
		z.ackq[i] = z.ackq[--z.nack];
	ack_apply(&a, false);
}

static void op_ack_forged(struct fz_in *in, unsigned arg)
{
	struct gw_lane_tx *tx = &z.tx;
	struct gw_ack a;
	memset(&a, 0, sizeof(a));

	switch (arg & 3) {
	case 0:
		a.cum = tx->una + (uint32_t)(int8_t)rd8(in);
		break;
	case 1:
		a.cum = tx->nxt - (uint32_t)(int8_t)rd8(in);
		break;
	case 2:
		a.cum = rd32(in);
		break;
	default:
		a.cum = z.rx.next; /* what the rx would say, with a bitmap of our own */
		break;
	}
	a.acked_epoch = (arg & 4) ? rd32(in) : tx->epoch;
	a.nbits = rd16(in);
	a.grant = rd16(in); /* any grant, as a peer may write */
	if (arg & 8)
		for (unsigned i = 0; i < sizeof(a.sack); i++)
			a.sack[i] = rd8(in);
	else
		memset(a.sack, 0xff, sizeof(a.sack)); /* everything held: a lying rx */
	ack_apply(&a, true);
}

static void op_forged_hdr(struct fz_in *in, unsigned arg)
{
	struct gw_lane_rx *rx = &z.rx;
	struct gw_hdr h = { .type = GW_FT_DATA };

	h.epoch = (arg & 1) ? rd32(in) : (arg & 2) ? z.tx.epoch : rx->epoch;
	h.seq = (arg & 4) ? rd32(in) : rx->next + (uint32_t)(int8_t)rd8(in);
	h.base = (arg & 8) ? rd32(in) : rx->next + (uint32_t)(int8_t)rd8(in);
	z.dirty = true;
	rx_offer(NULL, &h, FZ_OPS_FRAMES, 0, true);
}

static void op_due(struct fz_in *in, unsigned max)
{
	struct gw_lane_tx *tx = &z.tx;
	uint8_t lost = rd8(in);
	bool finite = tx->rto_max_ns <= FZ_RTO_FINITE;
	uint32_t una = tx->una, inflight = gw_lane_tx_inflight(tx);

	unsigned n = gw_lane_tx_due(tx, z.now, z.out, max);
	TRACE("due at %llu max %u -> %u\n", (unsigned long long)z.now, max, n);
	CHECK(n <= max && n <= inflight);
	uint32_t last = 0;
	for (unsigned i = 0; i < n; i++) {
		struct fz_frame *f = fz_frame_of(z.out[i]);
		uint32_t off = f->seq - una;
		CHECK(f->owner == FZ_TX && off < inflight);
		CHECK(i == 0 || off > last); /* oldest first, each once */
		last = off;
		/* Not a storm: a hole waits rto_min / 4 at least, the rest longer. */
		CHECK(z.now - f->sent_ns >= tx->rto_min_ns / 4);
	}
	/* Unless cut short by max, every frame sent rto_max ago is due. */
	if (n < max && finite) {
		for (uint32_t seq = una, i = 0; seq != tx->nxt; seq++) {
			struct fz_frame *f = &pool[z.tx_ring[seq & (tx->win - 1)]];
			bool out = i < n && z.out[i] == f;
			if (out)
				i++;
			if (z.now - f->sent_ns >= tx->rto_max_ns)
				CHECK(out);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		struct fz_frame *f = z.out[i];
		f->sent_ns = z.now;
		f->base = tx->una; /* sent again with the current base, as the worker does */
		if (!(lost >> (i % 8) & 1) && z.nlink < FZ_LINK)
			z.link[z.nlink++] = (int32_t)(f - pool);
	}
	/* The same instant again: nothing is due twice. */
	if (n < max)
		CHECK(gw_lane_tx_due(tx, z.now, z.out, GW_LANE_WIN_MAX) == 0);
}

static void time_step(uint64_t d)
{
	z.now = d < FZ_NOW_MAX - z.now ? z.now + d : FZ_NOW_MAX;
}

/*
 * With a perfect link and no new frames, retransmissions alone must get
 * every frame in flight acknowledged: a lane that waits for new traffic to
 * move would hold its last messages forever.
 */
static void drain(void)
{
	struct gw_lane_tx *tx = &z.tx;
	struct gw_lane_rx *rx = &z.rx;

	if (fz_no_drain || z.dirty || tx->rto_max_ns > FZ_RTO_FINITE)
		return;
	TRACE("drain: una %u nxt %u\n", tx->una, tx->nxt);
	/* Each round delivers at least one frame: bounded by the window. */
	for (unsigned round = 0; round < 2 * GW_LANE_WIN_MAX + 4; round++) {
		uint32_t inflight = gw_lane_tx_inflight(tx);
		if (!inflight)
			return;
		time_step(tx->rto_max_ns);
		if (z.now == FZ_NOW_MAX)
			return;
		z.ops++;
		unsigned n = gw_lane_tx_due(tx, z.now, z.out, GW_LANE_WIN_MAX);
		CHECK(n == inflight); /* everything is due after rto_max */
		for (unsigned i = 0; i < n; i++) {
			struct fz_frame *f = fz_frame_of(z.out[i]);
			f->sent_ns = z.now;
			f->base = tx->una;
			/* What the rx would drop anyway is not copied (table space). */
			/* (after the frame's base has moved the rx on) */
			uint32_t next = seq_before(rx->next, f->base) ? f->base : rx->next;
			if (rx->active && rx->epoch == f->epoch && !seq_before(f->seq, next) &&
			    f->seq - next >= rx->win)
				continue;
			if (z.npool == FZ_FRAMES)
				return;
			deliver(f, FZ_FRAMES, 0, true);
		}
		op_pop(UINT32_MAX);
		struct gw_ack a;
		if (ack_build(&a))
			ack_apply(&a, false);
		check_all(true);
	}
	fprintf(stderr, "fuzz_lane: the lane does not drain: una %u nxt %u, rx next %u\n",
		tx->una, tx->nxt, rx->next);
	if (rx->active && rx->epoch == tx->epoch && seq_before(rx->next, tx->una))
		fprintf(stderr, "fuzz_lane: the rx waits for seq %u, which the tx released on an "
				"ack: it took its next from the base of a retransmitted frame, "
				"stale since\n", rx->next);
	CHECK(gw_lane_tx_inflight(tx) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *t = getenv("FZ_TRACE");
	fz_trace = t && *t && *t != '0';
	t = getenv("FZ_NO_DRAIN");
	fz_no_drain = t && *t && *t != '0';
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };

	memset(&z, 0, sizeof(z));
	z.now = rd32(&in); /* time starts anywhere */
	tx_setup(&in, rd32(&in));
	rx_setup(rd8(&in));
	check_all(true);

	while (in.n) {
		uint8_t b = rd8(&in);
		unsigned arg = b >> 4;
		z.ops++;
		switch (b & 15) {
		case 0:
		case 1:
			op_push((arg & 7) + 1, arg & 8);
			break;
		case 2:
		case 3:
			op_deliver(&in, arg & 1, arg >> 1); /* the member it came in on */
			break;
		case 4:
			op_pop(arg + 1);
			break;
		case 5:
			op_ack_build(arg & 1);
			break;
		case 6:
			op_ack_deliver(&in, arg & 1);
			break;
		case 7:
			op_ack_forged(&in, arg);
			break;
		case 8:
			time_step((uint64_t)(rd8(&in) + 1) << (2 * arg));
			break;
		case 9: {
			/* To the tx's own deadline, where something may be due. */
			uint64_t d = gw_lane_tx_next_deadline(&z.tx);
			if (d < FZ_NOW_MAX && d > z.now)
				z.now = d;
			time_step(arg);
			break;
		}
		case 10:
		case 11:
			op_due(&in, arg == 15 ? GW_LANE_WIN_MAX : arg + 1);
			break;
		case 12:
			op_forged_hdr(&in, arg);
			break;
		case 13:
			/* The sender restarts: a new epoch, all in flight dropped. */
			tx_fini();
			tx_setup(&in, z.tx.epoch + 1 + arg);
			z.gave_up = false; /* a new instance gave nothing up */
			break;
		case 14:
			/* The receiver restarts: it can no longer know what it delivered. */
			rx_fini();
			rx_setup(rd8(&in));
			z.dup_ok = true;
			break;
		default:
			if (arg >= 12)
				op_abandon(arg - 11);
			else
				z.rx.at.off = rd32(&in) | 1; /* partway through the head frame */
			break;
		}
		check_all(z.ops % 4 == 0 || !in.n);
	}
	drain();

	tx_fini();
	rx_fini();
	for (unsigned i = 0; i < z.npool; i++)
		CHECK(pool[i].owner == FZ_GONE);
	return 0;
}
