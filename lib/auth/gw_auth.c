/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_auth: frames tagged or encrypted under keys that rotate; see gw_auth.h. */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <intel-ipsec-mb.h>
#include <sodium.h>

#include "gw_auth.h"
#include "gw_wire.h"

/* Offsets in the gridwire header and the trailer (doc/protocol.md). */
#define GH_SRC_NODE 4
#define GH_DST_NODE 6
#define GH_EPOCH 12
#define GH_LEN 24
#define TR_SLOT 0
#define TR_FLAGS 1
#define TR_ROLL 2
#define TR_KEY_ID 4
#define TR_COUNTER 8
#define TR_TAG 16
#define TAG_LEN 16
#define FLAG_ENCRYPTED 1u
#define AAD_SPLIT (GW_HDR_LEN + TR_TAG) /* encrypt: the header and the trailer's head */

/* A frame key, derived for one direction of one pair, instance and roll. */
struct gw_auth_ent {
	alignas(64) union {
		struct gcm_key_data gcm;
		uint8_t raw[32];
	} k;
};

/* What a cached frame key is for; gen 0: an empty way. */
struct gw_auth_tag {
	uint32_t gen, id, src_instance, dst_instance;
	uint16_t roll, dst;
};

/* The tags side by side, so that a lookup reads one or two lines; the
 * keys (1 KB each with AES-GCM's tables) apart. */
#define CACHE_WAYS 8 /* gens x rolls x (peer, broadcast) in a change-over */
struct gw_auth_cache {
	struct gw_auth_tag t[CACHE_WAYS];
	struct gw_auth_ent *e[CACHE_WAYS];
	unsigned next, last;
};

static IMB_MGR *imb;
static pthread_once_t imb_once = PTHREAD_ONCE_INIT;

static void imb_init(void)
{
	IMB_MGR *m = alloc_mb_mgr(0);
	if (m)
		init_mb_mgr_auto(m, NULL);
	imb = m; /* only its function table is used: shared by every lcore */
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
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
	bool more = fgetc(f) != EOF; /* past what a key file can hold: not one */
	fclose(f);
	while (n && (hex[n - 1] == '\n' || hex[n - 1] == '\r'))
		hex[--n] = '\0';
	size_t got = 0;
	if (sodium_init() < 0 || more || n != 64 ||
	    sodium_hex2bin(key->k, sizeof(key->k), hex, n, NULL, &got, NULL) != 0 ||
	    got != sizeof(key->k)) {
		snprintf(err, errlen, "%s must hold 64 hex digits (32 bytes), e.g. from "
			 "`head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`", path);
		return -EINVAL;
	}
	return 0;
}

static const char *const mode_names[] = { "off", "authenticate", "encrypt" };
static const char *const aead_names[] = { "", "aes-256-gcm", "chacha20-poly1305" };

