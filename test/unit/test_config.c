/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_config: defaults, the shipped files, overrides, derived values, errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "gw_config.h"
#include "gw_test.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define TMP_PATH_LEN 32

static char err[1024];

/* Write len bytes of text to a new file under /tmp; the caller unlinks it. */
static void tmp_ini_n(char path[TMP_PATH_LEN], const char *text, size_t len)
{
	snprintf(path, TMP_PATH_LEN, "/tmp/gw_config_XXXXXX");
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, text, len) == (ssize_t)len);
	close(fd);
}

static void tmp_ini(char path[TMP_PATH_LEN], const char *text)
{
	tmp_ini_n(path, text, strlen(text));
}

/* Load len bytes as a config file, then the overrides. */
static int load_bytes(struct gw_config *cfg, const char *text, size_t len, char *const *ovr,
		      unsigned n)
{
	char path[TMP_PATH_LEN];

	tmp_ini_n(path, text, len);
	int rc = gw_config_load(cfg, path, ovr, n, NULL, err, sizeof(err));
	unlink(path);
	return rc;
}

static int load_text(struct gw_config *cfg, const char *text, char *const *ovr, unsigned n)
{
	return load_bytes(cfg, text, strlen(text), ovr, n);
}

/* A failed load: -EINVAL and one line of error containing want. */
static void assert_refused(int rc, const char *want)
{
	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
	CU_ASSERT_PTR_NULL(strchr(err, '\n'));
	if (rc != -EINVAL || !strstr(err, want))
		fprintf(stderr, "\n  wanted '%s' in: %s\n", want, err);
}

static void test_defaults(void)
{
	struct gw_config cfg, def;

	gw_config_defaults(&def);
	snprintf(err, sizeof(err), "stale");
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, NULL, 0, NULL, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "");
	CU_ASSERT(memcmp(&cfg, &def, sizeof(cfg)) == 0);
	CU_ASSERT_STRING_EQUAL(cfg.eal_args, "--no-pci --no-huge -m 512 --no-shconf -l 0");
	CU_ASSERT_EQUAL(cfg.node_id, 1);
	CU_ASSERT_STRING_EQUAL(cfg.node_name, "gw1");
	CU_ASSERT_STRING_EQUAL(cfg.socket_path, "/run/gridwire/gw1.sock");
	CU_ASSERT_EQUAL(cfg.npeers, 0);
	CU_ASSERT_EQUAL(cfg.port_kind, GW_PORT_BOND);
	CU_ASSERT_EQUAL(cfg.nmembers, 1);
	CU_ASSERT_STRING_EQUAL(cfg.members[0], "veth0");
	CU_ASSERT_EQUAL(cfg.bond_mode, 4);
	CU_ASSERT_EQUAL(cfg.lacp_wait_ms, 2000);
	CU_ASSERT_EQUAL(cfg.mtu, 9000);
	CU_ASSERT_EQUAL(cfg.ip, IP4(198, 18, 0, 1));
	CU_ASSERT_EQUAL(cfg.udp_port, 47000);
	CU_ASSERT_EQUAL(cfg.mbufs, 8192);
	CU_ASSERT_EQUAL(cfg.window, 256);
	CU_ASSERT_EQUAL(cfg.rto_min_us, 20000);
	CU_ASSERT_EQUAL(cfg.rto_max_us, 200000);
	CU_ASSERT_EQUAL(cfg.batch_max, 0);
	CU_ASSERT_EQUAL(cfg.hello_ms, 100);
	CU_ASSERT_EQUAL(cfg.peer_timeout_ms, 1000);
	CU_ASSERT_EQUAL(cfg.ring_count, 4096);
	CU_ASSERT_EQUAL(cfg.arena_kb, 1024);
	CU_ASSERT_EQUAL(cfg.msg_max, 8192);
	CU_ASSERT_EQUAL(cfg.clients_max, 64);
	CU_ASSERT_EQUAL(cfg.dest_block_ms, 100);
	CU_ASSERT(cfg.latest_unread == 64 && cfg.latest_keys == 4096 && cfg.latest_kb == 1024);
	CU_ASSERT_EQUAL(cfg.idle, GW_IDLE_BACKOFF);
	CU_ASSERT_EQUAL(cfg.spin_polls, 200);
	CU_ASSERT_EQUAL(cfg.yield_polls, 20);
	CU_ASSERT_EQUAL(cfg.sleep_max_us, 200);
	CU_ASSERT_EQUAL(gw_config_payload_max(&cfg), 9000 - 20 - 8 - 32 - 16);
}

