/* SPDX-License-Identifier: BSD-3-Clause */
/* The control role: see gw_control.h. */
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

#include <rte_malloc.h>

#include "gw_control.h"
#include "gw_ctl.h"
#include "gw_peers.h"

/*
 * The table to change: a copy of the published one, in the buffer readers
 * may have been using until the last change's grace period ended.
 */
static void *edit(struct gw_control *ctl, struct gw_published *p)
{
	if (p->waiting && rte_rcu_qsbr_check(ctl->qs, p->gone, false) != 1)
		rte_rcu_qsbr_synchronize(ctl->qs, ctl->qs_id);
	p->waiting = false;
	void *next = p->cur == p->buf[0] ? p->buf[1] : p->buf[0];
	memcpy(next, p->cur, p->size);
	return next;
}

static void publish(struct gw_control *ctl, struct gw_published *p, void *next)
{
	__atomic_store_n(&p->cur, next, __ATOMIC_RELEASE);
	p->gone = rte_rcu_qsbr_start(ctl->qs);
	p->waiting = true;
}

/* Publish next, and return once every reader has moved past the old one. */
static void publish_sync(struct gw_control *ctl, struct gw_published *p, void *next)
{
	publish(ctl, p, next);
	rte_rcu_qsbr_synchronize(ctl->qs, ctl->qs_id);
	p->waiting = false;
}

static int published_init(struct gw_published *p, const char *name, size_t size)
{
	p->size = size;
	p->buf[0] = rte_zmalloc(name, size, 64);
	p->buf[1] = rte_zmalloc(name, size, 64);
	p->cur = p->buf[0];
	return p->buf[0] && p->buf[1] ? 0 : -ENOMEM;
}

static void published_free(struct gw_published *p)
{
	rte_free(p->buf[0]);
	rte_free(p->buf[1]);
	memset(p, 0, sizeof(*p));
}

static int ep_add(struct gw_control *ctl, const char *name, uint16_t chan)
{
	uint32_t id = gw_ctl_ep_id(name);
	/* Already there: the same again (0) or taken (-EEXIST), said without
	 * a copy; gw_dir_add writes nothing when the id is present. */
	if (gw_dir_find(ctl->dir.cur, id))
		return gw_dir_add(ctl->dir.cur, name, id, chan) == 0 ? 0 : -EEXIST;
	struct gw_dir *next = edit(ctl, &ctl->dir);
	int rc = gw_dir_add(next, name, id, chan);
	/* The client hears "registered" only once every receiver has moved
	 * past the old directory: a message sent to the name after that is
	 * delivered, never refused as unknown. */
	if (rc == 0)
		publish_sync(ctl, &ctl->dir, next);
	return rc;
}

static int ep_del(struct gw_control *ctl, const char *name, uint16_t chan)
{
	if (gw_dir_find(ctl->dir.cur, gw_ctl_ep_id(name)) != chan)
		return -ENOENT;
	struct gw_dir *next = edit(ctl, &ctl->dir);
	int rc = gw_dir_del(next, name, gw_ctl_ep_id(name), chan);
	if (rc == 0)
		publish(ctl, &ctl->dir, next);
	return rc;
}

static int sub_add(struct gw_control *ctl, const char *topic, uint16_t chan, unsigned policy,
		   unsigned key_len)
{
	struct gw_topics *next = edit(ctl, &ctl->topics);
	int rc = gw_topic_subscribe(next, topic, gw_ctl_ep_id(topic), chan,
				    policy == GW_CTL_SUB_LATEST ? GW_TOPIC_LATEST : GW_TOPIC_HOLD,
				    (uint8_t)key_len);
	/* As for an endpoint: subscribed once every receiver delivers to it. */
	if (rc == 0)
		publish_sync(ctl, &ctl->topics, next);
	return rc;
}

static int sub_del(struct gw_control *ctl, const char *topic, uint16_t chan)
{
	struct gw_topics *next = edit(ctl, &ctl->topics);
	int rc = gw_topic_unsubscribe(next, topic, gw_ctl_ep_id(topic), chan);
	if (rc == 0)
		publish(ctl, &ctl->topics, next);
	return rc;
}

