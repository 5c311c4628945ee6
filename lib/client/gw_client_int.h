/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libgridwire internals shared by its files, each calling only those
 * before it: gw_client.c (connection, send, raw receive, nodes),
 * gw_call.c (services, calls, the event queue behind gw_recv, and so
 * close and unregister, which undo them) and gw_multi.c (the multi-node
 * patterns).
 */
#ifndef GW_CLIENT_INT_H
#define GW_CLIENT_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "gridwire.h"
#include "gw_chan.h"

#define GW_SERVICES_MAX 64
/* gw_recv looks for dropped REJECTs at least this often. */
#define GW_LOST_EVERY 1024
_Static_assert((GW_LOST_EVERY & (GW_LOST_EVERY - 1)) == 0, "GW_LOST_EVERY: a power of two");

/* An outcome kept for later: a message gw_call() passed over, or a
 * timeout or failure made up by the library. */
struct gw_kept {
	struct gw_kept *next;
	struct gw_msg m;
	uint8_t data[];
};

struct gw_kept_queue {
	struct gw_kept *head, *tail;
	unsigned n;
};

struct gw_call_slot {
	uint32_t id;         /* 0: free */
	uint32_t gen;        /* uses of this slot, the high bits of its ids */
	uint32_t msg_id;     /* of the request, to match a REJECT of it */
	int64_t deadline_ms;
	uint16_t node;
	bool told;           /* the caller has its outcome; what else comes is dropped */
};

struct gw_client {
	int sock;
	uint16_t node;
	struct gw_chan chan;
	struct gw_chan_desc pending; /* handed out by the raw receive, released by the next */
	int has_pending;
	bool dead; /* the gateway went away (its liveness word, or our socket closed) */
	/* Once dead: per class, the next send in doubt to report as a REJECT
	 * (from the gateway's last settled count up to our sends), set when
	 * the first is reported; and that REJECT's payload. */
	bool doubt_set;
	uint32_t doubt_next[GW_CLASSES];
	struct gw_chan_reject doubt_rej;
	int64_t alive_checked_ms;
	/* services and calls (gw_call.c); the tables come with the first call */
	uint32_t services[GW_SERVICES_MAX];
	unsigned nservices;
	uint32_t reply_ep; /* "~call.<channel>", where our calls' replies go */
	struct gw_call_slot *calls; /* GW_CALLS_MAX */
	/* the GW_CALLS_MAX - ncalls free slots, a FIFO from free_head, so a
	 * slot (and its ids) comes back as late as can be */
	uint32_t *free_slots;
	unsigned free_head, ncalls;
	/* requests of the last calls that ended: a REJECT of one is no news
	 * (a request answered, then given up with its node, or timed out) */
	uint32_t ended[GW_CALLS_MAX];
	unsigned nended;
	int64_t next_deadline_ms; /* no call is due before this */
	uint64_t nodes_seen[GW_MAX_NODES / 64]; /* nodes up at the last look */
	struct gw_kept_queue kept; /* for gw_recv, in arrival order */
	struct gw_kept_queue due;  /* made-up outcomes, before the ring */
	struct gw_kept *current;   /* handed out by gw_recv, freed by the next */
	uint32_t recvs;            /* looks at the ring, for GW_LOST_EVERY */
	uint64_t lost;             /* the count a GW_MSG_LOST points to */
	uint64_t late_replies;
	/* spins before sleeping that found nothing, in a row (saturates), and
	 * the waits since the last spin: see spin_pays() in gw_client.c */
	uint8_t spin_misses, spin_skips;
};

int64_t gw_client_now_ms(void);

/* The gateway has gone. Sending and receiving may run on two threads when
 * a caller splits them (the Erlang binding locks them apart): both may see
 * and set it, so it is atomic, and once set it stays. */
static inline bool gw_client_dead(const struct gw_client *cl)
{
	return __atomic_load_n(&cl->dead, __ATOMIC_RELAXED);
}

static inline void gw_client_set_dead(struct gw_client *cl)
{
	__atomic_store_n(&cl->dead, true, __ATOMIC_RELAXED);
}

/*
 * The one place that decides the gateway is gone: -EPIPE once it is known
 * (the flag, or its liveness word, at the cost of a load), else 0. Every
 * call asks it first, and again before it answers with an error, so that
 * no call answers with a consequence of the death (a node read down, a
 * wait run out) where it can give the death itself. The flag only keeps
 * what the word said, so a const client may set it.
 */
static inline int gw_client_gone(const struct gw_client *cl)
{
	if (gw_client_dead(cl))
		return -EPIPE;
	if (gw_chan_gateway_lives(&cl->chan))
		return 0;
	gw_client_set_dead((struct gw_client *)(uintptr_t)cl);
	return -EPIPE;
}

/* A call's answer: rc, or -EPIPE in place of an error once the gateway is gone. */
static inline int gw_client_answer(const struct gw_client *cl, int rc)
{
	return rc < 0 && rc != -EPIPE && gw_client_gone(cl) ? -EPIPE : rc;
}

/*
 * The next message from the channel, waiting until deadline_ms (a
 * gw_client_now_ms() value; 0 polls, -1 waits for ever): 0 with *d and
 * *data (valid until the next call), -ETIMEDOUT/-EAGAIN when nothing
 * came, -EPIPE when the gateway has gone.
 */
int gw_client_raw_recv(struct gw_client *cl, struct gw_chan_desc *d, const uint8_t **data,
		       int64_t deadline_ms);
/* Release the message the last gw_client_raw_recv handed out, if any. */
void gw_client_raw_done(struct gw_client *cl);

/* gw_client.c, for gw_call.c, which holds the call layer's state and so
 * closes (gw_close) and unregisters (gw_unregister) on top of these: the
 * connection's end, and a control request naming an endpoint. */
void gw_client_free(struct gw_client *cl);
int gw_client_ctl_name(struct gw_client *cl, uint32_t op, const char *endpoint, uint32_t arg);

/* Send hdr + buf as one message; timeout_ms and flags as for gw_send_flags. */
int gw_client_send(struct gw_client *cl, uint16_t node, uint32_t ep, const void *hdr,
		   size_t hlen, const void *buf, size_t len, int timeout_ms, unsigned flags);

/* gw_call.c, for gw_multi.c: the next outcome of one of the n calls in
 * ids (0 entries are skipped), waiting as long as their timeouts allow:
 * its index, with the GW_MSG_REPLY in *m, or -ENOBUFS/-EPIPE. */
int gw_call_next_outcome(struct gw_client *cl, const uint32_t *ids, unsigned n,
			 struct gw_msg *m);
/* The caller no longer wants the outcome of call id. */
void gw_call_forget(struct gw_client *cl, uint32_t id);

#endif
