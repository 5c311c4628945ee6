/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libgridwire: services and calls over plain messages; see gridwire.h.
 *
 * A request is a message to the service's endpoint with an 8-byte header
 * (type, call id) in front; its reply is a message back to the caller's
 * own endpoint "~call.<channel>" (which the gateway registers for each
 * client when it connects), with the same call id. So both legs ride the batched path and
 * the gateway knows nothing of calls. The caller keeps a table of calls
 * in flight: a reply, a REJECT of the request (by its message number), a
 * node going down or the deadline ends a call, whichever comes first;
 * anything for it after that is dropped.
 *
 * gw_recv() hands out, in this order: messages kept while gw_call()
 * waited, outcomes made up here (timeouts, nodes down), then the ring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <string.h>

#include "gw_client_int.h"

_Static_assert(GW_CHAN_MSG_URGENT == GW_MSG_ID_URGENT, "one bit marks an urgent msg_id");
#include "gw_ctl.h"

enum gw_call_type {
	GW_CT_CAST = 1,
	GW_CT_CALL = 2,
	GW_CT_OK = 3,
	GW_CT_FAIL = 4, /* the handler failed: the payload is its reason */
};

#define GW_CALL_MAGIC 0xc7

struct gw_call_hdr {
	uint8_t magic, type;
	uint16_t rsv;
	uint32_t call_id;
};
_Static_assert(sizeof(struct gw_call_hdr) == GW_CALL_HDR, "call header size");

#define GW_SLOT_BITS 12
_Static_assert(GW_CALLS_MAX == 1u << GW_SLOT_BITS, "call ids carry the slot");

/* --- kept messages --- */

static void kept_push(struct gw_kept_queue *q, struct gw_kept *k)
{
	k->next = NULL;
	if (q->tail)
		q->tail->next = k;
	else
		q->head = k;
	q->tail = k;
	q->n++;
}

static struct gw_kept *kept_pop(struct gw_kept_queue *q)
{
	struct gw_kept *k = q->head;
	if (k) {
		q->head = k->next;
		if (!q->head)
			q->tail = NULL;
		q->n--;
	}
	return k;
}

/* A copy of m (and its data) that outlives the ring. */
static struct gw_kept *kept_copy(const struct gw_msg *m)
{
	struct gw_kept *k = malloc(sizeof(*k) + m->len);
	if (!k)
		return NULL;
	k->m = *m;
	if (m->len)
		memcpy(k->data, m->data, m->len);
	k->m.data = k->data;
	return k;
}

static void kept_free_all(struct gw_kept_queue *q)
{
	struct gw_kept *k;
	while ((k = kept_pop(q)))
		free(k);
}

/* --- the call table --- */

static int calls_init(struct gw_client *cl)
{
	if (cl->calls)
		return 0;
	/* The gateway registered our reply endpoint when we connected. */
	char name[GW_NAME_MAX];
	gw_ctl_reply_ep_name(name, sizeof(name), cl->chan.chan_id);
	cl->calls = calloc(GW_CALLS_MAX, sizeof(*cl->calls));
	cl->free_slots = malloc(GW_CALLS_MAX * sizeof(*cl->free_slots));
	if (!cl->calls || !cl->free_slots) {
		free(cl->calls);
		free(cl->free_slots);
		cl->calls = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < GW_CALLS_MAX; i++)
		cl->free_slots[i] = i;
	cl->reply_ep = gw_ctl_ep_id(name);
	cl->next_deadline_ms = INT64_MAX;
	memcpy(cl->nodes_seen, (const void *)cl->chan.shm->nodes_up, sizeof(cl->nodes_seen));
	return 0;
}

void gw_close(struct gw_client *cl)
{
	if (!cl)
		return;
	kept_free_all(&cl->kept);
	kept_free_all(&cl->due);
	free(cl->current);
	free(cl->calls);
	free(cl->free_slots);
	gw_client_free(cl);
}

static struct gw_call_slot *slot_of(struct gw_client *cl, uint32_t id)
{
	if (!cl->calls || id == 0)
		return NULL;
	struct gw_call_slot *s = &cl->calls[id & (GW_CALLS_MAX - 1)];
	return s->id == id ? s : NULL;
}

static void slot_free(struct gw_client *cl, struct gw_call_slot *s)
{
	s->id = 0;
	cl->ended[cl->nended++ % GW_CALLS_MAX] = s->msg_id;
	cl->free_slots[(cl->free_head + GW_CALLS_MAX - cl->ncalls) % GW_CALLS_MAX] =
		(uint32_t)(s - cl->calls);
	cl->ncalls--;
}

