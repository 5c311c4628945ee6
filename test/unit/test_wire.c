/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of gw_wire: CRC32C, frame seal/parse, records, ACK and HELLO
 * payloads, and rejection of every kind of malformed input. Inputs that
 * must be rejected are copied into heap buffers of their exact length so
 * that valgrind (or ASan) catches any read past them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_test.h"
#include "gw_wire.h"

/*
 * White box: the library's kernels are static, and on this CPU dispatch
 * never picks the table one. Compiling the file in here (its public symbol
 * renamed) lets the test run both without widening the header.
 */
#define gw_crc32c gw_crc32c_whitebox
#include "gw_crc32c.c"
#undef gw_crc32c

/* Two ends of a link: A sends to B, which listens on B.port. */
static const struct gw_addr A = {{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}, 0x0a000001, 40001};
static const struct gw_addr B = {{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}, 0x0a000002, 40002};

/* Offsets the tests poke at, spelled out independently of gw_wire.c. */
enum {
	O_ETHTYPE = 12,
	O_IP = 14,
	O_IP_LEN = O_IP + 2,
	O_IP_FRAG = O_IP + 6,
	O_IP_TTL = O_IP + 8,
	O_IP_PROTO = O_IP + 9,
	O_IP_CSUM = O_IP + 10,
	O_UDP = O_IP + 20,
	O_UDP_DPORT = O_UDP + 2,
	O_UDP_LEN = O_UDP + 4,
	O_GW = O_UDP + 8,
	O_GW_VERSION = O_GW + 2,
	O_GW_TYPE = O_GW + 3,
	O_GW_SEQ = O_GW + 16,
	O_GW_LEN = O_GW + 24,
	O_GW_CRC = O_GW + 28,
};

static uint8_t frame[GW_FRAME_MAX + 64];

/* --- small helpers ------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64*: seeded, so a failure reproduces. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static void set_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void set_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static uint16_t get_be16_t(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void set_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32_t(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bitwise CRC32C, the reference every kernel is checked against. */
static uint32_t ref_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & -(crc & 1));
	}
	return ~crc;
}

/* Parse a copy of f[0..len) held in a buffer of exactly len bytes. */
static int parse_exact(const uint8_t *f, size_t len, struct gw_hdr *h, const uint8_t **pl)
{
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, f, len);
	const uint8_t *p = NULL;
	int rc = gw_wire_parse(copy, len, B.port, h, &p, NULL);
	if (rc == 0 && pl)
		*pl = f + (p - copy);
	free(copy);
	return rc;
}

static const uint8_t msg0[] = "hello";
static const uint8_t msg2[] = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01};

/* A sealed DATA frame A -> B with three records (one of them empty). */
static size_t build_data(uint8_t *f, struct gw_hdr *h)
{
	const struct gw_rec recs[] = {
		{GW_RK_MSG, sizeof(msg0), 7, 3, 100, msg0},
		{GW_RK_MSG, 0, 8, 3, 101, msg0},
		{GW_RK_REJECT, sizeof(msg2), 0, 65535, 0xfffffffe, msg2},
	};
	size_t used = 0;
	for (unsigned i = 0; i < 3; i++)
		CU_ASSERT_EQUAL_FATAL(gw_wire_rec_put(f + GW_FRAME_MIN, 1000, &used, &recs[i]), 0);
	*h = (struct gw_hdr){
		.type = GW_FT_DATA, .src_node = 1, .dst_node = 2, .lane = 5, .nrec = 3,
		.epoch = 0x11223344, .seq = 0x80000001, .base = 0x7fffffff, .len = (uint32_t)used,
	};
	return gw_wire_seal(f, &A, &B, h);
}

/* --- CRC32C ---------------------------------------------------------------- */

#ifdef __x86_64__
/* The 3-way kernel (crc32 chains merged with PCLMULQDQ) runs on this CPU. */
static bool have_hw3(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
}

/* So does the folding kernel (AVX-512 VPCLMULQDQ). */
static bool have_fold(void)
{
	return have_hw3() && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("vpclmulqdq");
}
#endif

