/* SPDX-License-Identifier: BSD-3-Clause */
/* fz_input: fuzzer bytes as a stream of fields; reads past the end give zeros. */
#ifndef FZ_INPUT_H
#define FZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct fz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t rd8(struct fz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t rd16(struct fz_in *in)
{
	uint16_t lo = rd8(in);
	return (uint16_t)(lo | rd8(in) << 8);
}

static inline uint32_t rd32(struct fz_in *in)
{
	uint32_t lo = rd16(in);
	return lo | (uint32_t)rd16(in) << 16;
}

#endif
