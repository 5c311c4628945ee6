/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_conflate: the newest message per key for a subscriber that has fallen
 * behind (a topic's `latest` policy), in bounded memory. Pure C.
 *
 * While a `latest` subscriber is behind (its channel full, or 64 messages
 * unread), its receiver puts what comes for it here instead of holding
 * the publisher. A message whose key (its
 * first key_len bytes) is already waiting replaces that one (conflated)
 * and goes to the back: so what the subscriber reads later is a
 * subsequence of what was published, in order, and holds every key's
 * newest value. When the store is full (keys or bytes), the oldest entry
 * gives way (evicted: that key has no value waiting until it is published
 * again). Once the ring has room the receiver drains the store, oldest
 * first, before anything newer, so order holds across the switch.
 *
 * Single-threaded (the subscriber's receiver lcore). Entries are one
 * allocation each (key copy, then the caller's record), made only on the
 * slow subscriber's path.
 */
#ifndef GW_CONFLATE_H
#define GW_CONFLATE_H

#include <stddef.h>
#include <stdint.h>

#define GW_CONFLATE_KEY_MAX 72 /* longest key, bytes (a topic's: id, length, 64 bytes) */

struct gw_conflate_entry;

struct gw_conflate {
	uint32_t key_len;  /* bytes of a message that make its key */
	uint32_t max_keys; /* entries at most */
	size_t max_bytes;  /* keys and records at most */
	size_t bytes;      /* keys and records now */
	uint32_t n;        /* entries now */
	uint32_t head, tail; /* oldest and newest entry, +1 (0: none) */
	uint32_t free_head;  /* unused entries, +1 */
	uint32_t bucket_mask;
	uint32_t *bucket; /* first entry of each hash chain, +1 */
	struct gw_conflate_entry *e;
	uint64_t conflated; /* messages replaced by a newer one of their key */
	uint64_t evicted;   /* messages given way to make room */
};

/* 0, -EINVAL (key_len 0 or over GW_CONFLATE_KEY_MAX, max_keys 0 or over
 * 2^24, max_bytes 0) or -ENOMEM. */
int gw_conflate_init(struct gw_conflate *c, uint32_t key_len, uint32_t max_keys,
		     size_t max_bytes);
void gw_conflate_free(struct gw_conflate *c);

/*
 * Keep a record, head (head_len bytes) then body (body_len bytes), as the
 * newest of its key: the first key_len bytes of msg (all of it when
 * shorter). 0 when the key was new, 1 when it replaced a waiting one;
 * -EMSGSIZE when key and record alone exceed max_bytes, -ENOMEM when no
 * memory (the store is as it was).
 */
int gw_conflate_put(struct gw_conflate *c, const void *msg, size_t msg_len, const void *head,
		    uint32_t head_len, const void *body, uint32_t body_len);

/* The oldest record waiting (NULL when none) and its length. */
const void *gw_conflate_front(const struct gw_conflate *c, uint32_t *len);
/* Drop the oldest record (after it was delivered). */
void gw_conflate_pop(struct gw_conflate *c);

#endif