static void test_crc_vectors(void)
{
	uint8_t buf[32];

	CU_ASSERT_EQUAL(gw_crc32c(0, "123456789", 9), 0xE3069283u);
	CU_ASSERT_EQUAL(gw_crc32c(0, "", 0), 0);
	/* RFC 3720 (iSCSI) B.4 vectors. */
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(gw_crc32c(0, buf, sizeof(buf)), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	CU_ASSERT_EQUAL(gw_crc32c(0, buf, sizeof(buf)), 0x62A8AB43u);
	for (unsigned i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	CU_ASSERT_EQUAL(gw_crc32c(0, buf, sizeof(buf)), 0x46DD794Eu);
	for (unsigned i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	CU_ASSERT_EQUAL(gw_crc32c(0, buf, sizeof(buf)), 0x113FDB5Cu);
	CU_ASSERT_EQUAL(ref_crc32c(0, "123456789", 9), 0xE3069283u);
}

static void test_crc_chaining(void)
{
	uint8_t buf[300];
	rng_state = 1;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rng();
	uint32_t whole = gw_crc32c(0, buf, sizeof(buf));
	CU_ASSERT_EQUAL(whole, ref_crc32c(0, buf, sizeof(buf)));
	unsigned bad = 0;
	for (size_t k = 0; k <= sizeof(buf); k++)
		bad += gw_crc32c(gw_crc32c(0, buf, k), buf + k, sizeof(buf) - k) != whole;
	CU_ASSERT_EQUAL(bad, 0);
	/* Three pieces, as gw_wire_parse chains header and payload. */
	CU_ASSERT_EQUAL(gw_crc32c(gw_crc32c(gw_crc32c(0, buf, 7), buf + 7, 100), buf + 107, 193),
			whole);
}

static void test_crc_kernels_agree(void)
{
	uint8_t buf[2400];
	rng_state = 2;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rng();
	unsigned bad_pub = 0, bad_sw = 0, bad_hw = 0, bad_hw3 = 0, bad_fold = 0;
	/* Every length up to past a few 8-byte blocks, from every alignment. */
	for (size_t off = 0; off < 8; off++) {
		for (size_t len = 0; len + off <= sizeof(buf); len += len < 80 ? 1 : 61) {
			uint32_t want = ref_crc32c(0x12345678, buf + off, len);
			bad_pub += gw_crc32c(0x12345678, buf + off, len) != want;
			bad_sw += ~crc32c_sw(~0x12345678u, buf + off, len) != want;
#ifdef __x86_64__
			if (__builtin_cpu_supports("sse4.2"))
				bad_hw += ~crc32c_hw(~0x12345678u, buf + off, len) != want;
			if (have_hw3())
				bad_hw3 += ~crc32c_hw3(~0x12345678u, buf + off, len) != want;
			if (have_fold())
				bad_fold += ~crc32c_fold(~0x12345678u, buf + off, len) != want;
#endif
		}
	}
	/* The folding kernel's edges: one step, a tail of 0, one byte either side. */
	static const size_t edges[] = { 255, 256, 257, 511, 512, 513, 767, 768, 1024, 2048, 2304, 2392 };
	for (size_t off = 0; off < 8; off += 7)
		for (unsigned i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
			uint32_t want = ref_crc32c(0x9abcdef0, buf + off, edges[i]);
			bad_pub += gw_crc32c(0x9abcdef0, buf + off, edges[i]) != want;
#ifdef __x86_64__
			if (have_fold())
				bad_fold += ~crc32c_fold(~0x9abcdef0u, buf + off, edges[i]) != want;
#endif
		}
	CU_ASSERT_EQUAL(bad_pub, 0);
	CU_ASSERT_EQUAL(bad_sw, 0);
	CU_ASSERT_EQUAL(bad_hw, 0);
	CU_ASSERT_EQUAL(bad_hw3, 0);
	CU_ASSERT_EQUAL(bad_fold, 0);
	/* The renamed copy dispatches too; it must agree with the library. */
	CU_ASSERT_EQUAL(gw_crc32c_whitebox(0, buf, sizeof(buf)), gw_crc32c(0, buf, sizeof(buf)));
}

/*
 * The shift constants of the 3-way merge: crc32c_shift[i] times x^33 must
 * be x^(8n) mod P for n = 8*(i+1), i.e. the register x^0 (bit 31) after n
 * zero bytes, here pushed through the table kernel.
 */
static void test_crc_shift_constants(void)
{
	static const uint8_t zeros[2048];
	unsigned bad = 0;
	for (unsigned i = 0; i < 256; i++) {
		uint32_t k = crc32c_shift[i];
		for (int s = 0; s < 33; s++)
			k = (k >> 1) ^ (0x82F63B78u & -(k & 1));
		bad += k != crc32c_sw(0x80000000u, zeros, 8 * (i + 1));
	}
	CU_ASSERT_EQUAL(bad, 0);
}

#define CRC_SWEEP 5000

/*
 * Every length 0..5000 from every alignment 0..7 over random data, against
 * the bitwise reference (grown a byte at a time, so the sweep stays cheap
 * under valgrind). This crosses the single-chain cutoff, every size of the
 * last 3-way round and the full 3 x 1024 rounds, with a random start value.
 */
static void test_crc_fast_sweep(void)
{
	uint8_t *buf = malloc(CRC_SWEEP + 8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	rng_state = 3;
	for (size_t i = 0; i < CRC_SWEEP + 8; i++)
		buf[i] = (uint8_t)rng();
	unsigned bad_pub = 0, bad_hw3 = 0, checked = 0;
	for (size_t off = 0; off < 8; off++) {
		const uint8_t *p = buf + off;
		uint32_t init = (uint32_t)rng();
		uint32_t want = init; /* ref over p[0..len) */
		for (size_t len = 0; len <= CRC_SWEEP; len++) {
			if (len > 0)
				want = ref_crc32c(want, p + len - 1, 1);
			bad_pub += gw_crc32c(init, p, len) != want;
#ifdef __x86_64__
			if (have_hw3())
				bad_hw3 += ~crc32c_hw3(~init, p, len) != want;
#endif
			checked++;
		}
	}
	CU_ASSERT_EQUAL(checked, 8 * (CRC_SWEEP + 1));
	CU_ASSERT_EQUAL(bad_pub, 0);
	CU_ASSERT_EQUAL(bad_hw3, 0);
	free(buf);
}

/*
 * Every length again, each buffer ending exactly where its heap block ends
 * (so valgrind sees any read past it), against the single-chain kernel,
 * itself checked against the reference above.
 */
static void test_crc_fast_tail_reads(void)
{
	uint8_t *buf = malloc(CRC_SWEEP);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	rng_state = 4;
	for (size_t i = 0; i < CRC_SWEEP; i++)
		buf[i] = (uint8_t)rng();
	unsigned bad = 0;
	for (size_t len = 0; len <= CRC_SWEEP; len++) {
		const uint8_t *p = buf + CRC_SWEEP - len;
		uint32_t want = ~crc32c_sw(~0xdeadbeefu, p, len);
#ifdef __x86_64__
		if (__builtin_cpu_supports("sse4.2"))
			want = ~crc32c_hw(~0xdeadbeefu, p, len);
#endif
		bad += gw_crc32c(0xdeadbeef, p, len) != want;
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* The single chain is not checked against itself: spot-check it. */
	CU_ASSERT_EQUAL(gw_crc32c(0, buf, CRC_SWEEP), ref_crc32c(0, buf, CRC_SWEEP));
	free(buf);
}

/*
 * Random splits of random buffers (up to past four 3 x 1024 rounds) into
 * up to six pieces, at random alignments: chaining the pieces gives the
 * CRC of the whole, as the reference computes it in one go.
 */
static void test_crc_fast_chained_splits(void)
{
	enum { MAXLEN = 14000, TRIALS = 300 };
	uint8_t *buf = malloc(MAXLEN + 8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	rng_state = 5;
	for (size_t i = 0; i < MAXLEN + 8; i++)
		buf[i] = (uint8_t)rng();
	unsigned bad = 0;
	for (int t = 0; t < TRIALS; t++) {
		size_t off = rng() % 8, len = rng() % (MAXLEN + 1);
		const uint8_t *p = buf + off;
		uint32_t init = t % 3 == 0 ? 0 : (uint32_t)rng();
		uint32_t want = ref_crc32c(init, p, len);
		unsigned pieces = 1 + (unsigned)(rng() % 6);
		uint32_t crc = init;
		size_t at = 0;
		for (unsigned k = 1; k < pieces; k++) {
			/* Short pieces too: the cutoffs are where mistakes hide. */
			size_t left = len - at;
			size_t n = rng() % 4 == 0 ? rng() % (left < 200 ? left + 1 : 200)
						  : rng() % (left + 1);
			crc = gw_crc32c(crc, p + at, n);
			at += n;
		}
		crc = gw_crc32c(crc, p + at, len - at);
		bad += crc != want;
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(buf);
}

/* --- frames ---------------------------------------------------------------- */

static void test_data_round_trip(void)
{
	struct gw_hdr h, got;
	const uint8_t *pl = NULL;
	struct gw_addr from;

	memset(frame, 0xa5, sizeof(frame));
	size_t n = build_data(frame, &h);
	CU_ASSERT_EQUAL(n, GW_FRAME_MIN + h.len);
	memset(&from, 0, sizeof(from));
	CU_ASSERT_EQUAL_FATAL(gw_wire_parse(frame, n, B.port, &got, &pl, &from), 0);
	CU_ASSERT_PTR_EQUAL(pl, frame + GW_FRAME_MIN);
	CU_ASSERT_EQUAL(got.type, GW_FT_DATA);
	CU_ASSERT_EQUAL(got.src_node, 1);
	CU_ASSERT_EQUAL(got.dst_node, 2);
	CU_ASSERT_EQUAL(got.lane, 5);
	CU_ASSERT_EQUAL(got.nrec, 3);
	CU_ASSERT_EQUAL(got.epoch, 0x11223344u);
	CU_ASSERT_EQUAL(got.seq, 0x80000001u);
	CU_ASSERT_EQUAL(got.base, 0x7fffffffu);
	CU_ASSERT_EQUAL(got.len, h.len);
	CU_ASSERT_EQUAL(memcmp(from.mac, A.mac, 6), 0);
	CU_ASSERT_EQUAL(from.ip, A.ip);
	CU_ASSERT_EQUAL(from.port, A.port);

	/* src is optional. */
	CU_ASSERT_EQUAL(gw_wire_parse(frame, n, B.port, &got, &pl, NULL), 0);

	struct gw_rec r;
	size_t off = 0;
	CU_ASSERT_EQUAL_FATAL(gw_wire_rec_next(pl, got.len, &off, &r), 1);
	CU_ASSERT_EQUAL(r.kind, GW_RK_MSG);
	CU_ASSERT_EQUAL(r.len, sizeof(msg0));
	CU_ASSERT_EQUAL(r.dst_ep, 7);
	CU_ASSERT_EQUAL(r.src_chan, 3);
	CU_ASSERT_EQUAL(r.msg_id, 100);
	CU_ASSERT_EQUAL(memcmp(r.data, msg0, sizeof(msg0)), 0);
	CU_ASSERT_EQUAL_FATAL(gw_wire_rec_next(pl, got.len, &off, &r), 1);
	CU_ASSERT_EQUAL(r.len, 0);
	CU_ASSERT_EQUAL(r.dst_ep, 8);
	CU_ASSERT_EQUAL(r.msg_id, 101);
	CU_ASSERT_EQUAL_FATAL(gw_wire_rec_next(pl, got.len, &off, &r), 1);
	CU_ASSERT_EQUAL(r.kind, GW_RK_REJECT);
	CU_ASSERT_EQUAL(r.src_chan, 65535);
	CU_ASSERT_EQUAL(r.msg_id, 0xfffffffeu);
	CU_ASSERT_EQUAL(memcmp(r.data, msg2, sizeof(msg2)), 0);
	CU_ASSERT_EQUAL(gw_wire_rec_next(pl, got.len, &off, &r), 0);
	CU_ASSERT_EQUAL(off, got.len);

	/* Ethernet padding after the datagram is ignored. */
	CU_ASSERT_EQUAL(parse_exact(frame, n + 20, &got, NULL), 0);
}

/* The bytes on the wire, checked against doc/protocol.md. */
static void test_data_layout(void)
{
	struct gw_hdr h;
	size_t n = build_data(frame, &h);
	const uint8_t *ip = frame + O_IP, *udp = frame + O_UDP, *gw = frame + O_GW;

	CU_ASSERT_EQUAL(memcmp(frame, B.mac, 6), 0);
	CU_ASSERT_EQUAL(memcmp(frame + 6, A.mac, 6), 0);
	CU_ASSERT_EQUAL(get_be16_t(frame + O_ETHTYPE), 0x0800);
	CU_ASSERT_EQUAL(ip[0], 0x45);
	CU_ASSERT_EQUAL(ip[1], 0);
	CU_ASSERT_EQUAL(get_be16_t(ip + 2), n - 14);
	CU_ASSERT_EQUAL(get_be16_t(ip + 4), 0);
	CU_ASSERT_EQUAL(get_be16_t(ip + 6), 0x4000);
	CU_ASSERT_EQUAL(ip[8], 64);
	CU_ASSERT_EQUAL(ip[9], 17);
	const uint8_t src_ip[] = {10, 0, 0, 1}, dst_ip[] = {10, 0, 0, 2};
	CU_ASSERT_EQUAL(memcmp(ip + 12, src_ip, 4), 0);
	CU_ASSERT_EQUAL(memcmp(ip + 16, dst_ip, 4), 0);
	/* A correct header checksum makes the one's complement sum 0xffff. */
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2)
		sum += get_be16_t(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	CU_ASSERT_EQUAL(sum, 0xffff);
	CU_ASSERT_EQUAL(get_be16_t(udp), A.port);
	CU_ASSERT_EQUAL(get_be16_t(udp + 2), B.port);
	CU_ASSERT_EQUAL(get_be16_t(udp + 4), n - 34);
	CU_ASSERT_EQUAL(get_be16_t(udp + 6), 0);
	CU_ASSERT_EQUAL(gw[0], 'G');
	CU_ASSERT_EQUAL(gw[1], 'W');
	CU_ASSERT_EQUAL(gw[2], GW_WIRE_VERSION);
	CU_ASSERT_EQUAL(gw[3], GW_FT_DATA);
	CU_ASSERT_EQUAL(gw[4], 1);
	CU_ASSERT_EQUAL(gw[5], 0);
	CU_ASSERT_EQUAL(gw[8], 5);
	CU_ASSERT_EQUAL(gw[10], 3);
	CU_ASSERT_EQUAL(get_le32_t(gw + 12), 0x11223344u);
	CU_ASSERT_EQUAL(get_le32_t(gw + 16), 0x80000001u);
	CU_ASSERT_EQUAL(get_le32_t(gw + 20), 0x7fffffffu);
	CU_ASSERT_EQUAL(get_le32_t(gw + 24), h.len);
	/* CRC: header with its crc field zeroed, then the payload. */
	uint8_t hz[32];
	memcpy(hz, gw, 32);
	memset(hz + 28, 0, 4);
	uint32_t crc = ref_crc32c(ref_crc32c(0, hz, 32), gw + 32, h.len);
	CU_ASSERT_EQUAL(get_le32_t(gw + 28), crc);
	/* First record header: len, kind, flags, dst_ep, src_chan, reserved, msg_id. */
	const uint8_t rec0[16] = {6, 0, GW_RK_MSG, 0, 7, 0, 0, 0, 3, 0, 0, 0, 100, 0, 0, 0};
	CU_ASSERT_EQUAL(memcmp(gw + 32, rec0, 16), 0);
	CU_ASSERT_EQUAL(memcmp(gw + 48, msg0, 6), 0);
}

static void test_ack_round_trip(void)
{
	struct gw_ack ack = {.acked_epoch = 9, .cum = 0xfffffff0, .nbits = GW_SACK_BITS,
			     .grant = 0xbeef};
	struct gw_ack got;
	struct gw_hdr h = {.type = GW_FT_ACK, .src_node = 2, .dst_node = 1, .lane = 5};
	struct gw_hdr gh;
	const uint8_t *pl;

	for (unsigned i = 0; i < sizeof(ack.sack); i++)
		ack.sack[i] = (uint8_t)(i * 37 + 1);
	h.len = (uint32_t)gw_wire_ack_put(frame + GW_FRAME_MIN, &ack);
	CU_ASSERT_EQUAL(h.len, 12 + GW_SACK_BITS / 8);
	size_t n = gw_wire_seal(frame, &B, &A, &h);
	CU_ASSERT_EQUAL_FATAL(gw_wire_parse(frame, n, A.port, &gh, &pl, NULL), 0);
	CU_ASSERT_EQUAL(gh.type, GW_FT_ACK);
	CU_ASSERT_EQUAL_FATAL(gw_wire_ack_get(pl, gh.len, &got), 0);
	CU_ASSERT_EQUAL(got.acked_epoch, 9);
	CU_ASSERT_EQUAL(got.cum, 0xfffffff0u);
	CU_ASSERT_EQUAL(got.nbits, GW_SACK_BITS);
	CU_ASSERT_EQUAL(got.grant, 0xbeef); /* bytes 10-11, once "reserved" */
	CU_ASSERT_EQUAL(frame[GW_FRAME_MIN + 10], 0xef);
	CU_ASSERT_EQUAL(frame[GW_FRAME_MIN + 11], 0xbe);
	CU_ASSERT_EQUAL(memcmp(got.sack, ack.sack, sizeof(ack.sack)), 0);

	/* No sack at all. */
	ack.nbits = 0;
	size_t len = gw_wire_ack_put(frame, &ack);
	CU_ASSERT_EQUAL(len, 12);
	memset(&got, 0xff, sizeof(got));
	CU_ASSERT_EQUAL(gw_wire_ack_get(frame, len, &got), 0);
	CU_ASSERT_EQUAL(got.nbits, 0);
	CU_ASSERT_EQUAL(got.sack[0], 0);
	CU_ASSERT_EQUAL(got.sack[GW_SACK_BITS / 8 - 1], 0);

	/* A window of 4 rounds up to a byte; stale bits past 4 are not sent. */
	memset(ack.sack, 0xff, sizeof(ack.sack));
	ack.nbits = 4;
	len = gw_wire_ack_put(frame, &ack);
	CU_ASSERT_EQUAL(len, 13);
	CU_ASSERT_EQUAL(gw_wire_ack_get(frame, len, &got), 0);
	CU_ASSERT_EQUAL(got.nbits, 8);
	CU_ASSERT_EQUAL(got.sack[0], 0x0f);
	CU_ASSERT_EQUAL(got.sack[1], 0);

	/* Past the bitmap's size is capped, never read beyond it. */
	ack.nbits = 1000;
	CU_ASSERT_EQUAL(gw_wire_ack_put(frame, &ack), 12 + GW_SACK_BITS / 8);
}

static void test_hello_round_trip(void)
{
	struct gw_hello hello = {.caps = 0xa5a5a5a5, .interval_ms = 250, .name = "node-b"};
	struct gw_hello got;
	struct gw_hdr h = {.type = GW_FT_HELLO, .src_node = 2};
	struct gw_hdr gh;
	const uint8_t *pl;

	h.len = (uint32_t)gw_wire_hello_put(frame + GW_FRAME_MIN, &hello);
	CU_ASSERT_EQUAL(h.len, 8 + 6);
	size_t n = gw_wire_seal(frame, &B, &A, &h);
	CU_ASSERT_EQUAL_FATAL(gw_wire_parse(frame, n, A.port, &gh, &pl, NULL), 0);
	CU_ASSERT_EQUAL(gh.type, GW_FT_HELLO);
	/* No NUL on the wire. */
	CU_ASSERT_EQUAL(pl[6], 6);
	CU_ASSERT_EQUAL(memcmp(pl + 8, "node-b", 6), 0);
	memset(&got, 0xff, sizeof(got));
	CU_ASSERT_EQUAL_FATAL(gw_wire_hello_get(pl, gh.len, &got), 0);
	CU_ASSERT_EQUAL(got.caps, 0xa5a5a5a5u);
	CU_ASSERT_EQUAL(got.interval_ms, 250);
	CU_ASSERT_STRING_EQUAL(got.name, "node-b");

	/* A name filling the array without a NUL is cut to GW_NAME_MAX - 1. */
	memset(hello.name, 'x', sizeof(hello.name));
	size_t len = gw_wire_hello_put(frame, &hello);
	CU_ASSERT_EQUAL(len, 8 + GW_NAME_MAX - 1);
	CU_ASSERT_EQUAL(gw_wire_hello_get(frame, len, &got), 0);
	CU_ASSERT_EQUAL(strlen(got.name), GW_NAME_MAX - 1);

	/* The [auth] key ids held, after the name; more than two refused. */
	snprintf(hello.name, sizeof(hello.name), "b");
	hello.nkeys = 2;
	hello.keys[0] = 0x11223344;
	hello.keys[1] = 0x55667788;
	len = gw_wire_hello_put(frame, &hello);
	CU_ASSERT_EQUAL(len, 8 + 1 + 8);
	CU_ASSERT_EQUAL(gw_wire_hello_get(frame, len, &got), 0);
	CU_ASSERT(got.nkeys == 2 && got.keys[0] == 0x11223344u && got.keys[1] == 0x55667788u);
	CU_ASSERT_EQUAL(gw_wire_hello_get(frame, len - 1, &got), -EBADMSG);
	frame[7] = 3;
	CU_ASSERT_EQUAL(gw_wire_hello_get(frame, len + 4, &got), -EBADMSG);

	hello.name[0] = '\0';
	CU_ASSERT_EQUAL(gw_wire_hello_put(frame, &hello), 0);
}

/* The largest frame the codec accepts, and one byte more. */
static void test_frame_max(void)
{
	struct gw_hdr h = {.type = GW_FT_DATA, .len = GW_FRAME_MAX - GW_FRAME_MIN};
	struct gw_hdr got;

	memset(frame + GW_FRAME_MIN, 0x5a, h.len + 1);
	size_t n = gw_wire_seal(frame, &A, &B, &h);
	CU_ASSERT_EQUAL(n, GW_FRAME_MAX);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &got, NULL), 0);
	CU_ASSERT_EQUAL(got.len, h.len);
	h.len++;
	n = gw_wire_seal(frame, &A, &B, &h);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &got, NULL), GW_EWIRE_SHORT);
}

/* --- malformed frames ----------------------------------------------------- */

static void test_parse_truncated(void)
{
	struct gw_hdr h;
	size_t n = build_data(frame, &h);
	unsigned wrong = 0;

	for (size_t len = 0; len < n; len++)
		wrong += parse_exact(frame, len, &h, NULL) != GW_EWIRE_SHORT;
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), 0);
}

/* Offset of a corruption meaning the frame's last byte. */
#define AT_END SIZE_MAX

struct corruption {
	const char *what;
	size_t off;
	uint8_t xor;
	int want;
};

static void test_parse_corrupt_fields(void)
{
	static const struct corruption c[] = {
		{"ethertype", O_ETHTYPE, 0x01, GW_EWIRE_NOTGW},
		{"ethertype ipv6", O_ETHTYPE, 0x08 ^ 0x86, GW_EWIRE_NOTGW},
		{"ip version 6", O_IP, 0x40 ^ 0x60, GW_EWIRE_NOTGW},
		{"ihl 4", O_IP, 0x01, GW_EWIRE_NOTGW},
		{"ihl 6 (options)", O_IP, 0x05 ^ 0x06, GW_EWIRE_NOTGW},
		{"proto tcp", O_IP_PROTO, 17 ^ 6, GW_EWIRE_NOTGW},
		{"more fragments", O_IP_FRAG, 0x20, GW_EWIRE_NOTGW},
		{"fragment offset", O_IP_FRAG + 1, 0x01, GW_EWIRE_NOTGW},
		{"udp dst port hi", O_UDP_DPORT, 0x80, GW_EWIRE_NOTGW},
		{"udp dst port lo", O_UDP_DPORT + 1, 0x01, GW_EWIRE_NOTGW},
		{"magic lo", O_GW, 0x01, GW_EWIRE_NOTGW},
		{"magic hi", O_GW + 1, 0x01, GW_EWIRE_NOTGW},
		{"version 0", O_GW_VERSION, 0x01, GW_EWIRE_VERSION},
		{"version 2", O_GW_VERSION, 0x03, GW_EWIRE_VERSION},
		{"version 255", O_GW_VERSION, 0xfe, GW_EWIRE_VERSION},
		{"type 0", O_GW_TYPE, GW_FT_DATA ^ 0, GW_EWIRE_VERSION},
		{"type 4", O_GW_TYPE, GW_FT_DATA ^ 4, GW_EWIRE_VERSION},
		{"gw len huge", O_GW_LEN + 3, 0x80, GW_EWIRE_SHORT},
		{"ip len +256", O_IP_LEN, 0x01, GW_EWIRE_SHORT},
		{"udp len", O_UDP_LEN + 1, 0x01, GW_EWIRE_SHORT},
		{"payload bit", GW_FRAME_MIN + 20, 0x10, GW_EWIRE_CRC},
		{"last payload bit", AT_END, 0x80, GW_EWIRE_CRC},
		{"header seq bit", O_GW_SEQ, 0x01, GW_EWIRE_CRC},
		{"crc field", O_GW_CRC + 2, 0x04, GW_EWIRE_CRC},
		/* Not checked: the IP checksum, TTL and addresses (CRC covers ours). */
		{"ip checksum", O_IP_CSUM, 0xff, 0},
		{"ttl", O_IP_TTL, 0x3f, 0},
	};
	uint8_t orig[512];
	struct gw_hdr h;
	size_t n = build_data(orig, &h);

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memcpy(frame, orig, n);
		frame[c[i].off == AT_END ? n - 1 : c[i].off] ^= c[i].xor;
		struct gw_hdr got = {.seq = 0xdeadbeef};
		int rc = parse_exact(frame, n, &got, NULL);
		if (rc != c[i].want)
			printf("\n  %s: got %d (%s), want %d\n", c[i].what, rc, gw_wire_strerror(rc),
			       c[i].want);
		CU_ASSERT_EQUAL(rc, c[i].want);
		/* Outputs are left alone on failure. */
		if (c[i].want)
			CU_ASSERT_EQUAL(got.seq, 0xdeadbeef);
		/* peek checks all of it but the CRC. */
		struct gw_hdr peeked = {.seq = 0xdeadbeef};
		int prc = gw_wire_peek(frame, n, B.port, &peeked);
		CU_ASSERT_EQUAL(prc, c[i].want == GW_EWIRE_CRC ? 0 : c[i].want);
		if (prc == 0)
			CU_ASSERT_EQUAL(peeked.seq ^ h.seq, c[i].off == O_GW_SEQ ? c[i].xor : 0u);
	}

	/* Not our port. */
	struct gw_hdr got;
	const uint8_t *pl;
	CU_ASSERT_EQUAL(gw_wire_parse(orig, n, B.port + 1, &got, &pl, NULL), GW_EWIRE_NOTGW);
}

