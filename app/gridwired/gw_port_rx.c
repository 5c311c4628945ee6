/* SPDX-License-Identifier: BSD-3-Clause */
/* The port RX role: see gw_port_rx.h. */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>

#include "gw_port_rx.h"

/* Frames taken from a queue per pass. Small: a receiver delivers what it
 * takes before it polls again, so this bounds how long an urgent frame on
 * its own queue waits for bulk ones (8 jumbo frames, some 50 us of
 * delivery here; 32 cost 4x that, and bought no throughput measured). */
#define GW_RX_BURST 8
#define GW_AUTHQ 1024 /* verified frames handed over from one lcore; full: dropped, sent again */

int gw_port_rx_init(struct gw_port_rx *prx, const struct gw_node *node, struct gw_receiver *rv,
		    struct gw_peers *peers, struct gw_counters *st)
{
	const struct gw_config *cfg = node->cfg;
	memset(prx, 0, sizeof(*prx));
	prx->node = node;
	prx->rv = rv;
	prx->peers = peers;
	prx->st = st;
	struct gw_fault_conf fc = {
		.drop_ppm = cfg->fault_drop_ppm, .dup_ppm = cfg->fault_dup_ppm,
		.corrupt_ppm = cfg->fault_corrupt_ppm, .reorder_ppm = cfg->fault_reorder_ppm,
		.delay_us = cfg->fault_delay_us, .seed = cfg->fault_seed + rv->id,
	};
	gw_fault_init(&prx->fault, &fc);
	prx->fault_on = gw_fault_enabled(&fc);
	prx->fault_member = cfg->fault_member == GW_CONFIG_ALL_MEMBERS ? -1 : (int)cfg->fault_member;
	return node->auth ? gw_auth_rx_init(&prx->auth, node->auth, node->links->n) : 0;
}

struct rte_ring *gw_port_rx_add_auth_in(struct gw_port_rx *prx, unsigned from)
{
	return gw_node_add_ring(prx->auth_in, &prx->nauth_in, sizeof(struct gw_auth_handoff),
				GW_AUTHQ, "gw_auth%u_%u", from, prx->rv->id);
}

void gw_port_rx_fini(struct gw_port_rx *prx)
{
	for (struct rte_mbuf *m; (m = gw_fault_drain(&prx->fault));)
		rte_pktmbuf_free(m);
	for (unsigned i = 0; i < prx->nauth_in; i++) {
		struct gw_auth_handoff f;
		while (rte_ring_sc_dequeue_elem(prx->auth_in[i], &f, sizeof(f)) == 0)
			rte_pktmbuf_free(f.m);
		rte_ring_free(prx->auth_in[i]);
	}
	prx->nauth_in = 0;
	if (prx->node && prx->node->auth)
		gw_auth_rx_fini(&prx->auth);
}

/* A frame from a peer: is it one we take, and from whom? */
static struct gw_peer *peer_of(struct gw_port_rx *prx, const struct gw_hdr *h, bool hello)
{
	uint16_t self = prx->node->cfg->node_id;
	if (h->src_node == 0 || h->src_node >= GW_MAX_NODES || h->src_node == self ||
	    (!hello && h->dst_node != self)) {
		prx->st->not_ours++;
		return NULL;
	}
	struct gw_peer *p = &prx->peers->peer[h->src_node];
	if (!p->allowed) {
		prx->st->unknown_peer++;
		return NULL;
	}
	return p;
}

static void on_hello(struct gw_port_rx *prx, const struct gw_hdr *h, const uint8_t *pl,
		     const struct gw_addr *src)
{
	struct gw_hello hello;
	prx->st->hello_frames++;
	if (gw_wire_hello_get(pl, h->len, &hello) < 0) {
		prx->st->bad_frames++;
		return;
	}
	if (!peer_of(prx, h, true))
		return;
	struct gw_hello_msg msg = {
		.node = h->src_node, .epoch = h->epoch, .caps = hello.caps, .addr = *src,
		.nkeys = hello.nkeys,
	};
	memcpy(msg.keys, hello.keys, sizeof(msg.keys));
	snprintf(msg.name, sizeof(msg.name), "%s", hello.name);
	__atomic_store_n(&prx->rv->heard[h->src_node], prx->now, __ATOMIC_RELAXED);
	gw_peers_post_hello(&prx->hello, &msg);
}

