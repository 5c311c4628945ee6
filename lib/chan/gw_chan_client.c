/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_chan, client side: maps a region, writes TX, reads RX. Uses only
 * rte_ring's inline functions, so client processes need no DPDK runtime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "gw_chan.h"

static bool tx_layout_ok(const struct gw_chan_tx_layout *t, uint32_t msg_max, uint64_t *end)
{
	if (!t->arena_size || (t->arena_size & (t->arena_size - 1)) || !t->ring_count ||
	    (t->ring_count & (t->ring_count - 1)) || msg_max > t->arena_size / 2 ||
	    t->ring_off < *end || t->ring_off >= t->arena_off ||
	    /* the ring's header and slots fit before its arena */
	    sizeof(struct rte_ring) + (uint64_t)t->ring_count * sizeof(struct gw_chan_desc) >
		    t->arena_off - t->ring_off)
		return false;
	*end = (uint64_t)t->arena_off + t->arena_size;
	return true;
}

static bool layout_ok(const struct gw_chan_shm *s, uint64_t size)
{
	if (s->magic != GW_CHAN_MAGIC || s->version != GW_CHAN_VERSION || s->size != size ||
	    !s->rx_arena_size || (s->rx_arena_size & (s->rx_arena_size - 1)) ||
	    s->rx_parts < 1 || s->rx_parts > GW_CHAN_RX_MAX || s->msg_max > s->rx_arena_size / 2)
		return false;
	/* The classes and parts follow the header and each other, none
	 * overlapping the next. */
	uint64_t end = sizeof(*s);
	for (unsigned k = 0; k < GW_CLASSES; k++)
		if (!tx_layout_ok(&s->tx[k], s->msg_max, &end))
			return false;
	for (unsigned i = 0; i < s->rx_parts; i++) {
		if (s->rx[i].ring_off < end || s->rx[i].ring_off >= s->rx[i].arena_off)
			return false;
		end = (uint64_t)s->rx[i].arena_off + s->rx_arena_size;
	}
	return end <= size;
}

int gw_chan_attach(struct gw_chan *c, int memfd, int efd_rx, int efd_tx)
{
	struct stat st;
	memset(c, 0, sizeof(*c));
	if (fstat(memfd, &st) < 0)
		return -errno;
	if (st.st_size < (off_t)sizeof(struct gw_chan_shm) || st.st_size > UINT32_MAX)
		return -EPROTO;
	void *base = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (base == MAP_FAILED)
		return -errno;
	struct gw_chan_shm *s = base;
	if (!layout_ok(s, st.st_size)) {
		munmap(base, st.st_size);
		return -EPROTO;
	}
	c->base = base;
	c->size = (uint32_t)st.st_size;
	c->shm = s;
	c->chan_id = s->chan_id;
	c->msg_max = s->msg_max;
	c->memfd = memfd;
	c->efd_rx = efd_rx;
	c->efd_tx = efd_tx;
	c->hup_fd = -1;
	for (unsigned k = 0; k < GW_CLASSES; k++) {
		c->tx[k].ring = (struct rte_ring *)(c->base + s->tx[k].ring_off);
		c->tx[k].arena = c->base + s->tx[k].arena_off;
		c->tx[k].mask = s->tx[k].arena_size - 1;
		c->tx[k].ring_mask = s->tx[k].ring_count - 1; /* checked above; read once */
	}
	c->rx_mask = s->rx_arena_size - 1;
	c->rx_parts = s->rx_parts;
	for (unsigned i = 0; i < c->rx_parts; i++) {
		c->rx[i].ring = (struct rte_ring *)(c->base + s->rx[i].ring_off);
		c->rx[i].arena = c->base + s->rx[i].arena_off;
	}
	return 0;
}

int gw_chan_attach_alive(struct gw_chan *c, int fd)
{
	const struct gw_chan_alive *p =
		mmap(NULL, sizeof(struct gw_chan_alive), PROT_READ, MAP_SHARED, fd, 0);
	int rc = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc < 0)
		return rc;
	c->alive_page = p;
	if (p->word >= sizeof(p->held) / 4)
		return -EPROTO;
	c->alive = (const volatile uint32_t *)&p->held + p->word; /* the mutex's futex word */
	return 0;
}

/* The client will wait for class cls's tail to move on from tail: what
 * gw_chan_arm compares. */
static void tx_wait_on(struct gw_chan *c, unsigned cls, uint32_t tail)
{
	c->tx[cls].seen_tail = tail;
	c->wait_cls = (uint8_t)cls;
}

