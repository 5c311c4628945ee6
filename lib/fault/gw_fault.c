/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_fault: seeded per-frame fault decisions and a delay queue. */
#include <string.h>

#include "gw_fault.h"

/* xorshift64*: small, fast, and the same sequence for the same seed. */
static uint64_t next(struct gw_fault *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 0x2545F4914F6CDD1Dull;
}

void gw_fault_init(struct gw_fault *f, const struct gw_fault_conf *conf)
{
	memset(f, 0, sizeof(*f));
	f->conf = *conf;
	f->rng = conf->seed ? conf->seed : 1;
}

enum gw_fault_verdict gw_fault_decide(struct gw_fault *f)
{
	const struct gw_fault_conf *c = &f->conf;
	uint32_t r = (uint32_t)(next(f) % 1000000);
	enum gw_fault_verdict v = GW_FAULT_PASS;
	/* One draw, split into bands: the rates add up, never overlap. */
	if (r < c->drop_ppm)
		v = GW_FAULT_DROP;
	else if ((r -= c->drop_ppm) < c->dup_ppm)
		v = GW_FAULT_DUP;
	else if ((r -= c->dup_ppm) < c->corrupt_ppm)
		v = GW_FAULT_CORRUPT;
	else if ((r -= c->corrupt_ppm) < c->reorder_ppm)
		v = f->n < GW_FAULT_HELD_MAX ? GW_FAULT_DELAY : GW_FAULT_PASS;
	f->counts[v]++;
	return v;
}

size_t gw_fault_corrupt_at(struct gw_fault *f, size_t len, uint8_t *mask)
{
	uint64_t r = next(f);
	*mask = (uint8_t)(1u << (r & 7));
	return len ? (size_t)((r >> 3) % len) : 0;
}

void gw_fault_hold(struct gw_fault *f, void *frame, uint64_t now_ns)
{
	unsigned i = (f->head + f->n++) % GW_FAULT_HELD_MAX;
	f->held[i].frame = frame;
	f->held[i].due_ns = now_ns + (uint64_t)f->conf.delay_us * 1000;
}

/* Same delay for all, so the queue is in due order: FIFO. */
void *gw_fault_release(struct gw_fault *f, uint64_t now_ns)
{
	if (!f->n || f->held[f->head].due_ns > now_ns)
		return NULL;
	return gw_fault_drain(f);
}

void *gw_fault_drain(struct gw_fault *f)
{
	if (!f->n)
		return NULL;
	void *frame = f->held[f->head].frame;
	f->head = (f->head + 1) % GW_FAULT_HELD_MAX;
	f->n--;
	return frame;
}
