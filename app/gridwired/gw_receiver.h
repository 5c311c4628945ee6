/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receiver role: deliver, in order, the frames of the lanes it owns
 * into the destination clients' channels (into its own RX part of each),
 * ack them from its lcore's TX queue, and hold a lane while a destination
 * is full, then reject (lib/deliver). It also delivers the frames some
 * workers built for this node itself (their loopback rings).
 *
 * A lane belongs to the receiver that polls the queue its first frame came
 * in on (RSS, or the sender's TX queue on a cable, keeps a lane's flow on
 * one queue). If a frame of it comes in elsewhere (a member failed over,
 * af_packet's fanout rolled over) port RX hands it to the owner through a
 * ring: a lane's state has one writer, and its frames one order.
 */
#ifndef GW_RECEIVER_H
#define GW_RECEIVER_H

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "gw_control.h"
#include "gw_control_proxy.h"
#include "gw_deliver.h"
#include "gw_peers.h"
#include "gw_txq.h"
#include "gw_worker_proxy.h"

/* A frame handed from another lcore's port RX to the lane's owner. */
struct gw_handoff {
	struct rte_mbuf *m;
	struct gw_hdr h;
};

/* A worker's loopback, and how far into its head frame we are. */
struct gw_loop {
	struct gw_loopback *lb;
	struct rte_mbuf *head;
	struct gw_rx_cursor at;
	uint64_t finished; /* frames delivered in full: lb->done once shown */
};

#define GW_RECEIVER_UNPUB 64 /* clients awaiting a publish */

/* One per receiver, in an array: each starts a cache line of its own. */
struct gw_receiver {
	alignas(64) uint8_t id; /* its RX part in every channel; its lanes' owner mark is id + 1 */
	const struct gw_node *node;
	struct gw_peers *peers;
	struct gw_control *ctl;
	struct gw_worker_proxy *workers; /* its lcore's proxies, one per worker */
	struct rte_ring *to_ctl;         /* peers' SUBS parts, to the control role */
	unsigned nworkers;
	struct gw_txq *txq;     /* its lcore's */
	struct gw_counters *st; /* its lcore's */
	struct gw_loop loops[GW_LANES_MAX];
	unsigned nloops;
	struct rte_ring *handoff[GW_RECEIVERS_MAX]; /* in, from each other receiver's lcore */
	unsigned nhandoff;
	uint64_t now;
	unsigned cpu; /* the CPU this step runs on */
	/* Clients delivered into and not yet shown (gw_chan_publish_set): one
	 * publish per client per run of frames, not per run of records. */
	struct gw_client *unpub[GW_RECEIVER_UNPUB];
	unsigned nunpub;
	unsigned unpub_recs; /* records delivered since the clients were last shown them */
	struct gw_deliver_wakes wakes; /* clients asleep on this CPU, shown and not woken */
	bool held;                     /* this step held a frame (it may wait for one of them) */
	/* Congestion control ([cc] control on): one budget for the bulk lanes
	 * it owns, granted evenly to the peers with a lane that delivered in
	 * the last GW_CC_ACTIVE_NS (active, at the last count), and a peer's
	 * share evenly to those lanes (peer_lanes). */
	bool granting;
	struct gw_cc_budget budget;
	unsigned active;
	uint8_t peer_lanes[GW_MAX_NODES];
	/* Latest subscribers (topics) whose store holds messages, by channel
	 * id: drained into their rings as these free, before anything newer. */
	uint16_t draining[GW_CONFIG_CLIENTS_MAX];
	unsigned ndraining;
	/* when each node was last heard on this lcore's queues (the peers role reads it) */
	alignas(64) uint64_t heard[GW_MAX_NODES];
};

void gw_receiver_init(struct gw_receiver *rv, uint8_t id, const struct gw_node *node,
		      struct gw_peers *peers, struct gw_control *ctl,
		      struct gw_worker_proxy *workers, unsigned nworkers, struct gw_txq *txq,
		      struct gw_counters *st);
void gw_receiver_fini(struct gw_receiver *rv);
/* A ring for DATA frames of this receiver's lanes that arrive at lcore `from`. */
struct rte_ring *gw_receiver_add_handoff(struct gw_receiver *rv, unsigned from);
/* A DATA frame of one of its lanes, off the wire: taken (stored or freed). */
void gw_receiver_accept(struct gw_receiver *rv, struct gw_peer *p, const struct gw_hdr *h,
		      struct rte_mbuf *m);
bool gw_receiver_step(struct gw_receiver *rv, uint64_t now);
/* Loopback frames and handed-off frames not yet delivered. */
uint64_t gw_receiver_pending(const struct gw_receiver *rv);

#endif