/* The call ends with error (no data): its outcome joins the due queue. */
static void call_fail(struct gw_client *cl, struct gw_call_slot *s, int error)
{
	struct gw_kept *k = calloc(1, sizeof(*k));
	if (!k)
		return; /* the deadline will tell it */
	k->m.kind = GW_MSG_REPLY;
	k->m.node = s->node;
	k->m.error = error;
	k->m.call_id = s->id;
	kept_push(&cl->due, k);
	s->told = true;
}

void gw_call_forget(struct gw_client *cl, uint32_t id)
{
	struct gw_call_slot *s = slot_of(cl, id);
	if (s)
		s->told = true;
	/* An outcome made up already (a timeout, a node down) goes too. */
	for (struct gw_kept **p = &cl->due.head, *prev = NULL; id && *p;) {
		struct gw_kept *k = *p;
		if (k->m.call_id != id) {
			prev = k;
			p = &k->next;
			continue;
		}
		*p = k->next;
		if (cl->due.tail == k)
			cl->due.tail = prev;
		cl->due.n--;
		free(k);
	}
}

int gw_call_cancel(struct gw_client *cl, uint32_t call_id)
{
	struct gw_call_slot *s = call_id ? slot_of(cl, call_id) : NULL;
	gw_call_forget(cl, call_id);
	if (!s)
		return -ENOENT;
	slot_free(cl, s); /* a late reply carries an id no slot has now */
	return 0;
}

/* Calls past their deadline, and calls to nodes that went down. */
static void calls_check(struct gw_client *cl, int64_t now)
{
	uint64_t lost[GW_MAX_NODES / 64], any = 0;
	for (unsigned w = 0; w < GW_MAX_NODES / 64; w++) {
		uint64_t up = __atomic_load_n(&cl->chan.shm->nodes_up[w], __ATOMIC_ACQUIRE);
		lost[w] = cl->nodes_seen[w] & ~up;
		cl->nodes_seen[w] = up;
		any |= lost[w];
	}
	if (!any && now < cl->next_deadline_ms)
		return;
	int64_t next = INT64_MAX;
	for (unsigned i = 0; i < GW_CALLS_MAX && cl->ncalls; i++) {
		struct gw_call_slot *s = &cl->calls[i];
		if (!s->id)
			continue;
		if (now >= s->deadline_ms) {
			if (!s->told)
				call_fail(cl, s, -ETIMEDOUT);
			slot_free(cl, s);
			continue;
		}
		if (!s->told && (lost[s->node / 64] >> (s->node % 64) & 1))
			call_fail(cl, s, -EHOSTDOWN); /* kept until its deadline, to catch stragglers */
		if (s->deadline_ms < next)
			next = s->deadline_ms;
	}
	cl->next_deadline_ms = next;
}

/* --- turning channel messages into events --- */

static bool is_service(const struct gw_client *cl, uint32_t ep)
{
	for (unsigned i = 0; i < cl->nservices; i++)
		if (cl->services[i] == ep)
			return true;
	return false;
}

/*
 * Fill m from one channel message. false when the message was ours to
 * absorb (an outcome for a call that already has one).
 */
