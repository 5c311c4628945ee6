/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_auth: seal and open in both modes and both AEADs, forgery, replay,
 * retransmission, keys per direction and instance, rotation, rolls,
 * retirement, key files.
 */
#define _GNU_SOURCE /* memmem */
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
static const struct gw_auth_key key = { .k = { 1, 2, 3 } }, other = { .k = { 9 } };
static const char secret[] = "grid-secret-payload";

/* One gateway's store, a sending lcore and a receiving one. The receivers
 * here mostly have instance 0, what a sender assumes of a peer it has not
 * heard a HELLO from (test_receiver_restart has them apart). */
struct side {
	struct gw_auth_keys ks;
	struct gw_auth_tx tx;
	struct gw_auth_rx rx;
};

static void side_init(struct side *s, uint16_t node, uint32_t instance, enum gw_auth_mode mode,
		      enum gw_auth_aead aead, const struct gw_auth_key *k, uint8_t slot,
		      uint64_t start, unsigned members)
{
	char err[200];
	CU_ASSERT_FATAL(gw_auth_keys_init(&s->ks, mode, aead, node, instance, k, err,
					  sizeof(err)) == 0);
	gw_auth_tx_init(&s->tx, &s->ks, slot, start);
	CU_ASSERT_FATAL(gw_auth_rx_init(&s->rx, &s->ks, members) == 0);
}

static void side_fini(struct side *s)
{
	gw_auth_tx_fini(&s->tx);
	gw_auth_rx_fini(&s->rx);
}

/* A DATA frame from node src (instance epoch) to dst with one record. */
static size_t build_to(uint8_t *f, uint32_t seq, uint16_t src, uint16_t dst, uint32_t epoch)
{
	struct gw_rec r = { .kind = GW_RK_MSG, .len = sizeof(secret) - 1, .dst_ep = 7,
			    .data = (const uint8_t *)secret };
	size_t used = 0;
	gw_wire_rec_put(f + GW_FRAME_MIN, 1000, &used, &r);
	struct gw_hdr h = { .type = GW_FT_DATA, .src_node = src, .dst_node = dst, .nrec = 1,
			    .epoch = epoch, .seq = seq, .len = (uint32_t)used };
	return gw_wire_seal(f, &A, &B, &h);
}

static size_t build(uint8_t *f, uint32_t seq)
{
	return build_to(f, seq, 1, 2, 5);
}

static bool has_secret(const uint8_t *f, size_t n)
{
	return memmem(f, n, secret, sizeof(secret) - 1) != NULL;
}

static const enum gw_auth_mode modes[] = { GW_AUTH_AUTHENTICATE, GW_AUTH_ENCRYPT };
static const enum gw_auth_aead aeads[] = { GW_AUTH_AES_GCM, GW_AUTH_CHACHA };

static void round_trip(enum gw_auth_mode mode, enum gw_auth_aead aead)
{
	uint8_t f[2048], c[2048];
	struct side a, b;
	side_init(&a, 1, 5, mode, aead, &key, 3, 1000, 1);
	side_init(&b, 2, 0, mode, aead, &key, 0, 1, 1);
	size_t n = build(f, 1);
	/* Out of place, as gridwired encrypts: the source is left as it was. */
	int m = gw_auth_seal(&a.tx, c, f, n, sizeof(c), 0);
	CU_ASSERT_EQUAL(m, (int)n + GW_AUTH_TRAILER);
	CU_ASSERT(has_secret(f, n));
	CU_ASSERT_EQUAL(has_secret(c, (size_t)m), mode != GW_AUTH_ENCRYPT);
	/* Sealed, it is still a well-formed datagram a tool can read... */
	struct gw_hdr h;
	const uint8_t *pl;
	CU_ASSERT_EQUAL(gw_wire_parse(c, (size_t)m, 47000, &h, &pl, NULL), GW_EWIRE_SHORT);
	/* ...and opened, exactly the frame that was sealed. */
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, c, (size_t)m), (int)n);
	CU_ASSERT_EQUAL(memcmp(c, f, n), 0);
	CU_ASSERT_EQUAL(gw_wire_parse(c, n, 47000, &h, &pl, NULL), 0);
	CU_ASSERT(h.seq == 1 && h.src_node == 1);
	/* In place too. */
	m = gw_auth_seal(&a.tx, f, f, n, sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), (int)n);
	CU_ASSERT(has_secret(f, n));
	side_fini(&a);
	side_fini(&b);
}

