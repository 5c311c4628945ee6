/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_topic: topics and their subscribers, here and on peers (see gw_topic.h). */
#include <errno.h>
#include <string.h>

#include "gw_topic.h"

void gw_topic_init(struct gw_topics *ts)
{
	gw_dir_init(&ts->dir);
	memset(ts->t, 0, sizeof(ts->t));
	ts->n = 0;
	ts->version = 0;
}

/* The index of topic name/id; made when create and there is none. */
static int topic_get(struct gw_topics *ts, const char *name, uint32_t id, bool create)
{
	uint16_t at = gw_dir_find(&ts->dir, id);
	if (at) /* the same name again, or another with its id */
		return gw_dir_add(&ts->dir, name, id, at) == 0 ? at - 1 : -EEXIST;
	if (!create)
		return -ENOENT;
	if (ts->n == GW_TOPICS_MAX)
		return -ENOSPC;
	unsigned i = 0;
	while (ts->t[i].id)
		i++;
	int rc = gw_dir_add(&ts->dir, name, id, (uint16_t)(i + 1));
	if (rc < 0)
		return rc;
	memset(&ts->t[i], 0, sizeof(ts->t[i]));
	ts->t[i].id = id;
	ts->n++;
	return (int)i;
}

/* Topic i ends when no one subscribes to it, here or on a peer. */
static void topic_put(struct gw_topics *ts, unsigned i)
{
	struct gw_topic *t = &ts->t[i];
	if (t->nsubs)
		return;
	for (unsigned w = 0; w < GW_TOPIC_NODES / 64; w++)
		if (t->nodes[w])
			return;
	gw_dir_del(&ts->dir, gw_dir_name(&ts->dir, t->id), t->id, (uint16_t)(i + 1));
	t->id = 0;
	ts->n--;
}

int gw_topic_subscribe(struct gw_topics *ts, const char *name, uint32_t id, uint16_t chan,
		       enum gw_topic_policy policy, uint8_t key_len)
{
	if (!id || !chan || (policy != GW_TOPIC_HOLD && policy != GW_TOPIC_LATEST) ||
	    (policy == GW_TOPIC_LATEST && (!key_len || key_len > GW_TOPIC_KEY_MAX)))
		return -EINVAL;
	int i = topic_get(ts, name, id, true);
	if (i < 0)
		return i;
	struct gw_topic *t = &ts->t[i];
	struct gw_topic_sub s = { .chan = chan, .policy = (uint8_t)policy, .key_len = key_len };
	for (unsigned k = 0; k < t->nsubs; k++)
		if (t->sub[k].chan == chan) {
			t->sub[k] = s;
			return 0;
		}
	if (t->nsubs == GW_TOPIC_SUBS) {
		topic_put(ts, (unsigned)i);
		return -ENOSPC;
	}
	/* In channel order: a receiver that holds a publication part-way
	 * through its subscribers goes on from a channel id, whatever
	 * subscriptions came or went meanwhile. */
	unsigned at = t->nsubs;
	while (at && t->sub[at - 1].chan > chan) {
		t->sub[at] = t->sub[at - 1];
		at--;
	}
	t->sub[at] = s;
	t->nsubs++;
	ts->version += t->nsubs == 1; /* a topic this node now advertises */
	return 0;
}

/* Take subscriber k off topic i, keeping the others in channel order. */
static void sub_del(struct gw_topics *ts, unsigned i, unsigned k)
{
	struct gw_topic *t = &ts->t[i];
	memmove(&t->sub[k], &t->sub[k + 1], (--t->nsubs - k) * sizeof(t->sub[0]));
	ts->version += t->nsubs == 0; /* one it advertises no more */
	topic_put(ts, i);
}

int gw_topic_unsubscribe(struct gw_topics *ts, const char *name, uint32_t id, uint16_t chan)
{
	int i = id ? topic_get(ts, name, id, false) : -ENOENT;
	if (i < 0)
		return -ENOENT;
	for (unsigned k = 0; k < ts->t[i].nsubs; k++)
		if (ts->t[i].sub[k].chan == chan) {
			sub_del(ts, (unsigned)i, k);
			return 0;
		}
	return -ENOENT;
}

unsigned gw_topic_count_chan(const struct gw_topics *ts, uint16_t chan)
{
	unsigned n = 0;
	for (unsigned i = 0; i < GW_TOPICS_MAX; i++)
		for (unsigned k = 0; ts->t[i].id && k < ts->t[i].nsubs; k++)
			n += ts->t[i].sub[k].chan == chan;
	return n;
}

