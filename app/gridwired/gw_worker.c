/* SPDX-License-Identifier: BSD-3-Clause */
/* The worker role: see gw_worker.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "gw_worker.h"

#define GW_INBOX 1024   /* ACKs queued to a worker from one lcore */
#define GW_REJECTQ 4096 /* REJECTs queued to a worker from one lcore */
#define GW_CMDQ 256     /* channel commands queued to a worker */
#define GW_DUE_MAX 32
#define GW_QUANTUM 256

/* The lane a frame of class k goes on to peer p: its own, or the bulk one
 * to a peer that has no urgent lanes (an older gateway, whose HELLO does
 * not say GW_CAP_URGENT): there urgent messages travel as bulk, never
 * dropped as frames it cannot parse. */
static const struct gw_worker_class *lane_to(const struct gw_worker_class *k,
					     const struct gw_peer *p)
{
	if (k->cls == GW_CLASS_URGENT && !(__atomic_load_n(&p->caps, __ATOMIC_RELAXED) & GW_CAP_URGENT))
		return &k->w->cls[GW_CLASS_BULK];
	return k;
}

static int batch_open(void *ctx, uint16_t node, struct gw_batch_frame *f)
{
	struct gw_worker_class *k = ctx;
	struct gw_worker *w = k->w;
	if (node == w->node->cfg->node_id) {
		/* Each batcher holds at most one open frame per node, and the
		 * worker is the only producer on its loopback ring: a frame
		 * opens only with a place in it for every open one. */
		if (rte_ring_free_count(w->loop->ring) <= w->loop_open)
			return -EAGAIN;
		w->loop_open++;
	} else {
		struct gw_peer *p = &w->peers->peer[node];
		if (!__atomic_load_n(&p->up, __ATOMIC_ACQUIRE) ||
		    !__atomic_load_n(&p->lanes, __ATOMIC_ACQUIRE))
			return -EHOSTUNREACH;
		const struct gw_worker_class *l = lane_to(k, p);
		if (!gw_lane_tx_may_send(&p->tx[l->slot], w->now) || !gw_txq_room(w->txq, l->cls))
			return -EAGAIN;
	}
	struct rte_mbuf *m = gw_txq_alloc(w->txq);
	if (!m) {
		w->loop_open -= node == w->node->cfg->node_id;
		return -EAGAIN;
	}
	f->handle = m;
	f->payload = rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN;
	f->cap = w->node->payload_max;
	return 0;
}

