/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a kind of port device brings to gw_port: how its argument is checked,
 * how its device is created or found, and the few things its PMD does not
 * do through ethdev. One file per kind implements one of these.
 */
#ifndef GW_PORT_DRIVER_H
#define GW_PORT_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_log.h>

#include "gw_config.h"
#include "gw_port.h"

extern int gw_port_logtype;
#define GW_PORT_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, gw_port_logtype, "gridwired: " fmt "\n", ##__VA_ARGS__)

struct gw_port_driver {
	const char *kind; /* as written before the ':' of a member */
	/* Is arg well formed (given the rest of cfg)? No EAL here. */
	int (*check)(const char *arg, const struct gw_config *cfg, char *why, size_t len);
	/* Create or find the device: fill m->dev and m->port_id. */
	int (*open)(struct gw_member *m, const struct gw_config *cfg, uint16_t nqueues, char *why,
		    size_t len);
	/* After the port started, what ethdev could not do (NULL: nothing). */
	int (*started)(struct gw_member *m, unsigned mtu, char *why, size_t len);
	/* Link state when the PMD does not report it: 1, 0 or a negative
	 * errno (NULL: the PMD reports it through ethdev). */
	int (*link)(const struct gw_member *m);
	/* Take the link down or up other than through ethdev (NULL: ethdev,
	 * or an unplug for a virtual device). */
	int (*set_link)(struct gw_member *m, bool up, char *why, size_t len);
	bool bare;     /* a member with no "kind:" is of this kind */
	bool vdev;     /* made by rte_vdev_init: closing it unplugs it */
	bool own_mtu;  /* its PMD understates its frame size: started() sets the
			* MTU, so it cannot share a bond with another kind */
	bool pci;      /* probed by EAL from the allow list */
};

extern const struct gw_port_driver gw_af_packet_driver, gw_tap_driver, gw_vhost_driver,
	gw_virtio_user_driver, gw_pci_driver;

/* Create the virtual device net_<pmd><m->index> with args (for open). */
int gw_port_vdev(struct gw_member *m, const char *pmd, const char *args, char *why, size_t len);

/* Is name one for a kernel interface that is also safe in PMD arguments? */
int gw_port_check_ifname(const char *name, char *why, size_t len);

#endif
