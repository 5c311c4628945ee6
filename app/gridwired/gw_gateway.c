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
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "gw_gateway.h"

#define GW_RX_BURST 32
#define GW_LOOP_BURST 64
#define GW_BOND_POLL_NS (10 * 1000 * 1000ull) /* bond mode 4 wants tx every <100 ms */
#define GW_CTL_POLL_NS (1000 * 1000ull)

uint64_t gw_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- port TX --- */

void gw_txq_flush(struct gw_txq *q, uint64_t now, struct gw_counters *st)
{
	if (q->n == 0 && now - q->last_tx_ns < GW_BOND_POLL_NS)
		return;
	uint16_t n = rte_eth_tx_burst(q->port, q->queue, q->m, (uint16_t)q->n);
	q->last_tx_ns = now;
	for (unsigned i = 0; i < n; i++) {
		st->tx_frames++;
		st->tx_bytes += q->m[i]->pkt_len;
	}
	if (n < q->n) {
		st->tx_stalls++;
		memmove(q->m, q->m + n, (q->n - n) * sizeof(q->m[0]));
	}
	q->n -= n;
}

void gw_txq_put(struct gw_txq *q, struct rte_mbuf *m, struct gw_counters *st)
{
	if (q->n == GW_TXQ_MAX)
		gw_txq_flush(q, q->last_tx_ns, st);
	if (q->n == GW_TXQ_MAX) {
		/* The NIC refuses everything. A DATA frame is still held by its
		 * lane and goes again; an ACK or HELLO is repeated anyway. */
		st->tx_stalls++;
		rte_pktmbuf_free(m);
		return;
	}
	q->m[q->n++] = m;
}

struct rte_mbuf *gw_frame_alloc(struct gw_gateway *g, struct gw_counters *st)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(g->port.pool);
	if (!m)
		st->nombuf++;
	return m;
}

/* Seal a frame whose payload is in place and queue it for the wire. */
void gw_frame_send(struct gw_gateway *g, struct gw_txq *q, struct gw_counters *st,
		   struct rte_mbuf *m, const struct gw_addr *dst, struct gw_hdr *h)
{
	h->src_node = g->cfg->node_id;
	h->epoch = g->epoch;
	struct gw_addr src = g->self;
	/* One UDP flow per lane: bond l34 hashing and RSS spread the lanes. */
	src.port = (uint16_t)(g->self.port + h->lane);
	size_t len = gw_wire_seal(rte_pktmbuf_mtod(m, uint8_t *), &src, dst, h);
	if (g->auth_on) /* payload_max left room for the trailer */
		len = (size_t)gw_auth_seal(&q->auth, rte_pktmbuf_mtod(m, uint8_t *), len,
					   rte_pktmbuf_tailroom(m) + m->data_len);
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	gw_txq_put(q, m, st);
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
	__atomic_store_n(&p->up, up, __ATOMIC_RELEASE);
	GW_LOG(NOTICE, "peer %u (%s) is %s", node, p->name, up ? "up" : "down");
	gw_ctl_nodes_up(g, node, up);
}

/* Lane state for every lane, before any worker may see the peer. */
static int peer_lanes(struct gw_gateway *g, uint16_t node, struct gw_peer *p)
{
	const struct gw_config *c = g->cfg;
	for (unsigned i = 0; i < GW_LANES_MAX; i++)
		if (gw_lane_tx_init(&p->tx[i], c->window, g->epoch, c->rto_min_us * 1000ull,
				    c->rto_max_us * 1000ull, release_mbuf, NULL) < 0 ||
		    gw_lane_rx_init(&p->rx[i], c->window, release_mbuf, NULL) < 0) {
			for (unsigned k = 0; k <= i; k++) {
				gw_lane_tx_fini(&p->tx[k]);
				gw_lane_rx_fini(&p->rx[k]);
			}
			return -ENOMEM;
		}
	__atomic_store_n(&p->lanes, true, __ATOMIC_RELEASE);
	g->known[g->nknown] = node;
	__atomic_store_n(&g->nknown, g->nknown + 1, __ATOMIC_RELEASE);
	return 0;
}

