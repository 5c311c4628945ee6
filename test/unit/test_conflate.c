/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_conflate: the newest message per key, in order, in bounded memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_conflate.h"
#include "gw_test.h"

/* A message: an 8-byte key, then a sequence number; the record is the message. */
struct msg {
	char key[8];
	uint32_t seq;
};

static int put(struct gw_conflate *c, const char *key, uint32_t seq)
{
	struct msg m = { .seq = seq };
	strncpy(m.key, key, sizeof(m.key));
	return gw_conflate_put(c, &m, sizeof(m), NULL, 0, &m, sizeof(m));
}

/* Drain into keys[] and seqs[]; returns how many. */
static unsigned drain(struct gw_conflate *c, char keys[][9], uint32_t *seqs, unsigned max)
{
	unsigned n = 0;
	uint32_t len;
	const struct msg *m;
	while ((m = gw_conflate_front(c, &len)) && n < max) {
		CU_ASSERT_EQUAL(len, sizeof(*m));
		memcpy(keys[n], m->key, 8);
		keys[n][8] = '\0';
		seqs[n++] = m->seq;
		gw_conflate_pop(c);
	}
	return n;
}

static void test_newest_in_order(void)
{
	struct gw_conflate c;
	CU_ASSERT_FATAL(gw_conflate_init(&c, 8, 16, 1 << 20) == 0);
	CU_ASSERT_EQUAL(put(&c, "a", 1), 0);
	CU_ASSERT_EQUAL(put(&c, "b", 2), 0);
	CU_ASSERT_EQUAL(put(&c, "a", 3), 1);
	CU_ASSERT_EQUAL(put(&c, "c", 4), 0);
	CU_ASSERT_EQUAL(put(&c, "b", 5), 1);
	CU_ASSERT_EQUAL(c.n, 3);
	CU_ASSERT_EQUAL(c.conflated, 2);
	char k[8][9];
	uint32_t s[8];
	/* a's newest went behind b's first: published order holds. */
	CU_ASSERT_EQUAL_FATAL(drain(&c, k, s, 8), 3);
	CU_ASSERT(!strcmp(k[0], "a") && s[0] == 3);
	CU_ASSERT(!strcmp(k[1], "c") && s[1] == 4);
	CU_ASSERT(!strcmp(k[2], "b") && s[2] == 5);
	CU_ASSERT_EQUAL(c.bytes, 0);
	CU_ASSERT_PTR_NULL(gw_conflate_front(&c, &(uint32_t){ 0 }));
	gw_conflate_pop(&c); /* empty: nothing happens */
	gw_conflate_free(&c);
}

