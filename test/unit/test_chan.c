/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_chan: the shared-memory channel, both ends, in one and in two processes. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "gw_chan.h"
#include "gw_ctl.h"
#include "gw_test.h"

static const struct gw_chan_params small = { .ring_count = 64, .arena_size = 4096, .msg_max = 1024, .rx_parts = 1 };

/* A gateway end and a client end of one region, as the control socket would make them. */
static void pair(struct gw_chan *gw, struct gw_chan *cl, const struct gw_chan_params *p)
{
	CU_ASSERT_FATAL(gw_chan_create(gw, 7, 1, p) == 0);
	CU_ASSERT_FATAL(gw_chan_attach(cl, dup(gw->memfd), dup(gw->efd_rx), dup(gw->efd_tx)) == 0);
}

static void test_round_trip(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	CU_ASSERT(cl.chan_id == 7);
	CU_ASSERT(gw_chan_send(&cl, 2, 0xabcd, "hello", 5) == 0);
	CU_ASSERT(gw_chan_send(&cl, 3, 0xbeef, "world!", 6) == 0);
	struct gw_chan_msg m[4];
	CU_ASSERT_EQUAL_FATAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, 4), 2);
	CU_ASSERT(m[0].len == 5 && m[0].node == 2 && m[0].ep == 0xabcd && m[0].msg_id == 0);
	CU_ASSERT(memcmp(m[0].data, "hello", 5) == 0);
	CU_ASSERT(m[1].len == 6 && m[1].node == 3 && m[1].msg_id == 1);
	/* Peeking again without consuming shows the same messages. */
	CU_ASSERT_EQUAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, 4), 2);
	gw_chan_consume(&gw, GW_CLASS_BULK, 1);
	CU_ASSERT_EQUAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, 4), 1);
	CU_ASSERT(m[0].msg_id == 1 && memcmp(m[0].data, "world!", 6) == 0);
	gw_chan_consume(&gw, GW_CLASS_BULK, 1);
	CU_ASSERT_EQUAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, 4), 0);

	struct gw_chan_desc d = { .len = 3, .node = 9, .ep = 42, .chan = 5, .kind = 1 };
	CU_ASSERT(gw_chan_rx_unread_below(&gw, 0, 1));
	CU_ASSERT(gw_chan_deliver(&gw, 0, d, "abc") == 0);
	CU_ASSERT(!gw_chan_rx_unread_below(&gw, 0, 1) && gw_chan_rx_unread_below(&gw, 0, 2));
	struct gw_chan_desc r;
	const uint8_t *data;
	/* Deliveries stay unseen until published, one store for a run of them. */
	CU_ASSERT_EQUAL(gw_chan_recv(&cl, &r, &data), -EAGAIN);
	gw_chan_publish(&gw, 0);
	CU_ASSERT_EQUAL(gw_chan_recv(&cl, &r, &data), 3);
	CU_ASSERT(r.node == 9 && r.ep == 42 && r.chan == 5 && r.kind == 1);
	CU_ASSERT(memcmp(data, "abc", 3) == 0);
	gw_chan_recv_done(&cl, &r);
	CU_ASSERT_EQUAL(gw_chan_recv(&cl, &r, &data), -EAGAIN);
	CU_ASSERT(gw_chan_rx_unread_below(&gw, 0, 1)); /* read */
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

