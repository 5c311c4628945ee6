/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The call layer of libgridwire (lib/client/gw_call.c, gw_multi.c) against
 * a fake gateway in this process: a thread answers the control socket
 * (HELLO with a real gw_chan region, REGISTER, NODE) and, when asked,
 * plays the far side: it reads requests from the channel's TX ring and
 * delivers replies, REJECTs and other messages into its RX ring. No EAL,
 * no wire: what is tested is how calls end (reply, failure, REJECT,
 * timeout, node down), what happens to late outcomes, and the patterns'
 * policies, deterministically.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gridwire.h"
#include "gw_chan.h"
#include "gw_ctl.h"
#include "gw_test.h"

#define CHAN_ID 5
#define SELF 1

/* The request header of gw_call.c, as a far side reads and writes it. */
struct call_hdr {
	uint8_t magic, type;
	uint16_t rsv;
	uint32_t call_id;
};
enum { CT_CAST = 1, CT_CALL = 2, CT_OK = 3, CT_FAIL = 4 };

/* What the far side does with each request (set by a test). */
enum far_mode { FAR_NONE, FAR_OK_AFTER_DATA, FAR_FAIL_NODE3 };

static struct {
	char path[108];
	int lsock;
	pthread_t thread;
	struct gw_chan gw; /* the gateway's end of the client's channel */
	struct gw_chan_alive *alive; /* held by the fake's thread: it dies with it */
	int alive_fd;
	volatile int stop, mode, data_before;
	volatile uint64_t requests;
} fake;

static void ctl_answer(int s, struct gw_ctl_msg *m)
{
	int fds[GW_CTL_FDS], nfds = 0;
	m->status = 0;
	if (m->op == GW_CTL_HELLO) {
		struct gw_chan_params p = { .ring_count = 8192, .arena_size = 1 << 22, .msg_max = 8192,
					    .rx_parts = 2 }; /* as with two receivers */
		if (gw_chan_alive_create(&fake.alive, &fake.alive_fd) < 0 ||
		    gw_chan_create(&fake.gw, CHAN_ID, SELF, &p) < 0) {
			m->status = -ENOMEM;
		} else {
			/* Nodes 1 (us) and 2 are up; 3 is known but down. */
			fake.gw.shm->nodes_up[0] = 1ull << 1 | 1ull << 2;
			m->arg = CHAN_ID;
			m->arg2 = SELF;
			fds[0] = fake.gw.memfd;
			fds[1] = fake.gw.efd_rx;
			fds[2] = fake.gw.efd_tx;
			fds[3] = fake.alive_fd;
			nfds = GW_CTL_FDS;
		}
	} else if (m->op == GW_CTL_NODE) {
		static const uint32_t flags[] = { 0, GW_CTL_NODE_SELF | GW_CTL_NODE_UP, GW_CTL_NODE_UP, 0 };
		if (m->arg < 1)
			m->arg = 1;
		if (m->arg > 3) {
			m->status = -ENOENT;
		} else {
			m->arg2 = flags[m->arg] | GW_CAP_BATCHING << GW_CTL_NODE_CAPS_SHIFT;
			snprintf(m->name, sizeof(m->name), "n%u", m->arg);
		}
	} else if (m->op != GW_CTL_REGISTER && m->op != GW_CTL_UNREGISTER &&
		   m->op != GW_CTL_SUBSCRIBE && m->op != GW_CTL_UNSUBSCRIBE) {
		m->status = -EOPNOTSUPP;
	}
	gw_ctl_reply(s, m, fds, nfds);
}

/* Into the client's RX ring, as the receiver role would. */
static void deliver(uint16_t node, uint32_t ep, uint16_t kind, const void *data, uint16_t len)
{
	struct gw_chan_desc d = { .len = len, .node = node, .ep = ep, .chan = 9, .kind = kind };
	CU_ASSERT_FATAL(gw_chan_deliver(&fake.gw, 0, d, data) == 0);
	gw_chan_publish(&fake.gw, 0);
}

static void deliver_reply(uint16_t node, uint32_t call_id, uint8_t type, const void *data,
			  uint16_t len)
{
	char name[GW_NAME_MAX];
	gw_ctl_reply_ep_name(name, sizeof(name), CHAN_ID);
	uint8_t buf[512];
	struct call_hdr h = { .magic = 0xc7, .type = type, .call_id = call_id };
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), data, len);
	deliver(node, gw_ctl_ep_id(name), GW_RK_MSG, buf, (uint16_t)(sizeof(h) + len));
}

static void deliver_reject(uint16_t node, uint32_t msg_id, int err)
{
	struct gw_chan_reject r = { .err = err, .msg_id = msg_id, .node = node };
	deliver(SELF, 1234, GW_RK_REJECT, &r, sizeof(r));
}

