/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every role of gridwired shares: this node as its frames name it,
 * the run state, the per-lcore counters, the clock and the idle back-off.
 * Nothing here belongs to one role.
 */
#ifndef GW_NODE_H
#define GW_NODE_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_log.h>
#include <rte_mempool.h>

#include "gw_config.h"
#include "gw_wire.h"

extern int gw_logtype;
#define GW_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, gw_logtype, "gridwired: " fmt "\n", ##__VA_ARGS__)

#define GW_LANES_MAX (GW_CONFIG_MAX_WORKERS > 0 ? GW_CONFIG_MAX_WORKERS : 1)
/* Lane state slots: worker w's bulk lane is slot w, its urgent lane (w |
 * GW_LANE_URGENT on the wire) slot GW_LANES_MAX + w. */
#define GW_LANE_SLOTS (2 * GW_LANES_MAX)
static inline bool gw_lane_valid(uint16_t lane)
{
	return (lane & ~GW_LANE_URGENT) < GW_LANES_MAX;
}
static inline unsigned gw_lane_slot(uint16_t lane)
{
	return (lane & ~GW_LANE_URGENT) + (lane & GW_LANE_URGENT ? GW_LANES_MAX : 0);
}
static inline uint16_t gw_lane_of_slot(unsigned slot)
{
	return (uint16_t)(slot < GW_LANES_MAX ? slot : (slot - GW_LANES_MAX) | GW_LANE_URGENT);
}
#define GW_RECEIVERS_MAX (GW_CONFIG_MAX_RECEIVERS > 0 ? GW_CONFIG_MAX_RECEIVERS : 1)
#define GW_LCORES_MAX (1 + GW_CONFIG_MAX_WORKERS + GW_CONFIG_MAX_RECEIVERS)

struct gw_auth_keys;
struct gw_links;
struct rte_ring;

#define GW_LOOPQ 1024 /* frames a worker has built for this node, not yet delivered */

/* A worker's frames for this node itself: the ring its receiver takes them
 * from, and how many of them that receiver has delivered in full (its
 * word, on a line of its own; the worker reads it to settle what its
 * clients sent to this node). */
struct gw_loopback {
	struct rte_ring *ring;
	alignas(64) volatile uint64_t done;
};

/* This gateway, as its frames say it; set at init, read by every lcore. */
struct gw_node {
	const struct gw_config *cfg;
	struct rte_mempool *pool; /* the port's mbufs */
	const struct gw_links *links; /* the port's, which its frames travel on */
	struct gw_addr self;
	uint32_t epoch;
	uint32_t payload_max;
	/* [auth] key_file: every frame tagged (or encrypted) and checked;
	 * NULL: off. The control thread loads keys, the peers role notes
	 * which of them each peer holds (gw_auth.h). */
	struct gw_auth_keys *auth;
	bool draining; /* shutting down: take no new messages (atomic) */
	bool stop;     /* lcores other than the main one return (atomic) */
};

/* One lcore's counters, written by the roles it runs; the stats sum them. */
struct gw_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t data_frames, ack_frames, hello_frames;
	uint64_t msgs_out, msgs_in, msgs_local;
	uint64_t bad_frames, bad_crc, not_ours, unknown_peer;
	uint64_t dup_frames, redundant_frames, beyond_window, retrans;
	uint64_t rejects_sent, rejects_lost, rejects_lost_told, reject_unknown_ep, reject_dest_full;
	uint64_t nombuf, tx_stalls, tx_copies_dropped, clients_broken, clients_refused;
	uint64_t auth_forged, auth_replayed, auth_unknown_key, auth_truncated, auth_wrong_mode;
	uint64_t auth_unsealed, auth_throttled;
	uint64_t abandoned_frames, reject_node_down;
	uint64_t lane_handoffs, auth_handoffs, handoffs_lost;
	uint64_t urgent_msgs_out, urgent_msgs_in, urgent_frames, urgent_retrans;
	uint64_t wakes_deferred, wakes_at_age; /* clients asleep on a receiver's CPU (lib/deliver) */
	/* topics, at a publisher's gateway (the batchers' counts, summed by
	 * gw_gateway_totals): PUB records made (one per subscribing node),
	 * publications nobody subscribed to, records for a node not reachable */
	uint64_t pub_records, pub_unsubscribed, pub_unreachable;
	/* topics, at a subscriber's gateway: PUB records in, deliveries into
	 * subscribers, those a latest subscriber's store took (then replaced
	 * by a newer of their key, or given way for room), deliveries refused
	 * (a hold subscriber full past the bound, or too big for its ring),
	 * records for a topic nobody here subscribes to (any more) */
	uint64_t pub_in, pub_delivered, pub_stored, pub_conflated, pub_evicted, pub_refused;
	uint64_t pub_unsubscribed_in;
	/* topics' advertisements: parts sent, parts taken, whole ones that
	 * changed what a peer subscribes to (a refresh of the same does not) */
	uint64_t subs_parts_sent, subs_parts_in, subs_applied;
};
/* Summed field by field as an array of counters. */
_Static_assert(sizeof(struct gw_counters) % sizeof(uint64_t) == 0, "counters are uint64_t only");

struct gw_counter_name {
	const char *name;
	size_t off;
};
extern const struct gw_counter_name gw_counter_names[]; /* ends with a NULL name */

/* a += b, counter by counter. */
void gw_counters_add(struct gw_counters *a, const struct gw_counters *b);

uint64_t gw_clock_ns(void);

struct rte_ring;
/* A ring between two lcores (one producer, one consumer) of count
 * elem-byte elements, named by fmt, appended to list[*n]; NULL when out
 * of memory. */
struct rte_ring *gw_node_add_ring(struct rte_ring **list, unsigned *n, unsigned elem,
				  unsigned count, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Nothing to do: spin, then yield, then sleep for growing spans up to
 * [idle] sleep_max_us. */
void gw_idle(const struct gw_config *c, unsigned *idle_polls);

#endif