/* A send found class cls full at tail. */
static int tx_full(struct gw_chan *c, unsigned cls, uint32_t tail)
{
	tx_wait_on(c, cls, tail);
	c->shm->tx_full++;
	return -EAGAIN;
}

int gw_chan_send_hdr(struct gw_chan *c, unsigned cls, uint16_t node, uint32_t ep,
		     const void *hdr, uint32_t hlen, const void *buf, uint32_t blen)
{
	uint32_t len = hlen + blen;
	if (blen > c->msg_max || len > c->msg_max)
		return -EMSGSIZE;
	if (node >= GW_MAX_NODES || cls >= GW_CLASSES)
		return -EINVAL;
	struct gw_chan_tx *t = &c->tx[cls];
	volatile uint32_t *shared_tail = &c->shm->tx_tail[cls].tail;
	uint32_t size = t->mask + 1;
	uint32_t off = t->head & t->mask;
	/* A payload never wraps: skip to the arena start instead. */
	uint32_t pad = off + len > size ? size - off : 0;
	if (size - (t->head - t->tail_cache) < pad + len) {
		t->tail_cache = __atomic_load_n(shared_tail, __ATOMIC_ACQUIRE);
		if (size - (t->head - t->tail_cache) < pad + len)
			return tx_full(c, cls, t->tail_cache);
	}
	struct gw_chan_desc d = {
		.pos = t->head + pad, .len = (uint16_t)len, .node = node, .ep = ep,
	};
	uint8_t *dst = t->arena + (d.pos & t->mask);
	if (hlen)
		memcpy(dst, hdr, hlen);
	memcpy(dst + hlen, buf, blen);
	if (rte_ring_sp_enqueue_elem(t->ring, &d, sizeof(d)) != 0) {
		/* The descriptor ring is full. Take the tail before trying once
		 * more, so a wait on it cannot miss a consumption in between. */
		uint32_t tail = __atomic_load_n(shared_tail, __ATOMIC_ACQUIRE);
		t->tail_cache = tail;
		if (rte_ring_sp_enqueue_elem(t->ring, &d, sizeof(d)) != 0)
			return tx_full(c, cls, tail);
	}
	t->head = d.pos + len;
	__atomic_store_n(&t->msgs, t->msgs + 1, __ATOMIC_RELEASE); /* read by gw_recv's thread too */
	return 0;
}

bool gw_chan_tx_empty(struct gw_chan *c)
{
	for (unsigned k = 0; k < GW_CLASSES; k++) {
		uint32_t tail = __atomic_load_n(&c->shm->tx_tail[k].tail, __ATOMIC_ACQUIRE);
		if (tail != c->tx[k].head) {
			tx_wait_on(c, k, tail); /* the value just compared, not a newer one */
			return false;
		}
	}
	return true;
}

uint32_t gw_chan_unsettled_of(const struct gw_chan *c, unsigned cls, uint32_t sent)
{
	uint32_t open = sent - __atomic_load_n(&c->shm->tx_tail[cls].settled, __ATOMIC_ACQUIRE);
	return (int32_t)open > 0 ? open : 0;
}

bool gw_chan_sent_desc(const struct gw_chan *c, unsigned cls, uint32_t k, struct gw_chan_desc *d)
{
	/* Send k went into ring slot k (the ring counts from 0, one per send)
	 * and stays there until send k + size takes the slot (which a send
	 * racing this one may be writing: so strictly fewer than size ago). */
	const struct gw_chan_tx *t = &c->tx[cls];
	uint32_t ago = __atomic_load_n(&t->msgs, __ATOMIC_ACQUIRE) - k;
	if (ago == 0 || ago >= t->ring_mask + 1)
		return false;
	memcpy(d, (const struct gw_chan_desc *)(t->ring + 1) + (k & t->ring_mask), sizeof(*d));
	return true;
}

/* Hand released RX bytes back to the gateway, part by part. */
static void rx_publish(struct gw_chan *c)
{
	for (unsigned i = 0; i < c->rx_parts; i++) {
		struct gw_chan_rx *x = &c->rx[i];
		if (x->unpublished) {
			__atomic_store_n(&c->shm->rx_tail[i].tail, x->done, __ATOMIC_RELEASE);
			x->published = x->done;
			x->unpublished = false;
		}
	}
}

