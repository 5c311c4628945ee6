/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-promise-check: what a send promises, against real gateways
 * (test/integration/test_promises.sh). A gateway killed under its senders:
 * nothing accepted after the client could know, and every message accepted
 * before either arrives or comes back to its sender. A name registered is
 * reachable at once.
 *
 *   gw-promise-check rx -s SOCK -e ENDPOINT -o FILE [--idle-ms MS]
 *       Receive (writer u32, seq u32, payload) messages until none has come
 *       for MS (3000) after the first, checking that each writer's seqs
 *       rise; write FILE: per writer, a bitmap of the seqs received, after
 *       a header line of JSON (received, writers, out_of_order, malformed).
 *   gw-promise-check tx -s SOCK -n NODE -e ENDPOINT -w THREADS -o FILE
 *       THREADS threads, each its own client, send as fast as the channel
 *       takes them (1 to 8,192 bytes, every size on the way) until a send
 *       says the gateway is gone; then each reads its REJECTs until -EPIPE.
 *       Message seq k of a thread is its send number k, so its REJECT names
 *       it by msg_id. FILE: per writer, a bitmap of the seqs REJECTed, after
 *       a header line of JSON (accepted per writer, rejects by error, sends
 *       accepted once the gateway was known gone, gw_unconfirmed's count
 *       at the first -EPIPE).
 *   gw-promise-check register -s SOCK -n NODE --at SOCK2 [-w TIMES]
 *       Registered means reachable: TIMES (500) times, a client of the
 *       gateway at SOCK2 (node NODE) registers a new name and, the moment
 *       that returns, a client of the gateway at SOCK sends to it: the
 *       message must arrive, never come back refused as unknown. One line
 *       of JSON: tries, delivered, refused (by error), late (not within 5 s).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gridwire.h"

#define WRITERS_MAX 64
#define SEQ_MAX (1u << 24)
#define SIZE_MAX_MSG 8192

static const char *sock, *endpoint, *out, *at;
static uint16_t node;
static unsigned nthreads = 32, idle_ms = 3000;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "gw-promise-check: %s: %s\n", what, gw_strerror(err));
	exit(2);
}

static uint8_t *bitmap(void)
{
	uint8_t *b = calloc(SEQ_MAX / 8, 1);
	if (!b)
		die("bitmap", -ENOMEM);
	return b;
}

static void write_bitmaps(FILE *f, uint8_t **maps, const uint32_t *len, unsigned n)
{
	for (unsigned w = 0; w < n; w++)
		fwrite(maps[w], 1, (len[w] + 7) / 8, f);
}

/* --- rx --- */

static int run_rx(void)
{
	struct gw_client *cl;
	int rc = gw_connect(sock, &cl);
	if (rc < 0)
		die(sock, rc);
	if ((rc = gw_register(cl, endpoint)) < 0)
		die(endpoint, rc);
	printf("rx ready\n");
	fflush(stdout);
	static uint8_t *got[WRITERS_MAX];
	static uint32_t top[WRITERS_MAX]; /* one past the highest seq seen */
	static int64_t last[WRITERS_MAX];
	for (unsigned w = 0; w < WRITERS_MAX; w++) {
		got[w] = bitmap();
		last[w] = -1;
	}
	uint64_t received = 0, out_of_order = 0, malformed = 0;
	for (;;) {
		struct gw_msg m;
		rc = gw_recv(cl, &m, received ? (int)idle_ms : 60000);
		if (rc == -ETIMEDOUT)
			break;
		if (rc < 0)
			die("recv", rc);
		uint32_t h[2];
		if (m.kind != GW_MSG_DATA || m.len < sizeof(h)) {
			malformed++;
			continue;
		}
		memcpy(h, m.data, sizeof(h));
		if (h[0] >= WRITERS_MAX || h[1] >= SEQ_MAX) {
			malformed++;
			continue;
		}
		received++;
		out_of_order += (int64_t)h[1] <= last[h[0]];
		last[h[0]] = h[1];
		got[h[0]][h[1] / 8] |= (uint8_t)(1u << (h[1] % 8));
		if (h[1] + 1 > top[h[0]])
			top[h[0]] = h[1] + 1;
	}
	FILE *f = fopen(out, "w");
	if (!f)
		die(out, -errno);
	unsigned writers = 0;
	for (unsigned w = 0; w < WRITERS_MAX; w++)
		writers += top[w] > 0;
	fprintf(f, "{\"received\":%" PRIu64 ",\"writers\":%u,\"out_of_order\":%" PRIu64
		   ",\"malformed\":%" PRIu64 ",\"top\":[",
		received, writers, out_of_order, malformed);
	for (unsigned w = 0; w < WRITERS_MAX; w++)
		fprintf(f, "%s%u", w ? "," : "", top[w]);
	fprintf(f, "]}\n");
	write_bitmaps(f, got, top, WRITERS_MAX);
	fclose(f);
	gw_close(cl);
	return 0;
}

