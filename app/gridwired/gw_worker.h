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
 * Other roles reach a worker only through its proxy (gw_worker_proxy.h),
 * and include that header, not this one.
 */
#ifndef GW_WORKER_H
#define GW_WORKER_H

#include <rte_ring.h>

#include "gw_batch.h"
#include "gw_chan.h"
#include "gw_peers.h"
#include "gw_topic.h"
#include "gw_txq.h"
#include "gw_worker_proxy.h"

#define GW_HIST_BUCKETS 7 /* 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64+ messages per frame */

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
	struct gw_loopback *loop;   /* frames for this node, to its receiver */
	/* The topics as the control role publishes them (a struct gw_topics,
	 * read between two quiescent states): where publications go. */
	void *const *topics;
	/* Telling peers this node's topics (gw_topic_tell): the peers whose
	 * node id mod nworkers is its lane are this worker's (one lane keeps
	 * the parts in order). The advertisement as of adv_version. */
	unsigned nworkers;
	struct gw_topic_tell *tell; /* GW_MAX_NODES */
	char (*adv_names)[GW_DIR_NAME];
	uint32_t *adv_ids;
	uint32_t adv_version;
	uint16_t adv_total;
	bool adv_taken;
	uint64_t tell_ns; /* when it last looked */
	/* Settling what its channels sent (gw_chan_checkpoint): frames are
	 * numbered (serial, the last one shipped); loopback frames' serials in
	 * the order shipped, from loop_shipped back; every frame numbered below
	 * settled_below settled at the last look. barrier: a frame given up
	 * whose REJECTs are not yet in their senders' rings (until the receiver
	 * has delivered loop frame barrier_loop). ck_fresh: a checkpoint made
	 * since the last look (one may settle at once: a publication to nobody
	 * ships no frame, so nothing below moves for it). */
	uint32_t serial, settled_below, barrier;
	bool barrier_on, ck_fresh;
	uint64_t loop_shipped, barrier_loop;
	uint32_t loop_serial[GW_LOOPQ];
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
		   uint16_t lane, struct gw_txq *txq, struct gw_counters *st, struct gw_loopback *loop);
void gw_worker_fini(struct gw_worker *w);
bool gw_worker_step(struct gw_worker *w, uint64_t now);
/* Frames sent and not yet acknowledged, REJECTs not yet sent. */
uint64_t gw_worker_pending(const struct gw_worker *w);

/* The proxy from lcore `from` (same: the worker's own) carrying `what`
 * (GW_PROXY_*); its rings are made here. */
int gw_worker_proxy_init(struct gw_worker_proxy *px, struct gw_worker *w, unsigned from,
			 bool same, unsigned what);
void gw_worker_proxy_fini(struct gw_worker_proxy *px);

#endif
