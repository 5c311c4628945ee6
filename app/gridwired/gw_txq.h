/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port TX. Each lcore owns one TX queue of the port (gw_layout places it)
 * and every role on that lcore sends through it: frames are sealed (and
 * tagged, with [auth]) by the lcore that sends them, queued, and handed to
 * the PMD once per loop.
 *
 * With a parallel port the queue is that TX queue of every member, and each
 * frame goes out on every member that is live: the same mbuf, one
 * reference per member (PMDs only read what they send). A member may take
 * fewer frames than another; the queue keeps a frame until every live
 * member has it, and a member that falls half a queue behind the best one
 * gives up its copies (counted), so a slow or dead member never holds the
 * others up.
 *
 * Each class of traffic has its own queue here, and the urgent one goes
 * to the PMD first and to a TX queue of its own where the lcore has one
 * (a worker's: gw_layout.h): an urgent frame never waits behind bulk
 * frames, neither here nor in the NIC's ring.
 *
 * With [auth] mode encrypt a frame is encrypted into an mbuf of its own:
 * the lane keeps the plaintext, and each time it goes (again) it is
 * sealed afresh, under a new counter.
 */
#ifndef GW_TXQ_H
#define GW_TXQ_H

#include <rte_mbuf.h>

#include "gw_auth.h"
#include "gw_node.h"
#include "gw_port.h"

#define GW_TXQ_MAX 256

/* Frames of one class waiting for the PMD. */
struct gw_txq_fifo {
	unsigned n;
	uint16_t taken[GW_CONFIG_MAX_MEMBERS]; /* parallel: of m[0..n), what each link took */
	struct rte_mbuf *m[GW_TXQ_MAX];
};

struct gw_txq {
	const struct gw_node *node;
	const struct gw_links *links;
	uint16_t queue[GW_CLASSES]; /* the TX queue of each class */
	struct gw_auth_tx auth; /* this lcore's counter (its slot is the queue) */
	struct gw_counters *st; /* its lcore's */
	uint64_t last_tx_ns;
	struct gw_txq_fifo f[GW_CLASSES];
};

void gw_txq_init(struct gw_txq *q, const struct gw_node *node, const struct gw_links *links,
		 uint16_t queue, uint16_t queue_urgent, struct gw_counters *st,
		 uint64_t auth_start);
/* Queue a sealed frame of class cls; the NIC refusing everything frees it (counted). */
void gw_txq_put(struct gw_txq *q, struct rte_mbuf *m, unsigned cls);
/* A lane's frame sent again: sealed with a fresh [auth] counter and queued;
 * the lane keeps its reference. */
void gw_txq_resend(struct gw_txq *q, struct rte_mbuf *m, unsigned cls);
/* May a frame of class cls be queued without one being refused? (One
 * place is kept for an ACK or HELLO.) */
static inline bool gw_txq_room(const struct gw_txq *q, unsigned cls)
{
	return q->f[cls].n < GW_TXQ_MAX - 1;
}
/* Hand what is queued to the PMD; also an empty burst every 10 ms, which
 * bond mode 4 needs to send its LACP frames. */
void gw_txq_flush(struct gw_txq *q, uint64_t now);
/* Hand the urgent frames to the PMD now, not at the end of the loop. */
void gw_txq_flush_urgent(struct gw_txq *q);
void gw_txq_fini(struct gw_txq *q);

/* A frame to fill from GW_FRAME_MIN on; NULL (counted) when out of mbufs. */
struct rte_mbuf *gw_txq_alloc(struct gw_txq *q);
/* Seal a frame whose payload is in place and queue it for dst, in the
 * class of its lane (HELLOs are bulk). auth_gen: the [auth] generation to
 * seal with, 0 for the one dst holds (a HELLO goes under each). */
void gw_txq_send(struct gw_txq *q, struct rte_mbuf *m, const struct gw_addr *dst,
		 struct gw_hdr *h, uint32_t auth_gen);

#endif
