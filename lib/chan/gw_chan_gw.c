/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_chan, gateway side: creates regions, reads TX, writes RX. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "gw_chan.h"

#define GW_CHAN_PAGE 4096u

static inline bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static inline uint32_t align_up(uint32_t v, uint32_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static bool tx_params_ok(uint32_t ring_count, uint32_t arena_size, uint32_t msg_max)
{
	return is_pow2(ring_count) && is_pow2(arena_size) && msg_max <= arena_size / 2;
}

int gw_chan_alive_create(struct gw_chan_alive **page, int *fd)
{
	pthread_mutexattr_t a;
	int rc;
	*fd = memfd_create("gw_alive", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return -errno;
	struct gw_chan_alive *p = MAP_FAILED;
	if (ftruncate(*fd, sizeof(*p)) < 0 ||
	    (p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0)) == MAP_FAILED)
		goto fail;
	if ((rc = pthread_mutexattr_init(&a)) || (rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED)) ||
	    (rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST)) ||
	    (rc = pthread_mutex_init(&p->held, &a)) || (rc = pthread_mutex_lock(&p->held))) {
		errno = rc;
		goto fail;
	}
	/* The futex word: the one that holds our thread id now. */
	const uint32_t *w = (const uint32_t *)&p->held;
	for (p->word = 0; p->word < sizeof(p->held) / 4 && w[p->word] != (uint32_t)gettid(); p->word++)
		;
	/* Ours alone to write from here: clients map it read-only. */
	if (p->word == sizeof(p->held) / 4 ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0) {
		if (p->word == sizeof(p->held) / 4)
			errno = ENOTSUP; /* a C library whose mutex we cannot read */
		rc = -errno;
		pthread_mutex_unlock(&p->held); /* off this thread's robust list before the unmap */
		errno = -rc;
		goto fail;
	}
	*page = p;
	return 0;
fail:
	rc = -errno;
	if (p != MAP_FAILED)
		munmap(p, sizeof(*p));
	close(*fd);
	*fd = -1;
	return rc;
}

void gw_chan_alive_destroy(struct gw_chan_alive *page, int fd)
{
	pthread_mutex_unlock(&page->held);
	munmap(page, sizeof(*page));
	close(fd);
}