/* The next request the client sent (waits up to a second). */
static bool take(struct gw_chan_msg *m, struct call_hdr *h)
{
	for (int i = 0; i < 1000; i++) {
		if (gw_chan_peek(&fake.gw, GW_CLASS_BULK, m, 1) == 1) {
			memcpy(h, m->data, sizeof(*h));
			gw_chan_consume(&fake.gw, GW_CLASS_BULK, 1);
			return true;
		}
		usleep(1000);
	}
	return false;
}

/* The far side, when a test wants one: answers requests by fake.mode. */
static void far_side(void)
{
	struct gw_chan_msg m;
	while (fake.gw.shm && gw_chan_peek(&fake.gw, GW_CLASS_BULK, &m, 1) == 1) {
		struct call_hdr h;
		uint8_t body[256];
		uint16_t len = (uint16_t)(m.len - sizeof(h));
		memcpy(&h, m.data, sizeof(h));
		memcpy(body, m.data + sizeof(h), len < sizeof(body) ? len : sizeof(body));
		uint16_t node = m.node;
		gw_chan_consume(&fake.gw, GW_CLASS_BULK, 1);
		fake.requests++;
		if (h.type != CT_CALL)
			continue;
		for (int i = 0; fake.mode == FAR_OK_AFTER_DATA && i < fake.data_before; i++) {
			uint32_t v = (uint32_t)i;
			deliver(node, gw_ctl_ep_id("inbox"), GW_RK_MSG, &v, sizeof(v));
		}
		if (fake.mode == FAR_FAIL_NODE3 && node == 3)
			deliver_reply(node, h.call_id, CT_FAIL, "no", 2);
		else
			deliver_reply(node, h.call_id, CT_OK, body, len);
	}
}

static void *fake_main(void *arg)
{
	int s = accept(fake.lsock, NULL, NULL);
	while (!fake.stop) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		if (poll(&p, 1, 1) == 1) {
			struct gw_ctl_msg m;
			if (recv(s, &m, sizeof(m), 0) != sizeof(m))
				break;
			ctl_answer(s, &m);
		}
		if (fake.mode != FAR_NONE)
			far_side();
	}
	close(s);
	return NULL;
}

static struct gw_client *start(void)
{
	memset(&fake, 0, sizeof(fake));
	snprintf(fake.path, sizeof(fake.path), "/tmp/gw-test-call-%d.sock", getpid());
	unlink(fake.path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	strcpy(sa.sun_path, fake.path);
	fake.lsock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CU_ASSERT_FATAL(bind(fake.lsock, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(fake.lsock, 1) == 0);
	pthread_create(&fake.thread, NULL, fake_main, NULL);
	struct gw_client *cl = NULL;
	CU_ASSERT_FATAL(gw_connect(fake.path, &cl) == 0);
	return cl;
}

/* The gateway goes away: its thread closes the control socket. */
static void fake_quit(void)
{
	if (fake.stop)
		return;
	fake.stop = 1;
	pthread_join(fake.thread, NULL);
}

static void stop(struct gw_client *cl)
{
	fake_quit();
	gw_close(cl);
	gw_chan_close(&fake.gw);
	/* Its owner has gone: the page goes without an unlock. */
	munmap(fake.alive, sizeof(*fake.alive));
	close(fake.alive_fd);
	close(fake.lsock);
	unlink(fake.path);
}

/* Every way one call ends, through gw_call_start and gw_recv. */
static void test_outcomes(void)
{
	struct gw_client *cl = start();
	uint32_t id[4];
	struct gw_chan_msg m;
	struct call_hdr h;
	struct gw_msg r;
	for (int i = 0; i < 4; i++)
		CU_ASSERT_FATAL(gw_call_start(cl, 2, "svc", "q", 1, 5000, &id[i]) == 0);
	uint32_t msg_id[4];
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_FATAL(take(&m, &h));
		CU_ASSERT(h.magic == 0xc7 && h.type == CT_CALL && h.call_id == id[i]);
		CU_ASSERT(m.ep == gw_endpoint_id("svc") && m.node == 2);
		msg_id[i] = m.msg_id;
	}
	deliver_reply(2, id[0], CT_OK, "yes", 3);
	deliver_reply(2, id[1], CT_FAIL, "broken", 6);
	deliver_reject(2, msg_id[2], -ENOENT);
	deliver_reject(2, msg_id[3], -EHOSTDOWN);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REPLY && r.call_id == id[0] && r.error == 0 && r.node == 2);
	CU_ASSERT(r.len == 3 && !memcmp(r.data, "yes", 3));
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.call_id == id[1] && r.error == -EREMOTEIO && r.len == 6);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.call_id == id[2] && r.error == -ENOENT && r.node == 2);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.call_id == id[3] && r.error == -EHOSTDOWN && r.node == 2);
	/* A second outcome for an ended call is dropped, not handed out. */
	deliver_reply(2, id[0], CT_OK, "again", 5);
	deliver_reject(2, msg_id[1], -ENOENT);
	CU_ASSERT_EQUAL(gw_recv(cl, &r, 50), -ETIMEDOUT);
	/* A plain send's REJECT is still a REJECT, naming the node it was for. */
	CU_ASSERT(gw_send(cl, 2, "x", "m", 1, 0) == 0);
	CU_ASSERT_FATAL(take(&m, &h));
	deliver_reject(2, m.msg_id, -ENOENT);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REJECT && r.msg_id == m.msg_id && r.node == 2);
	stop(cl);
}

