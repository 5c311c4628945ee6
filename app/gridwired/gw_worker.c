/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker role: drain this worker's client channels into frames on its
 * own lane to each peer, apply the ACKs the main lcore hands over,
 * retransmit, and send the REJECTs it is given. Frames to this node itself
 * go to the main lcore's loopback ring instead of the wire, so local
 * delivery follows the same rules (order, hold, reject) as remote.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "gw_gateway.h"

#define GW_DUE_MAX 32
#define GW_QUANTUM 256

static int batch_open(void *ctx, uint16_t node, struct gw_batch_frame *f)
{
	struct gw_worker *w = ctx;
	struct gw_gateway *g = w->g;
	if (node == g->cfg->node_id) {
		/* Each worker holds at most one open loopback frame. */
		if (rte_ring_free_count(g->loopback) <= g->nlanes)
			return -EAGAIN;
	} else {
		struct gw_peer *p = &g->peers[node];
		if (!__atomic_load_n(&p->up, __ATOMIC_ACQUIRE) ||
		    !__atomic_load_n(&p->lanes, __ATOMIC_ACQUIRE))
			return -EHOSTUNREACH;
		if (!gw_lane_tx_open(&p->tx[w->lane]) || w->txq.n >= GW_TXQ_MAX - 1)
			return -EAGAIN;
	}
	struct rte_mbuf *m = gw_frame_alloc(g, &w->st);
	if (!m)
		return -EAGAIN;
	f->handle = m;
	f->payload = rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN;
	f->cap = g->payload_max;
	return 0;
}

