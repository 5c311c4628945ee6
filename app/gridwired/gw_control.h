/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control role (main lcore): clients connect over a Unix SOCK_SEQPACKET
 * socket, get a channel, name endpoints, and are reclaimed when the socket
 * closes (a crashed client's socket closes too) or when they break their
 * channel.
 *
 * Receivers on other lcores look up endpoints and channels while this role
 * changes them, so what they read is published, RCU style (rte_rcu_qsbr,
 * every lcore reporting a quiescent state once per loop): the endpoint
 * directory and the topics are each copied, changed and swapped in
 * (struct gw_published); a client leaving is
 * unpublished first, and its channel is freed only after every lcore has
 * passed a quiescent state since and its worker has let go of it.
 */
#ifndef GW_CONTROL_H
#define GW_CONTROL_H

#include <rte_rcu_qsbr.h>

#include "gw_chan.h"
#include "gw_conflate.h"
#include "gw_control_proxy.h"
#include "gw_deliver.h"
#include "gw_dir.h"
#include "gw_node.h"
#include "gw_topic.h"
#include "gw_worker_proxy.h"

struct gw_peers;

/* One receiver's view of a client's channel: its own cache line. */
struct gw_client_rx {
	alignas(64) struct gw_deliver_hold hold;
	bool unpublished; /* delivered into since the receiver last published */
	/* A latest subscriber's messages while its ring is full (made by
	 * the receiver, freed with the client's slot), and whether the
	 * receiver has it in its list to drain. */
	struct gw_conflate *latest;
	bool draining;
};

struct gw_client {
	bool used;
	bool live;         /* published: receivers may deliver to it (atomic) */
	bool refused;      /* its credentials are not allowed: told so, then dropped */
	bool leaving;      /* gone: unpublished, channel still held */
	bool del_sent;     /* its worker was told to drop the channel */
	uint32_t released; /* set by the worker once it dropped the channel */
	uint64_t gone;     /* the grace period its leaving waits for (rte_rcu_qsbr token) */
	int sock;
	uint16_t chan_id;
	uint16_t worker;
	/* The client's count of sends that found its channel full, copied out
	 * of its region by gw_control_sample: telemetry must not touch a
	 * region that may be unmapped under it. */
	uint64_t tx_full;
	uint16_t rx_fill_permille; /* its fullest RX part, sampled with tx_full */
	struct gw_chan chan;
	struct gw_client_rx rx[GW_RECEIVERS_MAX];
};

/* A table readers use while this role changes a copy of it: two buffers,
 * one published (cur, atomic), the other free once the grace period that
 * began when it was last replaced (gone) has ended. */
struct gw_published {
	void *cur;
	void *buf[2];
	size_t size;
	uint64_t gone;
	bool waiting;
};

struct gw_control {
	const struct gw_node *node;
	struct gw_peers *peers;
	struct gw_worker_proxy *workers; /* the main lcore's proxies, one per worker */
	unsigned nworkers, nrecv;
	struct gw_counters *st; /* the main lcore's */
	struct rte_rcu_qsbr *qs;
	unsigned qs_id; /* the main lcore's thread id in qs */
	int listen_fd, epfd;
	struct gw_chan_alive *alive; /* the liveness page clients map (gw_chan.h) */
	int alive_fd;
	struct gw_client *clients; /* cfg->clients_max */
	uint16_t chan_slot[65536]; /* chan id -> client index + 1 (atomic) */
	uint16_t next_chan;
	struct gw_published dir;    /* struct gw_dir: the endpoints */
	struct gw_published topics; /* struct gw_topics */
	/* Peers' advertisements: their parts from each receiver's lcore, and
	 * each peer's being put together (made with its first part). */
	struct rte_ring *subs_in[GW_LCORES_MAX];
	unsigned nsubs_in;
	struct gw_topic_adv *adv[GW_MAX_NODES];
	uint64_t adv_applied[GW_MAX_NODES]; /* 1 << 32 | the version last applied (0: none) */
	uint64_t restarted[GW_MAX_NODES / 64]; /* peers to forget at the next poll */
};

int gw_control_open(struct gw_control *ctl, char *err, size_t errlen);
void gw_control_poll(struct gw_control *ctl);
void gw_control_close(struct gw_control *ctl);
/* The ring a receiver posts SUBS parts into (gw_control_post_subs). */
struct rte_ring *gw_control_add_subs_ring(struct gw_control *ctl, unsigned receiver);
/* The peers role's news: set the node's bit in every client, wake them. */
void gw_control_set_node_up(void *ctl, uint16_t node, bool up);
/* The peers role's news: the node restarted; what it subscribed to is
 * forgotten at the next gw_control_poll (this may be called in the middle
 * of a port RX step, where no grace period may be waited for). */
void gw_control_peer_restarted(void *ctl, uint16_t node);
/* Copy what clients count in their own regions into gateway memory. */
void gw_control_sample(struct gw_control *ctl);

/* Read side, any receiver, between two quiescent states. */
static inline struct gw_client *gw_control_find_client(struct gw_control *ctl, uint16_t chan_id)
{
	uint16_t s = __atomic_load_n(&ctl->chan_slot[chan_id], __ATOMIC_ACQUIRE);
	struct gw_client *cl = s ? &ctl->clients[s - 1] : NULL;
	/* Live, and still the client of that id: the slot may have been
	 * given to another client since s was read. */
	return cl && __atomic_load_n(&cl->live, __ATOMIC_ACQUIRE) && cl->chan_id == chan_id ? cl
												   : NULL;
}

static inline struct gw_client *gw_control_find_endpoint(struct gw_control *ctl, uint32_t ep)
{
	const struct gw_dir *d = __atomic_load_n(&ctl->dir.cur, __ATOMIC_ACQUIRE);
	uint16_t chan = gw_dir_find(d, ep);
	return chan ? gw_control_find_client(ctl, chan) : NULL;
}

/* Topic id as now published, or NULL. Read side, as above. */
static inline const struct gw_topic *gw_control_find_topic(struct gw_control *ctl, uint32_t id)
{
	return gw_topic_find(__atomic_load_n(&ctl->topics.cur, __ATOMIC_ACQUIRE), id);
}

#endif