/* A timeout ends a call; its late reply and late REJECT are dropped. */
static void test_timeout_and_late(void)
{
	struct gw_client *cl = start();
	uint32_t a, b;
	struct gw_chan_msg m1, m2;
	struct call_hdr h;
	struct gw_msg r;
	CU_ASSERT_FATAL(gw_call_start(cl, 2, "svc", "q", 1, 30, &a) == 0);
	CU_ASSERT_FATAL(gw_call_start(cl, 2, "svc", "q", 1, 30, &b) == 0);
	CU_ASSERT_FATAL(take(&m1, &h) && take(&m2, &h));
	CU_ASSERT_FATAL(gw_recv(cl, &r, 5000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REPLY && r.error == -ETIMEDOUT);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 5000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REPLY && r.error == -ETIMEDOUT);
	deliver_reply(2, a, CT_OK, "late", 4);
	deliver_reject(2, m2.msg_id, -ENOENT);
	CU_ASSERT_EQUAL(gw_recv(cl, &r, 50), -ETIMEDOUT);
	/* Synchronous, with nobody answering. */
	CU_ASSERT_EQUAL(gw_call(cl, 2, "svc", "q", 1, 30, &r), -ETIMEDOUT);
	/* Bad arguments and a node that is not up: refused at once. */
	CU_ASSERT_EQUAL(gw_call(cl, 2, "svc", "q", 1, 0, &r), -EINVAL);
	CU_ASSERT_EQUAL(gw_call(cl, 3, "svc", "q", 1, 100, &r), -EHOSTUNREACH);
	stop(cl);
}

/* A node going down ends its calls at once, however long their timeout. */
static void test_node_down(void)
{
	struct gw_client *cl = start();
	uint32_t id, other;
	struct gw_chan_msg m;
	struct call_hdr h;
	struct gw_msg r;
	CU_ASSERT_FATAL(gw_call_start(cl, 2, "svc", "q", 1, 60000, &id) == 0);
	CU_ASSERT_FATAL(gw_call_start(cl, SELF, "svc", "q", 1, 60000, &other) == 0);
	CU_ASSERT_FATAL(take(&m, &h) && take(&m, &h));
	__atomic_fetch_and(&fake.gw.shm->nodes_up[0], ~(1ull << 2), __ATOMIC_RELEASE);
	gw_chan_publish(&fake.gw, 0);
	/* Well before the 60 s: if this took the timeout, it would say so. */
	CU_ASSERT_FATAL(gw_recv(cl, &r, 10000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REPLY && r.call_id == id && r.error == -EHOSTDOWN && r.node == 2);
	/* The gateway's own REJECT of the request, arriving after, is dropped;
	 * the call to our own node goes on. */
	deliver_reject(2, m.msg_id - 1, -EHOSTDOWN);
	deliver_reply(SELF, other, CT_OK, "ok", 2);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.call_id == other && r.error == 0);
	stop(cl);
}

/* gw_call keeps what arrives meanwhile for gw_recv, in order, and bounds it. */
static void test_keep_and_bound(void)
{
	struct gw_client *cl = start();
	struct gw_msg r;
	CU_ASSERT(gw_register(cl, "inbox") == 0);
	fake.data_before = 10;
	fake.mode = FAR_OK_AFTER_DATA;
	CU_ASSERT_EQUAL(gw_call(cl, 2, "svc", "abc", 3, 5000, &r), 0);
	CU_ASSERT(r.len == 3 && !memcmp(r.data, "abc", 3));
	for (uint32_t i = 0; i < 10; i++) {
		uint32_t v;
		CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
		memcpy(&v, r.data, sizeof(v));
		CU_ASSERT(r.kind == GW_MSG_DATA && v == i);
	}
	/* More than GW_CALL_KEEP before the reply: the call gives up, nothing is lost. */
	fake.data_before = GW_CALL_KEEP + 10;
	CU_ASSERT_EQUAL(gw_call(cl, 2, "svc", "abc", 3, 5000, &r), -EOVERFLOW);
	CU_ASSERT_EQUAL(gw_call(cl, 2, "svc", "abc", 3, 5000, &r), -EOVERFLOW); /* not even sent */
	fake.mode = FAR_NONE;
	uint32_t n = 0, inorder = 0;
	while (gw_recv(cl, &r, 100) == 0 && r.kind == GW_MSG_DATA) {
		uint32_t v;
		memcpy(&v, r.data, sizeof(v));
		inorder += v == n++;
	}
	CU_ASSERT_EQUAL(n, GW_CALL_KEEP + 10);
	CU_ASSERT_EQUAL(inorder, n);
	stop(cl);
}

