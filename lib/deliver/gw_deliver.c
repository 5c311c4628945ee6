/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_deliver: hold a full destination for a bound, then reject until half;
 * wake a client on the receiver's CPU when it must run. */
#include "gw_deliver.h"

bool gw_deliver_open(struct gw_deliver_hold *h, bool below_half)
{
	if (!h->full_since_ns)
		return true;
	if (!below_half)
		return !h->rejecting;
	h->full_since_ns = 0;
	h->rejecting = false;
	return true;
}

bool gw_deliver_full(struct gw_deliver_hold *h, uint64_t now, uint64_t block_ns)
{
	if (h->rejecting)
		return false;
	/* 0 means not full, so a clock started at 0 is kept as 1: that start
	 * alone is counted 1 ns late, every other one is exact. */
	if (!h->full_since_ns)
		h->full_since_ns = now ? now : 1;
	uint64_t held = now > h->full_since_ns ? now - h->full_since_ns : 0;
	if (held < block_ns)
		return true;
	h->rejecting = true;
	return false;
}

bool gw_deliver_owed(struct gw_deliver_hold *h, uint64_t now, uint64_t block_ns,
		     uint32_t read_pos)
{
	uint64_t t = now ? now : 1;
	if (!h->owed_first_ns) {
		h->owed_first_ns = h->owed_since_ns = t;
		h->owed_pos = read_pos;
		return true;
	}
	if (now > h->owed_first_ns && now - h->owed_first_ns >= GW_DELIVER_OWED_BLOCKS * block_ns)
		return false;
	if (read_pos != h->owed_pos) {
		h->owed_since_ns = t;
		h->owed_pos = read_pos;
		return true;
	}
	uint64_t idle = now > h->owed_since_ns ? now - h->owed_since_ns : 0;
	return idle < block_ns;
}

bool gw_deliver_wake_later(struct gw_deliver_wakes *w, uint16_t id, uint64_t now)
{
	for (unsigned k = 0; k < w->n; k++)
		if (w->id[k] == id)
			return true;
	if (w->n == GW_DELIVER_WAKES_MAX)
		return false;
	if (!w->n)
		w->since_ns = now;
	w->id[w->n] = id;
	__atomic_store_n(&w->n, w->n + 1, __ATOMIC_RELAXED);
	return true;
}

enum gw_deliver_wake gw_deliver_wake_due(const struct gw_deliver_wakes *w, uint64_t now,
					 bool work, bool held, bool draining)
{
	if (!w->n)
		return GW_DELIVER_WAKE_NOT;
	if (!work)
		return GW_DELIVER_WAKE_IDLE;
	if (held)
		return GW_DELIVER_WAKE_HELD;
	if (draining)
		return GW_DELIVER_WAKE_STOP;
	/* A clock that seems to step back reads as late: an early wake is safe. */
	return now - w->since_ns >= GW_DELIVER_WAKE_WAIT_NS ? GW_DELIVER_WAKE_AGE : GW_DELIVER_WAKE_NOT;
}