/* A frame from a peer: check who it is and remember where it is. */
static struct gw_peer *peer_heard(struct gw_gateway *g, const struct gw_hdr *h,
				  const struct gw_addr *src, bool hello)
{
	if (h->src_node == 0 || h->src_node >= GW_MAX_NODES || h->src_node == g->cfg->node_id ||
	    (!hello && h->dst_node != g->cfg->node_id)) {
		g->st.not_ours++;
		return NULL;
	}
	struct gw_peer *p = &g->peers[h->src_node];
	if (!p->allowed) {
		g->st.unknown_peer++;
		return NULL;
	}
	if (!p->lanes) {
		/* Lanes come with the first HELLO; until then DATA and ACKs
		 * are dropped, and retransmission brings them again. */
		if (!hello || peer_lanes(g, h->src_node, p) < 0)
			return NULL;
	}
	/* Workers read addr while they seal frames: rewrite it only when it
	 * really changes (a peer's new MAC or address), not on every HELLO. */
	if (hello && (memcmp(p->addr.mac, src->mac, 6) || p->addr.ip != src->ip ||
		      p->addr.port != g->self.port)) {
		memcpy(p->addr.mac, src->mac, 6);
		p->addr.ip = src->ip;
		p->addr.port = g->self.port;
	}
	p->last_heard_ns = g->now;
	return p;
}

uint32_t gw_gateway_caps(const struct gw_gateway *g)
{
	return (g->auth_on ? GW_CAP_AUTH : 0) | (g->cfg->batch_max != 1 ? GW_CAP_BATCHING : 0);
}

static void hello_send(struct gw_gateway *g)
{
	struct rte_mbuf *m = gw_frame_alloc(g, &g->st);
	if (!m)
		return;
	struct gw_hello hello = {
		.interval_ms = (uint16_t)g->cfg->hello_ms, .caps = gw_gateway_caps(g),
	};
	snprintf(hello.name, sizeof(hello.name), "%s", g->cfg->node_name);
	struct gw_hdr h = { .type = GW_FT_HELLO, .dst_node = 0xffff };
	h.len = (uint32_t)gw_wire_hello_put(rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN, &hello);
	struct gw_addr bc = { .mac = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, .ip = 0xffffffffu,
			      .port = g->self.port };
	gw_frame_send(g, &g->txq, &g->st, m, &bc, &h);
}

static void on_hello(struct gw_gateway *g, const struct gw_hdr *h, const uint8_t *pl,
		     const struct gw_addr *src)
{
	struct gw_hello hello;
	g->st.hello_frames++;
	if (gw_wire_hello_get(pl, h->len, &hello) < 0) {
		g->st.bad_frames++;
		return;
	}
	struct gw_peer *p = peer_heard(g, h, src, true);
	if (!p)
		return;
	if (p->epoch != h->epoch && p->epoch)
		GW_LOG(NOTICE, "peer %u (%s) restarted", h->src_node, hello.name);
	p->epoch = h->epoch;
	p->caps = hello.caps;
	snprintf(p->name, sizeof(p->name), "%s", hello.name);
	peer_set_up(g, h->src_node, p, true);
}