static void batch_ship(void *ctx, struct gw_batch_frame *f)
{
	struct gw_worker_class *k = ctx;
	struct gw_worker *w = k->w;
	struct rte_mbuf *m = f->handle;
	bool local = f->node == w->node->cfg->node_id;
	w->loop_open -= local;
	if (f->nrec == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	if (local) {
		/* Only the payload matters on the loopback: no headers, no CRC. */
		m->data_len = (uint16_t)(GW_FRAME_MIN + f->used);
		m->pkt_len = m->data_len;
		m->hash.usr = k->cls; /* the receiver's only way to know */
		rte_ring_sp_enqueue(w->loop->ring, m); /* room was checked at open */
		w->loop_serial[w->loop_shipped++ % GW_LOOPQ] = ++w->serial;
		w->st->msgs_local += f->nrec;
		return;
	}
	unsigned b = 31 - (unsigned)__builtin_clz(f->nrec); /* log2 bucket */
	w->hist[k->cls][b < GW_HIST_BUCKETS ? b : GW_HIST_BUCKETS - 1]++;
	struct gw_peer *p = &w->peers->peer[f->node];
	const struct gw_worker_class *l = lane_to(k, p);
	struct gw_lane_tx *tx = &p->tx[l->slot];
	struct gw_hdr h = {
		.type = GW_FT_DATA, .dst_node = f->node, .lane = l->lane, .nrec = f->nrec,
		.seq = tx->nxt, .base = tx->una, .len = (uint32_t)f->used,
	};
	/* The lane keeps the frame for retransmission; the NIC frees its own
	 * reference once sent. */
	rte_mbuf_refcnt_update(m, 1);
	gw_txq_send(w->txq, m, &p->addr, &h, 0);
	gw_lane_tx_push(tx, m, m->pkt_len, w->now);
	gw_lane_tx_tag(tx, ++w->serial);
	tx->msgs += f->nrec;
	w->st->msgs_out += f->nrec;
	if (k->cls == GW_CLASS_URGENT) {
		w->st->urgent_msgs_out += f->nrec;
		w->st->urgent_frames++;
	}
}

/* A REJECT record to rj->node (our own node: a local sender). */
static int reject_add(struct gw_worker *w, const struct gw_reject *rj)
{
	uint8_t body[GW_REJECT_LEN];
	gw_wire_reject_put(body, &(struct gw_reject_body){
		.err = rj->err, .msg_id = rj->msg_id, .node = rj->target });
	struct gw_rec r = {
		.kind = GW_RK_REJECT, .len = sizeof(body), .dst_ep = rj->dst_ep,
		.src_chan = rj->src_chan, .msg_id = rj->msg_id, .data = body,
	};
	int rc = gw_batch_add(&w->batch[GW_CLASS_BULK], rj->node, &r);
	if (rc == 0)
		w->st->rejects_sent++;
	return rc;
}

/*
 * A message of ours that cannot go (unknown node, too big): its sender is
 * told through the loopback, like any REJECT. -EAGAIN leaves the message in
 * its channel to be tried again.
 */
static int batch_reject(void *ctx, struct gw_chan *c, const struct gw_chan_msg *msg, int err)
{
	struct gw_worker *w = ((struct gw_worker_class *)ctx)->w;
	struct gw_reject rj = {
		.node = w->node->cfg->node_id, .target = msg->node, .src_chan = (uint16_t)c->chan_id,
		.dst_ep = msg->ep,
		.msg_id = msg->msg_id, .err = err,
	};
	return reject_add(w, &rj);
}

_Static_assert(GW_TOPIC_NODES == GW_MAX_NODES, "a topic's nodes are the batcher's");

/* The nodes with subscribers to topic: peers that said so (and take PUB
 * records: one that came back as an older release would skip the rest of
 * the frame), and this one. */
static void batch_fanout(void *ctx, uint32_t topic, uint64_t *nodes)
{
	const struct gw_worker *w = ((struct gw_worker_class *)ctx)->w;
	const struct gw_topic *t = gw_topic_find(__atomic_load_n(w->topics, __ATOMIC_ACQUIRE), topic);
	if (!t)
		return;
	for (unsigned k = 0; k < GW_MAX_NODES / 64; k++)
		for (uint64_t b = t->nodes[k]; b; b &= b - 1) {
			unsigned node = k * 64 + (unsigned)__builtin_ctzll(b);
			if (__atomic_load_n(&w->peers->peer[node].caps, __ATOMIC_RELAXED) & GW_CAP_TOPICS)
				nodes[k] |= 1ull << (node % 64);
		}
	uint16_t self = w->node->cfg->node_id;
	if (t->nsubs)
		nodes[self / 64] |= 1ull << (self % 64);
}

static const struct gw_batch_ops batch_ops = {
	.open = batch_open, .ship = batch_ship, .reject = batch_reject, .fanout = batch_fanout,
};

#define GW_TELL_EVERY_NS (1000 * 1000ull)               /* how often a worker looks */
#define GW_TELL_REFRESH_NS (2000 * 1000 * 1000ull)       /* an advertisement told again */

/* One part of this node's advertisement to node: false if its lane is full. */
static bool tell_part(struct gw_worker *w, uint16_t node, uint16_t first)
{
	uint16_t n = (uint16_t)(w->adv_total - first);
	n = n < GW_SUBS_ENTRIES_MAX ? n : GW_SUBS_ENTRIES_MAX;
	uint8_t data[GW_SUBS_HLEN + GW_SUBS_ENTRIES_MAX * GW_SUBS_ENTRY];
	struct gw_rec r = {
		.kind = GW_RK_SUBS,
		.len = (uint16_t)gw_wire_subs_put(data, sizeof(data), w->adv_version, w->adv_total,
						  first, w->adv_names + first, w->adv_ids + first, n),
		.data = data,
	};
	if (gw_batch_add(&w->batch[GW_CLASS_BULK], node, &r) < 0)
		return false;
	gw_topic_tell_sent(&w->tell[node], n);
	w->st->subs_parts_sent++;
	return true;
}

/* This node's topics to the peers that are this worker's to tell, in parts
 * on the bulk lane (reliable, in order), as gw_topic_tell says. A lane
 * that is full leaves the rest for the next look. */
static void tell_topics(struct gw_worker *w)
{
	if (w->now - w->tell_ns < GW_TELL_EVERY_NS)
		return;
	w->tell_ns = w->now;
	const struct gw_topics *ts = __atomic_load_n(w->topics, __ATOMIC_ACQUIRE);
	if (!w->adv_taken || ts->version != w->adv_version) {
		w->adv_total = (uint16_t)gw_topic_local(ts, w->adv_names, w->adv_ids, GW_TOPICS_MAX);
		w->adv_version = ts->version;
		w->adv_taken = true;
	}
	struct gw_peers *ps = w->peers;
	unsigned known = gw_peers_known(ps);
	for (unsigned k = 0; k < known; k++) {
		uint16_t node = ps->known[k];
		const struct gw_peer *p = &ps->peer[node];
		if (node % w->nworkers != w->lane || !__atomic_load_n(&p->up, __ATOMIC_ACQUIRE) ||
		    !(__atomic_load_n(&p->caps, __ATOMIC_RELAXED) & GW_CAP_TOPICS))
			continue;
		uint32_t session = __atomic_load_n(&p->session, __ATOMIC_ACQUIRE);
		int first;
		while ((first = gw_topic_tell_next(&w->tell[node], session, w->adv_version,
						   w->adv_total, w->now, GW_TELL_REFRESH_NS)) >= 0 &&
		       tell_part(w, node, (uint16_t)first) && w->tell[node].telling)
			;
	}
}

/* REJECTs owed to peers' senders ride in front of the next messages; one
 * whose lane is full waits, and its ring behind it, not the other rings. */
static void rejects_flush(struct gw_worker *w)
{
	for (unsigned i = 0; i < w->nin; i++) {
		struct rte_ring *r = w->in[i]->rejects;
		struct gw_reject *rj = &w->pending_rej[i];
		while (r) {
			if (!w->has_pending_rej[i]) {
				if (rte_ring_sc_dequeue_elem(r, rj, sizeof(*rj)))
					break;
				w->has_pending_rej[i] = true;
			}
			int rc = reject_add(w, rj);
			if (rc == -EAGAIN)
				break; /* the lane is full: later */
			if (rc < 0)
				w->st->rejects_lost++; /* its node is down: its sender went with it */
			w->has_pending_rej[i] = false;
		}
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
	struct gw_peers *ps = w->peers;
	unsigned known = gw_peers_known(ps);
	bool work = false;
	for (unsigned i = 0; i < known * GW_CLASSES; i++) {
		uint16_t node = ps->known[i / GW_CLASSES];
		uint16_t slot = w->cls[i % GW_CLASSES].slot;
		struct gw_peer *p = &ps->peer[node];
		struct gw_lane_tx *tx = &p->tx[slot];
		struct rte_mbuf *m;
		while (!__atomic_load_n(&p->up, __ATOMIC_ACQUIRE) && (m = gw_lane_tx_oldest(tx))) {
			/* The place is (lane, node, seq), not the mbuf: one mbuf
			 * may come back as another frame. */
			/* Its messages are settled only once their REJECTs are in
			 * their senders' rings: hold settling at this frame until
			 * the loopback frames carrying them are delivered. */
			uint32_t serial = gw_lane_tx_oldest_tag(tx);
			if (!w->barrier_on || (int32_t)(serial - w->barrier) < 0)
				w->barrier = serial;
			w->barrier_on = true;
			w->barrier_loop = UINT64_MAX; /* set when the step ends */
			if (w->abandon_slot != slot || w->abandon_node != node ||
			    w->abandon_seq != tx->una) {
				w->abandon_slot = slot;
				w->abandon_node = node;
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
						.node = w->node->cfg->node_id, .target = node,
						.src_chan = r.src_chan,
						.dst_ep = r.dst_ep, .msg_id = r.msg_id, .err = -EHOSTDOWN,
					};
					if (reject_add(w, &rj) < 0)
						return work; /* no room: from here next time */
					w->st->reject_node_down++;
				} else {
					w->st->rejects_lost++;
				}
				w->abandon_off = off;
			}
			gw_lane_tx_abandon(tx);
			w->st->abandoned_frames++;
			work = true;
		}
	}
	return work;
}