int gw_auth_mode_parse(const char *name, enum gw_auth_mode *mode)
{
	for (unsigned i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (!strcmp(name, mode_names[i])) {
			*mode = (enum gw_auth_mode)i;
			return 0;
		}
	return -EINVAL;
}

int gw_auth_aead_parse(const char *name, enum gw_auth_aead *aead)
{
	for (unsigned i = 1; i < sizeof(aead_names) / sizeof(aead_names[0]); i++)
		if (!strcmp(name, aead_names[i])) {
			*aead = (enum gw_auth_aead)i;
			return 0;
		}
	return -EINVAL;
}

const char *gw_auth_mode_name(enum gw_auth_mode mode)
{
	return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

const char *gw_auth_aead_name(enum gw_auth_aead aead)
{
	return aead == GW_AUTH_AES_GCM || aead == GW_AUTH_CHACHA ? aead_names[aead] : "?";
}

bool gw_auth_aead_supported(enum gw_auth_aead aead)
{
	if (aead == GW_AUTH_CHACHA)
		return true;
	__builtin_cpu_init();
	return aead == GW_AUTH_AES_GCM && __builtin_cpu_supports("aes") &&
	       __builtin_cpu_supports("pclmul");
}

/* HKDF-SHA256 (RFC 5869): extract, and expand to one block of 32 bytes. */
static void hkdf_extract(uint8_t prk[32], const uint8_t *ikm, size_t len)
{
	static const uint8_t salt[] = "gridwire auth v2";
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, salt, sizeof(salt) - 1);
	crypto_auth_hmacsha256_update(&st, ikm, len);
	crypto_auth_hmacsha256_final(&st, prk);
}

static void hkdf_expand(uint8_t out[32], const uint8_t prk[32], const uint8_t *info, size_t len)
{
	static const uint8_t one = 1;
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, prk, 32);
	crypto_auth_hmacsha256_update(&st, info, len);
	crypto_auth_hmacsha256_update(&st, &one, 1);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

static uint32_t id_of(const uint8_t prk[32])
{
	static const uint8_t info[] = "gridwire key id";
	uint8_t out[32];
	hkdf_expand(out, prk, info, sizeof(info) - 1);
	uint32_t id = le32(out);
	return id ? id : 1; /* 0 means no key in a HELLO */
}

uint32_t gw_auth_key_id(const struct gw_auth_key *key)
{
	uint8_t prk[32];
	hkdf_extract(prk, key->k, sizeof(key->k));
	uint32_t id = id_of(prk);
	sodium_memzero(prk, sizeof(prk));
	return id;
}

int gw_auth_keys_init(struct gw_auth_keys *ks, enum gw_auth_mode mode, enum gw_auth_aead aead,
		      uint16_t node, uint32_t instance, const struct gw_auth_key *first, char *err,
		      size_t errlen)
{
	memset(ks, 0, sizeof(*ks));
	if (!gw_auth_aead_supported(aead)) {
		snprintf(err, errlen, "this CPU has no AES-NI for %s: set [auth] aead = "
			 "chacha20-poly1305 on every gateway", gw_auth_aead_name(aead));
		return -ENOTSUP;
	}
	if (sodium_init() < 0 || (pthread_once(&imb_once, imb_init), !imb)) {
		snprintf(err, errlen, "cannot start the crypto libraries");
		return -ENOMEM;
	}
	ks->mode = mode;
	ks->aead = aead;
	ks->node = node;
	ks->instance = instance;
	gw_auth_keys_load(ks, first);
	return 0;
}

/* The slot of generation gen, if it still holds it. */
static const struct gw_auth_gen *gen_slot(const struct gw_auth_keys *ks, uint32_t gen)
{
	const struct gw_auth_gen *s = &ks->g[gen % GW_AUTH_GENS];
	return gen && __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == gen ? s : NULL;
}

static bool gen_held(const struct gw_auth_keys *ks, uint32_t gen)
{
	return gen && gen >= __atomic_load_n(&ks->oldest, __ATOMIC_ACQUIRE) &&
	       gen <= __atomic_load_n(&ks->newest, __ATOMIC_ACQUIRE);
}

uint32_t gw_auth_keys_load(struct gw_auth_keys *ks, const struct gw_auth_key *key)
{
	uint8_t prk[32];
	hkdf_extract(prk, key->k, sizeof(key->k));
	uint32_t id = id_of(prk);
	const struct gw_auth_gen *cur = gen_slot(ks, ks->newest);
	if (cur && cur->id == id) {
		sodium_memzero(prk, sizeof(prk));
		return 0;
	}
	uint32_t gen = ks->newest + 1;
	struct gw_auth_gen *s = &ks->g[gen % GW_AUTH_GENS];
	/* Emptied first: a reader deriving from this slot's last secret
	 * (retired two loads ago) sees it change and gives up. */
	__atomic_store_n(&s->gen, 0, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	s->id = id;
	memcpy(s->prk, prk, sizeof(prk));
	sodium_memzero(prk, sizeof(prk));
	__atomic_store_n(&s->gen, gen, __ATOMIC_RELEASE);
	__atomic_store_n(&ks->oldest, ks->newest ? ks->newest : gen, __ATOMIC_RELEASE);
	__atomic_store_n(&ks->newest, gen, __ATOMIC_RELEASE);
	return gen;
}

void gw_auth_keys_retire(struct gw_auth_keys *ks)
{
	__atomic_store_n(&ks->oldest, ks->newest, __ATOMIC_RELEASE);
}

void gw_auth_keys_roll(struct gw_auth_keys *ks)
{
	__atomic_store_n(&ks->roll, (uint16_t)(ks->roll + 1), __ATOMIC_RELEASE);
}

unsigned gw_auth_keys_gens(const struct gw_auth_keys *ks, uint32_t gens[GW_AUTH_HELD])
{
	uint32_t oldest = __atomic_load_n(&ks->oldest, __ATOMIC_ACQUIRE);
	unsigned n = 0;
	for (uint32_t g = __atomic_load_n(&ks->newest, __ATOMIC_ACQUIRE);
	     g >= oldest && g && n < GW_AUTH_HELD; g--)
		gens[n++] = g;
	return n;
}

unsigned gw_auth_keys_held(const struct gw_auth_keys *ks, uint32_t ids[GW_AUTH_HELD])
{
	uint32_t gens[GW_AUTH_HELD];
	unsigned n = gw_auth_keys_gens(ks, gens), k = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct gw_auth_gen *s = gen_slot(ks, gens[i]);
		if (s)
			ids[k++] = s->id;
	}
	return k;
}

unsigned gw_auth_due(const struct gw_auth_keys *ks, const struct gw_auth_timer *t, uint64_t now,
		     uint64_t bytes, uint64_t overlap_ns, uint64_t roll_ns, uint64_t roll_bytes)
{
	unsigned due = 0;
	if (ks->oldest < ks->newest && now - t->loaded_ns >= overlap_ns)
		due |= GW_AUTH_DUE_RETIRE;
	if (now - t->rolled_ns >= roll_ns || bytes - t->rolled_bytes >= roll_bytes)
		due |= GW_AUTH_DUE_ROLL;
	return due;
}

/* The generation of ours that holds key id, or 0. */
static uint32_t gen_of_id(const struct gw_auth_keys *ks, uint32_t id)
{
	uint32_t gens[GW_AUTH_HELD];
	unsigned n = gw_auth_keys_gens(ks, gens);
	for (unsigned i = 0; i < n; i++) {
		const struct gw_auth_gen *s = gen_slot(ks, gens[i]);
		if (s && s->id == id)
			return gens[i];
	}
	return 0;
}

void gw_auth_keys_peer_hello(struct gw_auth_keys *ks, uint16_t node, uint32_t instance,
			     const uint32_t *ids, unsigned n)
{
	if (node >= GW_AUTH_NODES)
		return;
	if (__atomic_load_n(&ks->peer_instance[node], __ATOMIC_RELAXED) != instance)
		__atomic_store_n(&ks->peer_instance[node], instance, __ATOMIC_RELAXED);
	uint32_t best = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t g = gen_of_id(ks, ids[i]);
		best = g > best ? g : best;
	}
	if (__atomic_load_n(&ks->peer_gen[node], __ATOMIC_RELAXED) != best)
		__atomic_store_n(&ks->peer_gen[node], best, __ATOMIC_RELAXED);
}

