/* SPDX-License-Identifier: BSD-3-Clause */
/* gridwired: the roles of the lcore loop; see gw_gateway.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "gw_gateway.h"

#define GW_RX_BURST 32
#define GW_DUE_MAX 32
#define GW_BOND_POLL_NS (10 * 1000 * 1000ull) /* bond mode 4 wants tx every <100 ms */
#define GW_CTL_POLL_NS (1000 * 1000ull)

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- port TX --- */

static void tx_flush(struct gw_gateway *g)
{
	if (g->ntxq == 0 && g->now - g->last_tx_ns < GW_BOND_POLL_NS)
		return;
	uint16_t n = rte_eth_tx_burst(g->port.port_id, 0, g->txq, (uint16_t)g->ntxq);
	g->last_tx_ns = g->now;
	for (unsigned i = 0; i < n; i++) {
		g->st.tx_frames++;
		g->st.tx_bytes += g->txq[i]->pkt_len;
	}
	if (n < g->ntxq) {
		g->st.tx_stalls++;
		memmove(g->txq, g->txq + n, (g->ntxq - n) * sizeof(g->txq[0]));
	}
	g->ntxq -= n;
}

static void tx_enqueue(struct gw_gateway *g, struct rte_mbuf *m)
{
	if (g->ntxq == GW_TXQ_MAX)
		tx_flush(g);
	if (g->ntxq == GW_TXQ_MAX) {
		/* The NIC refuses everything: the lane keeps its copy and
		 * retransmits it later, so dropping our extra reference is safe. */
		rte_pktmbuf_free(m);
		return;
	}
	g->txq[g->ntxq++] = m;
}

static struct rte_mbuf *frame_alloc(struct gw_gateway *g)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(g->port.pool);
	if (!m)
		g->st.nombuf++;
	return m;
}

/* Seal a frame whose payload is in place and queue it for the wire. */
static void frame_send(struct gw_gateway *g, struct rte_mbuf *m, const struct gw_addr *dst,
		       struct gw_hdr *h)
{
	h->src_node = g->cfg->node_id;
	h->epoch = g->epoch;
	struct gw_addr src = g->self;
	src.port = (uint16_t)(g->self.port + h->lane);
	size_t len = gw_wire_seal(rte_pktmbuf_mtod(m, uint8_t *), &src, dst, h);
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	tx_enqueue(g, m);
}

static void release_mbuf(void *frame, void *ctx)
{
	rte_pktmbuf_free(frame);
}

/* --- peers --- */

static void peer_set_up(struct gw_gateway *g, uint16_t node, struct gw_peer *p, bool up)
{
	if (p->up == up)
		return;
	p->up = up;
	GW_LOG(NOTICE, "peer %u (%s) is %s", node, p->name, up ? "up" : "down");
	gw_ctl_nodes_up(g, node, up);
}

static struct gw_peer *peer_heard(struct gw_gateway *g, const struct gw_hdr *h,
				  const struct gw_addr *src)
{
	if (h->src_node == 0 || h->src_node >= GW_MAX_NODES || h->src_node == g->cfg->node_id ||
	    h->dst_node != g->cfg->node_id) {
		g->st.not_ours++;
		return NULL;
	}
	struct gw_peer *p = &g->peers[h->src_node];
	if (!p->allowed) {
		g->st.unknown_peer++;
		return NULL;
	}
	if (!p->lanes) {
		if (gw_lane_tx_init(&p->tx, g->cfg->window, g->epoch, g->cfg->rto_min_us * 1000ull,
				    g->cfg->rto_max_us * 1000ull, release_mbuf, NULL) < 0 ||
		    gw_lane_rx_init(&p->rx, g->cfg->window, release_mbuf, NULL) < 0)
			return NULL;
		p->lanes = true;
		g->known[g->nknown++] = h->src_node;
	}
	p->addr = *src;
	p->addr.port = g->self.port;
	p->last_heard_ns = g->now;
	return p;
}

static void hello_send(struct gw_gateway *g)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct rte_mbuf *m = frame_alloc(g);
	if (!m)
		return;
	struct gw_hello hello = { .interval_ms = (uint16_t)g->cfg->hello_ms };
	snprintf(hello.name, sizeof(hello.name), "%s", g->cfg->node_name);
	struct gw_hdr h = { .type = GW_FT_HELLO, .dst_node = 0xffff };
	h.len = (uint32_t)gw_wire_hello_put(rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN, &hello);
	struct gw_addr bc = { .ip = 0xffffffffu, .port = g->self.port };
	memcpy(bc.mac, bcast, 6);
	frame_send(g, m, &bc, &h);
}