/* Length fields that disagree with each other or with the frame. */
static void test_parse_bad_lengths(void)
{
	uint8_t orig[512];
	struct gw_hdr h;
	size_t n = build_data(orig, &h);
	uint16_t ip_len = (uint16_t)(n - 14);

	/* gw len one more, one less than UDP carries, and absurd. */
	memcpy(frame, orig, n);
	set_le32(frame + O_GW_LEN, h.len + 1);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);
	set_le32(frame + O_GW_LEN, h.len - 1);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);
	set_le32(frame + O_GW_LEN, 0xffffffff);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);

	/* IP says one byte more than the frame holds. */
	memcpy(frame, orig, n);
	set_be16(frame + O_IP_LEN, ip_len + 1);
	set_be16(frame + O_UDP_LEN, ip_len + 1 - 20);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);
	/* ...and with a padded frame, UDP carries a byte gw len does not. */
	frame[n] = 0;
	CU_ASSERT_EQUAL(parse_exact(frame, n + 1, &h, NULL), GW_EWIRE_SHORT);

	/* IP and UDP one byte shorter: the payload overruns them. */
	set_be16(frame + O_IP_LEN, ip_len - 1);
	set_be16(frame + O_UDP_LEN, ip_len - 1 - 20);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);

	/* IP says less than the headers themselves. */
	memcpy(frame, orig, n);
	for (uint16_t l = 0; l < 20 + 8 + 32; l++) {
		set_be16(frame + O_IP_LEN, l);
		set_be16(frame + O_UDP_LEN, l >= 20 ? l - 20 : 0);
		CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);
	}

	/* UDP disagrees with IP either way. */
	memcpy(frame, orig, n);
	set_be16(frame + O_UDP_LEN, ip_len - 20 - 1);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);
	set_be16(frame + O_UDP_LEN, ip_len - 20 + 1);
	CU_ASSERT_EQUAL(parse_exact(frame, n, &h, NULL), GW_EWIRE_SHORT);
}

