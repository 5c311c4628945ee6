/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_port: the gateway's one ethdev port, built from the [port] members.
 *
 * A member is any DPDK device: a kernel interface through af_packet or tap,
 * one end of a kernel-bypass cable (vhost-user or virtio-user), or a PCI NIC
 * probed by EAL. What is particular to a kind of device lives in its own
 * file (gw_af_packet.c, gw_tap.c, gw_vhost.c, gw_pci.c, behind
 * gw_port_driver.h); this file does the rest through ethdev alone: the bond
 * (net_bonding) when kind = bond, or with kind = parallel each member a
 * port of its own that every frame goes out on; the mbuf pool on the
 * port's NUMA socket, RSS over the lanes' UDP flows where the device
 * hashes, the MTU checked against what each device takes, LSC interrupts
 * where offered (else the link is polled), members taken down and back by
 * an operator, and a member that is up but carries nothing while another
 * does (parallel: its network is cut somewhere beyond its own link).
 */
#ifndef GW_PORT_H
#define GW_PORT_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mempool.h>

#include "gw_config.h"

#define GW_PORT_MBUF_DATA 10240 /* a frame of a 9000-byte IP MTU, in one segment */

struct gw_port_driver;

struct gw_member {
	const struct gw_port_driver *drv;
	const char *spec; /* as configured */
	const char *arg;  /* what follows "kind:" */
	char dev[32];     /* the ethdev's name: net_vhost0, 0000:03:00.0 */
	unsigned index;
	uint16_t port_id;
	bool open;        /* the device exists (an operator's unplug closes it) */
	bool up;          /* link as last seen */
	uint64_t rx_packets, tx_packets; /* as last seen (gw_port_watch), never going back */
	struct rte_eth_stats raw, base;  /* the PMD's counts, and what they had before a reset */
	unsigned quiet;   /* watches in a row that saw it receive nothing */
	unsigned up_watches; /* watches since its link came up (or it opened) */
	bool carried;     /* it has received something since then */
	bool in_service;  /* frames go out on it: up, and in bond mode 4 distributing (LACP) */
	bool silent;      /* parallel: up, quiet for 3 heartbeats while another member is not */
};

/*
 * The ethdev ports frames go out on and come in from, as the lcores see
 * them: the polled port alone (the bond, or the single member), or with
 * kind = parallel every member. live[k] says whether port k takes frames
 * now: the main lcore writes it (a link seen to go or come back, an
 * operator's unplug), every lcore reads it on every burst. member_port[i]
 * is member i's own port, which a received mbuf names (under a bond too).
 */
struct gw_links {
	alignas(64) unsigned n;
	uint16_t port[GW_CONFIG_MAX_MEMBERS];
	bool live[GW_CONFIG_MAX_MEMBERS];
	unsigned nmembers;
	uint16_t member_port[GW_CONFIG_MAX_MEMBERS];
};

static inline bool gw_links_live(const struct gw_links *l, unsigned k)
{
	return __atomic_load_n(&l->live[k], __ATOMIC_ACQUIRE);
}

/* The member a received frame came in on (its mbuf's port), or -1. */
static inline int gw_links_member(const struct gw_links *l, uint16_t port)
{
	for (unsigned i = 0; i < l->nmembers; i++)
		if (__atomic_load_n(&l->member_port[i], __ATOMIC_RELAXED) == port)
			return (int)i;
	return -1;
}

struct gw_port {
	const struct gw_config *cfg;
	uint16_t port_id; /* the bond, or the single member; parallel: member 0 */
	uint16_t nqueues; /* RX and TX queue pairs (of each member, when parallel) */
	uint16_t nrss;    /* the first nrss RX queues are those RSS spreads flows over */
	bool bonded;
	bool parallel;
	struct gw_links links;
	struct gw_member members[GW_CONFIG_MAX_MEMBERS];
	unsigned nmembers;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	/* The polled port's counters (parallel: the members' added up) as
	 * gw_port_watch last read them: the telemetry thread reads these
	 * (gw_port_stats), never the bond, whose members an operator may be
	 * closing. */
	struct rte_eth_stats stats;
};

/*
 * Is member (as written in [port] members) a kind this gateway knows, with
 * a well-formed argument for it, given the rest of cfg? 0, or a negative
 * errno and one sentence in why. Needs no EAL: gw_config_load calls it.
 */
int gw_port_check_member(const char *member, const struct gw_config *cfg, char *why,
			 size_t whylen);

/* EAL arguments the members need (PCI: -a ADDR each), appended to args. */
int gw_port_eal_args(const struct gw_config *cfg, char *args, size_t len);

/*
 * Open the members, bond them, create the mbuf pool, configure nqueues RX
 * and TX queue pairs, set the MTU and start. Where the device hashes
 * flows (RSS), it spreads them over the first nrss RX queues only: the
 * others are for frames that come there by their TX queue (the cable's
 * urgent queues). On error returns a negative errno with one line in err
 * naming the member or key and the fix; what was opened is closed again.
 */
int gw_port_open(struct gw_port *p, const struct gw_config *cfg, uint16_t nqueues,
		 uint16_t nrss, char *err, size_t errlen);
void gw_port_close(struct gw_port *p);

/*
 * Look at each member's link (from its PMD, or for af_packet from the
 * kernel, which the bond is then told of) and copy the port's and each
 * member's counters for the telemetry thread. Called once a heartbeat
 * ([proto] hello_ms), which is what a member's quiet count counts.
 * Returns how many members went up or down.
 */
int gw_port_watch(struct gw_port *p);

/* The polled port's counters as gw_port_watch last read them (any thread). */
void gw_port_stats(const struct gw_port *p, struct rte_eth_stats *st);

/* Link state of the polled port (bond mode 4: once LACP has agreed;
 * parallel: any member's). */
bool gw_port_link_up(const struct gw_port *p);

/*
 * An operator takes member i down or brings it back: a NIC's link through
 * ethdev, a kernel interface's flag, or a virtual device unplugged (closed,
 * so the far end sees its cable go) and plugged in again. quiesce(ctx) runs
 * between taking a member out of the bond (or out of the live links) and
 * closing it: it must return only once no lcore can still be sending on it
 * or polling it. 0, or a negative errno and why.
 */
int gw_port_member_set(struct gw_port *p, unsigned i, bool up, void (*quiesce)(void *ctx),
		       void *ctx, char *why, size_t whylen);

#endif