unsigned gw_topic_drop_chan(struct gw_topics *ts, uint16_t chan)
{
	unsigned n = 0;
	for (unsigned i = 0; i < GW_TOPICS_MAX; i++)
		for (unsigned k = 0; ts->t[i].id && k < ts->t[i].nsubs; k++)
			if (ts->t[i].sub[k].chan == chan) {
				sub_del(ts, i, k); /* a chan subscribes once per topic */
				n++;
				break;
			}
	return n;
}

unsigned gw_topic_set_node(struct gw_topics *ts, uint16_t node, const char (*names)[GW_DIR_NAME],
			   const uint32_t *ids, unsigned n)
{
	uint64_t bit = 1ull << (node % 64);
	unsigned w = (node % GW_TOPIC_NODES) / 64, refused = 0;
	for (unsigned i = 0; i < GW_TOPICS_MAX; i++)
		if (ts->t[i].id && (ts->t[i].nodes[w] & bit)) {
			ts->t[i].nodes[w] &= ~bit;
			topic_put(ts, i);
		}
	for (unsigned k = 0; k < n; k++) {
		int i = ids[k] && memchr(names[k], '\0', GW_DIR_NAME)
			? topic_get(ts, names[k], ids[k], true) : -EINVAL;
		if (i < 0)
			refused++;
		else
			ts->t[i].nodes[w] |= bit;
	}
	return refused;
}

bool gw_topic_node_is(const struct gw_topics *ts, uint16_t node, const uint32_t *ids, unsigned n)
{
	unsigned has = 0;
	for (unsigned i = 0; i < GW_TOPICS_MAX; i++)
		has += ts->t[i].id && gw_topic_has_node(&ts->t[i], node);
	if (has != n)
		return false;
	for (unsigned k = 0; k < n; k++) {
		const struct gw_topic *t = gw_topic_find(ts, ids[k]);
		if (!t || !gw_topic_has_node(t, node))
			return false;
	}
	return true;
}

const struct gw_topic *gw_topic_find(const struct gw_topics *ts, uint32_t id)
{
	uint16_t at = gw_dir_find(&ts->dir, id);
	return at ? &ts->t[at - 1] : NULL;
}

unsigned gw_topic_local(const struct gw_topics *ts, char (*names)[GW_DIR_NAME], uint32_t *ids,
			unsigned max)
{
	unsigned n = 0;
	for (unsigned i = 0; i < GW_TOPICS_MAX; i++) {
		const struct gw_topic *t = &ts->t[i];
		if (!t->id || !t->nsubs)
			continue;
		if (n < max) {
			ids[n] = t->id;
			memcpy(names[n], gw_dir_name(&ts->dir, t->id), GW_DIR_NAME);
		}
		n++;
	}
	return n;
}

void gw_topic_adv_init(struct gw_topic_adv *a)
{
	a->version = 0;
	a->total = a->have = 0;
}

int gw_topic_adv_part(struct gw_topic_adv *a, uint32_t version, uint16_t total, uint16_t first,
		      const char (*names)[GW_DIR_NAME], const uint32_t *ids, uint16_t n)
{
	if (total > GW_TOPICS_MAX)
		return -ENOSPC;
	if (first == 0) {
		a->version = version;
		a->total = total;
		a->have = 0;
	} else if (version != a->version || total != a->total || first != a->have) {
		return -EPROTO;
	}
	if ((uint32_t)first + n > total)
		return -EPROTO;
	if (n) {
		memcpy(a->names[first], names, (size_t)n * GW_DIR_NAME);
		memcpy(&a->ids[first], ids, (size_t)n * sizeof(*ids));
	}
	a->have = (uint16_t)(first + n);
	return a->have == a->total;
}

int gw_topic_tell_next(struct gw_topic_tell *t, uint32_t session, uint32_t version,
		       uint16_t total, uint64_t now, uint64_t refresh_ns)
{
	bool begin;
	if (session != t->session) {
		t->session = session;
		t->telling = false;
		/* A peer we lost sight of may still hold what we said before:
		 * once we have had topics, even an empty one goes. */
		begin = total > 0 || version != 0;
	} else if (version != t->version) {
		begin = true;
	} else if (t->telling) {
		return t->next;
	} else {
		begin = total > 0 && now - t->since_ns >= refresh_ns;
	}
	t->version = version;
	if (!begin)
		return -1;
	*t = (struct gw_topic_tell){
		.session = session, .version = version, .total = total, .telling = true,
		.since_ns = now,
	};
	return 0;
}

void gw_topic_tell_sent(struct gw_topic_tell *t, uint16_t n)
{
	t->next = (uint16_t)(t->next + n);
	t->telling = t->next < t->total;
}