static void test_round_trip(void)
{
	for (unsigned i = 0; i < 2; i++)
		for (unsigned k = 0; k < 2; k++)
			round_trip(modes[i], aeads[k]);
}

static void forged(enum gw_auth_mode mode)
{
	uint8_t f[2048], g[2048];
	struct side a, b, x;
	side_init(&a, 1, 5, mode, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b, 2, 0, mode, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&x, 2, 0, mode, GW_AUTH_AES_GCM, &other, 0, 1, 1);
	size_t n = build(f, 1);
	int m = gw_auth_seal(&a.tx, f, f, n, sizeof(f), 0);
	/* Any bit of header, payload, counter or tag changed: refused. */
	for (size_t i = GW_OUTER_HLEN; i < (size_t)m; i += 7) {
		memcpy(g, f, (size_t)m);
		g[i] ^= 0x10;
		if (i >= GW_OUTER_HLEN + 24 && i < GW_OUTER_HLEN + 28)
			continue; /* the len field moves the trailer: checked below */
		int rc = gw_auth_open(&b.rx, g, (size_t)m);
		size_t tr = n;
		int want = i == tr + 1 ? -EPROTO /* flags: another mode or AEAD */
			   : i >= tr + 4 && i < tr + 8 ? -ENOKEY /* a key id we do not hold */
						       : -EBADMSG;
		CU_ASSERT_EQUAL(rc, want);
	}
	memcpy(g, f, (size_t)m);
	g[GW_OUTER_HLEN + 24] ^= 0x10;
	CU_ASSERT(gw_auth_open(&b.rx, g, (size_t)m) < 0);
	/* Another secret: a key id nobody here holds. */
	memcpy(g, f, (size_t)m);
	CU_ASSERT_EQUAL(gw_auth_open(&x.rx, g, (size_t)m), -ENOKEY);
	/* No trailer, or a truncated one. */
	n = build(g, 2);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, g, n), -EMSGSIZE);
	memcpy(g, f, (size_t)m);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, g, (size_t)m - 5), -EMSGSIZE);
	/* The genuine one still opens: forgeries moved no window. */
	CU_ASSERT(gw_auth_open(&b.rx, f, (size_t)m) > 0);
	side_fini(&a);
	side_fini(&b);
	side_fini(&x);
}

static void test_forged(void)
{
	forged(GW_AUTH_AUTHENTICATE);
	forged(GW_AUTH_ENCRYPT);
}

/* A receiver in the other mode refuses, and says why. */
static void test_wrong_mode(void)
{
	uint8_t f[2048];
	struct side a, b;
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b, 2, 0, GW_AUTH_AUTHENTICATE, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	int m = gw_auth_seal(&a.tx, f, f, build(f, 1), sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), -EPROTO);
	side_fini(&a);
	side_fini(&b);
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_CHACHA, &key, 0, 1, 1);
	side_init(&b, 2, 0, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	m = gw_auth_seal(&a.tx, f, f, build(f, 1), sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), -EPROTO);
	side_fini(&a);
	side_fini(&b);
}

