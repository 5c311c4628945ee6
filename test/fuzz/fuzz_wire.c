/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/wire: whatever reaches the gateway port goes
 * through gw_wire_parse, and every frame that passes is walked with the
 * payload decoders, as the gateway does. The main assertion is that nothing
 * crashes or reads out of bounds (ASan, UBSan); on top of that the codec's
 * own promises are checked, and a broken one traps (CHECK).
 *
 * The first input byte picks a mode, so that one corpus covers all four:
 *   0  the rest is a frame as received (no valid CRC unless found by luck)
 *   1  the rest is header fields and a payload: seal a frame (valid CRC),
 *      parse it back, then check that every truncation and every bit flip
 *      past the outer headers is refused: this reaches record parsing with
 *      any payload
 *   2  the rest is a frame whose CRC is fixed up before parsing: the fuzzer
 *      controls every length field and still gets past the CRC
 *   3  encoder round trips (records, ACK, HELLO) and the CRC32C kernels
 *      against a bitwise reference
 *
 * Everything parsed or decoded lives in a heap buffer of its exact length,
 * so that ASan sees a read even one byte past it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_wire.h"

/*
 * White box, as in test/unit/test_wire.c: the CRC kernels are static and
 * dispatch picks one per CPU, so the file is compiled in here (its public
 * symbol renamed) to compare all of them on fuzzer-chosen lengths.
 */
#define gw_crc32c gw_crc32c_whitebox
#include "gw_crc32c.c"
#include "fz_input.h"
#undef gw_crc32c

/* The project's port (config/gridwire.ini, udp_port). */
#define FZ_PORT 47000

/* A broken promise: say which, then trap so libFuzzer saves the input. */
#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_wire: check failed at line %d: %s\n", __LINE__, \
				#c);                                                       \
			__builtin_trap();                                                  \
		}                                                                          \
	} while (0)

static const struct gw_addr fz_src = {{0x02, 0, 0, 0, 0, 0x0a}, 0x0a000001, 40001};
static const struct gw_addr fz_dst = {{0x02, 0, 0, 0, 0, 0x0b}, 0x0a000002, FZ_PORT};


static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32_t(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A heap copy of exactly n bytes: ASan's redzone starts right after it. */
static uint8_t *exact_copy(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n); /* malloc(0) is a valid, empty block under ASan */
	CHECK(c);
	if (n)
		memcpy(c, p, n);
	return c;
}

/* Consumers read record data: touch all of it so ASan checks the range. */
static volatile uint8_t fz_sink;

static void touch(const uint8_t *p, size_t n)
{
	uint8_t x = 0;
	for (size_t i = 0; i < n; i++)
		x ^= p[i];
	fz_sink = x;
}