/* The documented file sets every key to its default: it must change nothing. */
static void test_shipped_default_file(void)
{
	struct gw_config cfg, def;

	gw_config_defaults(&def);
	int rc = gw_config_load(&cfg, GW_SOURCE_DIR "/config/gridwire.ini", NULL, 0, NULL, err,
				sizeof(err));
	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		fprintf(stderr, "\n  %s\n", err);
	CU_ASSERT(memcmp(&cfg, &def, sizeof(cfg)) == 0);
}

static void check_demo(const char *file, unsigned id, const char *name, const char *m0,
		       const char *m1, unsigned peer)
{
	char path[256], sock[64];
	struct gw_config cfg;

	snprintf(path, sizeof(path), GW_SOURCE_DIR "/config/%s", file);
	snprintf(sock, sizeof(sock), "/run/gridwire/%s.sock", name);
	int rc = gw_config_load(&cfg, path, NULL, 0, NULL, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(cfg.node_id, id);
	CU_ASSERT_STRING_EQUAL(cfg.node_name, name);
	CU_ASSERT_STRING_EQUAL(cfg.socket_path, sock);
	CU_ASSERT_EQUAL(cfg.npeers, 1);
	CU_ASSERT_EQUAL(cfg.peers[0], peer);
	CU_ASSERT_EQUAL(cfg.port_kind, GW_PORT_BOND);
	CU_ASSERT_EQUAL(cfg.nmembers, 2);
	CU_ASSERT_STRING_EQUAL(cfg.members[0], m0);
	CU_ASSERT_STRING_EQUAL(cfg.members[1], m1);
	CU_ASSERT_EQUAL(cfg.bond_mode, 4);
	CU_ASSERT_EQUAL(cfg.mtu, 9000);
	CU_ASSERT_EQUAL(cfg.ip, IP4(198, 18, 0, id));
}

static void test_shipped_demo_files(void)
{
	check_demo("demo-a.ini", 1, "alpha", "vhost:/run/gridwire/cable0.sock",
		   "vhost:/run/gridwire/cable1.sock", 2);
	check_demo("demo-b.ini", 2, "beta", "virtio_user:/run/gridwire/cable0.sock",
		   "virtio_user:/run/gridwire/cable1.sock", 1);
}

static void test_file_values(void)
{
	struct gw_config cfg;
	int rc = load_text(&cfg,
			   "; comment\n"
			   "[eal]\n"
			   "args = -l 1 --no-huge ; trailing comment\n"
			   "[node]\n"
			   "peers = 3, 7,9\n"
			   "[port]\n"
			   "kind = single\n"
			   "members = eth1\n"
			   "mtu = 01500\n"
			   "[idle]\n"
			   "strategy = spin\n"
			   "[port]\n"
			   "udp_port = 65535\n",
			   NULL, 0);

	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_STRING_EQUAL(cfg.eal_args, "-l 1 --no-huge");
	CU_ASSERT_EQUAL(cfg.npeers, 3);
	CU_ASSERT(cfg.peers[0] == 3 && cfg.peers[1] == 7 && cfg.peers[2] == 9);
	CU_ASSERT_EQUAL(cfg.port_kind, GW_PORT_SINGLE);
	CU_ASSERT_EQUAL(cfg.nmembers, 1);
	CU_ASSERT_STRING_EQUAL(cfg.members[0], "eth1");
	CU_ASSERT_EQUAL(cfg.mtu, 1500); /* decimal: a leading zero is not octal */
	CU_ASSERT_EQUAL(cfg.idle, GW_IDLE_SPIN);
	CU_ASSERT_EQUAL(cfg.udp_port, 65535); /* from a repeated [port] section */
}

static void test_overrides_win(void)
{
	char *ovr[] = { "port.mtu=9000", "proto.window=32", "proto.window=128", "chan.ring=64",
			"node.peers=", "eal.args=-l 2 --no-pci" };
	struct gw_config cfg;
	int rc = load_text(&cfg,
			   "[port]\nmtu = 1500\n[proto]\nwindow = 64\nhello_ms = 50\n"
			   "[node]\npeers = 2,3\n",
			   ovr, RTE_DIM(ovr));

	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(cfg.mtu, 9000);
	CU_ASSERT_EQUAL(cfg.window, 128); /* the last override wins */
	CU_ASSERT_EQUAL(cfg.ring_count, 64);
	CU_ASSERT_EQUAL(cfg.hello_ms, 50); /* the file still counts where not overridden */
	CU_ASSERT_EQUAL(cfg.npeers, 0);    /* an empty override means any peer again */
	CU_ASSERT_STRING_EQUAL(cfg.eal_args, "-l 2 --no-pci");

	char *ovr2[] = { "chan.clients_max=7" };
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, ovr2, 1, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.clients_max, 7);
}