static void test_full_and_oversize(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	char big[1025] = { 0 };
	CU_ASSERT_EQUAL(gw_chan_send(&cl, 2, 1, big, 1025), -EMSGSIZE);
	CU_ASSERT_EQUAL(gw_chan_send(&cl, GW_MAX_NODES, 1, big, 1), -EINVAL);
	/* The arena fills first: 4096 bytes take three 1024-byte messages and
	 * a fourth; a fifth must wait. */
	int sent = 0;
	while (gw_chan_send(&cl, 2, 1, big, 1024) == 0)
		sent++;
	CU_ASSERT_EQUAL(sent, 4);
	CU_ASSERT_EQUAL(gw_chan_send(&cl, 2, 1, big, 1024), -EAGAIN);
	/* The urgent class has its own ring and arena (2 x msg_max here):
	 * a full bulk one does not stop it, and it fills on its own. */
	CU_ASSERT_EQUAL(gw_chan_send_hdr(&cl, GW_CLASS_URGENT, 2, 1, NULL, 0, big, 1024), 0);
	CU_ASSERT_EQUAL(gw_chan_send_hdr(&cl, GW_CLASS_URGENT, 2, 1, NULL, 0, big, 1024), 0);
	CU_ASSERT_EQUAL(gw_chan_send_hdr(&cl, GW_CLASS_URGENT, 2, 1, NULL, 0, big, 1024), -EAGAIN);
	CU_ASSERT_EQUAL(gw_chan_send_hdr(&cl, GW_CLASSES, 2, 1, NULL, 0, big, 1), -EINVAL);
	CU_ASSERT_EQUAL(gw_chan_backlog(&gw, GW_CLASS_URGENT), 2);
	CU_ASSERT_EQUAL(gw_chan_backlog(&gw, GW_CLASS_BULK), 4);
	CU_ASSERT(!gw_chan_tx_empty(&cl));
	struct gw_chan_msg m[8];
	CU_ASSERT_EQUAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, 1), 1);
	gw_chan_consume(&gw, GW_CLASS_BULK, 1);
	CU_ASSERT_EQUAL(gw_chan_send(&cl, 2, 1, big, 1024), 0);
	/* The descriptor ring fills with small messages: 63 usable slots. */
	struct gw_chan gw2, cl2;
	pair(&gw2, &cl2, &small);
	sent = 0;
	while (gw_chan_send(&cl2, 2, 1, big, 1) == 0)
		sent++;
	CU_ASSERT_EQUAL(sent, 63);
	/* A full client RX ring refuses delivery without harm. */
	struct gw_chan_desc d = { .len = 1024, .kind = 1 };
	CU_ASSERT_EQUAL(gw_chan_rx_fill_permille(&gw2, 0), 0);
	CU_ASSERT_EQUAL(gw_chan_deliver(&gw2, 0, d, big), 0);
	/* The fuller of the two: a quarter of the arena, 1 of 64 slots. */
	CU_ASSERT_EQUAL(gw_chan_rx_fill_permille(&gw2, 0), 250);
	int n = 1;
	while (gw_chan_deliver(&gw2, 0, d, big) == 0)
		n++;
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_EQUAL(gw_chan_rx_fill_permille(&gw2, 0), 1000);
	CU_ASSERT_EQUAL(gw_chan_deliver(&gw2, 0, d, big), -ENOBUFS);
	d.len = 1025;
	CU_ASSERT_EQUAL(gw_chan_deliver(&gw2, 0, d, big), -EMSGSIZE);
	gw_chan_close(&cl);
	gw_chan_close(&gw);
	gw_chan_close(&cl2);
	gw_chan_close(&gw2);
}