static void test_replay(void)
{
	static uint8_t f[40][2048];
	int len[40];
	struct side a, b;
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 1, 500, 1);
	side_init(&b, 2, 0, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	for (int i = 0; i < 40; i++)
		len[i] = gw_auth_seal(&a.tx, f[i], f[i], build(f[i], (uint32_t)i), sizeof(f[i]), 0);
	static uint8_t c[2048];
	/* Out of order within the window: each accepted once. */
	for (int i = 39; i >= 0; i -= 2) {
		memcpy(c, f[i], (size_t)len[i]);
		CU_ASSERT(gw_auth_open(&b.rx, c, (size_t)len[i]) > 0);
	}
	for (int i = 0; i < 40; i++) {
		memcpy(c, f[i], (size_t)len[i]);
		int rc = gw_auth_open(&b.rx, c, (size_t)len[i]);
		CU_ASSERT(i % 2 == 0 ? rc > 0 : rc == -EALREADY);
	}
	/* Far below the window: refused even if never seen. */
	a.tx.counter += 2 * GW_AUTH_WINDOW;
	uint8_t g[2048];
	int m = gw_auth_seal(&a.tx, g, g, build(g, 99), sizeof(g), 0);
	CU_ASSERT(gw_auth_open(&b.rx, g, (size_t)m) > 0);
	memcpy(c, f[0], (size_t)len[0]);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, c, (size_t)len[0]), -EALREADY);
	side_fini(&a);
	side_fini(&b);
}

/*
 * Two steps, as two receivers share the slots out: the tag is checked
 * wherever the frame arrives, the counter by the slot's one window.
 */
