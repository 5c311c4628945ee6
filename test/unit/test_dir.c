/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_dir: add, find, del, drop a chan, copy; deletes keep every entry findable. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gw_dir.h"
#include "gw_test.h"

#define MASK (GW_DIR_SLOTS - 1)

/* An id whose home slot is home (k >= 1 keeps it non-zero). */
static uint32_t id_at(uint32_t home, uint32_t k)
{
	return (k << 12) | (home & MASK);
}

/* The slot that holds id, or -1 (by a full scan, not by probing). */
static int slot_of(const struct gw_dir *d, uint32_t id)
{
	for (int i = 0; i < GW_DIR_SLOTS; i++)
		if (d->slot[i].id == id)
			return i;
	return -1;
}

/* Structure: n counts the used slots, no id is there twice, and no free
 * slot lies between an entry's home and the entry. */
static bool well_formed(const struct gw_dir *d)
{
	unsigned used = 0;
	for (uint32_t i = 0; i < GW_DIR_SLOTS; i++) {
		uint32_t id = d->slot[i].id;
		if (!id)
			continue;
		used++;
		for (uint32_t j = id & MASK; j != i; j = (j + 1) & MASK)
			if (!d->slot[j].id || d->slot[j].id == id)
				return false;
	}
	return used == d->n;
}

static struct gw_dir dir, dir2;

static void test_add_find_del(void)
{
	struct gw_dir *d = &dir;
	gw_dir_init(d);
	CU_ASSERT_EQUAL(d->n, 0);
	CU_ASSERT_EQUAL(gw_dir_find(d, 77), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 77, 3), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "beta", 78, 4), 0);
	CU_ASSERT_EQUAL(d->n, 2);
	CU_ASSERT_EQUAL(gw_dir_find(d, 77), 3);
	CU_ASSERT_EQUAL(gw_dir_find(d, 78), 4);
	CU_ASSERT_EQUAL(gw_dir_find(d, 79), 0);
	CU_ASSERT_STRING_EQUAL(d->name[slot_of(d, 77)], "alpha");
	CU_ASSERT_STRING_EQUAL(gw_dir_name(d, 78), "beta");
	CU_ASSERT_PTR_NULL(gw_dir_name(d, 79));
	CU_ASSERT_PTR_NULL(gw_dir_name(d, 0));
	/* del wants the name, the id and the chan all to match */
	CU_ASSERT_EQUAL(gw_dir_del(d, "alpha", 77, 4), -ENOENT);
	CU_ASSERT_EQUAL(gw_dir_del(d, "alphb", 77, 3), -ENOENT);
	CU_ASSERT_EQUAL(gw_dir_del(d, "alpha", 79, 3), -ENOENT);
	CU_ASSERT_EQUAL(gw_dir_del(d, "alpha", 77, 3), 0);
	CU_ASSERT_EQUAL(gw_dir_del(d, "alpha", 77, 3), -ENOENT);
	CU_ASSERT_EQUAL(gw_dir_find(d, 77), 0);
	CU_ASSERT_EQUAL(gw_dir_find(d, 78), 4);
	CU_ASSERT_EQUAL(d->n, 1);
	/* the longest name that fits */
	char name[GW_DIR_NAME];
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CU_ASSERT_EQUAL(gw_dir_add(d, name, 90, 5), 0);
	CU_ASSERT_STRING_EQUAL(d->name[slot_of(d, 90)], name);
	CU_ASSERT_EQUAL(gw_dir_del(d, name, 90, 5), 0);
	CU_ASSERT_TRUE(well_formed(d));
}

