/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_auth: seal and open, forgery, replay, retransmission, key files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw_auth.h"
#include "gw_test.h"
#include "gw_wire.h"

static const struct gw_addr A = { .mac = { 2, 0, 0, 0, 0, 1 }, .ip = 0xC6120001, .port = 47000 };
static const struct gw_addr B = { .mac = { 2, 0, 0, 0, 0, 2 }, .ip = 0xC6120002, .port = 47000 };
static struct gw_auth_key key = { .k = { 1, 2, 3 } }, other = { .k = { 9 } };

/* A DATA frame from node 1 with one record. */
static size_t build(uint8_t *f, uint32_t seq)
{
	struct gw_rec r = { .kind = GW_RK_MSG, .len = 5, .dst_ep = 7, .data = (const uint8_t *)"hello" };
	size_t used = 0;
	gw_wire_rec_put(f + GW_FRAME_MIN, 1000, &used, &r);
	struct gw_hdr h = { .type = GW_FT_DATA, .src_node = 1, .dst_node = 2, .nrec = 1,
			    .epoch = 5, .seq = seq, .len = (uint32_t)used };
	return gw_wire_seal(f, &A, &B, &h);
}

static void test_round_trip(void)
{
	uint8_t f[2048];
	struct gw_auth_tx tx;
	struct gw_auth_rx rx;
	gw_auth_tx_init(&tx, &key, 3, 1000);
	CU_ASSERT_FATAL(gw_auth_rx_init(&rx, &key, 1) == 0);
	size_t n = build(f, 1);
	int m = gw_auth_seal(&tx, f, n, sizeof(f));
	CU_ASSERT_EQUAL(m, (int)n + GW_AUTH_TRAILER);
	/* Sealed, it is still a well-formed datagram a tool can read... */
	struct gw_hdr h;
	const uint8_t *pl;
	CU_ASSERT_EQUAL(gw_wire_parse(f, (size_t)m, 47000, &h, &pl, NULL), GW_EWIRE_SHORT);
	/* ...and opened, exactly the frame that was sealed. */
	CU_ASSERT_EQUAL(gw_auth_open(&rx, f, (size_t)m), (int)n);
	CU_ASSERT_EQUAL(gw_wire_parse(f, n, 47000, &h, &pl, NULL), 0);
	CU_ASSERT(h.seq == 1 && h.src_node == 1);
	gw_auth_rx_fini(&rx);
}

static void test_forged(void)
{
	uint8_t f[2048], g[2048];
	struct gw_auth_tx tx;
	struct gw_auth_rx rx;
	gw_auth_tx_init(&tx, &key, 0, 1);
	gw_auth_rx_init(&rx, &key, 1);
	size_t n = build(f, 1);
	int m = gw_auth_seal(&tx, f, n, sizeof(f));
	/* Any bit of header, payload, counter or tag changed: refused. */
	for (size_t i = GW_OUTER_HLEN; i < (size_t)m; i += 7) {
		memcpy(g, f, (size_t)m);
		g[i] ^= 0x10;
		if (i >= GW_OUTER_HLEN + 24 && i < GW_OUTER_HLEN + 28)
			continue; /* the len field moves the trailer: checked below */
		CU_ASSERT_EQUAL(gw_auth_open(&rx, g, (size_t)m), -EBADMSG);
	}
	memcpy(g, f, (size_t)m);
	g[GW_OUTER_HLEN + 24] ^= 0x10;
	CU_ASSERT(gw_auth_open(&rx, g, (size_t)m) < 0);
	/* Another key, or no trailer at all: refused. */
	struct gw_auth_rx rx2;
	gw_auth_rx_init(&rx2, &other, 1);
	memcpy(g, f, (size_t)m);
	CU_ASSERT_EQUAL(gw_auth_open(&rx2, g, (size_t)m), -EBADMSG);
	n = build(g, 2);
	CU_ASSERT_EQUAL(gw_auth_open(&rx, g, n), -EBADMSG);
	/* The genuine one still opens: forgeries moved no window. */
	CU_ASSERT(gw_auth_open(&rx, f, (size_t)m) > 0);
	gw_auth_rx_fini(&rx);
	gw_auth_rx_fini(&rx2);
}

static void test_replay(void)
{
	static uint8_t f[40][2048];
	int len[40];
	struct gw_auth_tx tx;
	struct gw_auth_rx rx;
	gw_auth_tx_init(&tx, &key, 1, 500);
	gw_auth_rx_init(&rx, &key, 1);
	for (int i = 0; i < 40; i++)
		len[i] = gw_auth_seal(&tx, f[i], build(f[i], (uint32_t)i), sizeof(f[i]));
	static uint8_t c[2048];
	/* Out of order within the window: each accepted once. */
	for (int i = 39; i >= 0; i -= 2) {
		memcpy(c, f[i], (size_t)len[i]);
		CU_ASSERT(gw_auth_open(&rx, c, (size_t)len[i]) > 0);
	}
	for (int i = 0; i < 40; i++) {
		memcpy(c, f[i], (size_t)len[i]);
		int rc = gw_auth_open(&rx, c, (size_t)len[i]);
		CU_ASSERT(i % 2 == 0 ? rc > 0 : rc == -EALREADY);
	}
	/* Far below the window: refused even if never seen. */
	gw_auth_tx_init(&tx, &key, 1, 500 + 40 + 2 * GW_AUTH_WINDOW);
	uint8_t g[2048];
	int m = gw_auth_seal(&tx, g, build(g, 99), sizeof(g));
	CU_ASSERT(gw_auth_open(&rx, g, (size_t)m) > 0);
	memcpy(c, f[0], (size_t)len[0]);
	CU_ASSERT_EQUAL(gw_auth_open(&rx, c, (size_t)len[0]), -EALREADY);
	gw_auth_rx_fini(&rx);
}

