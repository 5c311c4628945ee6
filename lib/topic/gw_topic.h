/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_topic: a gateway's topics: who subscribes to each, here and on which
 * peers. Pure C.
 *
 * A topic is named as endpoints are, and its id is a hash of the name
 * (the caller's). Each topic holds its local subscribers (a client's
 * channel, with the policy for when that client falls behind) and the set
 * of peer nodes that have subscribers of their own, as their last
 * advertisement said (gw_topic_set_node). The publisher's worker reads one
 * record per subscribing node from it; the receiver, the local
 * subscribers to copy into. A topic lives while it has a subscriber
 * anywhere.
 *
 * The names go through a gw_dir (name and id -> topic), so a second name
 * with the same id is refused (-EEXIST) as a second endpoint's is.
 * Single writer (the control role), readers get copies (plain memory, as
 * gw_dir: memcpy makes one). No allocation.
 */
#ifndef GW_TOPIC_H
#define GW_TOPIC_H

#include <stdbool.h>
#include <stdint.h>

#include "gw_dir.h"

#define GW_TOPICS_MAX 1024 /* topics known, local or remote (half of gw_dir's slots) */
#define GW_TOPIC_SUBS 32   /* local subscribers of one topic */
#define GW_TOPIC_NODES 256 /* node ids (GW_MAX_NODES) */
#define GW_TOPIC_KEY_MAX 64 /* a latest subscription's key, bytes at most */

_Static_assert(GW_TOPICS_MAX <= GW_DIR_SLOTS / 2, "gw_dir holds every topic's name");

/* What a subscriber's gateway does when the subscriber's ring is full. */
enum gw_topic_policy {
	GW_TOPIC_HOLD = 0,   /* hold the publisher's lane, then REJECT (as for endpoints) */
	GW_TOPIC_LATEST = 1, /* keep the newest message per key (gw_conflate) */
};

struct gw_topic_sub {
	uint16_t chan;   /* the subscriber's channel */
	uint8_t policy;  /* enum gw_topic_policy */
	uint8_t key_len; /* LATEST: bytes of a message that make its key */
};

struct gw_topic {
	uint32_t id; /* 0: unused */
	uint16_t nsubs;
	struct gw_topic_sub sub[GW_TOPIC_SUBS]; /* in channel order */
	uint64_t nodes[GW_TOPIC_NODES / 64]; /* peers with subscribers */
};

struct gw_topics {
	struct gw_dir dir; /* name, id -> index in t, +1 */
	struct gw_topic t[GW_TOPICS_MAX];
	unsigned n; /* topics in use */
	/* Bumped whenever the set of topics with local subscribers changes:
	 * the version of this node's advertisement. */
	uint32_t version;
};

void gw_topic_init(struct gw_topics *ts);

/*
 * Subscribe chan to topic name (id its hash). Again for the same chan: its
 * policy and key_len change. 0, or -EINVAL (bad id, chan, policy, or
 * key_len 0 or over GW_TOPIC_KEY_MAX for LATEST), -EEXIST (another name has that id), -ENOSPC (too
 * many topics, or subscribers of this one).
 */
int gw_topic_subscribe(struct gw_topics *ts, const char *name, uint32_t id, uint16_t chan,
		       enum gw_topic_policy policy, uint8_t key_len);

/* 0, or -ENOENT when chan does not subscribe to that topic. */
int gw_topic_unsubscribe(struct gw_topics *ts, const char *name, uint32_t id, uint16_t chan);

/* How many topics chan subscribes to. */
unsigned gw_topic_count_chan(const struct gw_topics *ts, uint16_t chan);

/* Every subscription of chan ends (its client left); returns how many. */
unsigned gw_topic_drop_chan(struct gw_topics *ts, uint16_t chan);

/*
 * Peer node now has subscribers to exactly these n topics (names[i], its
 * id ids[i]), replacing what it said before. Returns how many of them were
 * refused: a name whose id another name has here, or no room.
 */
unsigned gw_topic_set_node(struct gw_topics *ts, uint16_t node, const char (*names)[GW_DIR_NAME],
			   const uint32_t *ids, unsigned n);

/* Does peer node subscribe to exactly the n topics ids (distinct)? */
bool gw_topic_node_is(const struct gw_topics *ts, uint16_t node, const uint32_t *ids, unsigned n);

/* The topic of id, or NULL. */
const struct gw_topic *gw_topic_find(const struct gw_topics *ts, uint32_t id);

/* Does node subscribe to t? */
static inline bool gw_topic_has_node(const struct gw_topic *t, uint16_t node)
{
	return (t->nodes[node / 64] >> (node % 64)) & 1;
}

/* The topics with local subscribers, for this node's advertisement: up to
 * max of them into names/ids; returns how many there are. */
unsigned gw_topic_local(const struct gw_topics *ts, char (*names)[GW_DIR_NAME], uint32_t *ids,
			unsigned max);

/*
 * Telling one peer this node's advertisement (the topics with local
 * subscribers), in parts, on one reliable lane: the whole of it when the
 * peer starts a session with us (its session: a count the caller bumps
 * when the peer comes up or restarts) and there is or was something to
 * tell (version not 0: the peer may hold what we said before),
 * when the version changes (an empty one too: the peer drops what it
 * held), and again every refresh while it is not empty, so a peer that
 * dropped us as down while we did not see it go has it again within that.
 */
struct gw_topic_tell {
	uint32_t session, version; /* of the advertisement told or being told */
	uint16_t next, total;      /* its entries sent, of */
	bool telling;
	uint64_t since_ns; /* when it began */
};

/*
 * The first entry of the part to send now, or -1 for none; 0 begins an
 * advertisement of total entries at version. Then gw_topic_tell_sent.
 */
int gw_topic_tell_next(struct gw_topic_tell *t, uint32_t session, uint32_t version,
		       uint16_t total, uint64_t now, uint64_t refresh_ns);

/* The part from gw_topic_tell_next went, with n entries. */
void gw_topic_tell_sent(struct gw_topic_tell *t, uint16_t n);

/*
 * One peer's advertisement being put together from its SUBS records
 * (gw_wire_subs_get), which come in order on its reliable lane: parts
 * first = 0, then each where the last ended, of one version. A part that
 * does not follow starts again from it if it is a first part, and is
 * refused otherwise (a peer that restarted mid-way sends a first part).
 */
struct gw_topic_adv {
	uint32_t version;
	uint16_t total, have; /* entries announced, entries here */
	char names[GW_TOPICS_MAX][GW_DIR_NAME];
	uint32_t ids[GW_TOPICS_MAX];
};

void gw_topic_adv_init(struct gw_topic_adv *a);

/*
 * Take one part (entries first .. first + n - 1 of total, at version).
 * 1 when the advertisement is whole (names/ids/have hold it: give them to
 * gw_topic_set_node), 0 when more parts are due, -EPROTO when the part
 * does not follow (dropped), -ENOSPC when total exceeds GW_TOPICS_MAX.
 */
int gw_topic_adv_part(struct gw_topic_adv *a, uint32_t version, uint16_t total, uint16_t first,
		      const char (*names)[GW_DIR_NAME], const uint32_t *ids, uint16_t n);

#endif
