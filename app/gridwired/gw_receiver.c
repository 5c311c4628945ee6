/* SPDX-License-Identifier: BSD-3-Clause */
/* The receiver role: see gw_receiver.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_receiver.h"

#define GW_LOOP_BURST 64 /* loopback frames per step, so the lanes get their turn */
#define GW_HANDOFFQ 1024 /* frames handed over from one lcore; full: dropped, sent again */

void gw_receiver_init(struct gw_receiver *rv, uint8_t id, const struct gw_node *node,
		      struct gw_peers *peers, struct gw_control *ctl,
		      struct gw_worker_proxy *workers, unsigned nworkers, struct gw_txq *txq,
		      struct gw_counters *st)
{
	memset(rv, 0, sizeof(*rv));
	rv->id = id;
	rv->node = node;
	rv->peers = peers;
	rv->ctl = ctl;
	rv->workers = workers;
	rv->nworkers = nworkers;
	rv->txq = txq;
	rv->st = st;
	rv->granting = node->cfg->cc_control != GW_CONFIG_CC_OFF;
	uint32_t mss = GW_FRAME_MIN + node->payload_max;
	gw_cc_budget_init(&rv->budget, mss, 4ull * mss, mss, 4ull * node->cfg->window * mss);
	rv->active = 1;
}

struct rte_ring *gw_receiver_add_handoff(struct gw_receiver *rv, unsigned from)
{
	return gw_node_add_ring(rv->handoff, &rv->nhandoff, sizeof(struct gw_handoff), GW_HANDOFFQ,
				"gw_handoff%u_%u", from, rv->id);
}

void gw_receiver_fini(struct gw_receiver *rv)
{
	for (unsigned i = 0; i < rv->nhandoff; i++) {
		struct gw_handoff f;
		while (rte_ring_sc_dequeue_elem(rv->handoff[i], &f, sizeof(f)) == 0)
			rte_pktmbuf_free(f.m);
		rte_ring_free(rv->handoff[i]);
	}
	for (unsigned i = 0; i < rv->nloops; i++) {
		struct gw_loop *l = &rv->loops[i];
		if (l->head)
			rte_pktmbuf_free(l->head);
		struct rte_mbuf *m;
		while (rte_ring_sc_dequeue(l->lb->ring, (void **)&m) == 0)
			rte_pktmbuf_free(m);
	}
	rv->nhandoff = rv->nloops = 0;
}

void gw_receiver_accept(struct gw_receiver *rv, struct gw_peer *p, const struct gw_hdr *h,
		      struct rte_mbuf *m)
{
	struct gw_lane_rx *rx = &p->rx[gw_lane_slot(h->lane)];
	/* Which member brought it, where the lane tells copies apart. */
	int member = rx->copies ? gw_links_member(rv->node->links, m->port) : 0;
	uint64_t gaps = rx->gaps;
	enum gw_lane_rx_verdict v = gw_lane_rx_accept_on(rx, h, m, member < 0 ? 0u : (unsigned)member);
	/* Bulk frames lost on the way in: the budget's signal (urgent lanes
	 * keep their own). */
	if (rx->gaps != gaps && !(h->lane & GW_LANE_URGENT))
		gw_cc_budget_loss(&rv->budget);
	switch (v) {
	case GW_RX_STORED:
		break;
	case GW_RX_DUP:
		rv->st->dup_frames++;
		rte_pktmbuf_free(m);
		break;
	case GW_RX_REDUNDANT:
		rv->st->redundant_frames++;
		rte_pktmbuf_free(m);
		break;
	case GW_RX_BEYOND:
		rv->st->beyond_window++;
		rte_pktmbuf_free(m);
		break;
	}
}

/* How long a full destination may hold a lane (chan.dest_block_ms). */
static uint64_t block_ns(const struct gw_receiver *rv)
{
	return rv->node->cfg->dest_block_ms * 1000000ull;
}

