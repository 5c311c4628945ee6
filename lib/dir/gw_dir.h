/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_dir: the endpoint directory, endpoint id -> channel (pure C).
 *
 * Moved out of the daemon's control role so that it can be tested on its
 * own and copied whole to the reader lcores. Open addressing with linear
 * probing on the low bits of the id, at most half full so that probes stay
 * short, and backward-shift deletion: no tombstones, so a lookup stops at
 * the first free slot and the table never needs a rebuild.
 *
 * Ids are computed by the caller (a hash of the name); 0 marks a free slot
 * and is never a valid id. Single-threaded: one writer, and readers get
 * copies (plain memory, no pointers: memcpy makes one). No DPDK, no
 * allocation.
 */
#ifndef GW_DIR_H
#define GW_DIR_H

#include <stdint.h>

#define GW_DIR_SLOTS 4096 /* power of two */
#define GW_DIR_NAME 32    /* name bytes with the NUL; matches GW_NAME_MAX (gw_wire.h) */

struct gw_dir_slot {
	uint32_t id; /* 0 = free */
	uint16_t chan;
	uint16_t rsv;
};

struct gw_dir {
	struct gw_dir_slot slot[GW_DIR_SLOTS]; /* what lookups probe */
	char name[GW_DIR_SLOTS][GW_DIR_NAME];  /* the name in each used slot */
	unsigned n;                            /* used slots */
};

void gw_dir_init(struct gw_dir *d);

/* 0 when added, or when the same name is already there for the same chan;
 * -EEXIST when the id is taken by another name or chan; -ENOSPC when half
 * full; -EINVAL for id 0 or chan 0 or a name that does not fit. */
int gw_dir_add(struct gw_dir *d, const char *name, uint32_t id, uint16_t chan);

/* -ENOENT unless that name with that id is there for that chan (-EINVAL
 * for id 0). */
int gw_dir_del(struct gw_dir *d, const char *name, uint32_t id, uint16_t chan);

/* Remove every endpoint of chan; returns how many. */
unsigned gw_dir_drop_chan(struct gw_dir *d, uint16_t chan);

/* The chan of endpoint id, or 0 when there is none. */
uint16_t gw_dir_find(const struct gw_dir *d, uint32_t id);

/* The name of endpoint id, or NULL when there is none. */
const char *gw_dir_name(const struct gw_dir *d, uint32_t id);


#endif