static void on_hello(struct gw_gateway *g, const struct gw_hdr *h, const uint8_t *pl,
		     const struct gw_addr *src)
{
	struct gw_hello hello;
	if (gw_wire_hello_get(pl, h->len, &hello) < 0) {
		g->st.bad_frames++;
		return;
	}
	struct gw_hdr hh = *h;
	hh.dst_node = g->cfg->node_id; /* hellos are broadcast */
	struct gw_peer *p = peer_heard(g, &hh, src);
	if (!p)
		return;
	if (p->epoch != h->epoch && p->epoch)
		GW_LOG(NOTICE, "peer %u (%s) restarted", h->src_node, hello.name);
	p->epoch = h->epoch;
	snprintf(p->name, sizeof(p->name), "%s", hello.name);
	peer_set_up(g, h->src_node, p, true);
}

static void peers_tick(struct gw_gateway *g)
{
	if (g->now - g->last_hello_ns >= g->cfg->hello_ms * 1000000ull) {
		g->last_hello_ns = g->now;
		hello_send(g);
	}
	uint64_t timeout = g->cfg->peer_timeout_ms * 1000000ull;
	for (unsigned k = 0; k < g->nknown; k++) {
		struct gw_peer *p = &g->peers[g->known[k]];
		if (p->up && g->now - p->last_heard_ns > timeout)
			peer_set_up(g, g->known[k], p, false);
	}
}

/* --- receiver --- */

/*
 * Owe the sender of r a REJECT. -EBUSY when the queue of REJECTs to that
 * node is full: the caller then holds the record and tries again once
 * REJECTs have left, so none is dropped.
 */
static int reject_queue(struct gw_gateway *g, uint16_t node, const struct gw_rec *r, int err)
{
	struct gw_peer *p = &g->peers[node];
	if (p->rejq_head - p->rejq_tail >= GW_REJECTQ)
		return -EBUSY;
	p->rejq[p->rejq_head++ & (GW_REJECTQ - 1)] = (struct gw_reject){
		.dst_ep = r->dst_ep, .src_chan = r->src_chan, .msg_id = r->msg_id, .err = err,
	};
	return 0;
}

/*
 * A full destination ring holds its lane (and so the sender's window) for at
 * most dest_block_ms from the moment it filled; after that the channel
 * counts as stopped and what is for it is rejected at once, until a
 * delivery gets through again. One stopped reader thus delays the others
 * once, by at most that bound, and never again while it stays stopped.
 */
static bool dest_hold(struct gw_gateway *g, struct gw_chan *c)
{
	if (!c->full_since_ns)
		c->full_since_ns = g->now;
	return g->now - c->full_since_ns < g->cfg->dest_block_ms * 1000000ull;
}

/* A REJECT for one of our clients: put it in the client's ring. */
static int deliver_reject(struct gw_gateway *g, uint16_t node, uint16_t chan_id, uint32_t ep,
			  uint32_t msg_id, int err, struct gw_chan **dst)
{
	struct gw_chan *c = gw_ctl_chan(g, chan_id);
	if (!c) {
		g->st.rejects_lost++; /* the sender has left */
		return 0;
	}
	*dst = c;
	struct gw_chan_reject rj = { .err = err, .msg_id = msg_id };
	struct gw_chan_desc d = {
		.len = sizeof(rj), .node = node, .ep = ep, .chan = chan_id, .kind = GW_RK_REJECT,
	};
	return gw_chan_deliver(c, &d, &rj);
}

/*
 * Deliver one record into its destination's ring; *dst is that channel.
 * Returns 0 when the record is done with (delivered, or its sender will be
 * told), -ENOBUFS when the ring is full, -EBUSY when a REJECT is owed but
 * cannot be queued yet.
 */
