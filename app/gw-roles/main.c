/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-roles: what one lcore of each role can do, with no port and no
 * kernel. Each role runs gridwired's own code alone on the calling lcore,
 * fed from memory:
 *
 *   worker    client channels filled beforehand -> gw_worker_step: frames
 *             packed, sealed (CRC32C), queued on a TX queue of DPDK's null
 *             PMD; the lane acknowledged after every step
 *   receiver  sealed frames laid in mbufs beforehand (the NIC's part) ->
 *             CRC check and parse (port RX's part) -> gw_receiver_accept and
 *             gw_receiver_step: in order, into the client channels' RX
 *             rings, acks sent; the records of 64 clients in turn, one
 *             each (every record finds its client's lines out of cache)
 *   receiver_runs  the same, each frame's records for one client, as a
 *             worker packs a client's burst (one lookup per run, the
 *             client's lines warm)
 *   crc       gw_crc32c over one full frame
 *   auth      gw_auth_seal (the sender's lcore) and gw_auth_open (port
 *             RX's) of one full frame, timed apart, in [auth] mode
 *             authenticate (auth_*) and encrypt (encrypt_*), AES-256-GCM
 *   limit     not gridwired's code: the floor under it, messages packed
 *             into frames on CPU 0 and copied out of them on CPU 1 by
 *             memcpy alone (limit.c)
 *
 * Only the timed part is counted: filling channels, laying frames and the
 * clients' reading are outside it. One JSON line per run on stdout:
 *   {"role":"worker","size":225,"msgs":...,"frames":...,"s":...,"msgs_per_s":...}
 *
 *   gw-roles [--role worker|receiver|receiver_runs|crc|auth|limit|all] [--size BYTES] [--runs N]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "gw_ctl.h"
#include "gw_gateway.h"
#include "limit.h"

#define CLIENTS 64
#define SELF 1
#define PEER 2

static struct gw_config cfg;
static struct gw_node node;
static struct gw_counters st;
static struct gw_peers peers;
static struct gw_txq txq;
static uint16_t null_port;
static struct gw_links null_links; /* the one link the roles send on */

static int die(const char *what, int rc)
{
	fprintf(stderr, "gw-roles: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static void report(const char *role, unsigned size, uint64_t msgs, uint64_t frames, uint64_t ns)
{
	double s = (double)ns / 1e9;
	printf("{\"role\":\"%s\",\"size\":%u,\"msgs\":%lu,\"frames\":%lu,\"s\":%.4f,"
	       "\"msgs_per_s\":%.0f,\"frames_per_s\":%.0f}\n",
	       role, size, (unsigned long)msgs, (unsigned long)frames, s, (double)msgs / s,
	       (double)frames / s);
	fflush(stdout);
}

/* A null PMD port: where TX queues send, so that the worker and the
 * receiver run their TX code as they do on a NIC. */
static void null_port_up(void)
{
	if (rte_eth_dev_get_port_by_name("net_null0", &null_port) < 0)
		die("no net_null0 vdev", -ENODEV);
	struct rte_eth_conf conf = { 0 };
	int rc;
	if ((rc = rte_eth_dev_configure(null_port, 1, 1, &conf)) < 0 ||
	    (rc = rte_eth_rx_queue_setup(null_port, 0, 256, 0, NULL, node.pool)) < 0 ||
	    (rc = rte_eth_tx_queue_setup(null_port, 0, 256, 0, NULL)) < 0 ||
	    (rc = rte_eth_dev_start(null_port)) < 0)
		die("null port", rc);
}

/* A peer heard from, with lanes. */
static void peer_up(void)
{
	int rc = gw_peers_init(&peers, &node, &st);
	if (rc < 0)
		die("peers", rc);
	struct gw_peers_proxy px = { .direct = &peers };
	struct gw_hello_msg h = { .node = PEER, .epoch = 0x1234567u, .addr = { .ip = 2, .port = 47000 } };
	snprintf(h.name, sizeof(h.name), "peer");
	gw_peers_post_hello(&px, &h);
	if (!gw_peers_ready(&peers, PEER))
		die("peer lanes", -ENOMEM);
}

static void chan_pair(struct gw_chan *gw, struct gw_chan *cl, uint16_t id)
{
	struct gw_chan_params p = {
		.ring_count = cfg.ring_count, .arena_size = cfg.arena_kb * 1024u,
		.msg_max = cfg.msg_max, .rx_parts = 1,
	};
	int rc = gw_chan_create(gw, id, SELF, &p);
	if (rc < 0 || (rc = gw_chan_attach(cl, dup(gw->memfd), dup(gw->efd_rx), dup(gw->efd_tx))) < 0)
		die("channel", rc);
}

/* --- worker --- */

static struct gw_worker worker;
static struct gw_worker_proxy wpx;
static struct gw_chan wgw[CLIENTS], wcl[CLIENTS];

static void worker_up(void)
{
	static struct gw_loopback loop;
	loop.ring = rte_ring_create("bench_loop", GW_LOOPQ, SOCKET_ID_ANY,
				    RING_F_SP_ENQ | RING_F_SC_DEQ);
	int rc = gw_worker_init(&worker, &node, &peers, 0, &txq, &st, &loop);
	if (!loop.ring || rc < 0)
		die("worker", rc ? rc : -ENOMEM);
	static struct gw_topics no_topics; /* nothing is published here */
	static void *no_topics_at = &no_topics;
	gw_topic_init(&no_topics);
	worker.topics = &no_topics_at;
	worker.nworkers = 1;
	if (gw_worker_proxy_init(&wpx, &worker, 0, true,
				 GW_PROXY_ACKS | GW_PROXY_REJECTS | GW_PROXY_CMDS) < 0)
		die("worker proxy", -ENOMEM);
	static uint32_t released;
	for (unsigned i = 0; i < CLIENTS; i++) {
		chan_pair(&wgw[i], &wcl[i], (uint16_t)(i + 1));
		struct gw_cmd cmd = { .op = GW_CMD_ADD, .chan = &wgw[i], .released = &released };
		gw_worker_post_cmd(&wpx, &cmd);
	}
}

/* Acknowledge everything the worker's lane to the peer has sent. */
static void ack_all(void)
{
	struct gw_lane_tx *tx = &peers.peer[PEER].tx[0];
	if (tx->una == tx->nxt)
		return;
	struct gw_ack a = { .acked_epoch = tx->epoch, .cum = tx->nxt };
	gw_worker_post_ack(&wpx, PEER, 0, &a, gw_clock_ns());
}

static void worker_run(unsigned size, bool shown)
{
	static uint8_t buf[65536];
	uint64_t msgs = 0, frames0 = worker.batch[GW_CLASS_BULK].frames, ns = 0;
	for (int round = 0; round < 8; round++) {
		for (unsigned i = 0; i < CLIENTS; i++)
			while (gw_chan_send(&wcl[i], PEER, 1234, buf, size) == 0)
				msgs++;
		uint64_t t0 = gw_clock_ns();
		bool left = true;
		while (left) {
			uint64_t now = gw_clock_ns();
			gw_worker_step(&worker, now);
			gw_txq_flush(&txq, now);
			ack_all();
			left = false;
			for (unsigned i = 0; i < CLIENTS && !left; i++)
				left = gw_chan_backlog(&wgw[i], GW_CLASS_BULK) > 0;
		}
		ns += gw_clock_ns() - t0;
	}
	if (shown)
		report("worker", size, msgs, worker.batch[GW_CLASS_BULK].frames - frames0, ns);
}

/* --- receiver --- */

static struct gw_control ctl;
static struct gw_receiver rv;
static struct gw_dir dir;
static struct gw_topics topics;
static struct gw_chan rcl[CLIENTS];

static void receiver_up(void)
{
	static struct gw_client clients[CLIENTS];
	ctl.node = &node;
	ctl.clients = clients;
	gw_dir_init(&dir);
	gw_topic_init(&topics);
	ctl.dir.cur = &dir;
	ctl.topics.cur = &topics;
	for (unsigned i = 0; i < CLIENTS; i++) {
		char name[GW_NAME_MAX];
		snprintf(name, sizeof(name), "sink%u", i);
		uint16_t id = (uint16_t)(100 + i);
		chan_pair(&clients[i].chan, &rcl[i], id);
		clients[i].used = clients[i].live = true;
		clients[i].chan_id = id;
		ctl.chan_slot[id] = (uint16_t)(i + 1);
		if (gw_dir_add(&dir, name, gw_ctl_ep_id(name), id) < 0)
			die("directory", -EEXIST);
	}
	gw_receiver_init(&rv, 0, &node, &peers, &ctl, &wpx, 1, &txq, &st);
	peers.peer[PEER].rx_owner[0] = 1;
}

/* A round's frames from the peer's lane 0, records for every client in
 * turn, run records in a row for each. */
static unsigned frames_build(struct rte_mbuf **m, unsigned max, unsigned size, unsigned run,
			     uint32_t *seq, uint64_t *msgs)
{
	static uint8_t data[65536];
	static uint32_t msg_id;
	const struct gw_addr src = { .mac = { 2, 0, 0, 0, 0, 2 }, .ip = 2, .port = 47000 };
	unsigned n = 0, k = 0;
	uint32_t base = *seq; /* the sender's una: every earlier frame was acked */
	for (; n < max; n++) {
		if (!(m[n] = rte_pktmbuf_alloc(node.pool)))
			die("mbufs", -ENOMEM);
		uint8_t *f = rte_pktmbuf_mtod(m[n], uint8_t *);
		size_t used = 0;
		uint16_t nrec = 0;
		for (;; nrec++, k++) {
			char name[GW_NAME_MAX];
			snprintf(name, sizeof(name), "sink%u", k / run % CLIENTS);
			struct gw_rec r = {
				.kind = GW_RK_MSG, .len = (uint16_t)size, .dst_ep = gw_ctl_ep_id(name),
				.src_chan = (uint16_t)(k % 1000), .msg_id = msg_id++, .data = data,
			};
			if (gw_wire_rec_put(f + GW_FRAME_MIN, node.payload_max, &used, &r) < 0)
				break;
		}
		struct gw_hdr h = {
			.type = GW_FT_DATA, .src_node = PEER, .dst_node = SELF, .lane = 0, .nrec = nrec,
			.epoch = 0x1234567u, .seq = *seq, .base = base, .len = (uint32_t)used,
		};
		(*seq)++;
		*msgs += nrec;
		size_t len = gw_wire_seal(f, &src, &node.self, &h);
		m[n]->data_len = (uint16_t)len;
		m[n]->pkt_len = (uint32_t)len;
	}
	return n;
}

static void receiver_run(unsigned size, bool runs, bool shown)
{
	static struct rte_mbuf *m[1024];
	/* As many frames as the clients' rings take in a round. */
	unsigned per_frame = node.payload_max / (size + 16), max = CLIENTS * (cfg.ring_count / 2) / per_frame;
	max = max > 1024 ? 1024 : max;
	static uint32_t seq;
	uint64_t msgs = 0, frames = 0, ns = 0, in0 = st.msgs_in;
	for (int round = 0; round < 16; round++) {
		unsigned n = frames_build(m, max, size, runs ? per_frame : 1, &seq, &msgs);
		uint64_t t0 = gw_clock_ns();
		for (unsigned i = 0; i < n; i++) {
			struct gw_hdr h;
			const uint8_t *pl;
			struct gw_addr from;
			if (i + 1 < n)
				gw_port_rx_prefetch(m[i + 1]);
			if (gw_wire_parse(rte_pktmbuf_mtod(m[i], uint8_t *), m[i]->data_len,
					  node.self.port, &h, &pl, &from) < 0)
				die("a frame did not parse", -EPROTO);
			m[i]->pkt_len = m[i]->data_len = (uint16_t)(GW_FRAME_MIN + h.len);
			gw_receiver_accept(&rv, &peers.peer[PEER], &h, m[i]);
			if (i % 32 == 31)
				gw_receiver_step(&rv, gw_clock_ns());
		}
		gw_receiver_step(&rv, gw_clock_ns());
		gw_txq_flush(&txq, gw_clock_ns());
		ns += gw_clock_ns() - t0;
		frames += n;
		for (unsigned i = 0; i < CLIENTS; i++) {
			struct gw_chan_desc d;
			const uint8_t *data;
			while (gw_chan_recv(&rcl[i], &d, &data) >= 0)
				gw_chan_recv_done(&rcl[i], &d);
		}
	}
	if (st.msgs_in - in0 != msgs) {
		fprintf(stderr, "gw-roles: %lu of %lu delivered (dups %lu, beyond %lu, bad %lu, full %lu, unknown %lu)\n",
			(unsigned long)(st.msgs_in - in0), (unsigned long)msgs, (unsigned long)st.dup_frames,
			(unsigned long)st.beyond_window, (unsigned long)st.bad_frames,
			(unsigned long)st.reject_dest_full, (unsigned long)st.reject_unknown_ep);
		die("the receiver did not deliver every message", -EPROTO);
	}
	if (shown)
		report(runs ? "receiver_runs" : "receiver", size, msgs, frames, ns);
}

/* --- per frame --- */

static void crc_run(unsigned size)
{
	static uint8_t f[9000];
	unsigned n = 200000, per_frame = node.payload_max / (size + 16);
	uint32_t c = 0;
	uint64_t t0 = gw_clock_ns();
	for (unsigned i = 0; i < n; i++)
		c = gw_crc32c(c, f, node.payload_max);
	uint64_t ns = gw_clock_ns() - t0;
	if (c == 0x12345678u) /* keep the loop */
		fprintf(stderr, "?\n");
	report("crc", size, (uint64_t)n * per_frame, n, ns);
}

/* Seal (the sender's lcore) and open (port RX's) one full frame in an
 * [auth] mode, as gridwired does: in place to tag, into a second buffer to
 * encrypt (the lane keeps the plaintext). */
static void auth_run_mode(unsigned size, enum gw_auth_mode mode, const char *name)
{
	static const struct gw_auth_key key = { { 1, 2, 3, 4 } };
	static struct gw_auth_keys ks_tx, ks_rx;
	char why[200];
	if (gw_auth_keys_init(&ks_tx, mode, GW_AUTH_AES_GCM, PEER, 7, &key, why, sizeof(why)) < 0 ||
	    gw_auth_keys_init(&ks_rx, mode, GW_AUTH_AES_GCM, SELF, 9, &key, why, sizeof(why)) < 0) {
		fprintf(stderr, "gw-roles: %s\n", why);
		exit(2);
	}
	gw_auth_keys_peer_hello(&ks_tx, SELF, 9, NULL, 0); /* as its HELLO would */
	struct gw_auth_tx tx;
	struct gw_auth_rx rx;
	gw_auth_tx_init(&tx, &ks_tx, 1, 1);
	if (gw_auth_rx_init(&rx, &ks_rx, 1) < 0)
		die("auth", -ENOMEM);
	static uint8_t f[9100], c[9100];
	const struct gw_addr a = { .ip = 1, .port = 47000 }, b = { .ip = 2, .port = 47000 };
	struct gw_hdr h = { .type = GW_FT_DATA, .src_node = PEER, .dst_node = SELF, .epoch = 7,
			    .len = node.payload_max - GW_AUTH_TRAILER };
	unsigned n = 50000, per_frame = node.payload_max / (size + 16);
	size_t len = gw_wire_seal(f, &a, &b, &h);
	uint8_t *out = mode == GW_AUTH_ENCRYPT ? c : f;
	uint64_t seal_ns = 0, open_ns = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = gw_clock_ns();
		int sealed = gw_auth_seal(&tx, out, f, len, sizeof(c), 0);
		uint64_t t1 = gw_clock_ns();
		int opened = sealed < 0 ? sealed : gw_auth_open(&rx, out, (size_t)sealed);
		open_ns += gw_clock_ns() - t1;
		seal_ns += t1 - t0;
		if (opened != (int)len)
			die("auth round trip", opened < 0 ? opened : -EBADMSG);
	}
	gw_auth_tx_fini(&tx);
	gw_auth_rx_fini(&rx);
	char role[32];
	snprintf(role, sizeof(role), "%s_seal", name);
	report(role, size, (uint64_t)n * per_frame, n, seal_ns);
	snprintf(role, sizeof(role), "%s_open", name);
	report(role, size, (uint64_t)n * per_frame, n, open_ns);
}

static void auth_run(unsigned size)
{
	auth_run_mode(size, GW_AUTH_AUTHENTICATE, "auth");
	auth_run_mode(size, GW_AUTH_ENCRYPT, "encrypt");
}

int main(int argc, char **argv)
{
	const char *role = "all";
	unsigned size = 225, runs = 5;
	static const struct option opts[] = {
		{ "role", required_argument, NULL, 'r' }, { "size", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'n' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	for (int c; (c = getopt_long(argc, argv, "r:s:n:h", opts, NULL)) != -1;) {
		switch (c) {
		case 'r': role = optarg; break;
		case 's': size = (unsigned)atoi(optarg); break;
		case 'n': runs = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: gw-roles [--role worker|receiver|receiver_runs|crc|auth|limit|all] [--size BYTES] [--runs N]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (size < 1 || size > 8192 || runs < 1) {
		fprintf(stderr, "gw-roles: --size takes 1..8192 bytes, --runs at least 1\n");
		return 2;
	}
	char *eal[] = { argv[0], "--no-huge", "-m", "768", "--no-pci", "--no-shconf", "-l", "0",
			"--vdev=net_null0", "--log-level=lib.*:error", NULL };
	if (rte_eal_init(10, eal) < 0)
		die("EAL", -rte_errno);
	gw_config_defaults(&cfg);
	cfg.node_id = SELF;
	node.cfg = &cfg;
	node.epoch = 0x89abcdefu;
	node.payload_max = gw_config_frame_payload(&cfg);
	node.self = (struct gw_addr){ .mac = { 2, 0, 0, 0, 0, 1 }, .ip = 1, .port = 47000 };
	node.pool = rte_pktmbuf_pool_create("bench", 8192, 256, 0, RTE_PKTMBUF_HEADROOM + 9216, 0);
	if (!node.pool)
		die("mbuf pool", -rte_errno);
	null_port_up();
	null_links = (struct gw_links){ .n = 1, .port = { null_port }, .live = { true } };
	node.links = &null_links;
	gw_txq_init(&txq, &node, &null_links, 0, 0, &st, 1);
	peer_up();
	worker_up();
	receiver_up();
	bool all = !strcmp(role, "all");
	/* A first run, not reported, faults the channels' and pool's pages in. */
	worker_run(size, false);
	receiver_run(size, false, false);
	for (unsigned r = 0; r < runs; r++) {
		if (all || !strcmp(role, "worker"))
			worker_run(size, true);
		if (all || !strcmp(role, "receiver"))
			receiver_run(size, false, true);
		if (all || !strcmp(role, "receiver_runs"))
			receiver_run(size, true, true);
		if (all || !strcmp(role, "crc"))
			crc_run(size);
		if (all || !strcmp(role, "auth"))
			auth_run(size);
		if (all || !strcmp(role, "limit")) {
			uint64_t msgs, frames, ns;
			if (limit_run(size, node.payload_max, &msgs, &frames, &ns) < 0)
				die("the limit role's threads", -EAGAIN);
			report("limit", size, msgs, frames, ns);
		}
	}
	return 0;
}
