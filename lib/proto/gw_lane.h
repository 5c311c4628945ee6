/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_lane: the reliable-lane state machine (pure C, no DPDK, no clock).
 *
 * A lane is one sender's stream of DATA frames to one peer, numbered by seq.
 * The sending half keeps every frame until the receiver says it is delivered
 * (cumulative ack), retransmits on timeout and on gaps that the selective
 * ack reveals, and holds at most `win` frames: a full window is the
 * backpressure that stops the batcher draining client channels.
 *
 * The receiving half holds frames that arrive early, hands them out strictly
 * in order, suppresses duplicates and builds acks. A frame counts as
 * delivered (and so cumulatively acked) only after the caller pops it, i.e.
 * once every record is in its destination ring. SACK bits mean "held", not
 * "delivered": they only spare retransmissions.
 *
 * With a parallel port every frame comes once per member, and the first
 * copy of each seq is the one kept: the window above already drops the
 * rest in O(1), and never drops a frame for a gap seen on one member only
 * (the frame is held until the other member's copy fills the gap). What
 * the copies table adds is telling the expected copy of a transmission
 * another member brought first (redundant) from a duplicate that a
 * retransmission brought; it counts, it never decides what is delivered.
 *
 * Frames are opaque handles (an mbuf, a test buffer); time is a caller
 * supplied nanosecond count. Both halves call `release` for frames they drop.
 */
#ifndef GW_LANE_H
#define GW_LANE_H

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "gw_cc.h"
#include "gw_wire.h"

#define GW_LANE_WIN_MAX GW_SACK_BITS

/* Round trips sampled (srtt's samples) by bucket, for operators'
 * histograms: bucket b counts samples up to 16 us << b, the last one the
 * rest (16 us .. 262 ms covers a host's loopback to a WAN). */
#define GW_LANE_RTT_BUCKETS 16
#define GW_LANE_RTT_FIRST_NS 16000ull

typedef void (*gw_lane_release_t)(void *frame, void *ctx);

struct gw_lane_slot {
	void *frame;
	uint64_t sent_ns; /* last (re)transmission */
	uint64_t rto_ns;  /* current timeout of this frame, doubled per retransmit */
	uint16_t nsent;
	bool sacked;
	uint32_t tag;   /* the caller's number for the frame (gw_lane_tx_tag) */
	uint32_t bytes; /* on the wire, for the congestion window */
};

/* Lane state is written by one lcore (a worker, a receiver): each starts a
 * cache line of its own. */
struct gw_lane_tx {
	alignas(64) uint32_t epoch;
	uint32_t una; /* oldest unacknowledged seq */
	uint32_t nxt; /* next seq to assign */
	uint32_t win; /* power of two, at most GW_LANE_WIN_MAX */
	uint64_t rto_min_ns, rto_max_ns;
	uint64_t srtt_ns; /* smoothed round trip of frames sent once */
	/* private to gw_lane.c */
	uint32_t sack_hi;     /* one past the highest sacked seq, in [una, nxt] */
	uint64_t progress_ns; /* last ack that released or newly sacked a frame */
	uint64_t due_ns;      /* lower bound of the next retransmission time */
	struct gw_lane_slot *slots;
	gw_lane_release_t release;
	void *ctx;
	uint64_t inflight_bytes;
	uint64_t sacked_bytes; /* of those, held by the receiver: off the path */
	struct gw_cc cc; /* off unless gw_lane_tx_set_cc */
	/* counters (msgs: kept by the caller, which knows what a frame holds) */
	uint64_t frames, retrans, acks, bad_acks, msgs;
	uint64_t rtt_hist[GW_LANE_RTT_BUCKETS], rtt_sum_ns;
};

/* A caller's progress in a frame it delivers piece by piece (a record may
 * go to several destinations); zeroed with a new head frame. */
struct gw_rx_cursor {
	uint32_t off;     /* records or bytes done */
	uint32_t sub;     /* in the record at off: destinations from this id on are to do */
	bool told;        /* that record's sender has been told of it once */
	uint64_t held_ns; /* since when it is held there (0: not held) */
};

struct gw_lane_rx {
	alignas(64) bool active;
	uint32_t epoch; /* of the sender this state belongs to */
	uint32_t next;  /* next seq to deliver */
	uint32_t win;
	struct gw_rx_cursor at; /* the caller's progress in the head frame */
	uint64_t busy_ns; /* the caller's: when it last delivered a frame */
	uint32_t top;     /* one past the highest seq seen since the last reset */
	bool ack_due;
	void **held;
	/* which members carried each recent seq (NULL: not tracked); 2 * win
	 * entries of seq << 32 | epoch's low 24 bits << 8 | member bits */
	uint64_t *copies;
	gw_lane_release_t release;
	void *ctx;
	/* counters (msgs: kept by the caller, which knows what a frame holds) */
	uint64_t frames, dups, out_of_window, resets, redundant, msgs;
	uint64_t gaps; /* frames that came past a gap: the path lost some */
};

/* Results of gw_lane_rx_accept. */
enum gw_lane_rx_verdict {
	GW_RX_STORED = 0,   /* the lane now owns the frame */
	GW_RX_DUP = 1,      /* already delivered or held: caller frees it */
	GW_RX_BEYOND = 2,   /* past the window: caller frees it, it will come again */
	GW_RX_REDUNDANT = 3, /* the same transmission, brought first by another
			      * member: caller frees it (copies tracked only) */
};

#define GW_LANE_MEMBERS_MAX 8

/*
 * win is a power of two up to GW_LANE_WIN_MAX; 0 < rto_min_ns <= rto_max_ns;
 * release must be set. Returns 0, -EINVAL or -ENOMEM. Tests may set
 * una = nxt to any value right after init to start near the wrap.
 */
int gw_lane_tx_init(struct gw_lane_tx *tx, uint32_t win, uint32_t epoch, uint64_t rto_min_ns,
		    uint64_t rto_max_ns, gw_lane_release_t release, void *ctx);
/* Release every frame still held. */
void gw_lane_tx_fini(struct gw_lane_tx *tx);
/* Put the lane under congestion control (gw_cc.h); init leaves it off. */
void gw_lane_tx_set_cc(struct gw_lane_tx *tx, const struct gw_cc_params *p);

/* Is there room in the window? */
static inline bool gw_lane_tx_open(const struct gw_lane_tx *tx)
{
	return tx->nxt - tx->una < tx->win;
}

/* May a new frame go now: room in the window, and the congestion window
 * and pacing allow it (counted when they do not). What the congestion
 * window counts is on the path: frames the receiver holds (sacked) are
 * not (RFC 6675's pipe), or a loss would stop the lane for the round
 * trips its repair takes, on top of the cut. */
static inline bool gw_lane_tx_may_send(struct gw_lane_tx *tx, uint64_t now)
{
	return gw_lane_tx_open(tx) &&
	       gw_cc_may_send(&tx->cc, tx->inflight_bytes - tx->sacked_bytes, now, true);
}

/* The rtt_hist bucket of a sample of ns. */
static inline unsigned gw_lane_rtt_bucket(uint64_t ns)
{
	unsigned b = 0;
	while (b < GW_LANE_RTT_BUCKETS - 1 && ns > GW_LANE_RTT_FIRST_NS << b)
		b++;
	return b;
}

static inline uint32_t gw_lane_tx_inflight(const struct gw_lane_tx *tx)
{
	return tx->nxt - tx->una;
}

/*
 * Take ownership of a frame of bytes built with seq = tx->nxt and base =
 * tx->una and just transmitted at now. The window must be open. Returns
 * its seq.
 */
uint32_t gw_lane_tx_push(struct gw_lane_tx *tx, void *frame, uint32_t bytes, uint64_t now);

/*
 * Apply an ack. Releases the frames it covers and returns how many, or
 * -EINVAL for an ack of another epoch or outside [una, nxt] (counted in
 * bad_acks; a stale ack overtaken by a newer one is one of these).
 */
int gw_lane_tx_ack(struct gw_lane_tx *tx, const struct gw_ack *ack, uint64_t now);

/*
 * Frames to transmit again now. Each must go out with base = tx->una as it
 * is now, not as it was when first sent: a receiver that restarted takes
 * its starting point from base, and frames below una are released.
 * Oldest seq first: unacked frames whose
 * timeout expired (which doubles it, up to rto_max), and holes below a
 * selectively acked frame that were last sent more than a round trip ago
 * and before the receiver last made progress. A sacked frame is sent again
 * only after rto_max (the receiver may have restarted). Marks them sent at
 * now. Returns how many went into out. O(1) while nothing can be due.
 */
unsigned gw_lane_tx_due(struct gw_lane_tx *tx, uint64_t now, void **out, unsigned max);

/*
 * Giving up on a peer that went down: the oldest frame in flight (NULL if
 * none), and abandoning it (released, una moves past it). The caller tells
 * the senders of its records first. If the peer comes back, the base of
 * the next frame makes it skip the abandoned ones, so nothing arrives
 * after its sender was told it did not.
 */
static inline void *gw_lane_tx_oldest(const struct gw_lane_tx *tx)
{
	return tx->una != tx->nxt ? tx->slots[tx->una & (tx->win - 1)].frame : NULL;
}
void gw_lane_tx_abandon(struct gw_lane_tx *tx);

/* A number of the caller's for the frame it pushed last, read back while
 * that frame is the oldest in flight (gridwired: the frame's serial, for
 * settling what its clients sent). */
static inline void gw_lane_tx_tag(struct gw_lane_tx *tx, uint32_t tag)
{
	tx->slots[(tx->nxt - 1) & (tx->win - 1)].tag = tag;
}
static inline uint32_t gw_lane_tx_oldest_tag(const struct gw_lane_tx *tx)
{
	return tx->slots[tx->una & (tx->win - 1)].tag;
}

/*
 * Earliest time at which gw_lane_tx_due may return something (UINT64_MAX if
 * idle). Exact after gw_lane_tx_due; acks leave it a lower bound (one that
 * leaves holes sets it to the ack's time), so waking at it may find nothing
 * due, and that gw_lane_tx_due call makes it exact again.
 */
uint64_t gw_lane_tx_next_deadline(const struct gw_lane_tx *tx);

int gw_lane_rx_init(struct gw_lane_rx *rx, uint32_t win, gw_lane_release_t release, void *ctx);
void gw_lane_rx_fini(struct gw_lane_rx *rx);

/* Track which member brought each frame (a parallel port): -ENOMEM or 0. */
int gw_lane_rx_track_copies(struct gw_lane_rx *rx);

/*
 * Is a frame of (epoch, seq) that came in on member the copy of a
 * transmission this lane holds or delivered, which another member brought
 * and this one had not (a parallel port's second copy)? Then it is counted
 * as redundant, and the caller drops it without checking its CRC: the
 * bytes are those of a frame already verified, or corrupt, and either way
 * dropped. Nothing that decides delivery changes. False when copies are
 * not tracked or anything is in doubt (the caller goes the full way).
 */
bool gw_lane_rx_redundant(struct gw_lane_rx *rx, uint32_t epoch, uint32_t seq, unsigned member);

/*
 * Offer a checked DATA frame that came in on member (below
 * GW_LANE_MEMBERS_MAX; 0 where there is one link). A new epoch resets the
 * lane (the sender restarted); base moves delivery past frames the sender
 * knows were acked.
 */
enum gw_lane_rx_verdict gw_lane_rx_accept_on(struct gw_lane_rx *rx, const struct gw_hdr *h,
					     void *frame, unsigned member);

static inline enum gw_lane_rx_verdict gw_lane_rx_accept(struct gw_lane_rx *rx,
							const struct gw_hdr *h, void *frame)
{
	return gw_lane_rx_accept_on(rx, h, frame, 0);
}

/* The frame to deliver next, or NULL while it has not arrived. */
static inline void *gw_lane_rx_head(const struct gw_lane_rx *rx)
{
	return rx->active ? rx->held[rx->next & (rx->win - 1)] : NULL;
}

/* The head frame (which must be there) is fully delivered: release it and move on. */
void gw_lane_rx_pop(struct gw_lane_rx *rx);

/* Fill an ack for the current state (no grant) and clear ack_due. */
void gw_lane_rx_ack(struct gw_lane_rx *rx, struct gw_ack *ack);

#endif