/* --- tx --- */

struct writer {
	pthread_t t;
	uint32_t id;
	uint32_t accepted; /* = the next seq, = the next msg_id */
	uint32_t after_known; /* sends accepted that started after gone_ns */
	uint64_t rejects_epipe, rejects_other, bad_rejects;
	uint64_t unconfirmed; /* at the first -EPIPE */
	uint8_t *rejected;
};

static struct writer writers[WRITERS_MAX];
/* When any writer first heard the gateway was gone (0: not yet). */
static uint64_t gone_ns;

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct gw_client *cl;
	int rc = gw_connect(sock, &cl);
	if (rc < 0)
		die(sock, rc);
	uint8_t buf[SIZE_MAX_MSG]; /* its own: the threads send at once */
	for (;;) {
		uint32_t size = 8 + (w->accepted * 7919u + w->id * 131u) % (SIZE_MAX_MSG - 7);
		uint32_t h[2] = { w->id, w->accepted };
		memcpy(buf, h, sizeof(h));
		uint64_t start = now_ns();
		rc = gw_send(cl, node, endpoint, buf, size, 1000);
		if (rc == 0) {
			uint64_t g = __atomic_load_n(&gone_ns, __ATOMIC_ACQUIRE);
			w->after_known += g && start > g;
			if (++w->accepted == SEQ_MAX)
				break;
			continue;
		}
		if (rc == -EPIPE)
			break;
		if (rc != -ETIMEDOUT && rc != -EAGAIN)
			die("send", rc);
	}
	uint64_t zero = 0, t = now_ns();
	__atomic_compare_exchange_n(&gone_ns, &zero, t, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	w->unconfirmed = gw_unconfirmed(cl);
	if (gw_node_up(cl, node))
		die("gw_node_up after -EPIPE", -EPROTO);
	struct gw_msg m;
	while ((rc = gw_recv(cl, &m, 1000)) == 0) {
		if (m.kind != GW_MSG_REJECT || m.msg_id >= w->accepted ||
		    w->rejected[m.msg_id / 8] & (1u << (m.msg_id % 8))) {
			w->bad_rejects++;
			continue;
		}
		w->rejected[m.msg_id / 8] |= (uint8_t)(1u << (m.msg_id % 8));
		if (m.error == -EPIPE)
			w->rejects_epipe++;
		else
			w->rejects_other++;
	}
	if (rc != -EPIPE)
		die("recv after the gateway went", rc);
	/* Still gone: nothing more is taken. */
	if (gw_send(cl, node, endpoint, buf, 8, 0) != -EPIPE)
		die("a send after -EPIPE", -EPROTO);
	gw_close(cl);
	return NULL;
}