static void test_verify_then_accept(void)
{
	uint8_t f[2048], c[2048];
	struct side a, b, other_lcore;
	side_init(&a, 1, 5, GW_AUTH_AUTHENTICATE, GW_AUTH_AES_GCM, &key, 3, 1000, 1);
	side_init(&b, 2, 0, GW_AUTH_AUTHENTICATE, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	gw_auth_rx_init(&other_lcore.rx, &b.ks, 1);
	int m = gw_auth_seal(&a.tx, f, f, build(f, 5), sizeof(f), 0);
	struct gw_auth_seen seen;
	memcpy(c, f, (size_t)m);
	int n = gw_auth_verify(&other_lcore.rx, c, (size_t)m, &seen);
	CU_ASSERT(n > 0 && n == m - GW_AUTH_TRAILER);
	CU_ASSERT(seen.node == 1 && seen.slot == 3 && seen.counter == 1001);
	CU_ASSERT_EQUAL(gw_auth_accept(&b.rx, &seen), 0);
	/* The same frame again, verified elsewhere: the owner refuses it. */
	memcpy(c, f, (size_t)m);
	CU_ASSERT(gw_auth_verify(&other_lcore.rx, c, (size_t)m, &seen) > 0);
	CU_ASSERT_EQUAL(gw_auth_accept(&b.rx, &seen), -EALREADY);
	memcpy(c, f, (size_t)m);
	c[GW_FRAME_MIN + 1] ^= 1;
	CU_ASSERT_EQUAL(gw_auth_verify(&other_lcore.rx, c, (size_t)m, &seen), -EBADMSG);
	gw_auth_rx_fini(&other_lcore.rx);
	side_fini(&a);
	side_fini(&b);
}

/* A parallel port: the copy of a frame on the other member passes its own
 * window (the lane keeps one of the two); a replay on either member fails. */
static void test_members(void)
{
	uint8_t f[2048], c[2048];
	struct side a, b;
	struct gw_auth_seen seen;
	side_init(&a, 1, 5, GW_AUTH_AUTHENTICATE, GW_AUTH_AES_GCM, &key, 1, 50, 1);
	side_init(&b, 2, 0, GW_AUTH_AUTHENTICATE, GW_AUTH_AES_GCM, &key, 0, 1, 2);
	int m = gw_auth_seal(&a.tx, f, f, build(f, 2), sizeof(f), 0);
	for (uint8_t member = 0; member < 2; member++) {
		memcpy(c, f, (size_t)m);
		CU_ASSERT(gw_auth_verify(&b.rx, c, (size_t)m, &seen) > 0);
		seen.member = member;
		CU_ASSERT_EQUAL(gw_auth_accept(&b.rx, &seen), 0);
		CU_ASSERT_EQUAL(gw_auth_accept(&b.rx, &seen), -EALREADY);
	}
	side_fini(&a);
	side_fini(&b);
}

/* A retransmission is sealed again with a new counter: not a replay, and
 * never the same nonce over other bytes (the restamped base). */
static void test_reseal(void)
{
	for (unsigned i = 0; i < 2; i++) {
		uint8_t f[2048], c[2048], d[2048];
		struct side a, b;
		side_init(&a, 1, 5, modes[i], GW_AUTH_AES_GCM, &key, 2, 7, 1);
		side_init(&b, 2, 0, modes[i], GW_AUTH_AES_GCM, &key, 0, 1, 1);
		size_t n = build(f, 1);
		int m = gw_auth_seal(&a.tx, c, f, n, sizeof(c), 0);
		memcpy(d, c, (size_t)m);
		CU_ASSERT(gw_auth_open(&b.rx, c, (size_t)m) > 0);
		gw_wire_restamp_base(f, 1);
		CU_ASSERT_EQUAL(gw_auth_seal(&a.tx, c, f, n, sizeof(c), 0), m);
		CU_ASSERT(memcmp(c + n + 8, d + n + 8, 8) != 0); /* another counter */
		CU_ASSERT(gw_auth_open(&b.rx, c, (size_t)m) > 0);
		CU_ASSERT_EQUAL(gw_auth_seal(&a.tx, c, f, n, (size_t)m - 1, 0), -ENOSPC);
		side_fini(&a);
		side_fini(&b);
	}
}

/*
 * Keys of their own for each direction of each pair and each instance:
 * the same counter sealing the same bytes to another peer, or after a
 * restart, gives other ciphertext (a nonce reused under one key would give
 * the same keystream).
 */
static void test_keys_apart(void)
{
	uint8_t f[2048], c1[2048], c2[2048], c3[2048];
	struct side a, a2;
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 100, 1);
	side_init(&a2, 1, 77, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 100, 1);
	size_t n = build_to(f, 1, 1, 2, 5);
	int m = gw_auth_seal(&a.tx, c1, f, n, sizeof(c1), 0);
	a.tx.counter = 100;
	build_to(f, 1, 1, 3, 5);
	gw_auth_seal(&a.tx, c2, f, n, sizeof(c2), 0);
	build_to(f, 1, 1, 2, 77); /* restarted: a new epoch, the counter the same */
	gw_auth_seal(&a2.tx, c3, f, n, sizeof(c3), 0);
	CU_ASSERT(memcmp(c1 + n + 8, c2 + n + 8, 8) == 0 && memcmp(c1 + n + 8, c3 + n + 8, 8) == 0);
	CU_ASSERT(memcmp(c1 + GW_FRAME_MIN, c2 + GW_FRAME_MIN, n - GW_FRAME_MIN) != 0);
	CU_ASSERT(memcmp(c1 + GW_FRAME_MIN, c3 + GW_FRAME_MIN, n - GW_FRAME_MIN) != 0);
	/* The reverse direction's key is not this one. */
	struct side b;
	side_init(&b, 2, 0, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	uint8_t g[2048];
	memcpy(g, c1, (size_t)m);
	/* Readdressed as if from 2 to 1: the key of that direction fails. */
	g[GW_OUTER_HLEN + 4] = 2;
	g[GW_OUTER_HLEN + 6] = 1;
	CU_ASSERT_EQUAL(gw_auth_open(&a.rx, g, (size_t)m), -EBADMSG);
	CU_ASSERT(gw_auth_open(&b.rx, c1, (size_t)m) > 0);
	side_fini(&a);
	side_fini(&a2);
	side_fini(&b);
}

/*
 * A receiver that restarted (a new instance, empty replay windows) cannot
 * open frames sealed for its former instance: a capture replayed at it
 * fails the tag. Once its HELLO is heard, frames for it open.
 */
static void test_receiver_restart(void)
{
	uint8_t f[2048], c[2048];
	struct side a, b, b2;
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b, 2, 6, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b2, 2, 99, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	int m = gw_auth_seal(&a.tx, f, f, build(f, 1), sizeof(f), 0);
	memcpy(c, f, (size_t)m);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, c, (size_t)m), -EBADMSG); /* a has not heard b */
	gw_auth_keys_peer_hello(&a.ks, 2, 6, NULL, 0);
	m = gw_auth_seal(&a.tx, f, f, build(f, 2), sizeof(f), 0);
	memcpy(c, f, (size_t)m);
	CU_ASSERT(gw_auth_open(&b.rx, c, (size_t)m) > 0);
	/* b restarts as b2: the frame captured for b, replayed, fails. */
	memcpy(c, f, (size_t)m);
	CU_ASSERT_EQUAL(gw_auth_open(&b2.rx, c, (size_t)m), -EBADMSG);
	gw_auth_keys_peer_hello(&a.ks, 2, 99, NULL, 0);
	m = gw_auth_seal(&a.tx, f, f, build(f, 3), sizeof(f), 0);
	CU_ASSERT(gw_auth_open(&b2.rx, f, (size_t)m) > 0);
	side_fini(&a);
	side_fini(&b);
	side_fini(&b2);
}