/* Is the client taking deliveries into our part? Its shared lines are
 * read only while it is (or was) full. */
static bool dest_open(struct gw_receiver *rv, struct gw_client *cl)
{
	struct gw_deliver_hold *h = &cl->rx[rv->id].hold;
	if (!h->full_since_ns && !h->rejecting)
		return true;
	return gw_deliver_open(h, gw_chan_rx_below_half(&cl->chan, rv->id));
}

/* Hold the lane for a full destination, or (past the bound) refuse? */
static bool dest_hold(struct gw_receiver *rv, struct gw_client *cl)
{
	return gw_deliver_full(&cl->rx[rv->id].hold, rv->now, block_ns(rv));
}

#define GW_PUBLISH_RECS 512 /* records delivered before the clients are shown them */

/* Wake the clients shown messages and not yet woken for them
 * (lib/deliver). Looked up by id: one that left since is skipped. */
static void wake_all(struct gw_receiver *rv)
{
	struct gw_chan *cs[GW_DELIVER_WAKES_MAX];
	unsigned n = 0;
	for (unsigned i = 0; i < rv->wakes.n; i++) {
		struct gw_client *cl = gw_control_find_client(rv->ctl, rv->wakes.id[i]);
		if (cl)
			cs[n++] = &cl->chan;
	}
	gw_chan_publish_set(cs, n, rv->id, true);
	gw_deliver_wake_done(&rv->wakes);
}

/*
 * Show the clients what was delivered into them. A client asleep on
 * another CPU is woken now, as one that polls sees it now; one asleep on
 * this lcore's CPU is woken when gw_deliver_wake_due says.
 */
static void show_all(struct gw_receiver *rv)
{
	struct gw_chan *now[GW_RECEIVER_UNPUB], *later[GW_RECEIVER_UNPUB];
	unsigned nnow = 0, nlater = 0;
	for (unsigned i = 0; i < rv->nunpub; i++) {
		struct gw_client *cl = rv->unpub[i];
		cl->rx[rv->id].unpublished = false;
		if (!gw_chan_rx_sleeps_on(&cl->chan, rv->cpu)) {
			now[nnow++] = &cl->chan;
			continue;
		}
		later[nlater++] = &cl->chan;
		rv->st->wakes_deferred++;
		if (!gw_deliver_wake_later(&rv->wakes, cl->chan_id, rv->now)) {
			wake_all(rv);
			gw_deliver_wake_later(&rv->wakes, cl->chan_id, rv->now);
		}
	}
	gw_chan_publish_set(later, nlater, rv->id, false);
	gw_chan_publish_set(now, nnow, rv->id, true);
	rv->nunpub = 0;
	rv->unpub_recs = 0;
}

/* cl was delivered into: it is shown at the latest when the step ends
 * (before the lcore's quiescent state, so cl's channel cannot have been
 * freed, though cl may be leaving). */
static void unpublished(struct gw_receiver *rv, struct gw_client *cl)
{
	rv->unpub_recs++;
	if (cl->rx[rv->id].unpublished)
		return;
	if (rv->nunpub == GW_RECEIVER_UNPUB)
		show_all(rv);
	cl->rx[rv->id].unpublished = true;
	rv->unpub[rv->nunpub++] = cl;
}

/* A REJECT for cl found its channel full: hold the lane while cl reads on? */
static bool reject_hold(struct gw_receiver *rv, struct gw_client *cl)
{
	return gw_deliver_owed(&cl->rx[rv->id].hold, rv->now, block_ns(rv),
			       gw_chan_rx_read_pos(&cl->chan, rv->id));
}

/* A REJECT for cl could not wait longer for cl to read (gw_deliver_owed):
 * dropped, and counted in cl's channel so that cl is told how many
 * (GW_MSG_LOST). */
