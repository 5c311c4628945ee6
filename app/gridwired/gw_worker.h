/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker role: drain this worker's client channels into frames on its
 * own lanes to each peer, apply the ACKs for its lanes, retransmit, give up
 * on peers that went down, and send the REJECTs it is handed. It has a
 * lane of each class to each peer: urgent messages are taken from the
 * channels first, in frames of their own that leave in the same step and
 * go ahead of bulk ones in the TX queue, and are retransmitted first. Frames to
 * this node itself go to a loopback ring that one receiver delivers, so
 * local delivery follows the same rules (order, hold, reject) as remote.
 *
 * Other roles reach a worker only through a proxy (struct
 * gw_worker_proxy): rings when they run on another lcore, a direct call
 * when they share the worker's (as Aeron's driver proxies do). REJECTs
 * always go through a ring: one that cannot go yet (its lane is full)
 * waits there while the receiver that owes it delivers on, which is slack
 * for two gateways owing each other REJECTs (the receiver bounds the wait
 * once the ring is full).
 */
#ifndef GW_WORKER_H
#define GW_WORKER_H

#include <rte_ring.h>

#include "gw_batch.h"
#include "gw_chan.h"
#include "gw_peers.h"
#include "gw_txq.h"

#define GW_HIST_BUCKETS 7 /* 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64+ messages per frame */

/* A REJECT owed to the sender of a message on a peer node. */
struct gw_reject {
	uint16_t node;   /* where the sender is: where the REJECT goes */
	uint16_t target; /* the node the message was for */
	uint16_t src_chan;
	uint32_t dst_ep;
	uint32_t msg_id;
	int32_t err;
};

/* An ACK for one of the worker's lanes. */
struct gw_ack_msg {
	uint16_t node;
	uint16_t lane; /* on the wire: the worker's bulk or urgent lane */
	struct gw_ack ack;
};

/* A channel given to the worker or taken back (the control role). */
enum gw_cmd_op { GW_CMD_ADD = 1, GW_CMD_DEL = 2 };
struct gw_cmd {
	uint32_t op;
	struct gw_chan *chan;
	uint32_t *released; /* DEL: set once the worker let go of chan */
};

struct gw_worker;

/* What a proxy carries: a receiver's lcore ACKs and REJECTs, the main
 * lcore channel commands (and both, when it is a receiver's too). */
#define GW_PROXY_ACKS 1u
#define GW_PROXY_REJECTS 2u
#define GW_PROXY_CMDS 4u

/* One lcore's way into one worker. */
struct gw_worker_proxy {
	struct gw_worker *direct; /* the same lcore: ACKs and commands are calls */
	struct rte_ring *acks;    /* else: struct gw_ack_msg */
	struct rte_ring *rejects; /* struct gw_reject, on the same lcore too */
	struct rte_ring *cmds;    /* struct gw_cmd, unless direct */
};

/* One class of a worker's traffic: its lane to each peer and its batcher's context. */
struct gw_worker_class {
	struct gw_worker *w;
	uint8_t cls;   /* GW_CLASS_* */
	uint16_t lane; /* on the wire */
	uint16_t slot; /* in a peer's lane arrays */
};

/* One per worker, in an array: each starts a cache line of its own. */
struct gw_worker {
	alignas(64) const struct gw_node *node;
	struct gw_peers *peers;
	uint16_t lane;
	struct gw_txq *txq;         /* its lcore's */
	struct gw_counters *st;     /* its lcore's */
	struct rte_ring *loop;      /* frames for this node, to its receiver */
	struct gw_batcher batch[GW_CLASSES]; /* a batcher per class */
	struct gw_worker_class cls[GW_CLASSES];
	unsigned loop_open;         /* frames for this node open in the batchers */
	struct gw_chan **chans;     /* channels this worker drains */
	unsigned nchans;
	struct gw_worker_proxy *in[GW_LCORES_MAX]; /* proxies with rings into it */
	unsigned nin;
	/* per ring of REJECTs: the one taken from it, waiting for a window */
	struct gw_reject pending_rej[GW_LCORES_MAX];
	bool has_pending_rej[GW_LCORES_MAX];
	/* giving up on a lost peer's frames: how far into the one at (slot, node, seq) */
	uint16_t abandon_slot;
	uint16_t abandon_node;
	uint32_t abandon_seq;
	size_t abandon_off;
	uint64_t hist[GW_CLASSES][GW_HIST_BUCKETS]; /* frames by messages in them: 1, 2-3, ... */
	uint64_t now;
};

int gw_worker_init(struct gw_worker *w, const struct gw_node *node, struct gw_peers *peers,
		   uint16_t lane, struct gw_txq *txq, struct gw_counters *st, struct rte_ring *loop);
void gw_worker_fini(struct gw_worker *w);
bool gw_worker_step(struct gw_worker *w, uint64_t now);
/* Frames sent and not yet acknowledged, REJECTs not yet sent. */
uint64_t gw_worker_pending(const struct gw_worker *w);

/* The proxy from lcore `from` (same: the worker's own) carrying `what`
 * (GW_PROXY_*); its rings are made here. */
int gw_worker_proxy_init(struct gw_worker_proxy *px, struct gw_worker *w, unsigned from,
			 bool same, unsigned what);
void gw_worker_proxy_fini(struct gw_worker_proxy *px);
/* An ACK taken at now: lost when the ring is full (a later ACK says the
 * same and more). */
int gw_worker_post_ack(struct gw_worker_proxy *px, uint16_t node, uint16_t lane,
		       const struct gw_ack *ack, uint64_t now);
/* A REJECT to send: -EBUSY when it cannot be taken yet (try again). */
int gw_worker_post_reject(struct gw_worker_proxy *px, const struct gw_reject *rj);
/* A channel command: -EBUSY when it cannot be taken yet (try again). */
int gw_worker_post_cmd(struct gw_worker_proxy *px, const struct gw_cmd *cmd);

#endif