/* The patterns' policies, node 2 answering ok, node 3 down (or failing). */
static void test_patterns(void)
{
	struct gw_client *cl = start();
	fake.mode = FAR_FAIL_NODE3;
	struct gw_result one, res[3];
	uint16_t l1[] = { 3, 2 };
	CU_ASSERT_EQUAL(gw_call_one(cl, l1, 2, "svc", "q", 1, 1000, 0, &one), 0);
	CU_ASSERT(one.node == 2 && one.len == 1);
	gw_results_free(&one, 1);
	CU_ASSERT_EQUAL(gw_call_any(cl, l1, 2, "svc", "q", 1, 1000, 0, &one), 0);
	CU_ASSERT(one.node == 2);
	gw_results_free(&one, 1);
	/* Node 3 is down: ignored, unless badrpc counts. */
	CU_ASSERT_EQUAL(gw_call_all(cl, l1, 2, "svc", "q", 1, 1000, 0, res), 0);
	CU_ASSERT(res[0].error == -EHOSTUNREACH && res[1].error == 0);
	gw_results_free(res, 2);
	CU_ASSERT_EQUAL(gw_call_all(cl, l1, 2, "svc", "q", 1, 1000, GW_BADRPC_ERRORS, res),
			-EHOSTUNREACH);
	gw_results_free(res, 2);
	/* Node 3 up and failing: call_all fails, call_all_wait counts. */
	__atomic_fetch_or(&fake.gw.shm->nodes_up[0], 1ull << 3, __ATOMIC_RELEASE);
	uint16_t l2[] = { 2, 3, 9 };
	CU_ASSERT_EQUAL(gw_call_all(cl, l2, 2, "svc", "q", 1, 1000, 0, res), -EREMOTEIO);
	gw_results_free(res, 2);
	CU_ASSERT_EQUAL(gw_call_all_wait(cl, l2, 3, "svc", "q", 1, 1000, res), 1);
	CU_ASSERT(res[0].error == 0 && res[1].error == -EREMOTEIO && res[2].error == -EHOSTUNREACH);
	CU_ASSERT(res[1].len == 2 && !memcmp(res[1].data, "no", 2) && res[2].node == 9);
	gw_results_free(res, 3);
	/* cast_one: this node first when listed; cast_all: who took it. */
	uint16_t l3[] = { 2, SELF };
	CU_ASSERT_EQUAL(gw_cast_one(cl, l3, 2, "svc", "c", 1), SELF);
	CU_ASSERT_EQUAL(gw_cast_all(cl, l2, 3, "svc", "c", 1, 0), 2);
	CU_ASSERT_EQUAL(gw_cast_all(cl, l2, 3, "svc", "c", 1, GW_BADRPC_ERRORS), -EHOSTUNREACH);
	/* The node list, with capabilities. */
	struct gw_node_info nodes[8];
	CU_ASSERT_EQUAL(gw_nodes(cl, nodes, 8), 3);
	CU_ASSERT(nodes[0].self && nodes[1].up && !nodes[2].up && nodes[1].caps == GW_NODE_BATCHING);
	stop(cl);
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

/* The event-loop API: arm, no lost wake-up, the deadline of a call, a
 * non-blocking answer, and the gateway going away. */
static void test_event_loop(void)
{
	struct gw_client *cl = start();
	int fds[2];
	struct gw_msg r;
	CU_ASSERT_FATAL(gw_wait_fds(cl, GW_WAIT_RECV, fds) == 0);
	CU_ASSERT(fds[0] >= 0 && fds[1] >= 0 && fds[0] != fds[1]);
	CU_ASSERT_EQUAL(gw_wait_ms(cl), -1);
	CU_ASSERT_EQUAL(gw_recv(cl, &r, 0), -EAGAIN);
	CU_ASSERT_EQUAL(gw_arm(cl, GW_WAIT_RECV), 0);
	CU_ASSERT(!readable(fds[0]));
	deliver(2, gw_endpoint_id("me"), GW_RK_MSG, "hello", 5);
	CU_ASSERT(readable(fds[0])); /* armed: the delivery signalled it */
	CU_ASSERT_FATAL(gw_recv(cl, &r, 0) == 0);
	CU_ASSERT(r.kind == GW_MSG_DATA && r.len == 5);
	/* A delivery between the last empty gw_recv and the arm: gw_arm says so. */
	CU_ASSERT_EQUAL(gw_recv(cl, &r, 0), -EAGAIN);
	deliver(2, gw_endpoint_id("me"), GW_RK_MSG, "again", 5);
	CU_ASSERT_EQUAL(gw_arm(cl, GW_WAIT_RECV), 1);
	CU_ASSERT(!readable(fds[0])); /* gw_arm cleared it */
	CU_ASSERT_FATAL(gw_recv(cl, &r, 0) == 0);
	/* A call in flight bounds the sleep; its timeout comes out of gw_recv. */
	uint32_t id;
	CU_ASSERT_FATAL(gw_call_start(cl, 2, "svc", "q", 1, 30, &id) == 0);
	int ms = gw_wait_ms(cl);
	CU_ASSERT(ms >= 0 && ms <= 30);
	usleep(40 * 1000);
	CU_ASSERT_EQUAL(gw_wait_ms(cl), 0);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 0) == 0);
	CU_ASSERT(r.kind == GW_MSG_REPLY && r.call_id == id && r.error == -ETIMEDOUT);
	CU_ASSERT_EQUAL(gw_wait_ms(cl), -1);
	/* An answer from a copy of a request's fields, without waiting. */
	struct gw_msg req = { .kind = GW_MSG_REQUEST, .node = 2, .sender = 7, .call_id = 99 };
	struct gw_chan_msg m;
	struct call_hdr h;
	CU_ASSERT_FATAL(take(&m, &h) && h.type == CT_CALL); /* the request that timed out */
	CU_ASSERT_EQUAL(gw_respond(cl, &req, 1, "no", 2, 0), 0);
	CU_ASSERT_FATAL(take(&m, &h));
	CU_ASSERT(h.type == CT_FAIL && h.call_id == 99 && m.node == 2 && m.len == sizeof(h) + 2);
	req.kind = GW_MSG_DATA;
	CU_ASSERT_EQUAL(gw_respond(cl, &req, 0, "x", 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(gw_arm(cl, 7), -EINVAL);
	/* A call cancelled: no outcome comes, even when its reply does, and
	 * its slot is free at once. */
	CU_ASSERT_FATAL(gw_call_start(cl, 2, "svc", "q", 1, 5000, &id) == 0);
	CU_ASSERT_EQUAL(gw_call_cancel(cl, id), 0);
	CU_ASSERT_EQUAL(gw_call_cancel(cl, id), -ENOENT);
	CU_ASSERT_EQUAL(gw_wait_ms(cl), -1);
	deliver_reply(2, id, CT_OK, "late", 4);
	CU_ASSERT_EQUAL(gw_recv(cl, &r, 0), -EAGAIN);
	{
		struct gw_chan_msg cm;
		struct call_hdr ch;
		CU_ASSERT_FATAL(take(&cm, &ch) && ch.call_id == id); /* its request */
	}
	/* A service unregistered is a service no more; served again, it is. */
	struct call_hdr q = { .magic = 0xc7, .type = CT_CALL, .call_id = 5 };
	uint8_t buf[sizeof(q) + 1];
	memcpy(buf, &q, sizeof(q));
	buf[sizeof(q)] = 'x';
	CU_ASSERT_FATAL(gw_service(cl, "svc2") == 0);
	deliver(2, gw_endpoint_id("svc2"), GW_RK_MSG, buf, sizeof(buf));
	CU_ASSERT(gw_recv(cl, &r, 1000) == 0 && r.kind == GW_MSG_REQUEST);
	CU_ASSERT_FATAL(gw_unregister(cl, "svc2") == 0);
	deliver(2, gw_endpoint_id("svc2"), GW_RK_MSG, buf, sizeof(buf));
	CU_ASSERT(gw_recv(cl, &r, 1000) == 0 && r.kind == GW_MSG_DATA);
	CU_ASSERT_FATAL(gw_service(cl, "svc2") == 0);
	deliver(2, gw_endpoint_id("svc2"), GW_RK_MSG, buf, sizeof(buf));
	CU_ASSERT(gw_recv(cl, &r, 1000) == 0 && r.kind == GW_MSG_REQUEST);
	/* The gateway goes: the second descriptor turns readable, gw_arm says -EPIPE. */
	fake_quit();
	for (int i = 0; i < 1000 && !readable(fds[1]); i++)
		usleep(1000);
	CU_ASSERT(readable(fds[1]));
	CU_ASSERT_EQUAL(gw_arm(cl, GW_WAIT_RECV), -EPIPE);
	stop(cl);
}

/*
 * The urgent class: its sends go into a ring of their own (so they can be
 * taken ahead of bulk ones sent before them), counted apart for REJECTs;
 * a request that came urgent is answered urgent; bad flags are -EINVAL.
 */
static void test_urgent(void)
{
	struct gw_client *cl = start();
	struct gw_chan_msg m[4];
	struct gw_msg r;
	CU_ASSERT(gw_send_flags(cl, 2, "ep", "b0", 2, 0, 0) == 0);
	CU_ASSERT(gw_send_flags(cl, 2, "ep", "u0", 2, 0, GW_URGENT) == 0);
	CU_ASSERT(gw_send_flags(cl, 2, "ep", "u1", 2, 0, GW_URGENT) == 0);
	CU_ASSERT_EQUAL(gw_send_flags(cl, 2, "ep", "x", 1, 0, 0x4), -EINVAL);
	CU_ASSERT_EQUAL(gw_send_flags(cl, 2, "ep", "x", 1, 0, GW_BADRPC_ERRORS), -EINVAL);
	CU_ASSERT_EQUAL(gw_cast_flags(cl, 2, "svc", "x", 1, 0, 0x8000), -EINVAL);
	uint32_t id;
	CU_ASSERT_EQUAL(gw_call_start_flags(cl, 2, "svc", "x", 1, 100, 2, &id), -EINVAL);
	/* Urgent first, in order, whatever bulk waits. */
	CU_ASSERT_EQUAL_FATAL(gw_chan_peek(&fake.gw, GW_CLASS_URGENT, m, 4), 2);
	CU_ASSERT(!memcmp(m[0].data, "u0", 2) && !memcmp(m[1].data, "u1", 2));
	CU_ASSERT(m[0].msg_id == GW_MSG_ID_URGENT && m[1].msg_id == (GW_MSG_ID_URGENT | 1));
	gw_chan_consume(&fake.gw, GW_CLASS_URGENT, 2);
	CU_ASSERT_EQUAL_FATAL(gw_chan_peek(&fake.gw, GW_CLASS_BULK, m, 4), 1);
	CU_ASSERT(!memcmp(m[0].data, "b0", 2) && m[0].msg_id == 0);
	gw_chan_consume(&fake.gw, GW_CLASS_BULK, 1);
	CU_ASSERT(gw_flush(cl, 1000) == 0);
	/* An urgent call's REJECT finds its call by the urgent count. */
	CU_ASSERT_FATAL(gw_call_start_flags(cl, 2, "svc", "q", 1, 5000, GW_URGENT, &id) == 0);
	CU_ASSERT_EQUAL_FATAL(gw_chan_peek(&fake.gw, GW_CLASS_URGENT, m, 1), 1);
	CU_ASSERT(m[0].msg_id == (GW_MSG_ID_URGENT | 2));
	gw_chan_consume(&fake.gw, GW_CLASS_URGENT, 1);
	deliver_reject(2, m[0].msg_id, -ENOENT);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REPLY && r.call_id == id && r.error == -ENOENT);
	/* A request that came urgent: flagged, and its reply goes urgent. */
	CU_ASSERT_FATAL(gw_service(cl, "svc") == 0);
	uint8_t req[sizeof(struct call_hdr) + 1];
	struct call_hdr h = { .magic = 0xc7, .type = CT_CALL, .call_id = 42 };
	memcpy(req, &h, sizeof(h));
	req[sizeof(h)] = 'q';
	deliver(2, gw_endpoint_id("svc"), GW_RK_MSG | GW_CHAN_KIND_URGENT, req, sizeof(req));
	deliver(2, gw_endpoint_id("svc"), GW_RK_MSG, req, sizeof(req));
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REQUEST && r.flags == GW_URGENT);
	CU_ASSERT(gw_reply(cl, &r, "a", 1) == 0);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 1000) == 0);
	CU_ASSERT(r.kind == GW_MSG_REQUEST && r.flags == 0);
	CU_ASSERT(gw_reply(cl, &r, "b", 1) == 0);
	CU_ASSERT_EQUAL(gw_chan_peek(&fake.gw, GW_CLASS_URGENT, m, 4), 1);
	CU_ASSERT_EQUAL(gw_chan_peek(&fake.gw, GW_CLASS_BULK, m, 4), 1);
	stop(cl);
}

