/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_lane: the reliable-lane state machine; gw_lane.h has the contract.
 *
 * Sequence numbers wrap, so they are only compared by signed difference or
 * as unsigned offsets from una/next. Time must never go backwards.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gw_lane.h"

/* Every seq a receiver window can hold past next must fit in one SACK. */
_Static_assert(GW_LANE_WIN_MAX - 1 <= GW_SACK_BITS, "SACK bitmap shorter than the window");

static inline bool gw_seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static inline uint64_t gw_min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* sent + wait, saturating: rto_max may be as large as the caller likes. */
static inline uint64_t gw_lane_deadline(uint64_t sent, uint64_t wait)
{
	return sent > UINT64_MAX - wait ? UINT64_MAX : sent + wait;
}

static bool gw_lane_win_ok(uint32_t win)
{
	return win >= 1 && win <= GW_LANE_WIN_MAX && (win & (win - 1)) == 0;
}

/* Timeout of a new frame: twice the smoothed rtt within [rto_min, rto_max]. */
static uint64_t gw_lane_tx_rto(const struct gw_lane_tx *tx)
{
	if (tx->srtt_ns >= tx->rto_max_ns / 2)
		return tx->rto_max_ns;
	return 2 * tx->srtt_ns > tx->rto_min_ns ? 2 * tx->srtt_ns : tx->rto_min_ns;
}

/*
 * Fast-retransmit guard. A hole below a sacked frame is sent again only
 * once its last copy has had a round trip and a quarter to arrive (the
 * quarter absorbs reordering and jitter), and only if the receiver has
 * made progress since that copy left (progress_ns). The first rule stops
 * every ack of a burst that still shows the hole from resending it; the
 * second stops holes from being resent every round trip into a dead link,
 * where only the backed-off timeout may fire. rto_min / 4 is the floor
 * before the first rtt sample and when the rtt is below timer resolution.
 */
static uint64_t gw_lane_tx_guard(const struct gw_lane_tx *tx)
{
	uint64_t g = tx->srtt_ns + tx->srtt_ns / 4;

	return g > tx->rto_min_ns / 4 ? g : tx->rto_min_ns / 4;
}

/* The slot is no longer held by the receiver (released, abandoned, or
 * its sack gone stale): back on the path as far as the window counts. */
static void gw_lane_tx_unsack(struct gw_lane_tx *tx, struct gw_lane_slot *s)
{
	if (s->sacked)
		tx->sacked_bytes -= s->bytes;
	s->sacked = false;
}

/* How long after its last transmission the frame at seq is due again. */
static uint64_t gw_lane_tx_wait(const struct gw_lane_tx *tx, const struct gw_lane_slot *s,
				uint32_t seq, uint64_t guard)
{
	/* Held by the receiver: only a receiver restart can lose it. */
	if (s->sacked)
		return tx->rto_max_ns;
	if (seq - tx->una < tx->sack_hi - tx->una && s->sent_ns < tx->progress_ns)
		return gw_min_u64(guard, s->rto_ns);
	return s->rto_ns;
}

int gw_lane_tx_init(struct gw_lane_tx *tx, uint32_t win, uint32_t epoch, uint64_t rto_min_ns,
		    uint64_t rto_max_ns, gw_lane_release_t release, void *ctx)
{
	if (!gw_lane_win_ok(win) || rto_min_ns == 0 || rto_min_ns > rto_max_ns || !release)
		return -EINVAL;
	memset(tx, 0, sizeof(*tx));
	tx->slots = calloc(win, sizeof(*tx->slots));
	if (!tx->slots)
		return -ENOMEM;
	tx->epoch = epoch;
	tx->win = win;
	tx->rto_min_ns = rto_min_ns;
	tx->rto_max_ns = rto_max_ns;
	tx->release = release;
	tx->ctx = ctx;
	tx->due_ns = UINT64_MAX;
	return 0;
}

void gw_lane_tx_fini(struct gw_lane_tx *tx)
{
	for (; tx->una != tx->nxt; tx->una++)
		tx->release(tx->slots[tx->una & (tx->win - 1)].frame, tx->ctx);
	free(tx->slots);
	tx->slots = NULL;
	tx->due_ns = UINT64_MAX;
	tx->inflight_bytes = tx->sacked_bytes = 0;
}

void gw_lane_tx_set_cc(struct gw_lane_tx *tx, const struct gw_cc_params *p)
{
	gw_cc_init(&tx->cc, p);
}

