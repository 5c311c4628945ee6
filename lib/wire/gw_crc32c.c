/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_crc32c: CRC32C (Castagnoli), reflected polynomial 0x82F63B78, initial
 * value and final xor 0xFFFFFFFF. The SSE4.2 crc32 instruction computes
 * exactly this polynomial; a byte table is the fallback for CPUs without it.
 * Long buffers, when PCLMULQDQ is there too, run three crc32 chains at once
 * (see crc32c_hw3); with AVX-512's VPCLMULQDQ, a frame is folded 256 bytes
 * a step by carry-less multiplies (crc32c_fold). The kernel is chosen on
 * the first call.
 */
#include <stdint.h>
#include <string.h>

#ifdef __x86_64__
#include <immintrin.h>
#include <nmmintrin.h>
#include <wmmintrin.h>
#endif

#include "gw_wire.h"

typedef uint32_t crc32c_fn(uint32_t crc, const uint8_t *p, size_t len);

/*
 * crc32c_table[b]: the register after shifting byte b through it, i.e. b
 * followed by eight rounds of (c >> 1) ^ (c & 1 ? 0x82F63B78 : 0).
 * Constant so that the fallback needs no initialisation (nor locking).
 */
static const uint32_t crc32c_table[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c,
	0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
	0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54, 0x5d1d08bf, 0xaf768bbc,
	0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512,
	0x4b5fa6e6, 0xb93425e5, 0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
	0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595, 0x417b1dbc, 0xb3109ebf,
	0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f,
	0xed03a29b, 0x1f682198, 0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
	0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096, 0xa65c047d, 0x5437877e,
	0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e,
	0x90a324fa, 0x62c8a7f9, 0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
	0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93, 0x082f63b7, 0xfa44e0b4,
	0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b,
	0xb4091bff, 0x466298fc, 0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
	0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d, 0xef087a76, 0x1d63f975,
	0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905,
	0xd9f75af1, 0x2b9cd9f2, 0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
	0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8,
	0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78,
	0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
	0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81, 0x34f4f86a, 0xc69f7b69,
	0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

/* Both kernels work on the raw register: no init/final xor here. */
static uint32_t crc32c_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = (crc >> 8) ^ crc32c_table[(crc ^ *p++) & 0xff];
	return crc;
}

#ifdef __x86_64__
/* The target attribute lets this build even without -msse4.2. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p,
							     size_t len)
{
	uint64_t c = crc;
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;
		memcpy(&v, p, sizeof(v)); /* unaligned load */
		c = _mm_crc32_u64(c, v);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}
#endif


#ifdef __x86_64__
/*
 * Three chains. One crc32 chain is bound by the instruction's latency
 * (3 cycles per 8 bytes) while the CPU can issue one per cycle, so the
 * 3-way kernel cuts a stretch of the buffer into three adjacent blocks
 * A, B, C of blk bytes, runs a chain over each (A from the incoming
 * register, B and C from 0) and merges. Since the register is linear,
 *
 *	crc(A||B||C) = shift(a, 2*blk) ^ shift(b, blk) ^ c,
 *
 * with shift(r, n) = r * x^(8n) mod P the register r after n zero bytes.
 *
 * Shifting with a carry-less multiply: in reflected form (bit i of a 32-bit
 * register is the coefficient of x^(31-i)), clmul(r, k) of two such values
 * read as 64 bits of message (bit j <-> x^(63-j)) is r*k*x, and
 * crc32_u64(0, v) is v*x^32 mod P, so crc32_u64(0, clmul(r, k)) is
 * r*k*x^33 mod P. With k = x^(8n-33) mod P that is shift(r, n). The final
 * crc32_u64 need not be a separate step: chain C stops 8 bytes short and
 * the two products are xored into its last 8 bytes of message.
 *
 * crc32c_shift[i] = x^(64*(i+1) - 33) mod P, reflected: the k for shifting
 * by n = 8*(i+1) bytes, n = 8..2048. Generated by stepping the bitwise CRC
 * from x^0 (bit 31), each step a multiplication by x:
 *
 *	uint32_t r = 0x80000000; unsigned k = 0;
 *	for (int i = 0; i < 256; i++) {
 *		for (; k < 64 * (i + 1) - 33; k++)
 *			r = (r >> 1) ^ (0x82F63B78 & -(r & 1));
 *		printf("0x%08x, ", r);
 *	}
 *
 * (entry 1, x^95, is the familiar 0x493c7d27). The unit test recomputes them.
 */
