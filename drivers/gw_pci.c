/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pci members: a NIC port bound to vfio-pci (or another DPDK-capable
 * driver), which EAL probes from its allow list (-a ADDR, added to [eal]
 * args for every pci member). Everything else is ethdev's: its PMD reports
 * its link (LSC interrupts where it offers them) and can take it down.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>

#include "gw_port_driver.h"

/* DOMAIN:BUS:DEVICE.FUNCTION in hex, as ethdev names the port. */
static bool pci_addr(const char *s)
{
	unsigned dom, bus, dev, fn;
	char tail;
	size_t n = strlen(s);
	return n == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.' &&
	       sscanf(s, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &tail) == 4 && dev < 32 &&
	       fn < 8;
}

static int check(const char *arg, const struct gw_config *cfg, char *why, size_t len)
{
	if (!pci_addr(arg)) {
		snprintf(why, len, "not a PCI address such as 0000:03:00.0 (domain:bus:device.function)");
		return -EINVAL;
	}
	if (strstr(cfg->eal_args, "--no-pci")) {
		snprintf(why, len, "EAL must probe PCI for it: take --no-pci out of [eal] args");
		return -EINVAL;
	}
	return 0;
}

static int open_dev(struct gw_member *m, const struct gw_config *cfg, uint16_t nq, char *why,
		    size_t len)
{
	snprintf(m->dev, sizeof(m->dev), "%s", m->arg);
	if (rte_eth_dev_get_port_by_name(m->dev, &m->port_id) < 0) {
		snprintf(why, len, "EAL found no such device: is it there (lspci -s %s) and bound to vfio-pci (dpdk-devbind.py --status)?",
			 m->arg);
		return -ENODEV;
	}
	return 0;
}

const struct gw_port_driver gw_pci_driver = {
	.kind = "pci",
	.check = check,
	.open = open_dev,
	.pci = true,
};