/* A DATA frame: to its lane's owner, which is us if nobody else was first. */
static void on_data(struct gw_port_rx *prx, struct gw_peer *p, const struct gw_hdr *h,
		    struct rte_mbuf *m)
{
	uint8_t mine = (uint8_t)(prx->rv->id + 1);
	/* Read first: a locked compare and swap writes the line even when it
	 * fails, and every receiver reads it for every frame. */
	unsigned slot = gw_lane_slot(h->lane);
	uint8_t owner = __atomic_load_n(&p->rx_owner[slot], __ATOMIC_RELAXED);
	if (!owner && __atomic_compare_exchange_n(&p->rx_owner[slot], &owner, mine, false,
						  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		owner = mine;
	if (owner != mine) {
		struct gw_handoff f = { .m = m, .h = *h };
		if (rte_ring_sp_enqueue_elem(prx->handoff[owner - 1], &f, sizeof(f)) == 0) {
			prx->st->lane_handoffs++;
		} else {
			prx->st->handoffs_lost++; /* its sender will send it again */
			rte_pktmbuf_free(m);
		}
		return;
	}
	gw_receiver_accept(prx->rv, p, h, m);
}

/*
 * A parallel port's second copy of a DATA frame this receiver's lane
 * already has: dropped before its CRC, the costliest pass over it. Only
 * the lane's owner may look (its state is that lcore's); the header is
 * unverified, so it only ever leads to a drop of what the lane would drop.
 */
static bool redundant_copy(struct gw_port_rx *prx, const struct rte_mbuf *m)
{
	struct gw_hdr h;
	if (gw_wire_peek(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, prx->node->self.port,
			 &h) < 0 ||
	    h.type != GW_FT_DATA || h.src_node == 0 || h.src_node >= GW_MAX_NODES ||
	    !gw_lane_valid(h.lane))
		return false;
	unsigned slot = gw_lane_slot(h.lane);
	struct gw_peer *p = gw_peers_ready(prx->peers, h.src_node);
	if (!p || __atomic_load_n(&p->rx_owner[slot], __ATOMIC_RELAXED) != prx->rv->id + 1)
		return false;
	int member = gw_links_member(prx->node->links, m->port);
	return member >= 0 && gw_lane_rx_redundant(&p->rx[slot], h.epoch, h.seq, (unsigned)member);
}

/* authentic: its [auth] tag verified, which covers all the CRC does. */
static void on_frame(struct gw_port_rx *prx, struct rte_mbuf *m, bool authentic)
{
	struct gw_hdr h;
	const uint8_t *pl;
	struct gw_addr src;
	prx->st->rx_frames++;
	prx->st->rx_bytes += m->pkt_len;
	if (prx->node->links->n > 1 && m->nb_segs == 1 && redundant_copy(prx, m)) {
		prx->st->data_frames++;
		prx->st->redundant_frames++;
		rte_pktmbuf_free(m);
		return;
	}
	int rc = m->nb_segs != 1 ? GW_EWIRE_SHORT
		 : authentic	  ? gw_wire_parse_authentic(rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
							    prx->node->self.port, &h, &pl, &src)
				  : gw_wire_parse(rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
						  prx->node->self.port, &h, &pl, &src);
	if (rc == 0 && !gw_lane_valid(h.lane))
		rc = GW_EWIRE_VERSION; /* more lanes than any gateway has */
	if (rc < 0) {
		if (rc == GW_EWIRE_CRC)
			prx->st->bad_crc++;
		else if (rc == GW_EWIRE_NOTGW)
			prx->st->not_ours++; /* LACP, IPv6 noise, other traffic */
		else
			prx->st->bad_frames++;
		rte_pktmbuf_free(m);
		return;
	}
	if (h.type == GW_FT_HELLO) {
		on_hello(prx, &h, pl, &src);
		rte_pktmbuf_free(m);
		return;
	}
	struct gw_peer *p = peer_of(prx, &h, false);
	/* Lanes come with the first HELLO; until then DATA and ACKs are
	 * dropped, and retransmission brings them again. */
	if (!p || !gw_peers_ready(prx->peers, h.src_node)) {
		rte_pktmbuf_free(m);
		return;
	}
	__atomic_store_n(&prx->rv->heard[h.src_node], prx->now, __ATOMIC_RELAXED);
	if (h.type == GW_FT_ACK) {
		struct gw_ack ack;
		prx->st->ack_frames++;
		unsigned w = h.lane & ~GW_LANE_URGENT;
		if (w >= prx->nworkers || gw_wire_ack_get(pl, h.len, &ack) < 0)
			prx->st->bad_frames++;
		else if (gw_worker_post_ack(&prx->workers[w], h.src_node, h.lane, &ack, prx->now) < 0)
			prx->st->tx_stalls++; /* a later ACK says the same and more */
		rte_pktmbuf_free(m);
		return;
	}
	prx->st->data_frames++;
	m->pkt_len = m->data_len = (uint16_t)(GW_FRAME_MIN + h.len); /* drop link padding */
	on_data(prx, p, &h, m);
}

/* Is m a gridwire frame (IPv4, UDP to our port)? Only those get faults:
 * the bond's LACP frames are left alone. */
static bool is_gridwire(const struct gw_port_rx *prx, const struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	return m->data_len >= GW_FRAME_MIN && p[12] == 0x08 && p[13] == 0x00 && p[23] == 17 &&
	       (uint16_t)(p[36] << 8 | p[37]) == prx->node->self.port;
}

/* A verified frame of one of this receiver's slots: seen before? */
static void auth_accept(struct gw_port_rx *prx, struct rte_mbuf *m,
			const struct gw_auth_seen *seen)
{
	if (gw_auth_accept(&prx->auth, seen) < 0) {
		prx->st->auth_replayed++;
		prx->st->rx_frames++;
		rte_pktmbuf_free(m);
		return;
	}
	on_frame(prx, m, true);
}

/* A received frame, as it came off the link: its tag checked when [auth]
 * is on (and taken off), its counter by its slot's owner, then on to
 * on_frame. */
static void rx_frame(struct gw_port_rx *prx, struct rte_mbuf *m)
{
	if (!prx->node->auth || !is_gridwire(prx, m)) {
		on_frame(prx, m, false);
		return;
	}
	struct gw_auth_seen seen;
	int n = gw_auth_verify(&prx->auth, rte_pktmbuf_mtod(m, uint8_t *), m->data_len, &seen);
	if (n < 0) {
		struct gw_counters *st = prx->st;
		uint64_t *why = n == -ENOKEY	 ? &st->auth_unknown_key
				: n == -EMSGSIZE ? &st->auth_truncated
				: n == -EPROTO	 ? &st->auth_wrong_mode
				: n == -EBUSY	 ? &st->auth_throttled
						 : &st->auth_forged;
		(*why)++;
		st->rx_frames++;
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = (uint16_t)n;
	m->pkt_len = (uint32_t)n;
	if (prx->node->links->n > 1) { /* each member's own windows */
		int member = gw_links_member(prx->node->links, m->port);
		seen.member = (uint8_t)(member < 0 ? 0 : member);
	}
	struct rte_ring *owner = prx->auth_out[seen.slot % prx->nrecv];
	if (!owner) {
		auth_accept(prx, m, &seen);
		return;
	}
	struct gw_auth_handoff f = { .m = m, .seen = seen };
	if (rte_ring_sp_enqueue_elem(owner, &f, sizeof(f)) == 0) {
		prx->st->auth_handoffs++;
	} else {
		prx->st->handoffs_lost++;
		rte_pktmbuf_free(m);
	}
}

/*
 * One 802.1Q tag (TPID 0x8100: a peer's urgent frames with [qos] pcp_urgent, or a
 * switch's) comes off as a NIC's VLAN strip would take it: every parser
 * after this one sees the frame as sent untagged.
 */
static void untag(struct rte_mbuf *m)
{
	const struct rte_ether_hdr *e = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if (m->data_len >= sizeof(*e) + sizeof(struct rte_vlan_hdr) &&
	    e->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN))
		rte_vlan_strip(m);
}

/*
 * The [fault] stage: what a lossy, reordering, duplicating link would do,
 * and corruption that only the CRC can catch (a bit flipped in the
 * gridwire header's sequence, epoch, node and lane fields or the payload);
 * on every member's frames, or on one member's ([fault] member).
 */
static void rx_faulty(struct gw_port_rx *prx, struct rte_mbuf *m)
{
	struct rte_mbuf *copy;
	uint8_t mask;
	size_t at;
	int member = __atomic_load_n(&prx->fault_member, __ATOMIC_RELAXED);
	if (!is_gridwire(prx, m) ||
	    (member >= 0 && gw_links_member(prx->node->links, m->port) != member)) {
		rx_frame(prx, m);
		return;
	}
	switch (gw_fault_decide(&prx->fault)) {
	case GW_FAULT_PASS:
		break;
	case GW_FAULT_DROP:
		rte_pktmbuf_free(m);
		return;
	case GW_FAULT_DUP:
		copy = rte_pktmbuf_copy(m, prx->node->pool, 0, UINT32_MAX);
		if (copy)
			rx_frame(prx, copy);
		break;
	case GW_FAULT_CORRUPT:
		/* Skip magic, version, type (bytes 0-3) and len (24-27): the
		 * structural checks catch those before the CRC is looked at. */
		at = gw_fault_corrupt_at(&prx->fault, m->data_len - GW_OUTER_HLEN - 8, &mask);
		at += GW_OUTER_HLEN + (at < 20 ? 4 : 8);
		rte_pktmbuf_mtod(m, uint8_t *)[at] ^= mask;
		break;
	case GW_FAULT_DELAY:
		gw_fault_hold(&prx->fault, m, prx->now);
		return;
	}
	rx_frame(prx, m);
}

bool gw_port_rx_step(struct gw_port_rx *prx, uint64_t now)
{
	struct rte_mbuf *rx[GW_RX_BURST];
	bool work = false;
	prx->now = now;
	/* Frames handed over first and all of them: they are older than what
	 * the queues hold, and the replay window moves on without them. */
	for (unsigned i = 0; i < prx->nauth_in; i++) {
		struct gw_auth_handoff f[GW_RX_BURST];
		unsigned n;
		while ((n = rte_ring_sc_dequeue_burst_elem(prx->auth_in[i], f, sizeof(f[0]),
							   GW_RX_BURST, NULL)) > 0) {
			for (unsigned k = 0; k < n; k++)
				auth_accept(prx, f[k].m, &f[k].seen);
			work = true;
		}
	}
	const struct gw_links *l = prx->node->links;
	for (unsigned k = 0; k < l->n; k++) {
		if (!gw_links_live(l, k)) /* an unplugged member is closed */
			continue;
		for (unsigned q = 0; q < prx->nqueues; q++) {
			uint16_t n = rte_eth_rx_burst(l->port[k], prx->queues[q], rx, GW_RX_BURST);
			bool faults = __atomic_load_n(&prx->fault_on, __ATOMIC_ACQUIRE);
			for (uint16_t i = 0; i < n; i++) {
				if (i + 1 < n)
					gw_port_rx_prefetch(rx[i + 1]);
				untag(rx[i]);
				if (faults)
					rx_faulty(prx, rx[i]);
				else
					rx_frame(prx, rx[i]);
			}
			work |= n > 0;
		}
	}
	for (struct rte_mbuf *m; prx->fault_on && (m = gw_fault_release(&prx->fault, now));)
		rx_frame(prx, m);
	return work;
}

void gw_port_rx_set_drop(struct gw_port_rx *prx, int member, uint32_t drop_ppm)
{
	struct gw_fault_conf c = prx->fault.conf;
	c.drop_ppm = drop_ppm;
	__atomic_store_n(&prx->fault.conf.drop_ppm, drop_ppm, __ATOMIC_RELAXED);
	__atomic_store_n(&prx->fault_member, member, __ATOMIC_RELAXED);
	/* Once on, the stage stays on: frames it holds back must come out. */
	if (gw_fault_enabled(&c))
		__atomic_store_n(&prx->fault_on, true, __ATOMIC_RELEASE);
}
