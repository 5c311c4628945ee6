/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gateway's [auth] keys at run time: the store every lcore seals and
 * checks with (lib/auth), and who may change it. A new secret comes from
 * the telemetry thread (`gwctl key load FILE`) or from SIGHUP (the key
 * file read again, on the main lcore); the main lcore retires the secret
 * before it once its overlap is over, and rolls the frame keys after
 * [auth] roll_s or roll_gb. One lock keeps them from writing at once.
 * A key file that cannot be read leaves the keys as they were.
 */
#ifndef GW_KEYS_H
#define GW_KEYS_H

#include <pthread.h>
#include <stdbool.h>

#include "gw_auth.h"
#include "gw_config.h"

struct gw_keys {
	struct gw_auth_keys store;
	const struct gw_config *cfg;
	pthread_mutex_t lock;
	struct gw_auth_timer timer;
	bool reload; /* SIGHUP seen (atomic) */
	uint64_t loads, load_errors, rolls, retires;
};

/* With [auth] key_file: the first secret. 0, or a negative errno and a line. */
int gw_keys_init(struct gw_keys *k, const struct gw_config *cfg, uint16_t node,
		 uint32_t instance, uint64_t now, char *err, size_t errlen);
/* A new secret from path: 0 (also when it is the one in use), or a
 * negative errno and why (the keys unchanged). Any thread. */
int gw_keys_load(struct gw_keys *k, const char *path, uint64_t now, char *why, size_t len);
/* Main lcore, now and then: a SIGHUP's reload, retirement, rolls. bytes:
 * what the gateway has sent so far. */
void gw_keys_tick(struct gw_keys *k, uint64_t now, uint64_t bytes);

#endif
