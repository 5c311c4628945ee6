/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_topic: topics, their subscribers here and the peers that have some. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_topic.h"
#include "gw_test.h"

static struct gw_topics ts;

/* A stand-in for the caller's hash of a name: distinct names, distinct ids. */
static uint32_t id_of(const char *name)
{
	uint32_t h = 2166136261u;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h ? h : 1;
}

static int sub(const char *name, uint16_t chan, enum gw_topic_policy p, uint8_t key_len)
{
	return gw_topic_subscribe(&ts, name, id_of(name), chan, p, key_len);
}

static void test_subscribe(void)
{
	gw_topic_init(&ts);
	CU_ASSERT_EQUAL(sub("volts", 3, GW_TOPIC_HOLD, 0), 0);
	CU_ASSERT_EQUAL(ts.version, 1);
	CU_ASSERT_EQUAL(sub("volts", 4, GW_TOPIC_LATEST, 8), 0);
	CU_ASSERT_EQUAL(sub("volts", 4, GW_TOPIC_LATEST, 16), 0); /* again: policy updated */
	CU_ASSERT_EQUAL(ts.version, 1); /* still the same topics advertised */
	const struct gw_topic *t = gw_topic_find(&ts, id_of("volts"));
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->nsubs, 2);
	CU_ASSERT(t->sub[1].chan == 4 && t->sub[1].key_len == 16);
	/* Bad input changes nothing. */
	CU_ASSERT_EQUAL(sub("volts", 0, GW_TOPIC_HOLD, 0), -EINVAL);
	CU_ASSERT_EQUAL(sub("volts", 5, GW_TOPIC_LATEST, 0), -EINVAL);
	CU_ASSERT_EQUAL(sub("volts", 5, GW_TOPIC_LATEST, GW_TOPIC_KEY_MAX + 1), -EINVAL);
	CU_ASSERT_EQUAL(sub("volts", 5, (enum gw_topic_policy)7, 0), -EINVAL);
	CU_ASSERT_EQUAL(gw_topic_subscribe(&ts, "amps", 0, 5, GW_TOPIC_HOLD, 0), -EINVAL);
	CU_ASSERT_EQUAL(gw_topic_subscribe(&ts, "amps", id_of("volts"), 5, GW_TOPIC_HOLD, 0),
			-EEXIST); /* another name with that id */
	CU_ASSERT_EQUAL(ts.n, 1);
	CU_ASSERT_EQUAL(gw_topic_unsubscribe(&ts, "volts", id_of("volts"), 9), -ENOENT);
	CU_ASSERT_EQUAL(gw_topic_unsubscribe(&ts, "amps", id_of("amps"), 3), -ENOENT);
	CU_ASSERT_EQUAL(gw_topic_unsubscribe(&ts, "volts", id_of("volts"), 3), 0);
	CU_ASSERT_EQUAL(gw_topic_unsubscribe(&ts, "volts", id_of("volts"), 4), 0);
	CU_ASSERT_EQUAL(ts.version, 2);
	CU_ASSERT_PTR_NULL(gw_topic_find(&ts, id_of("volts"))); /* no one left: gone */
	CU_ASSERT_EQUAL(ts.n, 0);
	CU_ASSERT_EQUAL(gw_dir_find(&ts.dir, id_of("volts")), 0);
}

static void test_limits_and_drop(void)
{
	gw_topic_init(&ts);
	/* Subscribed out of order, kept in channel order (a receiver goes on
	 * from a channel id). */
	for (uint16_t c = GW_TOPIC_SUBS; c >= 1; c -= 2)
		CU_ASSERT_EQUAL(sub("busy", c, GW_TOPIC_HOLD, 0), 0);
	for (uint16_t c = 1; c <= GW_TOPIC_SUBS; c += 2)
		CU_ASSERT_EQUAL(sub("busy", c, GW_TOPIC_HOLD, 0), 0);
	CU_ASSERT_EQUAL(sub("busy", GW_TOPIC_SUBS + 1, GW_TOPIC_HOLD, 0), -ENOSPC);
	char name[GW_DIR_NAME];
	unsigned made = 1;
	for (unsigned i = 0; i < GW_TOPICS_MAX + 5; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		made += sub(name, 7, GW_TOPIC_HOLD, 0) == 0;
	}
	CU_ASSERT_EQUAL(made, GW_TOPICS_MAX);
	CU_ASSERT_EQUAL(sub("one-more", 8, GW_TOPIC_HOLD, 0), -ENOSPC);
	/* A subscriber that had no room is not left as an empty topic. */
	CU_ASSERT_EQUAL(ts.n, GW_TOPICS_MAX);
	CU_ASSERT_EQUAL(gw_topic_count_chan(&ts, 7), GW_TOPICS_MAX);
	CU_ASSERT_EQUAL(gw_topic_count_chan(&ts, 99), 0);
	/* chan 7 leaves: every topic of its own goes; busy stays, chan 1 gone from it. */
	CU_ASSERT_EQUAL(gw_topic_drop_chan(&ts, 7), GW_TOPICS_MAX - 1 + 1);
	CU_ASSERT_EQUAL(ts.n, 1);
	CU_ASSERT_EQUAL(gw_topic_drop_chan(&ts, 1), 1);
	const struct gw_topic *t = gw_topic_find(&ts, id_of("busy"));
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->nsubs, GW_TOPIC_SUBS - 2);
	for (unsigned k = 0; k < t->nsubs; k++)
		CU_ASSERT(t->sub[k].chan != 1 && t->sub[k].chan != 7 &&
			  (k == 0 || t->sub[k - 1].chan < t->sub[k].chan));
	CU_ASSERT_EQUAL(sub("room-again", 8, GW_TOPIC_HOLD, 0), 0);
}

