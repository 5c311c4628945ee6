/* SPDX-License-Identifier: BSD-3-Clause */
/* Port TX: see gw_txq.h. */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>

#include "gw_txq.h"

#define GW_BOND_POLL_NS (10 * 1000 * 1000ull) /* bond mode 4 wants tx every <100 ms */

void gw_txq_init(struct gw_txq *q, const struct gw_node *node, const struct gw_links *links,
		 uint16_t queue, uint16_t queue_urgent, struct gw_counters *st,
		 uint64_t auth_start)
{
	memset(q, 0, sizeof(*q));
	q->node = node;
	q->links = links;
	q->queue[GW_CLASS_BULK] = queue;
	q->queue[GW_CLASS_URGENT] = queue_urgent;
	q->st = st;
	if (node->auth)
		gw_auth_tx_init(&q->auth, node->auth, (uint8_t)queue, auth_start);
}

/* The first n frames of f went out. */
static void count(struct gw_txq *q, const struct gw_txq_fifo *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		q->st->tx_frames++;
		q->st->tx_bytes += f->m[i]->pkt_len;
	}
}

/* The first n frames of f are no longer ours. */
static void drop_front(struct gw_txq_fifo *f, unsigned n)
{
	memmove(f->m, f->m + n, (f->n - n) * sizeof(f->m[0]));
	f->n -= n;
}

/* One link (the bond, a single member): the PMD takes the queue's reference. */
static void flush_one(struct gw_txq *q, unsigned cls)
{
	struct gw_txq_fifo *f = &q->f[cls];
	uint16_t n = rte_eth_tx_burst(q->links->port[0], q->queue[cls], f->m, (uint16_t)f->n);
	if (n < f->n)
		q->st->tx_stalls++;
	count(q, f, n);
	drop_front(f, n);
}

/* Every live link gets a reference to each frame; the queue drops its own
 * once all of them have the frame. Links in hold (a bit each) are sent
 * nothing now. */
static void flush_parallel(struct gw_txq *q, unsigned cls, unsigned hold)
{
	struct gw_txq_fifo *f = &q->f[cls];
	const struct gw_links *l = q->links;
	unsigned best = 0, live = 0; /* live: a bit per link, read once */
	for (unsigned k = 0; k < l->n; k++) {
		unsigned from = f->taken[k];
		if (!gw_links_live(l, k)) {
			f->taken[k] = (uint16_t)f->n; /* a dead link is owed nothing */
			continue;
		}
		live |= 1u << k;
		if (from < f->n && !(hold & 1u << k)) {
			for (unsigned i = from; i < f->n; i++)
				rte_mbuf_refcnt_update(f->m[i], 1);
			uint16_t t = rte_eth_tx_burst(l->port[k], q->queue[cls], f->m + from,
						      (uint16_t)(f->n - from));
			for (unsigned i = from + t; i < f->n; i++)
				rte_mbuf_refcnt_update(f->m[i], -1);
			f->taken[k] = (uint16_t)(from + t);
			if (f->taken[k] < f->n)
				q->st->tx_stalls++;
		}
		best = RTE_MAX(best, (unsigned)f->taken[k]);
	}
	unsigned done = f->n;
	for (unsigned k = 0; k < l->n; k++) {
		if ((live & 1u << k) && best - f->taken[k] >= GW_TXQ_MAX / 2) {
			q->st->tx_copies_dropped += best - f->taken[k];
			f->taken[k] = (uint16_t)best;
		}
		done = RTE_MIN(done, (unsigned)f->taken[k]);
	}
	if (live) {
		count(q, f, done);
	} else { /* nothing to send on: lanes send DATA again, ACKs and HELLOs repeat */
		q->st->tx_stalls++;
		done = f->n;
	}
	rte_pktmbuf_free_bulk(f->m, done);
	for (unsigned k = 0; k < l->n; k++)
		f->taken[k] = (uint16_t)(f->taken[k] - done);
	drop_front(f, done);
}

static void flush_class(struct gw_txq *q, unsigned cls, unsigned hold)
{
	if (q->links->n == 1)
		flush_one(q, cls);
	else
		flush_parallel(q, cls, hold);
}

void gw_txq_flush(struct gw_txq *q, uint64_t now)
{
	if (q->f[GW_CLASS_URGENT].n == 0 && q->f[GW_CLASS_BULK].n == 0 &&
	    now - q->last_tx_ns < GW_BOND_POLL_NS)
		return;
	q->last_tx_ns = now;
	/* Urgent first, and bulk only on a link that has taken every urgent
	 * frame: a slow member holds back its own bulk, never the others'. */
	const struct gw_txq_fifo *u = &q->f[GW_CLASS_URGENT];
	flush_class(q, GW_CLASS_URGENT, 0);
	if (q->links->n == 1) {
		if (!u->n)
			flush_one(q, GW_CLASS_BULK);
		return;
	}
	unsigned hold = 0;
	for (unsigned k = 0; k < q->links->n; k++)
		if (u->taken[k] < u->n)
			hold |= 1u << k;
	flush_parallel(q, GW_CLASS_BULK, hold);
}

void gw_txq_flush_urgent(struct gw_txq *q)
{
	if (q->f[GW_CLASS_URGENT].n)
		flush_class(q, GW_CLASS_URGENT, 0);
}