/*
 * Derive the frame key of (src, dst, their instances, roll) under
 * generation gen into e, and say so in t. false when the store let go of
 * gen meanwhile.
 */
static bool derive(const struct gw_auth_keys *ks, struct gw_auth_ent *e, struct gw_auth_tag *t,
		   uint32_t gen, uint16_t src, uint16_t dst, uint32_t src_instance,
		   uint32_t dst_instance, uint16_t roll)
{
	const struct gw_auth_gen *s = gen_slot(ks, gen);
	if (!s)
		return false;
	uint8_t prk[32];
	uint32_t id = s->id;
	memcpy(prk, s->prk, sizeof(prk));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&s->gen, __ATOMIC_RELAXED) != gen) {
		sodium_memzero(prk, sizeof(prk));
		return false;
	}
	uint8_t info[32] = "gridwire frame key";
	put_le(info + 18, src, 2);
	put_le(info + 20, dst, 2);
	put_le(info + 22, src_instance, 4);
	put_le(info + 26, dst_instance, 4);
	put_le(info + 30, roll, 2);
	uint8_t key[32];
	hkdf_expand(key, prk, info, 32);
	sodium_memzero(prk, sizeof(prk));
	if (ks->aead == GW_AUTH_AES_GCM)
		IMB_AES256_GCM_PRE(imb, key, &e->k.gcm);
	else
		memcpy(e->k.raw, key, sizeof(key));
	sodium_memzero(key, sizeof(key));
	*t = (struct gw_auth_tag){ .gen = gen, .id = id, .src_instance = src_instance,
				   .dst_instance = dst_instance, .roll = roll, .dst = dst };
	return true;
}

