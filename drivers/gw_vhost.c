/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel-bypass cable: vhost-user <-> virtio-user between two gateways
 * on one host, frames moved through shared memory with no kernel in the
 * path (net_vhost at one end, net_virtio_user at the other).
 *
 * Roles, so that either end can restart: the virtio-user end is the server
 * and owns the socket (a stale socket file left by a killed gateway is
 * removed; one another process listens on is refused), the vhost end is
 * the client and reconnects on its own. Under a bond the cable runs mode 4:
 * net_vhost cannot take the bond's MAC address, which modes 0 and 2 set on
 * every member, while mode 4 lets members keep theirs. The virtio-user end
 * gets a control queue: the bond needs promiscuous mode, multiple queues
 * need it too, and virtio-user answers those requests itself. Either end
 * reports its link (the cable connected or not) through ethdev, which the
 * bond follows.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_log.h>

#include "gw_port_driver.h"

static int check(const char *arg, const struct gw_config *cfg, char *why, size_t len)
{
	/* ',' and '=' would be read as more PMD arguments. */
	if (arg[0] != '/' || strlen(arg) >= GW_PATH_MAX || strpbrk(arg, ",=")) {
		snprintf(why, len, "not a socket path (absolute, at most %u characters, no ',' or '=')",
			 GW_PATH_MAX - 1);
		return -EINVAL;
	}
	if (cfg->port_kind == GW_PORT_BOND && cfg->bond_mode != 4) {
		snprintf(why, len, "a cable end can only be bonded in bond_mode 4 (mode %u sets every member's MAC, which neither end of the cable can take)",
			 cfg->bond_mode);
		return -EINVAL;
	}
	return 0;
}

/* net_vhost logs every vhost-user message at INFO: keep its chatter out
 * of the gateway's log unless [eal] args ask for log levels themselves. */
static void quiet(const struct gw_config *cfg)
{
	if (!strstr(cfg->eal_args, "--log-level"))
		rte_log_set_level_pattern("lib.vhost.*", RTE_LOG_WARNING);
}

static int open_vhost(struct gw_member *m, const struct gw_config *cfg, uint16_t nq, char *why,
		      size_t len)
{
	char args[GW_PATH_MAX + 64];
	quiet(cfg);
	snprintf(args, sizeof(args), "iface=%s,client=1,queues=%u", m->arg, nq);
	return gw_port_vdev(m, "vhost", args, why, len);
}

/* Take the socket path for a server: refuse a live one, clear a stale one. */
static int claim_path(const char *path, char *why, size_t len)
{
	char dir[GW_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	mkdir(dirname(dir), 0755); /* like the gateway's own socket directory */
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "%s exists and is not a socket: choose another path", path);
		return -EEXIST;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc = s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	if (s >= 0)
		close(s);
	if (rc == 0) {
		snprintf(why, len, "another process listens on %s (is a gateway with this member running already?)",
			 path);
		return -EADDRINUSE;
	}
	if (rc == -ECONNREFUSED) /* left by a gateway that died */
		rc = unlink(path) < 0 ? -errno : 0;
	if (rc < 0)
		snprintf(why, len, "cannot take over %s (%s)", path, strerror(-rc));
	return rc;
}

static int open_virtio_user(struct gw_member *m, const struct gw_config *cfg, uint16_t nq,
			    char *why, size_t len)
{
	int rc = claim_path(m->arg, why, len);
	if (rc < 0)
		return rc;
	char args[GW_PATH_MAX + 64];
	snprintf(args, sizeof(args), "path=%s,server=1,queues=%u,cq=1,queue_size=1024", m->arg,
		 nq);
	return gw_port_vdev(m, "virtio_user", args, why, len);
}

const struct gw_port_driver gw_vhost_driver = {
	.kind = "vhost",
	.check = check,
	.open = open_vhost,
	.vdev = true,
};

const struct gw_port_driver gw_virtio_user_driver = {
	.kind = "virtio_user",
	.check = check,
	.open = open_virtio_user,
	.vdev = true,
};
