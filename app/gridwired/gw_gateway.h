/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gridwired internals: the gateway's state and its roles.
 *
 * Main lcore (gw_gateway.c):
 *   port RX   - rx_burst on every queue, parse, DATA to the receive lanes,
 *               ACKs to the worker owning the lane, HELLOs to the peer table;
 *   receiver  - deliver each lane's frames in order into destination
 *               channels, then ack what is delivered;
 *   control   - the client socket (gw_ctl.c): connect, register, leave.
 * Workers (gw_worker.c), one lane to each peer apiece:
 *   worker    - batch passes over its share of the client channels;
 *   port TX   - its own TX queue: frames, retransmissions, REJECTs.
 *
 * With [lcores] workers = 0 the main lcore runs worker 0's step too, in the
 * same loop (run to completion). Either way workers talk to the main lcore
 * only through rings, so both layouts run the same code:
 *   main -> worker: ACKs for its lane (mbufs), REJECTs owed to peers,
 *                   channel add/remove commands;
 *   worker -> main: nothing but counters and a released-channel flag.
 * Only the main lcore writes a client's RX ring, so every ring stays
 * single-producer/single-consumer.
 */
#ifndef GW_GATEWAY_H
#define GW_GATEWAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_telemetry.h>

#include "gw_auth.h"
#include "gw_batch.h"
#include "gw_chan.h"
#include "gw_config.h"
#include "gw_fault.h"
#include "gw_lane.h"
#include "gw_port.h"
#include "gw_wire.h"

extern int gw_logtype;
#define GW_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, gw_logtype, "gridwired: " fmt "\n", ##__VA_ARGS__)

#define GW_TXQ_MAX 256
#define GW_EP_TABLE 4096 /* endpoint slots, power of two */
#define GW_LANES_MAX (GW_CONFIG_MAX_WORKERS > 0 ? GW_CONFIG_MAX_WORKERS : 1)
#define GW_INBOX 1024    /* ACK mbufs queued to a worker */
#define GW_REJECTQ 4096  /* REJECTs queued to a worker */
#define GW_CMDQ 256      /* channel commands queued to a worker */
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

/* An ACK the main lcore hands to the worker owning the lane. */
struct gw_ack_msg {
	uint16_t node;
	uint16_t pad;
	struct gw_ack ack;
};

/* Per-lcore counters; the stats sum them. */
struct gw_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t data_frames, ack_frames, hello_frames;
	uint64_t msgs_out, msgs_in, msgs_local;
	uint64_t bad_frames, bad_crc, not_ours, unknown_peer;
	uint64_t dup_frames, beyond_window, retrans;
	uint64_t rejects_sent, rejects_lost, reject_unknown_ep, reject_dest_full;
	uint64_t nombuf, tx_stalls, clients_broken, clients_refused;
	uint64_t auth_forged, auth_replayed;
	uint64_t abandoned_frames, reject_node_down;
};
/* Summed field by field as an array of counters (gw_gateway_stats_json). */
_Static_assert(sizeof(struct gw_counters) % sizeof(uint64_t) == 0, "counters are uint64_t only");

/* One TX queue and the frames waiting for it. */
struct gw_txq {
	uint16_t port, queue;
	struct gw_auth_tx auth; /* this sending lcore's counter, when [auth] is on */
	unsigned n;
	uint64_t last_tx_ns;
	struct rte_mbuf *m[GW_TXQ_MAX];
};

struct gw_peer {
	bool allowed; /* may talk to us (configured, or any when none is) */
	bool up;      /* heard from within peer_timeout */
	bool lanes;   /* lane state allocated (read by workers with acquire) */
	uint32_t epoch;
	uint32_t caps; /* GW_CAP_* from its last HELLO */
	uint64_t last_heard_ns;
	struct gw_addr addr;
	char name[GW_NAME_MAX];
	struct gw_lane_tx tx[GW_LANES_MAX]; /* ours to it: lane i is worker i's */
	struct gw_lane_rx rx[GW_LANES_MAX]; /* its lanes to us */
};

struct gw_gateway;

struct gw_worker {
	struct gw_gateway *g;
	uint16_t lane;
	unsigned lcore;
	struct gw_batcher batch;
	struct gw_txq txq;
	struct gw_chan **chans; /* channels this worker drains */
	unsigned nchans;
	struct rte_ring *inbox;  /* ACK mbufs for our lanes */
	struct rte_ring *rejq;   /* struct gw_reject to send */
	struct rte_ring *cmdq;   /* struct gw_cmd from the control role */
	struct gw_reject pending_rej; /* taken from rejq, waiting for a window */
	bool has_pending_rej;
	/* giving up on a lost peer's frames: how far into the one at (node, seq) */
	uint16_t abandon_node;
	uint32_t abandon_seq;
	size_t abandon_off;
	bool drain_seen; /* finished a step after the drain began */
	uint64_t hist[GW_HIST_BUCKETS]; /* frames by messages in them: 1, 2-3, 4-7, ... */
	uint64_t now;
	unsigned idle_polls;
	uint64_t passes; /* loops begun: the main lcore waits on it (gw_gateway_quiesce) */
	struct gw_counters st;
};

enum gw_cmd_op { GW_CMD_ADD = 1, GW_CMD_DEL = 2 };
struct gw_cmd {
	uint32_t op;
	uint32_t slot; /* client index */
};