/* --- records --------------------------------------------------------------- */

static void test_rec_put_space(void)
{
	uint8_t buf[64];
	uint8_t data[40];
	struct gw_rec r = {GW_RK_MSG, 10, 1, 2, 3, data};
	size_t used = 0;

	memset(data, 0x77, sizeof(data));
	memset(buf, 0xee, sizeof(buf));
	/* Exactly cap fits. */
	CU_ASSERT_EQUAL(gw_wire_rec_put(buf, 26, &used, &r), 0);
	CU_ASSERT_EQUAL(used, 26);
	CU_ASSERT_EQUAL(buf[26], 0xee);
	/* One byte over: refused, nothing written. */
	CU_ASSERT_EQUAL(gw_wire_rec_put(buf, 26 + 25, &used, &r), -ENOSPC);
	CU_ASSERT_EQUAL(used, 26);
	for (size_t i = 26; i < sizeof(buf); i++)
		CU_ASSERT_EQUAL(buf[i], 0xee);
	/* Even an empty record needs its header. */
	r.len = 0;
	CU_ASSERT_EQUAL(gw_wire_rec_put(buf, 26 + 15, &used, &r), -ENOSPC);
	CU_ASSERT_EQUAL(gw_wire_rec_put(buf, 26 + 16, &used, &r), 0);
	CU_ASSERT_EQUAL(used, 42);
	/* A used past cap is refused, not wrapped around. */
	used = 50;
	CU_ASSERT_EQUAL(gw_wire_rec_put(buf, 40, &used, &r), -ENOSPC);
	CU_ASSERT_EQUAL(used, 50);
}

