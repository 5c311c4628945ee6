/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_port: members of any kind, the bond, and everything done through ethdev. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_eth_bond.h>
#include <rte_eth_bond_8023ad.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "gw_port.h"
#include "gw_port_driver.h"

#define GW_PORT_RX_DESC 1024
#define GW_PORT_TX_DESC 1024
#define GW_PORT_MBUF_WORK 4096 /* beyond the RX rings: windows, reorder, frames being built */
#define GW_BOND_NAME "net_bonding0"

RTE_LOG_REGISTER(gw_port_logtype, gridwire.port, INFO);

static const struct gw_port_driver *const drivers[] = {
	&gw_af_packet_driver, &gw_tap_driver, &gw_vhost_driver, &gw_virtio_user_driver,
	&gw_pci_driver,
};
#define NDRIVERS (sizeof(drivers) / sizeof(drivers[0]))

static int __rte_format_printf(4, 5) fail(char *buf, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* The driver of "kind:arg", or of a bare argument (no interface name has a ':'). */
static const struct gw_port_driver *find_driver(const char *member, const char **arg)
{
	const char *colon = strchr(member, ':');
	if (!colon) {
		*arg = member;
		for (size_t i = 0; i < NDRIVERS; i++)
			if (drivers[i]->bare)
				return drivers[i];
		return NULL;
	}
	for (size_t i = 0; i < NDRIVERS; i++)
		if (strlen(drivers[i]->kind) == (size_t)(colon - member) &&
		    !memcmp(drivers[i]->kind, member, colon - member)) {
			*arg = colon + 1;
			return drivers[i];
		}
	return NULL;
}

int gw_port_check_member(const char *member, const struct gw_config *cfg, char *why,
			 size_t whylen)
{
	const char *arg;
	const struct gw_port_driver *d = find_driver(member, &arg);
	if (!d) {
		size_t n = (size_t)snprintf(why, whylen, "unknown kind of member; kinds:");
		for (size_t i = 0; i < NDRIVERS && n < whylen; i++)
			n += (size_t)snprintf(why + n, whylen - n, "%s %s:", i ? "," : "",
					      drivers[i]->kind);
		return -EINVAL;
	}
	if (!*arg)
		return fail(why, whylen, -EINVAL, "nothing after '%s:'", d->kind);
	/* A kind that sets its MTU itself cannot share the bond's. */
	for (unsigned i = 0; cfg->port_kind == GW_PORT_BOND && i < cfg->nmembers; i++) {
		const char *other_arg;
		const struct gw_port_driver *o = find_driver(cfg->members[i], &other_arg);
		if (o && o != d && (o->own_mtu || d->own_mtu))
			return fail(why, whylen, -EINVAL,
				    "%s members cannot share a bond with '%s' (one sets its MTU through the kernel, the other through ethdev)",
				    d->kind, cfg->members[i]);
	}
	return d->check(arg, cfg, why, whylen);
}

int gw_port_eal_args(const struct gw_config *cfg, char *args, size_t len)
{
	size_t n = strlen(args);
	for (unsigned i = 0; i < cfg->nmembers; i++) {
		const char *arg;
		const struct gw_port_driver *d = find_driver(cfg->members[i], &arg);
		if (!d || !d->pci)
			continue;
		n += (size_t)snprintf(args + n, n < len ? len - n : 0, " -a %s", arg);
		if (n >= len)
			return -E2BIG;
	}
	return 0;
}

int gw_port_vdev(struct gw_member *m, const char *pmd, const char *args, char *why, size_t len)
{
	snprintf(m->dev, sizeof(m->dev), "net_%s%u", pmd, m->index);
	int rc = rte_vdev_init(m->dev, args);
	if (rc < 0) /* PMDs return -1 for most failures, having logged why */
		return fail(why, len, rc == -1 ? -ENODEV : rc,
			    "net_%s cannot open it (its line above says why)", pmd);
	if (rte_eth_dev_get_port_by_name(m->dev, &m->port_id) < 0) {
		rte_vdev_uninit(m->dev);
		return fail(why, len, -ENODEV, "net_%s made no port", pmd);
	}
	return 0;
}

int gw_port_check_ifname(const char *name, char *why, size_t len)
{
	/* The kernel refuses '/', "." and ".."; ',' and '=' would be read as
	 * more PMD arguments. */
	if (strlen(name) > 15 || !strcmp(name, ".") || !strcmp(name, "..") || strpbrk(name, "/,="))
		return fail(why, len, -EINVAL,
			    "not an interface name (1 to 15 characters, no '/', ',' or '=')");
	return 0;
}

static void member_close(struct gw_member *m)
{
	if (!m->open)
		return;
	rte_eth_dev_stop(m->port_id);
	if (m->drv->vdev) {
		rte_vdev_uninit(m->dev); /* closes the port, frees the name */
	} else {
		rte_eth_dev_close(m->port_id);
	}
	m->open = false;
	__atomic_store_n(&m->up, false, __ATOMIC_RELAXED);
}

static int member_open(struct gw_port *p, struct gw_member *m, char *why, size_t len)
{
	int rc = m->drv->open(m, p->cfg, p->nqueues, why, len);
	if (rc == 0)
		m->open = true;
	return rc;
}

/* Largest MTU a device takes, by what ethdev itself checks (frame = MTU +
 * the device's overhead <= max_rx_pktlen, MTU <= max_mtu). */
static unsigned mtu_limit(const struct rte_eth_dev_info *di)
{
	uint32_t overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	if (di->max_mtu != UINT16_MAX && di->max_rx_pktlen > di->max_mtu)
		overhead = di->max_rx_pktlen - di->max_mtu;
	uint64_t frame_mtu = di->max_rx_pktlen > overhead ? di->max_rx_pktlen - overhead : 0;
	return (unsigned)RTE_MIN(frame_mtu, (uint64_t)di->max_mtu);
}

static int check_mtu(struct gw_port *p, char *err, size_t errlen)
{
	for (unsigned i = 0; i < p->nmembers; i++) {
		if (p->members[i].drv->own_mtu)
			continue; /* started() sets it */
		struct rte_eth_dev_info di;
		int rc = rte_eth_dev_info_get(p->members[i].port_id, &di);
		if (rc < 0)
			return fail(err, errlen, rc, "[port] members: '%s': no device information (%s)",
				    p->members[i].spec, rte_strerror(-rc));
		unsigned lim = mtu_limit(&di);
		if (p->cfg->mtu > lim)
			return fail(err, errlen, -EINVAL,
				    "[port] mtu = %u: member '%s' takes an MTU of at most %u (frames up to %u bytes): lower [port] mtu",
				    p->cfg->mtu, p->members[i].spec, lim, di.max_rx_pktlen);
	}
	return 0;
}

static int make_bond(struct gw_port *p, char *err, size_t errlen)
{
	int rc = rte_eth_bond_create(GW_BOND_NAME, (uint8_t)p->cfg->bond_mode,
				     (uint8_t)rte_socket_id());
	if (rc < 0)
		return fail(err, errlen, -EINVAL,
			    "[port] bond_mode = %u: cannot create the bond (its line above says why)",
			    p->cfg->bond_mode);
	p->port_id = (uint16_t)rc;
	p->bonded = true;
	if (p->cfg->bond_mode == BONDING_MODE_8023AD) {
		/* The rest of LACP's timers stay the standard's: a switch
		 * expects them. */
		struct rte_eth_bond_8023ad_conf lacp;
		rte_eth_bond_8023ad_conf_get(p->port_id, &lacp);
		lacp.aggregate_wait_timeout_ms = p->cfg->lacp_wait_ms;
		if (rte_eth_bond_8023ad_setup(p->port_id, &lacp) < 0)
			return fail(err, errlen, -EINVAL,
				    "[port] lacp_wait_ms = %u: the bond refused it (its line above says why)",
				    p->cfg->lacp_wait_ms);
	}
	/* The bond's calls return -1 and log their reason themselves. */
	for (unsigned i = 0; i < p->nmembers; i++)
		if (rte_eth_bond_slave_add(p->port_id, p->members[i].port_id) < 0)
			return fail(err, errlen, -EINVAL,
				    "[port] members: '%s': the bond refused it (its line above says why)",
				    p->members[i].spec);
	/* Hash on addresses and ports: each lane is its own UDP flow, so
	 * lanes spread over the members (modes 2 and 4). */
	if (p->cfg->bond_mode != BONDING_MODE_ROUND_ROBIN &&
	    rte_eth_bond_xmit_policy_set(p->port_id, BALANCE_XMIT_POLICY_LAYER34) < 0)
		return fail(err, errlen, -EINVAL, "[port] bond_mode = %u: the bond refused l34 hashing",
			    p->cfg->bond_mode);
	return 0;
}

/* Write every page of a pool chunk once (each byte kept as it was). */
static void prefault(struct rte_mempool *mp, void *opaque, struct rte_mempool_memhdr *mh,
		     unsigned idx)
{
	volatile uint8_t *b = mh->addr;
	for (size_t off = 0; off < mh->len; off += 4096)
		b[off] = b[off];
}

/* Queues, MTU, RSS and LSC of port (the bond, or one member of its own). */
static int configure(struct gw_port *p, uint16_t port, bool own_mtu, char *err, size_t errlen)
{
	struct rte_eth_dev_info di;
	int rc = rte_eth_dev_info_get(port, &di);
	if (rc < 0)
		return fail(err, errlen, rc, "no device information for the port (%s)",
			    rte_strerror(-rc));
	struct rte_eth_conf conf = { 0 };
	/* Configured, not set later: rte_eth_dev_set_mtu would refuse a bond
	 * over vhost members (net_vhost has no MTU operation); ethdev checks
	 * this one as it would that. */
	if (!own_mtu)
		conf.rxmode.mtu = p->cfg->mtu;
	/* Lanes are UDP flows: spread them by what the device can hash on.
	 * af_packet (fanout) and vhost (queue for queue) spread without it. */
	uint64_t hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & di.flow_type_rss_offloads;
	if (p->nqueues > 1 && hf) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = hf;
	}
	if (*di.dev_flags & RTE_ETH_DEV_INTR_LSC)
		conf.intr_conf.lsc = 1;
	if ((rc = rte_eth_dev_configure(port, p->nqueues, p->nqueues, &conf)) < 0)
		return fail(err, errlen, rc, "cannot configure %u queue pairs on the port (%s)%s",
			    p->nqueues, rte_strerror(-rc),
			    p->nqueues > di.max_rx_queues || p->nqueues > di.max_tx_queues
				    ? ": the device has fewer; lower [lcores] workers"
				    : "");
	uint16_t nrx = GW_PORT_RX_DESC, ntx = GW_PORT_TX_DESC;
	rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
	int sock = rte_eth_dev_socket_id(port);
	for (uint16_t q = 0; q < p->nqueues; q++)
		if ((rc = rte_eth_rx_queue_setup(port, q, nrx, sock, NULL, p->pool)) < 0 ||
		    (rc = rte_eth_tx_queue_setup(port, q, ntx, sock, NULL)) < 0)
			return fail(err, errlen, rc, "cannot set up queue %u (%s)", q,
				    rte_strerror(-rc));
	return 0;
}