/* Payloads of many sizes through a small arena: never split, never mixed up. */
static void test_wrap(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	uint8_t buf[1024];
	unsigned sent = 0, got = 0;
	while (got < 5000) {
		unsigned len = 1 + (sent * 37) % 1000;
		memset(buf, (int)(sent & 0xff), len);
		if (sent < 5000 && gw_chan_send(&cl, 1, sent, buf, len) == 0) {
			sent++;
			continue;
		}
		struct gw_chan_msg m[GW_CHAN_BURST];
		unsigned n = gw_chan_peek(&gw, GW_CLASS_BULK, m, GW_CHAN_BURST);
		CU_ASSERT_FATAL(n > 0);
		for (unsigned i = 0; i < n; i++, got++) {
			CU_ASSERT_EQUAL(m[i].ep, got);
			CU_ASSERT_EQUAL(m[i].len, 1 + (got * 37) % 1000);
			CU_ASSERT(m[i].data[0] == (got & 0xff) && m[i].data[m[i].len - 1] == (got & 0xff));
		}
		gw_chan_consume(&gw, GW_CLASS_BULK, n);
	}
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

/* A client scribbling on its own region can only hurt itself. */
static void test_garbage(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	struct gw_chan_desc bad[] = {
		{ .pos = 0, .len = 2000, .node = 1 },   /* longer than msg_max */
		{ .pos = 4000, .len = 500, .node = 1 }, /* runs off the arena */
		{ .pos = 0, .len = 10, .node = 999 },   /* no such node */
	};
	for (unsigned k = 0; k < 3; k++) {
		struct gw_chan g2, c2;
		pair(&g2, &c2, &small);
		CU_ASSERT(gw_chan_send(&c2, 1, 1, "ok", 2) == 0);
		rte_ring_sp_enqueue_elem(c2.tx[GW_CLASS_BULK].ring, &bad[k], sizeof(bad[k]));
		struct gw_chan_msg m[4];
		CU_ASSERT_EQUAL(gw_chan_peek(&g2, GW_CLASS_BULK, m, 4), 1); /* the good one before it */
		CU_ASSERT(g2.broken);
		gw_chan_consume(&g2, GW_CLASS_BULK, 1);
		CU_ASSERT_EQUAL(gw_chan_peek(&g2, GW_CLASS_BULK, m, 4), 0);
		gw_chan_close(&c2);
		gw_chan_close(&g2);
	}
	/* A wild rx_tail makes the client's own ring look full, nothing else;
	 * a sane one brings it back. */
	static uint8_t kb[1024];
	struct gw_chan_desc d = { .len = 1024, .kind = 1 };
	cl.shm->rx_tail[0].tail = 0x80000000u;
	int n = 0;
	while (n < 10 && gw_chan_deliver(&gw, 0, d, kb) == 0)
		n++;
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_EQUAL(gw_chan_deliver(&gw, 0, d, kb), -ENOBUFS);
	cl.shm->rx_tail[0].tail = 1024;
	CU_ASSERT_EQUAL(gw_chan_deliver(&gw, 0, d, kb), 0);
	/* The region cannot be shrunk under the gateway. */
	CU_ASSERT(ftruncate(cl.memfd, 4096) < 0 && errno == EPERM);
	/* A region with a bad header is refused by the client. */
	cl.shm->magic = 0;
	struct gw_chan c3;
	CU_ASSERT_EQUAL(gw_chan_attach(&c3, dup(gw.memfd), -1, -1), -EPROTO);
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

/*
 * The ring headers are in the client's memory too. Sizes and masks written
 * there must not steer the gateway outside the region, and an impossible
 * position cuts the client off.
 */
static void test_ring_header_garbage(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	for (int i = 0; i < 10; i++)
		CU_ASSERT(gw_chan_send(&cl, 1, 1, "abcdefgh", 8) == 0);
	cl.tx[GW_CLASS_BULK].ring->size = 0x80000000u;
	cl.tx[GW_CLASS_BULK].ring->mask = 0xffffffffu;
	cl.tx[GW_CLASS_BULK].ring->capacity = 0xffffffffu;
	cl.rx[0].ring->mask = 0xffffffffu;
	struct gw_chan_msg m[GW_CHAN_BURST];
	CU_ASSERT_EQUAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, GW_CHAN_BURST), 10);
	gw_chan_consume(&gw, GW_CLASS_BULK, 10);
	struct gw_chan_desc d = { .len = 4, .kind = 1 };
	for (int i = 0; i < 100; i++)
		gw_chan_deliver(&gw, 0, d, "abcd"); /* stays inside the region: valgrind/ASan would say */
	CU_ASSERT_FALSE(gw.broken);
	/* The client claims a million descriptors: impossible for a 64-slot ring. */
	cl.tx[GW_CLASS_BULK].ring->prod.tail += 1000000;
	CU_ASSERT_EQUAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, GW_CHAN_BURST), 0);
	CU_ASSERT(gw.broken);
	/* A wild consumer position on RX only makes the client's own ring look full. */
	cl.rx[0].ring->cons.tail = gw.rx[0].pos - 5000;
	CU_ASSERT_EQUAL(gw_chan_deliver(&gw, 0, d, "abcd"), -ENOBUFS);
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