static const uint32_t crc32c_shift[256] = {
	0x00000001, 0x493c7d27, 0xf20c0dfe, 0xba4fc28e, 0x3da6d0cb, 0xddc0152b,
	0x1c291d04, 0x9e4addf8, 0x740eef02, 0x39d3b296, 0x083a6eec, 0x0715ce53,
	0xc49f4f67, 0x47db8317, 0x2ad91c30, 0x0d3b6092, 0x6992cea2, 0xc96cfdc0,
	0x7e908048, 0x878a92a7, 0x1b3d8f29, 0xdaece73e, 0xf1d0f55e, 0xab7aff2a,
	0xa87ab8a8, 0x2162d385, 0x8462d800, 0x83348832, 0x71d111a8, 0x299847d5,
	0xffd852c6, 0xb9e02b86, 0xdcb17aa4, 0x18b33a4e, 0xf37c5aee, 0xb6dd949b,
	0x6051d5a2, 0x78d9ccb7, 0x18b0d4ff, 0xbac2fd7b, 0x21f3d99c, 0xa60ce07b,
	0x8f158014, 0xce7f39f4, 0xa00457f7, 0x61d82e56, 0x8d6d2c43, 0xd270f1a2,
	0x00ac29cf, 0xc619809d, 0xe9adf796, 0x2b3cac5d, 0x96638b34, 0x65863b64,
	0xe0e9f351, 0x1b03397f, 0x9af01f2d, 0xebb883bd, 0x2cff42cf, 0xb3e32c28,
	0x88f25a3a, 0x064f7f26, 0x4e36f0b0, 0xdd7e3b0c, 0xbd6f81f8, 0xf285651c,
	0x91c9bd4b, 0x10746f3c, 0x885f087b, 0xc7a68855, 0x4c144932, 0x271d9844,
	0x52148f02, 0x8e766a0c, 0xa3c6f37a, 0x93a5f730, 0xd7c0557f, 0x6cb08e5c,
	0x63ded06a, 0x6b749fb2, 0x4d56973c, 0x1393e203, 0x9669c9df, 0xcec3662e,
	0xe417f38a, 0x96c515bb, 0x4b9e0f71, 0xe6fc4e6a, 0xd104b8fc, 0x8227bb8a,
	0x5b397730, 0xb0cd4768, 0xe78eb416, 0x39c7ff35, 0x61ff0e01, 0xd7a4825c,
	0x8d96551c, 0x0ab3844b, 0x0bf80dd2, 0x0167d312, 0x8821abed, 0xf6076544,
	0x6a45d2b2, 0x26f6a60a, 0xd8d26619, 0xa741c1bf, 0xde87806c, 0x98d8d9cb,
	0x14338754, 0x49c3cc9c, 0x5bd2011f, 0x68bce87a, 0xdd07448e, 0x57a3d037,
	0xdde8f5b9, 0x6956fc3b, 0xa3e3e02c, 0x42d98888, 0xd73c7bea, 0x3771e98f,
	0x80ff0093, 0xb42ae3d9, 0x8fe4c34d, 0x2178513a, 0xdf99fc11, 0xe0ac139e,
	0x6c23e841, 0x170076fa, 0xfe314258, 0x444dd413, 0x0d8373a0, 0x6f345e45,
	0x19e3635e, 0x41d17b64, 0x29f268b4, 0xff0dba97, 0x1dc0632a, 0xa2b73df1,
	0x1614f396, 0xf872e54c, 0x9e2993d3, 0x1e41e9fc, 0x6bebd73c, 0x86d8e4d2,
	0x63ae91e6, 0x651bd98b, 0xf8c9da7a, 0x5bb8f1bc, 0x945a19c1, 0xa90fd27a,
	0xee8213b7, 0xb3af077a, 0x93781dc7, 0x4984d782, 0xccc4a1b9, 0xca6ef3ac,
	0xa2c2d971, 0x234e0b26, 0x1cad4452, 0xdd66cbbb, 0x74922601, 0x4597456a,
	0xc55f7eab, 0xe9e28eb4, 0xa1962329, 0x7b3ff57a, 0x2d370749, 0xc9c8b782,
	0x397d84a1, 0x3f70cc6f, 0x79113270, 0x93e106a4, 0xbc817803, 0x62ec6c6d,
	0x88eb3c07, 0xd813b325, 0x6e4cb630, 0x0df04680, 0x71971d5c, 0x2342001e,
	0xf33b8bc6, 0x0a2a8d7e, 0x9fb3bbc0, 0x6d9a4957, 0x6ef22b23, 0xe8b6368b,
	0xce2df768, 0xd2c3ed1a, 0xe53a4fc7, 0x995a5724, 0xbe60a91a, 0x9ef68d35,
	0x1dfa0a15, 0x0c139b31, 0x8ec52396, 0xf2271e60, 0x0e766b11, 0x0b0bf8ca,
	0x475846a4, 0x2664fd8b, 0xb2a3dfa6, 0xed64812d, 0xdc1a160c, 0x02ee03b2,
	0x79afdf1c, 0x8604ae0f, 0x07ac6e46, 0x363bd6b3, 0x15f85253, 0x135c83fd,
	0x1bec24dd, 0x5fabe670, 0x4c36cd5b, 0x35ec3279, 0xe0a22e29, 0x00bcf5f6,
	0x7c2b6ed9, 0x8ae00689, 0x06ff88fd, 0x17f27698, 0xf7317cf0, 0x58ca5f00,
	0x61b6e40b, 0xaa7c7ad5, 0xde8a97f8, 0xb5cfca28, 0x88f61445, 0xded288f8,
	0xd4520e9e, 0x59f229bc, 0x0c592bd5, 0x6d390dec, 0x38edfaf3, 0x37170390,
	0x72cbfcdb, 0x6353c1cc, 0x348331a5, 0xc4584f5c, 0xc3977c19, 0xf48642e9,
	0xdafaea7c, 0x531377e2, 0x73db4c04, 0xdd35bc8d, 0x72675ce8, 0xb25b29f2,
	0x3ec2ff83, 0x9a5ede41, 0xe8c7a017, 0xa563905d, 0xcf4bfaef, 0x45cddf4e,
	0x6bde1ac7, 0xacfa3103, 0xae1175c2, 0xa51b6135,
};

