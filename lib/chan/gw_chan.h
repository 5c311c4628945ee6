/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_chan: the shared-memory channel between one client and its gateway.
 *
 * One memfd region per client connection, created by the gateway and handed
 * to the client over the control socket. TX (client -> gateway) is one
 * rte_ring of 16-byte descriptors and a byte arena for the payloads per
 * class of message (bulk, urgent); RX (gateway -> client) is one such ring
 * and arena per receiver lcore, so that every ring has one producer and
 * one consumer:
 *
 *   [gw_chan_shm header | TX ring, arena: bulk | TX ring, arena: urgent |
 *    RX ring 0 | RX arena 0 | ...]
 *
 * The urgent class has a ring of its own so that the gateway can take a
 * sender's urgent messages before the bulk ones queued ahead of them:
 * order holds per sender and class, and an urgent message may overtake
 * its sender's bulk.
 *
 * TX: the client copies a payload into the arena at its head position
 * (skipping to the start rather than wrapping a payload) and enqueues a
 * descriptor; the gateway validates it, packs the payload into a frame and
 * then publishes tx_tail so the client may reuse the bytes. Each RX part is
 * the mirror image, written by one receiver; the client reads the parts in
 * turn. A sender's messages all come through one receiver (its lane's), so
 * they reach the client in order.
 *
 * Trust: the gateway never reads the header back; it keeps its own copy of
 * the layout in struct gw_chan, masks every arena position and checks every
 * length before use. The rings are rte_rings (the client uses rte_ring's
 * inline functions), but the gateway accesses them through its own view
 * with its own mask, since rte_ring's functions would read size and mask
 * from the shared header on every call. A client that scribbles on its
 * region can only lose its own messages; an impossible ring position or
 * an invalid descriptor marks the channel broken and the client is cut off.
 *
 * Sleeping: a side that wants to block sets its *_wait flag and waits on an
 * eventfd; the other side signals the eventfd when it sees the flag.
 */
#ifndef GW_CHAN_H
#define GW_CHAN_H

#include <stdalign.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gw_wire.h" /* enum gw_class */

#define GW_CHAN_MAGIC 0x4e414843u /* "CHAN" */
#define GW_CHAN_VERSION 6
#define GW_CHAN_CPU_NONE UINT32_MAX /* rx_wait_cpu: not known (yet) */
#define GW_MAX_NODES 256
#define GW_CHAN_BURST 32
#define GW_CHAN_RX_MAX 8 /* RX parts: one per receiver lcore */
#define GW_CHAN_CHECKPOINTS 4 /* per TX class: how finely settling follows consumption */

struct rte_ring;

/* A TX descriptor's node for a message published to topic `ep`: no node
 * has id 0. */
#define GW_CHAN_NODE_TOPIC 0

/* An RX descriptor's kind carries this bit for a message of the urgent class. */
#define GW_CHAN_KIND_URGENT 0x8000u
/* The msg_id of an urgent send (REJECTs): urgent sends count apart, with this bit. */
#define GW_CHAN_MSG_URGENT 0x80000000u

/* A descriptor, the element of both rings. */
struct gw_chan_desc {
	uint32_t pos;  /* arena position of the payload (free-running) */
	uint16_t len;  /* payload bytes */
	uint16_t node; /* TX: destination node; RX: source node */
	uint32_t ep;   /* destination endpoint id */
	uint16_t chan; /* RX: sender channel on the source node */
	uint16_t kind; /* RX: GW_RK_MSG or GW_RK_REJECT, | GW_CHAN_KIND_URGENT */
};

/* Payload of an RX descriptor of kind GW_RK_REJECT. */
struct gw_chan_reject {
	int32_t err;     /* negative errno: why it was not delivered */
	uint32_t msg_id; /* the sender's message number (0 = first send) */
	uint16_t node;   /* the node it was for */
	uint16_t rsv;
};

/* Where one RX part or TX class lies in the region. */
struct gw_chan_rx_layout {
	uint32_t ring_off, arena_off;
};
struct gw_chan_tx_layout {
	uint32_t ring_off, arena_off, arena_size, ring_count;
};