static void cache_free(struct gw_auth_cache **c, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!c[i])
			continue;
		for (unsigned w = 0; w < CACHE_WAYS; w++) {
			if (c[i]->e[w])
				sodium_memzero(c[i]->e[w], sizeof(*c[i]->e[w]));
			free(c[i]->e[w]);
		}
		free(c[i]);
		c[i] = NULL;
	}
}

static struct gw_auth_cache *cache_get(struct gw_auth_cache **slot)
{
	if (*slot)
		return *slot;
	struct gw_auth_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	for (unsigned w = 0; w < CACHE_WAYS; w++)
		if (!(c->e[w] = aligned_alloc(64, sizeof(struct gw_auth_ent)))) {
			cache_free(&c, 1);
			return NULL;
		}
	return *slot = c;
}

int gw_auth_tx_init(struct gw_auth_tx *tx, const struct gw_auth_keys *keys, uint8_t slot,
		    uint64_t start)
{
	memset(tx, 0, sizeof(*tx));
	tx->keys = keys;
	tx->slot = slot;
	tx->counter = start;
	return 0;
}

void gw_auth_tx_fini(struct gw_auth_tx *tx)
{
	cache_free(tx->dst, GW_AUTH_NODES + 1);
}

static uint8_t flags_of(const struct gw_auth_keys *ks)
{
	return (uint8_t)((ks->mode == GW_AUTH_ENCRYPT ? FLAG_ENCRYPTED : 0) | ks->aead << 4);
}

static void nonce_of(uint8_t nonce[12], uint8_t slot, uint64_t counter)
{
	memset(nonce, 0, 12);
	nonce[0] = slot;
	put_le(nonce + 4, counter, 8);
}

/* Where the trailer of a frame with this gridwire payload length starts. */
static size_t trailer_at(const uint8_t *frame)
{
	return GW_FRAME_MIN + le32(frame + GW_OUTER_HLEN + GH_LEN);
}

/* The sender's frame key to dst under gen, and its secret's key id in *id. */
static const struct gw_auth_ent *tx_key(struct gw_auth_tx *tx, uint16_t dst, uint32_t gen,
					uint16_t roll, uint32_t instance, uint32_t *id)
{
	const struct gw_auth_keys *ks = tx->keys;
	bool peer = dst < GW_AUTH_NODES;
	struct gw_auth_cache *c = cache_get(&tx->dst[peer ? dst : GW_AUTH_NODES]);
	if (!c)
		return NULL;
	uint32_t dst_instance = peer ? __atomic_load_n(&ks->peer_instance[dst], __ATOMIC_RELAXED) : 0;
	for (unsigned i = 0; i < CACHE_WAYS; i++) {
		unsigned w = (c->last + i) % CACHE_WAYS;
		const struct gw_auth_tag *t = &c->t[w];
		if (t->gen == gen && t->roll == roll && t->src_instance == instance &&
		    t->dst_instance == dst_instance) {
			c->last = w;
			*id = t->id;
			return c->e[w];
		}
	}
	unsigned w = c->next++ % CACHE_WAYS;
	c->last = w;
	if (!derive(ks, c->e[w], &c->t[w], gen, ks->node, dst, instance, dst_instance, roll))
		return NULL;
	*id = c->t[w].id;
	return c->e[w];
}