void gw_txq_put(struct gw_txq *q, struct rte_mbuf *m, unsigned cls)
{
	struct gw_txq_fifo *f = &q->f[cls];
	if (f->n == GW_TXQ_MAX)
		gw_txq_flush(q, q->last_tx_ns);
	if (f->n == GW_TXQ_MAX) {
		/* The NIC refuses everything. A DATA frame is still held by its
		 * lane and goes again; an ACK or HELLO is repeated anyway. */
		q->st->tx_stalls++;
		rte_pktmbuf_free(m);
		return;
	}
	f->m[f->n++] = m;
}

void gw_txq_fini(struct gw_txq *q)
{
	if (q->node && q->node->auth)
		gw_auth_tx_fini(&q->auth);
	for (unsigned c = 0; c < GW_CLASSES; c++) {
		struct gw_txq_fifo *f = &q->f[c];
		for (unsigned i = 0; i < f->n; i++)
			rte_pktmbuf_free(f->m[i]);
		f->n = 0;
	}
}

struct rte_mbuf *gw_txq_alloc(struct gw_txq *q)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(q->node->pool);
	if (!m)
		q->st->nombuf++;
	return m;
}

/*
 * The 802.1Q priority tag of an urgent frame ([qos] pcp_urgent; VLAN id 0,
 * the port's own VLAN), after the [auth] trailer, which does not cover the
 * Ethernet header. Written into the frame itself when nobody else holds it
 * (an ACK, an encrypted copy); a DATA frame that its lane keeps for
 * sending again goes as a tagged copy, each time it is sent: a copy of up
 * to a jumbo frame and one more mbuf in flight per urgent frame (urgent
 * traffic is the small part). Not the NIC's VLAN insert: the software one
 * of af_packet and virtio refuses a shared mbuf, and drops it.
 */
static struct rte_mbuf *tag_urgent(struct gw_txq *q, struct rte_mbuf *m)
{
	if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) > 1) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, q->node->pool, 0, UINT32_MAX);
		rte_pktmbuf_free(m);
		if (!c) {
			q->st->nombuf++;
			return NULL;
		}
		m = c;
	}
	m->vlan_tci = (uint16_t)(q->node->cfg->pcp_urgent << 13);
	if (rte_vlan_insert(&m) < 0) {
		/* No headroom: never with our pool's. Counted with the copies
		 * that found no mbuf; a DATA frame goes again, an ACK anyway. */
		q->st->nombuf++;
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

/*
 * Queue m (the reference given is the queue's) with its [auth] trailer:
 * added in place (or renewed, for a frame sent again; payload_max left it
 * room), or, in mode encrypt, in an mbuf of its own with the ciphertext.
 */
static void seal_put(struct gw_txq *q, struct rte_mbuf *m, unsigned cls, uint32_t gen)
{
	const struct gw_auth_keys *ks = q->node->auth;
	if (ks) {
		struct rte_mbuf *out = ks->mode == GW_AUTH_ENCRYPT ? gw_txq_alloc(q) : m;
		int n = !out ? -ENOMEM
			     : gw_auth_seal(&q->auth, rte_pktmbuf_mtod(out, uint8_t *),
					    rte_pktmbuf_mtod(m, const uint8_t *), m->data_len,
					    rte_pktmbuf_tailroom(out) + out->data_len, gen);
		if (out != m)
			rte_pktmbuf_free(m);
		if (n < 0) { /* no mbuf, or no key: a lane sends it again */
			q->st->auth_unsealed++;
			if (out)
				rte_pktmbuf_free(out);
			return;
		}
		m = out;
		m->data_len = (uint16_t)n;
		m->pkt_len = (uint32_t)n;
	}
	if (cls == GW_CLASS_URGENT && q->node->cfg->pcp_urgent != GW_CONFIG_PCP_OFF &&
	    !(m = tag_urgent(q, m)))
		return;
	gw_txq_put(q, m, cls);
}

void gw_txq_send(struct gw_txq *q, struct rte_mbuf *m, const struct gw_addr *dst,
		 struct gw_hdr *h, uint32_t auth_gen)
{
	const struct gw_node *node = q->node;
	h->src_node = node->cfg->node_id;
	h->epoch = node->epoch;
	struct gw_addr src = node->self;
	/* One UDP flow per lane: bond l34 hashing and RSS spread the lanes. */
	src.port = (uint16_t)(node->self.port + gw_lane_slot(h->lane));
	size_t len = gw_wire_seal(rte_pktmbuf_mtod(m, uint8_t *), &src, dst, h);
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	unsigned cls = h->type != GW_FT_HELLO && (h->lane & GW_LANE_URGENT) ? GW_CLASS_URGENT
									    : GW_CLASS_BULK;
	uint8_t dscp = (uint8_t)(cls == GW_CLASS_URGENT ? node->cfg->dscp_urgent : node->cfg->dscp_bulk);
	if (dscp)
		gw_wire_set_dscp(rte_pktmbuf_mtod(m, uint8_t *), dscp);
	seal_put(q, m, cls, auth_gen);
}

void gw_txq_resend(struct gw_txq *q, struct rte_mbuf *m, unsigned cls)
{
	rte_mbuf_refcnt_update(m, 1);
	seal_put(q, m, cls, 0);
}
