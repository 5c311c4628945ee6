/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-ref: what a user could write instead of gridwire, for the benchmark's
 * reference rows (scripts/bench.sh): the same 225-byte messages between
 * the same two namespaces over the kernel.
 *
 *   gw-ref tcp-recv PORT COUNT SIZE          gw-ref tcp-send IP PORT COUNT SIZE
 *   gw-ref zmq-pull PORT COUNT SIZE          gw-ref zmq-push IP PORT COUNT SIZE
 *
 * tcp: the sender packs messages into a 64 KB buffer and writes it when
 * full (application buffering, the best a TCP user does); the receiver
 * reads 64 KB at a time and splits them. zmq: PUSH/PULL over TCP, one
 * zmq_send per message (ZeroMQ batches underneath). Receivers check a
 * sequence number in every message and print one JSON line: messages,
 * elapsed, msg/s and CPU seconds.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#ifdef GW_HAVE_ZMQ
#include <zmq.h>
#endif

#define REF_BUF (64 * 1024)

static double now_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int die(const char *what)
{
	fprintf(stderr, "gw-ref: %s: %s\n", what, strerror(errno));
	return 1;
}

static int report(const char *path, uint64_t n, uint64_t bad, double t0, double c0)
{
	double el = now_s(CLOCK_MONOTONIC) - t0;
	printf("{\"path\":\"%s\",\"msgs\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"elapsed_s\":%.3f,"
	       "\"msgs_per_s\":%.0f,\"cpu_s\":%.3f}\n",
	       path, n, bad, el, (double)n / el, now_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return bad ? 1 : 0;
}

static int tcp_recv(int port, uint64_t count, size_t size)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0)
		return die("listen");
	fprintf(stderr, "gw-ref: ready\n");
	int s = accept(ls, NULL, NULL);
	if (s < 0)
		return die("accept");
	static uint8_t buf[REF_BUF * 2];
	size_t have = 0;
	uint64_t n = 0, bad = 0;
	double t0 = 0, c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	while (n < count) {
		ssize_t r = read(s, buf + have, REF_BUF);
		if (r <= 0)
			break;
		if (!t0)
			t0 = now_s(CLOCK_MONOTONIC);
		have += (size_t)r;
		size_t off = 0;
		for (; have - off >= size; off += size, n++) {
			uint64_t seq;
			memcpy(&seq, buf + off, sizeof(seq));
			bad += seq != n;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	close(s); /* the sender waits for this: everything was read */
	return report("tcp_64k", n, bad + (count - n), t0, c0);
}

static int tcp_send(const char *ip, int port, uint64_t count, size_t size)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, ip, &sa.sin_addr);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return die("connect");
	static uint8_t buf[REF_BUF];
	size_t used = 0;
	for (uint64_t i = 0; i < count; i++) {
		if (used + size > sizeof(buf)) {
			if (write(s, buf, used) != (ssize_t)used)
				return die("write");
			used = 0;
		}
		memcpy(buf + used, &i, sizeof(i));
		used += size;
	}
	if (used && write(s, buf, used) != (ssize_t)used)
		return die("write");
	shutdown(s, SHUT_WR);
	char c;
	while (read(s, &c, 1) > 0) /* until the receiver has read everything */
		;
	close(s);
	return 0;
}

#ifdef GW_HAVE_ZMQ
static int zmq_pull(int port, uint64_t count, size_t size)
{
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_PULL);
	char ep[64];
	snprintf(ep, sizeof(ep), "tcp://*:%d", port);
	if (zmq_bind(s, ep) < 0)
		return die("zmq_bind");
	fprintf(stderr, "gw-ref: ready\n");
	uint8_t buf[REF_BUF];
	uint64_t n = 0, bad = 0;
	double t0 = 0, c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	for (; n < count; n++) {
		int r = zmq_recv(s, buf, sizeof(buf), 0);
		if (r < 0)
			return die("zmq_recv");
		if (!t0)
			t0 = now_s(CLOCK_MONOTONIC);
		uint64_t seq;
		memcpy(&seq, buf, sizeof(seq));
		bad += seq != n || (size_t)r != size;
	}
	int rc = report("zmq_push_pull", n, bad, t0, c0);
	zmq_close(s);
	zmq_ctx_term(ctx);
	return rc;
}

static int zmq_push(const char *ip, int port, uint64_t count, size_t size)
{
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_PUSH);
	char ep[64];
	int linger = -1;
	snprintf(ep, sizeof(ep), "tcp://%s:%d", ip, port);
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(s, ep) < 0)
		return die("zmq_connect");
	uint8_t buf[REF_BUF] = { 0 };
	for (uint64_t i = 0; i < count; i++) {
		memcpy(buf, &i, sizeof(i));
		if (zmq_send(s, buf, size, 0) < 0)
			return die("zmq_send");
	}
	zmq_close(s);
	zmq_ctx_term(ctx); /* linger -1: returns once everything is sent */
	return 0;
}
#endif

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	bool send = !strcmp(cmd, "tcp-send") || !strcmp(cmd, "zmq-push");
	int need = send ? 6 : 5;
	if (argc != need) {
		fprintf(stderr, "usage: gw-ref tcp-recv|zmq-pull PORT COUNT SIZE\n"
				"       gw-ref tcp-send|zmq-push IP PORT COUNT SIZE\n");
		return 2;
	}
	int a = send ? 3 : 2;
	int port = atoi(argv[a]);
	uint64_t count = strtoull(argv[a + 1], NULL, 0);
	size_t size = strtoul(argv[a + 2], NULL, 0);
	if (size < sizeof(uint64_t) || size > REF_BUF) {
		fprintf(stderr, "gw-ref: SIZE must be 8..%d\n", REF_BUF);
		return 2;
	}
	if (!strcmp(cmd, "tcp-recv"))
		return tcp_recv(port, count, size);
	if (!strcmp(cmd, "tcp-send"))
		return tcp_send(argv[2], port, count, size);
#ifdef GW_HAVE_ZMQ
	if (!strcmp(cmd, "zmq-pull"))
		return zmq_pull(port, count, size);
	if (!strcmp(cmd, "zmq-push"))
		return zmq_push(argv[2], port, count, size);
#endif
	fprintf(stderr, "gw-ref: unknown or unavailable command %s\n", cmd);
	return 2;
}