/* Decoders fill their output only on success: compare against a fill. */
static bool all_bytes(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* The most entries one SUBS record of a jumbo frame can hold. */
#define GW_SUBS_MAX_FZ ((GW_FRAME_MAX - GW_FRAME_MIN - GW_REC_HLEN) / GW_SUBS_ENTRY + 1)

/* Walk a parsed payload the way the gateway does, on an exact-size copy. */
static void walk_payload(const struct gw_hdr *h, const uint8_t *payload)
{
	size_t len = h->len;
	uint8_t *pl = exact_copy(payload, len);

	/* Records: each one inside the payload, right after the previous one. */
	size_t off = 0, prev = 0;
	unsigned nrec = 0;
	struct gw_rec r;
	int rc;
	while ((rc = gw_wire_rec_next(pl, len, &off, &r)) == 1) {
		CHECK(r.kind >= GW_RK_MSG && r.kind <= GW_RK_SUBS);
		CHECK(r.data == pl + prev + GW_REC_HLEN);
		CHECK(off == prev + GW_REC_HLEN + r.len && off <= len);
		touch(r.data, r.len);
		if (r.kind == GW_RK_REJECT) {
			/* Its data as the receiver reads it: whole, or refused. */
			struct gw_reject_body rj;
			CHECK((gw_wire_reject_get(r.data, r.len, &rj) == 0) == (r.len >= GW_REJECT_LEN));
		}
		if (r.kind == GW_RK_SUBS) {
			/* An advertisement's part: whole and consistent, or refused. */
			static char names[GW_SUBS_MAX_FZ][GW_NAME_MAX];
			static uint32_t ids[GW_SUBS_MAX_FZ];
			struct gw_subs_hdr sh;
			if (gw_wire_subs_get(r.data, r.len, &sh, names, ids, GW_SUBS_MAX_FZ) == 0) {
				CHECK(r.len == GW_SUBS_HLEN + (size_t)sh.n * GW_SUBS_ENTRY);
				CHECK((uint32_t)sh.first + sh.n <= sh.total);
				for (unsigned i = 0; i < sh.n; i++)
					CHECK(ids[i] && memchr(names[i], '\0', GW_NAME_MAX));
			}
		}
		prev = off;
		nrec++;
		CHECK(nrec <= len / GW_REC_HLEN); /* each record takes 16 bytes at least */
	}
	CHECK(rc == 0 || rc == -EBADMSG);
	CHECK(rc != 0 || off == len);
	CHECK(off == prev); /* a refused record does not move the cursor */

	/* ACK, whatever the frame type: the decoder must refuse what is not one. */
	struct gw_ack a;
	memset(&a, 0x5a, sizeof(a));
	rc = gw_wire_ack_get(pl, len, &a);
	if (rc == 0) {
		CHECK(a.nbits % 8 == 0 && a.nbits <= GW_SACK_BITS);
		CHECK(len == 12 + (size_t)a.nbits / 8);
		CHECK(all_bytes(a.sack + a.nbits / 8, sizeof(a.sack) - a.nbits / 8, 0));
		CHECK(a.acked_epoch == le32(pl) && a.cum == le32(pl + 4));
		CHECK(a.grant == (uint16_t)(pl[10] | pl[11] << 8));
		/* Encoding it again gives the same bytes, the grant included. */
		uint8_t *out = malloc(len);
		CHECK(out);
		CHECK(gw_wire_ack_put(out, &a) == len);
		CHECK(memcmp(out, pl, len) == 0);
		free(out);
	} else {
		CHECK(rc == -EBADMSG);
		CHECK(all_bytes(&a, sizeof(a), 0x5a));
	}

	struct gw_hello hl;
	memset(&hl, 0x5a, sizeof(hl));
	rc = gw_wire_hello_get(pl, len, &hl);
	if (rc == 0) {
		size_t n = strnlen(hl.name, sizeof(hl.name)), k = hl.nkeys;
		CHECK(n >= 1 && n <= GW_NAME_MAX - 1 && n == pl[6] && k == pl[7] &&
		      k <= GW_HELLO_KEYS && len == 8 + n + 4 * k);
		CHECK(memcmp(hl.name, pl + 8, n) == 0);
		CHECK(all_bytes(hl.name + n, sizeof(hl.name) - n, 0));
		for (size_t i = 0; i < k; i++)
			CHECK(hl.keys[i] == le32(pl + 8 + n + 4 * i));
		/* Encoding it again gives the same bytes. */
		uint8_t *out = malloc(len);
		CHECK(out);
		CHECK(gw_wire_hello_put(out, &hl) == len);
		CHECK(memcmp(out, pl, len) == 0);
		free(out);
	} else {
		CHECK(rc == -EBADMSG);
		CHECK(all_bytes(&hl, sizeof(hl), 0x5a));
	}
	free(pl);
}

static bool same_hdr(const struct gw_hdr *a, const struct gw_hdr *b)
{
	return a->type == b->type && a->src_node == b->src_node && a->dst_node == b->dst_node &&
	       a->lane == b->lane && a->nrec == b->nrec && a->epoch == b->epoch &&
	       a->seq == b->seq && a->base == b->base && a->len == b->len;
}

/*
 * Port RX's other readers of the same bytes: the peek (a parallel port's
 * copies) and the parse of an [auth]-proved frame skip only the CRC, so
 * each says what gw_wire_parse says of everything else.
 */
static void variants_agree(const uint8_t *f, size_t len, int rc, const struct gw_hdr *h,
			   const uint8_t *pl)
{
	struct gw_hdr ph, ah;
	const uint8_t *apl = NULL;
	int want = rc == GW_EWIRE_CRC ? 0 : rc;
	int prc = gw_wire_peek(f, len, FZ_PORT, &ph);
	int arc = gw_wire_parse_authentic(f, len, FZ_PORT, &ah, &apl, NULL);

	CHECK(prc == want && arc == want);
	if (rc == 0)
		CHECK(same_hdr(&ph, h) && same_hdr(&ah, h) && apl == pl);
	else if (want == 0)
		CHECK(same_hdr(&ph, &ah));
}

/*
 * gw_wire_parse plus what it promises: one of its four codes, nothing handed
 * out on failure; on success a payload inside the frame, then the walk.
 */
static int parse_checked(const uint8_t *f, size_t len, struct gw_hdr *h, struct gw_addr *src)
{
	static const uint8_t sentinel;
	const uint8_t *pl = &sentinel;

	memset(h, 0xa5, sizeof(*h));
	if (src)
		memset(src, 0xa5, sizeof(*src));
	int rc = gw_wire_parse(f, len, FZ_PORT, h, &pl, src);
	variants_agree(f, len, rc, h, pl);
	CHECK(gw_wire_strerror(rc) != NULL);
	if (rc) {
		CHECK(rc == GW_EWIRE_SHORT || rc == GW_EWIRE_NOTGW || rc == GW_EWIRE_VERSION ||
		      rc == GW_EWIRE_CRC);
		CHECK(pl == &sentinel && all_bytes(h, sizeof(*h), 0xa5));
		CHECK(!src || all_bytes(src, sizeof(*src), 0xa5));
		return rc;
	}
	CHECK(h->type == GW_FT_DATA || h->type == GW_FT_ACK || h->type == GW_FT_HELLO);
	CHECK(len >= GW_FRAME_MIN && pl == f + GW_FRAME_MIN);
	CHECK(h->len <= len - GW_FRAME_MIN && h->len <= GW_FRAME_MAX - GW_FRAME_MIN);
	walk_payload(h, pl);
	return 0;
}

/* Mode 0: bytes as received. */
static void fz_raw(const uint8_t *data, size_t size)
{
	struct gw_hdr h;
	struct gw_addr src;

	/* The input buffer is libFuzzer's exact-size copy: no need for another. */
	parse_checked(data, size, &h, size & 1 ? &src : NULL);
}

/* Mode 1: seal a frame from fuzzer fields, then parse it and damaged copies. */
static void fz_sealed(struct fz_in *in)
{
	uint8_t tsel = rd8(in);
	struct gw_hdr h = {
		/* Low bits 1..3 pick a valid type; 0 keeps the raw byte, always invalid. */
		.type = (tsel & 3) ? (tsel & 3) : tsel,
		.src_node = rd16(in),
		.dst_node = rd16(in),
		.lane = rd16(in),
		.nrec = rd16(in),
		.epoch = rd32(in),
		.seq = rd32(in),
		.base = rd32(in),
	};
	struct gw_addr src = fz_src;
	src.ip = rd32(in);
	src.port = rd16(in);
	src.mac[5] = rd8(in);
	size_t pad = rd8(in) % 64; /* Ethernet padding after the IP datagram */
	uint16_t cut = rd16(in), flip = rd16(in);
	uint8_t bit = rd8(in);
	size_t plen = in->n < GW_FRAME_MAX - GW_FRAME_MIN ? in->n : GW_FRAME_MAX - GW_FRAME_MIN;
	h.len = (uint32_t)plen;

	size_t total = GW_FRAME_MIN + plen;
	uint8_t *f = malloc(total + pad);
	CHECK(f);
	if (plen)
		memcpy(f + GW_FRAME_MIN, in->p, plen);
	memset(f + total, 0xee, pad);
	CHECK(gw_wire_seal(f, &src, &fz_dst, &h) == total);

	struct gw_hdr got;
	struct gw_addr from;
	int rc = parse_checked(f, total + pad, &got, &from);
	if (h.type < GW_FT_DATA || h.type > GW_FT_HELLO) {
		CHECK(rc == GW_EWIRE_VERSION);
	} else {
		CHECK(rc == 0);
		CHECK(got.type == h.type && got.src_node == h.src_node &&
		      got.dst_node == h.dst_node && got.lane == h.lane && got.nrec == h.nrec &&
		      got.epoch == h.epoch && got.seq == h.seq && got.base == h.base &&
		      got.len == h.len);
		CHECK(memcmp(from.mac, src.mac, 6) == 0 && from.ip == src.ip &&
		      from.port == src.port);
	}

	/* Any truncation is refused as short, on an exact-size copy. */
	size_t tlen = total - (1 + cut % total);
	uint8_t *t = exact_copy(f, tlen);
	CHECK(parse_checked(t, tlen, &got, NULL) == GW_EWIRE_SHORT);
	free(t);

	/* A bit flipped anywhere the CRC covers (or in the CRC) is refused. */
	size_t pos = GW_OUTER_HLEN + flip % (total - GW_OUTER_HLEN);
	f[pos] ^= (uint8_t)(1u << (bit % 8));
	CHECK(parse_checked(f, total + pad, &got, NULL) != 0);
	free(f);
}

/* Mode 2: the fuzzer's frame with a correct CRC over what the header claims. */
static void fz_crc_fixed(const uint8_t *data, size_t size)
{
	struct gw_hdr h;
	uint8_t *f = exact_copy(data, size);

	if (size >= GW_FRAME_MIN) {
		uint8_t *gh = f + GW_OUTER_HLEN;
		size_t avail = size - GW_FRAME_MIN;
		size_t plen = le32(gh + 24);
		put_le32_t(gh + 28, 0);
		put_le32_t(gh + 28, gw_crc32c(0, gh, GW_HDR_LEN + (plen < avail ? plen : avail)));
	}
	parse_checked(f, size, &h, NULL);
	free(f);
}

/* Bitwise CRC32C, straight from the definition: the reference for the kernels. */
static uint32_t crc32c_ref(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & -(c & 1));
	}
	return ~c;
}

