/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_ctl: the control socket, as any local process that connects may use
 * it. Four clients (the fourth refused by the credentials check) send
 * requests, each a struct gw_ctl_msg of whatever bytes, in any order; a
 * client may also hang up. The requests are served by gw_ctl_serve, as
 * gridwired serves them, against a real endpoint directory (lib/dir) and a
 * HELLO that registers the client's reply endpoint, as gridwired's does.
 *
 * The input is a script: one byte (low 2 bits: the client; bit 2: it hangs
 * up instead), then for a request sizeof(struct gw_ctl_msg) bytes.
 * Whatever the bytes:
 *  - a reply's status is 0 or one of the errnos the protocol gives, and
 *    only a HELLO that went through passes fds;
 *  - a refused client changes nothing and is hung up on;
 *  - a name is registered only by a client that said HELLO, only if it is
 *    a valid name and not one of the gateway's own ('~'), and then it is
 *    that client's; one client's name is never taken or removed by another;
 *  - a client that hangs up leaves no name behind;
 *  - the directory holds exactly what the clients were told they hold.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_input.h"
#include "gw_ctl.h"
#include "gw_dir.h"
#include "gw_topic.h"

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_ctl: check failed at line %d: %s\n", __LINE__,  \
				#c);                                                       \
			abort();                                                           \
		}                                                                          \
	} while (0)

#define FZ_CLIENTS 4
#define FZ_NAMES 64

static struct gw_dir dir;
static struct gw_topics topics;
static struct gw_ctl_peer peer[FZ_CLIENTS];

/* What each client should hold, kept beside the directory: checking it
 * costs a lookup a name, where walking the directory costs its 4,096 slots. */
static struct {
	char name[FZ_NAMES][GW_NAME_MAX];
	unsigned n;
} held[FZ_CLIENTS];

static int held_find(unsigned k, const char *name)
{
	for (unsigned i = 0; i < held[k].n; i++)
		if (!strcmp(held[k].name[i], name))
			return (int)i;
	return -1;
}

static void held_add(unsigned k, const char *name)
{
	if (held_find(k, name) < 0) {
		CHECK(held[k].n < FZ_NAMES);
		snprintf(held[k].name[held[k].n++], GW_NAME_MAX, "%s", name);
	}
}