static void test_readd(void)
{
	struct gw_dir *d = &dir;
	gw_dir_init(d);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 77, 3), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 77, 3), 0);
	CU_ASSERT_EQUAL(d->n, 1);
	CU_ASSERT_EQUAL(gw_dir_find(d, 77), 3);
	/* another name with that id, or that name from another chan */
	CU_ASSERT_EQUAL(gw_dir_add(d, "omega", 77, 3), -EEXIST);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 77, 4), -EEXIST);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alphabet", 77, 3), -EEXIST);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alph", 77, 3), -EEXIST);
	CU_ASSERT_EQUAL(d->n, 1);
	CU_ASSERT_EQUAL(gw_dir_find(d, 77), 3);
	CU_ASSERT_STRING_EQUAL(d->name[slot_of(d, 77)], "alpha");
	/* the same name with another id is another endpoint to the table */
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 78, 3), 0);
	CU_ASSERT_EQUAL(d->n, 2);
}

static void test_half_full(void)
{
	struct gw_dir *d = &dir;
	char name[GW_DIR_NAME];
	gw_dir_init(d);
	for (uint32_t i = 0; i < GW_DIR_SLOTS / 2; i++) {
		snprintf(name, sizeof(name), "ep%u", i);
		CU_ASSERT_EQUAL_FATAL(gw_dir_add(d, name, i * 2 + 1, 1), 0);
	}
	CU_ASSERT_EQUAL(d->n, GW_DIR_SLOTS / 2);
	CU_ASSERT_EQUAL(gw_dir_add(d, "more", 100000, 1), -ENOSPC);
	/* what is there already still answers as before */
	CU_ASSERT_EQUAL(gw_dir_add(d, "ep0", 1, 1), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "other", 1, 1), -EEXIST);
	CU_ASSERT_EQUAL(gw_dir_del(d, "ep5", 11, 1), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "more", 100000, 1), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "more2", 100002, 1), -ENOSPC);
	CU_ASSERT_EQUAL(d->n, GW_DIR_SLOTS / 2);
	CU_ASSERT_TRUE(well_formed(d));
}

static void test_invalid(void)
{
	struct gw_dir *d = &dir;
	char name[GW_DIR_NAME + 1];
	gw_dir_init(d);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 0, 3), -EINVAL);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 77, 0), -EINVAL);
	CU_ASSERT_EQUAL(gw_dir_add(d, NULL, 77, 3), -EINVAL);
	memset(name, 'x', GW_DIR_NAME);
	name[GW_DIR_NAME] = '\0'; /* one byte too long */
	CU_ASSERT_EQUAL(gw_dir_add(d, name, 77, 3), -EINVAL);
	CU_ASSERT_EQUAL(d->n, 0);
	CU_ASSERT_EQUAL(gw_dir_del(d, "alpha", 0, 3), -EINVAL);
	/* id 0 is never found, though every free slot holds 0 */
	CU_ASSERT_EQUAL(gw_dir_find(d, 0), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "alpha", 77, 3), 0);
	CU_ASSERT_EQUAL(gw_dir_find(d, 0), 0);
	CU_ASSERT_EQUAL(gw_dir_del(d, name, 77, 3), -ENOENT);
	CU_ASSERT_EQUAL(gw_dir_del(d, NULL, 77, 3), -ENOENT);
	CU_ASSERT_EQUAL(gw_dir_find(d, 77), 3);
	CU_ASSERT_TRUE(well_formed(d));
}

/* A cluster across the end of the table: ids homed at the last slot land at
 * the last slot, then 0, 1, ...; deletes pull the rest back home. */