static void batch_ship(void *ctx, struct gw_batch_frame *f)
{
	struct gw_worker *w = ctx;
	struct gw_gateway *g = w->g;
	struct rte_mbuf *m = f->handle;
	if (f->nrec == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	if (f->node == g->cfg->node_id) {
		/* Only the payload matters on the loopback: no headers, no CRC. */
		m->data_len = (uint16_t)(GW_FRAME_MIN + f->used);
		m->pkt_len = m->data_len;
		rte_ring_mp_enqueue(g->loopback, m); /* room was checked at open */
		w->st.msgs_local += f->nrec;
		return;
	}
	unsigned b = 31 - (unsigned)__builtin_clz(f->nrec); /* log2 bucket */
	w->hist[b < GW_HIST_BUCKETS ? b : GW_HIST_BUCKETS - 1]++;
	struct gw_peer *p = &g->peers[f->node];
	struct gw_lane_tx *tx = &p->tx[w->lane];
	struct gw_hdr h = {
		.type = GW_FT_DATA, .dst_node = f->node, .lane = w->lane, .nrec = f->nrec,
		.seq = tx->nxt, .base = tx->una, .len = (uint32_t)f->used,
	};
	/* The lane keeps the frame for retransmission; the NIC frees its own
	 * reference once sent. */
	rte_mbuf_refcnt_update(m, 1);
	gw_frame_send(g, &w->txq, &w->st, m, &p->addr, &h);
	gw_lane_tx_push(tx, m, w->now);
	tx->msgs += f->nrec;
	w->st.msgs_out += f->nrec;
}

/* A REJECT record to rj->node (our own node: a local sender). */
static int reject_add(struct gw_worker *w, const struct gw_reject *rj)
{
	struct gw_chan_reject body = { .err = rj->err, .msg_id = rj->msg_id, .node = rj->target };
	struct gw_rec r = {
		.kind = GW_RK_REJECT, .len = sizeof(body), .dst_ep = rj->dst_ep,
		.src_chan = rj->src_chan, .msg_id = rj->msg_id, .data = (const uint8_t *)&body,
	};
	int rc = gw_batch_add(&w->batch, rj->node, &r);
	if (rc == 0)
		w->st.rejects_sent++;
	return rc;
}

/*
 * A message of ours that cannot go (unknown node, too big): its sender is
 * told through the loopback, like any REJECT. -EAGAIN leaves the message in
 * its channel to be tried again.
 */
static int batch_reject(void *ctx, struct gw_chan *c, const struct gw_chan_msg *msg, int err)
{
	struct gw_worker *w = ctx;
	struct gw_reject rj = {
		.node = w->g->cfg->node_id, .target = msg->node, .src_chan = (uint16_t)c->chan_id,
		.dst_ep = msg->ep,
		.msg_id = msg->msg_id, .err = err,
	};
	return reject_add(w, &rj);
}

static const struct gw_batch_ops batch_ops = {
	.open = batch_open, .ship = batch_ship, .reject = batch_reject,
};

/* REJECTs the main lcore owes to peers ride in front of the next messages. */
static void rejects_flush(struct gw_worker *w)
{
	for (;;) {
		if (!w->has_pending_rej) {
			if (rte_ring_sc_dequeue_elem(w->rejq, &w->pending_rej, sizeof(w->pending_rej)))
				return;
			w->has_pending_rej = true;
		}
		int rc = reject_add(w, &w->pending_rej);
		if (rc == -EAGAIN)
			return; /* the lane is full: later */
		if (rc < 0)
			w->st.rejects_lost++; /* its node is down: its sender went with it */
		w->has_pending_rej = false;
	}
}

/*
 * A peer that went down takes nothing more from this lane: each frame in
 * flight to it is given up, oldest first, and each message in it goes back
 * to its sender as a REJECT with -EHOSTDOWN (it may or may not have been
 * delivered). REJECTs we owed the peer's own senders went down with them.
 * A REJECT that finds no room yet keeps its place for the next step.
 */
static bool abandon(struct gw_worker *w)
{
	struct gw_gateway *g = w->g;
	unsigned known = __atomic_load_n(&g->nknown, __ATOMIC_ACQUIRE);
	bool work = false;
	for (unsigned k = 0; k < known; k++) {
		struct gw_peer *p = &g->peers[g->known[k]];
		struct gw_lane_tx *tx = &p->tx[w->lane];
		struct rte_mbuf *m;
		while (!__atomic_load_n(&p->up, __ATOMIC_ACQUIRE) && (m = gw_lane_tx_oldest(tx))) {
			/* The place is (node, seq), not the mbuf: one mbuf may come
			 * back as another frame. */
			if (w->abandon_node != g->known[k] || w->abandon_seq != tx->una) {
				w->abandon_node = g->known[k];
				w->abandon_seq = tx->una;
				w->abandon_off = 0;
			}
			size_t len;
			const uint8_t *pl = gw_wire_sealed_payload(rte_pktmbuf_mtod(m, uint8_t *), &len);
			struct gw_rec r;
			size_t off = w->abandon_off;
			while (gw_wire_rec_next(pl, len, &off, &r) == 1) {
				if (r.kind == GW_RK_MSG) {
					struct gw_reject rj = {
						.node = g->cfg->node_id, .target = g->known[k],
						.src_chan = r.src_chan,
						.dst_ep = r.dst_ep, .msg_id = r.msg_id, .err = -EHOSTDOWN,
					};
					if (reject_add(w, &rj) < 0)
						return work; /* no room: from here next time */
					w->st.reject_node_down++;
				} else {
					w->st.rejects_lost++;
				}
				w->abandon_off = off;
			}
			gw_lane_tx_abandon(tx);
			w->st.abandoned_frames++;
			work = true;
		}
	}
	return work;
}

static void commands(struct gw_worker *w)
{
	struct gw_cmd cmd;
	while (rte_ring_sc_dequeue_elem(w->cmdq, &cmd, sizeof(cmd)) == 0) {
		struct gw_client *cl = &w->g->clients[cmd.slot];
		if (cmd.op == GW_CMD_ADD) {
			w->chans[w->nchans++] = &cl->chan;
			continue;
		}
		for (unsigned i = 0; i < w->nchans; i++)
			if (w->chans[i] == &cl->chan) {
				w->chans[i] = w->chans[--w->nchans];
				break;
			}
		__atomic_store_n(&cl->released, 1, __ATOMIC_RELEASE);
	}
}

static bool acks(struct gw_worker *w)
{
	struct gw_ack_msg a[32];
	unsigned n = rte_ring_sc_dequeue_burst_elem(w->inbox, a, sizeof(a[0]), 32, NULL);
	for (unsigned i = 0; i < n; i++)
		gw_lane_tx_ack(&w->g->peers[a[i].node].tx[w->lane], &a[i].ack, w->now);
	return n > 0;
}

static bool retransmit(struct gw_worker *w)
{
	struct gw_gateway *g = w->g;
	unsigned known = __atomic_load_n(&g->nknown, __ATOMIC_ACQUIRE);
	unsigned total = 0;
	for (unsigned k = 0; k < known; k++) {
		struct gw_lane_tx *tx = &g->peers[g->known[k]].tx[w->lane];
		if (gw_lane_tx_inflight(tx) == 0)
			continue;
		void *due[GW_DUE_MAX];
		unsigned n = gw_lane_tx_due(tx, w->now, due, GW_DUE_MAX);
		for (unsigned i = 0; i < n; i++) {
			struct rte_mbuf *m = due[i];
			/* In place: the lane owns the frame, and if a NIC is still
			 * reading an earlier copy, the worst is one CRC drop. */
			uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
			if (gw_wire_base(f) != tx->una)
				gw_wire_restamp_base(f, tx->una);
			if (g->auth_on) /* a fresh counter, or it looks like a replay */
				gw_auth_seal(&w->txq.auth, f, m->data_len, m->data_len);
			rte_mbuf_refcnt_update(m, 1);
			gw_txq_put(&w->txq, m, &w->st);
		}
		total += n;
	}
	w->st.retrans += total;
	return total > 0;
}

bool gw_worker_step(struct gw_worker *w)
{
	struct gw_gateway *g = w->g;
	bool work, draining = __atomic_load_n(&g->draining, __ATOMIC_ACQUIRE);
	w->now = gw_clock_ns();
	commands(w);
	work = acks(w);
	rejects_flush(w);
	work |= abandon(w);
	if (!draining)
		work |= gw_batch_pass(&w->batch, w->chans, w->nchans) > 0;
	else
		gw_batch_pass(&w->batch, NULL, 0); /* ships what rejects_flush added */
	work |= retransmit(w);
	gw_txq_flush(&w->txq, w->now, &w->st);
	/* From here on the main lcore may count on this worker's lanes. */
	if (draining)
		__atomic_store_n(&w->drain_seen, true, __ATOMIC_RELEASE);
	return work;
}

int gw_worker_main(void *arg)
{
	struct gw_worker *w = arg;
	while (!__atomic_load_n(&w->g->stop_workers, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&w->passes, 1, __ATOMIC_SEQ_CST); /* a full fence: see gw_gateway_quiesce */
		if (gw_worker_step(w))
			w->idle_polls = 0;
		else
			gw_idle(w->g->cfg, &w->idle_polls);
	}
	return 0;
}

uint64_t gw_worker_inflight(const struct gw_worker *w)
{
	const struct gw_gateway *g = w->g;
	uint64_t n = 0;
	unsigned known = __atomic_load_n(&g->nknown, __ATOMIC_ACQUIRE);
	for (unsigned k = 0; k < known; k++)
		n += gw_lane_tx_inflight(&g->peers[g->known[k]].tx[w->lane]);
	return n;
}

int gw_worker_init(struct gw_worker *w, struct gw_gateway *g, uint16_t lane)
{
	char name[32];
	memset(w, 0, sizeof(*w));
	w->g = g;
	w->lane = lane;
	/* Worker lanes use TX queues 1..N; in run to completion the one
	 * worker shares queue 0 with the main lcore (same thread). */
	w->txq.port = g->port.port_id;
	w->txq.queue = g->cfg->workers ? (uint16_t)(lane + 1) : 0;
	w->chans = rte_zmalloc("gw_wchans", sizeof(*w->chans) * g->cfg->clients_max, 64);
	snprintf(name, sizeof(name), "gw_inbox%u", lane);
	w->inbox = rte_ring_create_elem(name, sizeof(struct gw_ack_msg), GW_INBOX, SOCKET_ID_ANY,
					RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "gw_rejq%u", lane);
	w->rejq = rte_ring_create_elem(name, sizeof(struct gw_reject), GW_REJECTQ, SOCKET_ID_ANY,
				       RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "gw_cmdq%u", lane);
	w->cmdq = rte_ring_create_elem(name, sizeof(struct gw_cmd), GW_CMDQ, SOCKET_ID_ANY,
				       RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!w->chans || !w->inbox || !w->rejq || !w->cmdq)
		return -ENOMEM;
	gw_batch_init(&w->batch, &batch_ops, w, (uint16_t)g->cfg->batch_max, GW_QUANTUM);
	return 0;
}

void gw_worker_fini(struct gw_worker *w)
{
	for (unsigned i = 0; i < w->txq.n; i++)
		rte_pktmbuf_free(w->txq.m[i]);
	rte_ring_free(w->inbox);
	rte_ring_free(w->rejq);
	rte_ring_free(w->cmdq);
	rte_free(w->chans);
}