static void command(struct gw_worker *w, const struct gw_cmd *cmd)
{
	if (cmd->op == GW_CMD_ADD) {
		w->chans[w->nchans++] = cmd->chan;
		return;
	}
	for (unsigned i = 0; i < w->nchans; i++)
		if (w->chans[i] == cmd->chan) {
			w->chans[i] = w->chans[--w->nchans];
			break;
		}
	__atomic_store_n(cmd->released, 1, __ATOMIC_RELEASE);
}

static void on_ack(struct gw_worker *w, const struct gw_ack_msg *a, uint64_t now)
{
	struct gw_lane_tx *tx = &w->peers->peer[a->node].tx[gw_lane_slot(a->lane)];
	/* A peer that does not grant writes 0 there. */
	gw_cc_set_grant(&tx->cc, a->ack.grant ? a->ack.grant * (uint64_t)GW_ACK_GRANT_UNIT : UINT64_MAX);
	gw_lane_tx_ack(tx, &a->ack, now);
}

/* What the other lcores' proxies queued: commands, ACKs. */
static bool inbox(struct gw_worker *w)
{
	unsigned total = 0;
	for (unsigned i = 0; i < w->nin; i++) {
		struct gw_worker_proxy *px = w->in[i];
		struct gw_cmd cmd;
		while (px->cmds && rte_ring_sc_dequeue_elem(px->cmds, &cmd, sizeof(cmd)) == 0)
			command(w, &cmd);
		if (!px->acks)
			continue;
		struct gw_ack_msg a[32];
		unsigned n = rte_ring_sc_dequeue_burst_elem(px->acks, a, sizeof(a[0]), 32, NULL);
		for (unsigned k = 0; k < n; k++)
			on_ack(w, &a[k], w->now);
		total += n;
	}
	return total > 0;
}

