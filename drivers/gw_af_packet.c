/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * af_packet members: a kernel interface (a veth here) through net_af_packet.
 *
 * Two things its PMD leaves to us. It reports a 1518-byte frame limit and
 * cannot take a jumbo MTU through ethdev, and starting a bond sets its
 * members back to 1500 (the kernel interface with them, so larger sends
 * would fail quietly): the kernel MTU is set again after every start. And
 * it has no link state of its own: the kernel's (up, with carrier) is read
 * instead, for gw_port to tell the bond.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gw_port_driver.h"

static int ifreq_call(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	int rc = ioctl(s, req, ifr) < 0 ? -errno : 0;
	close(s);
	return rc;
}

static int check(const char *arg, const struct gw_config *cfg, char *why, size_t len)
{
	return gw_port_check_ifname(arg, why, len);
}

static int open_dev(struct gw_member *m, const struct gw_config *cfg, uint16_t nq, char *why,
		    size_t len)
{
	char args[160];
	/* blocksz holds 4 frames; framecnt sizes the kernel ring. */
	snprintf(args, sizeof(args), "iface=%s,framesz=%u,blocksz=%u,framecnt=2048,qpairs=%u",
		 m->arg, GW_PORT_MBUF_DATA, 4 * GW_PORT_MBUF_DATA, nq);
	int rc = gw_port_vdev(m, "af_packet", args, why, len);
	if (rc < 0) /* its PMD said why just above */
		snprintf(why, len, "cannot open interface %s: does it exist in this namespace?",
			 m->arg);
	return rc;
}

static int started(struct gw_member *m, unsigned mtu, char *why, size_t len)
{
	struct ifreq ifr = { .ifr_mtu = (int)mtu };
	int rc = ifreq_call(m->arg, SIOCSIFMTU, &ifr);
	if (rc < 0)
		snprintf(why, len, "the kernel refuses MTU %u on %s (%s): lower [port] mtu", mtu,
			 m->arg, strerror(-rc));
	return rc;
}

static int link_state(const struct gw_member *m)
{
	struct ifreq ifr = { 0 };
	int rc = ifreq_call(m->arg, SIOCGIFFLAGS, &ifr);
	return rc < 0 ? rc : (ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING);
}

/* As `ip link set IFACE down|up`: the far end loses its carrier too. */
static int set_link(struct gw_member *m, bool up, char *why, size_t len)
{
	struct ifreq ifr = { 0 };
	int rc = ifreq_call(m->arg, SIOCGIFFLAGS, &ifr);
	if (rc == 0) {
		ifr.ifr_flags = (short)(up ? ifr.ifr_flags | IFF_UP : ifr.ifr_flags & ~IFF_UP);
		rc = ifreq_call(m->arg, SIOCSIFFLAGS, &ifr);
	}
	if (rc < 0)
		snprintf(why, len, "cannot set %s %s (%s): the gateway needs CAP_NET_ADMIN", m->arg,
			 up ? "up" : "down", strerror(-rc));
	return rc;
}

const struct gw_port_driver gw_af_packet_driver = {
	.kind = "af_packet",
	.check = check,
	.open = open_dev,
	.started = started,
	.link = link_state,
	.set_link = set_link,
	.bare = true,
	.vdev = true,
	.own_mtu = true,
};
