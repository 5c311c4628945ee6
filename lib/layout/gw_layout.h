/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_layout: the one place that decides which lcore of gridwired runs
 * which role and owns which queues, like the lcore table of DPDK's l3fwd
 * (pure C). From [lcores] workers = W
 * and receivers = R:
 *
 *   entry 0          main lcore: peers and control; worker 0 if W = 0,
 *                    receiver 0 (and so every RX queue) if R = 0
 *   entries 1..W     worker i-1
 *   entries W+1..    receiver i-W-1
 *
 * Entry i sends on TX queue i (its auth slot too), so the port has one
 * queue pair per entry, and then one more per worker for its urgent
 * frames: worker w's urgent TX queue is n + w (n entries). RX queue q is
 * polled by receiver q mod R: on the cable a peer's worker i sends on
 * queue i + 1 and so arrives on our queue i + 1, which spreads the lanes
 * over the receivers; with RSS any queue will do, since a lane's first
 * frame decides its receiver. A receiver polls its urgent RX queues
 * (n and up) first, so on the cable, where our TX queue q is the peer's RX
 * queue q, an urgent frame never waits behind bulk frames in a NIC ring.
 * (With RSS the flow hash places it: only a flow rule could.)
 */
#ifndef GW_LAYOUT_H
#define GW_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_config.h"

#define GW_LAYOUT_MAX (1 + GW_CONFIG_MAX_WORKERS + GW_CONFIG_MAX_RECEIVERS)
#define GW_LAYOUT_QUEUES (GW_LAYOUT_MAX + GW_CONFIG_MAX_WORKERS)

struct gw_layout_entry {
	unsigned lcore_id;
	uint16_t txq;
	uint16_t txq_urgent; /* its worker's urgent queue; txq when it has no worker */
	int worker;   /* index, or -1 */
	int receiver; /* index, or -1 */
	bool main;
	uint16_t nrxq, nrxq_urgent; /* the first nrxq_urgent of rxq are urgent queues */
	uint16_t rxq[GW_LAYOUT_QUEUES];
};

struct gw_layout {
	unsigned n;       /* entries */
	unsigned nqueues; /* the port's queue pairs: n + workers */
	unsigned workers;   /* at least 1 */
	unsigned receivers; /* at least 1 */
	struct gw_layout_entry e[GW_LAYOUT_MAX];
};

/*
 * Plan for workers and receivers on the given lcores (the main one
 * first). -EINVAL with one line in err when there are too few.
 */
int gw_layout_plan(struct gw_layout *l, unsigned workers, unsigned receivers,
		   const unsigned *lcores, unsigned nlcores, char *err, size_t errlen);
/* An entry's roles ("main worker0 receiver0"; main = peers and control)
 * and RX queues ("6u,0,2,4": urgent ones marked), as text. */
void gw_layout_roles(const struct gw_layout_entry *e, char *buf, size_t len);
void gw_layout_rx_queues(const struct gw_layout_entry *e, char *buf, size_t len);
/* Entry i as one line of the table, e.g. "lcore 3: tx queue 3, rx queues
 * [6u,0,2,4], receiver0", or "lcore 1: tx queues 1 and 5 (urgent),
 * rx queues [], worker0". */
void gw_layout_describe(const struct gw_layout *l, unsigned i, char *buf, size_t len);

#endif