static bool translate(struct gw_client *cl, const struct gw_chan_desc *d, const uint8_t *data,
		      struct gw_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->endpoint = d->ep;
	m->node = d->node;
	m->sender = d->chan;
	m->flags = d->kind & GW_CHAN_KIND_URGENT ? GW_URGENT : 0;
	uint16_t kind = d->kind & (uint16_t)~GW_CHAN_KIND_URGENT;
	if (kind == GW_RK_REJECT && d->len >= sizeof(struct gw_chan_reject)) {
		struct gw_chan_reject r;
		memcpy(&r, data, sizeof(r));
		m->error = r.err;
		m->msg_id = r.msg_id;
		for (unsigned i = 0; cl->calls && cl->ncalls && i < GW_CALLS_MAX; i++) {
			struct gw_call_slot *s = &cl->calls[i];
			if (!s->id || s->msg_id != r.msg_id)
				continue;
			bool told = s->told;
			m->kind = GW_MSG_REPLY;
			m->call_id = s->id;
			m->node = s->node;
			slot_free(cl, s);
			return !told;
		}
		unsigned n = cl->nended < GW_CALLS_MAX ? cl->nended : GW_CALLS_MAX;
		for (unsigned i = 0; i < n; i++)
			if (cl->ended[i] == r.msg_id)
				return false; /* a request whose call has ended */
		m->kind = GW_MSG_REJECT;
		if (r.node)
			m->node = r.node;
		return true;
	}
	m->kind = kind == GW_RK_PUB ? GW_MSG_PUBLISH : GW_MSG_DATA;
	m->data = data;
	m->len = d->len;
	if (kind == GW_RK_PUB)
		return true; /* calls are not published */
	struct gw_call_hdr h;
	if (d->len < sizeof(h))
		return true;
	memcpy(&h, data, sizeof(h));
	if (h.magic != GW_CALL_MAGIC)
		return true;
	if (d->ep == cl->reply_ep && cl->reply_ep && (h.type == GW_CT_OK || h.type == GW_CT_FAIL)) {
		struct gw_call_slot *s = slot_of(cl, h.call_id);
		if (!s) {
			cl->late_replies++;
			return false;
		}
		bool told = s->told;
		slot_free(cl, s);
		if (told)
			return false;
		m->kind = GW_MSG_REPLY;
		m->call_id = h.call_id;
		m->error = h.type == GW_CT_OK ? 0 : -EREMOTEIO;
	} else if (is_service(cl, d->ep) && (h.type == GW_CT_CALL || h.type == GW_CT_CAST)) {
		m->kind = h.type == GW_CT_CALL ? GW_MSG_REQUEST : GW_MSG_CAST;
		m->call_id = h.call_id;
	} else {
		return true; /* a plain message that happens to look like one */
	}
	m->data = data + sizeof(h);
	m->len = d->len - sizeof(h);
	return true;
}

/* GW_MSG_LOST, if the gateway dropped REJECTs for us since we last looked. */
static bool lost_report(struct gw_client *cl, struct gw_msg *m)
{
	uint64_t n = gw_chan_lost_take(&cl->chan);
	if (!n)
		return false;
	cl->lost = n;
	memset(m, 0, sizeof(*m));
	m->kind = GW_MSG_LOST;
	m->data = &cl->lost;
	m->len = sizeof(cl->lost);
	m->error = -ENOBUFS;
	return true;
}

/*
 * The next event not kept for later: a made-up outcome, or the next
 * message from the ring (valid until the next call). Waits up to
 * timeout_ms (0 polls and returns -EAGAIN, -1 waits for ever), waking for
 * call deadlines too. A message already waiting costs no clock read.
 */
static int next_event(struct gw_client *cl, struct gw_msg *m, int timeout_ms)
{
	int64_t deadline = -1; /* set from the clock the first time it is needed */
	for (;;) {
		if (cl->current) {
			free(cl->current);
			cl->current = NULL;
		}
		int64_t now = 0;
		if (cl->ncalls) {
			now = gw_client_now_ms();
			calls_check(cl, now);
		}
		struct gw_kept *k = kept_pop(&cl->due);
		if (k) {
			cl->current = k;
			*m = k->m;
			return 0;
		}
		struct gw_chan_desc d;
		const uint8_t *data;
		/* REJECTs the gateway dropped: told once what came before them
		 * is read, and now and then to a reader that never runs dry. */
		if ((++cl->recvs & (GW_LOST_EVERY - 1)) == 0) {
			gw_client_raw_done(cl);
			if (lost_report(cl, m))
				return 0;
		}
		int rc = gw_client_raw_recv(cl, &d, &data, 0);
		if (rc < 0 && lost_report(cl, m))
			return 0;
		if (rc == -EAGAIN) {
			if (timeout_ms == 0)
				return -EAGAIN;
			if (!now)
				now = gw_client_now_ms();
			if (timeout_ms > 0 && deadline < 0)
				deadline = now + timeout_ms;
			if (deadline >= 0 && now >= deadline)
				return -ETIMEDOUT;
			int64_t until = deadline;
			if (cl->ncalls) {
				/* Wake for the next call deadline, and now and then to
				 * look at the nodes (a node going down wakes us, racily). */
				int64_t wake = cl->next_deadline_ms < now + 100 ? cl->next_deadline_ms
										: now + 100;
				if (until < 0 || wake < until)
					until = wake > now ? wake : now + 1;
			}
			rc = gw_client_raw_recv(cl, &d, &data, until);
			if (rc == -ETIMEDOUT)
				continue;
		}
		if (rc < 0)
			return rc;
		if (translate(cl, &d, data, m))
			return 0;
	}
}