/* Frames whose time has come again, urgent lanes first. */
static bool retransmit(struct gw_worker *w)
{
	struct gw_peers *ps = w->peers;
	unsigned known = gw_peers_known(ps);
	unsigned total = 0;
	for (unsigned i = 0; i < known * GW_CLASSES; i++) {
		const struct gw_worker_class *k = &w->cls[GW_CLASSES - 1 - i / known];
		struct gw_lane_tx *tx = &ps->peer[ps->known[i % known]].tx[k->slot];
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
			gw_txq_resend(w->txq, m, k->cls);
		}
		total += n;
		if (k->cls == GW_CLASS_URGENT)
			w->st->urgent_retrans += n;
	}
	w->st->retrans += total;
	return total > 0;
}

/* The step's passes have shipped their frames, the REJECTs they made for
 * their own messages included (an urgent message's goes in a bulk frame,
 * shipped by the bulk pass): checkpoint every channel's classes. */
static void checkpoint(struct gw_worker *w)
{
	for (unsigned i = 0; i < w->nchans; i++)
		for (unsigned c = 0; c < GW_CLASSES; c++)
			gw_chan_checkpoint(w->chans[i], c, w->serial);
	w->ck_fresh = true;
}

/*
 * Which of the channels' messages are settled: every frame numbered below
 * the oldest one still in flight on a lane, still on the loopback, or
 * given up with REJECTs not yet delivered. O(lanes), and O(channels) when
 * that moved.
 */
