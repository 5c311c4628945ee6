/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libgridwire: ecall's multi-node patterns over gw_call_start; see
 * gridwire.h. Each pattern starts its calls, then takes outcomes as they
 * come (gw_call_next_outcome keeps anything else for gw_recv) and decides
 * by its policy; calls whose outcome no longer matters are forgotten, so
 * their late replies are dropped rather than handed to the caller.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gw_client_int.h"

static bool badrpc(int error)
{
	return error == -EHOSTUNREACH || error == -EHOSTDOWN;
}

/* An error that decides the outcome under flags (badrpc only if asked). */
static bool counts(int error, unsigned flags)
{
	return error && (!badrpc(error) || (flags & GW_BADRPC_ERRORS));
}

static void result_set(struct gw_result *r, uint16_t node, int error, const struct gw_msg *m)
{
	r->node = node;
	r->error = error;
	r->data = NULL;
	r->len = 0;
	if (m && m->len && (r->data = malloc(m->len))) {
		memcpy(r->data, m->data, m->len);
		r->len = m->len;
	}
}

void gw_results_free(struct gw_result *res, unsigned n)
{
	for (unsigned i = 0; res && i < n; i++) {
		free(res[i].data);
		res[i].data = NULL;
		res[i].len = 0;
	}
}

int gw_cast_one(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len)
{
	if (gw_client_gone(cl))
		return -EPIPE; /* not -EHOSTUNREACH: no node is up with it gone */
	if (!nodes || n == 0)
		return -EINVAL;
	uint16_t self = gw_local_node(cl);
	for (unsigned i = 0; i < n; i++) {
		if (nodes[i] == self) {
			int rc = gw_cast(cl, self, service, req, len, -1);
			return rc < 0 ? rc : self;
		}
	}
	unsigned start = (unsigned)random() % n;
	int rc = -EHOSTUNREACH;
	for (unsigned i = 0; i < n; i++) {
		uint16_t node = nodes[(start + i) % n];
		if (!gw_node_up(cl, node))
			continue;
		rc = gw_cast(cl, node, service, req, len, -1);
		if (rc == 0)
			return node;
		if (!badrpc(rc))
			return rc;
	}
	return gw_client_answer(cl, rc);
}

int gw_cast_all(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, unsigned flags)
{
	if (gw_client_gone(cl))
		return -EPIPE;
	int ok = 0, first = 0;
	for (unsigned i = 0; i < n; i++) {
		int rc = gw_cast_flags(cl, nodes[i], service, req, len, -1, flags & GW_URGENT);
		if (rc == 0)
			ok++;
		else if (!first && counts(rc, flags))
			first = rc;
	}
	return first ? first : ok;
}

int gw_call_one(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, int timeout_ms, unsigned flags,
		struct gw_result *res)
{
	int last = -EHOSTUNREACH;
	result_set(res, 0, last, NULL);
	if (gw_client_gone(cl))
		return res->error = -EPIPE;
	for (unsigned i = 0; i < n; i++) {
		struct gw_msg m;
		int rc = gw_call_flags(cl, nodes[i], service, req, len, timeout_ms,
				       flags & GW_URGENT, &m);
		if (rc == -EOVERFLOW || rc == -EPIPE || rc == -EINVAL)
			return rc;
		/* A badrpc is only the answer when nothing better came. */
		if (rc == 0 || counts(rc, flags) || badrpc(last)) {
			gw_results_free(res, 1);
			result_set(res, nodes[i], rc, rc == 0 || rc == -EREMOTEIO ? &m : NULL);
			last = rc;
		}
		if (rc == 0)
			return 0;
	}
	return last;
}

/* Start a call to every node; ids[i] = 0 where it could not start (res[i] says why). */
static int start_all(struct gw_client *cl, const uint16_t *nodes, unsigned n,
		     const char *service, const void *req, size_t len, int timeout_ms,
		     unsigned flags, uint32_t *ids, struct gw_result *res, unsigned *pending)
{
	*pending = 0;
	for (unsigned i = 0; i < n; i++) {
		ids[i] = 0;
		int rc = gw_call_start_flags(cl, nodes[i], service, req, len, timeout_ms,
					     flags & GW_URGENT, &ids[i]);
		if (rc == -EINVAL || rc == -EPIPE) {
			for (unsigned k = 0; k < i; k++)
				gw_call_forget(cl, ids[k]);
			return rc;
		}
		/* A started call has no outcome yet: canceled, unless one comes. */
		result_set(&res[i], nodes[i], rc ? rc : -ECANCELED, NULL);
		*pending += rc == 0;
	}
	return 0;
}