/* The AEAD over one frame: encrypt (or just tag) into out, the tag to tag. */
static void aead_seal(const struct gw_auth_keys *ks, const struct gw_auth_ent *e,
		      const uint8_t nonce[12], uint8_t *out, const uint8_t *frame, size_t t,
		      uint8_t *tag)
{
	struct gcm_context_data ctx;
	const uint8_t *gh = out + GW_OUTER_HLEN;
	if (ks->mode == GW_AUTH_ENCRYPT) {
		uint8_t aad[AAD_SPLIT];
		memcpy(aad, gh, GW_HDR_LEN);
		memcpy(aad + GW_HDR_LEN, out + t, TR_TAG);
		size_t plen = t - GW_FRAME_MIN;
		if (ks->aead == GW_AUTH_AES_GCM)
			IMB_AES256_GCM_ENC(imb, &e->k.gcm, &ctx, out + GW_FRAME_MIN,
					   frame + GW_FRAME_MIN, plen, nonce, aad, sizeof(aad), tag,
					   TAG_LEN);
		else
			crypto_aead_chacha20poly1305_ietf_encrypt_detached(
				out + GW_FRAME_MIN, tag, NULL, frame + GW_FRAME_MIN, plen, aad,
				sizeof(aad), NULL, nonce, e->k.raw);
		return;
	}
	size_t alen = t + TR_TAG - GW_OUTER_HLEN; /* header, payload, trailer head */
	if (ks->aead == GW_AUTH_AES_GCM) {
		IMB_AES256_GMAC_INIT(imb, &e->k.gcm, &ctx, nonce, 12);
		IMB_AES256_GMAC_UPDATE(imb, &e->k.gcm, &ctx, gh, alen);
		IMB_AES256_GMAC_FINALIZE(imb, &e->k.gcm, &ctx, tag, TAG_LEN);
	} else {
		uint8_t none[1]; /* nothing encrypted: the frame is all associated data */
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, tag, NULL, none, 0, gh,
								   alen, NULL, nonce, e->k.raw);
	}
}

int gw_auth_seal(struct gw_auth_tx *tx, uint8_t *out, const uint8_t *frame, size_t len,
		 size_t cap, uint32_t gen)
{
	const struct gw_auth_keys *ks = tx->keys;
	size_t t = trailer_at(frame);
	if (t + GW_AUTH_TRAILER > cap || t > len)
		return -ENOSPC;
	const uint8_t *gh = frame + GW_OUTER_HLEN;
	uint16_t dst = le16(gh + GH_DST_NODE);
	if (!gen) {
		gen = dst < GW_AUTH_NODES ? __atomic_load_n(&ks->peer_gen[dst], __ATOMIC_RELAXED) : 0;
		if (!gen_held(ks, gen))
			gen = __atomic_load_n(&ks->newest, __ATOMIC_ACQUIRE);
	}
	uint16_t roll = __atomic_load_n(&ks->roll, __ATOMIC_ACQUIRE);
	uint32_t id = 0;
	const struct gw_auth_ent *e = gen_held(ks, gen)
					      ? tx_key(tx, dst, gen, roll, le32(gh + GH_EPOCH), &id)
					      : NULL;
	if (!e)
		return -ENOKEY;
	if (out != frame) /* the payload is copied by the cipher in mode encrypt */
		memcpy(out, frame, ks->mode == GW_AUTH_ENCRYPT ? GW_FRAME_MIN : t);
	uint8_t *tr = out + t;
	uint64_t ctr = ++tx->counter;
	tr[TR_SLOT] = tx->slot;
	tr[TR_FLAGS] = flags_of(ks);
	put_le(tr + TR_ROLL, roll, 2);
	put_le(tr + TR_KEY_ID, id, 4);
	put_le(tr + TR_COUNTER, ctr, 8);
	uint8_t nonce[12];
	nonce_of(nonce, tx->slot, ctr);
	aead_seal(ks, e, nonce, out, frame, t, tr + TR_TAG);
	gw_wire_set_ip_len(out, (uint16_t)(t + GW_AUTH_TRAILER - GW_ETH_HLEN));
	return (int)(t + GW_AUTH_TRAILER);
}