/* The gateway's words for one TX class, on a line of its own. */
struct gw_chan_tx_tail {
	alignas(64) volatile uint32_t tail; /* TX arena bytes before it may be reused */
	/* Messages of the class, counted from the first send, whose fate is
	 * settled: delivered into their destination's ring, refused there
	 * (a REJECT is on its way), or refused by this gateway (its REJECT
	 * is in the client's ring). Always a prefix of the sends: what a
	 * client sent past it is in flight, and in doubt if the gateway dies. */
	volatile uint32_t settled;
};

/* The client's word for one RX part, on a line of its own. */
struct gw_chan_rx_tail {
	alignas(64) volatile uint32_t tail; /* RX arena bytes before it may be reused */
};

/* The gateway's count of REJECTs for this client that it had to drop from
 * one RX part (the client read nothing while they waited: gw_deliver_owed),
 * on a line of its own, so the client can be told how many (gw_recv). */
struct gw_chan_rx_lost {
	alignas(64) volatile uint64_t rejects;
};

/*
 * The gateway's liveness, for a client to ask on every send at the cost of
 * a load: one page per gateway, sealed (F_SEAL_FUTURE_WRITE) so that
 * clients can map it only read-only, holding a robust, process-shared
 * mutex that the gateway's main thread locks at start and holds for its
 * life. One word of the mutex is its futex word (which one depends on the
 * C library: the gateway finds it, the one holding its thread id, and
 * says which in `word`): it holds the owner's thread id while the owner
 * lives, and the kernel clears that and sets FUTEX_OWNER_DIED when the
 * owner dies, even by SIGKILL, before the gateway's sockets close. Clients
 * cannot write the page, so none can unlink the robust list that the
 * kernel walks. Sealing needs Linux 5.1 or later.
 */
struct gw_chan_alive {
	alignas(64) pthread_mutex_t held;
	uint32_t word; /* the futex word's index in held, in 32-bit words */
};

struct gw_chan_shm {
	uint32_t magic, version;
	uint32_t chan_id, node_id;
	uint32_t size, msg_max;
	uint32_t ring_count; /* RX rings' */
	struct gw_chan_tx_layout tx[GW_CLASSES];
	uint32_t rx_parts, rx_arena_size;
	struct gw_chan_rx_layout rx[GW_CHAN_RX_MAX];
	uint64_t nodes_up[GW_MAX_NODES / 64]; /* written by the gateway */
	/* Written by the client, read for stats only: sends that found the
	 * channel full (-EAGAIN), the backpressure this client felt. */
	volatile uint64_t tx_full;
	struct gw_chan_tx_tail tx_tail[GW_CLASSES];
	alignas(64) volatile uint32_t tx_wait; /* the client waits for room in any class */
	alignas(64) volatile uint32_t rx_wait; /* the client sleeps on any part */
	/* The CPU the client last went to sleep on for RX (GW_CHAN_CPU_NONE
	 * until it has): a hint, in what was padding, so clients that leave
	 * it alone still work. */
	volatile uint32_t rx_wait_cpu;
	struct gw_chan_rx_tail rx_tail[GW_CHAN_RX_MAX];
	struct gw_chan_rx_lost rx_lost[GW_CHAN_RX_MAX];
};

/* Sizing of a new channel. */
struct gw_chan_params {
	uint32_t ring_count; /* descriptors per direction, power of two */
	uint32_t arena_size; /* bytes per direction, power of two */
	uint32_t msg_max;    /* largest payload */
	uint32_t rx_parts;   /* RX rings, one per receiver: 1..GW_CHAN_RX_MAX */
};

/*
 * One RX part as its one writer (a gateway receiver) or its reader (the
 * client) sees it. Each part is a cache line apart from the others, so two
 * receivers never write the same line.
 */