static void settle(struct gw_worker *w)
{
	uint32_t below = w->serial + 1;
	struct gw_peers *ps = w->peers;
	unsigned known = gw_peers_known(ps);
	for (unsigned i = 0; i < known * GW_CLASSES; i++) {
		const struct gw_lane_tx *tx = &ps->peer[ps->known[i / GW_CLASSES]].tx[w->cls[i % GW_CLASSES].slot];
		if (gw_lane_tx_inflight(tx) && (int32_t)(gw_lane_tx_oldest_tag(tx) - below) < 0)
			below = gw_lane_tx_oldest_tag(tx);
	}
	uint64_t done = __atomic_load_n(&w->loop->done, __ATOMIC_ACQUIRE);
	if (done != w->loop_shipped && (int32_t)(w->loop_serial[done % GW_LOOPQ] - below) < 0)
		below = w->loop_serial[done % GW_LOOPQ];
	if (w->barrier_on) {
		if (w->barrier_loop == UINT64_MAX)
			w->barrier_loop = w->loop_shipped; /* abandon's REJECTs have shipped */
		else if (done >= w->barrier_loop)
			w->barrier_on = false;
		if (w->barrier_on && (int32_t)(w->barrier - below) < 0)
			below = w->barrier;
	}
	if (below == w->settled_below && !w->ck_fresh)
		return;
	w->settled_below = below;
	w->ck_fresh = false;
	for (unsigned i = 0; i < w->nchans; i++)
		for (unsigned c = 0; c < GW_CLASSES; c++)
			gw_chan_settle(w->chans[i], c, below);
}

bool gw_worker_step(struct gw_worker *w, uint64_t now)
{
	bool work, draining = __atomic_load_n(&w->node->draining, __ATOMIC_ACQUIRE), taken = false;
	w->now = now;
	work = inbox(w);
	/* Urgent frames leave before the bulk pass, which can take a while. */
	if (!draining && gw_batch_pass(&w->batch[GW_CLASS_URGENT], w->chans, w->nchans) > 0) {
		gw_txq_flush_urgent(w->txq);
		taken = true;
	}
	rejects_flush(w);
	if (!draining)
		tell_topics(w);
	work |= abandon(w);
	if (!draining)
		taken |= gw_batch_pass(&w->batch[GW_CLASS_BULK], w->chans, w->nchans) > 0;
	else
		gw_batch_pass(&w->batch[GW_CLASS_BULK], NULL, 0); /* ships what rejects_flush added */
	if (taken)
		checkpoint(w);
	work |= taken | retransmit(w);
	settle(w);
	return work;
}

uint64_t gw_worker_pending(const struct gw_worker *w)
{
	const struct gw_peers *ps = w->peers;
	uint64_t n = 0;
	unsigned known = gw_peers_known(ps);
	for (unsigned k = 0; k < known; k++)
		for (unsigned c = 0; c < GW_CLASSES; c++)
			n += gw_lane_tx_inflight(&ps->peer[ps->known[k]].tx[w->cls[c].slot]);
	for (unsigned i = 0; i < w->nin; i++) {
		n += __atomic_load_n(&w->has_pending_rej[i], __ATOMIC_RELAXED);
		if (w->in[i]->rejects)
			n += rte_ring_count(w->in[i]->rejects);
	}
	return n;
}

