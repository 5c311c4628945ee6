/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_chan: a client's shared-memory channel as the gateway reads it. The
 * client owns the region and may rewrite any byte of it at any moment:
 * between the gateway's reads, the input scribbles on it, and sends and
 * receives through the client library as a well-behaved client would.
 *
 * The input is a script, one operation per byte (low nibble: what; high
 * nibble: an argument), operands following:
 *   0 client send (class, node, endpoint, length)   1 scribble (offset, bytes)
 *   2 gateway peek                                   3 gateway consume
 *   4 backlog and fill figures                       5 gateway deliver (part, length)
 *   6 gateway publish                                7 client receive
 *   8 scribble a word of a ring's header             9 client: everything taken?
 * Whatever the bytes, the gateway
 *  - never reads or writes outside the region (it is mapped between two
 *    inaccessible pages, and ASan watches the rest);
 *  - hands the worker only messages that lie inside their class's arena,
 *    no longer than msg_max, for a node that exists;
 *  - reports backlogs within the ring and its own cache of a burst;
 *  - once it calls the channel broken, takes nothing more from it.
 * The client library trusts its region, so its own calls stop at the first
 * scribble (a client that scribbles can only hurt itself; that is not
 * what this target looks for).
 * The channel is made once; each input starts from a copy of it as made
 * (region and both ends' state), so an execution costs no system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fz_input.h"
#include "gw_chan.h"

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_chan: check failed at line %d: %s\n", __LINE__, \
				#c);                                                       \
			abort();                                                           \
		}                                                                          \
	} while (0)

#define FZ_RING 64
#define FZ_ARENA 4096
#define FZ_MSG_MAX 1024
#define FZ_PARTS 2

static struct gw_chan gw, cl, gw0, cl0;
static uint8_t *pristine;
static size_t pg;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Move the gateway's mapping between two PROT_NONE pages: a read past
 * either end faults, where a neighbouring mapping would hide it. */
static void guard(struct gw_chan *c)
{
	uint8_t *g = mmap(NULL, c->size + 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(g != MAP_FAILED);
	uint8_t *to = mremap(c->base, c->size, c->size, MREMAP_MAYMOVE | MREMAP_FIXED, g + pg);
	CHECK(to == g + pg);
	ptrdiff_t d = to - c->base;
	c->base = to;
	c->shm = (struct gw_chan_shm *)to;
	for (unsigned k = 0; k < GW_CLASSES; k++) {
		c->tx[k].ring = (struct rte_ring *)((uint8_t *)c->tx[k].ring + d);
		c->tx[k].arena += d;
	}
	for (unsigned i = 0; i < c->rx_parts; i++) {
		c->rx[i].ring = (struct rte_ring *)((uint8_t *)c->rx[i].ring + d);
		c->rx[i].arena += d;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	pg = (size_t)sysconf(_SC_PAGESIZE);
	struct gw_chan_params p = { .ring_count = FZ_RING, .arena_size = FZ_ARENA,
				    .msg_max = FZ_MSG_MAX, .rx_parts = FZ_PARTS };
	CHECK(gw_chan_create(&gw0, 7, 1, &p) == 0);
	guard(&gw0);
	CHECK(gw_chan_attach(&cl0, gw0.memfd, gw0.efd_rx, gw0.efd_tx) == 0);
	pristine = malloc(gw0.size);
	CHECK(pristine);
	memcpy(pristine, gw0.base, gw0.size);
	return 0;
}

static bool in_arena(const uint8_t *p, size_t len, const struct gw_chan_tx *t)
{
	return p >= t->arena && p + len <= t->arena + t->mask + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	static uint8_t buf[FZ_MSG_MAX + 64];
	static struct gw_chan_msg m[GW_CHAN_BURST];
	static unsigned peeked[GW_CLASSES];

	memcpy(gw0.base, pristine, gw0.size);
	gw = gw0;
	cl = cl0;
	memset(peeked, 0, sizeof(peeked));
	bool scribbled = false;

	while (in.n) {
		uint8_t op = rd8(&in);
		unsigned arg = op >> 4, cls = arg & 1;
		switch (op & 15) {
		case 0: {
			uint16_t node = rd16(&in) % (GW_MAX_NODES + 2);
			uint32_t ep = rd32(&in);
			uint32_t len = rd16(&in) % (FZ_MSG_MAX + 8);
			memset(buf, (int)arg, len < sizeof(buf) ? len : sizeof(buf));
			if (scribbled)
				break;
			int rc = gw_chan_send_hdr(&cl, cls, node, ep, NULL, 0, buf, len);
			CHECK(rc == 0 || rc == -EAGAIN || rc == -EMSGSIZE || rc == -EINVAL);
			break;
		}
		case 1: {
			scribbled = true;
			uint32_t at = rd32(&in) % gw.size;
			for (unsigned k = 0; k <= arg && at + k < gw.size; k++)
				cl.base[at + k] = rd8(&in);
			break;
		}
		case 2: {
			bool was_broken = gw.broken;
			unsigned n = gw_chan_peek(&gw, cls, m, 1 + arg % GW_CHAN_BURST);
			CHECK(n <= GW_CHAN_BURST && (!was_broken || n == 0));
			for (unsigned i = 0; i < n; i++) {
				CHECK(m[i].len <= FZ_MSG_MAX && m[i].node < GW_MAX_NODES);
				CHECK(in_arena(m[i].data, m[i].len, &gw.tx[cls]));
				/* Read it, as the worker copies it into a frame. */
				memcpy(buf, m[i].data, m[i].len);
			}
			peeked[cls] = n;
			break;
		}
		case 3: {
			/* Only what the last peek of that class showed, as the worker. */
			unsigned n = peeked[cls] ? 1 + arg % peeked[cls] : 0;
			gw_chan_consume(&gw, cls, n);
			peeked[cls] = 0;
			break;
		}
		case 4:
			/* The ring's worth, and a burst the gateway took into its
			 * own cache (whose slots the client may fill again). */
			CHECK(gw_chan_backlog(&gw, cls) <= gw.tx[cls].ring_mask + 1 + GW_CHAN_BURST);
			(void)gw_chan_rx_fill_permille(&gw, cls % FZ_PARTS);
			(void)gw_chan_rx_below_half(&gw, cls % FZ_PARTS);
			(void)gw_chan_rx_read_pos(&gw, cls % FZ_PARTS);
			break;
		case 5: {
			uint16_t len = rd16(&in) % (FZ_MSG_MAX + 8);
			struct gw_chan_desc d = { .len = len, .node = 2, .ep = rd32(&in),
						  .chan = 3, .kind = 1 };
			int rc = gw_chan_deliver(&gw, cls % FZ_PARTS, d, buf);
			CHECK(rc == 0 || rc == -ENOBUFS || rc == -EMSGSIZE);
			CHECK(rc != -EMSGSIZE || len > FZ_MSG_MAX);
			break;
		}
		case 6:
			gw_chan_publish(&gw, cls % FZ_PARTS);
			break;
		case 7: {
			struct gw_chan_desc d;
			const uint8_t *p;
			for (unsigned k = 0; k <= arg && !scribbled; k++) {
				int rc = gw_chan_recv(&cl, &d, &p);
				if (rc < 0)
					break;
				gw_chan_recv_done(&cl, &d);
			}
			break;
		}
		case 8: {
			/* A ring header word: the positions the client could lie about. */
			scribbled = true;
			unsigned k = arg % (GW_CLASSES + FZ_PARTS);
			uint8_t *r = (uint8_t *)(k < GW_CLASSES ? cl.tx[k].ring
								: cl.rx[k - GW_CLASSES].ring);
			/* Any aligned word of its first 384 bytes: the name, the
			 * flags, the producer's and the consumer's head and tail. */
			uint32_t v = rd32(&in);
			memcpy(r + (rd8(&in) % 96) * 4, &v, sizeof(v));
			break;
		}
		default:
			if (!scribbled)
				(void)gw_chan_tx_empty(&cl);
			break;
		}
	}
	return 0;
}
