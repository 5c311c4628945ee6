/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_port: bring up the gateway's one ethdev port from the config.
 *
 * af_packet: one net_af_packet vdev on a kernel interface (veth here).
 * bond:      one net_af_packet vdev per member under a net_bonding port
 *            (mode 0, 2 with l34 hashing, or 4/802.3ad).
 * Both use jumbo-capable af_packet frames (framesz 10240) and, after start,
 * set the kernel MTU back to the configured one: starting an af_packet port
 * resets the interface to 1500 and larger sends would then fail quietly.
 */
#ifndef GW_PORT_H
#define GW_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mempool.h>

#include "gw_config.h"

#define GW_PORT_MBUF_DATA 10240 /* af_packet frame size, holds a 9000-byte IP MTU */

struct gw_port {
	uint16_t port_id;   /* the port to poll: the bond, or the single member */
	uint16_t members[GW_CONFIG_MAX_MEMBERS];
	unsigned nmembers;
	bool bonded;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	char ifnames[GW_CONFIG_MAX_MEMBERS][GW_IFNAME_MAX];
	unsigned mtu;
	uint16_t nqueues; /* RX and TX queue pairs */
	bool member_up[GW_CONFIG_MAX_MEMBERS]; /* kernel state as last seen */
};

/*
 * Create vdevs, the bond and the mbuf pool, configure nqueues RX/TX queue
 * pairs and start. af_packet spreads received flows over its queues by
 * hash (PACKET_FANOUT), as RSS would.
 */
int gw_port_open(struct gw_port *p, const struct gw_config *cfg, uint16_t nqueues);
void gw_port_close(struct gw_port *p);
/*
 * Follow the members' kernel link state (up and carrier). af_packet does
 * not report it, so without this a bond keeps hashing flows onto a dead
 * member. A change is passed to the member's ethdev link state, which the
 * bond polls: it stops using a member that went down and takes it back
 * (after LACP agrees again, in mode 4) when it returns. Returns how many
 * members changed.
 */
int gw_port_watch(struct gw_port *p);

/* Link state of the polled port (bond mode 4: once LACP has agreed). */
bool gw_port_link_up(const struct gw_port *p);

#endif