/*
 * The gateway dies with sends in flight: from that moment nothing is taken
 * and no node is up; gw_recv hands out what was delivered, then one
 * REJECT (-EPIPE) per send not settled, in order per class, naming where
 * each was going (a call's request ends its call), then -EPIPE.
 */
static void test_gateway_gone(void)
{
	struct gw_client *cl = start();
	struct gw_chan_msg m[8];
	struct gw_msg r;
	uint32_t call_id;
	for (int i = 0; i < 9; i++)
		CU_ASSERT_FATAL(gw_send(cl, 2, "sink", "x", 1, 0) == 0);
	CU_ASSERT_FATAL(gw_call_start(cl, 2, "svc", "q", 1, 60000, &call_id) == 0); /* send 9 */
	for (int i = 0; i < 2; i++)
		CU_ASSERT_FATAL(gw_send_flags(cl, 2, "alarm", "u", 1, 0, GW_URGENT) == 0);
	CU_ASSERT_EQUAL(gw_unconfirmed(cl), 12);
	/* The worker's part: 2 sends in frame 1, 2 more in frame 2; frame 1
	 * acked (everything below 2 settled), frame 2 not. */
	CU_ASSERT_EQUAL(gw_chan_peek(&fake.gw, GW_CLASS_BULK, m, 2), 2);
	gw_chan_consume(&fake.gw, GW_CLASS_BULK, 2);
	gw_chan_checkpoint(&fake.gw, GW_CLASS_BULK, 1);
	CU_ASSERT_EQUAL(gw_chan_peek(&fake.gw, GW_CLASS_BULK, m, 2), 2);
	gw_chan_consume(&fake.gw, GW_CLASS_BULK, 2);
	gw_chan_checkpoint(&fake.gw, GW_CLASS_BULK, 2);
	gw_chan_settle(&fake.gw, GW_CLASS_BULK, 2);
	CU_ASSERT_EQUAL(gw_unconfirmed(cl), 10);
	uint32_t v = 7;
	deliver(2, gw_endpoint_id("inbox"), GW_RK_MSG, &v, sizeof(v));
	CU_ASSERT_EQUAL(gw_node_up(cl, 2), 1);
	fake_quit(); /* its thread ends: the kernel marks the liveness word */
	CU_ASSERT_EQUAL(gw_send(cl, 2, "sink", "x", 1, 0), -EPIPE);
	CU_ASSERT_EQUAL(gw_send_flags(cl, 2, "alarm", "u", 1, -1, GW_URGENT), -EPIPE);
	CU_ASSERT_EQUAL(gw_call_start(cl, 2, "svc", "q", 1, 1000, &call_id), -EPIPE);
	CU_ASSERT_EQUAL(gw_node_up(cl, 2), 0);
	CU_ASSERT_EQUAL(gw_node_up(cl, SELF), 0);
	CU_ASSERT_EQUAL(gw_flush(cl, 100), -EPIPE);
	struct gw_node_info ni[4];
	CU_ASSERT_EQUAL(gw_nodes(cl, ni, 4), -EPIPE);
	CU_ASSERT_EQUAL(gw_unconfirmed(cl), 10);
	CU_ASSERT_FATAL(gw_recv(cl, &r, 0) == 0);
	CU_ASSERT(r.kind == GW_MSG_DATA && r.len == sizeof(v));
	for (uint32_t id = 2; id < 9; id++) {
		CU_ASSERT_FATAL(gw_recv(cl, &r, 0) == 0);
		CU_ASSERT(r.kind == GW_MSG_REJECT && r.error == -EPIPE && r.msg_id == id);
		CU_ASSERT(r.node == 2 && r.endpoint == gw_endpoint_id("sink"));
	}
	CU_ASSERT_FATAL(gw_recv(cl, &r, 0) == 0);
	CU_ASSERT(r.kind == GW_MSG_REPLY && r.call_id == call_id && r.error == -EPIPE);
	for (uint32_t id = 0; id < 2; id++) {
		CU_ASSERT_FATAL(gw_recv(cl, &r, -1) == 0);
		CU_ASSERT(r.kind == GW_MSG_REJECT && r.error == -EPIPE &&
			  r.msg_id == (id | GW_MSG_ID_URGENT) && r.flags == GW_URGENT);
		CU_ASSERT(r.endpoint == gw_endpoint_id("alarm"));
	}
	CU_ASSERT_EQUAL(gw_unconfirmed(cl), 0);
	CU_ASSERT_EQUAL(gw_recv(cl, &r, -1), -EPIPE);
	CU_ASSERT_EQUAL(gw_recv(cl, &r, 0), -EPIPE);
	stop(cl);
}