int gw_chan_create(struct gw_chan *c, uint32_t chan_id, uint32_t node_id,
		   const struct gw_chan_params *p)
{
	memset(c, 0, sizeof(*c));
	c->memfd = c->efd_rx = c->efd_tx = -1;
	if (p->msg_max == 0 || p->msg_max > UINT16_MAX ||
	    !tx_params_ok(p->ring_count, p->arena_size, p->msg_max))
		return -EINVAL;
	uint32_t uring = p->ring_count / 8 > 64 ? p->ring_count / 8 : 64;
	uint32_t uarena = p->arena_size >= 8 ? p->arena_size / 8 : p->arena_size;
	while (uarena < 2 * p->msg_max)
		uarena *= 2;
	if (p->rx_parts < 1 || p->rx_parts > GW_CHAN_RX_MAX)
		return -EINVAL;
	ssize_t rsz = rte_ring_get_memsize_elem(sizeof(struct gw_chan_desc), p->ring_count);
	if (rsz < 0)
		return (int)rsz;
	struct gw_chan_tx_layout tx[GW_CLASSES] = {
		[GW_CLASS_BULK] = { .ring_count = p->ring_count, .arena_size = p->arena_size },
		[GW_CLASS_URGENT] = { .ring_count = uring, .arena_size = uarena },
	};
	uint64_t end = align_up(sizeof(struct gw_chan_shm), 64);
	for (unsigned k = 0; k < GW_CLASSES; k++) {
		ssize_t tsz = rte_ring_get_memsize_elem(sizeof(struct gw_chan_desc),
							tx[k].ring_count);
		if (tsz < 0)
			return (int)tsz;
		tx[k].ring_off = (uint32_t)end;
		tx[k].arena_off = align_up(tx[k].ring_off + (uint32_t)tsz, GW_CHAN_PAGE);
		end = (uint64_t)tx[k].arena_off + tx[k].arena_size;
	}
	struct gw_chan_rx_layout rx[GW_CHAN_RX_MAX];
	for (unsigned i = 0; i < p->rx_parts; i++) {
		rx[i].ring_off = (uint32_t)end;
		rx[i].arena_off = align_up(rx[i].ring_off + (uint32_t)rsz, GW_CHAN_PAGE);
		end = (uint64_t)rx[i].arena_off + p->arena_size;
		if (end > UINT32_MAX)
			return -E2BIG;
	}
	uint64_t size = end;

	char name[32];
	snprintf(name, sizeof(name), "gridwire-chan-%u", chan_id);
	c->memfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (c->memfd < 0)
		return -errno;
	int rc = -errno;
	if (ftruncate(c->memfd, (off_t)size) < 0)
		goto fail;
	/* The client gets this fd too: sealing its size keeps it from
	 * shrinking the region under us, which would fault the gateway. */
	if (fcntl(c->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	c->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, c->memfd, 0);
	if (c->base == MAP_FAILED) {
		c->base = NULL;
		goto fail;
	}
	c->efd_rx = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->efd_tx = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->efd_rx < 0 || c->efd_tx < 0)
		goto fail;

	c->size = (uint32_t)size;
	c->chan_id = chan_id;
	c->msg_max = p->msg_max;
	c->shm = (struct gw_chan_shm *)c->base;
	c->rx_mask = p->arena_size - 1;
	c->rx_parts = p->rx_parts;
	c->ring_half = p->ring_count / 2;
	c->ring_mask = p->ring_count - 1;

	for (unsigned k = 0; k < GW_CLASSES; k++) {
		struct gw_chan_tx *t = &c->tx[k];
		t->ring = (struct rte_ring *)(c->base + tx[k].ring_off);
		t->arena = c->base + tx[k].arena_off;
		t->mask = tx[k].arena_size - 1;
		t->ring_half = tx[k].ring_count / 2;
		t->ring_mask = tx[k].ring_count - 1;
		snprintf(name, sizeof(name), "gw-tx-%u.%u", chan_id, k);
		rc = rte_ring_init(t->ring, name, tx[k].ring_count, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (rc < 0)
			goto fail_rc;
	}
	for (unsigned i = 0; i < p->rx_parts; i++) {
		c->rx[i].ring = (struct rte_ring *)(c->base + rx[i].ring_off);
		c->rx[i].arena = c->base + rx[i].arena_off;
		snprintf(name, sizeof(name), "gw-rx-%u.%u", chan_id, i);
		rc = rte_ring_init(c->rx[i].ring, name, p->ring_count, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (rc < 0)
			goto fail_rc;
	}

	struct gw_chan_shm *s = c->shm;
	s->chan_id = chan_id;
	s->node_id = node_id;
	s->size = c->size;
	s->msg_max = p->msg_max;
	s->ring_count = p->ring_count;
	memcpy(s->tx, tx, sizeof(tx));
	s->rx_parts = p->rx_parts;
	s->rx_arena_size = p->arena_size;
	memcpy(s->rx, rx, sizeof(rx[0]) * p->rx_parts);
	s->version = GW_CHAN_VERSION;
	s->rx_wait_cpu = GW_CHAN_CPU_NONE;
	__atomic_store_n(&s->magic, GW_CHAN_MAGIC, __ATOMIC_RELEASE);
	return 0;
fail:
	rc = -errno;
fail_rc:
	gw_chan_close(c);
	return rc;
}

/*
 * The rings live in memory the client can write, header included, and
 * rte_ring's inline functions take size and mask from that header on every
 * call. So the gateway reads and writes them through its own view: the
 * same layout (elements after the struct, positions in prod/cons), but the
 * mask is the gateway's copy and the only shared words it reads are the
 * client's position, which it checks before use.
 */
static inline struct gw_chan_desc *ring_elems(struct rte_ring *r)
{
	return (struct gw_chan_desc *)(r + 1);
}

/* Descriptors the client has published in a class and we have not
 * taken, or -1 if its position is impossible. */
static int64_t tx_avail(const struct gw_chan_tx *t)
{
	uint32_t n = __atomic_load_n(&t->ring->prod.tail, __ATOMIC_ACQUIRE) - t->pos;
	return n > t->ring_mask ? -1 : (int64_t)n;
}

/* Take up to max descriptors into the class's private cache. */
static unsigned tx_take(struct gw_chan *c, struct gw_chan_tx *t, unsigned max)
{
	int64_t avail = tx_avail(t);
	if (avail < 0) {
		c->broken = true;
		return 0;
	}
	unsigned n = avail < max ? (unsigned)avail : max;
	const struct gw_chan_desc *e = ring_elems(t->ring);
	for (unsigned i = 0; i < n; i++)
		t->cache[i] = e[(t->pos + i) & t->ring_mask];
	t->pos += n;
	t->ring->cons.head = t->pos;
	__atomic_store_n(&t->ring->cons.tail, t->pos, __ATOMIC_RELEASE);
	return n;
}

unsigned gw_chan_backlog(const struct gw_chan *c, unsigned cls)
{
	const struct gw_chan_tx *t = &c->tx[cls];
	int64_t avail = tx_avail(t);
	return (unsigned)(avail < 0 ? 0 : avail) + t->cache_n - t->cache_i;
}

unsigned gw_chan_peek(struct gw_chan *c, unsigned cls, struct gw_chan_msg *out, unsigned max)
{
	struct gw_chan_tx *t = &c->tx[cls];
	if (c->broken)
		return 0;
	if (t->cache_i == t->cache_n) {
		/* Descriptors are copied out of shared memory before they are
		 * checked, so the client cannot change them after the check. */
		t->cache_i = 0;
		t->cache_n = (uint16_t)tx_take(c, t, GW_CHAN_BURST);
	}
	uint32_t id = cls == GW_CLASS_URGENT ? GW_CHAN_MSG_URGENT : 0;
	unsigned n = 0;
	for (unsigned i = t->cache_i; i < t->cache_n && n < max; i++, n++) {
		const struct gw_chan_desc *d = &t->cache[i];
		uint32_t off = d->pos & t->mask;
		if (d->len > c->msg_max || off + d->len > t->mask + 1 || d->node >= GW_MAX_NODES) {
			c->broken = true;
			break;
		}
		out[n].data = t->arena + off;
		out[n].len = d->len;
		out[n].node = d->node;
		out[n].ep = d->ep;
		out[n].msg_id = ((t->msgs + n) & ~GW_CHAN_MSG_URGENT) | id;
	}
	return n;
}

void gw_chan_consume(struct gw_chan *c, unsigned cls, unsigned n)
{
	struct gw_chan_tx *t = &c->tx[cls];
	if (n == 0)
		return;
	const struct gw_chan_desc *last = &t->cache[t->cache_i + n - 1];
	t->cache_i += n;
	t->msgs += n;
	__atomic_store_n(&c->shm->tx_tail[cls].tail, last->pos + last->len, __ATOMIC_RELEASE);
	/* Pairs with the fence in gw_chan_wait: either the client sees the
	 * new tail or we see its wait flag. A sleeping sender is woken once
	 * half its ring is free, not for every slot: one wake-up then moves
	 * a burst. Consumption goes on while descriptors remain, so the
	 * wake-up always comes. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (c->shm->tx_wait && gw_chan_backlog(c, cls) <= t->ring_half) {
		c->shm->tx_wait = 0;
		eventfd_write(c->efd_tx, 1);
	}
}

void gw_chan_checkpoint(struct gw_chan *c, unsigned cls, uint32_t serial)
{
	struct gw_chan_tx *t = &c->tx[cls];
	unsigned last = (t->ck_first + t->ck_n + GW_CHAN_CHECKPOINTS - 1) % GW_CHAN_CHECKPOINTS;
	if (t->ck_n ? t->ck[last].msgs == t->msgs : t->settled == t->msgs)
		return;
	if (t->ck_n == GW_CHAN_CHECKPOINTS) {
		t->ck[last].serial = serial;
		t->ck[last].msgs = t->msgs;
		return;
	}
	unsigned i = (t->ck_first + t->ck_n++) % GW_CHAN_CHECKPOINTS;
	t->ck[i].serial = serial;
	t->ck[i].msgs = t->msgs;
}

void gw_chan_settle(struct gw_chan *c, unsigned cls, uint32_t below)
{
	struct gw_chan_tx *t = &c->tx[cls];
	uint32_t settled = t->settled;
	/* Serials wrap: "below" is a signed distance, never far apart. */
	while (t->ck_n && (int32_t)(t->ck[t->ck_first].serial - below) < 0) {
		settled = t->ck[t->ck_first].msgs;
		t->ck_first = (uint8_t)((t->ck_first + 1) % GW_CHAN_CHECKPOINTS);
		t->ck_n--;
	}
	if (settled != t->settled) {
		t->settled = settled;
		__atomic_store_n(&c->shm->tx_tail[cls].settled, settled, __ATOMIC_RELEASE);
	}
}

/* Are fewer than n descriptors of x unread? The client's position as last
 * read over-estimates what is unread: its cache line is read again only
 * when that says n or more, not pulled from the reading client on every
 * message. */
static inline bool rx_unread_below(struct gw_chan_rx *x, uint32_t n)
{
	if (x->pos - x->cons_cache < n)
		return true;
	x->cons_cache = __atomic_load_n(&x->ring->cons.tail, __ATOMIC_ACQUIRE);
	return x->pos - x->cons_cache < n;
}

int gw_chan_deliver(struct gw_chan *c, unsigned part, struct gw_chan_desc d, const void *data)
{
	struct gw_chan_rx *x = &c->rx[part];
	uint32_t len = d.len;
	uint32_t size = c->rx_mask + 1;
	if (len > c->msg_max)
		return -EMSGSIZE;
	uint32_t off = x->head & c->rx_mask;
	uint32_t pad = off + len > size ? size - off : 0;
	uint32_t used = x->head - x->tail_cache;
	if (used > size || size - used < pad + len) {
		/* rx_tail is the client's word: a bad value only makes its
		 * own channel look full. */
		x->tail_cache = __atomic_load_n(&c->shm->rx_tail[part].tail, __ATOMIC_ACQUIRE);
		used = x->head - x->tail_cache;
		if (used > size || size - used < pad + len) {
			x->full++;
			return -ENOBUFS;
		}
	}
	/* cons.tail is the client's word too: a bad one makes only its own
	 * ring look full, or lets us overwrite its own unread messages. */
	if (!rx_unread_below(x, c->ring_mask)) {
		x->full++;
		return -ENOBUFS; /* the descriptor ring is full */
	}
	/* Built privately (d comes in registers) and only then stored: the
	 * slot is the client's memory, so nothing is read back from it. */
	struct gw_chan_desc out = d;
	out.pos = x->head + pad;
	memcpy(x->arena + (out.pos & c->rx_mask), data, len);
	x->head = out.pos + len;
	ring_elems(x->ring)[x->pos & c->ring_mask] = out;
	x->pos++;
	x->delivered++;
	/* The next delivery here will most likely write the arena lines
	 * after this one, and a later one the descriptors' next line (four
	 * to a line): ask for them now, so their misses overlap other work. */
	for (uint32_t i = 0; i < 4; i++)
		__builtin_prefetch(x->arena + ((x->head + i * 64) & c->rx_mask), 1);
	__builtin_prefetch(&ring_elems(x->ring)[(x->pos + 3) & c->ring_mask], 1);
	return 0;
}

/* What RX part `part` holds that the client has not read: descriptors and
 * arena bytes. pos and head are the receiver's own; from another thread
 * (the control role's sampling) they are a moment old. */
static void rx_queued(const struct gw_chan *c, unsigned part, uint32_t *descs, uint32_t *bytes)
{
	const struct gw_chan_rx *x = &c->rx[part];
	*descs = __atomic_load_n(&x->pos, __ATOMIC_RELAXED) -
		 __atomic_load_n(&x->ring->cons.tail, __ATOMIC_ACQUIRE);
	*bytes = __atomic_load_n(&x->head, __ATOMIC_RELAXED) -
		 __atomic_load_n(&c->shm->rx_tail[part].tail, __ATOMIC_ACQUIRE);
}

bool gw_chan_rx_unread_below(struct gw_chan *c, unsigned part, uint32_t n)
{
	return rx_unread_below(&c->rx[part], n);
}

bool gw_chan_rx_below_half(const struct gw_chan *c, unsigned part)
{
	uint32_t descs, bytes;
	rx_queued(c, part, &descs, &bytes);
	return descs < c->ring_half && bytes <= (c->rx_mask + 1) / 2;
}

unsigned gw_chan_rx_fill_permille(const struct gw_chan *c, unsigned part)
{
	uint32_t descs, bytes;
	rx_queued(c, part, &descs, &bytes);
	/* The client's positions are its word: clamped. */
	uint64_t d = (uint64_t)descs * 1000 / (c->ring_mask + 1);
	uint64_t b = (uint64_t)bytes * 1000 / (c->rx_mask + 1);
	uint64_t m = d > b ? d : b;
	return m > 1000 ? 1000 : (unsigned)m;
}

bool gw_chan_rx_sleeps_on(const struct gw_chan *c, unsigned cpu)
{
	return cpu != GW_CHAN_CPU_NONE && c->shm->rx_wait_cpu == cpu;
}

uint32_t gw_chan_rx_read_pos(const struct gw_chan *c, unsigned part)
{
	return __atomic_load_n(&c->rx[part].ring->cons.tail, __ATOMIC_ACQUIRE);
}

/* After the fence: wake the client if it sleeps (see gw_chan_wake). */
static void wake_if_waiting(struct gw_chan *c)
{
	if (c->shm->rx_wait) {
		c->shm->rx_wait = 0;
		eventfd_write(c->efd_rx, 1);
	}
}

void gw_chan_lost_add(struct gw_chan *c, unsigned part)
{
	/* Its own count, stored: the gateway never reads the region back. */
	__atomic_store_n(&c->shm->rx_lost[part].rejects, ++c->rx[part].lost, __ATOMIC_RELEASE);
}

void gw_chan_wake(struct gw_chan *c)
{
	/* Pairs with the fence in gw_chan_wait: we see its flag, or it sees
	 * what was stored before this call. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	wake_if_waiting(c);
}

void gw_chan_publish(struct gw_chan *c, unsigned part)
{
	gw_chan_publish_set(&c, 1, part, true);
}

void gw_chan_publish_set(struct gw_chan *const *cs, unsigned n, unsigned part, bool wake)
{
	/* One store per run: the client polls this cache line, so a store
	 * per message would pull it back and forth for every message. */
	for (unsigned i = 0; i < n; i++) {
		struct gw_chan_rx *x = &cs[i]->rx[part];
		x->ring->prod.head = x->pos;
		__atomic_store_n(&x->ring->prod.tail, x->pos, __ATOMIC_RELEASE);
	}
	if (!wake || !n)
		return;
	/* Pairs with the fence in gw_chan_wait, as in gw_chan_wake. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < n; i++)
		wake_if_waiting(cs[i]);
}
