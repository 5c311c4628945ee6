/* SPDX-License-Identifier: BSD-3-Clause */
/* The gateway's [auth] keys at run time: see gw_keys.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "gw_keys.h"
#include "gw_node.h"

int gw_keys_init(struct gw_keys *k, const struct gw_config *cfg, uint16_t node,
		 uint32_t instance, uint64_t now, char *err, size_t errlen)
{
	_Static_assert(GW_CONFIG_AUTH_ENCRYPT == GW_AUTH_ENCRYPT &&
			      GW_CONFIG_AUTH_AUTHENTICATE == GW_AUTH_AUTHENTICATE &&
			      GW_CONFIG_AEAD_AES_GCM == GW_AUTH_AES_GCM &&
			      GW_CONFIG_AEAD_CHACHA == GW_AUTH_CHACHA,
		      "[auth] choices are lib/auth's values");
	memset(k, 0, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	k->cfg = cfg;
	struct gw_auth_key key;
	char why[256];
	int rc = gw_auth_key_load(&key, cfg->auth_key_file, why, sizeof(why));
	if (rc == 0)
		rc = gw_auth_keys_init(&k->store, (enum gw_auth_mode)cfg->auth_mode,
				       (enum gw_auth_aead)cfg->auth_aead, node, instance, &key, why,
				       sizeof(why));
	sodium_memzero(&key, sizeof(key));
	if (rc < 0) {
		snprintf(err, errlen, "[auth] key_file: %s", why);
		return rc;
	}
	k->timer.loaded_ns = k->timer.rolled_ns = now;
	k->loads = 1;
	return 0;
}

int gw_keys_load(struct gw_keys *k, const char *path, uint64_t now, char *why, size_t len)
{
	struct gw_auth_key key;
	int rc = gw_auth_key_load(&key, path, why, len);
	pthread_mutex_lock(&k->lock);
	if (rc < 0) {
		k->load_errors++;
		GW_LOG(WARNING, "[auth] key not loaded, the keys in use stay: %s", why);
	} else {
		uint32_t gen = gw_auth_keys_load(&k->store, &key);
		uint32_t ids[GW_AUTH_HELD] = { 0 };
		unsigned n = gw_auth_keys_held(&k->store, ids);
		if (gen) {
			k->loads++;
			k->timer.loaded_ns = now;
			GW_LOG(NOTICE, "[auth] key %08x loaded (generation %u); key %08x still "
			       "accepted for %u s",
			       ids[0], gen, n > 1 ? ids[1] : ids[0], k->cfg->auth_overlap_s);
		} else {
			GW_LOG(NOTICE, "[auth] key %08x is the one in use already", ids[0]);
		}
		snprintf(why, len, "key %08x", ids[0]);
	}
	pthread_mutex_unlock(&k->lock);
	sodium_memzero(&key, sizeof(key));
	return rc;
}

void gw_keys_tick(struct gw_keys *k, uint64_t now, uint64_t bytes)
{
	if (__atomic_exchange_n(&k->reload, false, __ATOMIC_ACQ_REL)) {
		char why[300];
		gw_keys_load(k, k->cfg->auth_key_file, now, why, sizeof(why));
	}
	const struct gw_config *c = k->cfg;
	pthread_mutex_lock(&k->lock);
	unsigned due = gw_auth_due(&k->store, &k->timer, now, bytes,
				   c->auth_overlap_s * 1000000000ull, c->auth_roll_s * 1000000000ull,
				   (uint64_t)c->auth_roll_gb << 30);
	if (due & GW_AUTH_DUE_RETIRE) {
		gw_auth_keys_retire(&k->store);
		k->retires++;
		GW_LOG(NOTICE, "[auth] overlap over: only the newest key is accepted");
	}
	if (due & GW_AUTH_DUE_ROLL) {
		gw_auth_keys_roll(&k->store);
		k->rolls++;
		k->timer.rolled_ns = now;
		k->timer.rolled_bytes = bytes;
	}
	pthread_mutex_unlock(&k->lock);
}
