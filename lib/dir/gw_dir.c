/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_dir: linear probing with backward-shift deletion. */
#include <errno.h>
#include <string.h>

#include "gw_dir.h"

#define GW_DIR_MASK (GW_DIR_SLOTS - 1)

_Static_assert((GW_DIR_SLOTS & GW_DIR_MASK) == 0, "GW_DIR_SLOTS must be a power of two");

/* The slot holding id, or -1. The table is never full, so a free slot ends
 * every probe. */
static int lookup(const struct gw_dir *d, uint32_t id)
{
	if (!id)
		return -1; /* would match the first free slot */
	for (uint32_t i = id & GW_DIR_MASK;; i = (i + 1) & GW_DIR_MASK) {
		if (d->slot[i].id == id)
			return (int)i;
		if (!d->slot[i].id)
			return -1;
	}
}

/* Empty slot i, then shift later entries of its cluster back into the hole
 * so that every one is still reachable from its home slot. */
static void del_at(struct gw_dir *d, uint32_t i)
{
	d->slot[i].id = 0;
	d->n--;
	for (uint32_t j = (i + 1) & GW_DIR_MASK; d->slot[j].id; j = (j + 1) & GW_DIR_MASK) {
		uint32_t home = d->slot[j].id & GW_DIR_MASK;
		/* Move j into the hole when its home is not between hole and j. */
		if (((j - home) & GW_DIR_MASK) >= ((j - i) & GW_DIR_MASK)) {
			d->slot[i] = d->slot[j];
			memcpy(d->name[i], d->name[j], GW_DIR_NAME);
			d->slot[j].id = 0;
			i = j;
		}
	}
}

void gw_dir_init(struct gw_dir *d)
{
	memset(d, 0, sizeof(*d));
}

int gw_dir_add(struct gw_dir *d, const char *name, uint32_t id, uint16_t chan)
{
	if (!id || !chan || !name)
		return -EINVAL;
	size_t len = strnlen(name, GW_DIR_NAME);
	if (len == GW_DIR_NAME)
		return -EINVAL;
	int at = lookup(d, id);
	if (at >= 0)
		return d->slot[at].chan == chan && !strcmp(d->name[at], name) ? 0 : -EEXIST;
	if (d->n >= GW_DIR_SLOTS / 2)
		return -ENOSPC;
	uint32_t i = id & GW_DIR_MASK;
	while (d->slot[i].id)
		i = (i + 1) & GW_DIR_MASK;
	d->slot[i] = (struct gw_dir_slot){ .id = id, .chan = chan };
	memset(d->name[i], 0, GW_DIR_NAME);
	memcpy(d->name[i], name, len);
	d->n++;
	return 0;
}

const char *gw_dir_name(const struct gw_dir *d, uint32_t id)
{
	int at = lookup(d, id);
	return at < 0 ? NULL : d->name[at];
}

int gw_dir_del(struct gw_dir *d, const char *name, uint32_t id, uint16_t chan)
{
	if (!id)
		return -EINVAL;
	int at = lookup(d, id);
	if (at < 0 || !name || d->slot[at].chan != chan || strncmp(d->name[at], name, GW_DIR_NAME))
		return -ENOENT;
	del_at(d, (uint32_t)at);
	return 0;
}

/*
 * One pass; no entry of chan is left below i. A delete may shift a later
 * entry into i, so i is looked at again before moving on. An entry only
 * lands below i when it comes from below i too (a cluster that wraps past
 * the end of the table), so it is not of chan.
 */
unsigned gw_dir_drop_chan(struct gw_dir *d, uint16_t chan)
{
	unsigned gone = 0;
	for (uint32_t i = 0; i < GW_DIR_SLOTS;) {
		if (d->slot[i].id && d->slot[i].chan == chan) {
			del_at(d, i);
			gone++;
		} else {
			i++;
		}
	}
	return gone;
}

uint16_t gw_dir_find(const struct gw_dir *d, uint32_t id)
{
	int at = lookup(d, id);
	return at < 0 ? 0 : d->slot[at].chan;
}