static void test_wrap(void)
{
	struct gw_dir *d = &dir;
	gw_dir_init(d);
	uint32_t a = id_at(MASK, 1), b = id_at(MASK, 2), c = id_at(0, 1), e = id_at(MASK, 3);
	CU_ASSERT_EQUAL(gw_dir_add(d, "a", a, 1), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "b", b, 2), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "c", c, 3), 0);
	CU_ASSERT_EQUAL(gw_dir_add(d, "e", e, 4), 0);
	CU_ASSERT_EQUAL(slot_of(d, a), MASK);
	CU_ASSERT_EQUAL(slot_of(d, b), 0);
	CU_ASSERT_EQUAL(slot_of(d, c), 1);
	CU_ASSERT_EQUAL(slot_of(d, e), 2);
	CU_ASSERT_EQUAL(gw_dir_del(d, "a", a, 1), 0);
	/* b and e move back across the end, c only to its home */
	CU_ASSERT_EQUAL(slot_of(d, b), MASK);
	CU_ASSERT_EQUAL(slot_of(d, c), 0);
	CU_ASSERT_EQUAL(slot_of(d, e), 1);
	CU_ASSERT_STRING_EQUAL(d->name[MASK], "b");
	CU_ASSERT_STRING_EQUAL(d->name[0], "c");
	CU_ASSERT_STRING_EQUAL(d->name[1], "e");
	CU_ASSERT_EQUAL(d->slot[2].id, 0);
	CU_ASSERT_EQUAL(gw_dir_find(d, b), 2);
	CU_ASSERT_EQUAL(gw_dir_find(d, c), 3);
	CU_ASSERT_EQUAL(gw_dir_find(d, e), 4);
	CU_ASSERT_EQUAL(gw_dir_find(d, a), 0);
	/* c is home: deleting b must not move it before its home */
	CU_ASSERT_EQUAL(gw_dir_del(d, "b", b, 2), 0);
	CU_ASSERT_EQUAL(slot_of(d, e), MASK);
	CU_ASSERT_EQUAL(slot_of(d, c), 0);
	CU_ASSERT_EQUAL(gw_dir_find(d, c), 3);
	CU_ASSERT_EQUAL(gw_dir_find(d, e), 4);
	CU_ASSERT_TRUE(well_formed(d));
}

static void test_drop_chan(void)
{
	struct gw_dir *d = &dir;
	char name[GW_DIR_NAME];
	gw_dir_init(d);
	/* Interleaved chans in clusters at the end, across it, and mid-table. */
	static const uint32_t homes[] = { MASK - 2, MASK, 0, 1000 };
	unsigned per[8] = { 0 };
	for (unsigned h = 0; h < 4; h++)
		for (uint32_t k = 1; k <= 40; k++) {
			uint16_t chan = (uint16_t)(1 + (k * 7 + h) % 5);
			snprintf(name, sizeof(name), "e%u.%u", h, k);
			CU_ASSERT_EQUAL_FATAL(gw_dir_add(d, name, id_at(homes[h], k), chan), 0);
			per[chan]++;
		}
	unsigned total = d->n;
	CU_ASSERT_EQUAL(gw_dir_drop_chan(d, 6), 0);
	CU_ASSERT_EQUAL(gw_dir_drop_chan(d, 0), 0);
	CU_ASSERT_EQUAL(gw_dir_drop_chan(d, 3), per[3]);
	CU_ASSERT_EQUAL(d->n, total - per[3]);
	CU_ASSERT_TRUE(well_formed(d));
	for (unsigned h = 0; h < 4; h++)
		for (uint32_t k = 1; k <= 40; k++) {
			uint16_t chan = (uint16_t)(1 + (k * 7 + h) % 5);
			CU_ASSERT_EQUAL(gw_dir_find(d, id_at(homes[h], k)), chan == 3 ? 0 : chan);
		}
	CU_ASSERT_EQUAL(gw_dir_drop_chan(d, 3), 0);
	unsigned left = d->n;
	for (uint16_t chan = 1; chan <= 5; chan++)
		left -= gw_dir_drop_chan(d, chan);
	CU_ASSERT_EQUAL(left, 0);
	CU_ASSERT_EQUAL(d->n, 0);
	for (uint32_t i = 0; i < GW_DIR_SLOTS; i++)
		CU_ASSERT_EQUAL(d->slot[i].id, 0);
}

/* --- random operations against a reference --- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

#define POOL 3200
#define NCHAN 6

/* What should be in the table: one row per candidate id. */
static struct {
	uint32_t id;
	bool in;
	uint16_t chan;
	char name[GW_DIR_NAME];
} ref[POOL];
static unsigned ref_n;

