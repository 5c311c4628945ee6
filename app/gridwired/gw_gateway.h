/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gridwired internals: the gateway's state and its roles.
 *
 * Roles (each a function the lcore loop calls in turn, run to completion):
 *   port RX   - rx_burst, parse, route DATA to lanes, ACKs to senders, HELLOs
 *               to the peer table;
 *   receiver  - deliver each lane's frames in order into destination
 *               channels, then ack what is delivered;
 *   worker    - one batch pass over the client channels into frames;
 *   port TX   - retransmissions, hellos, tx_burst;
 *   control   - the client socket (connect, register, disconnect).
 */
#ifndef GW_GATEWAY_H
#define GW_GATEWAY_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_log.h>
#include <rte_mbuf.h>

#include "gw_batch.h"
#include "gw_chan.h"
#include "gw_config.h"
#include "gw_lane.h"
#include "gw_port.h"
#include "gw_wire.h"

extern int gw_logtype;
#define GW_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, gw_logtype, "gridwired: " fmt "\n", ##__VA_ARGS__)

#define GW_TXQ_MAX 256
#define GW_EP_TABLE 4096 /* endpoint slots, power of two */
#define GW_REJECTQ 1024  /* pending REJECT records per peer, power of two */

struct gw_reject {
	uint32_t dst_ep;
	uint16_t src_chan;
	uint32_t msg_id;
	int32_t err;
};

struct gw_peer {
	bool allowed; /* may talk to us (configured, or any when none is) */
	bool up;      /* heard from within peer_timeout */
	bool lanes;   /* tx/rx lane state allocated */
	uint32_t epoch;
	uint64_t last_heard_ns;
	struct gw_addr addr;
	char name[GW_NAME_MAX];
	struct gw_lane_tx tx;
	struct gw_lane_rx rx;
	struct gw_reject rejq[GW_REJECTQ];
	uint32_t rejq_head, rejq_tail;
};

struct gw_client {
	bool used;
	int sock;
	uint16_t chan_id;
	struct gw_chan chan;
};

struct gw_ep {
	uint32_t id; /* 0 = free */
	uint16_t chan_id;
	char name[GW_NAME_MAX];
};

struct gw_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t data_frames, ack_frames, hello_frames;
	uint64_t msgs_out, msgs_in, msgs_local;
	uint64_t bad_frames, bad_crc, not_ours, unknown_peer;
	uint64_t dup_frames, beyond_window, retrans;
	uint64_t rejects_sent, rejects_lost, reject_unknown_ep, reject_dest_full;
	uint64_t nombuf, tx_stalls, clients_broken;
};

struct gw_gateway {
	const struct gw_config *cfg;
	struct gw_port port;
	uint32_t epoch;
	struct gw_addr self;
	uint32_t payload_max;
	struct gw_peer *peers; /* GW_MAX_NODES */
	uint16_t known[GW_MAX_NODES]; /* peers with lane state, in order heard */
	unsigned nknown;
	struct gw_client *clients; /* cfg->clients_max */
	struct gw_chan **active; /* channels the worker drains */
	unsigned nactive;
	uint16_t chan_slot[65536]; /* chan id -> client index + 1 */
	uint16_t next_chan;
	struct gw_ep eps[GW_EP_TABLE];
	unsigned neps;
	struct gw_batcher batch;
	struct rte_mbuf *txq[GW_TXQ_MAX];
	unsigned ntxq;
	uint64_t now;
	uint64_t last_tx_ns, last_hello_ns, last_ctl_ns;
	int listen_fd, epfd;
	bool draining; /* shutting down: take no new messages */
	struct gw_counters st;
};

int gw_gateway_init(struct gw_gateway *g, const struct gw_config *cfg);
/* Run the loop until *stop; then flush for up to flush_ms. */
void gw_gateway_run(struct gw_gateway *g, volatile bool *stop, unsigned flush_ms);
void gw_gateway_fini(struct gw_gateway *g);
/* Counters as one JSON object (for logs, tests and the demo). */
void gw_gateway_stats_json(const struct gw_gateway *g, char *buf, size_t len);

/* The control role (gw_ctl.c). */
int gw_ctl_open(struct gw_gateway *g);
void gw_ctl_poll(struct gw_gateway *g);
void gw_ctl_close(struct gw_gateway *g);
void gw_ctl_drop_client(struct gw_gateway *g, struct gw_client *cl);
struct gw_chan *gw_ctl_chan(struct gw_gateway *g, uint16_t chan_id);
struct gw_ep *gw_ctl_ep_find(struct gw_gateway *g, uint32_t id);
void gw_ctl_nodes_up(struct gw_gateway *g, uint16_t node, bool up);

#endif