static int deliver_rec(struct gw_gateway *g, uint16_t src, const struct gw_rec *r,
		       struct gw_chan **dst)
{
	if (r->kind == GW_RK_REJECT) {
		struct gw_chan_reject rj;
		if (r->len < sizeof(rj))
			return 0;
		memcpy(&rj, r->data, sizeof(rj));
		return deliver_reject(g, src, r->src_chan, r->dst_ep, r->msg_id, rj.err, dst);
	}
	struct gw_ep *e = gw_ctl_ep_find(g, r->dst_ep);
	struct gw_chan *c = e ? gw_ctl_chan(g, e->chan_id) : NULL;
	if (!c) {
		int rc = reject_queue(g, src, r, -ENOENT);
		g->st.reject_unknown_ep += rc == 0;
		return rc;
	}
	*dst = c;
	struct gw_chan_desc d = {
		.len = r->len, .node = src, .ep = r->dst_ep, .chan = r->src_chan, .kind = GW_RK_MSG,
	};
	int rc = gw_chan_deliver(c, &d, r->data);
	if (rc == -EMSGSIZE)
		return reject_queue(g, src, r, rc);
	if (rc == 0)
		g->st.msgs_in++;
	return rc;
}

/* Deliver a lane's frames in order, as far as the destinations take them. */
static bool deliver_lane(struct gw_gateway *g, uint16_t node, struct gw_peer *p)
{
	bool work = false;
	struct rte_mbuf *m;
	struct gw_chan *last = NULL;
	while ((m = gw_lane_rx_head(&p->rx)) != NULL) {
		const uint8_t *pl = rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN;
		size_t len = m->pkt_len - GW_FRAME_MIN, off = p->rx.cursor;
		struct gw_rec r;
		int more;
		while ((more = gw_wire_rec_next(pl, len, &off, &r)) == 1) {
			struct gw_chan *c = NULL;
			int rc = deliver_rec(g, node, &r, &c);
			if (rc == -EBUSY)
				goto blocked;
			if (rc == -ENOBUFS) {
				if (dest_hold(g, c))
					goto blocked;
				if (r.kind != GW_RK_MSG)
					g->st.rejects_lost++; /* a REJECT its sender cannot take */
				else if (reject_queue(g, node, &r, -ENOBUFS) < 0)
					goto blocked;
				g->st.reject_dest_full++;
			} else if (c) {
				c->full_since_ns = 0;
				if (c != last) {
					if (last)
						gw_chan_notify(last);
					last = c;
				}
			}
			p->rx.cursor = (uint32_t)off;
			work = true;
		}
		if (more < 0)
			g->st.bad_frames++; /* CRC-valid but malformed: skip the rest */
		gw_lane_rx_pop(&p->rx);
	}
blocked:
	if (last)
		gw_chan_notify(last);
	return work;
}

static void ack_send(struct gw_gateway *g, struct gw_peer *p)
{
	struct rte_mbuf *m = frame_alloc(g);
	if (!m)
		return;
	struct gw_ack a;
	gw_lane_rx_ack(&p->rx, &a);
	struct gw_hdr h = { .type = GW_FT_ACK, .dst_node = (uint16_t)(p - g->peers) };
	h.len = (uint32_t)gw_wire_ack_put(rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN, &a);
	frame_send(g, m, &p->addr, &h);
}

/* --- port RX --- */

static void on_frame(struct gw_gateway *g, struct rte_mbuf *m)
{
	struct gw_hdr h;
	const uint8_t *pl;
	struct gw_addr src;
	g->st.rx_frames++;
	g->st.rx_bytes += m->pkt_len;
	int rc = m->nb_segs != 1 ? GW_EWIRE_SHORT
				 : gw_wire_parse(rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
						 g->self.port, &h, &pl, &src);
	if (rc < 0) {
		if (rc == GW_EWIRE_CRC)
			g->st.bad_crc++;
		else if (rc == GW_EWIRE_NOTGW)
			g->st.not_ours++; /* LACP, IPv6 noise, other traffic */
		else
			g->st.bad_frames++;
		rte_pktmbuf_free(m);
		return;
	}
	if (h.type == GW_FT_HELLO) {
		on_hello(g, &h, pl, &src);
		rte_pktmbuf_free(m);
		return;
	}
	struct gw_peer *p = peer_heard(g, &h, &src);
	if (!p) {
		rte_pktmbuf_free(m);
		return;
	}
	if (h.type == GW_FT_ACK) {
		struct gw_ack a;
		g->st.ack_frames++;
		if (gw_wire_ack_get(pl, h.len, &a) < 0)
			g->st.bad_frames++;
		else
			gw_lane_tx_ack(&p->tx, &a, g->now);
		rte_pktmbuf_free(m);
		return;
	}
	g->st.data_frames++;
	m->pkt_len = m->data_len = (uint16_t)(GW_FRAME_MIN + h.len); /* drop link padding */
	switch (gw_lane_rx_accept(&p->rx, &h, m)) {
	case GW_RX_STORED:
		break;
	case GW_RX_DUP:
		g->st.dup_frames++;
		rte_pktmbuf_free(m);
		break;
	case GW_RX_BEYOND:
		g->st.beyond_window++;
		rte_pktmbuf_free(m);
		break;
	}
}