static void peers_tick(struct gw_gateway *g)
{
	if (g->now - g->last_hello_ns >= g->cfg->hello_ms * 1000000ull) {
		g->last_hello_ns = g->now;
		hello_send(g);
		gw_ctl_sample(g);
		gw_port_watch(&g->port);
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
 * Owe the sender of r, on node, a REJECT. Local senders are told at once;
 * for a peer the REJECT goes to a worker to travel on its lane. -EBUSY when
 * that cannot happen yet: the caller holds the record and tries again, so
 * no REJECT is dropped.
 */
static int reject_queue(struct gw_gateway *g, uint16_t node, const struct gw_rec *r, int err);

/*
 * A full destination ring holds its lane (and so the sender's window) for at
 * most dest_block_ms from the moment it filled. After that the channel is
 * stopped: what is for it is rejected at once, without holding anything,
 * until its reader has drained it to half. A reader that takes a message
 * now and then cannot keep the lane at its pace, and one that stopped
 * delays the other destinations once, by at most that bound.
 */
static bool dest_hold(struct gw_gateway *g, struct gw_chan *c)
{
	if (c->rejecting)
		return false;
	if (!c->full_since_ns)
		c->full_since_ns = g->now;
	if (g->now - c->full_since_ns < g->cfg->dest_block_ms * 1000000ull)
		return true;
	c->rejecting = true;
	return false;
}

/* Is c taking deliveries? A stopped channel resumes once read down to half. */
static bool dest_open(struct gw_chan *c)
{
	if (!c->full_since_ns)
		return true;
	if (!gw_chan_rx_below_half(c))
		return !c->rejecting;
	c->full_since_ns = 0;
	c->rejecting = false;
	return true;
}

/* A REJECT for one of our clients (of a message for node): into the client's ring. */
static int deliver_reject(struct gw_gateway *g, uint16_t node, uint16_t chan_id, uint32_t ep,
			  uint32_t msg_id, int err, struct gw_chan **dst)
{
	struct gw_chan *c = gw_ctl_chan(g, chan_id);
	if (!c) {
		g->st.rejects_lost++; /* the sender has left */
		return 0;
	}
	*dst = c;
	if (!dest_open(c))
		return -ENOBUFS;
	struct gw_chan_reject rj = { .err = err, .msg_id = msg_id, .node = node };
	struct gw_chan_desc d = {
		.len = sizeof(rj), .node = node, .ep = ep, .chan = chan_id, .kind = GW_RK_REJECT,
	};
	return gw_chan_deliver(c, &d, &rj);
}

static int reject_queue(struct gw_gateway *g, uint16_t node, const struct gw_rec *r, int err)
{
	if (node == g->cfg->node_id) {
		struct gw_chan *c = NULL;
		if (deliver_reject(g, node, r->src_chan, r->dst_ep, r->msg_id, err, &c) == 0) {
			if (c) {
				gw_chan_publish(c);
				g->st.rejects_sent++;
			}
		} else if (dest_hold(g, c)) {
			return -EBUSY;
		} else {
			g->st.rejects_lost++; /* the sender stopped reading */
		}
		return 0;
	}
	struct gw_reject rj = {
		.node = node, .target = g->cfg->node_id, .src_chan = r->src_chan, .dst_ep = r->dst_ep,
		.msg_id = r->msg_id, .err = err,
	};
	struct gw_worker *w = &g->workers[r->src_chan % g->nlanes];
	return rte_ring_sp_enqueue_elem(w->rejq, &rj, sizeof(rj)) == 0 ? 0 : -EBUSY;
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
		/* Made by the sender's own gateway (node down, no room), a REJECT
		 * names the node; from a peer, it is the peer. */
		return deliver_reject(g, rj.node ? rj.node : src, r->src_chan, r->dst_ep, r->msg_id,
				      rj.err, dst);
	}
	struct gw_ep *e = gw_ctl_ep_find(g, r->dst_ep);
	struct gw_chan *c = e ? gw_ctl_chan(g, e->chan_id) : NULL;
	if (!c) {
		int rc = reject_queue(g, src, r, -ENOENT);
		g->st.reject_unknown_ep += rc == 0;
		return rc;
	}
	*dst = c;
	if (!dest_open(c))
		return -ENOBUFS;
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

/*
 * Deliver the records of frame m from node src, from *cursor on (a byte
 * offset into its payload). Returns true when the frame is done with, false
 * when a destination holds it (*cursor says where to go on).
 */
static bool deliver_frame(struct gw_gateway *g, uint16_t src, struct rte_mbuf *m,
			  uint32_t *cursor, bool *work)
{
	const uint8_t *pl = rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN;
	size_t len = m->pkt_len - GW_FRAME_MIN, off = *cursor;
	struct gw_chan *last = NULL;
	struct gw_rec r;
	int more;
	bool done = true;
	while ((more = gw_wire_rec_next(pl, len, &off, &r)) == 1) {
		struct gw_chan *c = NULL;
		int rc = deliver_rec(g, src, &r, &c);
		if (rc == -EBUSY) {
			done = false;
			break;
		}
		if (rc == -ENOBUFS) {
			if (dest_hold(g, c)) {
				done = false;
				break;
			}
			if (r.kind != GW_RK_MSG) {
				g->st.rejects_lost++; /* a REJECT its sender cannot take */
			} else if (reject_queue(g, src, &r, -ENOBUFS) < 0) {
				done = false;
				break;
			} else {
				g->st.reject_dest_full++;
			}
		} else if (c) {
			if (c != last) {
				if (last)
					gw_chan_publish(last);
				last = c;
			}
		}
		*cursor = (uint32_t)off;
		*work = true;
	}
	if (more < 0)
		g->st.bad_frames++; /* CRC-valid but malformed: skip the rest */
	if (last)
		gw_chan_publish(last);
	return done;
}

static bool deliver_lanes(struct gw_gateway *g)
{
	bool work = false;
	for (unsigned k = 0; k < g->nknown; k++) {
		uint16_t node = g->known[k];
		struct gw_peer *p = &g->peers[node];
		for (unsigned l = 0; l < GW_LANES_MAX; l++) {
			struct gw_lane_rx *rx = &p->rx[l];
			struct rte_mbuf *m;
			while ((m = gw_lane_rx_head(rx)) && deliver_frame(g, node, m, &rx->cursor, &work)) {
				rx->msgs += gw_wire_nrec(rte_pktmbuf_mtod(m, uint8_t *));
				gw_lane_rx_pop(rx);
			}
			if (rx->ack_due) {
				struct rte_mbuf *a = gw_frame_alloc(g, &g->st);
				if (!a)
					continue;
				struct gw_ack ack;
				gw_lane_rx_ack(rx, &ack);
				struct gw_hdr h = { .type = GW_FT_ACK, .dst_node = node, .lane = (uint16_t)l };
				h.len = (uint32_t)gw_wire_ack_put(rte_pktmbuf_mtod(a, uint8_t *) + GW_FRAME_MIN,
								 &ack);
				gw_frame_send(g, &g->txq, &g->st, a, &p->addr, &h);
			}
		}
	}
	return work;
}

/* Frames the workers built for this node itself. */
static bool deliver_loopback(struct gw_gateway *g)
{
	bool work = false;
	/* Bounded, so busy workers cannot keep the port and peers unserved. */
	for (unsigned k = 0; k < GW_LOOP_BURST; k++) {
		if (!g->loop_head) {
			if (rte_ring_sc_dequeue(g->loopback, (void **)&g->loop_head))
				return work;
			g->loop_cursor = 0;
		}
		if (!deliver_frame(g, g->cfg->node_id, g->loop_head, &g->loop_cursor, &work))
			return work;
		rte_pktmbuf_free(g->loop_head);
		g->loop_head = NULL;
	}
	return work;
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
	if (rc == 0 && h.lane >= GW_LANES_MAX)
		rc = GW_EWIRE_VERSION; /* more lanes than any gateway has */
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
	struct gw_peer *p = peer_heard(g, &h, &src, false);
	if (!p) {
		rte_pktmbuf_free(m);
		return;
	}
	if (h.type == GW_FT_ACK) {
		struct gw_ack_msg a = { .node = h.src_node };
		g->st.ack_frames++;
		if (h.lane >= g->nlanes || gw_wire_ack_get(pl, h.len, &a.ack) < 0)
			g->st.bad_frames++;
		else if (rte_ring_sp_enqueue_elem(g->workers[h.lane].inbox, &a, sizeof(a)) != 0)
			g->st.tx_stalls++; /* a later ACK says the same and more */
		rte_pktmbuf_free(m);
		return;
	}
	g->st.data_frames++;
	m->pkt_len = m->data_len = (uint16_t)(GW_FRAME_MIN + h.len); /* drop link padding */
	switch (gw_lane_rx_accept(&p->rx[h.lane], &h, m)) {
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

/* Is m a gridwire frame (IPv4, UDP to our port)? Only those get faults:
 * the bond's LACP frames are left alone. */
static bool is_gridwire(const struct gw_gateway *g, const struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	return m->data_len >= GW_FRAME_MIN && p[12] == 0x08 && p[13] == 0x00 && p[23] == 17 &&
	       (uint16_t)(p[36] << 8 | p[37]) == g->self.port;
}

/* A received frame, as it came off the link: its tag checked when [auth]
 * is on (and taken off), then on to on_frame. */
static void rx_frame(struct gw_gateway *g, struct rte_mbuf *m)
{
	if (g->auth_on && is_gridwire(g, m)) {
		int n = gw_auth_open(&g->auth_rx, rte_pktmbuf_mtod(m, uint8_t *), m->data_len);
		if (n < 0) {
			if (n == -EALREADY)
				g->st.auth_replayed++;
			else
				g->st.auth_forged++;
			g->st.rx_frames++;
			rte_pktmbuf_free(m);
			return;
		}
		m->data_len = (uint16_t)n;
		m->pkt_len = (uint32_t)n;
	}
	on_frame(g, m);
}

/*
 * The [fault] stage: what a lossy, reordering, duplicating link would do,
 * and corruption that only the CRC can catch (a bit flipped in the
 * gridwire header's sequence, epoch, node and lane fields or the payload).
 */
static void rx_faulty(struct gw_gateway *g, struct rte_mbuf *m)
{
	struct rte_mbuf *copy;
	uint8_t mask;
	size_t at;
	if (!is_gridwire(g, m)) {
		rx_frame(g, m);
		return;
	}
	switch (gw_fault_decide(&g->fault)) {
	case GW_FAULT_PASS:
		break;
	case GW_FAULT_DROP:
		rte_pktmbuf_free(m);
		return;
	case GW_FAULT_DUP:
		copy = rte_pktmbuf_copy(m, g->port.pool, 0, UINT32_MAX);
		if (copy)
			rx_frame(g, copy);
		break;
	case GW_FAULT_CORRUPT:
		/* Skip magic, version, type (bytes 0-3) and len (24-27): the
		 * structural checks catch those before the CRC is looked at. */
		at = gw_fault_corrupt_at(&g->fault, m->data_len - GW_OUTER_HLEN - 8, &mask);
		at += GW_OUTER_HLEN + (at < 20 ? 4 : 8);
		rte_pktmbuf_mtod(m, uint8_t *)[at] ^= mask;
		break;
	case GW_FAULT_DELAY:
		gw_fault_hold(&g->fault, m, g->now);
		return;
	}
	rx_frame(g, m);
}

/* --- the operator's port requests --- */

/*
 * The change to wait out (a member out of the bond) is ordered before the
 * passes read by a full fence, as a worker's next pass is after its
 * increment; a pass begun after the one seen has then seen the change.
 */
void gw_gateway_quiesce(void *gateway)
{
	struct gw_gateway *g = gateway;
	uint64_t seen[GW_LANES_MAX];
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < g->cfg->workers; i++)
		seen[i] = __atomic_load_n(&g->workers[i].passes, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < g->cfg->workers; i++)
		while (__atomic_load_n(&g->workers[i].passes, __ATOMIC_SEQ_CST) < seen[i] + 2)
			rte_delay_us_sleep(10);
}

/* A member taken down or brought back (telemetry /gridwire/member). */
static void port_req_poll(struct gw_gateway *g)
{
	struct gw_port_req *r = &g->port_req;
	uint64_t asked = __atomic_load_n(&r->asked, __ATOMIC_ACQUIRE);
	uint32_t seq = (uint32_t)(asked >> 32);
	if (seq == r->done)
		return;
	r->why[0] = '\0';
	r->rc = gw_port_member_set(&g->port, (unsigned)(asked & 0xffffffffu) >> 1, asked & 1,
				   gw_gateway_quiesce, g, r->why, sizeof(r->why));
	__atomic_store_n(&r->done, seq, __ATOMIC_RELEASE);
}

/* --- the main loop --- */

static bool main_step(struct gw_gateway *g)
{
	struct rte_mbuf *rx[GW_RX_BURST];
	bool work = false;
	g->now = gw_clock_ns();
	for (uint16_t q = 0; q < g->port.nqueues; q++) {
		uint16_t n = rte_eth_rx_burst(g->port.port_id, q, rx, GW_RX_BURST);
		for (uint16_t i = 0; i < n; i++) {
			if (g->fault_on)
				rx_faulty(g, rx[i]);
			else
				rx_frame(g, rx[i]);
		}
		work |= n > 0;
	}
	for (struct rte_mbuf *m; g->fault_on && (m = gw_fault_release(&g->fault, g->now));)
		rx_frame(g, m);
	work |= deliver_lanes(g);
	work |= deliver_loopback(g);
	peers_tick(g);
	if (g->now - g->last_ctl_ns >= GW_CTL_POLL_NS) {
		g->last_ctl_ns = g->now;
		gw_ctl_poll(g);
		port_req_poll(g);
	}
	if (!g->cfg->workers)
		work |= gw_worker_step(&g->workers[0]);
	gw_txq_flush(&g->txq, g->now, &g->st);
	return work;
}

/* Spin, then yield, then sleep for growing spans up to sleep_max_us. */
void gw_idle(const struct gw_config *c, unsigned *idle_polls)
{
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

int gw_gateway_init(struct gw_gateway *g, const struct gw_config *cfg, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->port_req.lock, NULL);
	g->cfg = cfg;
	g->listen_fd = g->epfd = -1;
	g->epoch = (uint32_t)rte_rand() | 1;
	g->payload_max = gw_config_frame_payload(cfg);
	g->nlanes = cfg->workers ? cfg->workers : 1;
	if (cfg->workers && rte_lcore_count() < cfg->workers + 1) {
		snprintf(err, errlen, "[lcores] workers = %u needs %u lcores, EAL has %u: list them in [eal] args (-l)",
			 cfg->workers, cfg->workers + 1, rte_lcore_count());
		return -EINVAL;
	}
	g->peers = rte_zmalloc("gw_peers", sizeof(*g->peers) * GW_MAX_NODES, 64);
	g->clients = rte_zmalloc("gw_clients", sizeof(*g->clients) * cfg->clients_max, 64);
	g->workers = rte_zmalloc("gw_workers", sizeof(*g->workers) * g->nlanes, 64);
	g->loopback = rte_ring_create("gw_loopback", 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!g->peers || !g->clients || !g->workers || !g->loopback) {
		snprintf(err, errlen, "out of memory: give EAL more (-m in [eal] args)");
		return -ENOMEM;
	}
	for (unsigned n = 1; n < GW_MAX_NODES; n++)
		g->peers[n].allowed = cfg->npeers == 0;
	for (unsigned i = 0; i < cfg->npeers; i++)
		g->peers[cfg->peers[i]].allowed = true;
	g->peers[cfg->node_id].allowed = false;
	struct gw_fault_conf fc = {
		.drop_ppm = cfg->fault_drop_ppm, .dup_ppm = cfg->fault_dup_ppm,
		.corrupt_ppm = cfg->fault_corrupt_ppm, .reorder_ppm = cfg->fault_reorder_ppm,
		.delay_us = cfg->fault_delay_us, .seed = cfg->fault_seed,
	};
	gw_fault_init(&g->fault, &fc);
	g->fault_on = gw_fault_enabled(&fc);
	if (g->fault_on)
		GW_LOG(WARNING, "fault injection on: drop %u dup %u corrupt %u reorder %u ppm, seed %u",
		       fc.drop_ppm, fc.dup_ppm, fc.corrupt_ppm, fc.reorder_ppm, cfg->fault_seed);

	/* Queue 0 is the main lcore's; each worker lcore has one more. */
	int rc;
	if (cfg->auth_key_file[0]) {
		char why[256];
		if ((rc = gw_auth_key_load(&g->auth_key, cfg->auth_key_file, why, sizeof(why))) < 0) {
			snprintf(err, errlen, "[auth] key_file: %s", why);
			return rc;
		}
		if ((rc = gw_auth_rx_init(&g->auth_rx, &g->auth_key)) < 0) {
			snprintf(err, errlen, "[auth]: %s", strerror(-rc));
			return rc;
		}
		g->auth_on = true;
	}
	rc = gw_port_open(&g->port, cfg, (uint16_t)(cfg->workers + 1), err, errlen);
	if (rc < 0)
		return rc;
	memcpy(g->self.mac, g->port.mac.addr_bytes, 6);
	g->self.ip = cfg->ip;
	g->self.port = cfg->udp_port;
	g->txq.port = g->port.port_id;
	/* Counters start at the wall clock: a restarted gateway never
	 * reuses a nonce, and its peers' replay windows move on. */
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	uint64_t start = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	gw_auth_tx_init(&g->txq.auth, &g->auth_key, 0, start);
	for (unsigned i = 0; i < g->nlanes; i++) {
		if ((rc = gw_worker_init(&g->workers[i], g, (uint16_t)i)) < 0) {
			snprintf(err, errlen, "worker %u: %s", i, strerror(-rc));
			return rc;
		}
		gw_auth_tx_init(&g->workers[i].txq.auth, &g->auth_key, (uint8_t)(i + 1), start);
	}
	rc = gw_ctl_open(g, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = gw_stats_register(g)) < 0)
		GW_LOG(WARNING, "telemetry commands not registered: %s", strerror(-rc));
	prctl(PR_SET_TIMERSLACK, 1000UL); /* make short sleeps short */
	unsigned lcore = rte_get_next_lcore(-1, 1, 0);
	for (unsigned i = 0; i < cfg->workers; i++, lcore = rte_get_next_lcore(lcore, 1, 0)) {
		g->workers[i].lcore = lcore;
		if ((rc = rte_eal_remote_launch(gw_worker_main, &g->workers[i], lcore)) < 0) {
			snprintf(err, errlen, "cannot start worker %u on lcore %u: %s", i, lcore,
				 rte_strerror(-rc));
			__atomic_store_n(&g->stop_workers, true, __ATOMIC_RELEASE);
			rte_eal_mp_wait_lcore();
			return rc;
		}
	}
	char members[GW_CONFIG_MAX_MEMBERS * (GW_MEMBER_MAX + 2)] = "";
	for (unsigned i = 0, n = 0; i < cfg->nmembers; i++)
		n += (unsigned)snprintf(members + n, sizeof(members) - n, "%s%s", i ? ", " : "",
					cfg->members[i]);
	char mode[16] = "";
	if (g->port.bonded)
		snprintf(mode, sizeof(mode), "bond mode %u ", cfg->bond_mode);
	GW_LOG(NOTICE, "node %u (%s) epoch %08x listening on %s, port: %s(%s), mtu %u, %s, %s%s",
	       cfg->node_id, cfg->node_name, g->epoch, cfg->socket_path, mode, members, cfg->mtu,
	       cfg->batch_max == 1 ? "batching off" : "batching on",
	       cfg->workers ? "split lcores" : "one lcore", g->auth_on ? ", frames authenticated" : "");
	return 0;
}

/*
 * Work still owed at shutdown: frames not yet acknowledged, local frames
 * not yet delivered, REJECTs not yet sent, and workers that may still be
 * in a pass begun before they saw the drain.
 */
static uint64_t pending_work(const struct gw_gateway *g)
{
	uint64_t n = rte_ring_count(g->loopback) + (g->loop_head != NULL);
	for (unsigned i = 0; i < g->nlanes; i++) {
		const struct gw_worker *w = &g->workers[i];
		n += gw_worker_inflight(w) + rte_ring_count(w->rejq) + w->has_pending_rej +
		     !__atomic_load_n(&w->drain_seen, __ATOMIC_ACQUIRE);
	}
	return n;
}

void gw_gateway_run(struct gw_gateway *g, volatile bool *stop, unsigned flush_ms)
{
	unsigned idle_polls = 0;
	bool link = false;
	while (!*stop) {
		if (main_step(g))
			idle_polls = 0;
		else
			gw_idle(g->cfg, &idle_polls);
		if (!link && gw_port_link_up(&g->port)) {
			link = true;
			GW_LOG(NOTICE, "link up");
		}
	}
	/* Shutdown: take nothing new, let in-flight frames be acked. */
	__atomic_store_n(&g->draining, true, __ATOMIC_RELEASE);
	uint64_t end = gw_clock_ns() + flush_ms * 1000000ull;
	GW_LOG(NOTICE, "stopping: flushing %" PRIu64 " frames and messages in flight",
	       pending_work(g));
	while (pending_work(g) && gw_clock_ns() < end) {
		if (main_step(g))
			idle_polls = 0;
		else
			gw_idle(g->cfg, &idle_polls);
	}
	__atomic_store_n(&g->stop_workers, true, __ATOMIC_RELEASE);
	rte_eal_mp_wait_lcore();
	uint64_t left = pending_work(g), waiting = 0;
	for (unsigned i = 0; i < g->cfg->clients_max; i++) {
		const struct gw_chan *c = &g->clients[i].chan;
		if (g->clients[i].used && c->shm)
			waiting += gw_chan_backlog(c);
	}
	if (left || waiting)
		GW_LOG(WARNING, "stopped with %" PRIu64 " frames or REJECTs undelivered and %" PRIu64
		       " messages not taken from clients",
		       left, waiting);
	else
		GW_LOG(NOTICE, "stopped: everything sent was acknowledged");
}

/* Every counter by name, for the JSON line and for telemetry. */
#define GW_COUNTER(f) { #f, offsetof(struct gw_counters, f) }
const struct gw_counter_name gw_counter_names[] = {
	GW_COUNTER(rx_frames), GW_COUNTER(rx_bytes), GW_COUNTER(tx_frames), GW_COUNTER(tx_bytes),
	GW_COUNTER(data_frames), GW_COUNTER(ack_frames), GW_COUNTER(hello_frames),
	GW_COUNTER(msgs_out), GW_COUNTER(msgs_in), GW_COUNTER(msgs_local),
	GW_COUNTER(bad_frames), GW_COUNTER(bad_crc), GW_COUNTER(not_ours), GW_COUNTER(unknown_peer),
	GW_COUNTER(dup_frames), GW_COUNTER(beyond_window), GW_COUNTER(retrans),
	GW_COUNTER(rejects_sent), GW_COUNTER(rejects_lost), GW_COUNTER(reject_unknown_ep),
	GW_COUNTER(reject_dest_full), GW_COUNTER(nombuf), GW_COUNTER(tx_stalls),
	GW_COUNTER(clients_broken), GW_COUNTER(clients_refused), GW_COUNTER(auth_forged),
	GW_COUNTER(auth_replayed), GW_COUNTER(abandoned_frames), GW_COUNTER(reject_node_down),
	{ NULL, 0 },
};

void gw_gateway_totals(const struct gw_gateway *g, struct gw_counters *s, uint64_t *frames,
		       uint64_t *full_stops)
{
	*s = g->st;
	*frames = *full_stops = 0;
	for (unsigned i = 0; i < g->nlanes; i++) {
		const uint64_t *a = (const uint64_t *)&g->workers[i].st;
		uint64_t *t = (uint64_t *)s;
		for (size_t k = 0; k < sizeof(*s) / sizeof(uint64_t); k++)
			t[k] += a[k];
		*frames += g->workers[i].batch.frames;
		*full_stops += g->workers[i].batch.full_stops;
	}
}

void gw_gateway_stats_json(const struct gw_gateway *g, char *buf, size_t len)
{
	struct gw_counters s;
	uint64_t frames, full_stops;
	gw_gateway_totals(g, &s, &frames, &full_stops);
	size_t n = (size_t)snprintf(buf, len, "{\"node\":%u,\"lanes\":%u", g->cfg->node_id,
				    g->nlanes);
	for (const struct gw_counter_name *c = gw_counter_names; c->name && n < len; c++)
		n += (size_t)snprintf(buf + n, len - n, ",\"%s\":%" PRIu64, c->name,
				      *(const uint64_t *)((const char *)&s + c->off));
	static const char *const faults[] = { "", "fault_dropped", "fault_duplicated",
					      "fault_corrupted", "fault_delayed" };
	for (int v = GW_FAULT_DROP; v <= GW_FAULT_DELAY && n < len; v++)
		n += (size_t)snprintf(buf + n, len - n, ",\"%s\":%" PRIu64, faults[v],
				      g->fault.counts[v]);
	/* The members' packets as gw_port_watch last saw them. */
	for (unsigned i = 0; i < g->port.nmembers && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n,
				      "%s{\"member\":\"%s\",\"rx_packets\":%" PRIu64
				      ",\"tx_packets\":%" PRIu64 "}%s",
				      i ? "," : ",\"members\":[", g->port.members[i].spec,
				      g->port.members[i].rx_packets, g->port.members[i].tx_packets,
				      i + 1 == g->port.nmembers ? "]" : "");
	if (n < len)
		snprintf(buf + n, len - n,
			 ",\"data_frames_tx\":%" PRIu64 ",\"msgs_per_frame\":%.2f"
			 ",\"batch_full_stops\":%" PRIu64 "}",
			 frames, frames ? (double)(s.msgs_out + s.msgs_local) / (double)frames : 0.0,
			 full_stops);
}

void gw_gateway_fini(struct gw_gateway *g)
{
	gw_ctl_close(g);
	for (unsigned k = 0; k < g->nknown; k++)
		for (unsigned l = 0; l < GW_LANES_MAX; l++) {
			gw_lane_tx_fini(&g->peers[g->known[k]].tx[l]);
			gw_lane_rx_fini(&g->peers[g->known[k]].rx[l]);
		}
	if (g->workers)
		for (unsigned i = 0; i < g->nlanes; i++)
			gw_worker_fini(&g->workers[i]);
	for (unsigned i = 0; i < g->txq.n; i++)
		rte_pktmbuf_free(g->txq.m[i]);
	if (g->loop_head)
		rte_pktmbuf_free(g->loop_head);
	for (struct rte_mbuf *m; (m = gw_fault_drain(&g->fault));)
		rte_pktmbuf_free(m);
	if (g->loopback) {
		struct rte_mbuf *m;
		while (rte_ring_dequeue(g->loopback, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(g->loopback);
	}
	gw_port_close(&g->port);
	gw_auth_rx_fini(&g->auth_rx);
	rte_free(g->peers);
	rte_free(g->clients);
	rte_free(g->workers);
}