static void reject_drop(struct gw_receiver *rv, struct gw_client *cl)
{
	rv->st->rejects_lost++;
	rv->st->rejects_lost_told++;
	gw_chan_lost_add(&cl->chan, rv->id);
}

/* A REJECT for one of our clients (of a message for node): into its channel. */
static int deliver_reject(struct gw_receiver *rv, uint16_t node, uint16_t chan_id, uint32_t ep,
			  uint32_t msg_id, int err, struct gw_client **dst)
{
	struct gw_client *cl = gw_control_find_client(rv->ctl, chan_id);
	if (!cl) {
		rv->st->rejects_lost++; /* the sender has left */
		return 0;
	}
	*dst = cl;
	/* Owed, so tried whatever the messages' state (gw_deliver.h). */
	struct gw_chan_reject rj = { .err = err, .msg_id = msg_id, .node = node };
	struct gw_chan_desc d = {
		.len = sizeof(rj), .node = node, .ep = ep, .chan = chan_id, .kind = GW_RK_REJECT,
	};
	int rc = gw_chan_deliver(&cl->chan, rv->id, d, &rj);
	if (rc == 0)
		gw_deliver_owed_done(&cl->rx[rv->id].hold);
	return rc;
}

/*
 * Owe the sender of r, on node, a REJECT. Local senders are told at once;
 * for a peer the REJECT goes to a worker to travel on its lane. -EAGAIN when
 * the local sender's channel is full and it reads on, -EBUSY when the
 * worker's ring is full: the caller holds the record and tries again, so
 * no REJECT is dropped.
 */
static int reject_queue(struct gw_receiver *rv, uint16_t node, const struct gw_rec *r, int err)
{
	if (node == rv->node->cfg->node_id) {
		struct gw_client *cl = NULL;
		if (deliver_reject(rv, node, r->src_chan, r->dst_ep, r->msg_id, err, &cl) == 0) {
			if (cl) {
				unpublished(rv, cl);
				rv->st->rejects_sent++;
			}
		} else if (reject_hold(rv, cl)) {
			return -EAGAIN;
		} else {
			reject_drop(rv, cl); /* the sender stopped reading */
		}
		return 0;
	}
	struct gw_reject rj = {
		.node = node, .target = rv->node->cfg->node_id, .src_chan = r->src_chan,
		.dst_ep = r->dst_ep, .msg_id = r->msg_id, .err = err,
	};
	return gw_worker_post_reject(&rv->workers[r->src_chan % rv->nworkers], &rj);
}

static bool store_first(struct gw_receiver *rv, struct gw_client *cl);

/*
 * Deliver one record into its destination's channel; *dst is that client.
 * Returns 0 when the record is done with (delivered, or its sender will be
 * told), -ENOBUFS when the channel is full, -EAGAIN or -EBUSY when a
 * REJECT is owed but cannot be queued yet (reject_queue).
 */
static int deliver_rec(struct gw_receiver *rv, uint16_t src, uint16_t urgent,
		       const struct gw_rec *r, struct gw_client **dst)
{
	if (r->kind == GW_RK_REJECT) {
		struct gw_reject_body rj;
		if (gw_wire_reject_get(r->data, r->len, &rj) < 0)
			return 0;
		/* Made by the sender's own gateway (node down, no room), a REJECT
		 * names the node; from a peer, it is the peer. */
		return deliver_reject(rv, rj.node ? rj.node : src, r->src_chan, r->dst_ep, r->msg_id,
				      rj.err, dst);
	}
	struct gw_client *cl = gw_control_find_endpoint(rv->ctl, r->dst_ep);
	if (!cl) {
		int rc = reject_queue(rv, src, r, -ENOENT);
		rv->st->reject_unknown_ep += rc == 0;
		return rc;
	}
	*dst = cl;
	if (!dest_open(rv, cl) || !store_first(rv, cl))
		return -ENOBUFS;
	struct gw_chan_desc d = {
		.len = r->len, .node = src, .ep = r->dst_ep, .chan = r->src_chan,
		.kind = GW_RK_MSG | urgent,
	};
	int rc = gw_chan_deliver(&cl->chan, rv->id, d, r->data);
	if (rc == -EMSGSIZE) {
		*dst = NULL; /* nothing went in */
		return reject_queue(rv, src, r, rc);
	}
	if (rc == 0) {
		rv->st->msgs_in++;
		rv->st->urgent_msgs_in += urgent != 0;
	}
	return rc;
}

