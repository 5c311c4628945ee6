/* SPDX-License-Identifier: BSD-3-Clause */
/* The way into a worker for the other roles: see gw_worker_proxy.h. */
#include <errno.h>

#include "gw_worker_proxy.h"

int gw_worker_post_ack(struct gw_worker_proxy *px, uint16_t node, uint16_t lane,
		       const struct gw_ack *ack, uint64_t now)
{
	struct gw_ack_msg a = { .node = node, .lane = lane, .ack = *ack };
	if (px->direct) {
		px->calls->ack(px->direct, &a, now);
		return 0;
	}
	return rte_ring_sp_enqueue_elem(px->acks, &a, sizeof(a)) == 0 ? 0 : -ENOBUFS;
}

int gw_worker_post_reject(struct gw_worker_proxy *px, const struct gw_reject *rj)
{
	return rte_ring_sp_enqueue_elem(px->rejects, (void *)rj, sizeof(*rj)) == 0 ? 0 : -EBUSY;
}

int gw_worker_post_cmd(struct gw_worker_proxy *px, const struct gw_cmd *cmd)
{
	if (px->direct) {
		px->calls->cmd(px->direct, cmd);
		return 0;
	}
	return rte_ring_sp_enqueue_elem(px->cmds, (void *)cmd, sizeof(*cmd)) == 0 ? 0 : -EBUSY;
}
