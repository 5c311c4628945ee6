/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_deliver: what to do when a destination ring is full, and when to wake
 * a client that sleeps on the receiver's CPU (pure C).
 *
 * Hold, then reject. A full destination holds its lane (and so the
 * sender's window) for at most block_ns from the moment it filled. After
 * that it is stopped: what is for it is refused at once, without holding
 * anything, until its reader has drained it to half. A reader that takes a
 * message now and then cannot keep the lane at its pace, and one that
 * stopped delays the other destinations once, by at most that bound.
 *
 * A REJECT is owed, not offered: it cannot itself be refused. One that
 * finds its sender's channel full holds the lane while that sender keeps
 * reading, whatever the messages' state, up to GW_DELIVER_OWED_BLOCKS
 * times block_ns in all (the reader's position is the client's word, and
 * others may take the room it frees); a sender that read nothing for
 * block_ns, or that long, loses it (counted). A busy sender that drains
 * slowly is told everything.
 *
 * Moved out of the daemon's receiver so the policy can be tested with a
 * made-up clock. No DPDK; the caller says what time it is, whether the
 * ring is below half, and how far its reader has read.
 */
#ifndef GW_DELIVER_H
#define GW_DELIVER_H

#include <stdbool.h>
#include <stdint.h>

/* One destination's state, as one receiver sees it. Zeroed: open. */
struct gw_deliver_hold {
	uint64_t full_since_ns; /* 0: not full (a clock started at 0 reads 1) */
	bool rejecting;         /* held past the bound: refuse until drained to half */
	uint64_t owed_first_ns; /* a REJECT waits since (0: none) */
	uint64_t owed_since_ns; /* ... and its reader last moved since */
	uint32_t owed_pos;      /* the reader's position then */
};

/* Is the destination taking deliveries? below_half: its reader has drained
 * it to half or less. Resets the state once it is below half. */
bool gw_deliver_open(struct gw_deliver_hold *h, bool below_half);

/* A delivery found it full at now: true = hold the lane and try again
 * later; false = refuse this record (its sender is told), and every record
 * until gw_deliver_open says open again. The first full moment starts the
 * clock; past block_ns it turns to rejecting. */
bool gw_deliver_full(struct gw_deliver_hold *h, uint64_t now, uint64_t block_ns);

#define GW_DELIVER_OWED_BLOCKS 10 /* a REJECT's whole wait, in block_ns */

/* A REJECT found it full at now, its reader at read_pos (any counter the
 * reader advances): true = hold the lane and try again later; false = the
 * reader has not moved for block_ns, or the REJECT has waited
 * GW_DELIVER_OWED_BLOCKS times that: give it up. */
bool gw_deliver_owed(struct gw_deliver_hold *h, uint64_t now, uint64_t block_ns,
		     uint32_t read_pos);

/* The REJECT went in: the next one that waits starts a new clock. */
static inline void gw_deliver_owed_done(struct gw_deliver_hold *h)
{
	h->owed_first_ns = h->owed_since_ns = 0;
}

/*
 * Deferred wakes. A receiver shows a client its new messages (the store a
 * polling client reads) without waking it when the client sleeps on the
 * receiver's own CPU: every wake there switches to the client for a few
 * hundred messages and back. Such clients wait in a set, by id (one may
 * leave between steps), and the set is woken at the end of a step that
 * found no more work (the lcore is about to let them run), that held a
 * frame (one of them may have to read for the lane to move), when the
 * oldest has waited GW_DELIVER_WAKE_WAIT_NS, or when the gateway stops (there
 * may be no step after this one). A client asleep on another CPU is woken
 * at once and never enters the set.
 */
#define GW_DELIVER_WAKES_MAX 64
#define GW_DELIVER_WAKE_WAIT_NS 200000

struct gw_deliver_wakes {
	uint16_t id[GW_DELIVER_WAKES_MAX];
	unsigned n;        /* other threads read it (gw_deliver_wake_count) */
	uint64_t since_ns; /* when the oldest entered */
};

/* Client id was shown messages at now and sleeps on this CPU: wake it
 * later. An id already waiting keeps its place and the oldest time.
 * false: the set is full; wake it (gw_deliver_wake_done) and add again. */
bool gw_deliver_wake_later(struct gw_deliver_wakes *w, uint16_t id, uint64_t now);

/* Why a set is woken: not (0), or the first reason that holds. */
enum gw_deliver_wake {
	GW_DELIVER_WAKE_NOT = 0,
	GW_DELIVER_WAKE_IDLE,  /* the step found no more work */
	GW_DELIVER_WAKE_HELD,  /* it held a frame */
	GW_DELIVER_WAKE_STOP,  /* the gateway stops */
	GW_DELIVER_WAKE_AGE,   /* the oldest entered GW_DELIVER_WAKE_WAIT_NS ago */
};

/* At the end of a step at now: why to wake the set, or GW_DELIVER_WAKE_NOT.
 * work: the step delivered something (more may follow at once); held: it
 * left a frame held; draining: the gateway stops. Never for an empty set. */
enum gw_deliver_wake gw_deliver_wake_due(const struct gw_deliver_wakes *w, uint64_t now,
					 bool work, bool held, bool draining);

/* The set was woken: empty it. */
static inline void gw_deliver_wake_done(struct gw_deliver_wakes *w)
{
	__atomic_store_n(&w->n, 0, __ATOMIC_RELAXED);
}

/* How many wait, from any thread (a stopping gateway waits for none). */
static inline unsigned gw_deliver_wake_count(const struct gw_deliver_wakes *w)
{
	return __atomic_load_n(&w->n, __ATOMIC_RELAXED);
}

#endif