int gw_chan_recv(struct gw_chan *c, struct gw_chan_desc *d, const uint8_t **data)
{
	if (c->cache_i == c->cache_n) {
		rx_publish(c);
		c->cache_i = c->cache_n = 0;
		/* The parts in turn, from the one after the last burst's, so no
		 * receiver's messages wait behind another's for long. */
		for (unsigned k = 1; k <= c->rx_parts && !c->cache_n; k++) {
			unsigned part = (c->cache_part + k) % c->rx_parts;
			c->cache_n = (uint16_t)rte_ring_sc_dequeue_burst_elem(
				c->rx[part].ring, c->cache, sizeof(struct gw_chan_desc), GW_CHAN_BURST,
				NULL);
			if (c->cache_n)
				c->cache_part = (uint16_t)part;
		}
		if (c->cache_n == 0)
			return -EAGAIN;
	}
	*d = c->cache[c->cache_i++];
	uint32_t off = d->pos & c->rx_mask;
	if (off + d->len > c->rx_mask + 1)
		return -EPROTO;
	*data = c->rx[c->cache_part].arena + off;
	return d->len;
}

void gw_chan_recv_done(struct gw_chan *c, const struct gw_chan_desc *d)
{
	/* Published once per burst, before sleeping, or once an eighth of the
	 * arena is waiting (large messages), not per message. */
	struct gw_chan_rx *x = &c->rx[c->cache_part];
	x->done = d->pos + d->len;
	x->unpublished = true;
	if (x->done - x->published >= (c->rx_mask + 1) / 8)
		rx_publish(c);
}

bool gw_chan_gateway_lives(const struct gw_chan *c)
{
	/* The owner's thread id: FUTEX_TID_MASK's bits, cleared when it dies. */
	return !c->alive || (__atomic_load_n(c->alive, __ATOMIC_ACQUIRE) & 0x3fffffffu) != 0;
}

uint64_t gw_chan_lost_take(struct gw_chan *c)
{
	uint64_t n = 0;
	for (unsigned p = 0; p < c->rx_parts; p++) {
		uint64_t v = __atomic_load_n(&c->shm->rx_lost[p].rejects, __ATOMIC_ACQUIRE);
		n += v - c->rx[p].lost;
		c->rx[p].lost = v;
	}
	return n;
}

bool gw_chan_gateway_gone(const struct gw_chan *c)
{
	if (!gw_chan_gateway_lives(c))
		return true;
	/* Readable with nothing to read is the socket's end; a request's reply
	 * (taken meanwhile by the request, when another thread asks) is not. */
	char b;
	struct pollfd p = { .fd = c->hup_fd, .events = POLLIN };
	if (c->hup_fd < 0 || poll(&p, 1, 0) != 1)
		return false;
	if (p.revents & (POLLHUP | POLLERR))
		return true;
	ssize_t n = recv(c->hup_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

bool gw_chan_rx_ready(const struct gw_chan *c)
{
	if (c->cache_i < c->cache_n)
		return true;
	for (unsigned i = 0; i < c->rx_parts; i++)
		if (rte_ring_count(c->rx[i].ring) > 0)
			return true;
	return false;
}

bool gw_chan_arm(struct gw_chan *c, bool for_tx)
{
	volatile uint32_t *flag = for_tx ? &c->shm->tx_wait : &c->shm->rx_wait;
	rx_publish(c);
	if (!for_tx) {
		int cpu = sched_getcpu();
		c->shm->rx_wait_cpu = cpu < 0 ? GW_CHAN_CPU_NONE : (uint32_t)cpu;
	}
	*flag = 1;
	/* Pairs with the gateway's fence: it sees the flag or we see its work. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	bool ready = for_tx ? c->shm->tx_tail[c->wait_cls].tail != c->tx[c->wait_cls].seen_tail
			    : gw_chan_rx_ready(c);
	if (ready)
		*flag = 0;
	return ready;
}

int gw_chan_wait(struct gw_chan *c, bool for_tx, int timeout_ms)
{
	int fd = for_tx ? c->efd_tx : c->efd_rx;
	if (gw_chan_arm(c, for_tx))
		return 0;
	volatile uint32_t *flag = for_tx ? &c->shm->tx_wait : &c->shm->rx_wait;
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = c->hup_fd, .events = POLLIN } };
	int rc = poll(p, c->hup_fd >= 0 ? 2 : 1, timeout_ms);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return -ETIMEDOUT;
	if (p[0].revents) {
		eventfd_t v;
		eventfd_read(fd, &v);
		return 0;
	}
	*flag = 0;
	/* Gone, but what it delivered is read first. */
	if (!for_tx && gw_chan_rx_ready(c))
		return 0;
	return gw_chan_gateway_gone(c) ? -EPIPE : 0;
}
