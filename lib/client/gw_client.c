/* SPDX-License-Identifier: BSD-3-Clause */
/* libgridwire: the client API over a gw_chan; see gridwire.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gw_client_int.h"
#include "gw_ctl.h"

/* One request, one reply; fds (up to GW_CTL_FDS) arrive with the reply. */
static int ctl_call(int sock, struct gw_ctl_msg *m, int *fds, int nfds)
{
	if (send(sock, m, sizeof(*m), MSG_NOSIGNAL) != sizeof(*m))
		return -EPIPE;
	char cbuf[CMSG_SPACE(GW_CTL_FDS * sizeof(int))];
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	if (n != sizeof(*m))
		return -EPIPE;
	int got = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)CMSG_DATA(c);
		for (int i = 0; i < k; i++) {
			if (got < nfds)
				fds[got++] = in[i];
			else
				close(in[i]);
		}
	}
	if (m->status == 0 && got != nfds) {
		for (int i = 0; i < got; i++)
			close(fds[i]);
		return -EPROTO;
	}
	return m->status;
}

int gw_connect(const char *socket_path, struct gw_client **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (!socket_path || strlen(socket_path) >= sizeof(sa.sun_path))
		return -EINVAL;
	strcpy(sa.sun_path, socket_path);
	struct gw_client *cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int rc = -errno;
	if (cl->sock < 0)
		goto fail;
	if (connect(cl->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = errno == ENOENT ? -ECONNREFUSED : -errno;
		goto fail;
	}
	struct gw_ctl_msg m = { .op = GW_CTL_HELLO, .arg = GW_CTL_VERSION };
	int fds[GW_CTL_FDS];
	rc = ctl_call(cl->sock, &m, fds, GW_CTL_FDS);
	if (rc < 0)
		goto fail;
	rc = gw_chan_attach(&cl->chan, fds[0], fds[1], fds[2]);
	if (rc < 0) {
		for (int i = 0; i < GW_CTL_FDS; i++)
			close(fds[i]);
		goto fail;
	}
	if ((rc = gw_chan_attach_alive(&cl->chan, fds[3])) < 0) {
		gw_chan_close(&cl->chan);
		goto fail;
	}
	cl->node = (uint16_t)m.arg2;
	cl->chan.hup_fd = cl->sock;
	*out = cl;
	return 0;
fail:
	if (cl->sock >= 0)
		close(cl->sock);
	free(cl);
	return rc;
}

void gw_client_free(struct gw_client *cl)
{
	cl->chan.hup_fd = -1;
	close(cl->sock);
	gw_chan_close(&cl->chan);
	free(cl);
}

_Static_assert(GW_NODE_AUTH == GW_CAP_AUTH && GW_NODE_BATCHING == GW_CAP_BATCHING &&
		       GW_NODE_URGENT == GW_CAP_URGENT && GW_NODE_GRANT == GW_CAP_GRANT &&
		       GW_NODE_TOPICS == GW_CAP_TOPICS,
	       "gridwire.h and the HELLO say the same");

const char *gw_strerror(int err)
{
	switch (err) {
	case -EAGAIN: return "the channel is full (a send) or empty (a receive): try again";
	case -EMSGSIZE: return "larger than the gateway takes (gw_msg_max)";
	case -EINVAL: return "a bad argument (an endpoint name, a node id, flags)";
	case -EEXIST: return "the endpoint name is taken on this node";
	case -EPERM: return "the name is reserved (it starts with '~')";
	case -ENOSPC: return "no room: the gateway's endpoint directory, or this client's 64 services";
	case -ECONNREFUSED: return "no gateway listens on that socket";
	case -EACCES: return "this user may not use the gateway ([node] socket_mode, socket_group)";
	case -EREMOTEIO: return "the handler failed";
	case -EHOSTUNREACH: return "the node is not up";
	case -EHOSTDOWN: return "the node went down with the message in flight (it may have arrived)";
	case -ENOENT: return "no such service or endpoint";
	case -ENOBUFS: return "the destination is not reading (its ring stayed full)";
	case -ETIMEDOUT: return "timed out";
	case -EPIPE: return "the gateway went away";
	case -EOVERFLOW: return "too many messages kept during calls: gw_recv them";
	case -EBUSY: return "too many calls in flight";
	default: return strerror(err < 0 ? -err : err);
	}
}

uint16_t gw_local_node(const struct gw_client *cl)
{
	return cl->node;
}

/* The gateway's word on node, whether or not the gateway still lives. */
static bool node_bit(const struct gw_client *cl, uint16_t node)
{
	if (node >= GW_MAX_NODES)
		return false;
	uint64_t w = __atomic_load_n(&cl->chan.shm->nodes_up[node / 64], __ATOMIC_ACQUIRE);
	return (w >> (node % 64)) & 1;
}

int gw_node_up(const struct gw_client *cl, uint16_t node)
{
	/* With the gateway gone, no node is reachable through it. */
	return !gw_client_gone(cl) && node_bit(cl, node);
}

size_t gw_msg_max(const struct gw_client *cl)
{
	return cl->chan.msg_max;
}

int gw_client_ctl_name(struct gw_client *cl, uint32_t op, const char *endpoint, uint32_t arg)
{
	if (gw_client_gone(cl))
		return -EPIPE;
	if (!endpoint || !gw_ctl_name_ok(endpoint, GW_NAME_MAX))
		return -EINVAL;
	struct gw_ctl_msg m = { .op = op, .arg = arg };
	strncpy(m.name, endpoint, sizeof(m.name) - 1);
	return gw_client_answer(cl, ctl_call(cl->sock, &m, NULL, 0));
}

int gw_register(struct gw_client *cl, const char *endpoint)
{
	return gw_client_ctl_name(cl, GW_CTL_REGISTER, endpoint, 0);
}

int gw_subscribe(struct gw_client *cl, const char *topic, unsigned policy)
{
	unsigned kind = policy & 0xff, key = policy >> 8;
	if (kind == GW_SUB_LATEST && !key)
		key = 8;
	if (kind > GW_SUB_LATEST || key > GW_CTL_SUB_KEY_MAX || (kind == GW_SUB_HOLD && key))
		return gw_client_answer(cl, -EINVAL);
	return gw_client_ctl_name(cl, GW_CTL_SUBSCRIBE, topic, kind | key << 8);
}

int gw_unsubscribe(struct gw_client *cl, const char *topic)
{
	return gw_client_ctl_name(cl, GW_CTL_UNSUBSCRIBE, topic, 0);
}


uint32_t gw_endpoint_id(const char *endpoint)
{
	return gw_ctl_ep_id(endpoint);
}

int64_t gw_client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Is the gateway still there? Its liveness word says at the cost of a load
 * (gw_chan_alive); our control socket also closes when it cuts us off,
 * which is asked when a poll finds nothing, at most once a millisecond.
 */
static int gateway_alive(struct gw_client *cl)
{
	if (gw_client_gone(cl))
		return -EPIPE;
	int64_t now = gw_client_now_ms();
	if (now == __atomic_load_n(&cl->alive_checked_ms, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&cl->alive_checked_ms, now, __ATOMIC_RELAXED);
	if (!gw_chan_gateway_gone(&cl->chan))
		return 0;
	gw_client_set_dead(cl);
	return -EPIPE;
}

/* A deadline (a gw_client_now_ms() value) from a timeout: 0 polls, -1 waits for ever. */
static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : timeout_ms == 0 ? 0 : gw_client_now_ms() + timeout_ms;
}

/*
 * Wait for the channel (TX room or RX data) until deadline_ms (0: do not
 * wait, -1: for ever). 0 when worth looking again, -EAGAIN when not
 * waiting, -ETIMEDOUT once the deadline has passed, -EPIPE when the
 * gateway has gone.
 */
static int wait_chan(struct gw_client *cl, bool for_tx, int64_t deadline_ms)
{
	if (deadline_ms == 0)
		return gateway_alive(cl) < 0 ? -EPIPE : -EAGAIN;
	int left = -1;
	if (deadline_ms > 0) {
		int64_t l = deadline_ms - gw_client_now_ms();
		if (l <= 0)
			return -ETIMEDOUT;
		left = (int)l;
	}
	int rc = gw_chan_wait(&cl->chan, for_tx, left);
	if (rc == -EPIPE)
		gw_client_set_dead(cl);
	return rc == -ETIMEDOUT ? 0 : rc; /* the next call says whether time is up */
}

/* A send to node, or (topic) a publication to topic ep. */
static int send_to(struct gw_client *cl, bool topic, uint16_t node, uint32_t ep, const void *hdr,
		   size_t hlen, const void *buf, size_t len, int timeout_ms, unsigned flags)
{
	/* Nothing is taken once the gateway is known gone: a load per send. */
	if (gw_client_gone(cl))
		return -EPIPE;
	if (flags & ~GW_URGENT)
		return -EINVAL;
	unsigned cls = flags & GW_URGENT ? GW_CLASS_URGENT : GW_CLASS_BULK;
	if (len > cl->chan.msg_max || hlen + len > cl->chan.msg_max)
		return -EMSGSIZE;
	if (!topic && !node_bit(cl, node))
		return gw_client_answer(cl, node >= GW_MAX_NODES || node == 0 ? -EINVAL
									     : -EHOSTUNREACH);
	int64_t deadline = INT64_MIN; /* read from the clock only if the channel is full */
	for (;;) {
		int rc = gw_chan_send_hdr(&cl->chan, cls, node, ep, hdr, (uint32_t)hlen, buf,
					  (uint32_t)len);
		if (rc != -EAGAIN)
			return gw_client_answer(cl, rc);
		if (deadline == INT64_MIN)
			deadline = deadline_of(timeout_ms);
		rc = wait_chan(cl, true, deadline);
		if (rc < 0)
			return gw_client_answer(cl, rc);
	}
}

int gw_client_send(struct gw_client *cl, uint16_t node, uint32_t ep, const void *hdr,
		   size_t hlen, const void *buf, size_t len, int timeout_ms, unsigned flags)
{
	return send_to(cl, false, node, ep, hdr, hlen, buf, len, timeout_ms, flags);
}

int gw_publish(struct gw_client *cl, const char *topic, const void *buf, size_t len,
	       int timeout_ms, unsigned flags)
{
	if (!topic || !gw_ctl_name_ok(topic, GW_NAME_MAX))
		return gw_client_answer(cl, -EINVAL);
	return send_to(cl, true, GW_CHAN_NODE_TOPIC, gw_ctl_ep_id(topic), NULL, 0, buf, len,
		       timeout_ms, flags);
}

int gw_send_id(struct gw_client *cl, uint16_t node, uint32_t endpoint_id, const void *buf,
	       size_t len, int timeout_ms)
{
	return gw_client_send(cl, node, endpoint_id, NULL, 0, buf, len, timeout_ms, 0);
}

int gw_send_flags(struct gw_client *cl, uint16_t node, const char *endpoint, const void *buf,
		  size_t len, int timeout_ms, unsigned flags)
{
	if (!endpoint || !gw_ctl_name_ok(endpoint, GW_NAME_MAX))
		return gw_client_answer(cl, -EINVAL);
	return gw_client_send(cl, node, gw_ctl_ep_id(endpoint), NULL, 0, buf, len, timeout_ms,
			      flags);
}

int gw_send(struct gw_client *cl, uint16_t node, const char *endpoint, const void *buf,
	    size_t len, int timeout_ms)
{
	return gw_send_flags(cl, node, endpoint, buf, len, timeout_ms, 0);
}

int gw_wait_fds(const struct gw_client *cl, enum gw_wait what, int fds[2])
{
	if (what != GW_WAIT_RECV && what != GW_WAIT_SEND)
		return gw_client_answer(cl, -EINVAL);
	fds[0] = what == GW_WAIT_SEND ? cl->chan.efd_tx : cl->chan.efd_rx;
	fds[1] = cl->chan.hup_fd;
	return gw_client_gone(cl);
}

int gw_flush(struct gw_client *cl, int timeout_ms)
{
	if (gateway_alive(cl) < 0)
		return -EPIPE;
	int64_t deadline = deadline_of(timeout_ms ? timeout_ms : 1);
	while (!gw_chan_tx_empty(&cl->chan)) {
		int rc = wait_chan(cl, true, deadline);
		if (rc < 0)
			return gw_client_answer(cl, rc);
	}
	return 0;
}

/*
 * Under load the next burst is microseconds away, and a short spin saves
 * the eventfd round trip through the kernel. But a client that shares its
 * core with the gateway's receiver (or any busy host) holds that core
 * while it spins, so nothing can arrive: after GW_SPIN_MISSES spins in a
 * row that found nothing it sleeps at once, and spins again on one wait
 * in GW_SPIN_PROBE to see whether spinning pays again.
 */
#define GW_SPIN_MISSES 8
#define GW_SPIN_PROBE 64

static bool spin_pays(struct gw_client *cl)
{
	if (cl->spin_misses < GW_SPIN_MISSES)
		return true;
	return ++cl->spin_skips % GW_SPIN_PROBE == 0;
}

/* Spin for data a little: true when it came. */
static bool spin(struct gw_client *cl)
{
	for (int i = 0; i < 256; i++) {
		if (gw_chan_rx_ready(&cl->chan)) {
			cl->spin_misses = 0;
			return true;
		}
		__builtin_ia32_pause();
	}
	cl->spin_misses += cl->spin_misses < GW_SPIN_MISSES;
	return false;
}

/*
 * The gateway has gone, and what it delivered has been read. The sends it
 * had not settled (gw_chan_tx_tail) may or may not have arrived, and no
 * REJECT will come for them: each is told here as one, with -EPIPE, in
 * send order per class, naming its node and endpoint while our ring still
 * holds its descriptor. 0 with *d and *data, or -EPIPE once all are told.
 */
static int doubt_next(struct gw_client *cl, struct gw_chan_desc *d, const uint8_t **data)
{
	if (!cl->doubt_set) {
		for (unsigned k = 0; k < GW_CLASSES; k++) {
			/* One read of each: a send may still land meanwhile (the
			 * binding's sending lock is not ours), and it is told too,
			 * on this call or a later one. */
			uint32_t sent = __atomic_load_n(&cl->chan.tx[k].msgs, __ATOMIC_ACQUIRE);
			uint32_t settled = sent - gw_chan_unsettled_of(&cl->chan, k, sent);
			cl->doubt_next[k] = settled;
		}
		cl->doubt_set = true;
	}
	for (unsigned k = 0; k < GW_CLASSES; k++) {
		uint32_t id = cl->doubt_next[k];
		if (id == __atomic_load_n(&cl->chan.tx[k].msgs, __ATOMIC_ACQUIRE))
			continue;
		cl->doubt_next[k]++;
		struct gw_chan_desc sent = { 0 };
		gw_chan_sent_desc(&cl->chan, k, id, &sent);
		bool urgent = k == GW_CLASS_URGENT;
		cl->doubt_rej = (struct gw_chan_reject){
			.err = -EPIPE, .node = sent.node,
			.msg_id = (id & ~GW_CHAN_MSG_URGENT) | (urgent ? GW_CHAN_MSG_URGENT : 0),
		};
		*d = (struct gw_chan_desc){
			.len = sizeof(cl->doubt_rej), .node = sent.node, .ep = sent.ep,
			.kind = GW_RK_REJECT | (urgent ? GW_CHAN_KIND_URGENT : 0),
		};
		*data = (const uint8_t *)&cl->doubt_rej;
		return 0;
	}
	return -EPIPE;
}

uint64_t gw_unconfirmed(const struct gw_client *cl)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < GW_CLASSES; k++) {
		uint32_t sent = __atomic_load_n(&cl->chan.tx[k].msgs, __ATOMIC_ACQUIRE);
		n += cl->doubt_set ? sent - cl->doubt_next[k] : gw_chan_unsettled_of(&cl->chan, k, sent);
	}
	return n;
}