/* name, socket and ip follow the final id, wherever it came from. */
static void test_derived_defaults(void)
{
	struct gw_config cfg;

	char *id7[] = { "node.id=7" };
	CU_ASSERT_EQUAL_FATAL(gw_config_load(&cfg, NULL, id7, 1, NULL, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(cfg.node_name, "gw7");
	CU_ASSERT_STRING_EQUAL(cfg.socket_path, "/run/gridwire/gw7.sock");
	CU_ASSERT_EQUAL(cfg.ip, IP4(198, 18, 0, 7));

	char *id9[] = { "node.id=9" };
	CU_ASSERT_EQUAL_FATAL(load_text(&cfg, "[node]\nid = 3\n", id9, 1), 0);
	CU_ASSERT_STRING_EQUAL(cfg.node_name, "gw9");
	CU_ASSERT_EQUAL(cfg.ip, IP4(198, 18, 0, 9));

	char *name[] = { "node.name=edge" };
	CU_ASSERT_EQUAL_FATAL(load_text(&cfg, "[node]\nid = 255\n", name, 1), 0);
	CU_ASSERT_STRING_EQUAL(cfg.node_name, "edge");
	CU_ASSERT_STRING_EQUAL(cfg.socket_path, "/run/gridwire/edge.sock");
	CU_ASSERT_EQUAL(cfg.ip, IP4(198, 18, 0, 255));

	/* Explicit values stay put when the id changes. */
	char *id5[] = { "node.id=5", "node.socket=/tmp/gw.sock" };
	CU_ASSERT_EQUAL_FATAL(load_text(&cfg, "[port]\nip = 10.1.2.3\n", id5, 2), 0);
	CU_ASSERT_EQUAL(cfg.ip, IP4(10, 1, 2, 3));
	CU_ASSERT_STRING_EQUAL(cfg.socket_path, "/tmp/gw.sock");
	CU_ASSERT_STRING_EQUAL(cfg.node_name, "gw5");
}

static void test_msg_max_and_mtu(void)
{
	struct gw_config cfg;

	/* Not set: lowered to what fits. */
	CU_ASSERT_EQUAL_FATAL(load_text(&cfg, "[port]\nmtu = 1500\n", NULL, 0), 0);
	CU_ASSERT_EQUAL(gw_config_payload_max(&cfg), 1424);
	CU_ASSERT_EQUAL(cfg.msg_max, 1424);

	CU_ASSERT_EQUAL(load_text(&cfg, "[port]\nmtu = 1500\n[chan]\nmsg_max = 1424\n", NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.msg_max, 1424);

	/* Set explicitly: refused, not silently changed. */
	assert_refused(load_text(&cfg, "[port]\nmtu = 1500\n[chan]\nmsg_max = 2000\n", NULL, 0),
		       "[chan] msg_max");
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "1424"));
	char *mtu[] = { "port.mtu=1500" };
	assert_refused(load_text(&cfg, "[chan]\nmsg_max = 8192\n", mtu, 1), "--set port.mtu=1500");
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "msg_max"));
	char *both[] = { "port.mtu=1500", "chan.msg_max=1425" };
	assert_refused(gw_config_load(&cfg, NULL, both, 2, NULL, err, sizeof(err)), "chan.msg_max=1425");
}

struct bad_value {
	const char *section, *key, *value;
};

