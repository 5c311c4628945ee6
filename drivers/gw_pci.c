/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pci members: a NIC port bound to vfio-pci (or another DPDK-capable
 * driver), which EAL probes from its allow list (-a ADDR, added to [eal]
 * args for every pci member). Everything else is ethdev's: its PMD reports
 * its link (LSC interrupts where it offers them) and can take it down.
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* Is there at least one IOMMU group (vfio-pci binds nothing without)? */
static bool iommu_groups(void)
{
	DIR *d = opendir("/sys/kernel/iommu_groups");
	bool any = false;
	for (struct dirent *e; d && !any && (e = readdir(d));)
		any = e->d_name[0] != '.';
	if (d)
		closedir(d);
	return any;
}

/* Why EAL made no port of addr, from sysfs: what is missing and its fix. */
static int diagnose(const char *addr, char *why, size_t len)
{
	char path[PATH_MAX], drv[PATH_MAX];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", addr);
	if (access(path, F_OK) < 0) {
		snprintf(why, len, "no such PCI device (lspci -D lists them)");
		return -ENODEV;
	}
	if (!iommu_groups()) {
		snprintf(why, len, "no IOMMU, so vfio-pci cannot take it: enable VT-d or AMD-Vi and boot with intel_iommu=on iommu=pt (or amd_iommu=on)");
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", addr);
	ssize_t n = readlink(path, drv, sizeof(drv) - 1);
	drv[n > 0 ? n : 0] = '\0';
	const char *name = n > 0 ? basename(drv) : NULL;
	if (name && !strcmp(name, "vfio-pci"))
		snprintf(why, len, "bound to vfio-pci, but EAL did not probe it (its lines above say why)");
	else
		snprintf(why, len, "bound to %s, not vfio-pci: bind it (gridwire-setup -c CONFIG, or dpdk-devbind.py -b vfio-pci %s)",
			 name ? name : "no driver", addr);
	return -ENODEV;
}

static int open_dev(struct gw_member *m, const struct gw_config *cfg, uint16_t nq, char *why,
		    size_t len)
{
	snprintf(m->dev, sizeof(m->dev), "%s", m->arg);
	if (rte_eth_dev_get_port_by_name(m->dev, &m->port_id) < 0)
		return diagnose(m->arg, why, len);
	return 0;
}

const struct gw_port_driver gw_pci_driver = {
	.kind = "pci",
	.check = check,
	.open = open_dev,
	.pci = true,
};