/*
 * Rotation: the sender seals with the newest key its peer holds. A peer
 * with the old key only refuses the new one (-ENOKEY) until it loads it;
 * the old one is accepted until retired.
 */
static void test_rotation(void)
{
	uint8_t f[2048];
	struct side a, b;
	const struct gw_auth_key k2 = { .k = { 7, 7 } };
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b, 2, 0, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	uint32_t ids[GW_AUTH_HELD];
	CU_ASSERT_EQUAL(gw_auth_keys_held(&a.ks, ids), 1);
	CU_ASSERT_EQUAL(ids[0], gw_auth_key_id(&key));
	CU_ASSERT_EQUAL(gw_auth_keys_load(&a.ks, &key), 0); /* the same: nothing new */
	CU_ASSERT_EQUAL(gw_auth_keys_load(&a.ks, &k2), 2);
	CU_ASSERT_EQUAL(gw_auth_keys_held(&a.ks, ids), 2);
	CU_ASSERT(ids[0] == gw_auth_key_id(&k2) && ids[1] == gw_auth_key_id(&key));
	/* b said it holds the old key only: a seals with that. */
	uint32_t b_ids[GW_AUTH_HELD];
	unsigned nb = gw_auth_keys_held(&b.ks, b_ids);
	gw_auth_keys_peer_hello(&a.ks, 2, 0, b_ids, nb);
	int m = gw_auth_seal(&a.tx, f, f, build(f, 1), sizeof(f), 0);
	CU_ASSERT(gw_auth_open(&b.rx, f, (size_t)m) > 0);
	/* a retires the old key: it seals with the new one, b refuses it... */
	gw_auth_keys_retire(&a.ks);
	m = gw_auth_seal(&a.tx, f, f, build(f, 2), sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), -ENOKEY);
	/* ...until b loads it. */
	CU_ASSERT_EQUAL(gw_auth_keys_load(&b.ks, &k2), 2);
	m = gw_auth_seal(&a.tx, f, f, build(f, 3), sizeof(f), 0);
	CU_ASSERT(gw_auth_open(&b.rx, f, (size_t)m) > 0);
	/* b still takes the old key within its overlap, not after. */
	struct side old;
	side_init(&old, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 1, 1, 1);
	m = gw_auth_seal(&old.tx, f, f, build(f, 4), sizeof(f), 0);
	uint8_t c[2048];
	memcpy(c, f, (size_t)m);
	CU_ASSERT(gw_auth_open(&b.rx, c, (size_t)m) > 0);
	gw_auth_keys_retire(&b.ks);
	m = gw_auth_seal(&old.tx, f, f, build(f, 5), sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), -ENOKEY);
	/* A sealed generation that is gone: the caller hears of it. */
	CU_ASSERT_EQUAL(gw_auth_seal(&a.tx, f, f, build(f, 6), sizeof(f), 1), -ENOKEY);
	side_fini(&a);
	side_fini(&b);
	side_fini(&old);
}

