/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port RX role, on every receiver's lcore: rx_burst on the queues the
 * layout gave it, the [auth] check and the [fault] stage, parse, and
 * dispatch: DATA to the lane's owner (this lcore's receiver, or another's
 * through a ring), ACKs to the worker of the lane (through its proxy),
 * HELLOs to the peers role (through its proxy).
 */
#ifndef GW_PORT_RX_H
#define GW_PORT_RX_H

#include "gw_auth.h"
#include "gw_fault.h"
#include "gw_receiver.h"

#define GW_QUEUES_MAX GW_LCORES_MAX

struct gw_port_rx {
	const struct gw_node *node;
	uint16_t port;
	uint16_t queues[GW_QUEUES_MAX];
	unsigned nqueues;
	struct gw_receiver *rv;    /* this lcore's */
	struct gw_peers *peers;
	struct gw_peers_proxy hello;
	struct gw_worker_proxy *workers; /* this lcore's, one per worker */
	unsigned nworkers;
	struct rte_ring *handoff[GW_RECEIVERS_MAX]; /* to each receiver (NULL: this one) */
	struct gw_counters *st;    /* this lcore's */
	struct gw_auth_rx auth;    /* its own replay windows */
	struct gw_fault fault;     /* [fault] injection on received frames */
	bool fault_on;
	uint64_t now;
};

int gw_port_rx_init(struct gw_port_rx *prx, const struct gw_node *node, uint16_t port,
		    struct gw_receiver *rv, struct gw_peers *peers, struct gw_counters *st);
void gw_port_rx_fini(struct gw_port_rx *prx);
bool gw_port_rx_step(struct gw_port_rx *prx, uint64_t now);

#endif