struct gw_chan_rx {
	alignas(64) struct rte_ring *ring;
	uint8_t *arena;
	uint32_t head;       /* gateway: producer's arena position */
	uint32_t tail_cache; /* gateway: the client's tail as last read */
	uint32_t pos;        /* gateway: its position in the ring */
	uint32_t cons_cache; /* gateway: the client's ring position as last read */
	uint64_t delivered, full; /* gateway: into it, and refused for lack of room */
	/* REJECTs dropped (gw_chan_rx_lost): gateway, its count; client, the
	 * part of it already reported */
	uint64_t lost;
	/* client: bytes released, and the part of them published in rx_tail */
	uint32_t done, published;
	bool unpublished;
};

/*
 * One TX class as its producer (the client) or its consumer (the gateway
 * worker that drains the channel) sees it.
 */
struct gw_chan_tx {
	/* Layout, fixed once made or attached. */
	struct rte_ring *ring;
	uint8_t *arena;
	uint32_t mask;      /* the arena's */
	uint32_t ring_half; /* gateway: wake a blocked sender below this backlog */
	uint32_t ring_mask; /* its own copy, never read from the region again */
	/* Written by the one end that works it. */
	alignas(64) uint32_t head; /* client: producer's arena position */
	uint32_t msgs; /* messages consumed (gateway) or sent (client) */
	uint32_t seen_tail; /* client: the tail when a send last found no room */
	/* client: the gateway's tail as last read, re-read only when the
	 * arena looks full, so the shared cache line is not pulled per message */
	uint32_t tail_cache;
	uint32_t pos; /* gateway: its position in the ring */
	/* gateway: descriptors taken from the ring, not yet consumed */
	struct gw_chan_desc cache[GW_CHAN_BURST];
	uint16_t cache_n, cache_i;
	/* gateway: checkpoints, oldest first: the first `msgs` messages had
	 * all gone into frames numbered up to `serial` (gw_chan_checkpoint) */
	struct {
		uint32_t serial, msgs;
	} ck[GW_CHAN_CHECKPOINTS];
	uint8_t ck_first, ck_n;
	uint32_t settled; /* gateway: the last value published */
	/* gateway: the head message, a publication that a full lane stopped
	 * part-way (fan_msg, when fan_set), has still to go to these nodes:
	 * kept with its channel, as the batcher drains others meanwhile */
	bool fan_set;
	uint32_t fan_msg;
	uint64_t fan_left[GW_MAX_NODES / 64];
};

/* One end of a channel, private to its process. */
struct gw_chan {
	/* Layout, fixed once made or attached: read by every role. */
	uint8_t *base;
	uint32_t size;
	uint32_t chan_id;
	uint32_t msg_max;
	uint32_t rx_parts;
	uint32_t rx_mask;   /* every RX arena's */
	uint32_t ring_half; /* gateway: RX parts' half */
	uint32_t ring_mask; /* gateway: RX rings', its own copy */
	int memfd;
	int efd_rx; /* signalled when RX has data for a sleeping client */
	int efd_tx; /* signalled when TX has room for a sleeping client */
	int hup_fd; /* client: the control socket, which closes when the gateway dies */
	const volatile uint32_t *alive; /* client: the gateway's liveness word (gw_chan_alive) */
	const struct gw_chan_alive *alive_page; /* client: its mapping */
	struct gw_chan_shm *shm;
	bool broken; /* the client wrote an invalid descriptor */
	uint8_t wait_cls; /* client: the class a send last found full */
	struct gw_chan_tx tx[GW_CLASSES];
	/* client: RX descriptors taken from part cache_part, not yet consumed */
	alignas(64) struct gw_chan_desc cache[GW_CHAN_BURST];
	uint16_t cache_n, cache_i;
	uint16_t cache_part;
	struct gw_chan_rx rx[GW_CHAN_RX_MAX];
};

/* A message as the gateway reads it from a TX ring. */
struct gw_chan_msg {
	const uint8_t *data;
	uint16_t len;
	uint16_t node;
	uint32_t ep;
	uint32_t msg_id;
};

/* Either end: unmap the region and close the fds (the memory goes when both have). */
static inline void gw_chan_close(struct gw_chan *c)
{
	if (c->base)
		munmap(c->base, c->size);
	if (c->memfd >= 0)
		close(c->memfd);
	if (c->efd_rx >= 0)
		close(c->efd_rx);
	if (c->efd_tx >= 0)
		close(c->efd_tx);
	if (c->alive_page)
		munmap((void *)(uintptr_t)c->alive_page, sizeof(struct gw_chan_alive));
	memset(c, 0, sizeof(*c));
	c->memfd = c->efd_rx = c->efd_tx = c->hup_fd = -1;
}