/*
 * A REJECT owed that cannot be queued (its worker's ring is full, as its
 * lane back is): hold the frame, but not for longer than a full
 * destination may hold it. Two gateways owing each other REJECTs would
 * otherwise hold each other's lanes for good. true: hold on.
 */
static bool reject_wait(struct gw_receiver *rv, uint64_t *held_ns)
{
	if (!*held_ns) {
		*held_ns = rv->now | 1;
		return true;
	}
	if (rv->now - *held_ns < block_ns(rv))
		return true;
	rv->st->rejects_lost++;
	return false;
}

/* Latest subscriber cl's store holds messages: drain it as its ring frees. */
static void drain_later(struct gw_receiver *rv, struct gw_client *cl)
{
	/* One entry per client; a full list (departed clients' ids not yet
	 * swept) leaves the store to the client's next delivery. */
	if (cl->rx[rv->id].draining || rv->ndraining == GW_CONFIG_CLIENTS_MAX)
		return;
	cl->rx[rv->id].draining = true;
	rv->draining[rv->ndraining++] = cl->chan_id;
}

/* May latest subscriber cl take one more message into its channel? */
static bool latest_room(struct gw_receiver *rv, struct gw_client *cl)
{
	/* [topics] latest_unread: a screen that reads 10 a second is seconds
	 * behind, not a ring's worth. */
	return gw_chan_rx_unread_below(&cl->chan, rv->id, rv->node->cfg->latest_unread);
}

/* Deliver what cl's store holds, oldest first, while it has room for
 * them. true when the store is empty. */
static bool drain_one(struct gw_receiver *rv, struct gw_client *cl)
{
	struct gw_conflate *c = cl->rx[rv->id].latest;
	const uint8_t *rec;
	uint32_t len;
	while (c && (rec = gw_conflate_front(c, &len))) {
		if (!latest_room(rv, cl))
			return false;
		struct gw_chan_desc d; /* stored unaligned, after the key */
		memcpy(&d, rec, sizeof(d));
		/* Only -ENOBUFS can refuse it: a copy over the ring's msg_max is
		 * never stored (deliver_sub). */
		if (gw_chan_deliver(&cl->chan, rv->id, d, rec + sizeof(d)) == -ENOBUFS)
			return false;
		rv->st->pub_delivered++;
		unpublished(rv, cl);
		gw_conflate_pop(c);
	}
	return true;
}

/* Anything for cl comes after what its store holds (a latest subscription
 * of cl's, on this receiver): true when nothing stored is left to go first. */
static bool store_first(struct gw_receiver *rv, struct gw_client *cl)
{
	const struct gw_conflate *c = cl->rx[rv->id].latest;
	return !c || !c->n || drain_one(rv, cl);
}

/* The latest subscribers' stores, into their rings as these free. */
static bool drain_stores(struct gw_receiver *rv)
{
	bool work = false;
	for (unsigned i = 0; i < rv->ndraining;) {
		struct gw_client *cl = gw_control_find_client(rv->ctl, rv->draining[i]);
		if (cl) {
			uint64_t before = rv->st->pub_delivered;
			bool empty = drain_one(rv, cl);
			work |= rv->st->pub_delivered != before;
			if (!empty) {
				i++;
				continue;
			}
			cl->rx[rv->id].draining = false;
		}
		/* Empty, or the client left (control frees its store). */
		rv->draining[i] = rv->draining[--rv->ndraining];
	}
	return work;
}

