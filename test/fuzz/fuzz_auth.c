/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/auth: every gridwire frame a gateway with
 * [auth] receives goes through gw_auth_verify before anything else reads
 * it, and an operator's key file through gw_auth_key_load. Nothing may
 * crash or read out of bounds (ASan, UBSan), and the promises hold (CHECK):
 *
 * The first input byte picks a mode, and its bit 7 the [auth] mode
 * (authenticate or encrypt):
 *   0  the rest is a frame as received: verified by a receiver that holds
 *      the key (a stranger's bytes: it must not open, nothing ever does
 *      without the key, unless the fuzzer found AES-GCM's key)
 *   1  the rest is header fields, a payload and an edit: a genuine frame
 *      is sealed (by node 1 for node 2), then one edit is applied (a bit
 *      flipped anywhere, the frame cut, or a length or key field set). The
 *      genuine frame opens exactly once (then it is a replay); an edited
 *      one opens only if the edit left every authenticated byte as it was
 *   2  the rest is a key file's contents
 *
 * The receiver's state (keys, caches, replay windows) is built once and
 * kept: later inputs meet what earlier ones left, as a gateway does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>

#include "fz_input.h"
#include "gw_auth.h"
#include "gw_wire.h"

#define CHECK(c)                                                                      \
	do {                                                                          \
		if (!(c)) {                                                           \
			fprintf(stderr, "CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                      \
		}                                                                     \
	} while (0)

static const struct gw_auth_key key = { .k = { 0x5e, 0xed, 1, 2, 3 } };
static const struct gw_auth_key strangers_key = { .k = { 0x5e, 0xed, 9, 9, 9 } };

/*
 * Node 1 (instance 5) sends to node 2 (instance 6), in each mode. Strangers'
 * frames go to a receiver of their own under a secret with which nothing
 * here ever seals: libFuzzer watches memcmp (this harness compares sealed
 * frames) and can learn a genuine frame and play it back, which would
 * rightly open under the pair's secret.
 */
struct pair {
	struct gw_auth_keys tx_keys, rx_keys, stranger_keys;
	struct gw_auth_tx tx;
	struct gw_auth_rx rx, stranger_rx;
};

static struct pair *pair_of(enum gw_auth_mode mode)
{
	static struct pair p[2];
	static bool ready[2];
	unsigned i = mode == GW_AUTH_ENCRYPT;
	if (!ready[i]) {
		char err[200];
		CHECK(gw_auth_keys_init(&p[i].tx_keys, mode, GW_AUTH_AES_GCM, 1, 5, &key, err,
					sizeof(err)) == 0);
		CHECK(gw_auth_keys_init(&p[i].rx_keys, mode, GW_AUTH_AES_GCM, 2, 6, &key, err,
					sizeof(err)) == 0);
		gw_auth_keys_peer_hello(&p[i].tx_keys, 2, 6, NULL, 0);
		gw_auth_keys_peer_hello(&p[i].rx_keys, 1, 5, NULL, 0);
		CHECK(gw_auth_keys_init(&p[i].stranger_keys, mode, GW_AUTH_AES_GCM, 2, 6,
					&strangers_key, err, sizeof(err)) == 0);
		gw_auth_keys_peer_hello(&p[i].stranger_keys, 1, 5, NULL, 0);
		gw_auth_tx_init(&p[i].tx, &p[i].tx_keys, 3, 1);
		CHECK(gw_auth_rx_init(&p[i].rx, &p[i].rx_keys, 1) == 0);
		CHECK(gw_auth_rx_init(&p[i].stranger_rx, &p[i].stranger_keys, 1) == 0);
		ready[i] = true;
	}
	return &p[i];
}

static void raw(struct pair *p, struct fz_in *in)
{
	uint8_t *f = malloc(in->n ? in->n : 1);
	memcpy(f, in->p, in->n);
	int rc = gw_auth_open(&p->stranger_rx, f, in->n);
	/* A stranger cannot make a frame open; it can only be refused. */
	CHECK(rc == -EMSGSIZE || rc == -EPROTO || rc == -ENOKEY || rc == -EBADMSG ||
	      rc == -EBUSY);
	free(f);
}

/* The authenticated bytes of a sealed frame: the gridwire header, the
 * payload, the trailer. (The outer headers are not: a switch rewrites
 * them.) */
static bool same_authenticated(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return alen == blen && !memcmp(a + GW_OUTER_HLEN, b + GW_OUTER_HLEN, alen - GW_OUTER_HLEN);
}

static void sealed(struct pair *p, struct fz_in *in)
{
	static uint8_t plain[GW_FRAME_MAX + GW_AUTH_TRAILER];
	uint8_t type = (uint8_t)(rd8(in) % 3 + 1);
	uint16_t lane = rd16(in);
	uint32_t seq = rd32(in), base = rd32(in);
	uint8_t edit = rd8(in);
	uint16_t at = rd16(in);
	uint8_t val = rd8(in);
	size_t plen = in->n < 4000 ? in->n : 4000;
	memcpy(plain + GW_FRAME_MIN, in->p, plen);
	const struct gw_addr a = { .ip = 0x0a000001, .port = 47001 },
			     b = { .ip = 0x0a000002, .port = 47000 };
	struct gw_hdr h = { .type = type, .src_node = 1, .dst_node = 2, .lane = lane,
			    .epoch = 5, .seq = seq, .base = base, .len = (uint32_t)plen };
	size_t n = gw_wire_seal(plain, &a, &b, &h);
	size_t cap = n + GW_AUTH_TRAILER;
	uint8_t *good = malloc(cap), *f = malloc(cap);
	int m = gw_auth_seal(&p->tx, good, plain, n, cap, 0);
	CHECK(m == (int)cap);
	memcpy(f, good, cap);
	size_t len = cap;
	switch (edit % 4) {
	case 0: /* none */
		break;
	case 1: /* a bit flipped */
		f[at % cap] ^= (uint8_t)(1u << (val % 8));
		break;
	case 2: /* cut */
		len = at % cap;
		break;
	case 3: /* a byte of the header or trailer set */
		f[at % 2 ? GW_OUTER_HLEN + at % GW_HDR_LEN : n + at % GW_AUTH_TRAILER] = val;
		break;
	}
	uint8_t *g = malloc(len ? len : 1); /* exactly len: ASan sees a byte past it */
	memcpy(g, f, len);
	int rc = gw_auth_open(&p->rx, g, len);
	if (rc >= 0) {
		CHECK(same_authenticated(f, len, good, cap));
		CHECK(rc == (int)n && !memcmp(g + GW_OUTER_HLEN, plain + GW_OUTER_HLEN,
					       n - GW_OUTER_HLEN));
		/* Opened once: the same again is a replay. */
		memcpy(g, f, len);
		CHECK(gw_auth_open(&p->rx, g, len) == -EALREADY);
	} else if (same_authenticated(f, len, good, cap)) {
		/* Only the outer headers changed, or nothing: refused only as
		 * a frame in the wrong place, or for the cache's throttle. */
		CHECK(rc == -EBUSY || rc == -EMSGSIZE);
	}
	free(g);
	free(f);
	free(good);
}

static void key_file(struct fz_in *in)
{
	/* A memfd named by path: a file on disk cost a write-back an input. */
	static char path[64];
	static int fd = -1;
	if (fd < 0) {
		fd = memfd_create("fuzz_auth.key", 0);
		CHECK(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, in->p, in->n, 0) == (ssize_t)in->n);
	struct gw_auth_key k;
	char err[300];
	int rc = gw_auth_key_load(&k, path, err, sizeof(err));
	CHECK(rc == 0 || (rc == -EINVAL && strstr(err, "64 hex digits")));
	if (rc == 0)
		CHECK(in->n >= 64 && in->n <= 79);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	uint8_t mode = rd8(&in);
	struct pair *p = pair_of(mode & 0x80 ? GW_AUTH_ENCRYPT : GW_AUTH_AUTHENTICATE);
	switch (mode & 0x7f) {
	case 0:
		raw(p, &in);
		break;
	case 1:
		sealed(p, &in);
		break;
	case 2:
		key_file(&in);
		break;
	}
	return 0;
}
