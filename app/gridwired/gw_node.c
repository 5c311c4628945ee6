/* SPDX-License-Identifier: BSD-3-Clause */
/* gridwired: the clock, the idle back-off and the counters' names. */
#define _GNU_SOURCE
#include <sched.h>
#include <time.h>

#include <stdarg.h>
#include <stdio.h>

#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "gw_node.h"

uint64_t gw_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gw_idle(const struct gw_config *c, unsigned *idle_polls)
{
	unsigned k = (*idle_polls)++;
	if (c->idle == GW_IDLE_SPIN || k < c->spin_polls) {
		rte_pause();
		return;
	}
	if (k < c->spin_polls + c->yield_polls) {
		sched_yield();
		return;
	}
	unsigned shift = k - c->spin_polls - c->yield_polls;
	uint64_t us = shift >= 16 ? c->sleep_max_us : (1ull << shift);
	if (us > c->sleep_max_us)
		us = c->sleep_max_us;
	struct timespec ts = { .tv_nsec = (long)(us * 1000) };
	nanosleep(&ts, NULL);
}

struct rte_ring *gw_node_add_ring(struct rte_ring **list, unsigned *n, unsigned elem,
				  unsigned count, const char *fmt, ...)
{
	char name[RTE_RING_NAMESIZE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	struct rte_ring *r = rte_ring_create_elem(name, elem, count, SOCKET_ID_ANY,
						  RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r)
		list[(*n)++] = r;
	return r;
}

void gw_counters_add(struct gw_counters *a, const struct gw_counters *b)
{
	uint64_t *t = (uint64_t *)a;
	const uint64_t *s = (const uint64_t *)b;
	for (size_t k = 0; k < sizeof(*a) / sizeof(uint64_t); k++)
		t[k] += s[k];
}

/* Every counter by name, for the JSON line and for telemetry. */
#define GW_COUNTER(f) { #f, offsetof(struct gw_counters, f) }
const struct gw_counter_name gw_counter_names[] = {
	GW_COUNTER(rx_frames), GW_COUNTER(rx_bytes), GW_COUNTER(tx_frames), GW_COUNTER(tx_bytes),
	GW_COUNTER(data_frames), GW_COUNTER(ack_frames), GW_COUNTER(hello_frames),
	GW_COUNTER(msgs_out), GW_COUNTER(msgs_in), GW_COUNTER(msgs_local),
	GW_COUNTER(bad_frames), GW_COUNTER(bad_crc), GW_COUNTER(not_ours), GW_COUNTER(unknown_peer),
	GW_COUNTER(dup_frames), GW_COUNTER(redundant_frames), GW_COUNTER(beyond_window),
	GW_COUNTER(retrans),
	GW_COUNTER(rejects_sent), GW_COUNTER(rejects_lost), GW_COUNTER(rejects_lost_told),
	GW_COUNTER(reject_unknown_ep),
	GW_COUNTER(reject_dest_full), GW_COUNTER(nombuf), GW_COUNTER(tx_stalls),
	GW_COUNTER(tx_copies_dropped),
	GW_COUNTER(clients_broken), GW_COUNTER(clients_refused), GW_COUNTER(auth_forged),
	GW_COUNTER(auth_replayed), GW_COUNTER(auth_unknown_key), GW_COUNTER(auth_truncated),
	GW_COUNTER(auth_wrong_mode), GW_COUNTER(auth_unsealed), GW_COUNTER(auth_throttled), GW_COUNTER(abandoned_frames), GW_COUNTER(reject_node_down),
	GW_COUNTER(lane_handoffs), GW_COUNTER(auth_handoffs), GW_COUNTER(handoffs_lost),
	GW_COUNTER(urgent_msgs_out), GW_COUNTER(urgent_msgs_in), GW_COUNTER(urgent_frames),
	GW_COUNTER(urgent_retrans), GW_COUNTER(wakes_deferred), GW_COUNTER(wakes_at_age),
	GW_COUNTER(pub_records), GW_COUNTER(pub_unsubscribed), GW_COUNTER(pub_unreachable),
	GW_COUNTER(pub_in), GW_COUNTER(pub_delivered), GW_COUNTER(pub_stored),
	GW_COUNTER(pub_conflated), GW_COUNTER(pub_evicted), GW_COUNTER(pub_refused),
	GW_COUNTER(pub_unsubscribed_in), GW_COUNTER(subs_parts_sent), GW_COUNTER(subs_parts_in),
	GW_COUNTER(subs_applied),
	{ NULL, 0 },
};

int gw_logtype = RTE_LOGTYPE_USER1; /* gridwired registers its own at start */