/* The bytes a latest subscriber's message is known by: its topic, then its
 * first key_len bytes (all of it when shorter) and how many those are. */
#define GW_PUB_KEY (4 + 1 + GW_TOPIC_KEY_MAX)
_Static_assert(GW_PUB_KEY <= GW_CONFLATE_KEY_MAX, "a topic's key fits a store's");

/* Latest subscriber cl's ring is full: keep d's message as the newest of
 * its key (s's key_len) in cl's store. */
static void store_latest(struct gw_receiver *rv, struct gw_client *cl,
			 const struct gw_topic_sub *s, const struct gw_chan_desc *d,
			 const void *data)
{
	struct gw_client_rx *x = &cl->rx[rv->id];
	if (!x->latest) {
		x->latest = calloc(1, sizeof(*x->latest));
		const struct gw_config *cfg = rv->node->cfg;
		if (!x->latest || gw_conflate_init(x->latest, GW_PUB_KEY, cfg->latest_keys,
						   (size_t)cfg->latest_kb << 10) < 0) {
			free(x->latest);
			x->latest = NULL;
			rv->st->pub_evicted++; /* no memory: as if given way */
			return;
		}
	}
	uint8_t key[GW_PUB_KEY];
	uint32_t klen = d->len < s->key_len ? d->len : s->key_len;
	memcpy(key, &d->ep, 4);
	key[4] = (uint8_t)klen;
	memcpy(key + 5, data, klen);
	uint64_t evicted = x->latest->evicted;
	/* The key as long as it is (hashed per message), not its bound. */
	int rc = gw_conflate_put(x->latest, key, 5 + klen, d, sizeof(*d), data, d->len);
	rv->st->pub_stored += rc >= 0;
	rv->st->pub_conflated += rc == 1;
	rv->st->pub_evicted += x->latest->evicted - evicted + (rc < 0);
	if (x->latest->n)
		drain_later(rv, cl);
}

/*
 * One subscriber's copy of a published message: 0 done (delivered, or
 * kept in a latest subscriber's store), 1 hold the lane (a hold subscriber
 * that is full, within the bound), or a negative errno: refused, its
 * publisher is to be told.
 */
static int deliver_sub(struct gw_receiver *rv, struct gw_client *cl, const struct gw_topic_sub *s,
		       const struct gw_chan_desc *d, const void *data)
{
	bool latest = s->policy == GW_TOPIC_LATEST;
	if (d->len > cl->chan.msg_max)
		return -EMSGSIZE; /* never stored: its channel could not take it */
	/* What cl's store holds goes first (order holds across the switch,
	 * and after a change of policy); a latest subscriber's copy that
	 * cannot go now goes there too. */
	int rc = -ENOBUFS;
	if (store_first(rv, cl) && (latest ? latest_room(rv, cl) : dest_open(rv, cl)))
		rc = gw_chan_deliver(&cl->chan, rv->id, *d, data);
	if (rc == 0) {
		rv->st->pub_delivered++;
		unpublished(rv, cl);
		return 0;
	}
	if (rc == -ENOBUFS && latest) {
		store_latest(rv, cl, s, d, data);
		return 0;
	}
	if (rc == -ENOBUFS && dest_hold(rv, cl))
		return 1;
	return rc;
}

/*
 * A PUB record from node src: a copy into each local subscriber of its
 * topic, in channel order from at->sub on (the copies of a record held
 * part-way are not made twice). A refused copy tells the publisher once
 * per record (a REJECT with that errno, naming the topic and this node).
 * true when the record is done with, false when the frame is held there.
 */