/* Fill a payload until it refuses, then read every record back. */
static void test_rec_many(void)
{
	static uint8_t pl[8192];
	uint8_t data[300];
	size_t used = 0;
	unsigned n = 0;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	for (;;) {
		struct gw_rec r = {GW_RK_MSG, (uint16_t)(n * 7 % 300), n, (uint16_t)n, ~n, data};
		if (gw_wire_rec_put(pl, sizeof(pl), &used, &r) < 0)
			break;
		n++;
	}
	CU_ASSERT(n > 40);
	CU_ASSERT(sizeof(pl) - used < 16 + n * 7 % 300);

	size_t off = 0;
	unsigned k = 0, bad = 0;
	struct gw_rec r;
	int rc;
	while ((rc = gw_wire_rec_next(pl, used, &off, &r)) == 1) {
		bad += r.len != k * 7 % 300 || r.dst_ep != k || r.src_chan != (uint16_t)k ||
		       r.msg_id != ~k || memcmp(r.data, data, r.len) != 0;
		k++;
	}
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(k, n);
	CU_ASSERT_EQUAL(bad, 0);
}

/* Iterate a copy of p[0..len) held in exactly len bytes; the last result. */
static int rec_walk_exact(const uint8_t *p, size_t len, unsigned *nrec)
{
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, p, len);
	size_t off = 0;
	struct gw_rec r;
	int rc;
	*nrec = 0;
	while ((rc = gw_wire_rec_next(copy, len, &off, &r)) == 1)
		(*nrec)++;
	free(copy);
	return rc;
}

