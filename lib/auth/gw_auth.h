/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_auth: optional frame authentication with a pre-shared key (libsodium).
 *
 * When a key is configured every gridwire frame carries a 32-byte trailer
 * after its payload, inside the UDP datagram:
 *
 *   u8 slot | 7 bytes 0 | u64 counter (LE) | 16-byte tag
 *
 * The tag is ChaCha20-Poly1305 (IETF) over the gridwire header, payload,
 * slot and counter as associated data, with nonce (src node, slot, counter).
 * A sender's slot is the TX queue of the lcore that sends; its counter
 * starts at the wall clock in nanoseconds and counts up, so a restarted
 * gateway never reuses a nonce. The receiver drops frames whose tag does
 * not verify (forged, or sent with another key) and frames it has seen, or
 * that are older than a window of 1024 per sender slot (replayed). A
 * parallel port carries every frame once per member, so each member has
 * windows of its own: a frame's copy on another member is for the lane to
 * keep or drop as the copy it is, never a replay.
 *
 * One tag per frame: batching spreads its cost over every message in it.
 */
#ifndef GW_AUTH_H
#define GW_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define GW_AUTH_TRAILER 32
#define GW_AUTH_SLOTS 32 /* sending lcores: a TX queue each */
#define GW_AUTH_WINDOW 1024
#define GW_AUTH_NODES 256

struct gw_auth_key {
	uint8_t k[32];
};

/* A sending lcore's state. */
struct gw_auth_tx {
	const struct gw_auth_key *key;
	uint8_t slot;
	uint64_t counter;
};

struct gw_auth_window {
	uint64_t top; /* highest counter accepted; 0 = none yet */
	uint64_t bits[GW_AUTH_WINDOW / 64];
};

/* The receiver's state: a replay window per member, sender node and slot. */
struct gw_auth_rx {
	const struct gw_auth_key *key;
	unsigned members;
	struct gw_auth_window *win; /* members * GW_AUTH_NODES * GW_AUTH_SLOTS */
};

/*
 * Read a key file: 64 hex digits (a trailing newline is fine). Returns 0,
 * or a negative errno with a reason in err.
 */
int gw_auth_key_load(struct gw_auth_key *key, const char *path, char *err, size_t errlen);

void gw_auth_tx_init(struct gw_auth_tx *tx, const struct gw_auth_key *key, uint8_t slot,
		     uint64_t start);

/*
 * Seal a sealed-by-gw_wire frame of len bytes (cap bytes of room): append
 * the trailer, or renew it if the frame already has one (a retransmission
 * needs a fresh counter). Returns the new length, or -ENOSPC.
 */
int gw_auth_seal(struct gw_auth_tx *tx, uint8_t *frame, size_t len, size_t cap);

/* members: the links frames come in on (1, or a parallel port's members). */
int gw_auth_rx_init(struct gw_auth_rx *rx, const struct gw_auth_key *key, unsigned members);
void gw_auth_rx_fini(struct gw_auth_rx *rx);

/*
 * Check and strip the trailer of a received gridwire frame. Returns the
 * length without it (the frame then parses as if never sealed), -EBADMSG
 * if it is missing or its tag does not verify, -EALREADY for a replay.
 */
int gw_auth_open(struct gw_auth_rx *rx, uint8_t *frame, size_t len);

/*
 * gw_auth_open in two steps, for a gateway whose receivers share the
 * senders' slots out (each slot's window has one owner): the tag checked
 * and stripped wherever the frame arrived, the replay window of its
 * sender's slot consulted by that window's owner.
 */
struct gw_auth_seen {
	uint16_t node;
	uint8_t slot;
	uint8_t member; /* the link it came in on: 0 from gw_auth_verify, set by the caller */
	uint64_t counter;
};
int gw_auth_verify(const struct gw_auth_key *key, uint8_t *frame, size_t len,
		   struct gw_auth_seen *seen);
/* 0, or -EALREADY for a counter seen before or too old. */
int gw_auth_accept(struct gw_auth_rx *rx, const struct gw_auth_seen *seen);

#endif