#define GW_SUBSQ 64 /* SUBS parts from one receiver's lcore; full: it holds the frame */

struct rte_ring *gw_control_add_subs_ring(struct gw_control *ctl, unsigned receiver)
{
	return gw_node_add_ring(ctl->subs_in, &ctl->nsubs_in, sizeof(struct gw_subs_msg), GW_SUBSQ,
				"gw_subs%u", receiver);
}

/* Peer node has subscribers to these n topics now: the topics say so.
 * false when they did already (a refresh: nothing to publish). */
static bool node_topics(struct gw_control *ctl, uint16_t node, const char (*names)[GW_DIR_NAME],
			const uint32_t *ids, unsigned n)
{
	if (gw_topic_node_is(ctl->topics.cur, node, ids, n))
		return false;
	struct gw_topics *next = edit(ctl, &ctl->topics);
	unsigned refused = gw_topic_set_node(next, node, names, ids, n);
	publish(ctl, &ctl->topics, next);
	if (refused)
		GW_LOG(WARNING, "peer %u: %u of its %u topics not taken (more than %u topics here, "
		       "or a name whose id another name has)", node, refused, n, GW_TOPICS_MAX);
	return true;
}

/* One part of a peer's advertisement; applied once it is whole. A part
 * that does not follow is dropped: the peer tells it all again within
 * its refresh. */
static void on_subs(struct gw_control *ctl, const struct gw_subs_msg *m)
{
	char names[GW_SUBS_ENTRIES_MAX][GW_DIR_NAME];
	uint32_t ids[GW_SUBS_ENTRIES_MAX];
	struct gw_subs_hdr h;
	ctl->st->subs_parts_in++;
	if (m->node >= GW_MAX_NODES ||
	    gw_wire_subs_get(m->data, m->len, &h, names, ids, GW_SUBS_ENTRIES_MAX) < 0) {
		ctl->st->bad_frames++;
		return;
	}
	struct gw_topic_adv **a = &ctl->adv[m->node];
	if (!*a) {
		if (!(*a = malloc(sizeof(**a))))
			return; /* no memory now: the refresh brings it again */
		gw_topic_adv_init(*a);
	}
	if (gw_topic_adv_part(*a, h.version, h.total, h.first, names, ids, h.n) != 1)
		return;
	/* A refresh of the version applied last changes nothing (even when
	 * some of its topics were refused here). */
	uint64_t v = 1ull << 32 | h.version;
	if (ctl->adv_applied[m->node] == v)
		return;
	ctl->adv_applied[m->node] = v;
	ctl->st->subs_applied += node_topics(ctl, m->node, (*a)->names, (*a)->ids, (*a)->have);
}

static void take_subs(struct gw_control *ctl)
{
	struct gw_subs_msg m;
	for (unsigned i = 0; i < ctl->nsubs_in; i++)
		while (rte_ring_sc_dequeue_elem(ctl->subs_in[i], &m, sizeof(m)) == 0)
			on_subs(ctl, &m);
}

/* What node subscribed to is forgotten: it tells it again in its new
 * session. */
static void forget_node(struct gw_control *ctl, uint16_t node)
{
	node_topics(ctl, node, NULL, NULL, 0);
	if (ctl->adv[node])
		gw_topic_adv_init(ctl->adv[node]);
	ctl->adv_applied[node] = 0;
}

void gw_control_peer_restarted(void *arg, uint16_t node)
{
	struct gw_control *ctl = arg;
	ctl->restarted[node / 64] |= 1ull << (node % 64);
}

static void forget_restarted(struct gw_control *ctl)
{
	for (unsigned k = 0; k < GW_MAX_NODES / 64; k++)
		for (; ctl->restarted[k]; ctl->restarted[k] &= ctl->restarted[k] - 1)
			forget_node(ctl, (uint16_t)(k * 64 + (unsigned)__builtin_ctzll(ctl->restarted[k])));
}

