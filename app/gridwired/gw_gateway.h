/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gridwired's assembly: the roles put together on the lcores gw_layout
 * chose, and the loop every lcore runs. Each role is a file that owns its
 * struct:
 *
 *   gw_port_rx.c   port RX: rx_burst, auth, faults, parse, dispatch
 *   gw_receiver.c  receiver: in-order delivery into channels, acks, hold/reject
 *   gw_worker.c    worker: batching, lane TX, retransmission, abandon
 *   gw_peers.c     peers: table, hellos, up and down (main lcore)
 *   gw_control.c   control: the client socket, channels, endpoints (main lcore)
 *   gw_stats.c     stats over telemetry (the telemetry thread, read only)
 *
 * and gw_worker_proxy.c, the others' way into a worker (not a role).
 *
 * Calls run one way: port RX -> receiver -> control -> peers and
 * worker -> peers, all on gw_txq (port TX) and gw_node; port RX, the
 * receiver and control post to a worker through gw_worker_proxy.c and
 * never call or include the worker. What flows back is data: frames for
 * this node (a worker's loopback ring, read by a receiver) and a peer's
 * change of state (a callback this file gives the peers role, which tells
 * the control role). Between lcores the roles meet only through proxies
 * (rings, or calls on the same lcore) and published state:
 *
 *   port RX  -> receiver  DATA of a lane another lcore owns (handoff ring)
 *   port RX  -> port RX   [auth] frames of a slot another lcore owns (ring)
 *   port RX  -> worker    ACKs for its lane (proxy)
 *   port RX  -> peers     HELLOs (proxy); last-heard times (read)
 *   receiver -> worker    REJECTs owed to peers (proxy)
 *   worker   -> receiver  frames for this node itself (loopback ring)
 *   control  -> worker    channels to drain or drop (proxy)
 *   control  -> receiver  endpoints and channels (published, rte_rcu_qsbr)
 *
 * In the data path no cache line is written by two lcores: each lcore has
 * its own counters and TX queue, each role's struct starts a line, each
 * lane is written by one worker or one receiver, each channel's RX part
 * and hold state by one receiver. (Control-path words are shared on
 * purpose: a client's flags, a lane's owner mark set once.)
 */
#ifndef GW_GATEWAY_H
#define GW_GATEWAY_H

#include <pthread.h>

#include <rte_rcu_qsbr.h>
#include <rte_telemetry.h>

#include "gw_auth.h"
#include "gw_keys.h"
#include "gw_control.h"
#include "gw_layout.h"
#include "gw_peers.h"
#include "gw_port.h"
#include "gw_port_rx.h"
#include "gw_receiver.h"
#include "gw_txq.h"
#include "gw_worker.h"

/* A channel has an RX part per receiver; a sending lcore's TX queue is
 * its [auth] slot. */
_Static_assert(GW_RECEIVERS_MAX <= GW_CHAN_RX_MAX, "an RX part for every receiver");
_Static_assert(GW_LCORES_MAX <= GW_AUTH_SLOTS, "an auth slot for every lcore");
_Static_assert(GW_LCORES_MAX == GW_LAYOUT_MAX, "one lcore per layout entry");

struct gw_gateway;

/* One lcore of the layout: its TX queue, counters, roles and proxies. */
struct gw_lcore {
	alignas(64) struct gw_gateway *g;
	const struct gw_layout_entry *e;
	unsigned qs_id; /* its thread id in the gateway's rte_rcu_qsbr */
	unsigned idle_polls;
	uint64_t busy_ns;    /* in passes that found work (telemetry reads it) */
	uint64_t busy_since; /* the start of the last pass if it found work, else 0 */
	struct gw_port_rx *prx;
	struct gw_receiver *rv;
	struct gw_worker *w;
	struct gw_counters st;
	struct gw_txq txq;
	struct gw_worker_proxy proxies[GW_LANES_MAX]; /* its way into each worker */
};

/*
 * An operator's request for a port member (telemetry /gridwire/member),
 * from the telemetry thread to the main lcore, which owns the port.
 */
struct gw_port_req {
	pthread_mutex_t lock; /* one requester at a time */
	/* seq << 32 | member << 1 | up, in one word so that the main lcore
	 * reads a request whole (atomic); seq counts from 1 */
	uint64_t asked;
	uint32_t done; /* seq of the last request done (atomic) */
	int rc;
	char why[RTE_TEL_MAX_STRING_LEN]; /* what telemetry can carry */
};

struct gw_gateway {
	const struct gw_config *cfg;
	struct gw_node node;
	struct gw_keys keys; /* [auth] */
	struct gw_port port;
	struct gw_layout layout;
	struct rte_rcu_qsbr *qs;
	struct gw_lcore *lc; /* layout.n, the main lcore's first */
	struct gw_peers peers;
	struct gw_control ctl;
	struct gw_worker *workers; /* layout.workers */
	struct gw_receiver *receivers; /* layout.receivers */
	struct gw_port_rx *prx;        /* one per receiver */
	struct gw_loopback loops[GW_LANES_MAX]; /* each worker's frames for this node */
	struct gw_port_req port_req;
	uint64_t last_tick_ns, last_ctl_ns;
	bool launched;
};

/* On error a negative errno, and one line in err naming what to fix. */
int gw_gateway_init(struct gw_gateway *g, const struct gw_config *cfg, char *err, size_t errlen);
/* Run the main lcore's loop until *stop; then flush for up to flush_ms. */
void gw_gateway_run(struct gw_gateway *g, volatile bool *stop, unsigned flush_ms);
void gw_gateway_fini(struct gw_gateway *g);
/* Counters as one JSON object (for logs, tests and the demo). */
void gw_gateway_stats_json(const struct gw_gateway *g, char *buf, size_t len);
/* Every lcore's counters added up, and the workers' frame counts. */
void gw_gateway_totals(const struct gw_gateway *g, struct gw_counters *s, uint64_t *frames,
		       uint64_t *full_stops);

/* Telemetry commands under /gridwire/ (gw_stats.c). */
int gw_stats_register(struct gw_gateway *g);

#endif