static void test_rec_malformed(void)
{
	uint8_t pl[64];
	size_t used = 0;
	uint8_t data[10];
	struct gw_rec r = {GW_RK_MSG, sizeof(data), 1, 2, 3, data};
	unsigned nrec, wrong = 0;

	memset(data, 'd', sizeof(data));
	CU_ASSERT_EQUAL_FATAL(gw_wire_rec_put(pl, sizeof(pl), &used, &r), 0);
	CU_ASSERT_EQUAL(rec_walk_exact(pl, used, &nrec), 0);
	CU_ASSERT_EQUAL(nrec, 1);
	CU_ASSERT_EQUAL(rec_walk_exact(pl, 0, &nrec), 0);
	CU_ASSERT_EQUAL(nrec, 0);

	/* Header or data cut at every length. */
	for (size_t len = 1; len < used; len++)
		wrong += rec_walk_exact(pl, len, &nrec) != -EBADMSG || nrec != 0;
	CU_ASSERT_EQUAL(wrong, 0);

	/* A valid record followed by a partial header. */
	pl[used] = 0;
	CU_ASSERT_EQUAL(rec_walk_exact(pl, used + 1, &nrec), -EBADMSG);
	CU_ASSERT_EQUAL(nrec, 1);

	/* len field past the end. */
	pl[0] = 11;
	CU_ASSERT_EQUAL(rec_walk_exact(pl, used, &nrec), -EBADMSG);
	pl[0] = 0xff;
	pl[1] = 0xff;
	CU_ASSERT_EQUAL(rec_walk_exact(pl, used, &nrec), -EBADMSG);
	pl[0] = 10;
	pl[1] = 0;

	/* Unknown kinds. */
	for (unsigned kind = 0; kind < 256; kind++) {
		pl[2] = (uint8_t)kind;
		int want = kind >= GW_RK_MSG && kind <= GW_RK_SUBS ? 0 : -EBADMSG;
		wrong += rec_walk_exact(pl, used, &nrec) != want;
	}
	CU_ASSERT_EQUAL(wrong, 0);
	pl[2] = GW_RK_MSG;

	/* An offset past the end is not read from. */
	size_t off = used + 1;
	struct gw_rec got;
	CU_ASSERT_EQUAL(gw_wire_rec_next(pl, used, &off, &got), -EBADMSG);
}

/* --- ACK and HELLO payloads ----------------------------------------------- */

static int ack_get_exact(const uint8_t *p, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, p, len);
	struct gw_ack a;
	int rc = gw_wire_ack_get(copy, len, &a);
	free(copy);
	return rc;
}

static void test_ack_malformed(void)
{
	uint8_t pl[64];
	struct gw_ack ack = {.acked_epoch = 1, .cum = 2, .nbits = 16};
	size_t len = gw_wire_ack_put(pl, &ack);
	unsigned wrong = 0;

	CU_ASSERT_EQUAL_FATAL(len, 14);
	CU_ASSERT_EQUAL(ack_get_exact(pl, len), 0);
	for (size_t l = 0; l < len; l++)
		wrong += ack_get_exact(pl, l) != -EBADMSG;
	CU_ASSERT_EQUAL(wrong, 0);
	/* Trailing bytes after the bitmap. */
	pl[len] = 0;
	CU_ASSERT_EQUAL(ack_get_exact(pl, len + 1), -EBADMSG);
	/* nbits not a multiple of 8. */
	pl[8] = 15;
	CU_ASSERT_EQUAL(ack_get_exact(pl, len), -EBADMSG);
	/* nbits past GW_SACK_BITS, with the bytes to match. */
	memset(pl + 12, 0, sizeof(pl) - 12);
	set_le16(pl + 8, GW_SACK_BITS + 8);
	CU_ASSERT_EQUAL(ack_get_exact(pl, 12 + GW_SACK_BITS / 8 + 1), -EBADMSG);
	set_le16(pl + 8, 0xfff8);
	CU_ASSERT_EQUAL(ack_get_exact(pl, sizeof(pl)), -EBADMSG);
	/* The bound itself is fine. */
	set_le16(pl + 8, GW_SACK_BITS);
	CU_ASSERT_EQUAL(ack_get_exact(pl, 12 + GW_SACK_BITS / 8), 0);
}

static int hello_get_exact(const uint8_t *p, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, p, len);
	struct gw_hello h;
	int rc = gw_wire_hello_get(copy, len, &h);
	free(copy);
	return rc;
}

static void test_hello_malformed(void)
{
	uint8_t pl[8 + 64];
	struct gw_hello hello = {.caps = 1, .interval_ms = 100, .name = "abc"};
	size_t len = gw_wire_hello_put(pl, &hello);
	unsigned wrong = 0;

	CU_ASSERT_EQUAL_FATAL(len, 11);
	CU_ASSERT_EQUAL(hello_get_exact(pl, len), 0);
	for (size_t l = 0; l < len; l++)
		wrong += hello_get_exact(pl, l) != -EBADMSG;
	CU_ASSERT_EQUAL(wrong, 0);
	pl[len] = 'd';
	CU_ASSERT_EQUAL(hello_get_exact(pl, len + 1), -EBADMSG);

	/* name_len 0, and GW_NAME_MAX (no room for the NUL) with bytes to match. */
	memset(pl + 8, 'n', sizeof(pl) - 8);
	pl[6] = 0;
	CU_ASSERT_EQUAL(hello_get_exact(pl, 8), -EBADMSG);
	pl[6] = GW_NAME_MAX;
	CU_ASSERT_EQUAL(hello_get_exact(pl, 8 + GW_NAME_MAX), -EBADMSG);
	pl[6] = 255;
	CU_ASSERT_EQUAL(hello_get_exact(pl, sizeof(pl)), -EBADMSG);
	pl[6] = GW_NAME_MAX - 1;
	CU_ASSERT_EQUAL(hello_get_exact(pl, 8 + GW_NAME_MAX - 1), 0);
	/* A NUL inside the name. */
	pl[8 + 4] = '\0';
	CU_ASSERT_EQUAL(hello_get_exact(pl, 8 + GW_NAME_MAX - 1), -EBADMSG);
}