void gw_client_raw_done(struct gw_client *cl)
{
	if (cl->has_pending) {
		gw_chan_recv_done(&cl->chan, &cl->pending);
		cl->has_pending = 0;
	}
}

int gw_client_raw_recv(struct gw_client *cl, struct gw_chan_desc *d, const uint8_t **data,
		       int64_t deadline_ms)
{
	gw_client_raw_done(cl);
	int rc;
	while ((rc = gw_chan_recv(&cl->chan, &cl->pending, data)) == -EAGAIN) {
		if (deadline_ms && spin_pays(cl) && spin(cl))
			continue;
		rc = wait_chan(cl, false, deadline_ms);
		if (rc == -EPIPE)
			return doubt_next(cl, d, data);
		if (rc < 0)
			return rc;
		/* Woken with nothing to read: the gateway says a node went down
		 * (or the wait ran out); the caller looks at its calls and its
		 * deadline, and waits again. */
		if (!gw_chan_rx_ready(&cl->chan))
			return -ETIMEDOUT;
	}
	if (rc < 0)
		return -EPIPE;
	cl->has_pending = 1;
	*d = cl->pending;
	return 0;
}

/* The nodes, one control request each (there are few). */
int gw_nodes(struct gw_client *cl, struct gw_node_info *out, unsigned max)
{
	if (gateway_alive(cl) < 0)
		return -EPIPE;
	unsigned n = 0;
	for (uint32_t next = 1; next < GW_MAX_NODES; n++) {
		struct gw_ctl_msg m = { .op = GW_CTL_NODE, .arg = next };
		int rc = ctl_call(cl->sock, &m, NULL, 0);
		if (rc == -ENOENT)
			break;
		if (rc < 0)
			return gw_client_answer(cl, rc);
		if (n < max) {
			out[n] = (struct gw_node_info){
				.id = (uint16_t)m.arg, .up = !!(m.arg2 & GW_CTL_NODE_UP),
				.self = !!(m.arg2 & GW_CTL_NODE_SELF),
				.caps = m.arg2 >> GW_CTL_NODE_CAPS_SHIFT,
			};
			m.name[sizeof(m.name) - 1] = '\0';
			snprintf(out[n].name, sizeof(out[n].name), "%s", m.name);
		}
		next = m.arg + 1;
	}
	return (int)n;
}
