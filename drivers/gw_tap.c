/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tap members: a new kernel tap interface through net_tap, for a gateway
 * joined to a kernel bridge or a host's own stack. Its PMD takes frames up
 * to 1522 bytes (no jumbo frames); it reports its link itself.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gw_port_driver.h"

static int check(const char *arg, const struct gw_config *cfg, char *why, size_t len)
{
	return gw_port_check_ifname(arg, why, len);
}

static int open_dev(struct gw_member *m, const struct gw_config *cfg, uint16_t nq, char *why,
		    size_t len)
{
	char args[64];
	snprintf(args, sizeof(args), "iface=%s", m->arg);
	return gw_port_vdev(m, "tap", args, why, len);
}

const struct gw_port_driver gw_tap_driver = {
	.kind = "tap",
	.check = check,
	.open = open_dev,
	.vdev = true,
};
