/* SPDX-License-Identifier: BSD-3-Clause */
/* The peers role: see gw_peers.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "gw_peers.h"

#define GW_HELLOQ 256 /* hellos from one receiver; a full ring drops, hellos repeat */

static void release_mbuf(void *frame, void *ctx)
{
	rte_pktmbuf_free(frame);
}

int gw_peers_init(struct gw_peers *ps, const struct gw_node *node, struct gw_counters *st)
{
	const struct gw_config *c = node->cfg;
	memset(ps, 0, sizeof(*ps));
	ps->node = node;
	ps->st = st;
	ps->peer = rte_zmalloc("gw_peers", sizeof(*ps->peer) * GW_MAX_NODES, 64);
	if (!ps->peer)
		return -ENOMEM;
	for (unsigned n = 1; n < GW_MAX_NODES; n++)
		ps->peer[n].allowed = c->npeers == 0;
	for (unsigned i = 0; i < c->npeers; i++)
		ps->peer[c->peers[i]].allowed = true;
	ps->peer[c->node_id].allowed = false;
	return 0;
}

struct rte_ring *gw_peers_add_ring(struct gw_peers *ps, unsigned receiver)
{
	return gw_node_add_ring(ps->hellos, &ps->nrings, sizeof(struct gw_hello_msg), GW_HELLOQ,
				"gw_hello%u", receiver);
}

void gw_peers_fini(struct gw_peers *ps)
{
	unsigned known = ps->nknown;
	for (unsigned k = 0; ps->peer && k < known; k++)
		for (unsigned l = 0; l < GW_LANE_SLOTS; l++) {
			gw_lane_tx_fini(&ps->peer[ps->known[k]].tx[l]);
			gw_lane_rx_fini(&ps->peer[ps->known[k]].rx[l]);
		}
	for (unsigned i = 0; i < ps->nrings; i++)
		rte_ring_free(ps->hellos[i]);
	rte_free(ps->peer);
	ps->peer = NULL;
}

uint32_t gw_peers_caps(const struct gw_node *node)
{
	return (node->auth ? GW_CAP_AUTH : 0) | (node->cfg->batch_max != 1 ? GW_CAP_BATCHING : 0) |
	       GW_CAP_URGENT | GW_CAP_TOPICS |
	       (node->cfg->cc_control != GW_CONFIG_CC_OFF ? GW_CAP_GRANT : 0);
}

static void set_up(struct gw_peers *ps, uint16_t node, struct gw_peer *p, bool up)
{
	if (p->up == up)
		return;
	if (up)
		__atomic_store_n(&p->session, p->session + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&p->up, up, __ATOMIC_RELEASE);
	GW_LOG(NOTICE, "peer %u (%s) is %s", node, p->name, up ? "up" : "down");
	if (ps->on_change)
		ps->on_change(ps->ctx, node, up);
}

/* Lane state for every lane, before any other lcore may see the peer. */
static int alloc_lanes(struct gw_peers *ps, uint16_t node, struct gw_peer *p)
{
	const struct gw_config *c = ps->node->cfg;
	struct gw_cc_params cc;
	gw_cc_params_default(&cc, GW_FRAME_MIN + ps->node->payload_max);
	cc.on = c->cc_control != GW_CONFIG_CC_OFF;
	cc.target_ns = c->cc_target_us * 1000ull;
	cc.fs_range_ns = 4 * cc.target_ns;
	cc.cwnd_max = c->window * cc.mss;
	for (unsigned i = 0; i < GW_LANE_SLOTS; i++) {
		if (gw_lane_tx_init(&p->tx[i], c->window, ps->node->epoch, c->rto_min_us * 1000ull,
				    c->rto_max_us * 1000ull, release_mbuf, NULL) < 0 ||
		    gw_lane_rx_init(&p->rx[i], c->window, release_mbuf, NULL) < 0 ||
		    (c->port_kind == GW_PORT_PARALLEL && gw_lane_rx_track_copies(&p->rx[i]) < 0)) {
			for (unsigned k = 0; k <= i; k++) {
				gw_lane_tx_fini(&p->tx[k]);
				gw_lane_rx_fini(&p->rx[k]);
			}
			return -ENOMEM;
		}
		gw_lane_tx_set_cc(&p->tx[i], &cc);
	}
	__atomic_store_n(&p->lanes, true, __ATOMIC_RELEASE);
	ps->known[ps->nknown] = node;
	__atomic_store_n(&ps->nknown, ps->nknown + 1, __ATOMIC_RELEASE);
	return 0;
}

