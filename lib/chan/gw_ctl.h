/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_ctl: the control-socket messages between a client and its gateway.
 *
 * A client connects to the gateway's Unix SOCK_SEQPACKET socket and sends
 * HELLO; the reply carries its channel (memfd and two eventfds) and the
 * gateway's liveness page (gw_chan_alive), passed with SCM_RIGHTS. REGISTER/UNREGISTER name endpoints. Closing the socket (or
 * dying) ends the session: the gateway reclaims the channel and endpoints.
 *
 * Endpoint ids are a hash of the name, so a sender names a remote endpoint
 * without a lookup; a gateway refuses to register a name whose id another
 * local name already holds.
 */
#ifndef GW_CTL_H
#define GW_CTL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "gw_wire.h"

#define GW_CTL_VERSION 2 /* 2: HELLO's reply carries the liveness page */
#define GW_CTL_FDS 4     /* with HELLO's reply: memfd, eventfds rx and tx, liveness page */

enum gw_ctl_op {
	GW_CTL_HELLO = 1,      /* arg: GW_CTL_VERSION; reply arg: chan id, arg2: node id, fds */
	GW_CTL_REGISTER = 2,   /* name; reply arg: endpoint id */
	GW_CTL_UNREGISTER = 3, /* name */
	GW_CTL_NODE = 4,       /* arg: first node id to look at; reply: the next node this
				* gateway knows (itself included) at or after it: arg id,
				* arg2 GW_CTL_NODE_* flags, name; -ENOENT past the last */
	GW_CTL_SUBSCRIBE = 5,  /* name: a topic; arg: GW_CTL_SUB_* | key length << 8 */
	GW_CTL_UNSUBSCRIBE = 6, /* name: a topic */
};

#define GW_CTL_SUB_HOLD 0u
#define GW_CTL_SUB_LATEST 1u
#define GW_CTL_SUB_KEY_MAX 64u /* GW_TOPIC_KEY_MAX */

#define GW_CTL_NODE_UP 1u
#define GW_CTL_NODE_SELF 2u
#define GW_CTL_NODE_CAPS_SHIFT 8 /* the node's GW_CAP_* bits, above the flags */

/*
 * Names starting with '~' are the library's own: "~call.<channel id>" is
 * where the replies to a client's calls go; the gateway registers it for
 * each client at HELLO, and no client may register a '~' name.
 */
#define GW_CTL_RESERVED '~'
static inline void gw_ctl_reply_ep_name(char *buf, size_t cap, uint32_t chan_id)
{
	snprintf(buf, cap, "~call.%u", chan_id);
}

struct gw_ctl_msg {
	uint32_t op;
	int32_t status; /* reply: 0 or a negative errno */
	uint32_t arg, arg2;
	char name[GW_NAME_MAX];
};

/* The gateway's answer to a request, with up to GW_CTL_FDS fds (SCM_RIGHTS); 0 or -errno. */
static inline int gw_ctl_reply(int sock, struct gw_ctl_msg *m, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(GW_CTL_FDS * sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof(*m) ? 0 : -errno;
}

/* FNV-1a of the name; 0 is never an endpoint id. */
static inline uint32_t gw_ctl_ep_id(const char *name)
{
	uint32_t h = 2166136261u;
	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h ? h : 1;
}

/* A valid endpoint name: 1..GW_NAME_MAX-1 printable characters, no spaces. */
static inline int gw_ctl_name_ok(const char *name, size_t cap)
{
	size_t i;
	for (i = 0; i < cap && name[i]; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return 0;
	return i > 0 && i < cap && i < GW_NAME_MAX;
}

/*
 * Serving a request: the checks and the order of them here (pure, tested
 * and fuzzed without a gateway), the effects through ops (the gateway's
 * channels, directory and peers).
 */
struct gw_ctl_ops {
	/* HELLO from a new client: its channel made, m->arg and m->arg2 set,
	 * fds[0..GW_CTL_FDS-1] to pass; GW_CTL_FDS or a negative errno. */
	int (*hello)(void *ctx, uint16_t chan, struct gw_ctl_msg *m, int *fds);
	/* An endpoint for chan, and its removal (gw_dir_add and gw_dir_del's
	 * answers). */
	int (*ep_add)(void *ctx, const char *name, uint16_t chan);
	int (*ep_del)(void *ctx, const char *name, uint16_t chan);
	/* NODE: m filled from m->arg on; 0 or -ENOENT. */
	int (*node)(void *ctx, struct gw_ctl_msg *m);
	/* A subscription of chan to a topic (policy GW_CTL_SUB_*, key_len for
	 * LATEST), and its end (gw_topic_subscribe and _unsubscribe's answers). */
	int (*sub_add)(void *ctx, const char *topic, uint16_t chan, unsigned policy,
		       unsigned key_len);
	int (*sub_del)(void *ctx, const char *topic, uint16_t chan);
};

/* A client as its requests see it. */
struct gw_ctl_peer {
	uint16_t chan;
	bool refused;   /* not allowed by the socket's credentials check */
	bool connected; /* its HELLO went through */
};

#define GW_CTL_HANGUP (-1)

/*
 * Serve m, as received whole from p, in place: m becomes the reply, with
 * its status. Returns how many of fds go with it (0 or GW_CTL_FDS), or GW_CTL_HANGUP
 * when the client must go once it has the reply (refused).
 */
int gw_ctl_serve(const struct gw_ctl_ops *ops, void *ctx, struct gw_ctl_peer *p,
		 struct gw_ctl_msg *m, int *fds);

#endif
