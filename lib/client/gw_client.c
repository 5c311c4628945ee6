/* SPDX-License-Identifier: BSD-3-Clause */
/* libgridwire: the client API over a gw_chan; see gridwire.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gridwire.h"
#include "gw_chan.h"
#include "gw_ctl.h"

struct gw_client {
	int sock;
	uint16_t node;
	struct gw_chan chan;
	struct gw_chan_desc pending; /* handed out by gw_recv, released by the next */
	int has_pending;
	bool dead; /* the gateway closed our control socket */
	int64_t alive_checked_ms;
};

/* One request, one reply; fds (up to 3) arrive with the reply. */
static int ctl_call(int sock, struct gw_ctl_msg *m, int *fds, int nfds)
{
	if (send(sock, m, sizeof(*m), MSG_NOSIGNAL) != sizeof(*m))
		return -EPIPE;
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
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
	int fds[3];
	rc = ctl_call(cl->sock, &m, fds, 3);
	if (rc < 0)
		goto fail;
	rc = gw_chan_attach(&cl->chan, fds[0], fds[1], fds[2]);
	if (rc < 0) {
		for (int i = 0; i < 3; i++)
			close(fds[i]);
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

void gw_close(struct gw_client *cl)
{
	if (!cl)
		return;
	cl->chan.hup_fd = -1;
	close(cl->sock);
	gw_chan_close(&cl->chan);
	free(cl);
}

uint16_t gw_local_node(const struct gw_client *cl)
{
	return cl->node;
}

int gw_node_up(const struct gw_client *cl, uint16_t node)
{
	if (node >= GW_MAX_NODES)
		return 0;
	uint64_t w = __atomic_load_n(&cl->chan.shm->nodes_up[node / 64], __ATOMIC_ACQUIRE);
	return (int)((w >> (node % 64)) & 1);
}

size_t gw_msg_max(const struct gw_client *cl)
{
	return cl->chan.msg_max;
}

static int ctl_name(struct gw_client *cl, uint32_t op, const char *endpoint)
{
	if (!endpoint || !gw_ctl_name_ok(endpoint, GW_NAME_MAX))
		return -EINVAL;
	struct gw_ctl_msg m = { .op = op };
	strncpy(m.name, endpoint, sizeof(m.name) - 1);
	return ctl_call(cl->sock, &m, NULL, 0);
}

int gw_register(struct gw_client *cl, const char *endpoint)
{
	return ctl_name(cl, GW_CTL_REGISTER, endpoint);
}

int gw_unregister(struct gw_client *cl, const char *endpoint)
{
	return ctl_name(cl, GW_CTL_UNREGISTER, endpoint);
}

uint32_t gw_endpoint_id(const char *endpoint)
{
	return gw_ctl_ep_id(endpoint);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Is the gateway still there? Asked when a poll finds nothing, at most once
 * a millisecond, so a client polling a dead gateway hears -EPIPE rather
 * than -EAGAIN for ever, without a system call on every empty poll.
 */
static int gateway_alive(struct gw_client *cl)
{
	if (cl->dead)
		return -EPIPE;
	int64_t now = now_ms();
	if (now == cl->alive_checked_ms)
		return 0;
	cl->alive_checked_ms = now;
	cl->dead = gw_chan_gateway_gone(&cl->chan);
	return cl->dead ? -EPIPE : 0;
}

/* Wait for the channel (TX room or RX data) within what is left of timeout_ms. */
static int wait_chan(struct gw_client *cl, bool for_tx, int timeout_ms, int64_t start)
{
	if (timeout_ms == 0)
		return gateway_alive(cl) < 0 ? -EPIPE : -EAGAIN;
	int left = -1;
	if (timeout_ms > 0) {
		int64_t l = timeout_ms - (now_ms() - start);
		if (l <= 0)
			return -ETIMEDOUT;
		left = (int)l;
	}
	int rc = gw_chan_wait(&cl->chan, for_tx, left);
	if (rc == -EPIPE)
		cl->dead = true;
	return rc == -ETIMEDOUT && timeout_ms > 0 ? rc : (rc < 0 && rc != -ETIMEDOUT ? rc : 0);
}

int gw_send_id(struct gw_client *cl, uint16_t node, uint32_t endpoint_id, const void *buf,
	       size_t len, int timeout_ms)
{
	if (len > cl->chan.msg_max)
		return -EMSGSIZE;
	if (!gw_node_up(cl, node))
		return node >= GW_MAX_NODES || node == 0 ? -EINVAL : -EHOSTUNREACH;
	int64_t start = timeout_ms > 0 ? now_ms() : 0;
	for (;;) {
		int rc = gw_chan_send(&cl->chan, node, endpoint_id, buf, (uint32_t)len);
		if (rc != -EAGAIN)
			return rc;
		rc = wait_chan(cl, true, timeout_ms, start);
		if (rc < 0)
			return rc;
	}
}

int gw_send(struct gw_client *cl, uint16_t node, const char *endpoint, const void *buf,
	    size_t len, int timeout_ms)
{
	if (!endpoint || !gw_ctl_name_ok(endpoint, GW_NAME_MAX))
		return -EINVAL;
	return gw_send_id(cl, node, gw_ctl_ep_id(endpoint), buf, len, timeout_ms);
}

int gw_flush(struct gw_client *cl, int timeout_ms)
{
	int64_t start = timeout_ms > 0 ? now_ms() : 0;
	uint32_t tail;
	while ((tail = __atomic_load_n(&cl->chan.shm->tx_tail, __ATOMIC_ACQUIRE)) != cl->chan.head) {
		cl->chan.seen_tail = tail; /* the value just compared, not a newer one */
		int rc = wait_chan(cl, true, timeout_ms < 0 ? -1 : (timeout_ms ? timeout_ms : 1), start);
		if (rc < 0)
			return rc == -EAGAIN ? -ETIMEDOUT : rc;
	}
	return 0;
}

int gw_recv(struct gw_client *cl, struct gw_msg *m, int timeout_ms)
{
	if (cl->has_pending) {
		gw_chan_recv_done(&cl->chan, &cl->pending);
		cl->has_pending = 0;
	}
	int64_t start = timeout_ms > 0 ? now_ms() : 0;
	const uint8_t *data;
	int rc;
	while ((rc = gw_chan_recv(&cl->chan, &cl->pending, &data)) == -EAGAIN) {
		/* Under load the next burst is microseconds away: a short spin
		 * saves the eventfd round trip through the kernel. */
		for (int i = 0; i < 256 && timeout_ms && !gw_chan_rx_ready(&cl->chan); i++)
			__builtin_ia32_pause();
		if (gw_chan_rx_ready(&cl->chan))
			continue;
		rc = wait_chan(cl, false, timeout_ms, start);
		if (rc < 0)
			return rc;
	}
	if (rc < 0)
		return -EPIPE;
	cl->has_pending = 1;
	const struct gw_chan_desc *d = &cl->pending;
	memset(m, 0, sizeof(*m));
	m->endpoint = d->ep;
	m->node = d->node;
	m->sender = d->chan;
	if (d->kind == GW_RK_REJECT && d->len >= sizeof(struct gw_chan_reject)) {
		struct gw_chan_reject r;
		memcpy(&r, data, sizeof(r));
		m->kind = GW_MSG_REJECT;
		m->error = r.err;
		m->msg_id = r.msg_id;
		return 0;
	}
	m->kind = GW_MSG_DATA;
	m->data = data;
	m->len = d->len;
	return 0;
}
