/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The way into a worker for the other roles: what they hand it (ACKs for
 * its lanes, REJECTs to send, channels to drain or let go) and the proxy
 * they hand it through. A proxy is rings when the caller runs on another
 * lcore, a direct call when it shares the worker's (as Aeron's driver
 * proxies are). REJECTs always go through a ring: one that cannot go yet
 * (its lane is full) waits there while the receiver that owes it delivers
 * on, which is slack for two gateways owing each other REJECTs (the
 * receiver bounds the wait once the ring is full).
 *
 * Roles that post to a worker include this header, not gw_worker.h, and
 * link with gw_worker_proxy.c, not the worker: the worker makes its
 * proxies (gw_worker_proxy_init) and says how it takes direct calls.
 */
#ifndef GW_WORKER_PROXY_H
#define GW_WORKER_PROXY_H

#include <stdint.h>

#include <rte_ring.h>

#include "gw_wire.h"

struct gw_chan;
struct gw_worker;

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

/* What a proxy carries: a receiver's lcore ACKs and REJECTs, the main
 * lcore channel commands (and both, when it is a receiver's too). */
#define GW_PROXY_ACKS 1u
#define GW_PROXY_REJECTS 2u
#define GW_PROXY_CMDS 4u

/* How a worker takes what is posted on its own lcore: at once. */
struct gw_worker_calls {
	void (*ack)(struct gw_worker *w, const struct gw_ack_msg *a, uint64_t now);
	void (*cmd)(struct gw_worker *w, const struct gw_cmd *cmd);
};

/* One lcore's way into one worker, made by the worker (gw_worker_proxy_init). */
struct gw_worker_proxy {
	struct gw_worker *direct;            /* the same lcore: ACKs and commands are calls */
	const struct gw_worker_calls *calls; /* the worker's, when direct */
	struct rte_ring *acks;               /* else: struct gw_ack_msg */
	struct rte_ring *rejects;            /* struct gw_reject, on the same lcore too */
	struct rte_ring *cmds;               /* struct gw_cmd, unless direct */
};

/* An ACK taken at now: lost when the ring is full (a later ACK says the
 * same and more). */
int gw_worker_post_ack(struct gw_worker_proxy *px, uint16_t node, uint16_t lane,
		       const struct gw_ack *ack, uint64_t now);
/* A REJECT to send: -EBUSY when it cannot be taken yet (try again). */
int gw_worker_post_reject(struct gw_worker_proxy *px, const struct gw_reject *rj);
/* A channel command: -EBUSY when it cannot be taken yet (try again). */
int gw_worker_post_cmd(struct gw_worker_proxy *px, const struct gw_cmd *cmd);

#endif