uint32_t gw_lane_tx_push(struct gw_lane_tx *tx, void *frame, uint32_t bytes, uint64_t now)
{
	uint32_t seq = tx->nxt++;
	struct gw_lane_slot *s = &tx->slots[seq & (tx->win - 1)];

	/* Nothing was in flight: pin sack_hi, which must stay in [una, nxt]. */
	if (seq == tx->una)
		tx->sack_hi = seq;
	*s = (struct gw_lane_slot){
		.frame = frame,
		.sent_ns = now,
		.rto_ns = gw_lane_tx_rto(tx),
		.nsent = 1,
		.bytes = bytes,
	};
	tx->frames++;
	tx->inflight_bytes += bytes;
	gw_cc_on_send(&tx->cc, bytes, now);
	tx->due_ns = gw_min_u64(tx->due_ns, gw_lane_deadline(now, s->rto_ns));
	return seq;
}

int gw_lane_tx_ack(struct gw_lane_tx *tx, const struct gw_ack *ack, uint64_t now)
{
	uint32_t mask = tx->win - 1;
	uint32_t una = tx->una;

	/* As an offset from una the range check is exact across the wrap. */
	if (ack->acked_epoch != tx->epoch || ack->cum - una > tx->nxt - una) {
		tx->bad_acks++;
		return -EINVAL;
	}

	/*
	 * One rtt sample per ack: the shortest among the released frames sent
	 * once (Karn) and never seen held (sacked). A held frame waited at the
	 * receiver for an earlier one, and so do most frames older than the
	 * newest released: their samples would only inflate srtt.
	 */
	uint64_t rtt = UINT64_MAX, bytes = 0;
	int n = 0;
	for (; una != ack->cum; una++, n++) {
		struct gw_lane_slot *s = &tx->slots[una & mask];

		if (s->nsent == 1 && !s->sacked)
			rtt = gw_min_u64(rtt, now - s->sent_ns);
		gw_lane_tx_unsack(tx, s);
		bytes += s->bytes;
		tx->release(s->frame, tx->ctx);
		s->frame = NULL;
	}
	tx->una = una;
	tx->inflight_bytes -= bytes;
	if (rtt != UINT64_MAX) {
		tx->srtt_ns = gw_cc_srtt(tx->srtt_ns, rtt);
		tx->rtt_hist[gw_lane_rtt_bucket(rtt)]++;
		tx->rtt_sum_ns += rtt;
	}
	/* A sample of 0 ns (a clock too coarse) says nothing to the controller. */
	gw_cc_on_ack(&tx->cc, bytes, rtt != UINT64_MAX ? rtt : 0, tx->srtt_ns, now);
	if (n)
		tx->progress_ns = now;
	if (gw_seq_before(tx->sack_hi, una))
		tx->sack_hi = una;

	/* Bit i says una + 1 + i is held; bits at or past nxt say nothing. */
	uint32_t inflight = tx->nxt - una;
	uint32_t nbits = ack->nbits < GW_SACK_BITS ? ack->nbits : GW_SACK_BITS;
	if (nbits >= inflight)
		nbits = inflight ? inflight - 1 : 0;
	for (uint32_t i = 0; i < nbits; i++) {
		if (!(ack->sack[i / 8] & (1u << (i % 8))))
			continue;
		struct gw_lane_slot *s = &tx->slots[(una + 1 + i) & mask];
		if (!s->sacked) {
			s->sacked = true;
			tx->sacked_bytes += s->bytes;
			tx->progress_ns = now;
		}
		if (gw_seq_before(tx->sack_hi, una + 2 + i))
			tx->sack_hi = una + 2 + i;
	}
	tx->acks++;

	/*
	 * Releases and new sacks only push timeouts later, so due_ns stays a
	 * valid lower bound, except for holes: this ack may have made them
	 * eligible or shrunk the guard. Let the next gw_lane_tx_due rescan.
	 */
	if (una == tx->nxt)
		tx->due_ns = UINT64_MAX;
	else if (tx->sack_hi != una)
		tx->due_ns = gw_min_u64(tx->due_ns, now);
	return n;
}

