/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The limit role: what this machine can do at all for messages moved
 * between two cores, with nothing but the copies a gateway pair cannot
 * avoid. One thread on CPU 0 copies messages from a source arena into
 * frames (16-byte record header and payload, as the worker packs), the
 * frames go to a thread on CPU 1 through a ring of slots, and that thread
 * copies each payload into a destination arena and writes a 16-byte
 * descriptor (as the receiver delivers). No CRC, no lanes, no acks, no
 * port, no client: every message crosses the cores once, in a frame.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_node.h" /* gw_clock_ns */
#include "limit.h"

#define SLOTS 64          /* frames in flight between the cores */
#define ARENA (1u << 20)  /* source and destination arenas */
#define DESCS 4096        /* destination descriptors */
#define REC_HLEN 16

struct slot {
	alignas(64) uint32_t full; /* 1: written by the producer, not yet taken */
	uint32_t nrec;
	alignas(64) uint8_t frame[9000];
};

struct desc {
	uint32_t pos, len, ep, id;
};

struct pipe {
	struct slot *slot;
	uint8_t *src, *dst; /* the arenas, ARENA bytes each */
	struct desc *ring;  /* DESCS descriptors */
	unsigned size, payload_max;
	uint64_t msgs; /* to move */
	uint64_t ns;   /* the consumer's time, first frame to last */
	uint64_t sum;  /* read from the destination, so the copies stay */
	uint32_t stop; /* the producer never started: the consumer gives up */
};

static void pin(unsigned cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *produce(void *arg)
{
	struct pipe *p = arg;
	pin(0);
	const uint8_t *src = p->src;
	uint32_t at = 0;
	uint64_t k = 0;
	for (unsigned s = 0; k < p->msgs; s = (s + 1) % SLOTS) {
		struct slot *sl = &p->slot[s];
		while (__atomic_load_n(&sl->full, __ATOMIC_ACQUIRE))
			__builtin_ia32_pause();
		size_t used = 0;
		uint32_t n = 0;
		for (; k < p->msgs && used + REC_HLEN + p->size <= p->payload_max; k++, n++) {
			if (at + p->size > ARENA)
				at = 0;
			uint32_t h[4] = { p->size, 1, (uint32_t)k, 0 };
			memcpy(sl->frame + used, h, REC_HLEN);
			memcpy(sl->frame + used + REC_HLEN, src + at, p->size);
			used += REC_HLEN + p->size;
			at += p->size;
		}
		sl->nrec = n;
		__atomic_store_n(&sl->full, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *consume(void *arg)
{
	struct pipe *p = arg;
	pin(1);
	uint8_t *dst = p->dst;
	struct desc *ring = p->ring;
	uint32_t head = 0, pos = 0;
	uint64_t k = 0, t0 = 0;
	for (unsigned s = 0; k < p->msgs; s = (s + 1) % SLOTS) {
		struct slot *sl = &p->slot[s];
		while (!__atomic_load_n(&sl->full, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED))
				return NULL;
			__builtin_ia32_pause();
		}
		if (!t0)
			t0 = gw_clock_ns();
		const uint8_t *f = sl->frame;
		for (uint32_t i = 0; i < sl->nrec; i++, k++) {
			uint32_t h[4];
			memcpy(h, f, REC_HLEN);
			if (head + h[0] > ARENA)
				head = 0;
			memcpy(dst + head, f + REC_HLEN, h[0]);
			ring[pos++ % DESCS] = (struct desc){ .pos = head, .len = h[0], .ep = h[1], .id = h[2] };
			head += h[0];
			f += REC_HLEN + h[0];
		}
		__atomic_store_n(&sl->full, 0, __ATOMIC_RELEASE);
	}
	p->ns = gw_clock_ns() - t0;
	p->sum = dst[0] + ring[0].len;
	return NULL;
}

int limit_run(unsigned size, unsigned payload_max, uint64_t *msgs, uint64_t *frames, uint64_t *ns)
{
	if (size + REC_HLEN > payload_max || payload_max > sizeof(((struct slot *)0)->frame))
		return -1;
	struct pipe p = {
		.size = size, .payload_max = payload_max, .msgs = 8000000,
		.slot = aligned_alloc(64, SLOTS * sizeof(struct slot)),
		.src = aligned_alloc(64, ARENA), .dst = aligned_alloc(64, ARENA),
		.ring = aligned_alloc(64, DESCS * sizeof(struct desc)),
	};
	int rc = -1;
	pthread_t a, b;
	if (p.slot && p.src && p.dst && p.ring) {
		/* Written once here, so neither thread's first pass faults pages in. */
		memset(p.slot, 0, SLOTS * sizeof(struct slot));
		memset(p.src, 7, ARENA);
		memset(p.dst, 0, ARENA);
		memset(p.ring, 0, DESCS * sizeof(struct desc));
		if (pthread_create(&b, NULL, consume, &p) == 0) {
			if (pthread_create(&a, NULL, produce, &p) == 0) {
				pthread_join(a, NULL);
				rc = 0;
			} else {
				__atomic_store_n(&p.stop, 1, __ATOMIC_RELAXED);
			}
			pthread_join(b, NULL);
		}
	}
	free(p.slot);
	free(p.src);
	free(p.dst);
	free(p.ring);
	if (rc < 0)
		return rc;
	unsigned per_frame = payload_max / (REC_HLEN + size);
	*msgs = p.msgs;
	*frames = (p.msgs + per_frame - 1) / per_frame;
	*ns = p.ns ? p.ns : 1;
	return p.sum == 0xffffffffu; /* never: keeps the copies */
}