static void test_bounds(void)
{
	struct gw_conflate c;
	/* By keys: the oldest gives way. */
	CU_ASSERT_FATAL(gw_conflate_init(&c, 8, 3, 1 << 20) == 0);
	for (uint32_t i = 0; i < 5; i++) {
		char key[8];
		snprintf(key, sizeof(key), "k%u", i);
		CU_ASSERT_EQUAL(put(&c, key, i), 0);
	}
	CU_ASSERT_EQUAL(c.evicted, 2);
	char k[8][9];
	uint32_t s[8];
	CU_ASSERT_EQUAL_FATAL(drain(&c, k, s, 8), 3);
	CU_ASSERT(s[0] == 2 && s[1] == 3 && s[2] == 4);
	gw_conflate_free(&c);
	/* By bytes: key and record count; 3 fit in 50 bytes of 20 each. */
	CU_ASSERT_FATAL(gw_conflate_init(&c, 8, 100, 50) == 0);
	for (uint32_t i = 0; i < 4; i++) {
		char key[8];
		snprintf(key, sizeof(key), "k%u", i);
		put(&c, key, i);
	}
	CU_ASSERT_EQUAL(c.n, 2);
	CU_ASSERT_EQUAL(c.bytes, 40);
	CU_ASSERT_EQUAL(c.evicted, 2);
	struct msg big[4] = { 0 };
	CU_ASSERT_EQUAL(gw_conflate_put(&c, big, sizeof(big), big, 1, big + 1, sizeof(big) - 1), -EMSGSIZE);
	CU_ASSERT_EQUAL(c.n, 2); /* as it was */
	gw_conflate_free(&c);
	CU_ASSERT_EQUAL(gw_conflate_init(&c, 0, 1, 1), -EINVAL);
	CU_ASSERT_EQUAL(gw_conflate_init(&c, GW_CONFLATE_KEY_MAX + 1, 1, 1), -EINVAL);
	CU_ASSERT_EQUAL(gw_conflate_init(&c, 8, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(gw_conflate_init(&c, 8, 1, 0), -EINVAL);
	gw_conflate_free(&c); /* after a failed init: harmless */
}

/* A message shorter than the key length is keyed by all of it; a record
 * may be empty. */
static void test_short_keys(void)
{
	struct gw_conflate c;
	CU_ASSERT_FATAL(gw_conflate_init(&c, 8, 8, 1024) == 0);
	CU_ASSERT_EQUAL(gw_conflate_put(&c, "ab", 2, "x", 1, NULL, 0), 0);
	CU_ASSERT_EQUAL(gw_conflate_put(&c, "abc", 3, NULL, 0, "y", 1), 0); /* another key */
	CU_ASSERT_EQUAL(gw_conflate_put(&c, "ab", 2, NULL, 0, "", 0), 1);
	CU_ASSERT_EQUAL(gw_conflate_put(&c, "", 0, "z", 1, NULL, 0), 0);
	uint32_t len;
	const char *r = gw_conflate_front(&c, &len);
	CU_ASSERT(r && len == 1 && r[0] == 'y');
	gw_conflate_pop(&c);
	r = gw_conflate_front(&c, &len);
	CU_ASSERT(r && len == 0);
	gw_conflate_free(&c);
}

/*
 * Against a model (an array in age order) under random puts and pops, with
 * keys colliding in the hash table: the same records in the same order,
 * the same counts, and what comes out is always in published order.
 */
static void test_model(void)
{
	enum { KEYS = 300, MAX = 64, OPS = 200000 };
	struct gw_conflate c;
	CU_ASSERT_FATAL(gw_conflate_init(&c, 4, MAX, 40 * MAX) == 0);
	struct {
		uint32_t key, seq, len;
	} model[MAX];
	unsigned n = 0, bad = 0;
	uint64_t conflated = 0, evicted = 0;
	uint32_t last = 0;
	unsigned seed = 12345;
	for (uint32_t seq = 1; seq <= OPS; seq++) {
		if (rand_r(&seed) % 3 == 0) {
			uint32_t len;
			const uint32_t *r = gw_conflate_front(&c, &len);
			if (!n) {
				bad += r != NULL;
				continue;
			}
			if (!r || len != model[0].len || r[0] != model[0].key || r[1] != model[0].seq ||
			    r[1] <= last)
				bad++;
			last = r ? r[1] : last;
			gw_conflate_pop(&c);
			memmove(&model[0], &model[1], --n * sizeof(model[0]));
			continue;
		}
		uint32_t rec[8] = { (uint32_t)rand_r(&seed) % KEYS, seq };
		uint32_t len = 8 + (uint32_t)rand_r(&seed) % 5 * 4;
		for (unsigned i = 0; i < n; i++)
			if (model[i].key == rec[0]) {
				memmove(&model[i], &model[i + 1], (n - i - 1) * sizeof(model[0]));
				n--;
				conflated++;
				break;
			}
		size_t bytes = 4 + len;
		for (unsigned i = 0; i < n; i++)
			bytes += 4 + model[i].len;
		while (n == MAX || bytes > 40 * MAX) {
			bytes -= 4 + model[0].len;
			memmove(&model[0], &model[1], --n * sizeof(model[0]));
			evicted++;
		}
		model[n].key = rec[0];
		model[n].seq = seq;
		model[n++].len = len;
		gw_conflate_put(&c, rec, sizeof(rec[0]), rec, len / 2, (const uint8_t *)rec + len / 2, len - len / 2);
		bad += c.n != n;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(c.conflated, conflated);
	CU_ASSERT_EQUAL(c.evicted, evicted);
	CU_ASSERT(conflated > 1000 && evicted > 1000); /* both paths ran */
	gw_conflate_free(&c);
}

int main(void)
{
	static const struct gw_test_case cases[] = {
		{ "the newest per key, in published order", test_newest_in_order },
		{ "bounded by keys and by bytes: the oldest gives way", test_bounds },
		{ "short messages and empty records", test_short_keys },
		{ "against a model, random puts and pops", test_model },
		{ NULL, NULL },
	};
	return gw_test_run("conflate", cases);
}