static void test_peers(void)
{
	gw_topic_init(&ts);
	CU_ASSERT_EQUAL(sub("volts", 3, GW_TOPIC_HOLD, 0), 0);
	char names[3][GW_DIR_NAME] = { "volts", "freq", "amps" };
	uint32_t ids[3] = { id_of("volts"), id_of("freq"), id_of("amps") };
	CU_ASSERT_EQUAL(gw_topic_set_node(&ts, 200, names, ids, 3), 0);
	CU_ASSERT_EQUAL(gw_topic_set_node(&ts, 5, names, ids, 1), 0);
	CU_ASSERT_EQUAL(ts.n, 3);
	CU_ASSERT_EQUAL(ts.version, 1); /* peers' topics are not this node's to advertise */
	const struct gw_topic *v = gw_topic_find(&ts, id_of("volts"));
	const struct gw_topic *f = gw_topic_find(&ts, id_of("freq"));
	CU_ASSERT_FATAL(v && f);
	CU_ASSERT(gw_topic_has_node(v, 200) && gw_topic_has_node(v, 5) && !gw_topic_has_node(v, 6));
	CU_ASSERT(gw_topic_has_node(f, 200) && !gw_topic_has_node(f, 5));
	/* The same again is known as such (control publishes nothing then). */
	uint32_t other[3] = { ids[2], ids[0], ids[1] };
	CU_ASSERT(gw_topic_node_is(&ts, 200, other, 3));
	CU_ASSERT(!gw_topic_node_is(&ts, 200, other, 2));
	CU_ASSERT(gw_topic_node_is(&ts, 5, ids, 1));
	CU_ASSERT(!gw_topic_node_is(&ts, 5, &ids[1], 1));
	CU_ASSERT(gw_topic_node_is(&ts, 6, NULL, 0));
	CU_ASSERT(!gw_topic_node_is(&ts, 5, NULL, 0));
	/* Node 200's next word replaces its last: freq and amps go, volts stays (local). */
	CU_ASSERT_EQUAL(gw_topic_set_node(&ts, 200, NULL, NULL, 0), 0);
	CU_ASSERT_PTR_NULL(gw_topic_find(&ts, id_of("freq")));
	CU_ASSERT_PTR_NULL(gw_topic_find(&ts, id_of("amps")));
	v = gw_topic_find(&ts, id_of("volts"));
	CU_ASSERT_FATAL(v != NULL);
	CU_ASSERT(!gw_topic_has_node(v, 200) && gw_topic_has_node(v, 5));
	/* Refused: a name whose id is another's here, an id of 0, a name not ended. */
	char bad[3][GW_DIR_NAME] = { "not-volts", "zero", "" };
	memset(bad[2], 'x', GW_DIR_NAME);
	uint32_t bad_ids[3] = { id_of("volts"), 0, 77 };
	CU_ASSERT_EQUAL(gw_topic_set_node(&ts, 9, bad, bad_ids, 3), 3);
	CU_ASSERT_EQUAL(ts.n, 1);
	/* The advertisement: local topics only, names and ids. */
	char out[4][GW_DIR_NAME];
	uint32_t oid[4];
	CU_ASSERT_EQUAL(gw_topic_local(&ts, out, oid, 4), 1);
	CU_ASSERT(oid[0] == id_of("volts") && !strcmp(out[0], "volts"));
	/* The local subscriber leaves; node 5 still subscribes, so it stays. */
	CU_ASSERT_EQUAL(gw_topic_unsubscribe(&ts, "volts", id_of("volts"), 3), 0);
	CU_ASSERT_EQUAL(gw_topic_local(&ts, out, oid, 4), 0);
	CU_ASSERT_PTR_NOT_NULL(gw_topic_find(&ts, id_of("volts")));
	CU_ASSERT_EQUAL(gw_topic_set_node(&ts, 5, NULL, NULL, 0), 0);
	CU_ASSERT_EQUAL(ts.n, 0);
}