/* --- garbage -------------------------------------------------------------- */

/* Make random bytes pass every check before the CRC: only it can catch them. */
static void dress_as_gridwire(uint8_t *f, size_t len)
{
	f[O_ETHTYPE] = 0x08;
	f[O_ETHTYPE + 1] = 0x00;
	f[O_IP] = 0x45;
	f[O_IP_FRAG] &= 0x40;
	f[O_IP_FRAG + 1] = 0;
	f[O_IP_PROTO] = 17;
	set_be16(f + O_IP_LEN, (uint16_t)(len - 14));
	set_be16(f + O_UDP_DPORT, B.port);
	set_be16(f + O_UDP_LEN, (uint16_t)(len - 34));
	f[O_GW] = 'G';
	f[O_GW + 1] = 'W';
	f[O_GW_VERSION] = GW_WIRE_VERSION;
	f[O_GW_TYPE] = (uint8_t)(1 + f[O_GW_TYPE] % 3);
	set_le32(f + O_GW_LEN, (uint32_t)(len - GW_FRAME_MIN));
}

static void test_random_frames(void)
{
	unsigned accepted = 0, crc_rejects = 0, dressed = 0;
	struct gw_hdr h;
	const uint8_t *pl;

	rng_state = 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < 100000; i++) {
		size_t len = rng() % 4 ? rng() % 200 : rng() % 1600;
		uint8_t *f = malloc(len ? len : 1);
		for (size_t k = 0; k < len; k++)
			f[k] = (uint8_t)rng();
		bool dress = len >= GW_FRAME_MIN && (i & 1);
		if (dress)
			dress_as_gridwire(f, len);
		int rc = gw_wire_parse(f, len, B.port, &h, &pl, NULL);
		accepted += rc == 0;
		if (dress) {
			dressed++;
			crc_rejects += rc == GW_EWIRE_CRC;
		}
		free(f);
	}
	CU_ASSERT_EQUAL(accepted, 0);
	/* The dressed half reached the CRC check and failed only there. */
	CU_ASSERT(dressed > 30000);
	CU_ASSERT_EQUAL(crc_rejects, dressed);
}

/* Random edits of the CRC-covered bytes of a valid frame. */
static void test_random_corruption(void)
{
	uint8_t orig[512];
	struct gw_hdr h;
	size_t n = build_data(orig, &h);
	unsigned accepted = 0;

	rng_state = 42;
	for (unsigned i = 0; i < 20000; i++) {
		memcpy(frame, orig, n);
		unsigned edits = 1 + rng() % 4;
		for (unsigned e = 0; e < edits; e++)
			frame[O_GW + rng() % (n - O_GW)] ^= (uint8_t)(1 + rng() % 255);
		if (memcmp(frame, orig, n) == 0)
			continue; /* edits cancelled out */
		accepted += parse_exact(frame, n, &h, NULL) == 0;
	}
	CU_ASSERT_EQUAL(accepted, 0);
}

/* Random payloads through every payload decoder: bounded, and terminating. */
static void test_random_payloads(void)
{
	unsigned escaped = 0, nrec = 0;

	rng_state = 7;
	for (unsigned i = 0; i < 50000; i++) {
		size_t len = rng() % 96;
		uint8_t *p = malloc(len ? len : 1);
		/* Mostly 0, 1 and 2: short lengths and valid kinds, so records occur. */
		for (size_t k = 0; k < len; k++) {
			uint64_t x = rng();
			p[k] = (uint8_t)(x % 4 == 0 ? x >> 8 : x % 4 == 1 ? 1 + (x >> 8) % 2 : 0);
		}
		size_t off = 0;
		struct gw_rec r;
		while (gw_wire_rec_next(p, len, &off, &r) == 1) {
			escaped += r.data < p || r.data + r.len > p + len || off > len;
			nrec++;
		}
		struct gw_ack a;
		struct gw_hello hl;
		if (gw_wire_ack_get(p, len, &a) == 0)
			escaped += a.nbits > GW_SACK_BITS;
		if (gw_wire_hello_get(p, len, &hl) == 0)
			escaped += strlen(hl.name) == 0 || strlen(hl.name) >= GW_NAME_MAX;
		free(p);
	}
	CU_ASSERT_EQUAL(escaped, 0);
	CU_ASSERT(nrec > 1000); /* the garbage did hold records: the checks ran */
}