/* The real thing: a client process and a gateway process, both directions,
 * the client sleeping on the eventfds whenever it has to wait. */
static void test_two_processes(void)
{
	const struct gw_chan_params p = { .ring_count = 1024, .arena_size = 1 << 16, .msg_max = 512, .rx_parts = 1 };
	const uint64_t n = 300000;
	struct gw_chan gw;
	CU_ASSERT_FATAL(gw_chan_create(&gw, 1, 1, &p) == 0);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct gw_chan cl;
		if (gw_chan_attach(&cl, dup(gw.memfd), dup(gw.efd_rx), dup(gw.efd_tx)) < 0)
			_exit(10);
		uint8_t buf[512];
		for (uint64_t i = 0; i < n; i++) {
			uint32_t len = 16 + (uint32_t)(i % 200);
			memcpy(buf, &i, sizeof(i));
			while (gw_chan_send(&cl, 2, (uint32_t)i, buf, len) == -EAGAIN)
				gw_chan_wait(&cl, true, 1000);
		}
		for (uint64_t i = 0; i < n; i++) {
			struct gw_chan_desc d;
			const uint8_t *data;
			int rc;
			while ((rc = gw_chan_recv(&cl, &d, &data)) == -EAGAIN)
				gw_chan_wait(&cl, false, 1000);
			uint64_t v;
			memcpy(&v, data, sizeof(v));
			if (rc != 8 || v != i)
				_exit(11);
			gw_chan_recv_done(&cl, &d);
		}
		_exit(0);
	}
	uint64_t got = 0, put = 0, bad = 0;
	while (got < n || put < n) {
		struct gw_chan_msg m[GW_CHAN_BURST];
		unsigned k = gw_chan_peek(&gw, GW_CLASS_BULK, m, GW_CHAN_BURST);
		for (unsigned i = 0; i < k; i++, got++) {
			uint64_t v;
			memcpy(&v, m[i].data, sizeof(v));
			bad += v != got || m[i].len != 16 + got % 200 || m[i].ep != (uint32_t)got;
		}
		gw_chan_consume(&gw, GW_CLASS_BULK, k);
		struct gw_chan_desc d = { .len = 8, .kind = 1 };
		while (put < n && gw_chan_deliver(&gw, 0, d, &put) == 0)
			put++;
		gw_chan_publish(&gw, 0);
		if (!k)
			usleep(10);
	}
	int status;
	waitpid(pid, &status, 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(got, n);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gw_chan_close(&gw);
}

/*
 * Two receivers, each with its own RX part, deliver at once into one
 * channel: the client gets every message once, each receiver's in its
 * order, and the parts take turns.
 */
struct part_feed {
	struct gw_chan *gw;
	unsigned part;
	uint32_t n;
};

static void *feed_part(void *arg)
{
	struct part_feed *f = arg;
	for (uint32_t i = 0; i < f->n;) {
		uint32_t v[2] = { f->part, i };
		struct gw_chan_desc d = { .len = sizeof(v), .kind = 1, .chan = (uint16_t)f->part };
		if (gw_chan_deliver(f->gw, f->part, d, v) == 0)
			i++;
		else
			sched_yield();
		if (i % 16 == 0 || i == f->n)
			gw_chan_publish(f->gw, f->part);
	}
	return NULL;
}