static int run_tx(void)
{
	for (unsigned i = 0; i < nthreads; i++) {
		writers[i].id = i;
		writers[i].rejected = bitmap();
		pthread_create(&writers[i].t, NULL, writer_main, &writers[i]);
	}
	printf("tx started\n");
	fflush(stdout);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(writers[i].t, NULL);
	FILE *f = fopen(out, "w");
	if (!f)
		die(out, -errno);
	uint64_t acc = 0, ep = 0, other = 0, bad = 0, after = 0, unconf = 0;
	fprintf(f, "{\"writers\":%u,\"accepted\":[", nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		struct writer *w = &writers[i];
		fprintf(f, "%s%u", i ? "," : "", w->accepted);
		acc += w->accepted;
		ep += w->rejects_epipe;
		other += w->rejects_other;
		bad += w->bad_rejects;
		after += w->after_known;
		unconf += w->unconfirmed;
	}
	fprintf(f, "],\"accepted_total\":%" PRIu64 ",\"rejects_epipe\":%" PRIu64
		   ",\"rejects_other\":%" PRIu64 ",\"bad_rejects\":%" PRIu64
		   ",\"accepted_after_known\":%" PRIu64 ",\"unconfirmed_at_epipe\":%" PRIu64 "}\n",
		acc, ep, other, bad, after, unconf);
	uint8_t *maps[WRITERS_MAX];
	uint32_t lens[WRITERS_MAX];
	for (unsigned i = 0; i < nthreads; i++) {
		maps[i] = writers[i].rejected;
		lens[i] = writers[i].accepted;
	}
	write_bitmaps(f, maps, lens, nthreads);
	fclose(f);
	return 0;
}

/* --- register --- */

static int run_register(void)
{
	struct gw_client *rcv, *snd;
	int rc;
	if ((rc = gw_connect(at, &rcv)) < 0)
		die(at, rc);
	if ((rc = gw_connect(sock, &snd)) < 0)
		die(sock, rc);
	unsigned delivered = 0, late = 0, refused[2] = { 0 }; /* -ENOENT, other */
	for (unsigned i = 0; i < nthreads; i++) {
		char name[32];
		snprintf(name, sizeof(name), "promise%u", i);
		if ((rc = gw_register(rcv, name)) < 0)
			die("gw_register", rc);
		if ((rc = gw_send(snd, node, name, &i, sizeof(i), 1000)) < 0)
			die("gw_send", rc);
		struct gw_msg m;
		rc = gw_recv(rcv, &m, 5000);
		uint32_t v = UINT32_MAX;
		if (rc == 0 && m.kind == GW_MSG_DATA && m.len == sizeof(v))
			memcpy(&v, m.data, sizeof(v));
		if (v == i) {
			delivered++;
		} else {
			late++;
			/* A refusal comes back to the sender: say which. */
			if (gw_recv(snd, &m, 1000) == 0 && m.kind == GW_MSG_REJECT)
				refused[m.error == -ENOENT ? 0 : 1]++;
		}
		if ((rc = gw_unregister(rcv, name)) < 0)
			die("gw_unregister", rc);
	}
	printf("{\"tries\":%u,\"delivered\":%u,\"refused_enoent\":%u,\"refused_other\":%u,"
	       "\"late\":%u}\n", nthreads, delivered, refused[0], refused[1], late);
	gw_close(rcv);
	gw_close(snd);
	return delivered == nthreads ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "at", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	if (argc < 2)
		goto usage;
	const char *mode = argv[1];
	optind = 2;
	int c;
	while ((c = getopt_long(argc, argv, "s:n:e:w:o:", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'n': node = (uint16_t)atoi(optarg); break;
		case 'e': endpoint = optarg; break;
		case 'w': nthreads = (unsigned)atoi(optarg); break;
		case 'o': out = optarg; break;
		case 'i': idle_ms = (unsigned)atoi(optarg); break;
		case 'a': at = optarg; break;
		default: goto usage;
		}
	}
	if (!strcmp(mode, "register") && sock && at && node) {
		nthreads = nthreads == 32 ? 500 : nthreads; /* -w: the tries */
		return run_register();
	}
	if (!sock || !endpoint || !out || nthreads < 1 || nthreads > WRITERS_MAX)
		goto usage;
	if (!strcmp(mode, "rx"))
		return run_rx();
	if (!strcmp(mode, "tx") && node)
		return run_tx();
usage:
	fprintf(stderr, "usage: gw-promise-check rx -s SOCK -e EP -o FILE [--idle-ms MS]\n"
			"       gw-promise-check tx -s SOCK -n NODE -e EP -w THREADS -o FILE\n"
			"       gw-promise-check register -s SOCK -n NODE --at SOCK2 [-w TIMES]\n");
	return 2;
}
