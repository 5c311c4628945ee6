/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port RX role, on every receiver's lcore: rx_burst on the queues the
 * layout gave it (of every live member, with a parallel port), the [auth]
 * check and the [fault] stage, parse, and
 * dispatch: DATA to the lane's owner (this lcore's receiver, or another's
 * through a ring), ACKs to the worker of the lane (through its proxy),
 * HELLOs to the peers role (through its proxy).
 *
 * With [auth], each sender slot's replay window (lib/auth) belongs to one
 * receiver, slot mod R: on the cable a sender's slot is its TX queue and
 * so our RX queue, which that receiver polls. A tagged frame is verified
 * where it arrives and, if its slot is another receiver's, handed there
 * for the replay check: a replay steered to another queue still meets the
 * one window that saw the original. (With a parallel port each member has
 * windows of its own: a frame's copy is the lane's to drop, not a replay.)
 */
#ifndef GW_PORT_RX_H
#define GW_PORT_RX_H

#include "gw_auth.h"
#include "gw_fault.h"
#include "gw_port.h"
#include "gw_receiver.h"

#define GW_QUEUES_MAX (GW_LCORES_MAX + GW_LANES_MAX) /* gw_layout: n + workers */

/* A verified frame handed to the receiver owning its sender's slot. */
struct gw_auth_handoff {
	struct rte_mbuf *m;
	struct gw_auth_seen seen;
};

/* One per receiver, in an array: each starts a cache line of its own. */
struct gw_port_rx {
	alignas(64) const struct gw_node *node;
	uint16_t queues[GW_QUEUES_MAX];
	unsigned nqueues;
	struct gw_receiver *rv;    /* this lcore's */
	struct gw_peers *peers;
	struct gw_peers_proxy hello;
	struct gw_worker_proxy *workers; /* this lcore's, one per worker */
	unsigned nworkers;
	struct rte_ring *handoff[GW_RECEIVERS_MAX]; /* to each receiver (NULL: this one) */
	struct gw_counters *st;    /* this lcore's */
	struct gw_auth_rx auth;    /* its slots' replay windows */
	unsigned nrecv;
	struct rte_ring *auth_out[GW_RECEIVERS_MAX]; /* to each slot owner (NULL: this one) */
	struct rte_ring *auth_in[GW_RECEIVERS_MAX];  /* from the others */
	unsigned nauth_in;
	struct gw_fault fault;     /* [fault] injection on received frames */
	bool fault_on;
	int fault_member;          /* whose frames get them; -1: every member's */
	uint64_t now;
};

int gw_port_rx_init(struct gw_port_rx *prx, const struct gw_node *node, struct gw_receiver *rv,
		    struct gw_peers *peers, struct gw_counters *st);
void gw_port_rx_fini(struct gw_port_rx *prx);
/* A ring for the [auth] frames of this port RX's slots arriving at lcore `from`. */
struct rte_ring *gw_port_rx_add_auth_in(struct gw_port_rx *prx, unsigned from);
/* Pull in the lines of the burst's next frame while this one is checked:
 * the CRC's pass is the first to read what the NIC, or the core on the
 * cable's other end, wrote. */
static inline void gw_port_rx_prefetch(const struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	for (unsigned off = 0; off < m->data_len; off += RTE_CACHE_LINE_SIZE)
		rte_prefetch0(p + off);
}

bool gw_port_rx_step(struct gw_port_rx *prx, uint64_t now);
/* [fault] drop rate and member (-1: every member's frames) changed at run
 * time, from another thread: a drill of a network that loses what it
 * carries while its links stay up. */
void gw_port_rx_set_drop(struct gw_port_rx *prx, int member, uint32_t drop_ppm);

#endif