/*
 * The gateway dying between two looks of a call. This suite links the
 * library's objects itself and stands between them and the liveness word
 * (-Wl,--wrap, test/meson.build): armed, the word reads alive for
 * `looks_left` more looks, then dead, while the fake gateway lives on.
 */
static int looks_left = -1; /* -1: the word as it is */
static unsigned dead_looks;

bool __real_gw_chan_gateway_lives(const struct gw_chan *c);
bool __real_gw_chan_gateway_gone(const struct gw_chan *c);

bool __wrap_gw_chan_gateway_lives(const struct gw_chan *c)
{
	if (looks_left < 0)
		return __real_gw_chan_gateway_lives(c);
	if (looks_left == 0) {
		dead_looks++;
		return false;
	}
	looks_left--;
	return true;
}

bool __wrap_gw_chan_gateway_gone(const struct gw_chan *c)
{
	return !__wrap_gw_chan_gateway_lives(c) || __real_gw_chan_gateway_gone(c);
}

static const char *const api_names[] = {
	"gw_send", "gw_send_flags (urgent)", "gw_send_id", "gw_publish", "gw_cast",
	"gw_call_start", "gw_call", "gw_reply", "gw_cast_one", "gw_cast_all", "gw_call_one",
	"gw_call_any", "gw_call_all", "gw_call_all_wait", "gw_register", "gw_unregister",
	"gw_service", "gw_subscribe", "gw_unsubscribe", "gw_nodes", "gw_flush", "gw_arm",
	"gw_wait_fds", "gw_node_up",
};