static void test_rx_parts(void)
{
	const struct gw_chan_params p = { .ring_count = 256, .arena_size = 8192, .msg_max = 512,
					  .rx_parts = 2 };
	struct gw_chan gw, cl;
	pair(&gw, &cl, &p);
	CU_ASSERT_EQUAL(cl.rx_parts, 2);
	const uint32_t n = 200000;
	struct part_feed f[2] = { { &gw, 0, n }, { &gw, 1, n } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CU_ASSERT_FATAL(pthread_create(&t[i], NULL, feed_part, &f[i]) == 0);
	uint32_t next[2] = { 0, 0 }, bad = 0, switches = 0, last = 2;
	while (next[0] < n || next[1] < n) {
		struct gw_chan_desc d;
		const uint8_t *data;
		int rc = gw_chan_recv(&cl, &d, &data);
		if (rc == -EAGAIN) {
			sched_yield();
			continue;
		}
		uint32_t v[2];
		memcpy(v, data, sizeof(v));
		if (rc != 8 || v[0] > 1 || v[0] != d.chan || v[1] != next[v[0]])
			bad++;
		else
			next[v[0]]++;
		switches += v[0] != last;
		last = v[0];
		gw_chan_recv_done(&cl, &d);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(next[0] == n && next[1] == n);
	CU_ASSERT(switches > 2); /* neither part waited for the other to finish */
	struct gw_chan_params bad_parts = p;
	bad_parts.rx_parts = 0;
	struct gw_chan g2;
	CU_ASSERT_EQUAL(gw_chan_create(&g2, 1, 1, &bad_parts), -EINVAL);
	bad_parts.rx_parts = GW_CHAN_RX_MAX + 1;
	CU_ASSERT_EQUAL(gw_chan_create(&g2, 1, 1, &bad_parts), -EINVAL);
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

/* REJECTs the gateway had to drop: each receiver counts its own part's,
 * the client takes the sum once, and a client that scribbles on a count
 * fools only itself (the gateway keeps its own and never reads it back). */
static void test_lost_rejects(void)
{
	const struct gw_chan_params p = { .ring_count = 64, .arena_size = 4096, .msg_max = 1024,
					  .rx_parts = 2 };
	struct gw_chan gw, cl;
	pair(&gw, &cl, &p);
	CU_ASSERT_EQUAL(gw_chan_lost_take(&cl), 0);
	gw_chan_lost_add(&gw, 0);
	gw_chan_lost_add(&gw, 1);
	gw_chan_lost_add(&gw, 1);
	CU_ASSERT_EQUAL(gw_chan_lost_take(&cl), 3);
	CU_ASSERT_EQUAL(gw_chan_lost_take(&cl), 0);
	cl.shm->rx_lost[0].rejects = 0;
	gw_chan_lost_add(&gw, 0);
	CU_ASSERT_EQUAL(gw.rx[0].lost, 2);
	CU_ASSERT_EQUAL(gw_chan_lost_take(&cl), 1);
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

/* Control requests: the checks before any effect (gw_ctl_serve). */
static unsigned ctl_calls;
static int ctl_hello_ok(void *ctx, uint16_t chan, struct gw_ctl_msg *m, int *fds)
{
	(void)ctx;
	ctl_calls++;
	m->arg = chan;
	fds[0] = fds[1] = fds[2] = 9;
	return 3;
}
static int ctl_ep(void *ctx, const char *name, uint16_t chan)
{
	(void)ctx, (void)name, (void)chan;
	ctl_calls++;
	return 0;
}
static int ctl_sub_add(void *ctx, const char *name, uint16_t chan, unsigned policy,
		       unsigned key_len)
{
	(void)ctx, (void)name, (void)chan, (void)policy, (void)key_len;
	ctl_calls++;
	return 0;
}
static int ctl_sub_del(void *ctx, const char *name, uint16_t chan)
{
	(void)ctx, (void)name, (void)chan;
	ctl_calls++;
	return 0;
}
static int ctl_node_none(void *ctx, struct gw_ctl_msg *m)
{
	(void)ctx, (void)m;
	return -ENOENT;
}

static int serve(struct gw_ctl_peer *p, uint32_t op, uint32_t arg, const char *name, int *nfds)
{
	static const struct gw_ctl_ops ops = { .hello = ctl_hello_ok, .ep_add = ctl_ep,
					       .ep_del = ctl_ep, .node = ctl_node_none,
					       .sub_add = ctl_sub_add, .sub_del = ctl_sub_del };
	struct gw_ctl_msg m = { .op = op, .arg = arg };
	memset(m.name, 'x', sizeof(m.name)); /* not terminated: the server ends it */
	if (name)
		snprintf(m.name, sizeof(m.name), "%s", name);
	int fds[3];
	*nfds = gw_ctl_serve(&ops, NULL, p, &m, fds);
	return m.status;
}

/* Is the client's RX eventfd signalled (read without blocking)? */
static bool rx_signalled(const struct gw_chan *cl)
{
	struct pollfd p = { .fd = cl->efd_rx, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

/* A receiver may show deliveries without waking a client that sleeps on
 * its own CPU, which it can tell; a later publish with a wake wakes it. */
static void test_show_then_wake(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	/* Held on one CPU, so the client's word and ours are the same. */
	cpu_set_t was, one;
	CU_ASSERT_FATAL(sched_getaffinity(0, sizeof(was), &was) == 0);
	int cpu = sched_getcpu();
	CU_ASSERT_FATAL(cpu >= 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CU_ASSERT_FATAL(sched_setaffinity(0, sizeof(one), &one) == 0);
	/* Before the client has slept, on no CPU, not even an unknown one. */
	CU_ASSERT(!gw_chan_rx_sleeps_on(&gw, (unsigned)cpu));
	CU_ASSERT(!gw_chan_rx_sleeps_on(&gw, GW_CHAN_CPU_NONE));
	CU_ASSERT(!gw_chan_arm(&cl, false)); /* nothing to read: it would sleep */
	CU_ASSERT(gw_chan_rx_sleeps_on(&gw, (unsigned)cpu));
	CU_ASSERT(!gw_chan_rx_sleeps_on(&gw, (unsigned)cpu ^ 1));
	sched_setaffinity(0, sizeof(was), &was);
	struct gw_chan_desc d = { .len = 3, .node = 9, .ep = 42, .chan = 5, .kind = 1 };
	CU_ASSERT(gw_chan_deliver(&gw, 0, d, "abc") == 0);
	struct gw_chan *set[1] = { &gw };
	gw_chan_publish_set(set, 1, 0, false);
	/* Shown: a client that polls reads it; the sleeper was not woken. */
	CU_ASSERT(!rx_signalled(&cl));
	CU_ASSERT(gw_chan_rx_ready(&cl));
	gw_chan_publish_set(set, 1, 0, true);
	CU_ASSERT(rx_signalled(&cl));
	CU_ASSERT_EQUAL(gw_chan_wait(&cl, false, 0), 0); /* ready: no sleep */
	struct gw_chan_desc r;
	const uint8_t *data;
	CU_ASSERT_EQUAL(gw_chan_recv(&cl, &r, &data), 3);
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

static void test_ctl_serve(void)
{
	struct gw_ctl_peer p = { .chan = 5 }, refused = { .chan = 6, .refused = true };
	int n;
	ctl_calls = 0;
	CU_ASSERT_EQUAL(serve(&refused, GW_CTL_HELLO, GW_CTL_VERSION, NULL, &n), -EACCES);
	CU_ASSERT_EQUAL(n, GW_CTL_HANGUP);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_REGISTER, 0, "sink", &n), -ENOTCONN);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_SUBSCRIBE, GW_CTL_SUB_HOLD, "volts", &n), -ENOTCONN);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_HELLO, GW_CTL_VERSION + 1, NULL, &n), -EPROTONOSUPPORT);
	CU_ASSERT_EQUAL(ctl_calls, 0); /* nothing reached the gateway yet */
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_HELLO, GW_CTL_VERSION, NULL, &n), 0);
	CU_ASSERT(n == 3 && p.connected);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_HELLO, GW_CTL_VERSION, NULL, &n), -EISCONN);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_REGISTER, 0, "~call.5", &n), -EPERM);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_UNREGISTER, 0, "~call.5", &n), -EPERM);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_REGISTER, 0, "a b", &n), -EINVAL);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_REGISTER, 0, "", &n), -EINVAL);
	CU_ASSERT_EQUAL(ctl_calls, 1);
	/* Unterminated, the longest name that fits: ended by the server, taken. */
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_REGISTER, 0, NULL, &n), 0);
	CU_ASSERT_EQUAL(ctl_calls, 2);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_REGISTER, 0, "sink", &n), 0);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_NODE, 1, NULL, &n), -ENOENT);
	CU_ASSERT_EQUAL(serve(&p, 77, 0, NULL, &n), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(ctl_calls, 3);
	/* Subscriptions: a policy and a key length that go together. */
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_SUBSCRIBE, 2, "volts", &n), -EINVAL);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_SUBSCRIBE, GW_CTL_SUB_LATEST, "volts", &n), -EINVAL);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_SUBSCRIBE, GW_CTL_SUB_HOLD | 8 << 8, "volts", &n), -EINVAL);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_SUBSCRIBE, GW_CTL_SUB_LATEST | 65 << 8, "volts", &n),
			-EINVAL);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_SUBSCRIBE, GW_CTL_SUB_HOLD, "~x", &n), -EINVAL);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_UNSUBSCRIBE, 0, "a b", &n), -EINVAL);
	CU_ASSERT_EQUAL(ctl_calls, 3);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_SUBSCRIBE, GW_CTL_SUB_LATEST | 64 << 8, "volts", &n), 0);
	CU_ASSERT_EQUAL(serve(&p, GW_CTL_UNSUBSCRIBE, 0, "volts", &n), 0);
	CU_ASSERT_EQUAL(ctl_calls, 5);
}
/*
 * Settling: a prefix of each class's sends, moved by checkpoints (the
 * messages consumed when a pass ended, and the serial of its last frame)
 * as frames below a serial settle; at most GW_CHAN_CHECKPOINTS kept, the
 * newest moving forward when full; serials wrap.
 */