/* Each is refused alone, from a file and from an override. */
static const struct bad_value bad_values[] = {
	{ "node", "id", "0" },
	{ "node", "id", "256" },
	{ "node", "id", "one" },
	{ "node", "name", "two words" },
	{ "node", "name", "a/b" },
	{ "node", "name", "abcdefghijklmnopqrstuvwxyz_abcdef" },
	/* 108 characters: one more than sun_path holds with its NUL */
	{ "node", "socket", "/run/gridwire/"
			    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock" },
	{ "node", "peers", "0" },
	{ "node", "peers", "2,256" },
	{ "node", "peers", "2,2" },
	{ "node", "peers", "2,,3" },
	{ "node", "peers", "x" },
	{ "node", "peers", "1" }, /* the node's own id */
	{ "port", "kind", "tap" },
	{ "port", "members", "a,,b" },
	{ "port", "members", "a,b,c,d,e" },
	{ "port", "members", "a b" },
	/* 128 characters: one more than a member may have */
	{ "port", "members", "vhost:/run/gridwire/"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
	{ "port", "members", "a,a" },
	{ "port", "bond_mode", "1" },
	{ "port", "bond_mode", "3" },
	{ "port", "bond_mode", "5" },
	{ "port", "bond_mode", "lacp" },
	{ "port", "lacp_wait_ms", "9" },
	{ "port", "lacp_wait_ms", "10001" },
	{ "port", "mtu", "1499" },
	{ "port", "mtu", "9001" },
	{ "port", "ip", "198.18.0" },
	{ "port", "ip", "198.18.0.256" },
	{ "port", "ip", "localhost" },
	{ "port", "udp_port", "1023" },
	{ "port", "udp_port", "65536" },
	{ "port", "mbufs", "1023" },
	{ "port", "mbufs", "1048577" },
	{ "proto", "window", "0" },
	{ "proto", "window", "3" },
	{ "proto", "window", "512" },
	{ "proto", "rto_min_us", "99" },
	{ "proto", "rto_min_us", "1000001" },
	{ "proto", "rto_max_us", "1000" }, /* below the default rto_min_us */
	{ "proto", "rto_max_us", "10000001" },
	{ "proto", "batch_max", "4097" },
	{ "proto", "hello_ms", "9" },
	{ "proto", "hello_ms", "10001" },
	{ "proto", "hello_ms", "400" }, /* 3 * 400 > the default peer_timeout_ms */
	{ "proto", "peer_timeout_ms", "299" },
	{ "cc", "control", "cubic" },
	{ "cc", "target_us", "9" },
	{ "cc", "target_us", "100001" },
	{ "qos", "dscp_urgent", "64" },
	{ "qos", "dscp_bulk", "-1" },
	{ "qos", "pcp_urgent", "8" },
	{ "qos", "pcp_urgent", "on" },
	{ "chan", "ring", "32" },
	{ "chan", "ring", "100" },
	{ "chan", "ring", "2097152" },
	{ "chan", "arena_kb", "32" },
	{ "chan", "arena_kb", "100" },
	{ "chan", "arena_kb", "524288" },
	{ "chan", "msg_max", "0" },
	{ "chan", "msg_max", "65536" },
	{ "chan", "msg_max", "9000" }, /* more than fits at mtu 9000 */
	{ "chan", "clients_max", "0" },
	{ "chan", "clients_max", "4097" },
	{ "chan", "dest_block_ms", "60001" },
	{ "topics", "latest_unread", "0" },
	{ "topics", "latest_keys", "16777217" },
	{ "topics", "latest_kb", "63" },
	{ "idle", "strategy", "sleep" },
	{ "idle", "spin_polls", "1000001" },
	{ "idle", "yield_polls", "1000001" },
	{ "idle", "sleep_max_us", "0" },
	{ "idle", "sleep_max_us", "50001" },
	{ "idle", "sleep_max_us", "100000" },
	{ "auth", "mode", "rot13" },
	{ "auth", "aead", "aes-128-gcm" },
	{ "auth", "overlap_s", "86401" },
	{ "auth", "roll_s", "0" },
	{ "auth", "roll_gb", "0" },
	/* Numbers are plain decimal. */
	{ "port", "mtu", "+1500" },
	{ "port", "mtu", "-1500" },
	{ "port", "mtu", "0x2328" },
	{ "port", "mtu", "1500abc" },
	{ "port", "mtu", "1 500" },
	{ "port", "mtu", "1500.0" },
	{ "port", "mtu", "99999999999999999999" },
	{ "port", "mtu", "4294968796" }, /* 2^32 + 1500 */
};

static void test_bad_values(void)
{
	char text[512], key[64], ovr[512];
	struct gw_config cfg;

	for (unsigned i = 0; i < RTE_DIM(bad_values); i++) {
		const struct bad_value *b = &bad_values[i];
		char *ovrs[] = { ovr };

		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", b->section, b->key, b->value);
		snprintf(key, sizeof(key), "[%s] %s", b->section, b->key);
		assert_refused(load_text(&cfg, text, NULL, 0), key);

		snprintf(ovr, sizeof(ovr), "%s.%s=%s", b->section, b->key, b->value);
		assert_refused(gw_config_load(&cfg, NULL, ovrs, 1, NULL, err, sizeof(err)), ovr);
	}
}

static void test_error_line_format(void)
{
	char path[TMP_PATH_LEN], want[256];
	struct gw_config cfg;

	tmp_ini(path, "[port]\nmtu = 12000\n");
	CU_ASSERT_EQUAL(gw_config_load(&cfg, path, NULL, 0, NULL, err, sizeof(err)), -EINVAL);
	unlink(path);
	snprintf(want, sizeof(want), "config %s: [port] mtu = 12000: must be between 1500 and 9000",
		 path);
	CU_ASSERT_STRING_EQUAL(err, want);

	char *ovr[] = { "port.mtu=abc" };
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, ovr, 1, NULL, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--set port.mtu=abc: not a number");

	char *mode[] = { "port.bond_mode=1" };
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, mode, 1, NULL, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--set port.bond_mode=1: must be one of 0, 2, 4");

	/* A short buffer is cut, never overrun; no buffer at all is fine too. */
	char small[8];
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, ovr, 1, NULL, small, sizeof(small)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(small, "--set p");
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, ovr, 1, NULL, NULL, 0), -EINVAL);
}

