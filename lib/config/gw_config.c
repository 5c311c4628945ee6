/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_config: defaults, then the INI file (rte_cfgfile), then the overrides,
 * then the values derived from the node id, then the checks that involve
 * more than one key. Every key is a row of gw_keys; a row names the field it
 * fills and how its text is parsed.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_cfgfile.h>
#include <rte_common.h>

#include "gw_chan.h"
#include "gw_config.h"

#define GW_NODE_ID_MAX (GW_MAX_NODES - 1)
#define GW_SOCKET_DIR "/run/gridwire/"
/* Default addresses: 198.18.0.<id>, the RFC 2544 benchmarking range. */
#define GW_IP_BASE ((198u << 24) | (18u << 16))
#define GW_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

/* Numbers and enums are stored by size; an enum must be as wide as a uint32_t. */
static_assert(sizeof(enum gw_port_kind) == sizeof(uint32_t), "enum width");
static_assert(sizeof(enum gw_idle_strategy) == sizeof(uint32_t), "enum width");

struct gw_load;
struct gw_key;

typedef int (*gw_parse_fn)(struct gw_load *ld, const struct gw_key *k, const char *val);

struct gw_choice {
	const char *name;
	uint32_t value;
};

struct gw_key {
	const char *section;
	const char *name;
	gw_parse_fn parse;
	size_t off, size;   /* the field of struct gw_config it fills */
	uint32_t min, max;  /* numbers: the range; text: the length */
	bool pow2;
	const struct gw_choice *choices; /* ends with a NULL name */
};

/* Row numbers, for the checks that name particular keys. */
enum {
	GW_K_EAL_ARGS,
	GW_K_ID, GW_K_NAME, GW_K_SOCKET, GW_K_SOCKET_MODE, GW_K_SOCKET_GROUP, GW_K_PEERS,
	GW_K_KIND, GW_K_MEMBERS, GW_K_BOND_MODE, GW_K_LACP_WAIT, GW_K_MTU, GW_K_IP, GW_K_UDP_PORT, GW_K_MBUFS,
	GW_K_WINDOW, GW_K_RTO_MIN, GW_K_RTO_MAX, GW_K_BATCH_MAX, GW_K_HELLO, GW_K_PEER_TIMEOUT,
	GW_K_CC_CONTROL, GW_K_CC_TARGET,
	GW_K_DSCP_URGENT, GW_K_DSCP_BULK, GW_K_PCP_URGENT,
	GW_K_RING, GW_K_ARENA_KB, GW_K_MSG_MAX, GW_K_CLIENTS_MAX, GW_K_DEST_BLOCK,
	GW_K_LATEST_UNREAD, GW_K_LATEST_KEYS, GW_K_LATEST_KB,
	GW_K_STRATEGY, GW_K_SPIN_POLLS, GW_K_YIELD_POLLS, GW_K_SLEEP_MAX,
	GW_K_WORKERS,
	GW_K_RECEIVERS,
	GW_K_DROP, GW_K_DUP, GW_K_CORRUPT, GW_K_REORDER, GW_K_DELAY, GW_K_SEED, GW_K_FAULT_MEMBER,
	GW_K_AUTH_KEY, GW_K_AUTH_MODE, GW_K_AUTH_AEAD, GW_K_AUTH_OVERLAP, GW_K_AUTH_ROLL_S,
	GW_K_AUTH_ROLL_GB,
	GW_NKEYS
};

/* One loader run. origin[] says who set each key last. */
struct gw_load {
	struct gw_config *cfg;
	const char *path;
	char *err;
	size_t errlen;
	const char *origin[GW_NKEYS]; /* NULL: default, gw_from_file, or the override */
	gw_config_member_fn check_member;
};

static const char gw_from_file[] = "file";

static const struct gw_choice gw_kinds[] = {
	{ "bond", GW_PORT_BOND },
	{ "single", GW_PORT_SINGLE },
	{ "parallel", GW_PORT_PARALLEL },
	{ NULL, 0 },
};

/* The net_bonding modes gridwire supports: round-robin, balance-xor, 802.3ad. */
static const struct gw_choice gw_bond_modes[] = {
	{ "0", 0 },
	{ "2", 2 },
	{ "4", 4 },
	{ NULL, 0 },
};

static const struct gw_choice gw_fault_members[] = {
	{ "all", GW_CONFIG_ALL_MEMBERS },
	{ "0", 0 },
	{ "1", 1 },
	{ "2", 2 },
	{ "3", 3 },
	{ NULL, 0 },
};
static_assert(GW_CONFIG_MAX_MEMBERS == 4, "a [fault] member choice per member");

/* The values of enum gw_auth_mode and gw_auth_aead (lib/auth). */
static const struct gw_choice gw_auth_modes[] = {
	{ "authenticate", GW_CONFIG_AUTH_AUTHENTICATE },
	{ "encrypt", GW_CONFIG_AUTH_ENCRYPT },
	{ NULL, 0 },
};