/* API call i, with arguments that succeed while the gateway lives. */
static int api_call(struct gw_client *cl, unsigned i)
{
	static const uint16_t nodes[] = { 2, 3 }; /* 3 is down */
	struct gw_msg r, req = { .kind = GW_MSG_REQUEST, .node = 2, .sender = 9, .call_id = 1 };
	struct gw_result res[2];
	struct gw_node_info ni[4];
	uint32_t id;
	int fds[2], rc;
	switch (i) {
	case 0: return gw_send(cl, 2, "sink", "x", 1, 0);
	case 1: return gw_send_flags(cl, 2, "alarm", "u", 1, 0, GW_URGENT);
	case 2: return gw_send_id(cl, 2, gw_endpoint_id("sink"), "x", 1, 0);
	case 3: return gw_publish(cl, "topic", "p", 1, 0, 0);
	case 4: return gw_cast(cl, 2, "svc", "c", 1, 0);
	case 5: return gw_call_start(cl, 2, "svc", "q", 1, 1000, &id);
	case 6: return gw_call(cl, 2, "svc", "q", 1, 1000, &r);
	case 7: return gw_reply(cl, &req, "r", 1);
	case 8: return gw_cast_one(cl, nodes, 2, "svc", "c", 1);
	case 9: return gw_cast_all(cl, nodes, 2, "svc", "c", 1, 0);
	case 10:
		rc = gw_call_one(cl, nodes, 2, "svc", "q", 1, 1000, 0, res);
		gw_results_free(res, 1);
		return rc;
	case 11:
		rc = gw_call_any(cl, nodes, 2, "svc", "q", 1, 1000, 0, res);
		gw_results_free(res, 1);
		return rc;
	case 12:
		rc = gw_call_all(cl, nodes, 2, "svc", "q", 1, 1000, 0, res);
		gw_results_free(res, 2);
		return rc == -EHOSTUNREACH ? 0 : rc; /* node 3 is down: that is the answer */
	case 13:
		rc = gw_call_all_wait(cl, nodes, 2, "svc", "q", 1, 1000, res);
		gw_results_free(res, 2);
		return rc;
	case 14: return gw_register(cl, "ep");
	case 15: return gw_unregister(cl, "ep");
	case 16: return gw_service(cl, "svc2");
	case 17: return gw_subscribe(cl, "topic", GW_SUB_HOLD);
	case 18: return gw_unsubscribe(cl, "topic");
	case 19: return gw_nodes(cl, ni, 4);
	case 20: return gw_flush(cl, 10);
	case 21: return gw_arm(cl, GW_WAIT_RECV);
	case 22: return gw_wait_fds(cl, GW_WAIT_RECV, fds);
	default: return gw_node_up(cl, 2) ? 0 : -EPIPE; /* with it gone, no node is up */
	}
}

