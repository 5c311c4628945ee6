/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peers role (main lcore): the table of other gateways, hellos out,
 * up and down. It is the one writer of a peer's identity and liveness;
 * the lanes inside a peer are each written by their own lcore (lane i to
 * it by worker i, each lane from it by the receiver that owns it).
 *
 * Receivers on other lcores hand it the hellos they get through a proxy
 * (a ring, or a direct call on the main lcore), and each keeps its own
 * last-heard times, which the peers role reads to decide who is down.
 */
#ifndef GW_PEERS_H
#define GW_PEERS_H

#include <rte_ring.h>

#include "gw_chan.h" /* GW_MAX_NODES */
#include "gw_lane.h"
#include "gw_node.h"
#include "gw_txq.h"

struct gw_peer {
	/* the peers role's */
	bool allowed; /* may talk to us (configured, or any when none is) */
	bool up;      /* heard from within peer_timeout (atomic) */
	bool lanes;   /* lane state allocated (atomic: acquire before using it) */
	uint32_t epoch;
	uint32_t caps;    /* GW_CAP_* from its last HELLO */
	uint32_t session; /* bumped when it comes up or restarts (atomic) */
	struct gw_addr addr;
	char name[GW_NAME_MAX];
	/* The receiver that owns each of its lanes to us, r + 1, set once by
	 * the first receiver to get a frame of it (compare and swap). */
	alignas(64) uint8_t rx_owner[GW_LANE_SLOTS];
	/* ours to it, by slot (gw_lane_slot): worker i's bulk and urgent lanes */
	struct gw_lane_tx tx[GW_LANE_SLOTS];
	struct gw_lane_rx rx[GW_LANE_SLOTS]; /* its lanes to us */
};

/* A HELLO as a receiver read it. */
struct gw_hello_msg {
	uint16_t node;
	uint32_t epoch;
	uint32_t caps;
	struct gw_addr addr;
	char name[GW_NAME_MAX];
	uint8_t nkeys; /* the [auth] key ids it holds */
	uint32_t keys[GW_HELLO_KEYS];
};

struct gw_peers {
	const struct gw_node *node;
	struct gw_counters *st; /* the main lcore's */
	struct gw_peer *peer;   /* GW_MAX_NODES */
	uint16_t known[GW_MAX_NODES]; /* peers with lane state, in order heard */
	unsigned nknown;              /* (atomic: other lcores read known[] up to it) */
	uint64_t last_hello_ns;
	/* each receiver's last-heard time per node, and hellos from receivers
	 * on other lcores */
	const uint64_t *heard[GW_RECEIVERS_MAX];
	struct rte_ring *hellos[GW_RECEIVERS_MAX];
	unsigned nheard, nrings;
	/* told of every change of a peer's up state, and of a peer that
	 * restarted (a new epoch) without going down here (the control role) */
	void (*on_change)(void *ctx, uint16_t node, bool up);
	void (*on_restart)(void *ctx, uint16_t node);
	void *ctx;
};

/* How a receiver hands the peers role a hello. */
struct gw_peers_proxy {
	struct gw_peers *direct; /* same lcore: a call */
	struct rte_ring *ring;   /* else */
	struct gw_counters *st;  /* the sending lcore's */
};

int gw_peers_init(struct gw_peers *ps, const struct gw_node *node, struct gw_counters *st);
void gw_peers_fini(struct gw_peers *ps);
/* A ring for the hellos of a receiver on another lcore. */
struct rte_ring *gw_peers_add_ring(struct gw_peers *ps, unsigned receiver);
void gw_peers_post_hello(struct gw_peers_proxy *px, const struct gw_hello_msg *h);
/* Hellos handed over, hellos due out, peers gone silent. */
void gw_peers_poll(struct gw_peers *ps, struct gw_txq *q, uint64_t now);
/* The latest any receiver heard node. */
uint64_t gw_peers_heard(const struct gw_peers *ps, uint16_t node);
/* This gateway's GW_CAP_* bits, as its hellos announce them. */
uint32_t gw_peers_caps(const struct gw_node *node);

/* May frames from node be taken (allowed, with lanes)? Any lcore. */
static inline struct gw_peer *gw_peers_ready(struct gw_peers *ps, uint16_t node)
{
	struct gw_peer *p = &ps->peer[node];
	return p->allowed && __atomic_load_n(&p->lanes, __ATOMIC_ACQUIRE) ? p : NULL;
}

static inline unsigned gw_peers_known(const struct gw_peers *ps)
{
	return __atomic_load_n(&ps->nknown, __ATOMIC_ACQUIRE);
}

#endif