static void ref_pool(void)
{
	/* Many ids on few home slots, most of them at the end of the table so
	 * that the clusters run into each other and across the end; the rest
	 * spread out. */
	static const uint32_t homes[] = { MASK, MASK - 1, MASK - 5, 0, 2, 3, 2047, 2048 };
	unsigned p = 0;
	for (uint32_t k = 1; p < 2400; k++)
		for (unsigned h = 0; h < 8; h++)
			ref[p++].id = id_at(homes[h], k);
	while (p < POOL) {
		uint32_t id = (uint32_t)next();
		bool dup = !id;
		for (unsigned q = 0; q < p && !dup; q++)
			dup = ref[q].id == id;
		if (!dup)
			ref[p++].id = id;
	}
	ref_n = 0;
}

static void check_all(const struct gw_dir *d)
{
	unsigned bad = 0;
	for (unsigned p = 0; p < POOL; p++)
		bad += gw_dir_find(d, ref[p].id) != (ref[p].in ? ref[p].chan : 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(d->n, ref_n);
	CU_ASSERT_TRUE(well_formed(d));
}

static void test_random(void)
{
	struct gw_dir *d = &dir;
	gw_dir_init(d);
	ref_pool();
	unsigned adds = 0, dels = 0, drops = 0, full = 0, mism = 0;
	for (int op = 0; op < 60000; op++) {
		unsigned p = (unsigned)(next() % POOL);
		uint16_t chan = (uint16_t)(1 + next() % NCHAN);
		uint32_t r = (uint32_t)(next() % 1000);
		/* phases that fill the table to half and empty it again */
		bool filling = (op / 10000) % 2 == 0;
		uint32_t add_below = filling ? 850 : 200;
		char name[GW_DIR_NAME];
		/* mostly the row's own name, sometimes another */
		if (ref[p].in && next() % 4)
			memcpy(name, ref[p].name, sizeof(name));
		else
			snprintf(name, sizeof(name), "%c%08x", next() % 2 ? 'n' : 'm', ref[p].id);
		if (r < add_below) {
			int want;
			if (ref[p].in)
				want = ref[p].chan == chan && !strcmp(ref[p].name, name) ? 0 : -EEXIST;
			else
				want = ref_n >= GW_DIR_SLOTS / 2 ? -ENOSPC : 0;
			int rc = gw_dir_add(d, name, ref[p].id, chan);
			CU_ASSERT_EQUAL(rc, want);
			if (rc == 0 && !ref[p].in) {
				ref[p].in = true;
				ref[p].chan = chan;
				memcpy(ref[p].name, name, sizeof(name));
				ref_n++;
				adds++;
			}
			full += rc == -ENOSPC;
			mism += rc == -EEXIST;
		} else if (filling || r < 998) {
			/* delete: usually with the right chan, to hit real deletes */
			if (ref[p].in && next() % 4)
				chan = ref[p].chan;
			bool match = ref[p].in && ref[p].chan == chan && !strcmp(ref[p].name, name);
			int rc = gw_dir_del(d, name, ref[p].id, chan);
			CU_ASSERT_EQUAL(rc, match ? 0 : -ENOENT);
			if (match) {
				ref[p].in = false;
				ref_n--;
				dels++;
			}
		} else {
			unsigned want = 0;
			for (unsigned q = 0; q < POOL; q++)
				if (ref[q].in && ref[q].chan == chan) {
					ref[q].in = false;
					want++;
				}
			ref_n -= want;
			CU_ASSERT_EQUAL(gw_dir_drop_chan(d, chan), want);
			drops++;
		}
		/* the row touched at once, everything now and then */
		CU_ASSERT_EQUAL(gw_dir_find(d, ref[p].id), ref[p].in ? ref[p].chan : 0);
		if (op % 97 == 0)
			check_all(d);
	}
	check_all(d);
	printf("\n    %u adds, %u dels, %u drops, %u -ENOSPC, %u -EEXIST ", adds, dels, drops, full, mism);
	/* The run did what it is for: real adds and deletes, refusals, a table
	 * that got to half full and clusters that cross the end. */
	CU_ASSERT(adds > 5000 && dels > 5000 && drops > 10);
	CU_ASSERT(full > 0 && mism > 0);
	/* Empty it the slow way: one delete per row, checking after each. */
	for (unsigned p = 0; p < POOL; p++) {
		if (!ref[p].in)
			continue;
		CU_ASSERT_EQUAL(gw_dir_del(d, ref[p].name, ref[p].id, ref[p].chan), 0);
		ref[p].in = false;
		ref_n--;
		if (p % 31 == 0)
			check_all(d);
	}
	check_all(d);
	CU_ASSERT_EQUAL(d->n, 0);
}

/* The clusters in the random run really do cross the end of the table. */
static void test_random_wraps(void)
{
	struct gw_dir *d = &dir;
	gw_dir_init(d);
	ref_pool();
	char name[GW_DIR_NAME];
	for (unsigned p = 0; p < 64; p++) {
		snprintf(name, sizeof(name), "w%u", p);
		CU_ASSERT_EQUAL(gw_dir_add(d, name, ref[p].id, 1), 0);
	}
	CU_ASSERT_NOT_EQUAL(d->slot[MASK].id, 0);
	CU_ASSERT_NOT_EQUAL(d->slot[0].id, 0);
	/* some low slot holds an entry whose home is at the end */
	bool wrapped = false;
	for (uint32_t i = 0; i < 64; i++)
		wrapped |= d->slot[i].id && (d->slot[i].id & MASK) > MASK - 8;
	CU_ASSERT_TRUE(wrapped);
	CU_ASSERT_TRUE(well_formed(d));
}

static void test_copy(void)
{
	struct gw_dir *s = &dir, *c = &dir2;
	char name[GW_DIR_NAME];
	gw_dir_init(s);
	for (uint32_t k = 1; k <= 300; k++) {
		snprintf(name, sizeof(name), "c%u", k);
		CU_ASSERT_EQUAL_FATAL(gw_dir_add(s, name, id_at(MASK - (k % 3), k), (uint16_t)(k % 4 + 1)), 0);
	}
	memset(c, 0xa5, sizeof(*c));
	memcpy(c, s, sizeof(*s)); /* how the daemon copies it: plain memory, no pointers */
	CU_ASSERT_EQUAL(c->n, 300);
	for (uint32_t k = 1; k <= 300; k++)
		CU_ASSERT_EQUAL(gw_dir_find(c, id_at(MASK - (k % 3), k)), k % 4 + 1);
	/* independent both ways */
	CU_ASSERT_EQUAL(gw_dir_drop_chan(s, 1), 75);
	CU_ASSERT_EQUAL(gw_dir_add(s, "new", 5, 9), 0);
	CU_ASSERT_EQUAL(c->n, 300);
	CU_ASSERT_EQUAL(gw_dir_find(c, 5), 0);
	CU_ASSERT_EQUAL(gw_dir_find(c, id_at(MASK, 12)), 1);
	CU_ASSERT_EQUAL(gw_dir_find(s, id_at(MASK, 12)), 0);
	CU_ASSERT_EQUAL(gw_dir_del(c, "c1", id_at(MASK - 1, 1), 2), 0);
	CU_ASSERT_EQUAL(gw_dir_find(s, id_at(MASK - 1, 1)), 2);
	CU_ASSERT_TRUE(well_formed(s));
	CU_ASSERT_TRUE(well_formed(c));
}

static const struct gw_test_case cases[] = {
	{ "add, find, del", test_add_find_del },
	{ "re-add is idempotent; -EEXIST otherwise", test_readd },
	{ "-ENOSPC at half full", test_half_full },
	{ "-EINVAL cases; id 0 never found", test_invalid },
	{ "cluster across the end, backward shift", test_wrap },
	{ "drop_chan removes exactly that chan", test_drop_chan },
	{ "random ops against a reference", test_random },
	{ "random pool clusters wrap", test_random_wraps },
	{ "a byte copy is whole and independent", test_copy },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("dir", cases);
}