static void test_cross_key_errors(void)
{
	struct gw_config cfg;

	assert_refused(load_text(&cfg, "[port]\nkind = single\nmembers = a,b\n", NULL, 0),
		       "[port] members");
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "single"));
	char *kind[] = { "port.kind=single" };
	assert_refused(load_text(&cfg, "[port]\nmembers = a,b\n", kind, 1), "port.kind");

	/* The override that made the id clash is the one named. */
	char *id[] = { "node.id=2" };
	assert_refused(load_text(&cfg, "[node]\npeers = 2,3\n", id, 1), "--set node.id=2");
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "peers"));

	char *rto[] = { "proto.rto_min_us=300000" };
	assert_refused(gw_config_load(&cfg, NULL, rto, 1, NULL, err, sizeof(err)), "proto.rto_min_us");
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "rto_max_us"));

	CU_ASSERT_EQUAL(load_text(&cfg, "[proto]\nhello_ms = 400\npeer_timeout_ms = 1200\n",
				  NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.peer_timeout_ms, 1200);

	/* Parallel: two members or more, no bond settings; a demo file
	 * (bond_mode left to its default) becomes parallel by its kind alone. */
	assert_refused(load_text(&cfg, "[port]\nkind = parallel\nmembers = a\n", NULL, 0),
		       "kind parallel needs two members or more");
	char *lacp[] = { "port.bond_mode=4" };
	assert_refused(load_text(&cfg, "[port]\nkind = parallel\nmembers = a,b\n", lacp, 1),
		       "--set port.bond_mode=4: bond_mode is for kind bond");
	char *par[] = { "port.kind=parallel" };
	CU_ASSERT_EQUAL(gw_config_load(&cfg, GW_SOURCE_DIR "/config/demo-a.ini", par, 1, NULL, err,
				       sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.port_kind, GW_PORT_PARALLEL);
	CU_ASSERT_EQUAL(cfg.lacp_wait_ms, 100);
	/* LACP's wait, only where LACP runs. */
	char *xor[] = { "port.bond_mode=2" };
	assert_refused(load_text(&cfg, "[port]\nlacp_wait_ms = 100\n", xor, 1),
		       "--set port.bond_mode=2: lacp_wait_ms is for bond_mode 4");
	CU_ASSERT_EQUAL(load_text(&cfg, "[port]\nbond_mode = 4\nlacp_wait_ms = 10\n", NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.lacp_wait_ms, 10);
	/* [fault] member: all (the default) or one of the members. */
	CU_ASSERT_EQUAL(cfg.fault_member, GW_CONFIG_ALL_MEMBERS);
	CU_ASSERT_EQUAL(load_text(&cfg, "[port]\nmembers = a,b\n[fault]\nmember = 1\n", NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.fault_member, 1);
	assert_refused(load_text(&cfg, "[port]\nmembers = a,b\n[fault]\nmember = 2\n", NULL, 0),
		       "fault member 2: the port has members 0..1");
	assert_refused(load_text(&cfg, "[fault]\nmember = 9\n", NULL, 0), "[fault] member = 9");
	/* [qos] pcp_urgent: off (untagged) by default, or a priority. */
	CU_ASSERT_EQUAL(cfg.pcp_urgent, GW_CONFIG_PCP_OFF);
	CU_ASSERT_EQUAL(load_text(&cfg, "[qos]\npcp_urgent = 4\n", NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.pcp_urgent, 4);
}

/* A member checker that knows one kind, "ok:", and refuses "ok:" when bond_mode is 2. */
static int check_ok_kind(const char *member, const struct gw_config *cfg, char *why, size_t len)
{
	if (strncmp(member, "ok:", 3)) {
		snprintf(why, len, "unknown kind");
		return -EINVAL;
	}
	if (cfg->bond_mode == 2) {
		snprintf(why, len, "needs bond_mode 4");
		return -ENOTSUP;
	}
	return 0;
}

static void test_member_check(void)
{
	struct gw_config cfg;
	char *good[] = { "port.members=ok:a, ok:/b/c" };
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, good, 1, check_ok_kind, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(cfg.members[1], "ok:/b/c");

	/* The checker's reason follows the member it refused, with its errno. */
	char *bad[] = { "port.members=ok:a,nope:b" };
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, bad, 1, check_ok_kind, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "--set port.members=ok:a,nope:b: 'nope:b': unknown kind");

	/* It runs once every key is in: a later bond_mode still counts. */
	char *late[] = { "port.members=ok:a", "port.bond_mode=2" };
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, late, 2, check_ok_kind, err, sizeof(err)),
			-ENOTSUP);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "'ok:a': needs bond_mode 4"));
}

