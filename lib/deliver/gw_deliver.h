/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_deliver: what to do when a destination ring is full (pure C).
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

#endif
