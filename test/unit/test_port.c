/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/: what each kind of member takes, checked without EAL (as
 * gw_config_load does before anything starts), the EAL arguments PCI
 * members add, and the shipped config files against the real rules.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "gw_config.h"
#include "gw_port.h"
#include "gw_test.h"

static char why[512];

/* Load with overrides and the drivers' rule; returns the errno. */
static int load(struct gw_config *cfg, char *const *ovr, unsigned n)
{
	int rc = gw_config_load(cfg, NULL, ovr, n, gw_port_check_member, why, sizeof(why));
	if (rc)
		fprintf(stderr, "\n  (%s)", why);
	return rc;
}

#define OK(...)                                                          \
	do {                                                             \
		char *o[] = { __VA_ARGS__ };                             \
		struct gw_config c;                                      \
		CU_ASSERT_EQUAL(load(&c, o, sizeof(o) / sizeof(o[0])), 0); \
	} while (0)
#define REFUSED(want, ...)                                                 \
	do {                                                               \
		char *o[] = { __VA_ARGS__ };                               \
		struct gw_config c;                                        \
		CU_ASSERT_EQUAL(load(&c, o, sizeof(o) / sizeof(o[0])), -EINVAL); \
		CU_ASSERT_PTR_NOT_NULL(strstr(why, want));                 \
	} while (0)

static void test_af_packet(void)
{
	OK("port.members=veth0");
	OK("port.members=af_packet:veth-a0,veth-a1");
	OK("port.members=abcdefghijklmno"); /* 15 characters */
	REFUSED("not an interface name", "port.members=abcdefghijklmnop");
	REFUSED("not an interface name", "port.members=a/b");
	REFUSED("not an interface name", "port.members=..");
	/* its MTU goes through the kernel, the others' through ethdev */
	REFUSED("cannot share a bond", "port.members=veth0,vhost:/run/x.sock");
	REFUSED("cannot share a bond", "port.members=tap:t0,af_packet:veth0");
	REFUSED("not an interface name", "port.members=eth0=1");
}

static void test_cable(void)
{
	OK("port.members=vhost:/run/gridwire/c0.sock,vhost:/run/gridwire/c1.sock");
	OK("port.members=virtio_user:/run/gridwire/c0.sock");
	REFUSED("not a socket path", "port.members=vhost:run/c0.sock");
	/* '=' would be read into the PMD's arguments (',' splits the list already) */
	REFUSED("not a socket path", "port.members=vhost:/run/queues=9.sock");
	REFUSED("at most 107 characters", "port.members=virtio_user:/"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	/* A bond over cable ends runs mode 4; a single end any mode. */
	REFUSED("bond_mode 4", "port.members=vhost:/run/c0.sock", "port.bond_mode=2");
	REFUSED("bond_mode 4", "port.members=virtio_user:/run/c0.sock", "port.bond_mode=0");
	OK("port.members=vhost:/run/c0.sock", "port.bond_mode=2", "port.kind=single");
}

static void test_pci_and_tap(void)
{
	char eal[] = "eal.args=-l 0 --no-huge";
	OK(eal, "port.members=pci:0000:03:00.0,pci:0000:03:00.1");
	OK(eal, "port.members=pci:abcd:ff:1f.7");
	REFUSED("not a PCI address", eal, "port.members=pci:03:00.0");
	REFUSED("not a PCI address", eal, "port.members=pci:0000:03:00.8");
	REFUSED("not a PCI address", eal, "port.members=pci:0000:03:20.0");
	REFUSED("not a PCI address", eal, "port.members=pci:0000:03:00.0x");
	REFUSED("take --no-pci out", "port.members=pci:0000:03:00.0");
	OK("port.members=tap:gw0", "port.kind=single");
	REFUSED("not an interface name", "port.members=tap:a=b");
	REFUSED("unknown kind of member; kinds: af_packet:, tap:, vhost:, virtio_user:, pci:",
		"port.members=memif:/run/m.sock");
	REFUSED("nothing after 'vhost:'", "port.members=vhost:");
}

static void test_eal_args(void)
{
	char *o[] = { "eal.args=-l 0", "port.members=pci:0000:03:00.0,pci:0000:03:00.1" };
	struct gw_config c;
	CU_ASSERT_EQUAL_FATAL(load(&c, o, 2), 0);
	char args[600];
	snprintf(args, sizeof(args), "%s", c.eal_args);
	CU_ASSERT_EQUAL(gw_port_eal_args(&c, args, sizeof(args)), 0);
	CU_ASSERT_STRING_EQUAL(args, "-l 0 -a 0000:03:00.0 -a 0000:03:00.1");
	char small[20] = "-l 0";
	CU_ASSERT_EQUAL(gw_port_eal_args(&c, small, sizeof(small)), -E2BIG);

	/* Virtual devices add nothing: the gateway creates them itself. */
	char *v[] = { "port.members=vhost:/run/c0.sock" };
	CU_ASSERT_EQUAL_FATAL(load(&c, v, 1), 0);
	snprintf(args, sizeof(args), "%s", c.eal_args);
	CU_ASSERT_EQUAL(gw_port_eal_args(&c, args, sizeof(args)), 0);
	CU_ASSERT_STRING_EQUAL(args, c.eal_args);
}

static void test_shipped_files(void)
{
	static const char *const files[] = { "gridwire.ini", "demo-a.ini", "demo-b.ini", "mesh.ini",
					     "gateway-host.ini" };
	for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[256];
		struct gw_config c;
		snprintf(path, sizeof(path), GW_SOURCE_DIR "/config/%s", files[i]);
		int rc = gw_config_load(&c, path, NULL, 0, gw_port_check_member, why, sizeof(why));
		if (rc)
			fprintf(stderr, "\n  %s: %s", files[i], why);
		CU_ASSERT_EQUAL(rc, 0);
	}
}

static const struct gw_test_case tests[] = {
	{ "af_packet members", test_af_packet },
	{ "cable members and bond mode", test_cable },
	{ "pci and tap members, unknown kinds", test_pci_and_tap },
	{ "EAL arguments of PCI members", test_eal_args },
	{ "shipped config files", test_shipped_files },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("port", tests);
}