/* --- worker --- */

static int batch_open(void *ctx, uint16_t node, struct gw_batch_frame *f)
{
	struct gw_gateway *g = ctx;
	if (node == g->cfg->node_id)
		return -ELOOP; /* delivered locally by batch_reject */
	struct gw_peer *p = &g->peers[node];
	if (!p->up)
		return -EHOSTUNREACH;
	if (!gw_lane_tx_open(&p->tx) || g->ntxq >= GW_TXQ_MAX - 1)
		return -EAGAIN;
	struct rte_mbuf *m = frame_alloc(g);
	if (!m)
		return -EAGAIN;
	f->handle = m;
	f->payload = rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN;
	f->cap = g->payload_max;
	return 0;
}

static void batch_ship(void *ctx, struct gw_batch_frame *f)
{
	struct gw_gateway *g = ctx;
	struct rte_mbuf *m = f->handle;
	if (f->nrec == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	struct gw_peer *p = &g->peers[f->node];
	struct gw_hdr h = {
		.type = GW_FT_DATA, .dst_node = f->node, .nrec = f->nrec,
		.seq = p->tx.nxt, .base = p->tx.una, .len = (uint32_t)f->used,
	};
	frame_send(g, m, &p->addr, &h);
	/* The lane keeps the frame for retransmission; the NIC frees its own
	 * reference once sent. */
	rte_mbuf_refcnt_update(m, 1);
	gw_lane_tx_push(&p->tx, m, g->now);
	g->st.msgs_out += f->nrec;
}

static void batch_reject(void *ctx, struct gw_chan *c, const struct gw_chan_msg *msg, int err)
{
	struct gw_gateway *g = ctx;
	if (err == -ELOOP) {
		struct gw_rec r = {
			.kind = GW_RK_MSG, .len = msg->len, .dst_ep = msg->ep,
			.src_chan = (uint16_t)c->chan_id, .msg_id = msg->msg_id, .data = msg->data,
		};
		struct gw_chan *dst = NULL;
		err = deliver_rec(g, g->cfg->node_id, &r, &dst);
		if (err == 0) {
			if (dst) {
				g->st.msgs_local++;
				gw_chan_notify(dst);
			}
			return;
		}
		/* A full local ring: no lane to hold, so the sender hears at once. */
	}
	/* -ENOENT for a local unknown endpoint was queued to ourselves by
	 * deliver_rec; everything else goes straight to the sender. */
	struct gw_chan *dst = NULL;
	if (deliver_reject(g, msg->node, (uint16_t)c->chan_id, msg->ep, msg->msg_id, err, &dst) < 0)
		g->st.rejects_lost++;
	else if (dst)
		gw_chan_notify(dst);
	g->st.rejects_sent++;
}

static const struct gw_batch_ops batch_ops = {
	.open = batch_open, .ship = batch_ship, .reject = batch_reject,
};

/* REJECT records owed to a peer ride in front of the next messages. */
static void rejects_flush(struct gw_gateway *g, uint16_t node, struct gw_peer *p)
{
	while (p->rejq_tail != p->rejq_head) {
		struct gw_reject *rj = &p->rejq[p->rejq_tail & (GW_REJECTQ - 1)];
		struct gw_chan_reject body = { .err = rj->err, .msg_id = rj->msg_id };
		struct gw_rec r = {
			.kind = GW_RK_REJECT, .len = sizeof(body), .dst_ep = rj->dst_ep,
			.src_chan = rj->src_chan, .msg_id = rj->msg_id, .data = (const uint8_t *)&body,
		};
		if (node == g->cfg->node_id) {
			struct gw_chan *dst = NULL;
			if (deliver_reject(g, node, rj->src_chan, rj->dst_ep, rj->msg_id, rj->err, &dst) < 0)
				g->st.rejects_lost++;
			else if (dst)
				gw_chan_notify(dst);
		} else if (gw_batch_add(&g->batch, node, &r) < 0) {
			return;
		}
		p->rejq_tail++;
		g->st.rejects_sent++;
	}
}

/* --- the loop --- */

static bool retransmit(struct gw_gateway *g)
{
	bool work = false;
	for (unsigned k = 0; k < g->nknown; k++) {
		struct gw_peer *p = &g->peers[g->known[k]];
		if (gw_lane_tx_inflight(&p->tx) == 0)
			continue;
		void *due[GW_DUE_MAX];
		unsigned k = gw_lane_tx_due(&p->tx, g->now, due, GW_DUE_MAX);
		for (unsigned i = 0; i < k; i++) {
			rte_mbuf_refcnt_update(due[i], 1);
			tx_enqueue(g, due[i]);
		}
		g->st.retrans += k;
		work |= k > 0;
	}
	return work;
}

static bool loop_once(struct gw_gateway *g)
{
	struct rte_mbuf *rx[GW_RX_BURST];
	bool work = false;
	g->now = clock_ns();

	uint16_t n = rte_eth_rx_burst(g->port.port_id, 0, rx, GW_RX_BURST);
	for (uint16_t i = 0; i < n; i++)
		on_frame(g, rx[i]);
	work |= n > 0;

	for (unsigned k = 0; k < g->nknown; k++) {
		uint16_t node = g->known[k];
		struct gw_peer *p = &g->peers[node];
		work |= deliver_lane(g, node, p);
		if (p->rx.ack_due)
			ack_send(g, p);
		rejects_flush(g, node, p);
	}

	if (!g->draining)
		work |= gw_batch_pass(&g->batch, g->active, g->nactive) > 0;
	else
		gw_batch_pass(&g->batch, NULL, 0); /* ships queued REJECTs */
	work |= retransmit(g);
	peers_tick(g);
	tx_flush(g);
	if (g->now - g->last_ctl_ns >= GW_CTL_POLL_NS) {
		g->last_ctl_ns = g->now;
		gw_ctl_poll(g);
	}
	return work;
}

/* Spin, then yield, then sleep for growing spans up to sleep_max_us. */
static void idle(struct gw_gateway *g, unsigned *idle_polls)
{
	const struct gw_config *c = g->cfg;
	unsigned k = (*idle_polls)++;
	if (c->idle == GW_IDLE_SPIN || k < c->spin_polls) {
		rte_pause();
		return;
	}
	if (k < c->spin_polls + c->yield_polls) {
		sched_yield();
		return;
	}
	unsigned shift = k - c->spin_polls - c->yield_polls;
	uint64_t us = shift >= 16 ? c->sleep_max_us : (1ull << shift);
	if (us > c->sleep_max_us)
		us = c->sleep_max_us;
	struct timespec ts = { .tv_nsec = (long)(us * 1000) };
	nanosleep(&ts, NULL);
}

int gw_gateway_init(struct gw_gateway *g, const struct gw_config *cfg)
{
	memset(g, 0, sizeof(*g));
	g->cfg = cfg;
	g->listen_fd = g->epfd = -1;
	g->epoch = (uint32_t)rte_rand() | 1;
	g->payload_max = cfg->mtu - GW_IP_HLEN - GW_UDP_HLEN - GW_HDR_LEN;
	g->peers = rte_zmalloc("gw_peers", sizeof(*g->peers) * GW_MAX_NODES, 64);
	g->clients = rte_zmalloc("gw_clients", sizeof(*g->clients) * cfg->clients_max, 64);
	g->active = rte_zmalloc("gw_active", sizeof(*g->active) * cfg->clients_max, 64);
	if (!g->peers || !g->clients || !g->active)
		return -ENOMEM;
	for (unsigned n = 1; n < GW_MAX_NODES; n++)
		g->peers[n].allowed = cfg->npeers == 0;
	for (unsigned i = 0; i < cfg->npeers; i++)
		g->peers[cfg->peers[i]].allowed = true;
	g->peers[cfg->node_id].allowed = false;

	int rc = gw_port_open(&g->port, cfg);
	if (rc < 0)
		return rc;
	memcpy(g->self.mac, g->port.mac.addr_bytes, 6);
	g->self.ip = cfg->ip;
	g->self.port = cfg->udp_port;
	gw_batch_init(&g->batch, &batch_ops, g, (uint16_t)cfg->batch_max, 256);
	rc = gw_ctl_open(g);
	if (rc < 0)
		return rc;
	prctl(PR_SET_TIMERSLACK, 1000UL); /* make short sleeps short */
	GW_LOG(NOTICE, "node %u (%s) epoch %08x listening on %s, port %s mode %u, mtu %u, %s",
	       cfg->node_id, cfg->node_name, g->epoch, cfg->socket_path,
	       g->port.bonded ? "bond" : "af_packet", cfg->bond_mode, cfg->mtu,
	       cfg->batch_max == 1 ? "batching off" : "batching on");
	return 0;
}

static uint64_t inflight_frames(const struct gw_gateway *g)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < g->nknown; k++)
		n += gw_lane_tx_inflight(&g->peers[g->known[k]].tx);
	return n;
}

