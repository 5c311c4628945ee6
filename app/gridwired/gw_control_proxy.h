/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The way into the control role for the receivers: the parts of peers'
 * topic advertisements (SUBS records), which the control role puts
 * together and applies to the topics it publishes. Always a ring, on the
 * main lcore too: applying one may wait for a grace period, which a
 * receiver must not do in the middle of its step.
 *
 * Receivers include this header, not gw_control.h, to post.
 */
#ifndef GW_CONTROL_PROXY_H
#define GW_CONTROL_PROXY_H

#include <stdint.h>

#include <rte_ring.h>

#include "gw_wire.h"

/* A SUBS record's data, as it came from node. */
struct gw_subs_msg {
	uint16_t node;
	uint16_t len;
	uint8_t data[GW_SUBS_HLEN + GW_SUBS_ENTRIES_MAX * GW_SUBS_ENTRY];
};

/* 0; -EBUSY when the ring is full (hold the record and try again), or
 * -EMSGSIZE when the record is longer than any SUBS record may be. */
int gw_control_post_subs(struct rte_ring *to_ctl, uint16_t node, const uint8_t *data,
			 uint16_t len);

#endif