struct gw_client {
	bool used;
	bool refused;      /* its credentials are not allowed: told so, then dropped */
	bool leaving;      /* gone: endpoints removed, channel still held */
	bool del_sent;     /* its worker was told to drop the channel */
	uint32_t released; /* set by the worker once it dropped the channel */
	int sock;
	uint16_t chan_id;
	uint16_t worker;
	struct gw_chan chan;
	/* The client's count of sends that found its channel full, copied out
	 * of its region by gw_ctl_sample: telemetry must not touch a region
	 * that may be unmapped under it. */
	uint64_t tx_full;
};

struct gw_ep {
	uint32_t id; /* 0 = free */
	uint16_t chan_id;
	char name[GW_NAME_MAX];
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
	struct gw_port port;
	uint32_t epoch;
	struct gw_addr self;
	uint32_t payload_max;
	struct gw_peer *peers; /* GW_MAX_NODES */
	uint16_t known[GW_MAX_NODES]; /* peers with lane state, in order heard */
	unsigned nknown;
	unsigned nlanes; /* workers, at least 1 */
	struct gw_worker *workers;
	struct gw_txq txq; /* the main lcore's: ACKs and HELLOs */
	struct rte_ring *loopback; /* frames from workers to this node itself */
	struct rte_mbuf *loop_head; /* the loopback frame being delivered */
	uint32_t loop_cursor;
	struct gw_client *clients; /* cfg->clients_max */
	uint16_t chan_slot[65536]; /* chan id -> client index + 1 */
	uint16_t next_chan;
	struct gw_ep eps[GW_EP_TABLE];
	unsigned neps;
	uint64_t now;
	uint64_t last_hello_ns, last_ctl_ns;
	int listen_fd, epfd;
	bool draining; /* shutting down: take no new messages (atomic) */
	bool stop_workers; /* (atomic) */
	struct gw_fault fault; /* [fault] injection on received frames */
	bool fault_on;
	bool auth_on; /* [auth] key_file: every frame tagged and checked */
	struct gw_auth_key auth_key;
	struct gw_auth_rx auth_rx;
	struct gw_port_req port_req;
	struct gw_counters st;
};

/* On error a negative errno, and one line in err naming what to fix. */
int gw_gateway_init(struct gw_gateway *g, const struct gw_config *cfg, char *err, size_t errlen);
/* Run the loop until *stop; then flush for up to flush_ms. */
void gw_gateway_run(struct gw_gateway *g, volatile bool *stop, unsigned flush_ms);
void gw_gateway_fini(struct gw_gateway *g);
/* Counters as one JSON object (for logs, tests and the demo). */
void gw_gateway_stats_json(const struct gw_gateway *g, char *buf, size_t len);
/* The main lcore's and every worker's counters added up. */
void gw_gateway_totals(const struct gw_gateway *g, struct gw_counters *s, uint64_t *frames,
		       uint64_t *full_stops);
struct gw_counter_name {
	const char *name;
	size_t off;
};
extern const struct gw_counter_name gw_counter_names[]; /* ends with a NULL name */

/* Telemetry commands under /gridwire/ (gw_stats.c). */
int gw_stats_register(struct gw_gateway *g);

/* Shared by the roles (gw_gateway.c). */
uint64_t gw_clock_ns(void);
/* This gateway's GW_CAP_* bits, as its hellos announce them. */
uint32_t gw_gateway_caps(const struct gw_gateway *g);
struct rte_mbuf *gw_frame_alloc(struct gw_gateway *g, struct gw_counters *st);
void gw_frame_send(struct gw_gateway *g, struct gw_txq *q, struct gw_counters *st,
		   struct rte_mbuf *m, const struct gw_addr *dst, struct gw_hdr *h);
void gw_txq_put(struct gw_txq *q, struct rte_mbuf *m, struct gw_counters *st);
void gw_txq_flush(struct gw_txq *q, uint64_t now, struct gw_counters *st);
void gw_idle(const struct gw_config *c, unsigned *idle_polls);

/* Wait until every worker lcore has begun a new loop: nothing it was doing
 * before the call (a tx_burst on a member being closed) is still running. */
void gw_gateway_quiesce(void *gateway);

/* The worker role (gw_worker.c). */
int gw_worker_init(struct gw_worker *w, struct gw_gateway *g, uint16_t lane);
void gw_worker_fini(struct gw_worker *w);
bool gw_worker_step(struct gw_worker *w);
int gw_worker_main(void *arg); /* the lcore function of a worker lcore */
uint64_t gw_worker_inflight(const struct gw_worker *w);

/* The control role (gw_ctl.c). */
int gw_ctl_open(struct gw_gateway *g, char *err, size_t errlen);
void gw_ctl_poll(struct gw_gateway *g);
void gw_ctl_close(struct gw_gateway *g);
struct gw_chan *gw_ctl_chan(struct gw_gateway *g, uint16_t chan_id);
struct gw_ep *gw_ctl_ep_find(struct gw_gateway *g, uint32_t id);
void gw_ctl_nodes_up(struct gw_gateway *g, uint16_t node, bool up);
/* Copy what clients count in their own regions into gateway memory. */
void gw_ctl_sample(struct gw_gateway *g);

#endif