/* --- gateway side (gw_chan_gw.c, links librte_ring) --- */

/* Make the liveness page, locked by the calling thread (the one that lives
 * as long as the gateway): its fd for clients; 0 or -errno. */
int gw_chan_alive_create(struct gw_chan_alive **page, int *fd);
/* Unlocked and unmapped (a clean stop: clients see the gateway gone). */
void gw_chan_alive_destroy(struct gw_chan_alive *page, int fd);

/* Create a region and its eventfds; rings are initialised in place. The
 * urgent TX class gets an eighth of the bulk ring and arena (at least 64
 * descriptors and two of the largest messages). */
int gw_chan_create(struct gw_chan *c, uint32_t chan_id, uint32_t node_id,
		   const struct gw_chan_params *p);

/*
 * Look at up to max waiting messages of class cls without consuming them.
 * Every descriptor is checked; an invalid one marks the channel broken and
 * ends the run (returns what was valid before it). Returns the count.
 */
unsigned gw_chan_peek(struct gw_chan *c, unsigned cls, struct gw_chan_msg *out, unsigned max);

/* Messages of class cls waiting in the channel (peeked or not). */
unsigned gw_chan_backlog(const struct gw_chan *c, unsigned cls);

/* The first n peeked messages of class cls are packed: free their arena bytes. */
void gw_chan_consume(struct gw_chan *c, unsigned cls, unsigned n);

/*
 * Settling (struct gw_chan_tx_tail's `settled`), for the worker that
 * drains the channel and numbers the frames it builds (serial, wrapping,
 * one up per frame). After a pass has shipped its frames: every message
 * of class cls consumed so far went into a frame numbered up to serial
 * (a no-op when none was consumed since the last checkpoint; with every
 * checkpoint in use the newest is moved forward, so settling lags by a
 * little more). Then, whenever it is known: every frame numbered below
 * `below` is settled (acked by its peer, or delivered on the loopback),
 * and so is each checkpoint under it, which gw_chan_settle publishes.
 */
void gw_chan_checkpoint(struct gw_chan *c, unsigned cls, uint32_t serial);
void gw_chan_settle(struct gw_chan *c, unsigned cls, uint32_t below);

/*
 * Deliver one message into RX part `part` (the calling receiver's own),
 * unseen by the client until gw_chan_publish. -ENOBUFS when the ring or
 * arena is full (the client is not reading), -EMSGSIZE if it never fits.
 */
int gw_chan_deliver(struct gw_chan *c, unsigned part, struct gw_chan_desc d, const void *data);

/* A REJECT for the client could not go into part `part` and is dropped:
 * count it where the client will read it (gw_chan_lost_take). */
void gw_chan_lost_add(struct gw_chan *c, unsigned part);

/*
 * Did the client last go to sleep for RX on CPU cpu? A receiver on that
 * CPU may leave it asleep while it has more to deliver: waking it there
 * switches to it for a few messages and back. Its word, so only a hint.
 */
bool gw_chan_rx_sleeps_on(const struct gw_chan *c, unsigned cpu);

/* Has the client read RX part `part` down to half (descriptors and bytes)? */
bool gw_chan_rx_below_half(const struct gw_chan *c, unsigned part);

/* Are fewer than n messages delivered into RX part `part` unread? Reads
 * the client's position only when its last known one says no. */
bool gw_chan_rx_unread_below(struct gw_chan *c, unsigned part, uint32_t n);

/* How full RX part `part` is, descriptors or bytes whichever is fuller, in
 * thousandths (0..1000): for operators. It reads the client's region: call
 * it where the channel cannot be unmapped meanwhile (the control role). */
unsigned gw_chan_rx_fill_permille(const struct gw_chan *c, unsigned part);

/* How far the client has read RX part `part` (its ring's consumer count):
 * it moves while the client reads. */