/* A roll changes every frame key; the receiver follows without a word. */
static void test_roll(void)
{
	uint8_t f[2048], c1[2048], c2[2048];
	struct side a, b;
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b, 2, 0, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	size_t n = build(f, 1);
	int m = gw_auth_seal(&a.tx, c1, f, n, sizeof(c1), 0);
	CU_ASSERT(gw_auth_open(&b.rx, c1, (size_t)m) > 0);
	gw_auth_keys_roll(&a.ks);
	a.tx.counter--; /* the same nonce: only the key differs */
	gw_auth_seal(&a.tx, c2, f, n, sizeof(c2), 0);
	CU_ASSERT(memcmp(c1 + GW_FRAME_MIN, c2 + GW_FRAME_MIN, n - GW_FRAME_MIN) != 0);
	m = gw_auth_seal(&a.tx, c1, f, n, sizeof(c1), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, c1, (size_t)m), (int)n);
	side_fini(&a);
	side_fini(&b);
}

/* The same secret loaded again after another: its frames open again at
 * once (the receiver's cached key for it is the same). */
static void test_reload(void)
{
	uint8_t f[2048];
	struct side a, b;
	const struct gw_auth_key k2 = { .k = { 7, 7 } };
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b, 2, 0, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	int m = gw_auth_seal(&a.tx, f, f, build(f, 1), sizeof(f), 0);
	CU_ASSERT(gw_auth_open(&b.rx, f, (size_t)m) > 0);
	gw_auth_keys_load(&b.ks, &k2);
	gw_auth_keys_retire(&b.ks);
	m = gw_auth_seal(&a.tx, f, f, build(f, 2), sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), -ENOKEY);
	CU_ASSERT_EQUAL(gw_auth_keys_load(&b.ks, &key), 3);
	m = gw_auth_seal(&a.tx, f, f, build(f, 3), sizeof(f), 0);
	CU_ASSERT(gw_auth_open(&b.rx, f, (size_t)m) > 0);
	side_fini(&a);
	side_fini(&b);
}

/*
 * What a receiver refuses before deriving a key: a frame for another node;
 * a roll two behind the newest of the sender's current instance (a leaked
 * old frame key forges nothing); and, past GW_AUTH_MISS_MAX derivations in
 * an interval, any frame whose key is not cached yet.
 */
static void test_refused_early(void)
{
	uint8_t f[2048];
	struct side a, b;
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	side_init(&b, 2, 0, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	int m = gw_auth_seal(&a.tx, f, f, build_to(f, 1, 1, 3, 5), sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), -EBADMSG);
	/* b heard a's HELLO: a's rolls are tracked. */
	gw_auth_keys_peer_hello(&b.ks, 1, 5, NULL, 0);
	uint8_t old[2048];
	int mo = gw_auth_seal(&a.tx, old, old, build(old, 2), sizeof(old), 0); /* roll 0 */
	uint8_t c[2048];
	memcpy(c, old, (size_t)mo);
	CU_ASSERT(gw_auth_open(&b.rx, c, (size_t)mo) > 0);
	gw_auth_keys_roll(&a.ks);
	gw_auth_keys_roll(&a.ks);
	m = gw_auth_seal(&a.tx, f, f, build(f, 3), sizeof(f), 0); /* roll 2 */
	CU_ASSERT(gw_auth_open(&b.rx, f, (size_t)m) > 0);
	a.tx.counter += 10; /* a frame under roll 0 with a fresh counter: refused */
	gw_auth_keys_roll(&a.ks);
	a.ks.roll = 0;
	m = gw_auth_seal(&a.tx, f, f, build(f, 4), sizeof(f), 0);
	CU_ASSERT_EQUAL(gw_auth_open(&b.rx, f, (size_t)m), -ENOKEY);
	/* Frames naming ever new sender instances: a few derivations, then -EBUSY. */
	int busy = 0, forged = 0;
	for (uint32_t i = 0; i < 2 * GW_AUTH_MISS_MAX; i++) {
		m = gw_auth_seal(&a.tx, f, f, build_to(f, 5, 1, 2, 1000 + i), sizeof(f), 0);
		int rc = gw_auth_open(&b.rx, f, (size_t)m);
		busy += rc == -EBUSY;
		forged += rc > 0;
	}
	CU_ASSERT(busy >= GW_AUTH_MISS_MAX - 2 && forged <= GW_AUTH_MISS_MAX + 2);
	side_fini(&a);
	side_fini(&b);
}