/* An advertisement in parts: whole only when every part came in order. */
static void test_adv(void)
{
	static struct gw_topic_adv a;
	gw_topic_adv_init(&a);
	char names[3][GW_DIR_NAME] = { "a", "b", "c" };
	uint32_t ids[3] = { 1, 2, 3 };
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 5, 3, 0, names, ids, 2), 0);
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 5, 3, 1, names, ids, 2), -EPROTO); /* overlaps */
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 6, 3, 2, names + 2, ids + 2, 1), -EPROTO);
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 5, 4, 2, names + 2, ids + 2, 1), -EPROTO);
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 5, 3, 2, names + 2, ids + 2, 1), 1);
	CU_ASSERT(a.have == 3 && a.ids[2] == 3 && !strcmp(a.names[1], "b"));
	/* A first part starts again, whatever came before (a peer restarted). */
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 9, 2, 0, names, ids, 1), 0);
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 1, 1, 0, names + 2, ids + 2, 1), 1);
	CU_ASSERT(a.have == 1 && a.ids[0] == 3);
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 2, 0, 0, NULL, NULL, 0), 1); /* none */
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 3, GW_TOPICS_MAX + 1, 0, names, ids, 1), -ENOSPC);
	CU_ASSERT_EQUAL(gw_topic_adv_part(&a, 3, 1, 0, names, ids, 2), -EPROTO); /* past total */
}

/* When each part of this node's advertisement goes to a peer. */
static void test_tell(void)
{
	struct gw_topic_tell t = { 0 };
	const uint64_t R = 1000; /* refresh */
	/* A new session, never a topic here (version 0): nothing goes. */
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 0, 0, 10, R), -1);
	/* A topic: version 1, 30 entries in parts of 28 and 2. */
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 1, 30, 20, R), 0);
	gw_topic_tell_sent(&t, 28);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 1, 30, 21, R), 28);
	gw_topic_tell_sent(&t, 2);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 1, 30, 22, R), -1); /* told */
	/* The version changes mid-way: from the start, at the new version. */
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 2, 31, 30, R), 0);
	gw_topic_tell_sent(&t, 28);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 3, 29, 31, R), 0);
	CU_ASSERT_EQUAL(t.version, 3);
	gw_topic_tell_sent(&t, 28);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 3, 29, 32, R), 28);
	gw_topic_tell_sent(&t, 1);
	/* Refreshed once refresh has passed since it began, not before. */
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 3, 29, 31 + R - 1, R), -1);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 1, 3, 29, 31 + R, R), 0);
	gw_topic_tell_sent(&t, 28);
	/* The peer comes back (a new session) mid-way: from the start. */
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 2, 3, 29, 40 + R, R), 0);
	gw_topic_tell_sent(&t, 28);
	gw_topic_tell_sent(&t, 1);
	/* Gone empty: told once (an empty part), then never refreshed. */
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 2, 4, 0, 50 + R, R), 0);
	gw_topic_tell_sent(&t, 0);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 2, 4, 0, 50 + 5 * R, R), -1);
	/* ... and again to a new session (it may hold what came before). */
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 3, 4, 0, 50 + 6 * R, R), 0);
	gw_topic_tell_sent(&t, 0);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 3, 4, 0, 50 + 7 * R, R), -1);
	CU_ASSERT_EQUAL(gw_topic_tell_next(&t, 3, 5, 1, 50 + 7 * R, R), 0);
}

int main(void)
{
	static const struct gw_test_case cases[] = {
		{ "subscribe, again, unsubscribe; bad input harms nothing", test_subscribe },
		{ "limits, and a subscriber that leaves", test_limits_and_drop },
		{ "peers' subscriptions, replaced by each advertisement", test_peers },
		{ "an advertisement in parts", test_adv },
		{ "telling a peer: new session, new version, refresh, gone empty", test_tell },
		{ NULL, NULL },
	};
	return gw_test_run("topic", cases);
}