static bool deliver_pub(struct gw_receiver *rv, uint16_t src, uint16_t urgent,
			const struct gw_rec *r, struct gw_rx_cursor *at)
{
	const struct gw_topic *t = gw_control_find_topic(rv->ctl, r->dst_ep);
	if (!at->sub) {
		rv->st->pub_in++;
		rv->st->urgent_msgs_in += urgent != 0; /* per record, as the sender counts */
		rv->st->pub_unsubscribed_in += !t || !t->nsubs; /* they left since it was sent */
	}
	if (!t || !t->nsubs)
		return true;
	struct gw_chan_desc d = {
		.len = r->len, .node = src, .ep = r->dst_ep, .chan = r->src_chan,
		.kind = GW_RK_PUB | urgent,
	};
	for (unsigned k = 0; k < t->nsubs; k++) {
		const struct gw_topic_sub *s = &t->sub[k];
		if (s->chan < at->sub)
			continue;
		struct gw_client *cl = gw_control_find_client(rv->ctl, s->chan);
		int rc = cl ? deliver_sub(rv, cl, s, &d, r->data) : 0;
		if (rc == 1) {
			at->sub = s->chan;
			return false;
		}
		if (rc < 0 && !at->told) {
			int q = reject_queue(rv, src, r, rc);
			if (q == -EAGAIN || (q == -EBUSY && reject_wait(rv, &at->held_ns))) {
				at->sub = s->chan; /* refused again then, and told */
				return false;
			}
			at->told = true;
		}
		rv->st->pub_refused += rc < 0;
		at->sub = (uint32_t)s->chan + 1;
		at->held_ns = 0;
	}
	return true;
}

/*
 * Deliver the records of frame m from node src, from at on (at->off: a
 * byte offset into its payload; at->held_ns: since when a REJECT there
 * waits for a worker's ring; one for a full local sender keeps its clock
 * in that sender's hold, gw_deliver_owed); urgent is GW_CHAN_KIND_URGENT
 * for a frame of that class, else 0. Returns true when the frame is done
 * with, false when it is held there.
 */
static bool deliver_frame(struct gw_receiver *rv, uint16_t src, uint16_t urgent,
			  struct rte_mbuf *m, struct gw_rx_cursor *at, bool *work)
{
	const uint8_t *pl = rte_pktmbuf_mtod(m, uint8_t *) + GW_FRAME_MIN;
	size_t len = m->pkt_len - GW_FRAME_MIN, off = at->off;
	uint64_t *held_ns = &at->held_ns;
	struct gw_rec r;
	int more;
	bool done = true;
	while ((more = gw_wire_rec_next(pl, len, &off, &r)) == 1) {
		struct gw_client *cl = NULL;
		if (r.kind == GW_RK_PUB || r.kind == GW_RK_SUBS) {
			/* A SUBS part is the control role's to apply: the frame
			 * waits while its ring is full (in order, none lost). */
			int rc = r.kind == GW_RK_PUB ? (deliver_pub(rv, src, urgent, &r, at) ? 0 : -EBUSY)
				 : gw_control_post_subs(rv->to_ctl, src, r.data, r.len);
			if (rc == -EBUSY) {
				done = false;
				break;
			}
			rv->st->bad_frames += rc == -EMSGSIZE;
			*at = (struct gw_rx_cursor){ .off = (uint32_t)off };
			*work = true;
			continue;
		}
		int rc = deliver_rec(rv, src, urgent, &r, &cl);
		if (rc == -EAGAIN || (rc == -EBUSY && reject_wait(rv, held_ns))) {
			done = false;
			break;
		}
		if (rc == -ENOBUFS) {
			if (r.kind != GW_RK_MSG ? reject_hold(rv, cl) : dest_hold(rv, cl)) {
				done = false;
				break;
			}
			if (r.kind != GW_RK_MSG) {
				reject_drop(rv, cl); /* its sender stopped reading */
			} else if ((rc = reject_queue(rv, src, &r, -ENOBUFS)) == 0) {
				rv->st->reject_dest_full++;
			} else if (rc == -EAGAIN || reject_wait(rv, held_ns)) {
				done = false;
				break;
			}
		} else if (cl) {
			unpublished(rv, cl);
		}
		*at = (struct gw_rx_cursor){ .off = (uint32_t)off };
		*work = true;
	}
	if (!done)
		rv->held = true; /* whoever it waits for may sleep */
	if (more < 0)
		rv->st->bad_frames++; /* CRC-valid but malformed: skip the rest */
	if (rv->unpub_recs >= GW_PUBLISH_RECS)
		show_all(rv);
	return done;
}

