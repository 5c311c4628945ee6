/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control role: clients connect over a Unix SOCK_SEQPACKET socket, get
 * a channel, name endpoints, and are reclaimed when the socket closes (a
 * crashed client's socket closes too) or when they break their channel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <pwd.h>
#include <grp.h>

#include "gw_ctl.h"
#include "gw_gateway.h"

#define GW_EP_MASK (GW_EP_TABLE - 1)

struct gw_ep *gw_ctl_ep_find(struct gw_gateway *g, uint32_t id)
{
	for (uint32_t i = id & GW_EP_MASK;; i = (i + 1) & GW_EP_MASK) {
		if (g->eps[i].id == id)
			return &g->eps[i];
		if (g->eps[i].id == 0)
			return NULL;
	}
}

static int ep_add(struct gw_gateway *g, const char *name, uint16_t chan_id)
{
	uint32_t id = gw_ctl_ep_id(name);
	struct gw_ep *e = gw_ctl_ep_find(g, id);
	if (e)
		return e->chan_id == chan_id && !strcmp(e->name, name) ? 0 : -EEXIST;
	if (g->neps >= GW_EP_TABLE / 2)
		return -ENOSPC;
	uint32_t i = id & GW_EP_MASK;
	while (g->eps[i].id)
		i = (i + 1) & GW_EP_MASK;
	g->eps[i].id = id;
	g->eps[i].chan_id = chan_id;
	snprintf(g->eps[i].name, sizeof(g->eps[i].name), "%s", name);
	g->neps++;
	return 0;
}

/* Linear probing delete: shift later entries back so lookups still find them. */
static void ep_del_at(struct gw_gateway *g, uint32_t i)
{
	g->eps[i].id = 0;
	g->neps--;
	for (uint32_t j = (i + 1) & GW_EP_MASK; g->eps[j].id; j = (j + 1) & GW_EP_MASK) {
		uint32_t home = g->eps[j].id & GW_EP_MASK;
		/* Move j into the hole when its home is not between hole and j. */
		if (((j - home) & GW_EP_MASK) >= ((j - i) & GW_EP_MASK)) {
			g->eps[i] = g->eps[j];
			g->eps[j].id = 0;
			i = j;
		}
	}
}

static int ep_del(struct gw_gateway *g, const char *name, uint16_t chan_id)
{
	struct gw_ep *e = gw_ctl_ep_find(g, gw_ctl_ep_id(name));
	if (!e || e->chan_id != chan_id || strcmp(e->name, name))
		return -ENOENT;
	ep_del_at(g, (uint32_t)(e - g->eps));
	return 0;
}

struct gw_chan *gw_ctl_chan(struct gw_gateway *g, uint16_t chan_id)
{
	uint16_t s = g->chan_slot[chan_id];
	return s ? &g->clients[s - 1].chan : NULL;
}

void gw_ctl_nodes_up(struct gw_gateway *g, uint16_t node, bool up)
{
	for (unsigned i = 0; i < g->cfg->clients_max; i++) {
		struct gw_client *cl = &g->clients[i];
		if (!cl->used || !cl->chan.shm)
			continue;
		uint64_t bit = 1ull << (node % 64);
		if (up)
			__atomic_fetch_or(&cl->chan.shm->nodes_up[node / 64], bit, __ATOMIC_RELEASE);
		else
			__atomic_fetch_and(&cl->chan.shm->nodes_up[node / 64], ~bit, __ATOMIC_RELEASE);
		if (!up) /* its calls to that node fail now, not at their timeouts */
			gw_chan_publish(&cl->chan);
	}
}

void gw_ctl_sample(struct gw_gateway *g)
{
	for (unsigned i = 0; i < g->cfg->clients_max; i++) {
		struct gw_client *cl = &g->clients[i];
		if (cl->used && cl->chan.shm)
			cl->tx_full = cl->chan.shm->tx_full;
	}
}

int gw_ctl_open(struct gw_gateway *g, char *err, size_t errlen)
{
	const char *path = g->cfg->socket_path;
	char dir[GW_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	mkdir(dirname(dir), 0755);
	unlink(path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	g->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (g->listen_fd < 0 || bind(g->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(g->listen_fd, 64) < 0) {
		int rc = -errno;
		snprintf(err, errlen, "[node] socket: cannot listen on %s: %s (set it to a writable path)",
			 path, strerror(errno));
		return rc;
	}
	/* Who may connect: the file mode and group first, SO_PEERCRED on
	 * every connection (ctl_allowed) as well. */
	if (chmod(path, g->cfg->socket_mode) < 0 ||
	    (g->cfg->socket_gid >= 0 && chown(path, (uid_t)-1, (gid_t)g->cfg->socket_gid) < 0)) {
		int rc = -errno;
		snprintf(err, errlen, "[node] socket_mode, socket_group: cannot set mode %04o / group of %s: %s",
			 g->cfg->socket_mode, path, strerror(errno));
		return rc;
	}
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
	if (g->epfd < 0 || epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->listen_fd, &ev) < 0) {
		snprintf(err, errlen, "cannot poll the control socket: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Tell the client's worker; false if its command ring is full for now. */
static bool worker_cmd(struct gw_gateway *g, struct gw_client *cl, uint32_t op)
{
	struct gw_cmd cmd = { .op = op, .slot = (uint32_t)(cl - g->clients) };
	return rte_ring_sp_enqueue_elem(g->workers[cl->worker].cmdq, &cmd, sizeof(cmd)) == 0;
}

static void free_slot(struct gw_gateway *g, struct gw_client *cl)
{
	if (cl->chan.shm)
		gw_chan_close(&cl->chan);
	memset(cl, 0, sizeof(*cl));
}

/*
 * A client leaves: its endpoints go at once (so nothing more is delivered
 * to it), its channel once its worker has let go of it (reap_clients).
 */
static void drop_client(struct gw_gateway *g, struct gw_client *cl)
{
	for (uint32_t i = 0; i < GW_EP_TABLE;) {
		if (g->eps[i].id && g->eps[i].chan_id == cl->chan_id)
			ep_del_at(g, i); /* may shift another entry into i */
		else
			i++;
	}
	g->chan_slot[cl->chan_id] = 0;
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, cl->sock, NULL);
	close(cl->sock);
	cl->sock = -1;
	if (!cl->chan.shm)
		free_slot(g, cl);
	else
		cl->leaving = true;
}

/* Free the channels of clients that left, once their worker let go. */
static void reap_clients(struct gw_gateway *g)
{
	for (unsigned i = 0; i < g->cfg->clients_max; i++) {
		struct gw_client *cl = &g->clients[i];
		if (!cl->used || !cl->leaving)
			continue;
		if (!cl->del_sent)
			cl->del_sent = worker_cmd(g, cl, GW_CMD_DEL);
		if (cl->del_sent && __atomic_load_n(&cl->released, __ATOMIC_ACQUIRE))
			free_slot(g, cl);
	}
}

/* root, the gateway's own user, and members of [node] socket_group. */
static bool ctl_allowed(const struct gw_gateway *g, const struct ucred *cr)
{
	if (cr->uid == 0 || cr->uid == geteuid())
		return true;
	int gid = g->cfg->socket_gid;
	if (gid < 0)
		return false;
	if (cr->gid == (gid_t)gid)
		return true;
	struct passwd pw, *p;
	char buf[1024];
	gid_t groups[64];
	int n = 64;
	if (getpwuid_r(cr->uid, &pw, buf, sizeof(buf), &p) || !p ||
	    getgrouplist(p->pw_name, p->pw_gid, groups, &n) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (groups[i] == (gid_t)gid)
			return true;
	return false;
}

static void ctl_accept(struct gw_gateway *g)
{
	int fd;
	while ((fd = accept4(g->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		unsigned i;
		for (i = 0; i < g->cfg->clients_max && g->clients[i].used; i++)
			;
		if (i == g->cfg->clients_max || g->draining) {
			GW_LOG(WARNING, "client refused: %s", g->draining ? "shutting down"
						: "clients_max reached (raise [chan] clients_max)");
			close(fd);
			continue;
		}
		struct gw_client *cl = &g->clients[i];
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		bool allowed = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0 &&
			       ctl_allowed(g, &cr);
		if (!allowed) {
			GW_LOG(WARNING, "client pid %d uid %u refused: not root, not our user, "
			       "not in [node] socket_group", (int)cr.pid, (unsigned)cr.uid);
			g->st.clients_refused++;
		}
		cl->refused = !allowed;
		/* Channel ids wrap but skip ids in use, so a late REJECT for a
		 * departed client never reaches a newcomer in its slot. */
		do
			g->next_chan++;
		while (g->next_chan == 0 || g->chan_slot[g->next_chan]);
		cl->used = true;
		cl->sock = fd;
		cl->chan_id = g->next_chan;
		g->chan_slot[cl->chan_id] = (uint16_t)(i + 1);
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
		epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev);
	}
}

static int ctl_hello(struct gw_gateway *g, struct gw_client *cl, struct gw_ctl_msg *m, int *fds)
{
	if (m->arg != GW_CTL_VERSION)
		return -EPROTONOSUPPORT;
	if (cl->chan.shm)
		return -EISCONN;
	const struct gw_config *c = g->cfg;
	struct gw_chan_params p = {
		.ring_count = c->ring_count, .arena_size = c->arena_kb * 1024u, .msg_max = c->msg_max,
	};
	int rc = gw_chan_create(&cl->chan, cl->chan_id, c->node_id, &p);
	if (rc < 0) {
		GW_LOG(ERR, "cannot create a channel: %s", strerror(-rc));
		return rc;
	}
	for (unsigned n = 0; n < GW_MAX_NODES; n++)
		if (g->peers[n].up || n == c->node_id)
			cl->chan.shm->nodes_up[n / 64] |= 1ull << (n % 64);
	/* Where the replies to this client's calls go: taken now, so that no
	 * other client can hold the name (or its id) first. */
	char reply_ep[GW_NAME_MAX];
	gw_ctl_reply_ep_name(reply_ep, sizeof(reply_ep), cl->chan_id);
	if ((rc = ep_add(g, reply_ep, cl->chan_id)) < 0) {
		GW_LOG(ERR, "cannot register %s for a new client: %s", reply_ep, strerror(-rc));
		gw_chan_close(&cl->chan);
		return rc;
	}
	/* Channels are spread over the workers; all of one channel's
	 * messages go through one worker and lane, which keeps their order. */
	cl->worker = (uint16_t)(cl->chan_id % g->nlanes);
	if (!worker_cmd(g, cl, GW_CMD_ADD)) {
		gw_chan_close(&cl->chan);
		return -EAGAIN;
	}
	m->arg = cl->chan_id;
	m->arg2 = c->node_id;
	fds[0] = cl->chan.memfd;
	fds[1] = cl->chan.efd_rx;
	fds[2] = cl->chan.efd_tx;
	return 3;
}

/* The first node at or after m->arg that this gateway knows of. */
static int ctl_node(struct gw_gateway *g, struct gw_ctl_msg *m)
{
	for (uint32_t n = m->arg ? m->arg : 1; n < GW_MAX_NODES; n++) {
		const struct gw_peer *p = &g->peers[n];
		bool self = n == g->cfg->node_id;
		/* Known: heard from, or configured (and maybe never heard). */
		if (!self && !p->lanes && !(g->cfg->npeers && p->allowed))
			continue;
		m->arg = n;
		m->arg2 = self ? GW_CTL_NODE_SELF | GW_CTL_NODE_UP : (p->up ? GW_CTL_NODE_UP : 0);
		m->arg2 |= (self ? gw_gateway_caps(g) : p->caps) << GW_CTL_NODE_CAPS_SHIFT;
		snprintf(m->name, sizeof(m->name), "%s", self ? g->cfg->node_name : p->name);
		return 0;
	}
	return -ENOENT;
}

/* One request from a client; false when the client must go. */
static bool ctl_request(struct gw_gateway *g, struct gw_client *cl)
{
	struct gw_ctl_msg m;
	ssize_t n = recv(cl->sock, &m, sizeof(m), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n != sizeof(m))
		return false; /* closed, or not our protocol */
	int fds[3], nfds = 0;
	m.name[sizeof(m.name) - 1] = '\0';
	if (cl->refused) {
		/* Say why, then hang up. */
		m.status = -EACCES;
		gw_ctl_reply(cl->sock, &m, fds, 0);
		return false;
	}
	switch (m.op) {
	case GW_CTL_HELLO:
		m.status = ctl_hello(g, cl, &m, fds);
		if (m.status > 0) {
			nfds = m.status;
			m.status = 0;
		}
		break;
	case GW_CTL_REGISTER:
		if (!cl->chan.shm)
			m.status = -ENOTCONN;
		else if (!gw_ctl_name_ok(m.name, sizeof(m.name)))
			m.status = -EINVAL;
		else if (m.name[0] == GW_CTL_RESERVED)
			m.status = -EPERM; /* the gateway's to give (the reply endpoint) */
		else
			m.status = ep_add(g, m.name, cl->chan_id);
		m.arg = gw_ctl_ep_id(m.name);
		break;
	case GW_CTL_UNREGISTER:
		m.status = m.name[0] == GW_CTL_RESERVED ? -EPERM : ep_del(g, m.name, cl->chan_id);
		break;
	case GW_CTL_NODE:
		m.status = ctl_node(g, &m);
		break;
	default:
		m.status = -EOPNOTSUPP;
	}
	return gw_ctl_reply(cl->sock, &m, fds, nfds) == 0;
}

void gw_ctl_poll(struct gw_gateway *g)
{
	struct epoll_event ev[16];
	int n = epoll_wait(g->epfd, ev, 16, 0);
	for (int i = 0; i < n; i++) {
		uint32_t k = ev[i].data.u32;
		if (k == UINT32_MAX) {
			ctl_accept(g);
			continue;
		}
		struct gw_client *cl = &g->clients[k];
		if (cl->used && !cl->leaving && !ctl_request(g, cl)) {
			GW_LOG(INFO, "client %u left, channel reclaimed", cl->chan_id);
			drop_client(g, cl);
		}
	}
	/* A client that wrote an invalid descriptor is cut off: it can
	 * only have hurt itself, and must not go on. */
	for (unsigned i = 0; i < g->cfg->clients_max; i++) {
		struct gw_client *cl = &g->clients[i];
		if (cl->used && !cl->leaving && cl->chan.shm &&
		    __atomic_load_n(&cl->chan.broken, __ATOMIC_RELAXED)) {
			GW_LOG(WARNING, "client %u wrote an invalid descriptor: disconnected",
			       cl->chan_id);
			g->st.clients_broken++;
			drop_client(g, cl);
		}
	}
	reap_clients(g);
}

void gw_ctl_close(struct gw_gateway *g)
{
	/* The workers have stopped: channels can go straight away. */
	for (unsigned i = 0; g->clients && i < g->cfg->clients_max; i++)
		if (g->clients[i].used) {
			if (!g->clients[i].leaving)
				close(g->clients[i].sock);
			free_slot(g, &g->clients[i]);
		}
	if (g->epfd >= 0)
		close(g->epfd);
	if (g->listen_fd >= 0) {
		close(g->listen_fd);
		unlink(g->cfg->socket_path);
	}
}