void gw_gateway_run(struct gw_gateway *g, volatile bool *stop, unsigned flush_ms)
{
	unsigned idle_polls = 0;
	bool link = false;
	while (!*stop) {
		if (loop_once(g))
			idle_polls = 0;
		else
			idle(g, &idle_polls);
		if (!link && gw_port_link_up(&g->port)) {
			link = true;
			GW_LOG(NOTICE, "link up");
		}
	}
	/* Shutdown: take nothing new, let in-flight frames be acked. */
	g->draining = true;
	uint64_t end = clock_ns() + flush_ms * 1000000ull;
	GW_LOG(NOTICE, "stopping: flushing %" PRIu64 " frames in flight", inflight_frames(g));
	while (inflight_frames(g) && clock_ns() < end) {
		if (loop_once(g))
			idle_polls = 0;
		else
			idle(g, &idle_polls);
	}
	uint64_t left = inflight_frames(g), waiting = 0;
	for (unsigned i = 0; i < g->nactive; i++) {
		struct rte_ring *r = g->active[i]->tx_ring;
		waiting += rte_ring_count(r) + g->active[i]->cache_n - g->active[i]->cache_i;
	}
	if (left || waiting)
		GW_LOG(WARNING, "stopped with %" PRIu64 " frames unacknowledged and %" PRIu64
		       " messages not taken from clients: not delivered",
		       left, waiting);
	else
		GW_LOG(NOTICE, "stopped: everything sent was acknowledged");
}