/* A lane counts as sending to us for this long after its last frame. */
#define GW_CC_ACTIVE_NS (2 * 1000 * 1000ull)

static void ack_send(struct gw_receiver *rv, uint16_t node, struct gw_peer *p, unsigned l)
{
	struct rte_mbuf *a = gw_txq_alloc(rv->txq);
	if (!a)
		return; /* still due: the next step tries again */
	/* What the ack covers is shown first: the sender's gateway takes an
	 * ack as "delivered" (settled), and a delivery still unpublished when
	 * this gateway died would be seen by no one. */
	if (rv->nunpub)
		show_all(rv);
	struct gw_ack ack;
	gw_lane_rx_ack(&p->rx[l], &ack);
	if (rv->granting && l < GW_LANES_MAX &&
	    (__atomic_load_n(&p->caps, __ATOMIC_RELAXED) & GW_CAP_GRANT)) {
		/* The lanes to us from one peer share its share. */
		unsigned lanes = rv->peer_lanes[node] ? rv->peer_lanes[node] : 1;
		/* None (0) while this is the one lane sending to us: several
		 * lanes of one peer (its workers') are several windows. */
		uint64_t g = gw_cc_budget_grant(&rv->budget, (rv->active ? rv->active : 1) * lanes);
		if (g != UINT64_MAX) {
			g = g / GW_ACK_GRANT_UNIT;
			ack.grant = (uint16_t)(g < 1 ? 1 : g > UINT16_MAX ? UINT16_MAX : g);
		}
	}
	struct gw_hdr h = { .type = GW_FT_ACK, .dst_node = node, .lane = gw_lane_of_slot(l) };
	h.len = (uint32_t)gw_wire_ack_put(rte_pktmbuf_mtod(a, uint8_t *) + GW_FRAME_MIN, &ack);
	gw_txq_send(rv->txq, a, &p->addr, &h, 0);
}

/* The lanes of one class (slots from..to) this receiver owns: deliver what
 * is in order, ack it. */
static bool deliver_lanes(struct gw_receiver *rv, unsigned from, unsigned to)
{
	struct gw_peers *ps = rv->peers;
	unsigned known = gw_peers_known(ps);
	uint8_t mine = (uint8_t)(rv->id + 1);
	bool work = false;
	uint16_t urgent = from == GW_LANES_MAX ? GW_CHAN_KIND_URGENT : 0;
	unsigned active = 0; /* peers with a bulk lane sending to us */
	for (unsigned k = 0; k < known; k++) {
		uint16_t node = ps->known[k];
		struct gw_peer *p = &ps->peer[node];
		unsigned lanes = 0;
		for (unsigned l = from; l < to; l++) {
			if (__atomic_load_n(&p->rx_owner[l], __ATOMIC_RELAXED) != mine)
				continue;
			struct gw_lane_rx *rx = &p->rx[l];
			struct rte_mbuf *m;
			while ((m = gw_lane_rx_head(rx)) &&
			       deliver_frame(rv, node, urgent, m, &rx->at, &work)) {
				rx->msgs += gw_wire_nrec(rte_pktmbuf_mtod(m, uint8_t *));
				if (!urgent) {
					gw_cc_budget_delivered(&rv->budget, m->pkt_len);
					rx->busy_ns = rv->now;
				}
				gw_lane_rx_pop(rx);
			}
			lanes += rx->busy_ns && rv->now - rx->busy_ns < GW_CC_ACTIVE_NS;
			if (rx->ack_due)
				ack_send(rv, node, p, l);
		}
		if (!urgent) {
			rv->peer_lanes[node] = (uint8_t)lanes;
			active += lanes > 0;
		}
	}
	if (!urgent)
		rv->active = active ? active : 1;
	return work;
}