void gw_control_set_node_up(void *arg, uint16_t node, bool up)
{
	struct gw_control *ctl = arg;
	if (!up)
		forget_node(ctl, node);
	uint64_t bit = 1ull << (node % 64);
	for (unsigned i = 0; i < ctl->node->cfg->clients_max; i++) {
		struct gw_client *cl = &ctl->clients[i];
		if (!cl->used || !cl->chan.shm)
			continue;
		if (up)
			__atomic_fetch_or(&cl->chan.shm->nodes_up[node / 64], bit, __ATOMIC_RELEASE);
		else
			__atomic_fetch_and(&cl->chan.shm->nodes_up[node / 64], ~bit, __ATOMIC_RELEASE);
		if (!up) /* its calls to that node fail now, not at their timeouts */
			gw_chan_wake(&cl->chan);
	}
}

void gw_control_sample(struct gw_control *ctl)
{
	for (unsigned i = 0; i < ctl->node->cfg->clients_max; i++) {
		struct gw_client *cl = &ctl->clients[i];
		if (!cl->used || !cl->chan.shm)
			continue;
		cl->tx_full = cl->chan.shm->tx_full;
		unsigned fill = 0;
		for (unsigned r = 0; r < cl->chan.rx_parts; r++) {
			unsigned f = gw_chan_rx_fill_permille(&cl->chan, r);
			fill = f > fill ? f : fill;
		}
		cl->rx_fill_permille = (uint16_t)fill;
	}
}

