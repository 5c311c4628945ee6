/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_fault: a seeded fault-injection stage for received frames (pure C).
 *
 * The kernel here has no netem, and XDP only drops. Like Aeron's loss
 * interceptors, this stage sits where frames enter the gateway and, per
 * frame, passes it, drops it, duplicates it, corrupts one byte of it, or
 * holds it back for delay_us (so later frames overtake it: reordering).
 * Off unless configured; the same seed gives the same decisions, so a
 * failing run can be replayed.
 *
 * Frames are opaque handles; the caller does the dropping, copying and
 * corrupting, and owns what comes back out of the delay queue.
 */
#ifndef GW_FAULT_H
#define GW_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_FAULT_HELD_MAX 256

enum gw_fault_verdict {
	GW_FAULT_PASS = 0,
	GW_FAULT_DROP,
	GW_FAULT_DUP,
	GW_FAULT_CORRUPT,
	GW_FAULT_DELAY,
};

/* Rates in parts per million of received frames. */
struct gw_fault_conf {
	uint32_t drop_ppm, dup_ppm, corrupt_ppm, reorder_ppm;
	uint32_t delay_us; /* how long a reordered frame is held */
	uint64_t seed;
};

struct gw_fault {
	struct gw_fault_conf conf;
	uint64_t rng;
	struct {
		void *frame;
		uint64_t due_ns;
	} held[GW_FAULT_HELD_MAX];
	unsigned head, n;
	uint64_t counts[GW_FAULT_DELAY + 1];
};

void gw_fault_init(struct gw_fault *f, const struct gw_fault_conf *conf);

static inline bool gw_fault_enabled(const struct gw_fault_conf *c)
{
	return c->drop_ppm || c->dup_ppm || c->corrupt_ppm || c->reorder_ppm;
}

/* What to do with the next received frame. DELAY only when there is room
 * to hold it (else PASS). */
enum gw_fault_verdict gw_fault_decide(struct gw_fault *f);

/* For CORRUPT: which byte of a len-byte frame to flip, and the bit mask. */
size_t gw_fault_corrupt_at(struct gw_fault *f, size_t len, uint8_t *mask);

/* Hold a frame (after DELAY) until now + delay_us. */
void gw_fault_hold(struct gw_fault *f, void *frame, uint64_t now_ns);

/* The next held frame whose time has come, or NULL. */
void *gw_fault_release(struct gw_fault *f, uint64_t now_ns);

/* Every held frame, regardless of time (at shutdown), or NULL. */
void *gw_fault_drain(struct gw_fault *f);

#endif