uint32_t gw_chan_rx_read_pos(const struct gw_chan *c, unsigned part);

/* After a run of deliveries into a part: show them to the client, wake it
 * if it sleeps (gw_chan_publish_set: several channels at once). */
void gw_chan_publish(struct gw_chan *c, unsigned part);

/* gw_chan_publish of part `part` of n channels, with one fence for all.
 * With wake false it only shows: a client that polls sees the messages,
 * one that sleeps is not woken, so a later call with wake true must come
 * (a receiver that keeps a sleeping client on its own core asleep while
 * it has more to deliver saves a switch to it and back per run). */
void gw_chan_publish_set(struct gw_chan *const *cs, unsigned n, unsigned part, bool wake);

/* Wake a sleeping client with nothing new to read (a node went down). */
void gw_chan_wake(struct gw_chan *c);

/* --- client side (gw_chan_client.c, rte_ring inline functions only) --- */

/* Map a region received from the gateway and check its layout. */
int gw_chan_attach(struct gw_chan *c, int memfd, int efd_rx, int efd_tx);
/* Map the gateway's liveness page (read-only; the fd is closed). 0 or -errno. */
int gw_chan_attach_alive(struct gw_chan *c, int fd);

/* Does the gateway live? A load of its liveness word (true while none is
 * mapped). */
bool gw_chan_gateway_lives(const struct gw_chan *c);

/*
 * Copy one message of class cls in, made of hlen bytes of hdr then blen of
 * buf (one payload on the wire); -EAGAIN when full, -EMSGSIZE when too big.
 */
int gw_chan_send_hdr(struct gw_chan *c, unsigned cls, uint16_t node, uint32_t ep,
		     const void *hdr, uint32_t hlen, const void *buf, uint32_t blen);
static inline int gw_chan_send(struct gw_chan *c, uint16_t node, uint32_t ep, const void *buf,
			       uint32_t len)
{
	return gw_chan_send_hdr(c, GW_CLASS_BULK, node, ep, NULL, 0, buf, len);
}

/* Has the gateway taken every message sent so far, of every class? */
bool gw_chan_tx_empty(struct gw_chan *c);

/* Of the first `sent` sends of class cls, those not settled (see
 * gw_chan_tx_tail); 0 when the gateway's count is past them (not its). */
uint32_t gw_chan_unsettled_of(const struct gw_chan *c, unsigned cls, uint32_t sent);

/*
 * The descriptor of this client's send number k of class cls (counted
 * from 0), if the ring still holds it (at most a ring's worth of sends
 * ago): for telling the sender where an unsettled message was going.
 */
bool gw_chan_sent_desc(const struct gw_chan *c, unsigned cls, uint32_t k,
		       struct gw_chan_desc *d);

/* Next received descriptor and its payload; -EAGAIN when empty. */
int gw_chan_recv(struct gw_chan *c, struct gw_chan_desc *d, const uint8_t **data);
/* Release what gw_chan_recv returned, before the next gw_chan_recv: the
 * release goes to the part that receive came from. */
void gw_chan_recv_done(struct gw_chan *c, const struct gw_chan_desc *d);

/* REJECTs the gateway dropped for this client since the last call: that
 * many of its sends were not delivered (0 mostly: one load per part). */
uint64_t gw_chan_lost_take(struct gw_chan *c);

/* Has the gateway closed the control socket (it died or cut us off)? */
bool gw_chan_gateway_gone(const struct gw_chan *c);

/* Something to receive? */
bool gw_chan_rx_ready(const struct gw_chan *c);

/*
 * Ask the gateway to signal the eventfd (efd_rx, or efd_tx for_tx) when
 * RX has data (TX has room in a class that had none), then look again: true when there is already,
 * so the caller must not sleep; false when armed.
 */
bool gw_chan_arm(struct gw_chan *c, bool for_tx);

/*
 * Sleep until RX has data (or TX has room, for_tx) or timeout_ms passes
 * (-1 = forever): 0, -ETIMEDOUT, or -EPIPE when hup_fd says the gateway
 * has gone.
 */
int gw_chan_wait(struct gw_chan *c, bool for_tx, int timeout_ms);

#endif