/*
 * The common engine of call_any, call_all and call_all_wait: calls to
 * every node at once, outcomes into res[i] as they come, until all are in
 * or stop_on_ok and one answered ok (its index is returned). Returns n
 * when all are in, or a negative errno.
 */
static int call_each(struct gw_client *cl, const uint16_t *nodes, unsigned n,
		     const char *service, const void *req, size_t len, int timeout_ms,
		     unsigned flags, struct gw_result *res, bool stop_on_ok)
{
	if (gw_client_gone(cl))
		return -EPIPE;
	if (!nodes || n == 0)
		return -EINVAL;
	uint32_t *ids = calloc(n, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	unsigned pending;
	int rc = start_all(cl, nodes, n, service, req, len, timeout_ms, flags, ids, res,
			   &pending);
	int ret = (int)n;
	while (rc == 0 && pending) {
		struct gw_msg m;
		int i = gw_call_next_outcome(cl, ids, n, &m);
		if (i < 0) {
			rc = i;
			break;
		}
		ids[i] = 0;
		pending--;
		result_set(&res[i], nodes[i], m.error, m.error == 0 || m.error == -EREMOTEIO ? &m : NULL);
		if (stop_on_ok && m.error == 0) {
			ret = i;
			break;
		}
	}
	for (unsigned i = 0; i < n; i++)
		gw_call_forget(cl, ids[i]);
	free(ids);
	return rc < 0 ? rc : ret;
}

int gw_call_any(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, int timeout_ms, unsigned flags,
		struct gw_result *res)
{
	result_set(res, 0, -ENOMEM, NULL);
	struct gw_result *all = calloc(n ? n : 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	int rc = call_each(cl, nodes, n, service, req, len, timeout_ms, flags, all, true);
	if (rc >= 0 && (unsigned)rc < n) {
		*res = all[rc];
		all[rc].data = NULL;
		rc = 0;
	} else if (rc < 0) {
		res->error = rc;
	} else {
		/* No ok: the last error that counts, else the last badrpc. */
		int pick = (int)n - 1;
		for (int i = (int)n - 1; i >= 0; i--)
			if (counts(all[i].error, flags)) {
				pick = i;
				break;
			}
		*res = all[pick];
		all[pick].data = NULL;
		rc = res->error;
	}
	gw_results_free(all, n);
	free(all);
	return rc;
}

/* Every res[i] is valid (and freeable) whatever happens next. */
static void results_init(struct gw_result *res, const uint16_t *nodes, unsigned n)
{
	for (unsigned i = 0; nodes && i < n; i++)
		result_set(&res[i], nodes[i], -ECANCELED, NULL);
}

/* Calls to every node, every outcome in res: how many answered ok, or a negative errno. */
static int call_all_outcomes(struct gw_client *cl, const uint16_t *nodes, unsigned n,
			     const char *service, const void *req, size_t len, int timeout_ms,
			     unsigned flags, struct gw_result *res)
{
	results_init(res, nodes, n);
	int rc = call_each(cl, nodes, n, service, req, len, timeout_ms, flags, res, false);
	if (rc < 0)
		return rc;
	int ok = 0;
	for (unsigned i = 0; i < n; i++)
		ok += res[i].error == 0;
	return ok;
}

int gw_call_all(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, int timeout_ms, unsigned flags,
		struct gw_result *res)
{
	int ok = call_all_outcomes(cl, nodes, n, service, req, len, timeout_ms, flags, res);
	if (ok < 0)
		return ok;
	for (unsigned i = 0; i < n; i++)
		if (counts(res[i].error, flags))
			return res[i].error;
	/* Ignoring badrpc does not make "nobody could be asked" a success. */
	return ok ? 0 : res[n - 1].error;
}

int gw_call_all_wait(struct gw_client *cl, const uint16_t *nodes, unsigned n,
		     const char *service, const void *req, size_t len, int timeout_ms,
		     struct gw_result *res)
{
	return call_all_outcomes(cl, nodes, n, service, req, len, timeout_ms, 0, res);
}