/*
 * Every call, with the gateway dying at each of its looks in turn: the
 * first look (the word dead, the library not yet told) gives -EPIPE, and
 * a death seen at any later look gives success or -EPIPE, never an error
 * that follows from the death (a node read down, a wait run out).
 */
static void test_gone_window(void)
{
	_Static_assert(sizeof(api_names) / sizeof(api_names[0]) == 24, "one name per call");
	for (unsigned i = 0; i < sizeof(api_names) / sizeof(api_names[0]); i++) {
		for (int looks = 0;; looks++) {
			struct gw_client *cl = start();
			fake.mode = FAR_OK_AFTER_DATA; /* calls are answered */
			dead_looks = 0;
			looks_left = looks;
			int rc = api_call(cl, i);
			bool died = dead_looks > 0;
			looks_left = -1;
			stop(cl);
			bool ok = looks == 0 ? rc == -EPIPE : !died || rc >= 0 || rc == -EPIPE;
			if (!ok)
				fprintf(stderr, "\n%s, the gateway dead from look %d on: %d (%s)\n",
					api_names[i], looks + 1, rc, gw_strerror(rc));
			CU_ASSERT(ok);
			if (!died)
				break; /* it made fewer looks than that: every one is tried */
			CU_ASSERT_FATAL(looks < 64);
		}
	}
}

int main(void)
{
	static const struct gw_test_case cases[] = {
		{ "every way a call ends", test_outcomes },
		{ "timeouts and late outcomes", test_timeout_and_late },
		{ "a node going down ends its calls", test_node_down },
		{ "gw_call keeps other messages, bounded", test_keep_and_bound },
		{ "pattern policies", test_patterns },
		{ "the event-loop API", test_event_loop },
		{ "the urgent class", test_urgent },
		{ "the gateway gone: nothing taken, every send in doubt told", test_gateway_gone },
		{ "the gateway dying between two looks of any call: -EPIPE", test_gone_window },
		{ NULL, NULL },
	};
	return gw_test_run("call", cases);
}
