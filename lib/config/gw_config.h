/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_config: the gateway's INI file (read with rte_cfgfile) to a checked
 * struct. Every key has a default that works on a small machine; a bad
 * value is refused with one line naming the key and what is allowed.
 *
 * Overrides given on the command line as "section.key=value" win over the
 * file. config/gridwire.ini documents every key.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_CONFIG_CLIENTS_MAX 4096 /* [chan] clients_max at most */

#include "gw_wire.h"

#define GW_CONFIG_MAX_MEMBERS 4
#define GW_CONFIG_MAX_PEERS 64
#define GW_PATH_MAX 108 /* sun_path */
#define GW_MEMBER_MAX 128 /* "kind:argument", a socket path at most */
#define GW_CONFIG_MAX_WORKERS 8
#define GW_CONFIG_MAX_RECEIVERS 8

enum gw_idle_strategy {
	GW_IDLE_SPIN = 0,    /* never sleep: lowest latency, owns a core */
	GW_IDLE_BACKOFF = 1, /* spin, then yield, then sleeps up to sleep_max_us */
};

enum gw_port_kind {
	GW_PORT_SINGLE = 0, /* one member, no bonding */
	GW_PORT_BOND = 1,   /* net_bonding over the members */
	GW_PORT_PARALLEL = 2, /* every frame on every member, the first copy kept */
};

#define GW_CONFIG_ALL_MEMBERS UINT32_MAX /* [fault] member = all */

struct gw_config {
	/* [eal] */
	char eal_args[512];
	/* [node] */
	uint16_t node_id;        /* 1..GW_MAX_NODES-1 */
	char node_name[GW_NAME_MAX];
	char socket_path[GW_PATH_MAX];
	unsigned socket_mode; /* file mode of the socket, default 0660 */
	int socket_gid;       /* group allowed besides root and our own user; -1: none */
	uint16_t peers[GW_CONFIG_MAX_PEERS]; /* allowed peer ids; none = any */
	unsigned npeers;
	/* [port] */
	enum gw_port_kind port_kind;
	/* Each "kind:argument" (drivers/ knows the kinds); a bare name is an
	 * af_packet member on that kernel interface. */
	char members[GW_CONFIG_MAX_MEMBERS][GW_MEMBER_MAX];
	unsigned nmembers;
	unsigned bond_mode;      /* 0, 2 or 4 (kind = bond only) */
	unsigned lacp_wait_ms;   /* bond_mode 4: 802.1AX Aggregate_Wait_Time */
	unsigned mtu;            /* IP MTU, 1500..9000 */
	uint32_t ip;             /* host order */
	uint16_t udp_port;
	unsigned mbufs;
	/* [proto] */
	unsigned window;         /* frames in flight per lane, power of two <= 256 */
	unsigned rto_min_us, rto_max_us;
	unsigned batch_max;      /* records per frame; 0 = as many as fit, 1 = batching off */
	unsigned hello_ms;
	unsigned peer_timeout_ms;
	/* [cc] */
	unsigned cc_control;     /* GW_CONFIG_CC_* */
	unsigned cc_target_us;   /* queueing delay aimed at, over the base round trip */
	/* [qos]: the IP DSCP of each class's frames (and their ACKs) */
	unsigned dscp_urgent, dscp_bulk;
	/* and the 802.1Q priority of urgent frames, or GW_CONFIG_PCP_OFF: untagged */
	unsigned pcp_urgent;
	/* [chan] */
	unsigned ring_count;     /* descriptors per direction, power of two */
	unsigned arena_kb;       /* arena per direction, power of two */
	unsigned msg_max;
	unsigned clients_max;    /* at most GW_CONFIG_CLIENTS_MAX */
	unsigned dest_block_ms;  /* a full destination ring rejects after this long */
	/* [topics]: a latest subscriber's messages unread in its channel
	 * before its store takes the rest, and the store's keys and KiB
	 * (per subscriber and receiver) */
	unsigned latest_unread, latest_keys, latest_kb;
	/* [idle] */
	enum gw_idle_strategy idle;
	unsigned spin_polls, yield_polls, sleep_max_us;
	/* [lcores] */
	unsigned workers;   /* worker lcores; 0 = the main lcore batches */
	unsigned receivers; /* receiver lcores; 0 = the main lcore receives */
	/* [fault]: injected on received frames, all off by default */
	unsigned fault_drop_ppm, fault_dup_ppm, fault_corrupt_ppm, fault_reorder_ppm;
	unsigned fault_delay_us, fault_seed;
	unsigned fault_member; /* the member whose frames get them, or GW_CONFIG_ALL_MEMBERS */
	/* [auth] */
	char auth_key_file[GW_PATH_MAX]; /* empty: frames are not authenticated */
	unsigned auth_mode;      /* GW_CONFIG_AUTH_*: tag frames, or encrypt them too */
	unsigned auth_aead;      /* GW_CONFIG_AEAD_* */
	unsigned auth_overlap_s; /* a replaced secret is still accepted this long */
	unsigned auth_roll_s;    /* new frame keys after this long... */
	unsigned auth_roll_gb;   /* ...or this many GiB sealed, whichever comes first */
};

/* [cc] control: off (the lane window alone), or delay-based (gw_cc.h). */
#define GW_CONFIG_CC_OFF 0
#define GW_CONFIG_CC_DELAY 1

/* [qos] pcp_urgent off: urgent frames go untagged, as every other. */
#define GW_CONFIG_PCP_OFF 8

/* [auth] mode and aead: the values of lib/auth's enums. */
#define GW_CONFIG_AUTH_AUTHENTICATE 1
#define GW_CONFIG_AUTH_ENCRYPT 2
#define GW_CONFIG_AEAD_AES_GCM 1
#define GW_CONFIG_AEAD_CHACHA 2

/* Bytes an authenticated frame carries after its payload (gw_auth.h). */
#define GW_CONFIG_AUTH_TRAILER 32

/* The built-in defaults (what an empty file gives). */
void gw_config_defaults(struct gw_config *cfg);

/*
 * Checks one [port] member once every key is known: 0, or a negative errno
 * and the reason in why. The config knows the list syntax only; the kinds
 * of member and their arguments belong to drivers/ (gw_port_check_member).
 */
typedef int (*gw_config_member_fn)(const char *member, const struct gw_config *cfg, char *why,
				   size_t whylen);

/*
 * Load path (NULL: defaults only), then apply overrides ("section.key=value").
 * Each member is checked with check_member (NULL: list syntax only).
 * On error returns a negative errno and writes one line to err: the key,
 * the bad value and what is allowed.
 */
int gw_config_load(struct gw_config *cfg, const char *path, char *const *overrides,
		   unsigned noverrides, gw_config_member_fn check_member, char *err,
		   size_t errlen);

/* Room for records in one frame with this MTU (less the auth trailer). */
unsigned gw_config_frame_payload(const struct gw_config *cfg);

/* Largest payload a record may carry with this MTU. */
unsigned gw_config_payload_max(const struct gw_config *cfg);

#endif