static void test_too_long(void)
{
	char text[512], ovr[600];
	struct gw_config cfg;
	char *ovrs[] = { ovr };

	/* rte_cfgfile would cut this value at 255 characters. */
	snprintf(text, sizeof(text), "[eal]\nargs = %0300d\n", 0);
	assert_refused(load_text(&cfg, text, NULL, 0), "[eal] args");

	snprintf(ovr, sizeof(ovr), "eal.args=%0512d", 0);
	assert_refused(gw_config_load(&cfg, NULL, ovrs, 1, NULL, err, sizeof(err)), "eal.args");

	/* 65 peers: 2..66. */
	int n = snprintf(ovr, sizeof(ovr), "node.peers=2");
	for (unsigned id = 3; id <= 66; id++)
		n += snprintf(ovr + n, sizeof(ovr) - n, ",%u", id);
	assert_refused(gw_config_load(&cfg, NULL, ovrs, 1, NULL, err, sizeof(err)), "node.peers");
	ovr[strlen(ovr) - 3] = '\0'; /* 64 peers fit */
	CU_ASSERT_EQUAL(gw_config_load(&cfg, NULL, ovrs, 1, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.npeers, GW_CONFIG_MAX_PEERS);
}

static void test_unknown_names(void)
{
	struct gw_config cfg;

	assert_refused(load_text(&cfg, "[port]\nmtuu = 9000\n", NULL, 0),
		       "unknown key [port] mtuu; known keys: kind, members, bond_mode, lacp_wait_ms, mtu, ip, udp_port, mbufs");
	assert_refused(load_text(&cfg, "[portt]\nmtu = 9000\n", NULL, 0),
		       "unknown section [portt]; known sections: eal, node, port, proto, cc, qos, chan, topics, idle");
	assert_refused(load_text(&cfg, "[extra]\n", NULL, 0), "unknown section [extra]");
	assert_refused(load_text(&cfg, "[node]\n# id = 2\n", NULL, 0), "unknown key [node] # id");

	char *key[] = { "port.mtuu=9000" };
	assert_refused(gw_config_load(&cfg, NULL, key, 1, NULL, err, sizeof(err)),
		       "--set port.mtuu=9000: unknown key [port] mtuu; known keys:");
	char *sec[] = { "nod.id=1" };
	assert_refused(gw_config_load(&cfg, NULL, sec, 1, NULL, err, sizeof(err)),
		       "--set nod.id=1: unknown section [nod]");
}

static void test_malformed_overrides(void)
{
	static char *const bad[] = { "port.mtu", "portmtu=1", ".mtu=1", "port.=1", "=1", "" };
	struct gw_config cfg;
	char want[64];

	for (unsigned i = 0; i < RTE_DIM(bad); i++) {
		snprintf(want, sizeof(want), "--set %s: expected section.key=value", bad[i]);
		assert_refused(gw_config_load(&cfg, NULL, &bad[i], 1, NULL, err, sizeof(err)), want);
	}
	/* What is echoed stays one line (found by fuzz_config: a newline in a
	 * --set value made the error two lines). */
	static char *const nl[] = { "chan.ring=4096\nmembers; single\tx" };
	assert_refused(gw_config_load(&cfg, NULL, nl, 1, NULL, err, sizeof(err)),
		       "--set chan.ring=4096?members; single?x: ");
	CU_ASSERT_PTR_NULL(strchr(err, '\n'));
}

static void test_file_errors(void)
{
	const char *missing = "/tmp/gw_config_no_such_file.ini";
	struct gw_config cfg;

	CU_ASSERT_EQUAL(gw_config_load(&cfg, missing, NULL, 0, NULL, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, missing));
	assert_refused(gw_config_load(&cfg, "/tmp", NULL, 0, NULL, err, sizeof(err)),
		       "config /tmp: not a regular file");

	/* What rte_cfgfile would skip or refuse without naming the line. */
	assert_refused(load_text(&cfg, "[port]\nmtu 1500\n", NULL, 0),
		       "line 2: 'mtu 1500' is neither [section] nor key = value");
	assert_refused(load_text(&cfg, "mtu = 1500\n[port]\n", NULL, 0),
		       "line 1: 'mtu = 1500' comes before any [section]");
	/* What rte_cfgfile refuses with a log line of its own: said first, by
	 * line, so that the operator reads one line (fuzz_config's log). */
	assert_refused(load_text(&cfg, "[port\nmtu = 1500\n", NULL, 0),
		       "line 1: '[port' has no closing ']'");
	assert_refused(load_text(&cfg, "[port]\nmtu =  ; none\n", NULL, 0),
		       "line 2: 'mtu =' has no value (leave the key out for its default)");
	char longline[400]; /* rte_cfgfile takes 322 characters a line */
	snprintf(longline, sizeof(longline), "[port]\n; %0320d\n", 0);
	CU_ASSERT_EQUAL(load_text(&cfg, longline, NULL, 0), 0);
	snprintf(longline, sizeof(longline), "[port]\n; %0321d\n", 0);
	assert_refused(load_text(&cfg, longline, NULL, 0), "line 2: longer than 322 characters");
	snprintf(longline, sizeof(longline), "[port]\n; %0320d", 0); /* no newline at the end */
	CU_ASSERT_EQUAL(load_text(&cfg, longline, NULL, 0), 0);
	/* rte_cfgfile stops a line at a NUL; the operator is told of it. */
	static const char nul[] = "[port]\nmtu = 1500\0 junk\n";
	assert_refused(load_bytes(&cfg, nul, sizeof(nul) - 1, NULL, 0), "line 2: a NUL byte");

	assert_refused(load_text(&cfg, "[port]\nmtu = 1500\nmtu = 9000\n", NULL, 0),
		       "[port] mtu = 9000: set twice");
	assert_refused(load_text(&cfg, "[port]\nmtu = 1500\n[chan]\n[port]\nmtu = 1500\n", NULL, 0),
		       "[port] mtu = 1500: set twice");
}

static const struct gw_test_case cases[] = {
	{ "defaults", test_defaults },
	{ "shipped gridwire.ini is the defaults", test_shipped_default_file },
	{ "shipped demo files", test_shipped_demo_files },
	{ "file values", test_file_values },
	{ "overrides win", test_overrides_win },
	{ "derived defaults follow the final id", test_derived_defaults },
	{ "msg_max and mtu", test_msg_max_and_mtu },
	{ "bad values", test_bad_values },
	{ "error line format", test_error_line_format },
	{ "errors across keys", test_cross_key_errors },
	{ "members checked by the drivers' rule", test_member_check },
	{ "values too long", test_too_long },
	{ "unknown sections and keys", test_unknown_names },
	{ "malformed overrides", test_malformed_overrides },
	{ "file errors", test_file_errors },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("config", cases);
}
