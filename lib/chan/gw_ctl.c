/* SPDX-License-Identifier: BSD-3-Clause */
/* Serving control requests: see gw_ctl.h. */
#include "gw_ctl.h"

int gw_ctl_serve(const struct gw_ctl_ops *ops, void *ctx, struct gw_ctl_peer *p,
		 struct gw_ctl_msg *m, int *fds)
{
	int nfds = 0;
	m->name[sizeof(m->name) - 1] = '\0';
	if (p->refused) {
		m->status = -EACCES; /* say why, then hang up */
		return GW_CTL_HANGUP;
	}
	switch (m->op) {
	case GW_CTL_HELLO:
		if (m->arg != GW_CTL_VERSION)
			m->status = -EPROTONOSUPPORT;
		else if (p->connected)
			m->status = -EISCONN;
		else
			m->status = ops->hello(ctx, p->chan, m, fds);
		if (m->status > 0) {
			nfds = m->status;
			m->status = 0;
			p->connected = true;
		}
		break;
	case GW_CTL_REGISTER:
		if (!p->connected)
			m->status = -ENOTCONN;
		else if (!gw_ctl_name_ok(m->name, sizeof(m->name)))
			m->status = -EINVAL;
		else if (m->name[0] == GW_CTL_RESERVED)
			m->status = -EPERM; /* the gateway's to give (the reply endpoint) */
		else
			m->status = ops->ep_add(ctx, m->name, p->chan);
		m->arg = gw_ctl_ep_id(m->name);
		break;
	case GW_CTL_UNREGISTER:
		m->status = m->name[0] == GW_CTL_RESERVED ? -EPERM : ops->ep_del(ctx, m->name, p->chan);
		break;
	case GW_CTL_NODE:
		m->status = ops->node(ctx, m);
		break;
	case GW_CTL_SUBSCRIBE: {
		unsigned policy = m->arg & 0xff, key = m->arg >> 8;
		if (!p->connected)
			m->status = -ENOTCONN;
		else if (!gw_ctl_name_ok(m->name, sizeof(m->name)) || m->name[0] == GW_CTL_RESERVED ||
			 policy > GW_CTL_SUB_LATEST || key > GW_CTL_SUB_KEY_MAX ||
			 (policy == GW_CTL_SUB_LATEST) != (key > 0))
			m->status = -EINVAL;
		else
			m->status = ops->sub_add(ctx, m->name, p->chan, policy, key);
		m->arg = gw_ctl_ep_id(m->name);
		break;
	}
	case GW_CTL_UNSUBSCRIBE:
		m->status = gw_ctl_name_ok(m->name, sizeof(m->name)) ? ops->sub_del(ctx, m->name, p->chan)
								      : -EINVAL;
		break;
	default:
		m->status = -EOPNOTSUPP;
	}
	return nfds;
}