int gw_recv(struct gw_client *cl, struct gw_msg *m, int timeout_ms)
{
	if (cl->current) {
		free(cl->current);
		cl->current = NULL;
	}
	struct gw_kept *k = kept_pop(&cl->kept);
	if (k) {
		cl->current = k;
		*m = k->m;
		return 0;
	}
	return next_event(cl, m, timeout_ms);
}

int gw_call_next_outcome(struct gw_client *cl, const uint32_t *ids, unsigned n, struct gw_msg *m)
{
	for (;;) {
		if (cl->kept.n >= GW_CALL_KEEP)
			return -EOVERFLOW;
		int rc = next_event(cl, m, -1);
		if (rc < 0)
			return rc;
		if (m->kind == GW_MSG_REPLY)
			for (unsigned i = 0; i < n; i++)
				if (ids[i] && ids[i] == m->call_id)
					return (int)i;
		struct gw_kept *k = kept_copy(m);
		if (!k)
			return -ENOMEM;
		kept_push(&cl->kept, k);
	}
}

/* --- the API --- */

int gw_service(struct gw_client *cl, const char *name)
{
	if (gw_client_gone(cl))
		return -EPIPE;
	if (!name || !gw_ctl_name_ok(name, GW_NAME_MAX))
		return -EINVAL;
	uint32_t ep = gw_ctl_ep_id(name);
	if (is_service(cl, ep))
		return 0;
	if (cl->nservices == GW_SERVICES_MAX)
		return gw_client_answer(cl, -ENOSPC);
	int rc = gw_register(cl, name);
	if (rc == 0)
		cl->services[cl->nservices++] = ep;
	return rc;
}

int gw_unregister(struct gw_client *cl, const char *endpoint)
{
	int rc = gw_client_ctl_name(cl, GW_CTL_UNREGISTER, endpoint, 0);
	if (rc < 0)
		return rc;
	/* A service dropped is a service no more (gw_service registers it again). */
	uint32_t ep = gw_ctl_ep_id(endpoint);
	for (unsigned i = 0; i < cl->nservices; i++)
		if (cl->services[i] == ep) {
			cl->services[i] = cl->services[--cl->nservices];
			break;
		}
	return 0;
}

int gw_cast_flags(struct gw_client *cl, uint16_t node, const char *service, const void *req,
		  size_t len, int timeout_ms, unsigned flags)
{
	if (!service || !gw_ctl_name_ok(service, GW_NAME_MAX))
		return gw_client_answer(cl, -EINVAL);
	struct gw_call_hdr h = { .magic = GW_CALL_MAGIC, .type = GW_CT_CAST };
	return gw_client_send(cl, node, gw_ctl_ep_id(service), &h, sizeof(h), req, len,
			      timeout_ms, flags);
}

int gw_cast(struct gw_client *cl, uint16_t node, const char *service, const void *req,
	    size_t len, int timeout_ms)
{
	return gw_cast_flags(cl, node, service, req, len, timeout_ms, 0);
}

int gw_call_start_flags(struct gw_client *cl, uint16_t node, const char *service,
			const void *req, size_t len, int timeout_ms, unsigned flags,
			uint32_t *call_id)
{
	if (gw_client_gone(cl))
		return -EPIPE;
	if (!service || !gw_ctl_name_ok(service, GW_NAME_MAX) || timeout_ms <= 0 ||
	    (flags & ~(GW_URGENT | GW_NOWAIT)))
		return -EINVAL;
	int rc = calls_init(cl);
	if (rc < 0)
		return gw_client_answer(cl, rc);
	if (cl->ncalls == GW_CALLS_MAX)
		return gw_client_answer(cl, -EBUSY);
	int64_t now = gw_client_now_ms();
	uint32_t slot = cl->free_slots[cl->free_head];
	struct gw_call_slot *s = &cl->calls[slot];
	/* A new id per use of the slot, never 0: stale replies do not match. */
	uint32_t gen = s->gen + 1 < 1u << (32 - GW_SLOT_BITS) ? s->gen + 1 : 1;
	uint32_t id = gen << GW_SLOT_BITS | slot;
	struct gw_call_hdr h = { .magic = GW_CALL_MAGIC, .type = GW_CT_CALL, .call_id = id };
	/* The number the gateway will give this send, as REJECTs name it. */
	uint32_t msg_id = flags & GW_URGENT
		? (cl->chan.tx[GW_CLASS_URGENT].msgs & ~GW_CHAN_MSG_URGENT) | GW_CHAN_MSG_URGENT
		: cl->chan.tx[GW_CLASS_BULK].msgs & ~GW_CHAN_MSG_URGENT;
	rc = gw_client_send(cl, node, gw_ctl_ep_id(service), &h, sizeof(h), req, len,
			    flags & GW_NOWAIT ? 0 : timeout_ms, flags & GW_URGENT);
	if (rc < 0)
		return rc;
	cl->free_head = (cl->free_head + 1) % GW_CALLS_MAX;
	cl->ncalls++;
	*s = (struct gw_call_slot){
		.id = id, .gen = gen, .msg_id = msg_id, .deadline_ms = now + timeout_ms, .node = node,
	};
	if (s->deadline_ms < cl->next_deadline_ms)
		cl->next_deadline_ms = s->deadline_ms;
	/* Up now (the send took it): its going down must fail this call. */
	cl->nodes_seen[node / 64] |= 1ull << (node % 64);
	*call_id = id;
	return 0;
}