static void test_due(void)
{
	struct side a;
	side_init(&a, 1, 5, GW_AUTH_ENCRYPT, GW_AUTH_AES_GCM, &key, 0, 1, 1);
	struct gw_auth_timer t = { .loaded_ns = 100, .rolled_ns = 100, .rolled_bytes = 1000 };
	CU_ASSERT_EQUAL(gw_auth_due(&a.ks, &t, 150, 1500, 10, 100, 1000), 0);
	CU_ASSERT_EQUAL(gw_auth_due(&a.ks, &t, 200, 1500, 10, 100, 1000), GW_AUTH_DUE_ROLL);
	CU_ASSERT_EQUAL(gw_auth_due(&a.ks, &t, 150, 2000, 10, 100, 1000), GW_AUTH_DUE_ROLL);
	const struct gw_auth_key k2 = { .k = { 7 } };
	gw_auth_keys_load(&a.ks, &k2);
	CU_ASSERT_EQUAL(gw_auth_due(&a.ks, &t, 105, 1000, 10, 100, 1000), 0);
	CU_ASSERT_EQUAL(gw_auth_due(&a.ks, &t, 110, 1000, 10, 100, 1000), GW_AUTH_DUE_RETIRE);
	gw_auth_keys_retire(&a.ks);
	CU_ASSERT_EQUAL(gw_auth_due(&a.ks, &t, 110, 1000, 10, 100, 1000), 0);
	side_fini(&a);
}

static void test_names(void)
{
	enum gw_auth_mode m;
	enum gw_auth_aead x;
	CU_ASSERT(gw_auth_mode_parse("encrypt", &m) == 0 && m == GW_AUTH_ENCRYPT);
	CU_ASSERT(gw_auth_aead_parse("chacha20-poly1305", &x) == 0 && x == GW_AUTH_CHACHA);
	CU_ASSERT_EQUAL(gw_auth_mode_parse("rot13", &m), -EINVAL);
	CU_ASSERT_STRING_EQUAL(gw_auth_aead_name(GW_AUTH_AES_GCM), "aes-256-gcm");
	CU_ASSERT(gw_auth_aead_supported(GW_AUTH_CHACHA));
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
	f = fopen(path, "w");
	fputs("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e\n", f); /* 31 bytes */
	fclose(f);
	CU_ASSERT_EQUAL(gw_auth_key_load(&k, path, err, sizeof(err)), -EINVAL);
	/* A key, then more than a key file can hold: not a key file. */
	f = fopen(path, "w");
	fprintf(f, "%s%s", good, "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\nkey=old\n");
	fclose(f);
	CU_ASSERT_EQUAL(gw_auth_key_load(&k, path, err, sizeof(err)), -EINVAL);
	unlink(path);
	CU_ASSERT_EQUAL(gw_auth_key_load(&k, path, err, sizeof(err)), -ENOENT);
	CU_ASSERT(strstr(err, "cannot read") != NULL);
}

static const struct gw_test_case cases[] = {
	{ "seal and open, both modes and AEADs", test_round_trip },
	{ "forged, truncated, unknown key refused", test_forged },
	{ "another mode or AEAD refused", test_wrong_mode },
	{ "replays refused", test_replay },
	{ "verify, then accept at the slot's owner", test_verify_then_accept },
	{ "a window per member of a parallel port", test_members },
	{ "retransmission resealed", test_reseal },
	{ "keys per direction, pair and instance", test_keys_apart },
	{ "a restarted receiver opens nothing sealed before", test_receiver_restart },
	{ "rotation: overlap, peer's keys, retirement", test_rotation },
	{ "roll", test_roll },
	{ "a secret loaded again", test_reload },
	{ "refused before a key is derived", test_refused_early },
	{ "retire and roll when due", test_due },
	{ "mode and AEAD names", test_names },
	{ "key file", test_key_file },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("auth", cases);
}