static void test_strerror(void)
{
	const int codes[] = {GW_EWIRE_SHORT, GW_EWIRE_NOTGW, GW_EWIRE_VERSION, GW_EWIRE_CRC,
			     -ENOSPC};
	const size_t n = sizeof(codes) / sizeof(codes[0]);

	for (size_t i = 0; i < n; i++) {
		const char *s = gw_wire_strerror(codes[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		CU_ASSERT(strlen(s) > 0);
		for (size_t j = 0; j < i; j++)
			CU_ASSERT(strcmp(s, gw_wire_strerror(codes[j])) != 0);
	}
	CU_ASSERT_PTR_NOT_NULL(gw_wire_strerror(-12345));
	CU_ASSERT_STRING_EQUAL(gw_wire_strerror(0), "success");
}

/* A REJECT's data is little-endian on the wire, whatever the host. */
static void test_reject_body(void)
{
	uint8_t b[GW_REJECT_LEN + 1];
	memset(b, 0xee, sizeof(b));
	gw_wire_reject_put(b, &(struct gw_reject_body){ .err = -ENOBUFS, .msg_id = 0x01020304,
							 .node = 0x0506 });
	static const uint8_t want[GW_REJECT_LEN] = { 0x97, 0xff, 0xff, 0xff, 4, 3, 2, 1, 6, 5, 0, 0 };
	CU_ASSERT(memcmp(b, want, sizeof(want)) == 0);
	CU_ASSERT_EQUAL(b[GW_REJECT_LEN], 0xee); /* nothing past it */
	struct gw_reject_body rj;
	CU_ASSERT_EQUAL(gw_wire_reject_get(b, GW_REJECT_LEN, &rj), 0);
	CU_ASSERT(rj.err == -ENOBUFS && rj.msg_id == 0x01020304 && rj.node == 0x0506);
	CU_ASSERT_EQUAL(gw_wire_reject_get(b, GW_REJECT_LEN - 1, &rj), -EBADMSG);
}

/* A topic advertisement in records: exact bytes, and every bad one refused. */
static void test_subs_body(void)
{
	char names[3][GW_NAME_MAX] = { "volts", "freq", "" };
	memset(names[2], 'n', GW_NAME_MAX); /* not ended: sent as its first 31 bytes */
	uint32_t ids[3] = { 0x11223344, 7, 9 };
	uint8_t b[GW_SUBS_HLEN + 3 * GW_SUBS_ENTRY + 1];
	memset(b, 0xee, sizeof(b));
	size_t len = gw_wire_subs_put(b, sizeof(b) - 1, 0x01020304, 10, 4, names, ids, 3);
	CU_ASSERT_EQUAL_FATAL(len, GW_SUBS_HLEN + 3 * GW_SUBS_ENTRY);
	static const uint8_t head[12] = { 4, 3, 2, 1, 10, 0, 4, 0, 0x44, 0x33, 0x22, 0x11 };
	CU_ASSERT(memcmp(b, head, sizeof(head)) == 0);
	CU_ASSERT(!memcmp(b + 12, "volts", 6) && b[12 + GW_NAME_MAX - 1] == 0);
	CU_ASSERT_EQUAL(b[sizeof(b) - 1], 0xee); /* nothing past it */
	struct gw_subs_hdr h;
	char got[3][GW_NAME_MAX];
	uint32_t gid[3];
	CU_ASSERT_EQUAL_FATAL(gw_wire_subs_get(b, len, &h, got, gid, 3), 0);
	CU_ASSERT(h.version == 0x01020304 && h.total == 10 && h.first == 4 && h.n == 3);
	CU_ASSERT(gid[0] == 0x11223344 && gid[1] == 7 && !strcmp(got[1], "freq"));
	CU_ASSERT_EQUAL(strlen(got[2]), GW_NAME_MAX - 1);
	/* Refused: no room, past total, more than max, a cut entry, id 0, a
	 * name not ended. */
	CU_ASSERT_EQUAL(gw_wire_subs_put(b, len - 1, 1, 10, 4, names, ids, 3), 0);
	CU_ASSERT_EQUAL(gw_wire_subs_put(b, sizeof(b), 1, 6, 4, names, ids, 3), 0);
	CU_ASSERT_EQUAL(gw_wire_subs_get(b, len, &h, got, gid, 2), -EBADMSG);
	CU_ASSERT_EQUAL(gw_wire_subs_get(b, len - 1, &h, got, gid, 3), -EBADMSG);
	CU_ASSERT_EQUAL(gw_wire_subs_get(b, GW_SUBS_HLEN - 1, &h, got, gid, 3), -EBADMSG);
	b[4] = 6; /* total 6 < 4 + 3 */
	CU_ASSERT_EQUAL(gw_wire_subs_get(b, len, &h, got, gid, 3), -EBADMSG);
	b[4] = 10;
	memset(b + GW_SUBS_HLEN + GW_SUBS_ENTRY, 0, 4); /* the second id 0 */
	CU_ASSERT_EQUAL(gw_wire_subs_get(b, len, &h, got, gid, 3), -EBADMSG);
	b[GW_SUBS_HLEN + GW_SUBS_ENTRY] = 7;
	memset(b + GW_SUBS_HLEN + 4, 'x', GW_NAME_MAX);
	CU_ASSERT_EQUAL(gw_wire_subs_get(b, len, &h, got, gid, 3), -EBADMSG);
	/* An empty advertisement: a node with no topics. */
	CU_ASSERT_EQUAL(gw_wire_subs_put(b, sizeof(b), 2, 0, 0, NULL, NULL, 0), GW_SUBS_HLEN);
	CU_ASSERT_EQUAL(gw_wire_subs_get(b, GW_SUBS_HLEN, &h, got, gid, 3), 0);
	CU_ASSERT(h.version == 2 && h.total == 0 && h.n == 0);
}

/* A frame sent again gets the current base, still passes its CRC, and
 * nothing else in it changes. */
static void test_restamp_base(void)
{
	static uint8_t f[2048], g[2048];
	struct gw_hdr h, got;
	const uint8_t *pl;
	size_t n = build_data(f, &h);
	memcpy(g, f, n);
	CU_ASSERT_EQUAL(gw_wire_base(f), h.base);
	gw_wire_restamp_base(f, 0x80000001);
	CU_ASSERT_EQUAL(gw_wire_base(f), 0x80000001);
	CU_ASSERT_EQUAL_FATAL(parse_exact(f, n, &got, &pl), 0);
	CU_ASSERT(got.base == 0x80000001 && got.seq == h.seq && got.epoch == h.epoch &&
		  got.len == h.len && got.nrec == h.nrec);
	CU_ASSERT(memcmp(f + GW_FRAME_MIN, g + GW_FRAME_MIN, n - GW_FRAME_MIN) == 0);
	/* Without the new CRC the changed base would be caught. */
	f[GW_OUTER_HLEN + 20] ^= 1;
	CU_ASSERT_EQUAL(parse_exact(f, n, &got, &pl), GW_EWIRE_CRC);
}

/* The DSCP goes in the IP header with a checksum that still adds up, and
 * outside the CRC: a switch that marks again leaves the frame good. */
static void test_dscp(void)
{
	static uint8_t f[2048];
	struct gw_hdr h, got;
	const uint8_t *pl;
	size_t n = build_data(f, &h);
	gw_wire_set_dscp(f, 46);
	CU_ASSERT_EQUAL(f[GW_ETH_HLEN + 1], 0xb8);
	uint32_t sum = 0;
	for (unsigned i = 0; i < GW_IP_HLEN; i += 2)
		sum += get_be16_t(f + GW_ETH_HLEN + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	CU_ASSERT_EQUAL(sum, 0xffff);
	CU_ASSERT_EQUAL(parse_exact(f, n, &got, &pl), 0);
	f[GW_ETH_HLEN + 1] = 0x20; /* CS1, as a switch may remark */
	CU_ASSERT_EQUAL(parse_exact(f, n, &got, &pl), 0);
}

static const struct gw_test_case cases[] = {
	{"restamp base on retransmission", test_restamp_base},
	{"DSCP set, outside the CRC", test_dscp},
	{"REJECT data: layout and bounds", test_reject_body},
	{"SUBS data: layout and bounds", test_subs_body},
	{"crc32c known vectors", test_crc_vectors},
	{"crc32c chaining", test_crc_chaining},
	{"crc32c sse4.2, table and reference agree", test_crc_kernels_agree},
	{"crc32c 3-way shift constants", test_crc_shift_constants},
	{"crc32c every length 0..5000 and alignment", test_crc_fast_sweep},
	{"crc32c no read past the buffer", test_crc_fast_tail_reads},
	{"crc32c random chained splits", test_crc_fast_chained_splits},
	{"DATA seal/parse round trip", test_data_round_trip},
	{"DATA byte layout", test_data_layout},
	{"ACK round trip", test_ack_round_trip},
	{"HELLO round trip", test_hello_round_trip},
	{"largest frame", test_frame_max},
	{"truncation at every length", test_parse_truncated},
	{"corrupted fields", test_parse_corrupt_fields},
	{"inconsistent lengths", test_parse_bad_lengths},
	{"rec_put space", test_rec_put_space},
	{"records fill and iterate", test_rec_many},
	{"malformed records", test_rec_malformed},
	{"malformed ACK", test_ack_malformed},
	{"malformed HELLO", test_hello_malformed},
	{"random frames never accepted", test_random_frames},
	{"random corruption caught by CRC", test_random_corruption},
	{"random payloads stay in bounds", test_random_payloads},
	{"strerror", test_strerror},
	{NULL, NULL},
};

int main(void)
{
	return gw_test_run("wire", cases);
}