/* Mode 3: what the encoders write, the decoders read back unchanged. */
static void fz_round_trips(struct fz_in *in)
{
	/* The bytes before any field is read: the CRC check's input. */
	const uint8_t *all = in->p;
	size_t nall = in->n;

	/* Records into a payload of fuzzer-chosen capacity. */
	static uint8_t body[UINT16_MAX];
	static bool body_init;
	if (!body_init) {
		for (size_t i = 0; i < sizeof(body); i++)
			body[i] = (uint8_t)(i * 31 + 7);
		body_init = true;
	}
	size_t cap = rd16(in) % (GW_FRAME_MAX - GW_FRAME_MIN + 1);
	uint8_t *pl = malloc(cap);
	uint8_t *before = malloc(cap);
	CHECK(pl && before);
	memset(pl, 0xcc, cap);
	struct gw_rec put[64];
	unsigned nput = 0;
	size_t used = 0;
	for (unsigned i = 0; i < 64 && in->n; i++) {
		uint8_t k = rd8(in);
		struct gw_rec r = {
			.kind = (uint8_t)(1 + (k & 1)),
			/* Mostly small records, now and then any length at all. */
			.len = (k & 2) ? rd16(in) : rd8(in),
			.dst_ep = rd32(in),
			.src_chan = rd16(in),
			.msg_id = rd32(in),
			.data = body,
		};
		size_t was = used;
		memcpy(before, pl, cap);
		int rc = gw_wire_rec_put(pl, cap, &used, &r);
		if (rc == 0) {
			CHECK(used == was + GW_REC_HLEN + r.len && used <= cap);
			put[nput++] = r;
		} else {
			/* Refused only when it does not fit, and then nothing written. */
			CHECK(rc == -ENOSPC && used == was && cap - was < GW_REC_HLEN + (size_t)r.len);
			CHECK(memcmp(before, pl, cap) == 0);
		}
	}
	size_t off = 0;
	struct gw_rec r;
	for (unsigned i = 0; i < nput; i++) {
		CHECK(gw_wire_rec_next(pl, used, &off, &r) == 1);
		CHECK(r.kind == put[i].kind && r.len == put[i].len && r.dst_ep == put[i].dst_ep &&
		      r.src_chan == put[i].src_chan && r.msg_id == put[i].msg_id);
		CHECK(memcmp(r.data, body, r.len) == 0);
	}
	CHECK(gw_wire_rec_next(pl, used, &off, &r) == 0 && off == used);
	free(before);
	free(pl);

	/* ACK: nbits rounded up to bytes and capped, the added bits sent clear. */
	struct gw_ack a = { .acked_epoch = rd32(in), .cum = rd32(in), .nbits = rd16(in),
			    .grant = rd16(in) };
	for (unsigned i = 0; i < sizeof(a.sack); i++)
		a.sack[i] = rd8(in);
	unsigned nbits = a.nbits < GW_SACK_BITS ? a.nbits : GW_SACK_BITS;
	size_t alen = 12 + (nbits + 7) / 8;
	uint8_t *ab = malloc(alen);
	CHECK(ab);
	CHECK(gw_wire_ack_put(ab, &a) == alen);
	struct gw_ack b;
	CHECK(gw_wire_ack_get(ab, alen, &b) == 0);
	CHECK(b.acked_epoch == a.acked_epoch && b.cum == a.cum && b.nbits == (nbits + 7) / 8 * 8 &&
	      b.grant == a.grant);
	for (unsigned i = 0; i < GW_SACK_BITS; i++) {
		bool want = i < nbits && (a.sack[i / 8] >> (i % 8) & 1);
		CHECK(want == (bool)(b.sack[i / 8] >> (i % 8) & 1));
	}
	free(ab);

	/* HELLO: up to 31 name bytes and 2 key ids, nothing at all for an
	 * empty name. */
	struct gw_hello hl = { .caps = rd32(in), .interval_ms = rd16(in),
			       .nkeys = (uint8_t)(rd8(in) % (GW_HELLO_KEYS + 1)) };
	for (unsigned i = 0; i < GW_HELLO_KEYS; i++)
		hl.keys[i] = rd32(in);
	for (unsigned i = 0; i < sizeof(hl.name); i++)
		hl.name[i] = (char)rd8(in);
	size_t n = strnlen(hl.name, GW_NAME_MAX - 1);
	uint8_t *hb = malloc(8 + n + 4 * GW_HELLO_KEYS);
	CHECK(hb);
	size_t hlen = gw_wire_hello_put(hb, &hl);
	if (n == 0) {
		CHECK(hlen == 0);
	} else {
		struct gw_hello g;
		CHECK(hlen == 8 + n + 4 * (size_t)hl.nkeys && gw_wire_hello_get(hb, hlen, &g) == 0);
		CHECK(g.caps == hl.caps && g.interval_ms == hl.interval_ms && g.nkeys == hl.nkeys);
		CHECK(memcmp(g.name, hl.name, n) == 0 && g.name[n] == 0);
		CHECK(memcmp(g.keys, hl.keys, g.nkeys * sizeof(g.keys[0])) == 0);
	}
	free(hb);

	/*
	 * CRC32C: every kernel on the input against the bitwise reference, and
	 * the public function resumed at a fuzzer-chosen split (chaining is how
	 * the parser covers header and payload).
	 */
	uint8_t *c = exact_copy(all, nall);
	uint32_t want = crc32c_ref(c, nall);
	CHECK(~crc32c_sw(~0u, c, nall) == want);
#ifdef __x86_64__
	if (__builtin_cpu_supports("sse4.2"))
		CHECK(~crc32c_hw(~0u, c, nall) == want);
	if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul"))
		CHECK(~crc32c_hw3(~0u, c, nall) == want);
#endif
	size_t split = nall >= 4 ? le32(c) % (nall + 1) : nall / 2;
	CHECK(gw_crc32c(gw_crc32c(0, c, split), c + split, nall - split) == want);
	free(c);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The check value from doc/protocol.md, once, before any input. */
	CHECK(gw_crc32c(0, "123456789", 9) == 0xe3069283u);
	__builtin_cpu_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	struct fz_in in = { data + 1, size - 1 };
	switch (data[0] % 4) {
	case 0:
		fz_raw(in.p, in.n);
		break;
	case 1:
		fz_sealed(&in);
		break;
	case 2:
		fz_crc_fixed(in.p, in.n);
		break;
	default:
		fz_round_trips(&in);
		break;
	}
	return 0;
}
