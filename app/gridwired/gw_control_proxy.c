/* SPDX-License-Identifier: BSD-3-Clause */
/* The way into the control role for the receivers: see gw_control_proxy.h. */
#include <errno.h>
#include <string.h>

#include "gw_control_proxy.h"

int gw_control_post_subs(struct rte_ring *to_ctl, uint16_t node, const uint8_t *data,
			 uint16_t len)
{
	struct gw_subs_msg m = { .node = node, .len = len };
	if (len > sizeof(m.data))
		return -EMSGSIZE;
	memcpy(m.data, data, len);
	return rte_ring_sp_enqueue_elem(to_ctl, &m, sizeof(m)) == 0 ? 0 : -EBUSY;
}