static void held_del(unsigned k, const char *name)
{
	int i = held_find(k, name);
	if (i >= 0)
		memcpy(held[k].name[i], held[k].name[--held[k].n], GW_NAME_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fz_hello(void *ctx, uint16_t chan, struct gw_ctl_msg *m, int *fds)
{
	(void)ctx;
	char reply_ep[GW_NAME_MAX];
	gw_ctl_reply_ep_name(reply_ep, sizeof(reply_ep), chan);
	int rc = gw_dir_add(&dir, reply_ep, gw_ctl_ep_id(reply_ep), chan);
	if (rc < 0)
		return rc;
	held_add(chan - 100u, reply_ep);
	m->arg = chan;
	m->arg2 = 1;
	fds[0] = fds[1] = fds[2] = -1;
	return 3;
}

static int fz_ep_add(void *ctx, const char *name, uint16_t chan)
{
	(void)ctx;
	return gw_dir_add(&dir, name, gw_ctl_ep_id(name), chan);
}

static int fz_ep_del(void *ctx, const char *name, uint16_t chan)
{
	(void)ctx;
	return gw_dir_del(&dir, name, gw_ctl_ep_id(name), chan);
}

static int fz_node(void *ctx, struct gw_ctl_msg *m)
{
	(void)ctx;
	if (m->arg > 3)
		return -ENOENT;
	m->arg = m->arg ? m->arg : 1;
	snprintf(m->name, sizeof(m->name), "n%u", m->arg);
	return 0;
}

static int fz_sub_add(void *ctx, const char *topic, uint16_t chan, unsigned policy,
		      unsigned key_len)
{
	(void)ctx;
	return gw_topic_subscribe(&topics, topic, gw_ctl_ep_id(topic), chan,
				  policy == GW_CTL_SUB_LATEST ? GW_TOPIC_LATEST : GW_TOPIC_HOLD,
				  (uint8_t)key_len);
}

static int fz_sub_del(void *ctx, const char *topic, uint16_t chan)
{
	(void)ctx;
	return gw_topic_unsubscribe(&topics, topic, gw_ctl_ep_id(topic), chan);
}

static const struct gw_ctl_ops ops = {
	.hello = fz_hello, .ep_add = fz_ep_add, .ep_del = fz_ep_del, .node = fz_node,
	.sub_add = fz_sub_add, .sub_del = fz_sub_del,
};

/* Does chan subscribe to topic id, and how (policy, key length)? */
static const struct gw_topic_sub *subscription(uint32_t id, uint16_t chan)
{
	const struct gw_topic *t = gw_topic_find(&topics, id);
	for (unsigned k = 0; t && k < t->nsubs; k++)
		if (t->sub[k].chan == chan)
			return &t->sub[k];
	return NULL;
}

static bool status_ok(uint32_t op, int st)
{
	switch (op) {
	case GW_CTL_HELLO:
		return st == 0 || st == -EPROTONOSUPPORT || st == -EISCONN || st == -EEXIST ||
		       st == -ENOSPC;
	case GW_CTL_REGISTER:
		return st == 0 || st == -ENOTCONN || st == -EINVAL || st == -EPERM ||
		       st == -EEXIST || st == -ENOSPC;
	case GW_CTL_UNREGISTER:
		return st == 0 || st == -EPERM || st == -ENOENT || st == -EINVAL;
	case GW_CTL_NODE:
		return st == 0 || st == -ENOENT;
	case GW_CTL_SUBSCRIBE:
		return st == 0 || st == -ENOTCONN || st == -EINVAL || st == -EEXIST ||
		       st == -ENOSPC;
	case GW_CTL_UNSUBSCRIBE:
		return st == 0 || st == -ENOENT || st == -EINVAL;
	default:
		return st == -EOPNOTSUPP;
	}
}

static void request(unsigned k, struct fz_in *in)
{
	struct gw_ctl_msg m, sent;
	uint8_t *b = (uint8_t *)&m;
	for (size_t i = 0; i < sizeof(m); i++)
		b[i] = rd8(in);
	sent = m;
	sent.name[sizeof(sent.name) - 1] = '\0';
	uint32_t id = gw_ctl_ep_id(sent.name);
	uint16_t owner = gw_dir_find(&dir, id);
	bool was_connected = peer[k].connected, subscribed = subscription(id, peer[k].chan);
	unsigned ntopics = topics.n;
	int fds[3];
	int n = gw_ctl_serve(&ops, NULL, &peer[k], &m, fds);

	CHECK(m.name[sizeof(m.name) - 1] == '\0');
	if (peer[k].refused) {
		CHECK(n == GW_CTL_HANGUP && m.status == -EACCES && !peer[k].connected);
		CHECK(gw_dir_find(&dir, id) == owner);
		CHECK(topics.n == ntopics);
		return;
	}
	CHECK(status_ok(sent.op, m.status));
	CHECK(n == 0 || (n == 3 && sent.op == GW_CTL_HELLO && m.status == 0 && !was_connected &&
			 peer[k].connected && m.arg == peer[k].chan));
	if (sent.op == GW_CTL_REGISTER) {
		CHECK(m.arg == id);
		if (m.status == 0) {
			held_add(k, sent.name);
			CHECK(was_connected && gw_ctl_name_ok(sent.name, sizeof(sent.name)) &&
			      sent.name[0] != GW_CTL_RESERVED);
			CHECK(gw_dir_find(&dir, id) == peer[k].chan);
			CHECK(!owner || owner == peer[k].chan);
		} else {
			CHECK(gw_dir_find(&dir, id) == owner);
		}
	}
	if (sent.op == GW_CTL_SUBSCRIBE) {
		const struct gw_topic_sub *s = subscription(id, peer[k].chan);
		unsigned policy = sent.arg & 0xff, key = sent.arg >> 8;
		CHECK(m.arg == id);
		if (m.status == 0)
			CHECK(was_connected && sent.name[0] != GW_CTL_RESERVED && s &&
			      s->policy == (policy == GW_CTL_SUB_LATEST ? GW_TOPIC_LATEST : GW_TOPIC_HOLD) &&
			      s->key_len == key && (policy == GW_CTL_SUB_LATEST) == (key > 0));
		else
			CHECK(!!s == subscribed && topics.n == ntopics);
	}
	if (sent.op == GW_CTL_UNSUBSCRIBE)
		CHECK(m.status == 0 ? subscribed && !subscription(id, peer[k].chan)
				    : !subscribed && topics.n == ntopics);
	if (sent.op == GW_CTL_UNREGISTER) {
		if (m.status == 0) {
			CHECK(owner == peer[k].chan && !gw_dir_find(&dir, id) &&
			      sent.name[0] != GW_CTL_RESERVED);
			held_del(k, sent.name);
		} else
			CHECK(gw_dir_find(&dir, id) == owner);
	}
}

/* The directory holds exactly what the clients should hold, and only
 * clients that said HELLO and are still here hold anything. */
static void check_held(void)
{
	unsigned total = 0;
	for (unsigned k = 0; k < FZ_CLIENTS; k++) {
		CHECK(peer[k].connected || held[k].n == 0);
		for (unsigned i = 0; i < held[k].n; i++)
			CHECK(gw_dir_find(&dir, gw_ctl_ep_id(held[k].name[i])) == peer[k].chan);
		total += held[k].n;
	}
	CHECK(dir.n == total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	static bool ready;
	if (!ready) {
		gw_dir_init(&dir);
		gw_topic_init(&topics);
		ready = true;
	}
	for (unsigned k = 0; k < FZ_CLIENTS; k++) {
		peer[k] = (struct gw_ctl_peer){ .chan = (uint16_t)(100 + k),
						.refused = k == FZ_CLIENTS - 1 };
		held[k].n = 0;
	}
	while (in.n) {
		uint8_t b = rd8(&in);
		unsigned k = b & 3;
		if (b & 4) {
			/* It hangs up: the gateway drops its channel and names
			 * (a walk of the table: only for one that said HELLO,
			 * as one that did not holds nothing, check_held says). */
			if (peer[k].connected)
				CHECK(gw_dir_drop_chan(&dir, peer[k].chan) == held[k].n);
			gw_topic_drop_chan(&topics, peer[k].chan);
			CHECK(!gw_topic_count_chan(&topics, peer[k].chan));
			held[k].n = 0;
			peer[k].connected = false;
		} else {
			request(k, &in);
		}
		check_held();
	}
	/* The next input starts from an empty directory: each name taken out
	 * (a walk of the table per client would cost most of an execution). */
	for (unsigned k = 0; k < FZ_CLIENTS; k++)
		for (unsigned i = 0; i < held[k].n; i++)
			CHECK(gw_dir_del(&dir, held[k].name[i], gw_ctl_ep_id(held[k].name[i]),
					 peer[k].chan) == 0);
	CHECK(dir.n == 0);
	for (unsigned k = 0; k < FZ_CLIENTS; k++)
		gw_topic_drop_chan(&topics, peer[k].chan);
	CHECK(topics.n == 0 && topics.dir.n == 0);
	return 0;
}