static void test_settle(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	struct gw_chan_msg m[8];
	uint32_t s0 = UINT32_MAX - 2; /* the serials wrap on the way */
	for (int i = 0; i < 12; i++)
		CU_ASSERT_FATAL(gw_chan_send(&cl, 2, 9, "m", 1) == 0);
	CU_ASSERT_EQUAL(gw_chan_unsettled_of(&cl, GW_CLASS_BULK, cl.tx[GW_CLASS_BULK].msgs), 12);
	gw_chan_checkpoint(&gw, GW_CLASS_BULK, s0); /* nothing consumed: no checkpoint */
	gw_chan_settle(&gw, GW_CLASS_BULK, s0 + 100);
	CU_ASSERT_EQUAL(gw_chan_unsettled_of(&cl, GW_CLASS_BULK, cl.tx[GW_CLASS_BULK].msgs), 12);
	/* Six passes of two messages each, frames s0 + 1 ... s0 + 6: the
	 * fifth and sixth move the fourth checkpoint forward. */
	for (uint32_t k = 1; k <= 6; k++) {
		CU_ASSERT_EQUAL_FATAL(gw_chan_peek(&gw, GW_CLASS_BULK, m, 2), 2);
		gw_chan_consume(&gw, GW_CLASS_BULK, 2);
		gw_chan_checkpoint(&gw, GW_CLASS_BULK, s0 + k);
		gw_chan_checkpoint(&gw, GW_CLASS_BULK, s0 + k + 1); /* no new message: no change */
	}
	gw_chan_settle(&gw, GW_CLASS_BULK, s0 + 1); /* frame s0 + 1 not settled */
	CU_ASSERT_EQUAL(gw_chan_unsettled_of(&cl, GW_CLASS_BULK, cl.tx[GW_CLASS_BULK].msgs), 12);
	gw_chan_settle(&gw, GW_CLASS_BULK, s0 + 3); /* through s0 + 2, across the wrap */
	CU_ASSERT_EQUAL(gw_chan_unsettled_of(&cl, GW_CLASS_BULK, cl.tx[GW_CLASS_BULK].msgs), 8);
	gw_chan_settle(&gw, GW_CLASS_BULK, s0 + 5); /* s0 + 4 was folded into the newest */
	CU_ASSERT_EQUAL(gw_chan_unsettled_of(&cl, GW_CLASS_BULK, cl.tx[GW_CLASS_BULK].msgs), 6);
	gw_chan_settle(&gw, GW_CLASS_BULK, s0 + 7);
	CU_ASSERT_EQUAL(gw_chan_unsettled_of(&cl, GW_CLASS_BULK, cl.tx[GW_CLASS_BULK].msgs), 0);
	CU_ASSERT_EQUAL(gw_chan_unsettled_of(&cl, GW_CLASS_URGENT, cl.tx[GW_CLASS_URGENT].msgs), 0);
	/* The client can still name where its last sends went. */
	struct gw_chan_desc d;
	CU_ASSERT(gw_chan_sent_desc(&cl, GW_CLASS_BULK, 11, &d) && d.node == 2 && d.ep == 9);
	CU_ASSERT(!gw_chan_sent_desc(&cl, GW_CLASS_BULK, 12, &d));
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

/* The liveness word: held while its owner thread lives, gone with it. */
static void *hold_alive(void *arg)
{
	int *fd = arg;
	struct gw_chan_alive *page;
	CU_ASSERT_FATAL(gw_chan_alive_create(&page, fd) == 0);
	return page;
}

static void test_alive(void)
{
	struct gw_chan gw, cl;
	pair(&gw, &cl, &small);
	struct gw_chan_alive *mine;
	int fd, fd2;
	CU_ASSERT_FATAL(gw_chan_alive_create(&mine, &fd) == 0);
	CU_ASSERT_FATAL(gw_chan_attach_alive(&cl, dup(fd)) == 0);
	CU_ASSERT(gw_chan_gateway_lives(&cl));
	/* Read-only for clients: no writable mapping can be made. */
	CU_ASSERT(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	gw_chan_alive_destroy(mine, fd); /* a clean stop */
	CU_ASSERT(!gw_chan_gateway_lives(&cl));
	gw_chan_close(&cl);
	gw_chan_close(&gw);
	/* Its owner thread ends holding it: the kernel says so. */
	pair(&gw, &cl, &small);
	pthread_t t;
	void *page;
	pthread_create(&t, NULL, hold_alive, &fd2);
	pthread_join(t, &page);
	CU_ASSERT_FATAL(gw_chan_attach_alive(&cl, dup(fd2)) == 0);
	CU_ASSERT(!gw_chan_gateway_lives(&cl));
	CU_ASSERT(gw_chan_gateway_gone(&cl));
	munmap(page, sizeof(struct gw_chan_alive));
	close(fd2);
	gw_chan_close(&cl);
	gw_chan_close(&gw);
}

static const struct gw_test_case cases[] = {
	{ "round trip", test_round_trip },
	{ "full and oversize", test_full_and_oversize },
	{ "wrap-around", test_wrap },
	{ "garbage from the client", test_garbage },
	{ "garbage in the ring headers", test_ring_header_garbage },
	{ "two processes", test_two_processes },
	{ "an RX part per receiver", test_rx_parts },
	{ "REJECTs dropped, counted per part, told once", test_lost_rejects },
	{ "shown without a wake, then woken", test_show_then_wake },
	{ "control requests checked before any effect", test_ctl_serve },
	{ "settling: a prefix of the sends, by checkpoints", test_settle },
	{ "the gateway's liveness word", test_alive },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("chan", cases);
}