/* Frames the workers built for this node itself, each ring in its order. */
static bool deliver_loops(struct gw_receiver *rv)
{
	bool work = false;
	uint16_t self = rv->node->cfg->node_id;
	for (unsigned i = 0; i < rv->nloops; i++) {
		struct gw_loop *l = &rv->loops[i];
		for (unsigned k = 0; k < GW_LOOP_BURST; k++) {
			if (!l->head) {
				if (rte_ring_sc_dequeue(l->lb->ring, (void **)&l->head))
					break;
				l->at = (struct gw_rx_cursor){ 0 };
			}
			/* The worker marked the class of a frame for this node in
			 * hash.usr: it has no header. */
			uint16_t urgent = l->head->hash.usr ? GW_CHAN_KIND_URGENT : 0;
			if (!deliver_frame(rv, self, urgent, l->head, &l->at, &work))
				break;
			rte_pktmbuf_free(l->head);
			l->head = NULL;
			l->finished++; /* told to the worker once shown (gw_receiver_step) */
		}
	}
	return work;
}

static bool take_handoffs(struct gw_receiver *rv)
{
	unsigned total = 0;
	for (unsigned i = 0; i < rv->nhandoff; i++) {
		struct gw_handoff f[32];
		unsigned n = rte_ring_sc_dequeue_burst_elem(rv->handoff[i], f, sizeof(f[0]), 32, NULL);
		for (unsigned k = 0; k < n; k++)
			gw_receiver_accept(rv, &rv->peers->peer[f[k].h.src_node], &f[k].h, f[k].m);
		total += n;
	}
	return total > 0;
}

bool gw_receiver_step(struct gw_receiver *rv, uint64_t now)
{
	rv->now = now;
	rv->cpu = (unsigned)sched_getcpu();
	bool work = take_handoffs(rv);
	/* Urgent lanes first: their records go ahead of bulk frames that
	 * came in the same burst. */
	work |= deliver_lanes(rv, GW_LANES_MAX, GW_LANE_SLOTS);
	work |= deliver_lanes(rv, 0, GW_LANES_MAX);
	work |= deliver_loops(rv);
	work |= drain_stores(rv);
	if (rv->nunpub)
		show_all(rv);
	/* The worker settles its senders' messages on this count: only what
	 * is shown counts as delivered. */
	for (unsigned i = 0; i < rv->nloops; i++)
		if (rv->loops[i].finished != rv->loops[i].lb->done)
			__atomic_store_n(&rv->loops[i].lb->done, rv->loops[i].finished, __ATOMIC_RELEASE);
	enum gw_deliver_wake why = gw_deliver_wake_due(
		&rv->wakes, now, work, rv->held, __atomic_load_n(&rv->node->draining, __ATOMIC_ACQUIRE));
	if (why) {
		rv->st->wakes_at_age += why == GW_DELIVER_WAKE_AGE;
		wake_all(rv);
	}
	rv->held = false;
	return work;
}

uint64_t gw_receiver_pending(const struct gw_receiver *rv)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < rv->nloops; i++)
		n += rte_ring_count(rv->loops[i].lb->ring) +
		     (__atomic_load_n(&rv->loops[i].head, __ATOMIC_RELAXED) != NULL);
	for (unsigned i = 0; i < rv->nhandoff; i++)
		n += rte_ring_count(rv->handoff[i]);
	/* Clients not yet woken count too: a stop waits for their wake; and
	 * latest subscribers with stored messages, for their delivery. */
	return n + gw_deliver_wake_count(&rv->wakes) + __atomic_load_n(&rv->ndraining, __ATOMIC_RELAXED);
}