static const struct gw_choice gw_auth_aeads[] = {
	{ "aes-256-gcm", GW_CONFIG_AEAD_AES_GCM },
	{ "chacha20-poly1305", GW_CONFIG_AEAD_CHACHA },
	{ NULL, 0 },
};

static const struct gw_choice gw_cc_controls[] = {
	{ "off", GW_CONFIG_CC_OFF },
	{ "delay", GW_CONFIG_CC_DELAY },
	{ NULL, 0 },
};

static const struct gw_choice gw_pcps[] = {
	{ "off", GW_CONFIG_PCP_OFF },
	{ "0", 0 }, { "1", 1 }, { "2", 2 }, { "3", 3 },
	{ "4", 4 }, { "5", 5 }, { "6", 6 }, { "7", 7 },
	{ NULL, 0 },
};

static const struct gw_choice gw_strategies[] = {
	{ "spin", GW_IDLE_SPIN },
	{ "backoff", GW_IDLE_BACKOFF },
	{ NULL, 0 },
};

static int gw_parse_num(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_choice(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_text(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_name(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_peers(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_members(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_ip(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_mode(struct gw_load *ld, const struct gw_key *k, const char *val);
static int gw_parse_group(struct gw_load *ld, const struct gw_key *k, const char *val);

#define GW_FIELD(f) .off = offsetof(struct gw_config, f), .size = sizeof(((struct gw_config *)0)->f)
#define GW_NUM(s, n, f, lo, hi) \
	{ .section = s, .name = n, .parse = gw_parse_num, GW_FIELD(f), .min = lo, .max = hi }
#define GW_POW2(s, n, f, lo, hi) \
	{ .section = s, .name = n, .parse = gw_parse_num, GW_FIELD(f), .min = lo, .max = hi, \
	  .pow2 = true }
#define GW_CHOICE(s, n, f, c) \
	{ .section = s, .name = n, .parse = gw_parse_choice, GW_FIELD(f), .choices = c }
#define GW_TEXT(s, n, f) \
	{ .section = s, .name = n, .parse = gw_parse_text, GW_FIELD(f), .min = 1, \
	  .max = sizeof(((struct gw_config *)0)->f) - 1 }
#define GW_OWN(s, n, fn) { .section = s, .name = n, .parse = fn }

/* Sections appear in this order in messages and in config/gridwire.ini. */
static const struct gw_key gw_keys[GW_NKEYS] = {
	[GW_K_EAL_ARGS] = GW_TEXT("eal", "args", eal_args),
	[GW_K_ID] = GW_NUM("node", "id", node_id, 1, GW_NODE_ID_MAX),
	[GW_K_NAME] = GW_OWN("node", "name", gw_parse_name),
	[GW_K_SOCKET] = GW_TEXT("node", "socket", socket_path),
	[GW_K_SOCKET_MODE] = GW_OWN("node", "socket_mode", gw_parse_mode),
	[GW_K_SOCKET_GROUP] = GW_OWN("node", "socket_group", gw_parse_group),
	[GW_K_PEERS] = GW_OWN("node", "peers", gw_parse_peers),
	[GW_K_KIND] = GW_CHOICE("port", "kind", port_kind, gw_kinds),
	[GW_K_MEMBERS] = GW_OWN("port", "members", gw_parse_members),
	[GW_K_BOND_MODE] = GW_CHOICE("port", "bond_mode", bond_mode, gw_bond_modes),
	[GW_K_LACP_WAIT] = GW_NUM("port", "lacp_wait_ms", lacp_wait_ms, 10, 10000),
	[GW_K_MTU] = GW_NUM("port", "mtu", mtu, 1500, 9000),
	[GW_K_IP] = GW_OWN("port", "ip", gw_parse_ip),
	[GW_K_UDP_PORT] = GW_NUM("port", "udp_port", udp_port, 1024, 65535),
	[GW_K_MBUFS] = GW_NUM("port", "mbufs", mbufs, 1024, 1048576),
	/* The SACK bitmap covers 256 frames, so the window can be no larger. */
	[GW_K_WINDOW] = GW_POW2("proto", "window", window, 1, GW_SACK_BITS),
	[GW_K_RTO_MIN] = GW_NUM("proto", "rto_min_us", rto_min_us, 100, 1000000),
	[GW_K_RTO_MAX] = GW_NUM("proto", "rto_max_us", rto_max_us, 100, 10000000),
	[GW_K_BATCH_MAX] = GW_NUM("proto", "batch_max", batch_max, 0, 4096),
	[GW_K_HELLO] = GW_NUM("proto", "hello_ms", hello_ms, 10, 10000),
	[GW_K_PEER_TIMEOUT] = GW_NUM("proto", "peer_timeout_ms", peer_timeout_ms, 30, 3600000),
	[GW_K_CC_CONTROL] = GW_CHOICE("cc", "control", cc_control, gw_cc_controls),
	[GW_K_CC_TARGET] = GW_NUM("cc", "target_us", cc_target_us, 10, 100000),
	[GW_K_DSCP_URGENT] = GW_NUM("qos", "dscp_urgent", dscp_urgent, 0, 63),
	[GW_K_DSCP_BULK] = GW_NUM("qos", "dscp_bulk", dscp_bulk, 0, 63),
	[GW_K_PCP_URGENT] = GW_CHOICE("qos", "pcp_urgent", pcp_urgent, gw_pcps),
	[GW_K_RING] = GW_POW2("chan", "ring", ring_count, 64, 1048576),
	[GW_K_ARENA_KB] = GW_POW2("chan", "arena_kb", arena_kb, 64, 262144),
	/* Descriptors carry a 16-bit length. */
	[GW_K_MSG_MAX] = GW_NUM("chan", "msg_max", msg_max, 1, UINT16_MAX),
	[GW_K_CLIENTS_MAX] = GW_NUM("chan", "clients_max", clients_max, 1, GW_CONFIG_CLIENTS_MAX),
	[GW_K_DEST_BLOCK] = GW_NUM("chan", "dest_block_ms", dest_block_ms, 0, 60000),
	[GW_K_LATEST_UNREAD] = GW_NUM("topics", "latest_unread", latest_unread, 1, 1048576),
	/* gw_conflate's bound on keys */
	[GW_K_LATEST_KEYS] = GW_NUM("topics", "latest_keys", latest_keys, 1, 1u << 24),
	[GW_K_LATEST_KB] = GW_NUM("topics", "latest_kb", latest_kb, 64, 1048576),
	[GW_K_STRATEGY] = GW_CHOICE("idle", "strategy", idle, gw_strategies),
	[GW_K_SPIN_POLLS] = GW_NUM("idle", "spin_polls", spin_polls, 0, 1000000),
	[GW_K_YIELD_POLLS] = GW_NUM("idle", "yield_polls", yield_polls, 0, 1000000),
	/* Bond mode 4 must be polled at least every 100 ms (LACP); stay well below. */
	[GW_K_SLEEP_MAX] = GW_NUM("idle", "sleep_max_us", sleep_max_us, 1, 50000),
	[GW_K_WORKERS] = GW_NUM("lcores", "workers", workers, 0, GW_CONFIG_MAX_WORKERS),
	[GW_K_RECEIVERS] = GW_NUM("lcores", "receivers", receivers, 0, GW_CONFIG_MAX_RECEIVERS),
	[GW_K_DROP] = GW_NUM("fault", "drop_ppm", fault_drop_ppm, 0, 1000000),
	[GW_K_DUP] = GW_NUM("fault", "dup_ppm", fault_dup_ppm, 0, 1000000),
	[GW_K_CORRUPT] = GW_NUM("fault", "corrupt_ppm", fault_corrupt_ppm, 0, 1000000),
	[GW_K_REORDER] = GW_NUM("fault", "reorder_ppm", fault_reorder_ppm, 0, 1000000),
	[GW_K_DELAY] = GW_NUM("fault", "delay_us", fault_delay_us, 1, 1000000),
	[GW_K_SEED] = GW_NUM("fault", "seed", fault_seed, 0, UINT32_MAX),
	[GW_K_FAULT_MEMBER] = GW_CHOICE("fault", "member", fault_member, gw_fault_members),
	[GW_K_AUTH_KEY] = GW_TEXT("auth", "key_file", auth_key_file),
	[GW_K_AUTH_MODE] = GW_CHOICE("auth", "mode", auth_mode, gw_auth_modes),
	[GW_K_AUTH_AEAD] = GW_CHOICE("auth", "aead", auth_aead, gw_auth_aeads),
	[GW_K_AUTH_OVERLAP] = GW_NUM("auth", "overlap_s", auth_overlap_s, 0, 86400),
	[GW_K_AUTH_ROLL_S] = GW_NUM("auth", "roll_s", auth_roll_s, 1, 86400),
	[GW_K_AUTH_ROLL_GB] = GW_NUM("auth", "roll_gb", auth_roll_gb, 1, 1024),
};

/* Write the whole error line. Returns rc. */
static int __rte_format_printf(3, 4) gw_err(struct gw_load *ld, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ld->err, ld->errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * An error about one key: the line starts with where its value came from
 * (the override as typed, or the file and the key), then the value if
 * given, then the complaint. Returns rc.
 */
static int __rte_format_printf(5, 6) gw_key_err(struct gw_load *ld, const struct gw_key *k,
						 const char *val, int rc, const char *fmt, ...)
{
	const char *o = ld->origin[k - gw_keys];
	const char *path = ld->path ? ld->path : "(defaults)";
	va_list ap;
	int n;

	if (o && o != gw_from_file)
		n = snprintf(ld->err, ld->errlen, "--set %s: ", o);
	else if (val)
		n = snprintf(ld->err, ld->errlen, "config %s: [%s] %s = %s: ", path, k->section,
			     k->name, val);
	else
		n = snprintf(ld->err, ld->errlen, "config %s: [%s] %s: ", path, k->section, k->name);
	if (n < 0 || (size_t)n >= ld->errlen)
		return rc;
	va_start(ap, fmt);
	vsnprintf(ld->err + n, ld->errlen - n, fmt, ap);
	va_end(ap);
	return rc;
}

/* Of two keys that disagree, the one set last is the one to blame. */
static const struct gw_key *gw_blame(const struct gw_load *ld, unsigned a, unsigned b)
{
	const char *oa = ld->origin[a], *ob = ld->origin[b];
	int ra = !oa ? 0 : oa == gw_from_file ? 1 : 2;
	int rb = !ob ? 0 : ob == gw_from_file ? 1 : 2;

	return &gw_keys[ra > rb ? a : b];
}

static bool gw_section_known(const char *sec, size_t slen)
{
	for (unsigned i = 0; i < GW_NKEYS; i++)
		if (strlen(gw_keys[i].section) == slen && !memcmp(gw_keys[i].section, sec, slen))
			return true;
	return false;
}

static const struct gw_key *gw_key_find(const char *sec, size_t slen, const char *key, size_t klen)
{
	for (unsigned i = 0; i < GW_NKEYS; i++) {
		const struct gw_key *k = &gw_keys[i];

		if (strlen(k->section) == slen && !memcmp(k->section, sec, slen) &&
		    strlen(k->name) == klen && !memcmp(k->name, key, klen))
			return k;
	}
	return NULL;
}

/* "unknown key [s] k; known keys: ..." (or section) into buf, for any error prefix. */
static void gw_unknown(char *buf, size_t len, const char *sec, size_t slen, const char *key,
		       size_t klen)
{
	bool known = gw_section_known(sec, slen);
	const char *sep = " ";
	size_t n;

	if (known)
		n = snprintf(buf, len, "unknown key [%.*s] %.*s; known keys:", (int)slen, sec,
			     (int)klen, key);
	else
		n = snprintf(buf, len, "unknown section [%.*s]; known sections:", (int)slen, sec);
	for (unsigned i = 0; i < GW_NKEYS && n < len; i++) {
		const struct gw_key *k = &gw_keys[i];

		if (known && strlen(k->section) == slen && !memcmp(k->section, sec, slen))
			n += snprintf(buf + n, len - n, "%s%s", sep, k->name);
		else if (!known && (i == 0 || strcmp(k->section, gw_keys[i - 1].section)))
			n += snprintf(buf + n, len - n, "%s%s", sep, k->section);
		else
			continue;
		sep = ", ";
	}
}

/* Decimal digits only: no sign, no base prefix, no trailing text. */
static bool gw_num(const char *s, size_t len, uint64_t *v)
{
	if (len == 0)
		return false;
	*v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		/* Saturate: anything past UINT32_MAX is out of every range. */
		if (*v <= UINT32_MAX)
			*v = *v * 10 + (unsigned)(s[i] - '0');
	}
	return true;
}

/* Next item of a comma list, blanks around it trimmed; false after the last. */
static bool gw_list_next(const char **s, const char **item, size_t *len)
{
	const char *p = *s, *end;

	if (!p)
		return false;
	end = strchr(p, ',');
	*s = end ? end + 1 : NULL;
	if (!end)
		end = p + strlen(p);
	while (p < end && isblank((unsigned char)*p))
		p++;
	while (end > p && isblank((unsigned char)end[-1]))
		end--;
	*item = p;
	*len = end - p;
	return true;
}

static void gw_store(struct gw_config *cfg, const struct gw_key *k, uint32_t v)
{
	void *p = (char *)cfg + k->off;

	if (k->size == sizeof(uint16_t)) {
		uint16_t v16 = v;

		memcpy(p, &v16, sizeof(v16));
	} else {
		memcpy(p, &v, sizeof(v));
	}
}

/* Strings are zero-padded so that stale bytes of an older value never linger. */
static void gw_store_text(char *dst, size_t size, const char *src, size_t len)
{
	memset(dst, 0, size);
	memcpy(dst, src, len);
}

static int gw_parse_num(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	uint64_t v;

	if (!gw_num(val, strlen(val), &v))
		return gw_key_err(ld, k, val, -EINVAL, "not a number");
	if (v < k->min || v > k->max || (k->pow2 && !rte_is_power_of_2(v)))
		return gw_key_err(ld, k, val, -EINVAL, "must be %sbetween %u and %u",
				  k->pow2 ? "a power of two " : "", k->min, k->max);
	gw_store(ld->cfg, k, v);
	return 0;
}

static int gw_parse_choice(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	const struct gw_choice *c;
	char list[64];
	size_t n = 0;

	for (c = k->choices; c->name; c++) {
		if (!strcmp(c->name, val)) {
			gw_store(ld->cfg, k, c->value);
			return 0;
		}
	}
	for (c = k->choices; c->name && n < sizeof(list); c++)
		n += snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "", c->name);
	return gw_key_err(ld, k, val, -EINVAL, "must be one of %s", list);
}

static int gw_parse_text(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	size_t len = strlen(val);

	if (len < k->min || len > k->max)
		return gw_key_err(ld, k, val, -EINVAL, "must be %u to %u characters", k->min, k->max);
	gw_store_text((char *)ld->cfg + k->off, k->size, val, len);
	return 0;
}

/* The name goes into HELLO frames and the socket path: keep it plain. */
static int gw_parse_name(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	size_t len = strlen(val);

	if (len < 1 || len >= GW_NAME_MAX || strspn(val, GW_NAME_CHARS) != len)
		return gw_key_err(ld, k, val, -EINVAL, "must be 1 to %u characters of A-Z a-z 0-9 _ -",
				  GW_NAME_MAX - 1);
	gw_store_text(ld->cfg->node_name, sizeof(ld->cfg->node_name), val, len);
	return 0;
}

static int gw_parse_peers(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	struct gw_config *cfg = ld->cfg;
	const char *s = val, *item;
	size_t len;
	uint64_t id;

	cfg->npeers = 0;
	if (!*val)
		return 0; /* only an override can be empty: back to "any peer" */
	while (gw_list_next(&s, &item, &len)) {
		if (!gw_num(item, len, &id) || id < 1 || id > GW_NODE_ID_MAX)
			return gw_key_err(ld, k, val, -EINVAL, "'%.*s' is not a node id between 1 and %u",
					  (int)len, item, GW_NODE_ID_MAX);
		for (unsigned i = 0; i < cfg->npeers; i++)
			if (cfg->peers[i] == id)
				return gw_key_err(ld, k, val, -EINVAL, "node %u is listed twice",
						  (unsigned)id);
		if (cfg->npeers == GW_CONFIG_MAX_PEERS)
			return gw_key_err(ld, k, val, -EINVAL, "more than %u peers",
					  GW_CONFIG_MAX_PEERS);
		cfg->peers[cfg->npeers++] = id;
	}
	return 0;
}

/* The list's syntax only: what each member may be is the drivers' business. */
static int gw_parse_members(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	struct gw_config *cfg = ld->cfg;
	const char *s = val, *item;
	size_t len;

	memset(cfg->members, 0, sizeof(cfg->members));
	cfg->nmembers = 0;
	while (gw_list_next(&s, &item, &len)) {
		if (len < 1 || len >= GW_MEMBER_MAX)
			return gw_key_err(ld, k, val, -EINVAL,
					  "each member takes 1 to %u characters, kind:argument or an interface name",
					  GW_MEMBER_MAX - 1);
		for (size_t i = 0; i < len; i++)
			if (isspace((unsigned char)item[i]))
				return gw_key_err(ld, k, val, -EINVAL, "'%.*s' has a blank in it",
						  (int)len, item);
		for (unsigned i = 0; i < cfg->nmembers; i++)
			if (strlen(cfg->members[i]) == len && !memcmp(cfg->members[i], item, len))
				return gw_key_err(ld, k, val, -EINVAL, "'%.*s' is listed twice",
						  (int)len, item);
		if (cfg->nmembers == GW_CONFIG_MAX_MEMBERS)
			return gw_key_err(ld, k, val, -EINVAL, "more than %u members",
					  GW_CONFIG_MAX_MEMBERS);
		memcpy(cfg->members[cfg->nmembers++], item, len);
	}
	return 0;
}

static int gw_parse_ip(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	struct in_addr a;

	if (inet_pton(AF_INET, val, &a) != 1)
		return gw_key_err(ld, k, val, -EINVAL, "not a dotted quad such as 198.18.0.1");
	ld->cfg->ip = ntohl(a.s_addr);
	return 0;
}

/* File mode of the control socket, in octal as chmod takes it. */
static int gw_parse_mode(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	char *end;
	errno = 0;
	unsigned long m = strtoul(val, &end, 8);
	if (errno || *end || end == val || m > 0777 || val[0] == '-')
		return gw_key_err(ld, k, val, -EINVAL, "not an octal file mode such as 0660");
	ld->cfg->socket_mode = (unsigned)m;
	return 0;
}

/* A group that exists here: its members may use the gateway. */
static int gw_parse_group(struct gw_load *ld, const struct gw_key *k, const char *val)
{
	const struct group *gr = getgrnam(val);
	if (!gr)
		return gw_key_err(ld, k, val, -EINVAL, "no such group on this host");
	ld->cfg->socket_gid = (int)gr->gr_gid;
	return 0;
}

static int gw_set(struct gw_load *ld, const struct gw_key *k, const char *val, const char *origin)
{
	ld->origin[k - gw_keys] = origin;
	return k->parse(ld, k, val);
}

/*
 * rte_cfgfile cannot tell a missing file from a broken one, and it silently
 * skips lines that are neither "[section]" nor "key = value" (a typo such as
 * "mtu 1500" would be lost), and refuses a key before any section without
 * saying so. Look for those here so that the error line says what is wrong.
 */
static int gw_file_scan(struct gw_load *ld)
{
	bool in_section = false;
	unsigned lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	struct stat st;
	ssize_t len;
	int rc = 0;
	FILE *f;

	f = fopen(ld->path, "r");
	if (!f) {
		int e = errno;

		return gw_err(ld, -e, "config %s: %s", ld->path, strerror(e));
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode))
		rc = gw_err(ld, -EINVAL, "config %s: not a regular file", ld->path);
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		/* Comments as rte_cfgfile sees them: from the first ';' unless escaped. */
		char *c = memchr(line, ';', len), *p = line, *end;

		lineno++;
		/* What rte_cfgfile refuses with a log line of its own: said
		 * here, in one line with the fix, before it reads the file. */
		size_t chars = len - (len > 0 && line[len - 1] == '\n');
		if (chars > CFG_NAME_LEN + CFG_VALUE_LEN + 2) {
			rc = gw_err(ld, -EINVAL, "config %s: line %u: longer than %d characters",
				    ld->path, lineno, CFG_NAME_LEN + CFG_VALUE_LEN + 2);
			break;
		}
		if (memchr(line, '\0', len)) {
			rc = gw_err(ld, -EINVAL, "config %s: line %u: a NUL byte (a text file is wanted)",
				    ld->path, lineno);
			break;
		}
		end = c && (c == line || c[-1] != '\\') ? c : line + len;
		while (p < end && isspace((unsigned char)*p))
			p++;
		while (end > p && isspace((unsigned char)end[-1]))
			end--;
		if (p == end)
			continue;
		const char *eq = memchr(p, '=', end - p);
		const char *v = eq ? eq + 1 : end;
		while (v < end && isspace((unsigned char)*v))
			v++;
		if (*p == '[' && !memchr(p, ']', end - p))
			rc = gw_err(ld, -EINVAL, "config %s: line %u: '%.*s' has no closing ']'",
				    ld->path, lineno, (int)(end - p), p);
		else if (*p == '[')
			in_section = true;
		else if (!eq)
			rc = gw_err(ld, -EINVAL, "config %s: line %u: '%.*s' is neither [section] nor key = value",
				    ld->path, lineno, (int)(end - p), p);
		else if (!in_section)
			rc = gw_err(ld, -EINVAL, "config %s: line %u: '%.*s' comes before any [section]",
				    ld->path, lineno, (int)(end - p), p);
		else if (v == end)
			rc = gw_err(ld, -EINVAL,
				    "config %s: line %u: '%.*s' has no value (leave the key out for its default)",
				    ld->path, lineno, (int)(end - p), p);
	}
	free(line);
	fclose(f);
	return rc;
}

/* Sections are read by index so that a repeated [section] is read too. */
static int gw_file_section(struct gw_load *ld, struct rte_cfgfile *file, int idx)
{
	struct rte_cfgfile_entry *e;
	char sec[CFG_NAME_LEN], what[256];
	int n, rc = 0;

	n = rte_cfgfile_section_num_entries_by_index(file, sec, idx);
	if (!gw_section_known(sec, strlen(sec))) {
		gw_unknown(what, sizeof(what), sec, strlen(sec), NULL, 0);
		return gw_err(ld, -EINVAL, "config %s: %s", ld->path, what);
	}
	if (n <= 0)
		return 0;
	e = calloc(n, sizeof(*e));
	if (!e)
		return gw_err(ld, -ENOMEM, "config %s: out of memory", ld->path);
	n = rte_cfgfile_section_entries_by_index(file, idx, sec, e, n);
	for (int i = 0; i < n && !rc; i++) {
		const struct gw_key *k = gw_key_find(sec, strlen(sec), e[i].name, strlen(e[i].name));

		if (!k) {
			gw_unknown(what, sizeof(what), sec, strlen(sec), e[i].name, strlen(e[i].name));
			rc = gw_err(ld, -EINVAL, "config %s: %s", ld->path, what);
		} else if (ld->origin[k - gw_keys]) {
			rc = gw_key_err(ld, k, e[i].value, -EINVAL, "set twice");
		} else if (strlen(e[i].value) >= CFG_VALUE_LEN - 1) {
			/* rte_cfgfile cuts longer values: refuse rather than use half. */
			rc = gw_key_err(ld, k, NULL, -EINVAL, "value longer than %d characters",
					CFG_VALUE_LEN - 2);
		} else {
			rc = gw_set(ld, k, e[i].value, gw_from_file);
		}
	}
	free(e);
	return rc;
}

static int gw_load_file(struct gw_load *ld)
{
	struct rte_cfgfile *file;
	int rc, nsec;

	rc = gw_file_scan(ld);
	if (rc)
		return rc;
	file = rte_cfgfile_load(ld->path, 0);
	if (!file)
		return gw_err(ld, -EINVAL,
			      "config %s: rte_cfgfile cannot parse it (unclosed '[', empty value or "
			      "line over %d characters; its log names the line)",
			      ld->path, CFG_NAME_LEN + CFG_VALUE_LEN + 2);
	nsec = rte_cfgfile_num_sections(file, "", 0);
	for (int i = 0; i < nsec && !rc; i++)
		rc = gw_file_section(ld, file, i);
	rte_cfgfile_close(file);
	return rc;
}

static int gw_apply_override(struct gw_load *ld, const char *ovr)
{
	const char *eq = strchr(ovr, '=');
	const char *dot = eq ? memchr(ovr, '.', eq - ovr) : NULL;
	const struct gw_key *k;
	char what[256];

	if (!dot || dot == ovr || dot + 1 == eq)
		return gw_err(ld, -EINVAL, "--set %s: expected section.key=value", ovr);
	k = gw_key_find(ovr, dot - ovr, dot + 1, eq - dot - 1);
	if (!k) {
		gw_unknown(what, sizeof(what), ovr, dot - ovr, dot + 1, eq - dot - 1);
		return gw_err(ld, -EINVAL, "--set %s: %s", ovr, what);
	}
	return gw_set(ld, k, eq + 1, ovr);
}

/* The values that follow from the final node id (and name) unless set. */
static void gw_derive(struct gw_config *cfg, const char *const origin[GW_NKEYS])
{
	if (!origin[GW_K_NAME]) {
		memset(cfg->node_name, 0, sizeof(cfg->node_name));
		snprintf(cfg->node_name, sizeof(cfg->node_name), "gw%u", (unsigned)cfg->node_id);
	}
	if (!origin[GW_K_SOCKET]) {
		memset(cfg->socket_path, 0, sizeof(cfg->socket_path));
		snprintf(cfg->socket_path, sizeof(cfg->socket_path), GW_SOCKET_DIR "%s.sock",
			 cfg->node_name);
	}
	if (!origin[GW_K_IP])
		cfg->ip = GW_IP_BASE | cfg->node_id;
}

/* Rules that involve more than one key, once every source has been applied. */
static int gw_check(struct gw_load *ld)
{
	struct gw_config *cfg = ld->cfg;
	unsigned pmax = gw_config_payload_max(cfg);

	if (cfg->port_kind == GW_PORT_SINGLE && cfg->nmembers != 1)
		return gw_key_err(ld, gw_blame(ld, GW_K_KIND, GW_K_MEMBERS), NULL, -EINVAL,
				  "kind single takes exactly one member (members has %u)", cfg->nmembers);
	/* Parallel sends every frame on every member: with one there is no
	 * second copy, and LACP has nothing to agree on. */
	if (cfg->port_kind == GW_PORT_PARALLEL && cfg->nmembers < 2)
		return gw_key_err(ld, gw_blame(ld, GW_K_KIND, GW_K_MEMBERS), NULL, -EINVAL,
				  "kind parallel needs two members or more, on independent networks (members has %u; with one, use kind single)",
				  cfg->nmembers);
	if (cfg->port_kind == GW_PORT_PARALLEL && ld->origin[GW_K_BOND_MODE])
		return gw_key_err(ld, gw_blame(ld, GW_K_KIND, GW_K_BOND_MODE), NULL, -EINVAL,
				  "bond_mode is for kind bond: kind parallel has no bond and no LACP, remove bond_mode");
	/* Only LACP waits; a file that names another mode and the wait is
	 * confused. (A kind other than bond may keep it: a demo file turns
	 * parallel by --set port.kind alone.) */
	if (ld->origin[GW_K_BOND_MODE] && cfg->bond_mode != 4 && ld->origin[GW_K_LACP_WAIT])
		return gw_key_err(ld, gw_blame(ld, GW_K_BOND_MODE, GW_K_LACP_WAIT), NULL, -EINVAL,
				  "lacp_wait_ms is for bond_mode 4 (LACP): bond_mode %u has nothing to wait for, remove lacp_wait_ms",
				  cfg->bond_mode);
	if (cfg->fault_member != GW_CONFIG_ALL_MEMBERS && cfg->fault_member >= cfg->nmembers)
		return gw_key_err(ld, gw_blame(ld, GW_K_FAULT_MEMBER, GW_K_MEMBERS), NULL, -EINVAL,
				  "fault member %u: the port has members 0..%u", cfg->fault_member,
				  cfg->nmembers - 1);
	for (unsigned i = 0; i < cfg->npeers; i++)
		if (cfg->peers[i] == cfg->node_id)
			return gw_key_err(ld, gw_blame(ld, GW_K_ID, GW_K_PEERS), NULL, -EINVAL,
					  "peers must not list the node's own id %u", cfg->node_id);
	if (cfg->rto_max_us < cfg->rto_min_us)
		return gw_key_err(ld, gw_blame(ld, GW_K_RTO_MIN, GW_K_RTO_MAX), NULL, -EINVAL,
				  "needs rto_min_us <= rto_max_us (%u > %u)", cfg->rto_min_us,
				  cfg->rto_max_us);
	/* A peer is declared down only after three HELLOs in a row are lost. */
	if (cfg->peer_timeout_ms < 3 * cfg->hello_ms)
		return gw_key_err(ld, gw_blame(ld, GW_K_HELLO, GW_K_PEER_TIMEOUT), NULL, -EINVAL,
				  "needs peer_timeout_ms >= 3 * hello_ms (%u < 3 * %u)",
				  cfg->peer_timeout_ms, cfg->hello_ms);
	if ((uint64_t)cfg->fault_drop_ppm + cfg->fault_dup_ppm + cfg->fault_corrupt_ppm +
	    cfg->fault_reorder_ppm > 1000000)
		return gw_key_err(ld, gw_blame(ld, gw_blame(ld, GW_K_DROP, GW_K_DUP) - gw_keys,
					       gw_blame(ld, GW_K_CORRUPT, GW_K_REORDER) - gw_keys),
				  NULL, -EINVAL,
				  "drop_ppm + dup_ppm + corrupt_ppm + reorder_ppm must be at most 1000000");
	for (unsigned i = 0; ld->check_member && i < cfg->nmembers; i++) {
		char why[192];
		int rc = ld->check_member(cfg->members[i], cfg, why, sizeof(why));
		if (rc < 0)
			return gw_key_err(ld, &gw_keys[GW_K_MEMBERS], NULL, rc, "'%s': %s",
					  cfg->members[i], why);
	}
	if (cfg->msg_max > pmax) {
		/* The default suits jumbo frames; a smaller mtu just lowers it. */
		if (!ld->origin[GW_K_MSG_MAX])
			cfg->msg_max = pmax;
		else
			return gw_key_err(ld, gw_blame(ld, GW_K_MTU, GW_K_MSG_MAX), NULL, -EINVAL,
					  "needs msg_max <= %u, the largest record at mtu %u (msg_max is %u)",
					  pmax, cfg->mtu, cfg->msg_max);
	}
	return 0;
}

void gw_config_defaults(struct gw_config *cfg)
{
	static const char *const none[GW_NKEYS];

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->eal_args, sizeof(cfg->eal_args), "--no-pci --no-huge -m 512 --no-shconf -l 0");
	cfg->node_id = 1;
	gw_derive(cfg, none);
	cfg->port_kind = GW_PORT_BOND;
	snprintf(cfg->members[0], sizeof(cfg->members[0]), "veth0");
	cfg->nmembers = 1;
	cfg->bond_mode = 4;
	cfg->lacp_wait_ms = 2000;
	cfg->mtu = 9000;
	cfg->udp_port = 47000;
	cfg->mbufs = 8192;
	cfg->window = 256;
	cfg->rto_min_us = 20000;
	cfg->rto_max_us = 200000;
	cfg->batch_max = 0;
	cfg->hello_ms = 100;
	cfg->peer_timeout_ms = 1000;
	cfg->cc_control = GW_CONFIG_CC_DELAY;
	cfg->cc_target_us = 500;
	cfg->dscp_urgent = 46; /* EF */
	cfg->dscp_bulk = 0;
	cfg->pcp_urgent = GW_CONFIG_PCP_OFF;
	cfg->ring_count = 4096;
	cfg->arena_kb = 1024;
	cfg->msg_max = 8192;
	cfg->clients_max = 64;
	cfg->dest_block_ms = 100;
	cfg->latest_unread = 64;
	cfg->latest_keys = 4096;
	cfg->latest_kb = 1024;
	cfg->idle = GW_IDLE_BACKOFF;
	cfg->spin_polls = 200;
	cfg->yield_polls = 20;
	cfg->sleep_max_us = 200;
	cfg->fault_delay_us = 500;
	cfg->socket_mode = 0660;
	cfg->socket_gid = -1;
	cfg->fault_seed = 1;
	cfg->fault_member = GW_CONFIG_ALL_MEMBERS;
	cfg->auth_mode = GW_CONFIG_AUTH_AUTHENTICATE;
	cfg->auth_aead = GW_CONFIG_AEAD_AES_GCM;
	cfg->auth_overlap_s = 60;
	cfg->auth_roll_s = 3600;
	cfg->auth_roll_gb = 64;
}

/* The error is one line whatever the operator typed: a value or a path
 * echoed in it may hold control characters (a newline in a --set). */
static int gw_one_line(const struct gw_load *ld, int rc)
{
	for (size_t i = 0; rc && i < ld->errlen && ld->err[i]; i++)
		if ((unsigned char)ld->err[i] < 0x20 || ld->err[i] == 0x7f)
			ld->err[i] = '?';
	return rc;
}

int gw_config_load(struct gw_config *cfg, const char *path, char *const *overrides,
		   unsigned noverrides, gw_config_member_fn check_member, char *err,
		   size_t errlen)
{
	struct gw_load ld = { .cfg = cfg, .path = path, .err = err, .errlen = err ? errlen : 0,
			      .check_member = check_member };
	int rc = 0;

	if (ld.errlen)
		err[0] = '\0';
	gw_config_defaults(cfg);
	if (path)
		rc = gw_load_file(&ld);
	for (unsigned i = 0; i < noverrides && !rc; i++)
		rc = gw_apply_override(&ld, overrides[i]);
	if (rc)
		return gw_one_line(&ld, rc);
	gw_derive(cfg, ld.origin);
	return gw_one_line(&ld, gw_check(&ld));
}

unsigned gw_config_frame_payload(const struct gw_config *cfg)
{
	return cfg->mtu - GW_IP_HLEN - GW_UDP_HLEN - GW_HDR_LEN -
	       (cfg->auth_key_file[0] ? GW_CONFIG_AUTH_TRAILER : 0);
}

unsigned gw_config_payload_max(const struct gw_config *cfg)
{
	return gw_config_frame_payload(cfg) - GW_REC_HLEN;
}