static void on_hello(struct gw_peers *ps, const struct gw_hello_msg *h)
{
	struct gw_peer *p = &ps->peer[h->node];
	/* Lanes come with the first HELLO; until then DATA and ACKs are
	 * dropped, and retransmission brings them again. */
	if (!p->lanes && alloc_lanes(ps, h->node, p) < 0)
		return;
	/* Workers read addr while they seal frames: rewrite it only when it
	 * really changes (a peer's new MAC or address), not on every HELLO. */
	if (memcmp(p->addr.mac, h->addr.mac, 6) || p->addr.ip != h->addr.ip ||
	    p->addr.port != ps->node->self.port) {
		memcpy(p->addr.mac, h->addr.mac, 6);
		p->addr.ip = h->addr.ip;
		p->addr.port = ps->node->self.port;
	}
	/* Written only when they change: other lcores read this line. */
	if (p->epoch != h->epoch) {
		if (p->epoch) {
			GW_LOG(NOTICE, "peer %u (%s) restarted", h->node, h->name);
			if (ps->on_restart)
				ps->on_restart(ps->ctx, h->node);
		}
		p->epoch = h->epoch;
		__atomic_store_n(&p->session, p->session + 1, __ATOMIC_RELEASE);
	}
	if (ps->node->auth)
		gw_auth_keys_peer_hello(ps->node->auth, h->node, h->epoch, h->keys, h->nkeys);
	if (p->caps != h->caps) /* before up is published: a worker reads it then */
		__atomic_store_n(&p->caps, h->caps, __ATOMIC_RELAXED);
	if (strncmp(p->name, h->name, sizeof(p->name)))
		snprintf(p->name, sizeof(p->name), "%s", h->name);
	set_up(ps, h->node, p, true);
}

void gw_peers_post_hello(struct gw_peers_proxy *px, const struct gw_hello_msg *h)
{
	if (px->direct)
		on_hello(px->direct, h);
	else if (rte_ring_sp_enqueue_elem(px->ring, (void *)h, sizeof(*h)) != 0)
		px->st->handoffs_lost++; /* the next one says the same */
}

/* A HELLO under each [auth] key held (one, but two during an overlap): a
 * peer that holds only one of them still hears us. */
static void hello_send(struct gw_peers *ps, struct gw_txq *q)
{
	const struct gw_node *node = ps->node;
	struct gw_hello hello = {
		.interval_ms = (uint16_t)node->cfg->hello_ms, .caps = gw_peers_caps(node),
	};
	snprintf(hello.name, sizeof(hello.name), "%s", node->cfg->node_name);
	uint32_t gens[GW_AUTH_HELD] = { 0 };
	unsigned ngens = 1;
	if (node->auth) {
		hello.nkeys = (uint8_t)gw_auth_keys_held(node->auth, hello.keys);
		ngens = gw_auth_keys_gens(node->auth, gens);
	}
	struct gw_addr bc = { .mac = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, .ip = 0xffffffffu,
			      .port = node->self.port };
	for (unsigned i = 0; i < ngens; i++) {
		struct rte_mbuf *m = gw_txq_alloc(q);
		if (!m)
			return;
		struct gw_hdr h = { .type = GW_FT_HELLO, .dst_node = GW_AUTH_BROADCAST };
		h.len = (uint32_t)gw_wire_hello_put(rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN,
						    &hello);
		gw_txq_send(q, m, &bc, &h, gens[i]);
	}
}

uint64_t gw_peers_heard(const struct gw_peers *ps, uint16_t node)
{
	uint64_t t = 0;
	for (unsigned r = 0; r < ps->nheard; r++) {
		uint64_t v = __atomic_load_n(&ps->heard[r][node], __ATOMIC_RELAXED);
		t = v > t ? v : t;
	}
	return t;
}

void gw_peers_poll(struct gw_peers *ps, struct gw_txq *q, uint64_t now)
{
	struct gw_hello_msg h;
	for (unsigned i = 0; i < ps->nrings; i++)
		while (rte_ring_sc_dequeue_elem(ps->hellos[i], &h, sizeof(h)) == 0)
			on_hello(ps, &h);
	if (now - ps->last_hello_ns >= ps->node->cfg->hello_ms * 1000000ull) {
		ps->last_hello_ns = now;
		hello_send(ps, q);
	}
	/* Signed: a receiver's clock read may be a little ahead of ours. */
	int64_t timeout = (int64_t)ps->node->cfg->peer_timeout_ms * 1000000;
	for (unsigned k = 0; k < ps->nknown; k++) {
		struct gw_peer *p = &ps->peer[ps->known[k]];
		if (p->up && (int64_t)(now - gw_peers_heard(ps, ps->known[k])) > timeout)
			set_up(ps, ps->known[k], p, false);
	}
}