/* Largest block: a round of 3 x 1024 bytes. Shifts reach 2048 bytes. */
#define CRC32C_BLK_MAX 1024
/* Shorter buffers take one chain: measured faster below ~96 bytes (the merge costs ~20 cycles). */
#define CRC32C_3WAY_MIN 128

static inline uint64_t crc32c_load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v)); /* unaligned load */
	return v;
}

/* One round: the register after p[0 .. 3*blk), blk a multiple of 8 in 8..BLK_MAX. */
__attribute__((target("sse4.2,pclmul"), always_inline)) static inline uint32_t
crc32c_round3(uint32_t crc, const uint8_t *p, size_t blk)
{
	const uint8_t *pa = p, *pb = p + blk, *pc = p + 2 * blk;
	const uint8_t *end = pa + blk - 8;
	uint64_t a = crc, b = 0, c = 0;

	for (; pa < end; pa += 8, pb += 8, pc += 8) {
		a = _mm_crc32_u64(a, crc32c_load64(pa));
		b = _mm_crc32_u64(b, crc32c_load64(pb));
		c = _mm_crc32_u64(c, crc32c_load64(pc));
	}
	a = _mm_crc32_u64(a, crc32c_load64(pa));
	b = _mm_crc32_u64(b, crc32c_load64(pb));

	/* a by 2*blk bytes (low half of k), b by blk bytes (high half). */
	__m128i k = _mm_set_epi64x(crc32c_shift[blk / 8 - 1], crc32c_shift[blk / 4 - 1]);
	__m128i ab = _mm_set_epi64x((long long)b, (long long)a);
	__m128i m = _mm_xor_si128(_mm_clmulepi64_si128(ab, k, 0x00),
				  _mm_clmulepi64_si128(ab, k, 0x11));
	uint64_t v = crc32c_load64(pc) ^ (uint64_t)_mm_cvtsi128_si64(m);
	return (uint32_t)_mm_crc32_u64(c, v);
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc32c_hw3(uint32_t crc,
								    const uint8_t *p, size_t len)
{
	for (; len >= 3 * CRC32C_BLK_MAX; len -= 3 * CRC32C_BLK_MAX, p += 3 * CRC32C_BLK_MAX)
		crc = crc32c_round3(crc, p, CRC32C_BLK_MAX);
	/* The rest in one round of the largest blocks that fit: < 24 bytes left. */
	if (len >= CRC32C_3WAY_MIN) {
		size_t blk = len / 24 * 8;
		crc = crc32c_round3(crc, p, blk);
		p += 3 * blk;
		len -= 3 * blk;
	}
	return crc32c_hw(crc, p, len);
}

/*
 * Folding, for long buffers (a received frame is checked before anything
 * else reads it, so this pass is the one that pulls it from memory). A
 * 16-byte chunk A of message, F bits ahead of a chunk C, adds A * x^F to
 * C's place; mod P that is a polynomial of degree < 128, so A can be
 * replaced by it, xored into C. In the reading of crc32c_hw3's comment,
 * A's low qword q0 is the coefficient of x^64 and its high qword q1 of x^0,
 * and clmul(q, k) read as 128 bits of message is q*k*x. So
 *
 *	fold(A) = clmul(q0, k0) ^ clmul(q1, k1),
 *	k0 = x^(F+63) mod P, k1 = x^(F-1) mod P,
 *
 * and a 32-bit reflected constant r held in a qword reads as r*x^32, so
 * k0 = crc32c_shift[F/64] and k1 = crc32c_shift[F/64 - 1] as they are.
 * Four 512-bit accumulators (sixteen chunks) each fold F = 2048 bits ahead
 * per step; they are then folded into the last one (F = 512), its four
 * chunks into its last (F = 384, 256, 128), and that chunk's 16 bytes,
 * with the incoming register xored into the first 4 bytes of message at the
 * start, are the register crc32_u64 finishes from 0. The tail (< 256 bytes)
 * goes on in crc32c_hw3.
 */
#define CRC32C_FOLD_MIN 512

__attribute__((target("avx512f,vpclmulqdq"), always_inline)) static inline __m512i
crc32c_fold512(__m512i a, __m512i k, __m512i c)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
					 _mm512_clmulepi64_epi128(a, k, 0x11), c, 0x96);
}