int gw_call_start(struct gw_client *cl, uint16_t node, const char *service, const void *req,
		  size_t len, int timeout_ms, uint32_t *call_id)
{
	return gw_call_start_flags(cl, node, service, req, len, timeout_ms, 0, call_id);
}

int gw_call_flags(struct gw_client *cl, uint16_t node, const char *service, const void *req,
		  size_t len, int timeout_ms, unsigned flags, struct gw_msg *reply)
{
	uint32_t id;
	if (gw_client_gone(cl))
		return -EPIPE;
	if (flags & GW_NOWAIT)
		return -EINVAL; /* gw_call_start_flags' alone: a call that waits waits */
	if (cl->kept.n >= GW_CALL_KEEP)
		return gw_client_answer(cl, -EOVERFLOW); /* nothing sent: receive what is kept first */
	int rc = gw_call_start_flags(cl, node, service, req, len, timeout_ms, flags, &id);
	if (rc < 0)
		return rc;
	rc = gw_call_next_outcome(cl, &id, 1, reply);
	if (rc < 0) {
		gw_call_forget(cl, id);
		return gw_client_answer(cl, rc);
	}
	return reply->error;
}

int gw_call(struct gw_client *cl, uint16_t node, const char *service, const void *req,
	    size_t len, int timeout_ms, struct gw_msg *reply)
{
	return gw_call_flags(cl, node, service, req, len, timeout_ms, 0, reply);
}

int gw_respond(struct gw_client *cl, const struct gw_msg *req, int failed, const void *buf,
	       size_t len, int timeout_ms)
{
	if (!req || req->kind != GW_MSG_REQUEST)
		return gw_client_answer(cl, -EINVAL);
	char name[GW_NAME_MAX];
	gw_ctl_reply_ep_name(name, sizeof(name), req->sender);
	struct gw_call_hdr h = { .magic = GW_CALL_MAGIC, .type = failed ? GW_CT_FAIL : GW_CT_OK,
				 .call_id = req->call_id };
	/* A reply travels in its request's class. */
	return gw_client_send(cl, req->node, gw_ctl_ep_id(name), &h, sizeof(h), buf, len,
			      timeout_ms, req->flags & GW_URGENT);
}

int gw_reply(struct gw_client *cl, const struct gw_msg *req, const void *buf, size_t len)
{
	return gw_respond(cl, req, 0, buf, len, -1);
}

int gw_reply_error(struct gw_client *cl, const struct gw_msg *req, const char *reason)
{
	return gw_respond(cl, req, 1, reason ? reason : "", reason ? strlen(reason) : 0, -1);
}

int gw_wait_ms(const struct gw_client *cl)
{
	if (!cl->ncalls)
		return -1;
	/* As next_event: the next call deadline, and a look at the nodes
	 * every 100 ms (a node going down wakes the client, racily). */
	int64_t left = cl->next_deadline_ms - gw_client_now_ms();
	return left < 0 ? 0 : left > 100 ? 100 : (int)left;
}

int gw_arm(struct gw_client *cl, enum gw_wait what)
{
	if (what != GW_WAIT_RECV && what != GW_WAIT_SEND)
		return gw_client_answer(cl, -EINVAL);
	if (gw_client_gone(cl) || gw_chan_gateway_gone(&cl->chan))
		return gw_client_set_dead(cl), -EPIPE;
	bool tx = what == GW_WAIT_SEND;
	eventfd_t v;
	eventfd_read(tx ? cl->chan.efd_tx : cl->chan.efd_rx, &v); /* non-blocking: clears it */
	if (!tx && (cl->kept.head || cl->due.head))
		return 1; /* gw_recv hands these out before the ring */
	return gw_chan_arm(&cl->chan, tx) ? 1 : 0;
}
