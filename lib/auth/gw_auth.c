/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_auth: frame tags with a pre-shared key; see gw_auth.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "gw_auth.h"
#include "gw_wire.h"

#define GH_SRC_NODE 4 /* offsets in the gridwire header, doc/protocol.md */
#define GH_LEN 24
#define NONCE_LEN crypto_aead_chacha20poly1305_IETF_NPUBBYTES

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int gw_auth_key_load(struct gw_auth_key *key, const char *path, char *err, size_t errlen)
{
	char hex[80] = { 0 };
	FILE *f = fopen(path, "r");
	if (!f) {
		int rc = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return rc;
	}
	size_t n = fread(hex, 1, sizeof(hex) - 1, f);
	fclose(f);
	while (n && (hex[n - 1] == '\n' || hex[n - 1] == '\r'))
		hex[--n] = '\0';
	size_t got = 0;
	if (sodium_init() < 0 || n != 64 ||
	    sodium_hex2bin(key->k, sizeof(key->k), hex, n, NULL, &got, NULL) != 0 ||
	    got != sizeof(key->k)) {
		snprintf(err, errlen, "%s must hold 64 hex digits (32 bytes), e.g. from "
			 "`head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`", path);
		return -EINVAL;
	}
	return 0;
}

void gw_auth_tx_init(struct gw_auth_tx *tx, const struct gw_auth_key *key, uint8_t slot,
		     uint64_t start)
{
	tx->key = key;
	tx->slot = slot;
	tx->counter = start;
}

static void nonce_of(uint8_t *nonce, uint16_t node, uint8_t slot, uint64_t counter)
{
	memset(nonce, 0, NONCE_LEN);
	nonce[0] = (uint8_t)node;
	nonce[1] = (uint8_t)(node >> 8);
	nonce[2] = slot;
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(counter >> (8 * i));
}

/* Where the trailer of a frame with this gridwire payload length starts. */
static size_t trailer_at(const uint8_t *frame)
{
	return GW_FRAME_MIN + le32(frame + GW_OUTER_HLEN + GH_LEN);
}

int gw_auth_seal(struct gw_auth_tx *tx, uint8_t *frame, size_t len, size_t cap)
{
	size_t t = trailer_at(frame);
	if (t + GW_AUTH_TRAILER > cap || t > len)
		return -ENOSPC;
	uint8_t *tr = frame + t;
	uint64_t ctr = ++tx->counter;
	memset(tr, 0, 16);
	tr[0] = tx->slot;
	for (int i = 0; i < 8; i++)
		tr[8 + i] = (uint8_t)(ctr >> (8 * i));
	uint16_t node = (uint16_t)(frame[GW_OUTER_HLEN + GH_SRC_NODE] |
				   frame[GW_OUTER_HLEN + GH_SRC_NODE + 1] << 8);
	uint8_t nonce[NONCE_LEN];
	nonce_of(nonce, node, tx->slot, ctr);
	unsigned long long maclen;
	uint8_t none[1] = { 0 }; /* nothing is encrypted: the frame is all associated data */
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(
		none, tr + 16, &maclen, none, 0, frame + GW_OUTER_HLEN,
		t + 16 - GW_OUTER_HLEN, NULL, nonce, tx->key->k);
	gw_wire_set_ip_len(frame, (uint16_t)(t + GW_AUTH_TRAILER - GW_ETH_HLEN));
	return (int)(t + GW_AUTH_TRAILER);
}

int gw_auth_rx_init(struct gw_auth_rx *rx, const struct gw_auth_key *key, unsigned members)
{
	rx->key = key;
	rx->members = members ? members : 1;
	rx->win = calloc((size_t)rx->members * GW_AUTH_NODES * GW_AUTH_SLOTS, sizeof(*rx->win));
	return rx->win ? 0 : -ENOMEM;
}

void gw_auth_rx_fini(struct gw_auth_rx *rx)
{
	free(rx->win);
	rx->win = NULL;
}

/* Accept ctr once, within the window below the highest seen. */
static int window_accept(struct gw_auth_window *w, uint64_t ctr)
{
	if (ctr > w->top) {
		uint64_t shift = ctr - w->top;
		if (shift >= GW_AUTH_WINDOW) {
			memset(w->bits, 0, sizeof(w->bits));
		} else {
			for (uint64_t c = w->top + 1; c <= ctr; c++)
				w->bits[(c / 64) % (GW_AUTH_WINDOW / 64)] &= ~(1ull << (c % 64));
		}
		w->top = ctr;
	} else if (w->top - ctr >= GW_AUTH_WINDOW) {
		return -EALREADY; /* too old to tell: refuse */
	}
	uint64_t *word = &w->bits[(ctr / 64) % (GW_AUTH_WINDOW / 64)];
	if (*word & (1ull << (ctr % 64)))
		return -EALREADY;
	*word |= 1ull << (ctr % 64);
	return 0;
}

int gw_auth_verify(const struct gw_auth_key *key, uint8_t *frame, size_t len,
		   struct gw_auth_seen *seen)
{
	if (len < GW_FRAME_MIN + GW_AUTH_TRAILER)
		return -EBADMSG;
	size_t t = trailer_at(frame);
	if (t + GW_AUTH_TRAILER > len || t < GW_FRAME_MIN)
		return -EBADMSG;
	const uint8_t *tr = frame + t;
	uint8_t slot = tr[0];
	uint64_t ctr = 0;
	for (int i = 0; i < 8; i++)
		ctr |= (uint64_t)tr[8 + i] << (8 * i);
	uint16_t node = (uint16_t)(frame[GW_OUTER_HLEN + GH_SRC_NODE] |
				   frame[GW_OUTER_HLEN + GH_SRC_NODE + 1] << 8);
	if (slot >= GW_AUTH_SLOTS || node >= GW_AUTH_NODES)
		return -EBADMSG;
	uint8_t nonce[NONCE_LEN];
	nonce_of(nonce, node, slot, ctr);
	uint8_t none[1] = { 0 };
	if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		    none, NULL, none, 0, tr + 16, frame + GW_OUTER_HLEN, t + 16 - GW_OUTER_HLEN,
		    nonce, key->k) != 0)
		return -EBADMSG;
	seen->node = node;
	seen->slot = slot;
	seen->member = 0;
	seen->counter = ctr;
	gw_wire_set_ip_len(frame, (uint16_t)(t - GW_ETH_HLEN));
	return (int)t;
}

int gw_auth_accept(struct gw_auth_rx *rx, const struct gw_auth_seen *seen)
{
	unsigned member = seen->member < rx->members ? seen->member : 0;
	return window_accept(&rx->win[((size_t)member * GW_AUTH_NODES + seen->node) * GW_AUTH_SLOTS +
				      seen->slot],
			     seen->counter);
}

int gw_auth_open(struct gw_auth_rx *rx, uint8_t *frame, size_t len)
{
	struct gw_auth_seen seen;
	int n = gw_auth_verify(rx->key, frame, len, &seen);
	/* Only a genuine frame may move the window. */
	if (n < 0)
		return n;
	int rc = gw_auth_accept(rx, &seen);
	return rc < 0 ? rc : n;
}