/* k0 (low qword) and k1 (high) for a fold of f_bits. */
__attribute__((target("sse4.2"), always_inline)) static inline __m128i
crc32c_fold_k(unsigned f_bits)
{
	return _mm_set_epi64x(crc32c_shift[f_bits / 64 - 1], crc32c_shift[f_bits / 64]);
}

__attribute__((target("sse4.2,pclmul"), always_inline)) static inline __m128i
crc32c_fold128(__m128i a, unsigned f_bits)
{
	__m128i k = crc32c_fold_k(f_bits);
	return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

__attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"))) static uint32_t
crc32c_fold(uint32_t crc, const uint8_t *p, size_t len)
{
	if (len < CRC32C_FOLD_MIN)
		return crc32c_hw3(crc, p, len);
	const __m512i k2048 = _mm512_broadcast_i32x4(crc32c_fold_k(2048));
	const __m512i k512 = _mm512_broadcast_i32x4(crc32c_fold_k(512));
	__m512i a0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
	__m512i a1 = _mm512_loadu_si512(p + 64), a2 = _mm512_loadu_si512(p + 128);
	__m512i a3 = _mm512_loadu_si512(p + 192);
	for (p += 256, len -= 256; len >= 256; p += 256, len -= 256) {
		a0 = crc32c_fold512(a0, k2048, _mm512_loadu_si512(p));
		a1 = crc32c_fold512(a1, k2048, _mm512_loadu_si512(p + 64));
		a2 = crc32c_fold512(a2, k2048, _mm512_loadu_si512(p + 128));
		a3 = crc32c_fold512(a3, k2048, _mm512_loadu_si512(p + 192));
	}
	a3 = crc32c_fold512(crc32c_fold512(crc32c_fold512(a0, k512, a1), k512, a2), k512, a3);
	__m128i r = _mm_xor_si128(_mm512_extracti32x4_epi32(a3, 3),
				  crc32c_fold128(_mm512_extracti32x4_epi32(a3, 0), 384));
	r = _mm_xor_si128(r, crc32c_fold128(_mm512_extracti32x4_epi32(a3, 1), 256));
	r = _mm_xor_si128(r, crc32c_fold128(_mm512_extracti32x4_epi32(a3, 2), 128));
	uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
	c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(r, 1));
	return crc32c_hw3((uint32_t)c, p, len);
}
#endif

static uint32_t crc32c_pick(uint32_t crc, const uint8_t *p, size_t len);

/* Starts at the picker, which replaces itself with the right kernel. */
static crc32c_fn *crc32c_impl = crc32c_pick;

static uint32_t crc32c_pick(uint32_t crc, const uint8_t *p, size_t len)
{
	crc32c_fn *fn = crc32c_sw;
#ifdef __x86_64__
	__builtin_cpu_init(); /* we may be called before the constructor that does it */
	if (__builtin_cpu_supports("sse4.2")) {
		if (!__builtin_cpu_supports("pclmul"))
			fn = crc32c_hw;
		else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq"))
			fn = crc32c_fold;
		else
			fn = crc32c_hw3;
	}
#endif
	/* Racing first callers all store the same value. */
	__atomic_store_n(&crc32c_impl, fn, __ATOMIC_RELAXED);
	return fn(crc, p, len);
}

uint32_t gw_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc32c_fn *fn = __atomic_load_n(&crc32c_impl, __ATOMIC_RELAXED);
	return ~fn(~crc, buf, len);
}