/*
 * Two steps, as two receivers share the slots out: the tag is checked
 * wherever the frame arrives, the counter by the slot's one window. A
 * replay checked on another "receiver" still meets that window; a forged
 * frame never gets as far as a window.
 */
static void test_verify_then_accept(void)
{
	uint8_t f[2048], c[2048];
	struct gw_auth_tx tx;
	struct gw_auth_rx owner;
	gw_auth_tx_init(&tx, &key, 3, 1000);
	gw_auth_rx_init(&owner, &key, 1);
	int m = gw_auth_seal(&tx, f, build(f, 5), sizeof(f));
	struct gw_auth_seen seen;
	memcpy(c, f, (size_t)m);
	int n = gw_auth_verify(&key, c, (size_t)m, &seen);
	CU_ASSERT(n > 0 && n == m - GW_AUTH_TRAILER);
	CU_ASSERT(seen.node == 1 && seen.slot == 3 && seen.counter == 1001); /* counters count from start + 1 */
	CU_ASSERT_EQUAL(gw_auth_accept(&owner, &seen), 0);
	/* The same frame again, verified elsewhere: the owner refuses it. */
	memcpy(c, f, (size_t)m);
	CU_ASSERT(gw_auth_verify(&key, c, (size_t)m, &seen) > 0);
	CU_ASSERT_EQUAL(gw_auth_accept(&owner, &seen), -EALREADY);
	/* A flipped payload byte fails the tag, whoever checks it. */
	memcpy(c, f, (size_t)m);
	c[GW_FRAME_MIN + 1] ^= 1;
	CU_ASSERT_EQUAL(gw_auth_verify(&key, c, (size_t)m, &seen), -EBADMSG);
	gw_auth_rx_fini(&owner);
}

/* A parallel port: the copy of a frame on the other member passes its own
 * window (the lane keeps one of the two); a replay on either member fails. */
static void test_members(void)
{
	uint8_t f[2048], c[2048];
	struct gw_auth_tx tx;
	struct gw_auth_rx rx;
	struct gw_auth_seen seen;
	gw_auth_tx_init(&tx, &key, 1, 50);
	CU_ASSERT_FATAL(gw_auth_rx_init(&rx, &key, 2) == 0);
	int m = gw_auth_seal(&tx, f, build(f, 2), sizeof(f));
	for (uint8_t member = 0; member < 2; member++) {
		memcpy(c, f, (size_t)m);
		CU_ASSERT(gw_auth_verify(&key, c, (size_t)m, &seen) > 0);
		seen.member = member;
		CU_ASSERT_EQUAL(gw_auth_accept(&rx, &seen), 0);
		CU_ASSERT_EQUAL(gw_auth_accept(&rx, &seen), -EALREADY);
	}
	gw_auth_rx_fini(&rx);
}

/* A retransmission is sealed again with a new counter: not a replay. */
static void test_reseal(void)
{
	uint8_t f[2048], c[2048];
	struct gw_auth_tx tx;
	struct gw_auth_rx rx;
	gw_auth_tx_init(&tx, &key, 2, 7);
	gw_auth_rx_init(&rx, &key, 1);
	int m = gw_auth_seal(&tx, f, build(f, 1), sizeof(f));
	memcpy(c, f, (size_t)m);
	CU_ASSERT(gw_auth_open(&rx, c, (size_t)m) > 0);
	gw_wire_restamp_base(f, 1);
	CU_ASSERT_EQUAL(gw_auth_seal(&tx, f, (size_t)m, sizeof(f)), m);
	memcpy(c, f, (size_t)m);
	CU_ASSERT(gw_auth_open(&rx, c, (size_t)m) > 0);
	CU_ASSERT_EQUAL(gw_auth_seal(&tx, f, (size_t)m, (size_t)m - 1), -ENOSPC);
	gw_auth_rx_fini(&rx);
}

static void test_key_file(void)
{
	char path[] = "/tmp/gw_auth_keyXXXXXX", err[200];
	int fd = mkstemp(path);
	const char good[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
	CU_ASSERT_FATAL(write(fd, good, sizeof(good) - 1) == (ssize_t)sizeof(good) - 1);
	close(fd);
	struct gw_auth_key k;
	CU_ASSERT_EQUAL(gw_auth_key_load(&k, path, err, sizeof(err)), 0);
	CU_ASSERT(k.k[0] == 0 && k.k[31] == 0x1f);
	FILE *f = fopen(path, "w");
	fputs("not a key\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(gw_auth_key_load(&k, path, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "64 hex digits") != NULL);
	unlink(path);
	CU_ASSERT_EQUAL(gw_auth_key_load(&k, path, err, sizeof(err)), -ENOENT);
	CU_ASSERT(strstr(err, "cannot read") != NULL);
}

static const struct gw_test_case cases[] = {
	{ "seal and open", test_round_trip },
	{ "forged frames refused", test_forged },
	{ "replays refused", test_replay },
	{ "verify, then accept at the slot's owner", test_verify_then_accept },
	{ "a window per member of a parallel port", test_members },
	{ "retransmission resealed", test_reseal },
	{ "key file", test_key_file },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("auth", cases);
}
