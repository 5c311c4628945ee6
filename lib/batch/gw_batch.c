/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_batch: channels to frames; see gw_batch.h for the rule. */
#include <errno.h>
#include <string.h>

#include "gw_batch.h"
#include "gw_wire.h"

void gw_batch_init(struct gw_batcher *b, const struct gw_batch_ops *ops, void *ctx,
		   unsigned cls, uint16_t max_rec, uint16_t quantum)
{
	memset(b, 0, sizeof(*b));
	b->cls = (uint8_t)cls;
	b->ops = ops;
	b->ctx = ctx;
	b->max_rec = max_rec ? max_rec : UINT16_MAX;
	b->quantum = quantum ? quantum : 1;
}

static void ship(struct gw_batcher *b, struct gw_batch_frame *f)
{
	b->ops->ship(b->ctx, f);
	b->frames++;
	f->handle = NULL;
}

/* The open frame to node with room for a record of len bytes; NULL with
 * *err set when the message has to wait (-EAGAIN) or be rejected. */
static struct gw_batch_frame *frame_for(struct gw_batcher *b, uint16_t node, uint16_t len,
					int *err)
{
	struct gw_batch_frame *f = &b->open[node];
	if (f->handle) {
		if (f->nrec < b->max_rec && f->used + GW_REC_HLEN + len <= f->cap)
			return f;
		ship(b, f);
	}
	*err = b->ops->open(b->ctx, node, f);
	if (*err < 0) {
		f->handle = NULL;
		return NULL;
	}
	f->node = node;
	f->used = 0;
	f->nrec = 0;
	if (!f->listed) {
		f->listed = true;
		b->open_nodes[b->nopen++] = node;
	}
	return f;
}

int gw_batch_add(struct gw_batcher *b, uint16_t node, const struct gw_rec *rec)
{
	int err = 0;
	struct gw_batch_frame *f = frame_for(b, node, rec->len, &err);
	if (!f)
		return err;
	err = gw_wire_rec_put(f->payload, f->cap, &f->used, rec);
	if (err == 0)
		f->nrec++;
	return err;
}

static int reject(struct gw_batcher *b, struct gw_chan *c, const struct gw_chan_msg *m, int err)
{
	int rc = b->ops->reject(b->ctx, c, m, err);
	if (rc == 0)
		b->rejects++;
	return rc;
}

/*
 * Publication m of channel c to every node that subscribes to its topic,
 * one PUB record each. -EAGAIN when a lane is full: the nodes it has not
 * reached stay with the channel (gw_chan_tx.fan_left), and a later pass
 * goes on with them alone, whatever other channels it drained meanwhile.
 */
static int publish(struct gw_batcher *b, struct gw_chan *c, const struct gw_chan_msg *m)
{
	struct gw_chan_tx *t = &c->tx[b->cls];
	if (!t->fan_set || t->fan_msg != m->msg_id) {
		memset(t->fan_left, 0, sizeof(t->fan_left));
		b->ops->fanout(b->ctx, m->ep, t->fan_left);
		t->fan_set = true;
		t->fan_msg = m->msg_id;
		bool any = false;
		for (unsigned w = 0; w < GW_MAX_NODES / 64; w++)
			any |= t->fan_left[w] != 0;
		b->pub_unsubscribed += !any;
	}
	for (unsigned w = 0; w < GW_MAX_NODES / 64; w++)
		while (t->fan_left[w]) {
			uint16_t node = (uint16_t)(w * 64 + (unsigned)__builtin_ctzll(t->fan_left[w]));
			int err = 0;
			struct gw_batch_frame *f = frame_for(b, node, m->len, &err);
			if (err == -EAGAIN)
				return -EAGAIN;
			struct gw_rec r = {
				.kind = GW_RK_PUB, .len = m->len, .dst_ep = m->ep,
				.src_chan = (uint16_t)c->chan_id, .msg_id = m->msg_id, .data = m->data,
			};
			if (f && gw_wire_rec_put(f->payload, f->cap, &f->used, &r) == 0) {
				f->nrec++;
				b->pub_records++;
			} else {
				b->pub_unreachable++; /* its node is not up (or, msg_max said no, too big) */
			}
			t->fan_left[w] &= t->fan_left[w] - 1;
		}
	t->fan_set = false;
	return 0;
}

/* Pack up to quantum messages of one channel; false if a window stopped it. */
static bool drain(struct gw_batcher *b, struct gw_chan *c, unsigned *taken)
{
	struct gw_chan_msg m[GW_CHAN_BURST];
	unsigned left = b->quantum;
	while (left) {
		unsigned n = gw_chan_peek(c, b->cls, m, left < GW_CHAN_BURST ? left : GW_CHAN_BURST);
		if (n == 0)
			return true;
		unsigned i;
		for (i = 0; i < n; i++) {
			if (m[i].node == GW_CHAN_NODE_TOPIC) {
				if (publish(b, c, &m[i]) == -EAGAIN)
					break;
				continue;
			}
			int err = 0;
			struct gw_batch_frame *f = frame_for(b, m[i].node, m[i].len, &err);
			if (!f && err != -EAGAIN)
				err = reject(b, c, &m[i], err);
			if (err == -EAGAIN)
				break;
			if (!f)
				continue;
			struct gw_rec r = {
				.kind = GW_RK_MSG, .len = m[i].len, .dst_ep = m[i].ep,
				.src_chan = (uint16_t)c->chan_id, .msg_id = m[i].msg_id,
				.data = m[i].data,
			};
			if (gw_wire_rec_put(f->payload, f->cap, &f->used, &r) < 0) {
				/* Larger than a frame: msg_max should have stopped it. */
				if (reject(b, c, &m[i], -EMSGSIZE) == -EAGAIN)
					break;
				continue;
			}
			f->nrec++;
		}
		gw_chan_consume(c, b->cls, i);
		*taken += i;
		left -= i;
		if (i < n) {
			b->full_stops++;
			return false;
		}
	}
	return true;
}

unsigned gw_batch_pass(struct gw_batcher *b, struct gw_chan *const *chans, unsigned nchans)
{
	unsigned taken = 0;
	/* When windows are the limit, the room a pass finds goes to the
	 * channels first in line: start each pass after the one a window
	 * stopped last time, or the later channels would never get any. */
	unsigned start = nchans ? b->first % nchans : 0;
	bool stopped = false;
	for (unsigned j = 0; j < nchans; j++) {
		unsigned k = (start + j) % nchans;
		if (!drain(b, chans[k], &taken) && !stopped) {
			stopped = true;
			b->first = k + 1;
		}
	}
	/* Never wait for a frame to fill: ship whatever this pass gathered. */
	for (unsigned k = 0; k < b->nopen; k++) {
		struct gw_batch_frame *f = &b->open[b->open_nodes[k]];
		f->listed = false;
		if (f->handle)
			ship(b, f);
	}
	b->nopen = 0;
	b->msgs += taken;
	return taken;
}
