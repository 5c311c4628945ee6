/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_batch: drains client channels into frames, ecall's rule taken to frames.
 *
 * One pass takes whatever is already waiting in each channel (up to a
 * quantum per channel, for fairness), appends it as records to an open frame
 * per destination node, ships a frame the moment the next record would not
 * fit, and at the end of the pass ships every frame that holds anything.
 * It never waits for a frame to fill: at low load a frame carries one
 * message, under load the backlog is the batch.
 *
 * A message published to a topic (node GW_CHAN_NODE_TOPIC) goes as one
 * PUB record to each node that subscribes (`fanout` says which, this node
 * included for its own subscribers); a lane that is full stops it, and the
 * next pass goes on with the nodes it had not reached: none gets two.
 *
 * The batcher knows nothing of mbufs or lanes: `open` hands it a payload
 * buffer for a node (or says the lane's window is full, or the node is
 * unknown), `ship` takes a finished one. A full window leaves the rest of
 * that channel waiting in shared memory, which is how backpressure reaches
 * the client as -EAGAIN.
 */
#ifndef GW_BATCH_H
#define GW_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_chan.h"
#include "gw_wire.h"

struct gw_batch_frame {
	void *handle;     /* the caller's frame object */
	uint8_t *payload; /* where records go */
	size_t cap, used;
	uint16_t nrec;
	uint16_t node;
	bool listed; /* in open_nodes for this pass */
};

struct gw_batch_ops {
	/*
	 * Open a frame to node: fill f->handle, f->payload, f->cap. Returns 0,
	 * -EAGAIN while the lane cannot take another frame (window full, no
	 * buffer), or another negative errno to reject the message (e.g.
	 * -EHOSTUNREACH for an unknown node).
	 */
	int (*open)(void *ctx, uint16_t node, struct gw_batch_frame *f);
	/* A frame is complete: send it (nrec may be 0 in rare cases: free it). */
	void (*ship)(void *ctx, struct gw_batch_frame *f);
	/*
	 * A message cannot be sent: tell its sender. 0 when done; -EAGAIN
	 * leaves the message (and the rest of its channel) for a later pass.
	 */
	int (*reject)(void *ctx, struct gw_chan *c, const struct gw_chan_msg *m, int err);
	/* The nodes with subscribers to topic, as a set of GW_MAX_NODES bits. */
	void (*fanout)(void *ctx, uint32_t topic, uint64_t *nodes);
};

struct gw_batcher {
	const struct gw_batch_ops *ops;
	void *ctx;
	uint8_t cls;       /* the channels' class it drains (GW_CLASS_*) */
	uint16_t max_rec;  /* records per frame; 1 turns batching off */
	uint16_t quantum;  /* messages per channel per pass */
	uint16_t nopen;
	unsigned first;    /* where the next pass starts: after the channel a window cut off */
	uint16_t open_nodes[GW_MAX_NODES];
	struct gw_batch_frame open[GW_MAX_NODES];
	/* counters */
	uint64_t msgs, frames, rejects;
	uint64_t pub_records;      /* PUB records made: one per subscribing node */
	uint64_t pub_unsubscribed; /* publications to a topic nobody subscribes to */
	uint64_t pub_unreachable;  /* PUB records not made: the node cannot be reached */
	uint64_t full_stops; /* passes that left a channel waiting on a window */
};

void gw_batch_init(struct gw_batcher *b, const struct gw_batch_ops *ops, void *ctx,
		   unsigned cls, uint16_t max_rec, uint16_t quantum);

/*
 * Add one record of the gateway's own (e.g. a REJECT) to the open frame for
 * node; it leaves with the next pass. -EAGAIN if the lane is full.
 */
int gw_batch_add(struct gw_batcher *b, uint16_t node, const struct gw_rec *rec);

/* One pass over chans. Returns the number of messages taken. */
unsigned gw_batch_pass(struct gw_batcher *b, struct gw_chan *const *chans, unsigned nchans);

#endif
