/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_conflate: the newest message per key, bounded (see gw_conflate.h). */
#include "gw_conflate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Indexes are stored +1 so that 0 means none. */
struct gw_conflate_entry {
	uint32_t chain;      /* next in its hash chain */
	uint32_t prev, next; /* age order: prev older, next newer */
	uint32_t key_len, len;
	uint32_t hash;
	uint8_t *mem; /* key_len bytes of key, then len of record */
};

static uint32_t key_hash(const uint8_t *k, uint32_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

int gw_conflate_init(struct gw_conflate *c, uint32_t key_len, uint32_t max_keys,
		     size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	if (!key_len || key_len > GW_CONFLATE_KEY_MAX || !max_keys || max_keys > 1u << 24 ||
	    !max_bytes)
		return -EINVAL;
	uint32_t nb = 1;
	while (nb < 2 * max_keys) /* chains of one entry on average at worst */
		nb <<= 1;
	c->bucket = calloc(nb, sizeof(*c->bucket));
	c->e = calloc(max_keys, sizeof(*c->e));
	if (!c->bucket || !c->e) {
		gw_conflate_free(c);
		return -ENOMEM;
	}
	c->key_len = key_len;
	c->max_keys = max_keys;
	c->max_bytes = max_bytes;
	c->bucket_mask = nb - 1;
	for (uint32_t i = 0; i < max_keys; i++)
		c->e[i].chain = i + 2 <= max_keys ? i + 2 : 0;
	c->free_head = 1;
	return 0;
}

void gw_conflate_free(struct gw_conflate *c)
{
	for (uint32_t i = c->head; i; i = c->e[i - 1].next)
		free(c->e[i - 1].mem);
	free(c->bucket);
	free(c->e);
	memset(c, 0, sizeof(*c));
}

/* Take entry x (+1) out of the age order. */
static void age_unlink(struct gw_conflate *c, uint32_t x)
{
	struct gw_conflate_entry *e = &c->e[x - 1];
	if (e->prev)
		c->e[e->prev - 1].next = e->next;
	else
		c->head = e->next;
	if (e->next)
		c->e[e->next - 1].prev = e->prev;
	else
		c->tail = e->prev;
}

/* Take entry x (+1) out of its hash chain and the age order, and free it. */
static void unlink_entry(struct gw_conflate *c, uint32_t x)
{
	struct gw_conflate_entry *e = &c->e[x - 1];
	uint32_t *p = &c->bucket[e->hash & c->bucket_mask];
	while (*p != x)
		p = &c->e[*p - 1].chain;
	*p = e->chain;
	age_unlink(c, x);
	c->bytes -= (size_t)e->key_len + e->len;
	c->n--;
	free(e->mem);
	e->mem = NULL;
	e->chain = c->free_head;
	c->free_head = x;
}

/* Put entry x (+1) at the back of the age order. */
static void append(struct gw_conflate *c, uint32_t x)
{
	struct gw_conflate_entry *e = &c->e[x - 1];
	e->prev = c->tail;
	e->next = 0;
	if (c->tail)
		c->e[c->tail - 1].next = x;
	else
		c->head = x;
	c->tail = x;
}

/* Copy a record (head, then body) into mem, after its key of kl bytes. */
static void fill(uint8_t *mem, uint32_t kl, const void *head, uint32_t head_len,
		 const void *body, uint32_t body_len)
{
	if (head_len)
		memcpy(mem + kl, head, head_len);
	if (body_len)
		memcpy(mem + kl + head_len, body, body_len);
}

int gw_conflate_put(struct gw_conflate *c, const void *msg, size_t msg_len, const void *head,
		    uint32_t head_len, const void *body, uint32_t body_len)
{
	uint32_t kl = msg_len < c->key_len ? (uint32_t)msg_len : c->key_len;
	uint32_t len = head_len + body_len;
	size_t need = (size_t)kl + len;
	if (need > c->max_bytes)
		return -EMSGSIZE;
	uint32_t h = key_hash(msg, kl), old = c->bucket[h & c->bucket_mask];
	for (; old; old = c->e[old - 1].chain) {
		const struct gw_conflate_entry *e = &c->e[old - 1];
		if (e->hash == h && e->key_len == kl && !memcmp(e->mem, msg, kl))
			break;
	}
	if (old && c->e[old - 1].len == len) {
		/* A signal's values are mostly of one size: the memory is
		 * reused, the entry goes to the back as the newest. */
		fill(c->e[old - 1].mem, kl, head, head_len, body, body_len);
		age_unlink(c, old);
		append(c, old);
		c->conflated++;
		return 1;
	}
	uint8_t *mem = malloc(need ? need : 1);
	if (!mem)
		return -ENOMEM;
	if (kl)
		memcpy(mem, msg, kl);
	fill(mem, kl, head, head_len, body, body_len);
	if (old) {
		unlink_entry(c, old);
		c->conflated++;
	}
	while (c->n == c->max_keys || c->bytes + need > c->max_bytes) {
		unlink_entry(c, c->head);
		c->evicted++;
	}
	uint32_t x = c->free_head;
	struct gw_conflate_entry *e = &c->e[x - 1];
	c->free_head = e->chain;
	*e = (struct gw_conflate_entry){ .key_len = kl, .len = len, .hash = h, .mem = mem };
	uint32_t *b = &c->bucket[h & c->bucket_mask];
	e->chain = *b;
	*b = x;
	append(c, x);
	c->bytes += need;
	c->n++;
	return old != 0;
}

const void *gw_conflate_front(const struct gw_conflate *c, uint32_t *len)
{
	if (!c->head)
		return NULL;
	const struct gw_conflate_entry *e = &c->e[c->head - 1];
	*len = e->len;
	return e->mem + e->key_len;
}

void gw_conflate_pop(struct gw_conflate *c)
{
	if (c->head)
		unlink_entry(c, c->head);
}