void gw_lane_tx_abandon(struct gw_lane_tx *tx)
{
	struct gw_lane_slot *s = &tx->slots[tx->una & (tx->win - 1)];

	if (tx->una == tx->nxt)
		return;
	tx->release(s->frame, tx->ctx);
	s->frame = NULL;
	tx->inflight_bytes -= s->bytes;
	gw_lane_tx_unsack(tx, s);
	tx->una++;
	if (gw_seq_before(tx->sack_hi, tx->una))
		tx->sack_hi = tx->una;
	if (tx->una == tx->nxt)
		tx->due_ns = UINT64_MAX;
}

unsigned gw_lane_tx_due(struct gw_lane_tx *tx, uint64_t now, void **out, unsigned max)
{
	/* The common case on every poll: nothing can be due yet. */
	if (now < tx->due_ns)
		return 0;

	uint32_t mask = tx->win - 1;
	uint64_t guard = gw_lane_tx_guard(tx);
	uint64_t next = UINT64_MAX;
	unsigned n = 0;

	for (uint32_t seq = tx->una; seq != tx->nxt; seq++) {
		struct gw_lane_slot *s = &tx->slots[seq & mask];
		uint64_t wait = gw_lane_tx_wait(tx, s, seq, guard);

		if (now - s->sent_ns >= wait) {
			if (n == max) {
				next = now; /* the rest is unexamined: come back now */
				break;
			}
			/* A plain timeout backs off; a hole or a stale sack does not. */
			if (!s->sacked && now - s->sent_ns >= s->rto_ns)
				s->rto_ns = s->rto_ns >= tx->rto_max_ns / 2 ? tx->rto_max_ns :
									       2 * s->rto_ns;
			/* A stale sack is trusted again only when an ack repeats it. */
			gw_lane_tx_unsack(tx, s);
			s->sent_ns = now;
			if (s->nsent != UINT16_MAX)
				s->nsent++;
			tx->retrans++;
			out[n++] = s->frame;
			gw_cc_on_send(&tx->cc, s->bytes, now);
			wait = gw_lane_tx_wait(tx, s, seq, guard);
		}
		next = gw_min_u64(next, gw_lane_deadline(s->sent_ns, wait));
	}
	tx->due_ns = next;
	if (n)
		gw_cc_on_loss(&tx->cc, now);
	return n;
}

uint64_t gw_lane_tx_next_deadline(const struct gw_lane_tx *tx)
{
	return tx->due_ns;
}

int gw_lane_rx_init(struct gw_lane_rx *rx, uint32_t win, gw_lane_release_t release, void *ctx)
{
	if (!gw_lane_win_ok(win) || !release)
		return -EINVAL;
	memset(rx, 0, sizeof(*rx));
	rx->held = calloc(win, sizeof(*rx->held));
	if (!rx->held)
		return -ENOMEM;
	rx->win = win;
	rx->release = release;
	rx->ctx = ctx;
	return 0;
}

/* Release held frames below end (at most a window past next). */
static void gw_lane_rx_drop(struct gw_lane_rx *rx, uint32_t end)
{
	uint32_t mask = rx->win - 1;

	if (end - rx->next > rx->win)
		end = rx->next + rx->win;
	for (uint32_t seq = rx->next; seq != end; seq++) {
		void **slot = &rx->held[seq & mask];

		if (*slot) {
			rx->release(*slot, rx->ctx);
			*slot = NULL;
		}
	}
}

void gw_lane_rx_fini(struct gw_lane_rx *rx)
{
	gw_lane_rx_drop(rx, rx->next + rx->win);
	free(rx->held);
	free(rx->copies);
	rx->held = NULL;
	rx->copies = NULL;
	rx->active = false;
}

int gw_lane_rx_track_copies(struct gw_lane_rx *rx)
{
	/* Twice the window: a seq a window behind next (a late copy) and one
	 * a window ahead never share an entry. */
	if (!rx->copies && !(rx->copies = calloc(2 * rx->win, sizeof(*rx->copies))))
		return -ENOMEM;
	return 0;
}

/* The members that carried seq (0: none yet), and the entry and key to note another in. */
static uint8_t gw_lane_rx_seen(const struct gw_lane_rx *rx, uint32_t seq, uint64_t **e,
			       uint64_t *key)
{
	*e = &rx->copies[seq & (2 * rx->win - 1)];
	*key = (uint64_t)seq << 32 | (uint64_t)(rx->epoch & 0xffffffu) << 8;
	return (**e & ~(uint64_t)0xff) == *key ? (uint8_t)**e : 0;
}