/* Start port and take every frame: gridwire frames go to our MAC, but
 * LACP's and the hellos do not. All-multicast too: the hellos are
 * broadcasts, and dpdk-dumpcap turns promiscuous mode off as it exits
 * (without its -p), which would leave the port deaf to them; where a PMD
 * has no all-multicast mode, promiscuous mode alone serves. */
static int start(uint16_t port, char *err, size_t errlen)
{
	int rc = rte_eth_dev_start(port);
	if (rc < 0)
		return fail(err, errlen, rc, "cannot start the port (%s)", rte_strerror(-rc));
	rte_eth_promiscuous_enable(port);
	rte_eth_allmulticast_enable(port);
	return 0;
}

/* A started port that hashes flows sends them to the first nrss RX queues
 * only. A device that cannot be told so spreads them over all: the queues
 * past nrss then take some flows too, which costs them only their
 * priority. */
static void rss_queues(const struct gw_port *p, uint16_t port)
{
	struct rte_eth_dev_info di;
	struct rte_eth_rss_reta_entry64 reta[RTE_ETH_RSS_RETA_SIZE_512 / RTE_ETH_RETA_GROUP_SIZE];
	if (p->nrss >= p->nqueues || rte_eth_dev_info_get(port, &di) < 0 || !di.reta_size ||
	    !((RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & di.flow_type_rss_offloads))
		return;
	if (di.reta_size > RTE_ETH_RSS_RETA_SIZE_512) {
		GW_PORT_LOG(NOTICE, "port %u: RSS spreads flows over all %u RX queues, not the first %u (a table of %u entries)",
			    port, p->nqueues, p->nrss, di.reta_size);
		return;
	}
	memset(reta, 0, sizeof(reta));
	for (unsigned i = 0; i < di.reta_size; i++) {
		reta[i / RTE_ETH_RETA_GROUP_SIZE].mask |= 1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
		reta[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE] =
			(uint16_t)(i % p->nrss);
	}
	int rc = rte_eth_dev_rss_reta_update(port, reta, di.reta_size);
	if (rc < 0)
		GW_PORT_LOG(NOTICE, "port %u: RSS spreads flows over all %u RX queues, not the first %u (%s)",
			    port, p->nqueues, p->nrss, rte_strerror(-rc));
}

/* A member that is a port of its own (parallel), configured and started. */
static int own_port(struct gw_port *p, struct gw_member *m, char *err, size_t errlen)
{
	char why[192];
	int rc = configure(p, m->port_id, m->drv->own_mtu, why, sizeof(why));
	if (rc == 0)
		rc = start(m->port_id, why, sizeof(why));
	if (rc == 0)
		rss_queues(p, m->port_id);
	return rc < 0 ? fail(err, errlen, rc, "[port] members: '%s': %s", m->spec, why) : 0;
}

static int started(struct gw_port *p, struct gw_member *m, char *err, size_t errlen)
{
	char why[192];
	int rc = m->drv->started ? m->drv->started(m, p->cfg->mtu, why, sizeof(why)) : 0;
	return rc < 0 ? fail(err, errlen, rc, "[port] members: '%s': %s", m->spec, why) : 0;
}

static int member_link(const struct gw_member *m)
{
	if (m->drv->link)
		return m->drv->link(m);
	struct rte_eth_link l;
	int rc = rte_eth_link_get_nowait(m->port_id, &l);
	return rc < 0 ? rc : l.link_status == RTE_ETH_LINK_UP;
}

static int open_port(struct gw_port *p, char *err, size_t errlen)
{
	const struct gw_config *cfg = p->cfg;
	int rc;
	for (unsigned i = 0; i < cfg->nmembers; i++) {
		struct gw_member *m = &p->members[i];
		m->spec = cfg->members[i];
		m->index = i;
		m->drv = find_driver(m->spec, &m->arg);
		p->nmembers = i + 1;
		char why[192];
		if ((rc = member_open(p, m, why, sizeof(why))) < 0)
			return fail(err, errlen, rc, "[port] members: '%s': %s", m->spec, why);
	}
	if ((rc = check_mtu(p, err, errlen)) < 0)
		return rc;
	p->port_id = p->members[0].port_id;
	p->parallel = cfg->port_kind == GW_PORT_PARALLEL;
	if (cfg->port_kind == GW_PORT_BOND && (rc = make_bond(p, err, errlen)) < 0)
		return rc;

	/* Enough for the RX rings, every lane's window and reorder buffer,
	 * and the frames being built; the config sizes it, but never below
	 * what full RX rings (a PMD may fill them all at start) leave room
	 * for: a queue pair more per lcore must not starve the pool. */
	unsigned rings = p->nmembers * p->nqueues * GW_PORT_RX_DESC;
	unsigned mbufs = cfg->mbufs < rings + GW_PORT_MBUF_WORK ? rings + GW_PORT_MBUF_WORK
								: cfg->mbufs;
	if (mbufs > cfg->mbufs)
		GW_PORT_LOG(NOTICE, "[port] mbufs %u raised to %u: %u members x %u queues hold %u in their RX rings",
			    cfg->mbufs, mbufs, p->nmembers, p->nqueues, rings);
	int sock = rte_eth_dev_socket_id(p->port_id);
	p->pool = rte_pktmbuf_pool_create("gw_mbufs", mbufs, 256, 0,
					  RTE_PKTMBUF_HEADROOM + GW_PORT_MBUF_DATA,
					  sock < 0 ? (int)rte_socket_id() : sock);
	if (!p->pool)
		return fail(err, errlen, -rte_errno,
			    "cannot allocate %u mbufs of %u bytes: give EAL more memory (-m in [eal] args) or lower [port] mbufs",
			    mbufs, GW_PORT_MBUF_DATA);
	/* Without hugepages EAL's memory is only allocated where first
	 * written: fault the whole pool in now, so that the data path takes
	 * no page faults and the gateway's memory does not creep up as
	 * mbufs are first used. */
	rte_mempool_mem_iter(p->pool, prefault, NULL);
	if (p->parallel) {
		for (unsigned i = 0; i < p->nmembers; i++)
			if ((rc = own_port(p, &p->members[i], err, errlen)) < 0)
				return rc;
	} else if ((rc = configure(p, p->port_id, p->members[0].drv->own_mtu, err, errlen)) < 0 ||
		   (rc = start(p->port_id, err, errlen)) < 0) {
		return rc; /* (a bond's kinds never mix own_mtu: checked) */
	} else {
		rss_queues(p, p->port_id);
	}
	for (unsigned i = 0; i < p->nmembers; i++)
		if ((rc = started(p, &p->members[i], err, errlen)) < 0)
			return rc;
	/* Parallel: member 0's MAC on every member, as a doubly attached node
	 * of PRP has one address on both networks (the members are
	 * promiscuous, and net_vhost could not take another MAC anyway). */
	rte_eth_macaddr_get(p->port_id, &p->mac);
	struct gw_links *l = &p->links;
	l->n = p->parallel ? p->nmembers : 1;
	l->nmembers = p->nmembers;
	for (unsigned i = 0; i < p->nmembers; i++) {
		struct gw_member *m = &p->members[i];
		__atomic_store_n(&m->up, member_link(m) == 1, __ATOMIC_RELAXED);
		l->member_port[i] = m->port_id;
		if (p->parallel)
			l->port[i] = m->port_id;
		l->live[i] = p->parallel ? m->up : i == 0;
	}
	if (!p->parallel)
		l->port[0] = p->port_id;
	return 0;
}

int gw_port_open(struct gw_port *p, const struct gw_config *cfg, uint16_t nqueues,
		 uint16_t nrss, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->cfg = cfg;
	p->nqueues = nqueues;
	p->nrss = nrss;
	int rc = open_port(p, err, errlen);
	if (rc < 0)
		gw_port_close(p);
	return rc;
}

/* Not zeroed after: the telemetry thread may still read the members. */
void gw_port_close(struct gw_port *p)
{
	if (p->bonded) {
		/* Closing the bond takes its members out; then it can be freed. */
		rte_eth_dev_stop(p->port_id);
		rte_eth_dev_close(p->port_id);
		if (rte_eth_bond_free(GW_BOND_NAME) < 0)
			GW_PORT_LOG(WARNING, "the bond would not be freed");
		p->bonded = false;
	}
	for (unsigned i = 0; i < p->nmembers; i++)
		member_close(&p->members[i]);
	rte_mempool_free(p->pool);
	p->pool = NULL;
}

/* Counter by counter, each loaded and stored whole: the two sides of the
 * copy are on different threads. */
static void stats_copy(struct rte_eth_stats *to, const struct rte_eth_stats *from)
{
	const uint64_t *f = (const uint64_t *)from;
	uint64_t *t = (uint64_t *)to;
	for (size_t k = 0; k < sizeof(*from) / sizeof(uint64_t); k++)
		__atomic_store_n(&t[k], __atomic_load_n(&f[k], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

void gw_port_stats(const struct gw_port *p, struct rte_eth_stats *st)
{
	stats_copy(st, &p->stats);
}

/* Parallel: a member silent while another carries frames is one whose
 * network is cut beyond its own link (or whose far end is); said once
 * each way. With every member quiet there is nobody to hear: the peers
 * role says so. */
#define GW_SILENT_WATCHES 3  /* heartbeats with nothing in */
#define GW_SILENT_GRACE 30   /* heartbeats a member that never carried anything may take */
static void watch_silence(struct gw_port *p)
{
	unsigned heard = 0;
	for (unsigned i = 0; i < p->nmembers; i++)
		heard += p->members[i].open && p->members[i].quiet < GW_SILENT_WATCHES;
	for (unsigned i = 0; i < p->nmembers; i++) {
		struct gw_member *m = &p->members[i];
		/* A member just up (the far end's cable end may come up a second
		 * after ours) is given time to carry its first frame. */
		bool silent = m->open && m->up && m->quiet >= GW_SILENT_WATCHES && heard > 0 &&
			      (m->carried || m->up_watches >= GW_SILENT_GRACE);
		if (silent == m->silent)
			continue;
		__atomic_store_n(&m->silent, silent, __ATOMIC_RELAXED);
		if (silent)
			GW_PORT_LOG(WARNING, "member %s: silent: its link is up, but it has carried nothing for %u heartbeats while another member carries frames (its network is cut beyond the link, or the far end's member is down)",
				    m->spec, m->quiet);
		else
			GW_PORT_LOG(NOTICE, "member %s: carries frames again", m->spec);
	}
}

/* Member i's link went up or down: the bond or the live links follow. */
static void link_changed(struct gw_port *p, struct gw_member *m, bool up)
{
	if (p->parallel) {
		__atomic_store_n(&p->links.live[m->index], up, __ATOMIC_RELEASE);
		GW_PORT_LOG(WARNING, "member %s: link %s", m->spec,
			    up ? "up, it carries a copy of every frame again"
			       : "down, the other members carry every frame");
		return;
	}
	GW_PORT_LOG(WARNING, "member %s: link %s", m->spec,
		    up ? "up" : "down, its traffic moves to the other members");
}

int gw_port_watch(struct gw_port *p)
{
	int changed = 0;
	struct rte_eth_stats all = { 0 };
	if (!p->parallel && rte_eth_stats_get(p->port_id, &all) < 0)
		memset(&all, 0, sizeof(all));
	for (unsigned i = 0; i < p->nmembers; i++) {
		struct gw_member *m = &p->members[i];
		struct rte_eth_stats st;
		if (!m->open)
			continue;
		if (rte_eth_stats_get(m->port_id, &st) == 0) {
			/* A member taken back into the bond is set up again, and
			 * some PMDs (af_packet, vhost) start counting from 0:
			 * its counts go on from where they were. */
			if (st.ipackets < m->raw.ipackets || st.opackets < m->raw.opackets) {
				m->base.ipackets += m->raw.ipackets;
				m->base.opackets += m->raw.opackets;
			}
			m->raw = st;
			st.ipackets += m->base.ipackets;
			st.opackets += m->base.opackets;
			bool got = st.ipackets != m->rx_packets;
			__atomic_store_n(&m->quiet, got ? 0 : m->quiet + (m->quiet < UINT32_MAX),
					 __ATOMIC_RELAXED);
			m->carried |= got && m->up;
			m->up_watches += m->up && m->up_watches < UINT32_MAX;
			__atomic_store_n(&m->rx_packets, st.ipackets, __ATOMIC_RELAXED);
			__atomic_store_n(&m->tx_packets, st.opackets, __ATOMIC_RELAXED);
			if (p->parallel) {
				const uint64_t *f = (const uint64_t *)&st;
				uint64_t *t = (uint64_t *)&all;
				for (size_t k = 0; k < sizeof(st) / sizeof(uint64_t); k++)
					t[k] += f[k];
			}
		}
		int up = member_link(m);
		if (up < 0 || (bool)up == m->up)
			continue;
		/* A PMD that does not report its link leaves the bond hashing
		 * flows onto a dead member: take it out, and back once it is up
		 * (tried again on the next watch if the bond refuses). */
		if (m->drv->link && p->bonded) {
			int rc = up ? rte_eth_bond_slave_add(p->port_id, m->port_id)
				    : rte_eth_bond_slave_remove(p->port_id, m->port_id);
			if (rc < 0) {
				GW_PORT_LOG(WARNING, "member %s: link %s, but the bond refused the change",
					    m->spec, up ? "up" : "down");
				continue;
			}
			char why[192];
			/* The bond set its own MTU on it. */
			if (up && m->drv->started && m->drv->started(m, p->cfg->mtu, why, sizeof(why)) < 0)
				GW_PORT_LOG(WARNING, "member %s: %s", m->spec, why);
		}
		__atomic_store_n(&m->up, (bool)up, __ATOMIC_RELAXED);
		m->up_watches = 0;
		m->carried = false;
		changed++;
		link_changed(p, m, up);
	}
	for (unsigned i = 0; i < p->nmembers; i++) {
		struct gw_member *m = &p->members[i];
		bool serving = m->open && m->up;
		struct rte_eth_bond_8023ad_slave_info lacp;
		if (serving && p->bonded && p->cfg->bond_mode == BONDING_MODE_8023AD)
			serving = rte_eth_bond_8023ad_slave_info(p->port_id, m->port_id, &lacp) == 0 &&
				  (lacp.actor_state & STATE_DISTRIBUTING);
		__atomic_store_n(&m->in_service, serving, __ATOMIC_RELAXED);
	}
	stats_copy(&p->stats, &all);
	if (p->parallel)
		watch_silence(p);
	return changed;
}

bool gw_port_link_up(const struct gw_port *p)
{
	for (unsigned k = 0; p->parallel && k < p->links.n; k++)
		if (gw_links_live(&p->links, k))
			return true;
	struct rte_eth_link l;
	return !p->parallel && rte_eth_link_get_nowait(p->port_id, &l) == 0 &&
	       l.link_status == RTE_ETH_LINK_UP;
}

static int unplug(struct gw_port *p, struct gw_member *m, void (*quiesce)(void *), void *ctx,
		  char *why, size_t len)
{
	if (!m->open)
		return 0;
	if (p->parallel)
		__atomic_store_n(&p->links.live[m->index], false, __ATOMIC_RELEASE);
	else if (rte_eth_bond_slave_remove(p->port_id, m->port_id) < 0)
		return fail(why, len, -EBUSY, "the bond would not let it go (its log line says why)");
	quiesce(ctx);
	member_close(m);
	GW_PORT_LOG(WARNING, "member %s: unplugged, %s", m->spec,
		    p->parallel ? "the other members carry every frame"
				: "its traffic moves to the other members");
	return 0;
}

static int plug(struct gw_port *p, struct gw_member *m, char *why, size_t len)
{
	if (m->open)
		return 0;
	int rc = member_open(p, m, why, len);
	if (rc < 0)
		return rc;
	if (p->parallel) {
		/* Its own port again; gw_port_watch makes it live once its link is up. */
		char err[256];
		if ((rc = own_port(p, m, err, sizeof(err))) < 0 ||
		    (rc = started(p, m, err, sizeof(err))) < 0) {
			member_close(m);
			return fail(why, len, rc, "%s", err);
		}
		__atomic_store_n(&p->links.port[m->index], m->port_id, __ATOMIC_RELAXED);
		__atomic_store_n(&p->links.member_port[m->index], m->port_id, __ATOMIC_RELAXED);
		__atomic_store_n(&m->quiet, 0, __ATOMIC_RELAXED);
	} else if (rte_eth_bond_slave_add(p->port_id, m->port_id) < 0) {
		/* (the bond configures and starts it like the others) */
		member_close(m);
		return fail(why, len, -EINVAL, "the bond refused it (its log line says why)");
	} else {
		__atomic_store_n(&p->links.member_port[m->index], m->port_id, __ATOMIC_RELAXED);
	}
	GW_PORT_LOG(WARNING, "member %s: plugged in again", m->spec);
	return 0;
}

int gw_port_member_set(struct gw_port *p, unsigned i, bool up, void (*quiesce)(void *ctx),
		       void *ctx, char *why, size_t whylen)
{
	if (i >= p->nmembers)
		return fail(why, whylen, -EINVAL, "there is no member %u (the port has %u)", i,
			    p->nmembers);
	if (!p->bonded && !p->parallel)
		return fail(why, whylen, -ENOTSUP,
			    "only a member of a bond or of a parallel port can be taken down: a single port has no other");
	struct gw_member *m = &p->members[i];
	if (m->drv->set_link)
		return m->drv->set_link(m, up, why, whylen); /* gw_port_watch follows */
	if (m->drv->vdev)
		return up ? plug(p, m, why, whylen) : unplug(p, m, quiesce, ctx, why, whylen);
	int rc = up ? rte_eth_dev_set_link_up(m->port_id) : rte_eth_dev_set_link_down(m->port_id);
	if (rc == -ENOTSUP)
		return fail(why, whylen, rc, "its device cannot take its link %s",
			    up ? "up" : "down");
	return rc < 0 ? fail(why, whylen, rc, "its PMD refused (%s)", rte_strerror(-rc)) : 0;
}