int gw_worker_init(struct gw_worker *w, const struct gw_node *node, struct gw_peers *peers,
		   uint16_t lane, struct gw_txq *txq, struct gw_counters *st, struct gw_loopback *loop)
{
	memset(w, 0, sizeof(*w));
	w->node = node;
	w->peers = peers;
	w->lane = lane;
	w->txq = txq;
	w->st = st;
	w->loop = loop;
	w->chans = rte_zmalloc("gw_wchans", sizeof(*w->chans) * node->cfg->clients_max, 64);
	w->tell = rte_zmalloc("gw_tell", sizeof(*w->tell) * GW_MAX_NODES, 64);
	w->adv_names = rte_malloc("gw_adv", sizeof(*w->adv_names) * GW_TOPICS_MAX, 64);
	w->adv_ids = rte_malloc("gw_adv", sizeof(*w->adv_ids) * GW_TOPICS_MAX, 64);
	if (!w->chans || !w->tell || !w->adv_names || !w->adv_ids) {
		gw_worker_fini(w);
		return -ENOMEM;
	}
	for (unsigned c = 0; c < GW_CLASSES; c++) {
		uint16_t l = (uint16_t)(lane | (c == GW_CLASS_URGENT ? GW_LANE_URGENT : 0));
		w->cls[c] = (struct gw_worker_class){
			.w = w, .cls = (uint8_t)c, .lane = l, .slot = (uint16_t)gw_lane_slot(l),
		};
		gw_batch_init(&w->batch[c], &batch_ops, &w->cls[c], c,
			      (uint16_t)node->cfg->batch_max, GW_QUANTUM);
	}
	return 0;
}

void gw_worker_fini(struct gw_worker *w)
{
	rte_free(w->chans);
	rte_free(w->tell);
	rte_free(w->adv_names);
	rte_free(w->adv_ids);
	w->chans = NULL;
	w->tell = NULL;
	w->adv_names = NULL;
	w->adv_ids = NULL;
}

int gw_worker_proxy_init(struct gw_worker_proxy *px, struct gw_worker *w, unsigned from,
			 bool same, unsigned what)
{
	static const struct {
		unsigned what;
		const char *name;
		unsigned elem, count;
		size_t off;
	} rings[] = {
		{ GW_PROXY_ACKS, "ack", sizeof(struct gw_ack_msg), GW_INBOX,
		  offsetof(struct gw_worker_proxy, acks) },
		{ GW_PROXY_REJECTS, "rej", sizeof(struct gw_reject), GW_REJECTQ,
		  offsetof(struct gw_worker_proxy, rejects) },
		{ GW_PROXY_CMDS, "cmd", sizeof(struct gw_cmd), GW_CMDQ,
		  offsetof(struct gw_worker_proxy, cmds) },
	};
	static const struct gw_worker_calls calls = { .ack = on_ack, .cmd = command };
	memset(px, 0, sizeof(*px));
	if (same) {
		px->direct = w;
		px->calls = &calls;
	}
	for (unsigned i = 0; i < sizeof(rings) / sizeof(rings[0]); i++) {
		/* On the worker's own lcore only REJECTs need a ring. */
		if (!(what & rings[i].what) || (same && rings[i].what != GW_PROXY_REJECTS))
			continue;
		char name[32];
		snprintf(name, sizeof(name), "gw_%s%u_%u", rings[i].name, from, w->lane);
		struct rte_ring *r = rte_ring_create_elem(name, rings[i].elem, rings[i].count,
							  SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!r) {
			gw_worker_proxy_fini(px);
			return -ENOMEM;
		}
		*(struct rte_ring **)((char *)px + rings[i].off) = r;
	}
	if (px->acks || px->rejects || px->cmds)
		w->in[w->nin++] = px;
	return 0;
}

void gw_worker_proxy_fini(struct gw_worker_proxy *px)
{
	rte_ring_free(px->acks);
	rte_ring_free(px->rejects);
	rte_ring_free(px->cmds);
	memset(px, 0, sizeof(*px));
}