int gw_control_open(struct gw_control *ctl, char *err, size_t errlen)
{
	const char *path = ctl->node->cfg->socket_path;
	ctl->listen_fd = ctl->epfd = ctl->alive_fd = -1;
	ctl->clients = rte_zmalloc("gw_clients", sizeof(*ctl->clients) * ctl->node->cfg->clients_max,
				   64);
	if (!ctl->clients || published_init(&ctl->dir, "gw_dirs", sizeof(struct gw_dir)) < 0 ||
	    published_init(&ctl->topics, "gw_topics", sizeof(struct gw_topics)) < 0) {
		snprintf(err, errlen, "out of memory: give EAL more (-m in [eal] args)");
		return -ENOMEM;
	}
	gw_dir_init(ctl->dir.cur);
	gw_topic_init(ctl->topics.cur);
	/* Locked by this thread, the main lcore's, which lives as long as the
	 * gateway: what clients ask on every send. */
	int arc = gw_chan_alive_create(&ctl->alive, &ctl->alive_fd);
	if (arc < 0) {
		snprintf(err, errlen, "cannot make the clients' liveness page: %s (it needs Linux 5.1 or "
			 "later, for F_SEAL_FUTURE_WRITE, and glibc or musl)", strerror(-arc));
		return arc;
	}
	char dir[GW_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	mkdir(dirname(dir), 0755);
	unlink(path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ctl->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0 || bind(ctl->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(ctl->listen_fd, 64) < 0) {
		int rc = -errno;
		snprintf(err, errlen, "[node] socket: cannot listen on %s: %s (set it to a writable path)",
			 path, strerror(errno));
		return rc;
	}
	/* Who may connect: the file mode and group first, SO_PEERCRED on
	 * every connection (ctl_allowed) as well. */
	if (chmod(path, ctl->node->cfg->socket_mode) < 0 ||
	    (ctl->node->cfg->socket_gid >= 0 && chown(path, (uid_t)-1, (gid_t)ctl->node->cfg->socket_gid) < 0)) {
		int rc = -errno;
		snprintf(err, errlen, "[node] socket_mode, socket_group: cannot set mode %04o / group of %s: %s",
			 ctl->node->cfg->socket_mode, path, strerror(errno));
		return rc;
	}
	ctl->epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
	if (ctl->epfd < 0 || epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, ctl->listen_fd, &ev) < 0) {
		snprintf(err, errlen, "cannot poll the control socket: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Tell the client's worker; false if its command ring is full for now. */
static bool worker_cmd(struct gw_control *ctl, struct gw_client *cl, uint32_t op)
{
	struct gw_cmd cmd = { .op = op, .chan = &cl->chan, .released = &cl->released };
	return gw_worker_post_cmd(&ctl->workers[cl->worker], &cmd) == 0;
}

static void free_slot(struct gw_control *ctl, struct gw_client *cl)
{
	if (cl->chan.shm)
		gw_chan_close(&cl->chan);
	for (unsigned r = 0; r < GW_RECEIVERS_MAX; r++)
		if (cl->rx[r].latest) {
			gw_conflate_free(cl->rx[r].latest);
			free(cl->rx[r].latest);
		}
	memset(cl, 0, sizeof(*cl));
}

/*
 * A client leaves: its endpoints and its channel id are unpublished at once
 * (so nothing more is delivered to it), its channel freed once every lcore
 * has moved on and its worker has let go of it (reap_clients).
 */
static void drop_client(struct gw_control *ctl, struct gw_client *cl)
{
	const struct gw_dir *d = ctl->dir.cur;
	uint16_t has = 0;
	for (unsigned i = 0; i < GW_DIR_SLOTS && !has; i++)
		has = d->slot[i].id && d->slot[i].chan == cl->chan_id;
	if (has) {
		struct gw_dir *next = edit(ctl, &ctl->dir);
		gw_dir_drop_chan(next, cl->chan_id);
		publish(ctl, &ctl->dir, next);
	}
	if (gw_topic_count_chan(ctl->topics.cur, cl->chan_id)) {
		struct gw_topics *next = edit(ctl, &ctl->topics);
		gw_topic_drop_chan(next, cl->chan_id);
		publish(ctl, &ctl->topics, next);
	}
	__atomic_store_n(&cl->live, false, __ATOMIC_RELEASE);
	__atomic_store_n(&ctl->chan_slot[cl->chan_id], 0, __ATOMIC_RELEASE);
	cl->gone = rte_rcu_qsbr_start(ctl->qs);
	epoll_ctl(ctl->epfd, EPOLL_CTL_DEL, cl->sock, NULL);
	close(cl->sock);
	cl->sock = -1;
	if (!cl->chan.shm)
		free_slot(ctl, cl);
	else
		cl->leaving = true;
}

/* Free the channels of clients that left, once it is safe. */
static void reap_clients(struct gw_control *ctl)
{
	for (unsigned i = 0; i < ctl->node->cfg->clients_max; i++) {
		struct gw_client *cl = &ctl->clients[i];
		if (!cl->used || !cl->leaving)
			continue;
		if (!cl->del_sent)
			cl->del_sent = worker_cmd(ctl, cl, GW_CMD_DEL);
		if (cl->del_sent && __atomic_load_n(&cl->released, __ATOMIC_ACQUIRE) &&
		    rte_rcu_qsbr_check(ctl->qs, cl->gone, false) == 1)
			free_slot(ctl, cl);
	}
}

/* root, the gateway's own user, and members of [node] socket_group. */
static bool ctl_allowed(const struct gw_control *ctl, const struct ucred *cr)
{
	if (cr->uid == 0 || cr->uid == geteuid())
		return true;
	int gid = ctl->node->cfg->socket_gid;
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

static void ctl_accept(struct gw_control *ctl)
{
	int fd;
	while ((fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		unsigned i;
		for (i = 0; i < ctl->node->cfg->clients_max && ctl->clients[i].used; i++)
			;
		if (i == ctl->node->cfg->clients_max || ctl->node->draining) {
			GW_LOG(WARNING, "client refused: %s", ctl->node->draining ? "shutting down"
						: "clients_max reached (raise [chan] clients_max)");
			close(fd);
			continue;
		}
		struct gw_client *cl = &ctl->clients[i];
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		bool allowed = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0 &&
			       ctl_allowed(ctl, &cr);
		if (!allowed) {
			GW_LOG(WARNING, "client pid %d uid %u refused: not root, not our user, "
			       "not in [node] socket_group", (int)cr.pid, (unsigned)cr.uid);
			ctl->st->clients_refused++;
		}
		cl->refused = !allowed;
		/* Channel ids wrap but skip ids in use, so a late REJECT for a
		 * departed client never reaches a newcomer in its slot. */
		do
			ctl->next_chan++;
		while (ctl->next_chan == 0 || ctl->chan_slot[ctl->next_chan]);
		cl->used = true;
		cl->sock = fd;
		cl->chan_id = ctl->next_chan;
		__atomic_store_n(&ctl->chan_slot[cl->chan_id], (uint16_t)(i + 1), __ATOMIC_RELEASE);
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
		epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, fd, &ev);
	}
}

/* The client being served (gw_ctl_serve's ops reach it through here). */
struct ctl_req {
	struct gw_control *ctl;
	struct gw_client *cl;
};

static int ctl_hello(void *ctx, uint16_t chan, struct gw_ctl_msg *m, int *fds)
{
	struct gw_control *ctl = ((struct ctl_req *)ctx)->ctl;
	struct gw_client *cl = ((struct ctl_req *)ctx)->cl;
	const struct gw_config *c = ctl->node->cfg;
	struct gw_chan_params p = {
		.ring_count = c->ring_count, .arena_size = c->arena_kb * 1024u, .msg_max = c->msg_max,
		.rx_parts = ctl->nrecv,
	};
	int rc = gw_chan_create(&cl->chan, cl->chan_id, c->node_id, &p);
	if (rc < 0) {
		GW_LOG(ERR, "cannot create a channel: %s", strerror(-rc));
		return rc;
	}
	for (unsigned n = 0; n < GW_MAX_NODES; n++)
		if (ctl->peers->peer[n].up || n == c->node_id)
			cl->chan.shm->nodes_up[n / 64] |= 1ull << (n % 64);
	/* Where the replies to this client's calls go: taken now, so that no
	 * other client can hold the name (or its id) first. */
	char reply_ep[GW_NAME_MAX];
	gw_ctl_reply_ep_name(reply_ep, sizeof(reply_ep), cl->chan_id);
	if ((rc = ep_add(ctl, reply_ep, cl->chan_id)) < 0) {
		GW_LOG(ERR, "cannot register %s for a new client: %s", reply_ep, strerror(-rc));
		gw_chan_close(&cl->chan);
		return rc;
	}
	/* Channels are spread over the workers; all of one channel's
	 * messages go through one worker and lane, which keeps their order. */
	cl->worker = (uint16_t)(cl->chan_id % ctl->nworkers);
	if (!worker_cmd(ctl, cl, GW_CMD_ADD)) {
		gw_chan_close(&cl->chan);
		return -EAGAIN;
	}
	__atomic_store_n(&cl->live, true, __ATOMIC_RELEASE);
	m->arg = cl->chan_id;
	m->arg2 = c->node_id;
	fds[0] = cl->chan.memfd;
	fds[1] = cl->chan.efd_rx;
	fds[2] = cl->chan.efd_tx;
	fds[3] = ctl->alive_fd;
	return GW_CTL_FDS;
}

static int ctl_ep_add(void *ctx, const char *name, uint16_t chan)
{
	return ep_add(((struct ctl_req *)ctx)->ctl, name, chan);
}

static int ctl_ep_del(void *ctx, const char *name, uint16_t chan)
{
	return ep_del(((struct ctl_req *)ctx)->ctl, name, chan);
}

static int ctl_sub_add(void *ctx, const char *topic, uint16_t chan, unsigned policy,
		       unsigned key_len)
{
	return sub_add(((struct ctl_req *)ctx)->ctl, topic, chan, policy, key_len);
}

static int ctl_sub_del(void *ctx, const char *topic, uint16_t chan)
{
	return sub_del(((struct ctl_req *)ctx)->ctl, topic, chan);
}

/* The first node at or after m->arg that this gateway knows of. */
static int ctl_node(void *ctx, struct gw_ctl_msg *m)
{
	struct gw_control *ctl = ((struct ctl_req *)ctx)->ctl;
	for (uint32_t n = m->arg ? m->arg : 1; n < GW_MAX_NODES; n++) {
		const struct gw_peer *p = &ctl->peers->peer[n];
		bool self = n == ctl->node->cfg->node_id;
		/* Known: heard from, or configured (and maybe never heard). */
		if (!self && !p->lanes && !(ctl->node->cfg->npeers && p->allowed))
			continue;
		m->arg = n;
		m->arg2 = self ? GW_CTL_NODE_SELF | GW_CTL_NODE_UP : (p->up ? GW_CTL_NODE_UP : 0);
		m->arg2 |= (self ? gw_peers_caps(ctl->node) : p->caps) << GW_CTL_NODE_CAPS_SHIFT;
		snprintf(m->name, sizeof(m->name), "%s", self ? ctl->node->cfg->node_name : p->name);
		return 0;
	}
	return -ENOENT;
}

/* One request from a client; false when the client must go. */
static bool ctl_request(struct gw_control *ctl, struct gw_client *cl)
{
	static const struct gw_ctl_ops ops = {
		.hello = ctl_hello, .ep_add = ctl_ep_add, .ep_del = ctl_ep_del, .node = ctl_node,
		.sub_add = ctl_sub_add, .sub_del = ctl_sub_del,
	};
	struct gw_ctl_msg m;
	ssize_t n = recv(cl->sock, &m, sizeof(m), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n != sizeof(m))
		return false; /* closed, or not our protocol */
	struct gw_ctl_peer p = { .chan = cl->chan_id, .refused = cl->refused,
				 .connected = cl->chan.shm != NULL };
	struct ctl_req req = { ctl, cl };
	int fds[GW_CTL_FDS];
	int nfds = gw_ctl_serve(&ops, &req, &p, &m, fds);
	if (nfds == GW_CTL_HANGUP) {
		gw_ctl_reply(cl->sock, &m, fds, 0);
		return false;
	}
	return gw_ctl_reply(cl->sock, &m, fds, nfds) == 0;
}

void gw_control_poll(struct gw_control *ctl)
{
	struct epoll_event ev[16];
	int n = epoll_wait(ctl->epfd, ev, 16, 0);
	for (int i = 0; i < n; i++) {
		uint32_t k = ev[i].data.u32;
		if (k == UINT32_MAX) {
			ctl_accept(ctl);
			continue;
		}
		struct gw_client *cl = &ctl->clients[k];
		if (cl->used && !cl->leaving && !ctl_request(ctl, cl)) {
			GW_LOG(INFO, "client %u left, channel reclaimed", cl->chan_id);
			drop_client(ctl, cl);
		}
	}
	/* A client that wrote an invalid descriptor is cut off: it can
	 * only have hurt itself, and must not go on. */
	for (unsigned i = 0; i < ctl->node->cfg->clients_max; i++) {
		struct gw_client *cl = &ctl->clients[i];
		if (cl->used && !cl->leaving && cl->chan.shm &&
		    __atomic_load_n(&cl->chan.broken, __ATOMIC_RELAXED)) {
			GW_LOG(WARNING, "client %u wrote an invalid descriptor: disconnected",
			       cl->chan_id);
			ctl->st->clients_broken++;
			drop_client(ctl, cl);
		}
	}
	forget_restarted(ctl);
	take_subs(ctl);
	reap_clients(ctl);
}

void gw_control_close(struct gw_control *ctl)
{
	/* The workers have stopped: channels can go straight away. */
	for (unsigned i = 0; ctl->clients && i < ctl->node->cfg->clients_max; i++)
		if (ctl->clients[i].used) {
			if (!ctl->clients[i].leaving)
				close(ctl->clients[i].sock);
			free_slot(ctl, &ctl->clients[i]);
		}
	if (ctl->epfd >= 0)
		close(ctl->epfd);
	if (ctl->listen_fd >= 0) {
		close(ctl->listen_fd);
		unlink(ctl->node->cfg->socket_path);
	}
	if (ctl->alive) /* made by gw_control_open, which a failed start may not reach */
		gw_chan_alive_destroy(ctl->alive, ctl->alive_fd);
	ctl->alive = NULL;
	rte_free(ctl->clients);
	published_free(&ctl->dir);
	published_free(&ctl->topics);
	ctl->clients = NULL;
	for (unsigned n = 0; n < GW_MAX_NODES; n++) {
		free(ctl->adv[n]);
		ctl->adv[n] = NULL;
	}
	for (unsigned i = 0; i < ctl->nsubs_in; i++)
		rte_ring_free(ctl->subs_in[i]);
	ctl->nsubs_in = 0;
}
