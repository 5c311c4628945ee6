/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_auth: frames tagged, or encrypted and tagged, under keys that rotate.
 *
 * With [auth] on, every gridwire frame carries a 32-byte trailer after its
 * payload, inside the UDP datagram (doc/protocol.md):
 *
 *   u8 slot | u8 flags | u16 roll | u32 key id | u64 counter | 16-byte tag
 *
 * flags: bit 0 the payload is encrypted; bits 4-7 the AEAD (1 AES-256-GCM,
 * 2 ChaCha20-Poly1305). The tag is that AEAD's, with the gridwire header
 * and the trailer's first 16 bytes as associated data;
 * in mode authenticate the payload is associated data too (a GMAC), in
 * mode encrypt it is the ciphertext. The nonce is (slot, counter).
 *
 * Keys. The operator's secret (a key file of 32 bytes) is never used on a
 * frame: HKDF-SHA256 turns it into a key id (its name on the wire, so two
 * gateways agree on which secret without counting loads) and, for each
 * frame, the key of its sender node, destination node (0xffff for a
 * HELLO), the instances of both (the sender's from the header's epoch, new
 * at every start; the destination's from its HELLOs, 0 for a HELLO) and
 * roll. So each direction of each peer pair has its own keys; a restarted
 * gateway never meets a nonce it used before (its keys are new), and a
 * frame captured before a receiver restarted does not open after.
 * A slot's counter only grows (it starts at the wall clock in ns), and the
 * receiver keeps a window of 4096 per member, sender and slot, so a frame
 * is accepted once. A frame sent again is sealed again with a fresh
 * counter: no nonce ever covers two different frames.
 *
 * Rotation. The store holds up to GW_AUTH_HELD secrets: a new one (loaded
 * at run time) and the one before, both accepted for an overlap, then the
 * old one retired. HELLOs list the key ids a gateway holds, and a sender
 * uses the newest key its peer said it holds, so the two ends may load a
 * new secret up to [auth] overlap_s apart without refusing a frame. The roll advances
 * the frame keys of every peer pair without a new secret (after a count of
 * bytes and a time: the daemon decides, see gw_control.c).
 *
 * One AEAD per frame: batching spreads its cost over every message in it.
 * Pure C on libIPSec_MB (VAES AES-GCM) and libsodium (HMAC, ChaCha20).
 */
#ifndef GW_AUTH_H
#define GW_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_AUTH_TRAILER 32
#define GW_AUTH_SLOTS 32 /* sending lcores: a TX queue each */
/* Counters of one slot cover all its frames, to every peer and of both
 * classes: at 40 k frames/s a slot, 4096 is 100 ms, more than a receiving
 * lcore descheduled with frames in hand (1024 was not: genuine frames
 * handed between receivers were refused as replays). */
#define GW_AUTH_WINDOW 4096
#define GW_AUTH_NODES 256
#define GW_AUTH_HELD 2    /* secrets accepted at once: the new one and the one before */
#define GW_AUTH_GENS 4    /* generation slots in the store (a ring) */
#define GW_AUTH_BROADCAST 0xffffu /* a HELLO's destination */

enum gw_auth_mode { GW_AUTH_OFF = 0, GW_AUTH_AUTHENTICATE = 1, GW_AUTH_ENCRYPT = 2 };
enum gw_auth_aead { GW_AUTH_AES_GCM = 1, GW_AUTH_CHACHA = 2 };

/* What a key file holds. */
struct gw_auth_key {
	uint8_t k[32];
};

/*
 * Read a key file: 64 hex digits (a trailing newline is fine). Returns 0,
 * or a negative errno with a reason in err.
 */
int gw_auth_key_load(struct gw_auth_key *key, const char *path, char *err, size_t errlen);

/* Name names a mode or AEAD ("authenticate", "aes-256-gcm"...): 0 or -EINVAL. */
int gw_auth_mode_parse(const char *name, enum gw_auth_mode *mode);
int gw_auth_aead_parse(const char *name, enum gw_auth_aead *aead);
const char *gw_auth_mode_name(enum gw_auth_mode mode);
const char *gw_auth_aead_name(enum gw_auth_aead aead);
/* Can this CPU run the AEAD (AES-GCM needs AES-NI and PCLMULQDQ)? */
bool gw_auth_aead_supported(enum gw_auth_aead aead);

/* One secret in the store: gen 0 is a free slot. */
struct gw_auth_gen {
	uint32_t gen;
	uint32_t id;
	uint8_t prk[32]; /* HKDF-Extract of the secret */
};

/*
 * The key store of one gateway. One writer (the control thread: load,
 * retire, roll); every lcore reads it. A sender picks the generation for a
 * peer from peer_gen, written by the lcore that reads HELLOs.
 */
struct gw_auth_keys {
	enum gw_auth_mode mode;
	enum gw_auth_aead aead;
	uint16_t node;     /* this gateway's node id */
	uint32_t instance; /* and its epoch */
	struct gw_auth_gen g[GW_AUTH_GENS];
	uint32_t newest, oldest; /* generations accepted: [oldest, newest] */
	uint16_t roll;
	uint32_t peer_gen[GW_AUTH_NODES];      /* newest of ours each peer holds; 0: unknown */
	uint32_t peer_instance[GW_AUTH_NODES]; /* each peer's epoch, from its HELLOs */
};

/* Returns 0, or -ENOTSUP with a reason when the CPU lacks the AEAD. */
int gw_auth_keys_init(struct gw_auth_keys *ks, enum gw_auth_mode mode, enum gw_auth_aead aead,
		      uint16_t node, uint32_t instance, const struct gw_auth_key *first, char *err,
		      size_t errlen);
/* A new secret, accepted beside the one before it; the older ones are
 * retired. Its generation, or 0 when it is the newest already. */
uint32_t gw_auth_keys_load(struct gw_auth_keys *ks, const struct gw_auth_key *key);
/* Only the newest accepted from now on. */
void gw_auth_keys_retire(struct gw_auth_keys *ks);
/* New frame keys for every pair, same secret. */
void gw_auth_keys_roll(struct gw_auth_keys *ks);
/* The ids of the secrets held, newest first (for HELLO): how many. */
unsigned gw_auth_keys_held(const struct gw_auth_keys *ks, uint32_t ids[GW_AUTH_HELD]);
/* The generations held, newest first: how many. */
unsigned gw_auth_keys_gens(const struct gw_auth_keys *ks, uint32_t gens[GW_AUTH_HELD]);
/* A peer's HELLO: its instance (epoch), and which key ids it holds. */
void gw_auth_keys_peer_hello(struct gw_auth_keys *ks, uint16_t node, uint32_t instance,
			     const uint32_t *ids, unsigned n);
/*
 * When the store's owner should retire the secret before the newest (its
 * overlap is over) and roll the frame keys (after roll_ns, or roll_bytes
 * sealed since the last roll: AES-GCM's bounds are per key, and a frame
 * key that leaks opens one roll's traffic only). The owner keeps the times
 * and byte counts of the last load and roll.
 */
struct gw_auth_timer {
	uint64_t loaded_ns, rolled_ns, rolled_bytes;
};
enum { GW_AUTH_DUE_RETIRE = 1, GW_AUTH_DUE_ROLL = 2 };
unsigned gw_auth_due(const struct gw_auth_keys *ks, const struct gw_auth_timer *t, uint64_t now,
		     uint64_t bytes, uint64_t overlap_ns, uint64_t roll_ns, uint64_t roll_bytes);

/* The key id of a secret (what `gwctl key` shows). */
uint32_t gw_auth_key_id(const struct gw_auth_key *key);

struct gw_auth_cache; /* frame keys derived, per lcore */
struct gw_auth_ent;

/* A sending lcore's state. */
struct gw_auth_tx {
	const struct gw_auth_keys *keys;
	uint8_t slot;
	uint64_t counter;
	struct gw_auth_cache *dst[GW_AUTH_NODES + 1]; /* the last: broadcast */
};

int gw_auth_tx_init(struct gw_auth_tx *tx, const struct gw_auth_keys *keys, uint8_t slot,
		    uint64_t start);
void gw_auth_tx_fini(struct gw_auth_tx *tx);

/*
 * Seal a sealed-by-gw_wire frame of len bytes into out (cap bytes of room;
 * out may be frame itself): copy (if out is not frame), encrypt the
 * payload in mode encrypt, and append the trailer, or renew it if the
 * frame already has one (mode authenticate: a frame is resealed in place;
 * mode encrypt: always seal from the plaintext, which sealing in place
 * replaces). gen: the generation to seal with, 0 for the one
 * its destination holds. Returns the new length, -ENOSPC, or -ENOKEY when
 * gen is no longer held.
 */
int gw_auth_seal(struct gw_auth_tx *tx, uint8_t *out, const uint8_t *frame, size_t len,
		 size_t cap, uint32_t gen);

struct gw_auth_window {
	uint64_t top; /* highest counter accepted; 0 = none yet */
	uint64_t bits[GW_AUTH_WINDOW / 64];
};

/* The receiving side of one lcore: frame keys, and replay windows. */
struct gw_auth_rx {
	const struct gw_auth_keys *keys;
	unsigned members;
	struct gw_auth_window *win; /* members * GW_AUTH_NODES * GW_AUTH_SLOTS */
	struct gw_auth_cache *src[GW_AUTH_NODES];
	struct gw_auth_ent *spare; /* a key derived for a frame not yet verified */
	uint64_t miss_since;       /* derivations: misses since then */
	unsigned misses;
	uint32_t roll_instance[GW_AUTH_NODES]; /* each sender's instance... */
	uint16_t roll_top[GW_AUTH_NODES];      /* ...and the newest roll seen of it */
};

/* Keys derived for frames at most this many per lcore per interval. */
#define GW_AUTH_MISS_MAX 64
#define GW_AUTH_MISS_NS 10000000ull

/* members: the links frames come in on (1, or a parallel port's members). */
int gw_auth_rx_init(struct gw_auth_rx *rx, const struct gw_auth_keys *keys, unsigned members);
void gw_auth_rx_fini(struct gw_auth_rx *rx);

/* What gw_auth_verify read off a genuine frame, for gw_auth_accept. */
struct gw_auth_seen {
	uint16_t node;
	uint8_t slot;
	uint8_t member; /* the link it came in on: 0 from gw_auth_verify, set by the caller */
	uint64_t counter;
};

/*
 * Check the trailer of a received frame, decrypt its payload in mode
 * encrypt, and strip the trailer: the frame then parses as if never
 * sealed. Returns the length without it, or
 *   -EMSGSIZE   no trailer, or a truncated one;
 *   -EPROTO     another mode or AEAD than ours;
 *   -ENOKEY     a key id we do not hold (never had, or retired), or a
 *               roll more than one behind the sender's newest;
 *   -EBUSY      its key is not derived yet and this lcore derived
 *               GW_AUTH_MISS_MAX already in the interval (sent again later);
 *   -EBADMSG    the tag does not verify (forged, or damaged), or the frame
 *               is for another node.
 */
int gw_auth_verify(struct gw_auth_rx *rx, uint8_t *frame, size_t len, struct gw_auth_seen *seen);
/* 0, or -EALREADY for a counter seen before or too old. */
int gw_auth_accept(struct gw_auth_rx *rx, const struct gw_auth_seen *seen);
/* Both, on one lcore. */
int gw_auth_open(struct gw_auth_rx *rx, uint8_t *frame, size_t len);

#endif