int gw_auth_rx_init(struct gw_auth_rx *rx, const struct gw_auth_keys *keys, unsigned members)
{
	memset(rx, 0, sizeof(*rx));
	rx->keys = keys;
	rx->members = members ? members : 1;
	rx->win = calloc((size_t)rx->members * GW_AUTH_NODES * GW_AUTH_SLOTS, sizeof(*rx->win));
	rx->spare = aligned_alloc(64, sizeof(struct gw_auth_ent));
	if (!rx->win || !rx->spare) {
		gw_auth_rx_fini(rx);
		return -ENOMEM;
	}
	return 0;
}

void gw_auth_rx_fini(struct gw_auth_rx *rx)
{
	free(rx->win);
	rx->win = NULL;
	if (rx->spare)
		sodium_memzero(rx->spare, sizeof(*rx->spare));
	free(rx->spare);
	rx->spare = NULL;
	cache_free(rx->src, GW_AUTH_NODES);
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

/* Check the tag (and decrypt in place): true when genuine. */
static bool aead_open(const struct gw_auth_keys *ks, const struct gw_auth_ent *e,
		      const uint8_t nonce[12], uint8_t *frame, size_t t)
{
	const uint8_t *tr = frame + t;
	uint8_t tag[TAG_LEN];
	if (ks->mode == GW_AUTH_ENCRYPT) {
		uint8_t aad[AAD_SPLIT];
		memcpy(aad, frame + GW_OUTER_HLEN, GW_HDR_LEN);
		memcpy(aad + GW_HDR_LEN, tr, TR_TAG);
		size_t clen = t - GW_FRAME_MIN;
		if (ks->aead == GW_AUTH_CHACHA) /* checks before it writes */
			return crypto_aead_chacha20poly1305_ietf_decrypt_detached(
				       frame + GW_FRAME_MIN, NULL, frame + GW_FRAME_MIN, clen,
				       tr + TR_TAG, aad, sizeof(aad), nonce, e->k.raw) == 0;
		struct gcm_context_data ctx;
		IMB_AES256_GCM_DEC(imb, &e->k.gcm, &ctx, frame + GW_FRAME_MIN,
				   frame + GW_FRAME_MIN, clen, nonce, aad, sizeof(aad), tag,
				   TAG_LEN);
	} else {
		const uint8_t *gh = frame + GW_OUTER_HLEN;
		size_t alen = t + TR_TAG - GW_OUTER_HLEN;
		uint8_t none[1];
		if (ks->aead == GW_AUTH_CHACHA)
			return crypto_aead_chacha20poly1305_ietf_decrypt_detached(
				       none, NULL, none, 0, tr + TR_TAG, gh, alen, nonce,
				       e->k.raw) == 0;
		struct gcm_context_data ctx;
		IMB_AES256_GMAC_INIT(imb, &e->k.gcm, &ctx, nonce, 12);
		IMB_AES256_GMAC_UPDATE(imb, &e->k.gcm, &ctx, gh, alen);
		IMB_AES256_GMAC_FINALIZE(imb, &e->k.gcm, &ctx, tag, TAG_LEN);
	}
	return sodium_memcmp(tag, tr + TR_TAG, TAG_LEN) == 0;
}

int gw_auth_verify(struct gw_auth_rx *rx, uint8_t *frame, size_t len, struct gw_auth_seen *seen)
{
	const struct gw_auth_keys *ks = rx->keys;
	if (len < GW_FRAME_MIN + GW_AUTH_TRAILER)
		return -EMSGSIZE;
	size_t t = trailer_at(frame);
	if (t + GW_AUTH_TRAILER > len || t < GW_FRAME_MIN)
		return -EMSGSIZE;
	const uint8_t *tr = frame + t;
	const uint8_t *gh = frame + GW_OUTER_HLEN;
	if (tr[TR_FLAGS] != flags_of(ks))
		return -EPROTO;
	uint8_t slot = tr[TR_SLOT];
	uint16_t node = le16(gh + GH_SRC_NODE), dst = le16(gh + GH_DST_NODE);
	uint16_t roll = le16(tr + TR_ROLL);
	uint32_t id = le32(tr + TR_KEY_ID), instance = le32(gh + GH_EPOCH);
	uint64_t ctr = le64(tr + TR_COUNTER);
	if (slot >= GW_AUTH_SLOTS || node >= GW_AUTH_NODES ||
	    (dst != ks->node && dst != GW_AUTH_BROADCAST))
		return -EBADMSG; /* not for us: no key is derived for it */
	/* A roll more than one behind the sender's newest seen is refused: a
	 * frame key that leaked cannot forge once its roll is past. */
	uint32_t cur = __atomic_load_n(&ks->peer_instance[node], __ATOMIC_RELAXED);
	bool tracked = instance == cur && rx->roll_instance[node] == cur;
	if (tracked && (int16_t)(uint16_t)(roll - rx->roll_top[node]) < -1)
		return -ENOKEY;
	struct gw_auth_cache *c = cache_get(&rx->src[node]);
	if (!c)
		return -ENOMEM;
	struct gw_auth_ent *e = NULL;
	unsigned w = c->last;
	for (unsigned i = 0; i < CACHE_WAYS; i++, w = (w + 1) % CACHE_WAYS) {
		const struct gw_auth_tag *t = &c->t[w];
		if (t->gen && t->id == id && t->src_instance == instance && t->roll == roll &&
		    t->dst == dst) {
			e = c->e[w];
			break;
		}
	}
	if (e && !gen_held(ks, c->t[w].gen)) {
		/* Its generation went; the same secret may have been loaded
		 * again since (same id, same keys): then it is that one's. */
		uint32_t gen = gen_of_id(ks, id);
		if (!gen)
			return -ENOKEY; /* retired */
		c->t[w].gen = gen;
	}
	/* A miss derives into the spare, which joins the cache only once the
	 * frame proves genuine: a forger cannot evict the keys in use. */
	struct gw_auth_tag tag;
	bool miss = !e;
	if (miss) {
		uint32_t gen = gen_of_id(ks, id);
		if (!gen)
			return -ENOKEY;
		/* A derivation costs some 20 frames' checks: a flood of frames
		 * naming new instances or rolls gets a few a millisecond. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		if (now - rx->miss_since >= GW_AUTH_MISS_NS) {
			rx->miss_since = now;
			rx->misses = 0;
		}
		if (++rx->misses > GW_AUTH_MISS_MAX)
			return -EBUSY;
		e = rx->spare;
		if (!derive(ks, e, &tag, gen, node, dst, instance,
			    dst == GW_AUTH_BROADCAST ? 0 : ks->instance, roll))
			return -ENOKEY;
	} else {
		c->last = w;
	}
	uint8_t nonce[12];
	nonce_of(nonce, slot, ctr);
	bool ok = aead_open(ks, e, nonce, frame, t);
	if (ok && miss) {
		w = c->next++ % CACHE_WAYS;
		rx->spare = c->e[w];
		c->e[w] = e;
		c->t[w] = tag;
		c->last = w;
	}
	if (!ok)
		return -EBADMSG;
	if (instance == cur) {
		if (rx->roll_instance[node] != cur) {
			rx->roll_instance[node] = cur;
			rx->roll_top[node] = roll;
		} else if ((int16_t)(uint16_t)(roll - rx->roll_top[node]) > 0) {
			rx->roll_top[node] = roll;
		}
	}
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
	int n = gw_auth_verify(rx, frame, len, &seen);
	/* Only a genuine frame may move the window. */
	if (n < 0)
		return n;
	int rc = gw_auth_accept(rx, &seen);
	return rc < 0 ? rc : n;
}