void gw_gateway_stats_json(const struct gw_gateway *g, char *buf, size_t len)
{
	const struct gw_counters *s = &g->st;
	snprintf(buf, len,
		 "{\"node\":%u,\"rx_frames\":%" PRIu64 ",\"tx_frames\":%" PRIu64
		 ",\"rx_bytes\":%" PRIu64 ",\"tx_bytes\":%" PRIu64 ",\"data_frames_rx\":%" PRIu64
		 ",\"data_frames_tx\":%" PRIu64 ",\"msgs_out\":%" PRIu64 ",\"msgs_in\":%" PRIu64
		 ",\"msgs_local\":%" PRIu64 ",\"msgs_per_frame\":%.2f,\"retrans\":%" PRIu64
		 ",\"dup_frames\":%" PRIu64 ",\"beyond_window\":%" PRIu64 ",\"bad_crc\":%" PRIu64
		 ",\"bad_frames\":%" PRIu64 ",\"not_ours\":%" PRIu64 ",\"unknown_peer\":%" PRIu64
		 ",\"rejects_sent\":%" PRIu64 ",\"rejects_lost\":%" PRIu64
		 ",\"reject_unknown_ep\":%" PRIu64 ",\"reject_dest_full\":%" PRIu64
		 ",\"nombuf\":%" PRIu64 ",\"tx_stalls\":%" PRIu64 ",\"clients_broken\":%" PRIu64
		 ",\"batch_full_stops\":%" PRIu64 "}",
		 g->cfg->node_id, s->rx_frames, s->tx_frames, s->rx_bytes, s->tx_bytes,
		 s->data_frames, g->batch.frames, s->msgs_out, s->msgs_in, s->msgs_local,
		 g->batch.frames ? (double)s->msgs_out / (double)g->batch.frames : 0.0, s->retrans,
		 s->dup_frames, s->beyond_window, s->bad_crc, s->bad_frames, s->not_ours,
		 s->unknown_peer, s->rejects_sent, s->rejects_lost, s->reject_unknown_ep,
		 s->reject_dest_full, s->nombuf, s->tx_stalls, s->clients_broken,
		 g->batch.full_stops);
}

void gw_gateway_fini(struct gw_gateway *g)
{
	gw_ctl_close(g);
	for (unsigned k = 0; k < g->nknown; k++) {
		gw_lane_tx_fini(&g->peers[g->known[k]].tx);
		gw_lane_rx_fini(&g->peers[g->known[k]].rx);
	}
	for (unsigned i = 0; i < g->ntxq; i++)
		rte_pktmbuf_free(g->txq[i]);
	gw_port_close(&g->port);
	rte_free(g->peers);
	rte_free(g->clients);
	rte_free(g->active);
}