/* Member carried seq: did another member carry it before and this one not? */
static bool gw_lane_rx_copy_of_other(struct gw_lane_rx *rx, uint32_t seq, unsigned member)
{
	uint64_t *e, key;
	uint8_t bit = (uint8_t)(1u << member), seen = gw_lane_rx_seen(rx, seq, &e, &key);

	*e = key | seen | bit;
	return seen && !(seen & bit);
}

bool gw_lane_rx_redundant(struct gw_lane_rx *rx, uint32_t epoch, uint32_t seq, unsigned member)
{
	if (!rx->copies || !rx->active || epoch != rx->epoch)
		return false;
	/* Delivered a little while ago, or held now. */
	bool have = gw_seq_before(seq, rx->next) ? rx->next - seq <= rx->win
						 : seq - rx->next < rx->win &&
							   rx->held[seq & (rx->win - 1)];
	uint64_t *e, key;
	uint8_t bit = (uint8_t)(1u << member), seen = gw_lane_rx_seen(rx, seq, &e, &key);
	if (!have || !seen || (seen & bit))
		return false;
	*e |= bit;
	rx->frames++;
	rx->redundant++;
	return true;
}

/* A frame already delivered or held: a copy we expected, or the sender's
 * retransmission, which says it missed our ack. */
static enum gw_lane_rx_verdict gw_lane_rx_dup(struct gw_lane_rx *rx, bool redundant)
{
	if (redundant) {
		rx->redundant++;
		return GW_RX_REDUNDANT;
	}
	rx->dups++;
	rx->ack_due = true;
	return GW_RX_DUP;
}

enum gw_lane_rx_verdict gw_lane_rx_accept_on(struct gw_lane_rx *rx, const struct gw_hdr *h,
					     void *frame, unsigned member)
{
	if (!rx->active || h->epoch != rx->epoch) {
		if (rx->active) {
			gw_lane_rx_drop(rx, rx->next + rx->win);
			rx->resets++;
		}
		rx->active = true;
		rx->epoch = h->epoch;
		rx->next = rx->top = h->base;
		rx->at = (struct gw_rx_cursor){ 0 };
	} else if (gw_seq_before(rx->next, h->base)) {
		/* The sender saw [next, base) acked: an earlier receiver delivered it. */
		gw_lane_rx_drop(rx, h->base);
		rx->next = h->base;
		rx->at = (struct gw_rx_cursor){ 0 };
	}
	rx->frames++;
	if (gw_seq_before(rx->top, rx->next))
		rx->top = rx->next;
	if (gw_seq_before(rx->top, h->seq))
		rx->gaps++; /* frames top..seq-1 have not come: lost, or late */
	if (!gw_seq_before(h->seq, rx->top))
		rx->top = h->seq + 1;
	bool other = rx->copies && gw_lane_rx_copy_of_other(rx, h->seq, member);

	if (gw_seq_before(h->seq, rx->next))
		return gw_lane_rx_dup(rx, other);
	if (h->seq - rx->next >= rx->win) {
		rx->out_of_window++;
		return GW_RX_BEYOND;
	}
	/* Held frames all lie in [next, next + win): one slot per seq. */
	void **slot = &rx->held[h->seq & (rx->win - 1)];
	if (*slot)
		return gw_lane_rx_dup(rx, other);
	*slot = frame;
	rx->ack_due = true;
	return GW_RX_STORED;
}

void gw_lane_rx_pop(struct gw_lane_rx *rx)
{
	void **slot = &rx->held[rx->next & (rx->win - 1)];

	rx->release(*slot, rx->ctx);
	*slot = NULL;
	rx->next++;
	rx->at = (struct gw_rx_cursor){ 0 };
	rx->ack_due = true;
}

void gw_lane_rx_ack(struct gw_lane_rx *rx, struct gw_ack *ack)
{
	uint32_t mask = rx->win - 1;
	uint32_t top = 0;

	memset(ack->sack, 0, sizeof(ack->sack));
	/* next + 1 .. next + win - 1 are the only seqs that can be held. */
	for (uint32_t i = 0; i + 1 < rx->win; i++) {
		if (rx->held[(rx->next + 1 + i) & mask]) {
			ack->sack[i / 8] |= (uint8_t)(1u << (i % 8));
			top = i + 1;
		}
	}
	ack->acked_epoch = rx->epoch;
	ack->cum = rx->next;
	ack->grant = 0;
	ack->nbits = (uint16_t)((top + 7) & ~7u);
	rx->ack_due = false;
}
