/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_port: af_packet and bonded af_packet ports. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_eth_bond.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "gw_port.h"

#define GW_PORT_RX_DESC 1024
#define GW_PORT_TX_DESC 1024
#define RTE_LOGTYPE_GW_PORT RTE_LOGTYPE_USER1

static int set_kernel_mtu(const char *ifname, unsigned mtu)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr = { .ifr_mtu = (int)mtu };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	int rc = ioctl(s, SIOCSIFMTU, &ifr) < 0 ? -errno : 0;
	close(s);
	return rc;
}

/* 1 if the kernel interface is up with carrier, 0 if not, negative errno. */
static int kernel_link(const char *ifname)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	int rc = ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ? -errno
						  : (ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) ==
							    (IFF_UP | IFF_RUNNING);
	close(s);
	return rc;
}

static int add_member(struct gw_port *p, unsigned i, const char *ifname, uint16_t nq)
{
	char name[32], args[160];
	snprintf(name, sizeof(name), "net_af_packet%u", i);
	/* blocksz holds 4 frames; framecnt sizes the kernel ring. */
	snprintf(args, sizeof(args), "iface=%s,framesz=%u,blocksz=%u,framecnt=2048,qpairs=%u",
		 ifname, GW_PORT_MBUF_DATA, 4 * GW_PORT_MBUF_DATA, nq);
	int rc = rte_vdev_init(name, args);
	if (rc < 0) {
		RTE_LOG(ERR, GW_PORT, "cannot open interface %s with af_packet (%s): does it exist in this namespace?\n",
			ifname, rte_strerror(-rc));
		return rc;
	}
	rc = rte_eth_dev_get_port_by_name(name, &p->members[i]);
	if (rc < 0)
		return rc;
	snprintf(p->ifnames[i], sizeof(p->ifnames[i]), "%s", ifname);
	p->nmembers = i + 1;
	return 0;
}

int gw_port_open(struct gw_port *p, const struct gw_config *cfg, uint16_t nqueues)
{
	memset(p, 0, sizeof(*p));
	p->mtu = cfg->mtu;
	p->nqueues = nqueues;
	int rc;
	for (unsigned i = 0; i < cfg->nmembers; i++)
		if ((rc = add_member(p, i, cfg->members[i], nqueues)) < 0)
			return rc;
	p->port_id = p->members[0];
	if (cfg->port_kind == GW_PORT_BOND) {
		rc = rte_eth_bond_create("net_bonding0", (uint8_t)cfg->bond_mode, (uint8_t)rte_socket_id());
		if (rc < 0) {
			RTE_LOG(ERR, GW_PORT, "cannot create bond (mode %u): %s\n", cfg->bond_mode,
				rte_strerror(-rc));
			return rc;
		}
		p->port_id = (uint16_t)rc;
		p->bonded = true;
		for (unsigned i = 0; i < p->nmembers; i++)
			if ((rc = rte_eth_bond_slave_add(p->port_id, p->members[i])) < 0)
				return rc;
		/* Hash on addresses and ports: each lane is its own UDP flow,
		 * so lanes spread over the members (modes 2 and 4). */
		if (cfg->bond_mode != BONDING_MODE_ROUND_ROBIN &&
		    (rc = rte_eth_bond_xmit_policy_set(p->port_id, BALANCE_XMIT_POLICY_LAYER34)) < 0)
			return rc;
	}

	/* Enough for the RX ring, every lane's window and reorder buffer,
	 * and the frames being built; the config sizes it. */
	p->pool = rte_pktmbuf_pool_create("gw_mbufs", cfg->mbufs, 256, 0,
					  RTE_PKTMBUF_HEADROOM + GW_PORT_MBUF_DATA, rte_socket_id());
	if (!p->pool) {
		RTE_LOG(ERR, GW_PORT, "cannot allocate %u mbufs of %u bytes: give EAL more memory (-m) or lower [port] mbufs\n",
			cfg->mbufs, GW_PORT_MBUF_DATA);
		return -rte_errno;
	}
	struct rte_eth_conf conf = { 0 };
	if ((rc = rte_eth_dev_configure(p->port_id, nqueues, nqueues, &conf)) < 0)
		return rc;
	uint16_t nrx = GW_PORT_RX_DESC, ntx = GW_PORT_TX_DESC;
	rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nrx, &ntx);
	int sock = (int)rte_eth_dev_socket_id(p->port_id);
	for (uint16_t q = 0; q < nqueues; q++) {
		if ((rc = rte_eth_rx_queue_setup(p->port_id, q, nrx, sock, NULL, p->pool)) < 0)
			return rc;
		if ((rc = rte_eth_tx_queue_setup(p->port_id, q, ntx, sock, NULL)) < 0)
			return rc;
	}
	if ((rc = rte_eth_dev_start(p->port_id)) < 0)
		return rc;
	rte_eth_promiscuous_enable(p->port_id);
	for (unsigned i = 0; i < p->nmembers; i++)
		if ((rc = set_kernel_mtu(p->ifnames[i], cfg->mtu)) < 0) {
			RTE_LOG(ERR, GW_PORT, "cannot set MTU %u on %s: %s\n", cfg->mtu,
				p->ifnames[i], strerror(-rc));
			return rc;
		}
	rte_eth_macaddr_get(p->port_id, &p->mac);
	for (unsigned i = 0; i < p->nmembers; i++)
		p->member_up[i] = true;
	return 0;
}

int gw_port_watch(struct gw_port *p)
{
	int changed = 0;
	for (unsigned i = 0; i < p->nmembers; i++) {
		int up = kernel_link(p->ifnames[i]);
		if (up < 0 || (bool)up == p->member_up[i])
			continue;
		p->member_up[i] = up;
		changed++;
		/* af_packet has no link state of its own to report, so the bond
		 * is told by taking the member out and putting it back. */
		int rc = up ? rte_eth_bond_slave_add(p->port_id, p->members[i])
			    : rte_eth_bond_slave_remove(p->port_id, p->members[i]);
		if (up)
			set_kernel_mtu(p->ifnames[i], p->mtu); /* the MTU trap again */
		RTE_LOG(WARNING, GW_PORT, "member %s is %s%s\n", p->ifnames[i],
			up ? "up again: back in the bond" : "down: its traffic moves to the other members",
			rc < 0 ? " (the bond refused the change)" : "");
	}
	return changed;
}

void gw_port_close(struct gw_port *p)
{
	if (!p->nmembers)
		return;
	rte_eth_dev_stop(p->port_id);
	rte_eth_dev_close(p->port_id);
	if (p->bonded)
		rte_eth_bond_free("net_bonding0");
	for (unsigned i = 0; i < p->nmembers; i++) {
		char name[32];
		snprintf(name, sizeof(name), "net_af_packet%u", i);
		rte_vdev_uninit(name);
	}
	rte_mempool_free(p->pool);
	memset(p, 0, sizeof(*p));
}

bool gw_port_link_up(const struct gw_port *p)
{
	struct rte_eth_link l;
	return rte_eth_link_get_nowait(p->port_id, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}
