/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-rpc-check: services, calls and the multi-node patterns against real
 * gateways (test/integration/test_calls.sh).
 *
 *   gw-rpc-check serve -s SOCK -e SERVICE --behave ok|fail|silent
 *       Serve until SIGTERM, then print one JSON line. ok answers
 *       "ok <node>: <request>", fail answers with the error "failed on
 *       <node>", silent never answers. Casts are counted.
 *   gw-rpc-check patterns -s SOCK -e SERVICE --ok N,N --fail N --absent N
 *                         --quiet SERVICE@N [--timeout-ms MS]
 *       Check every call and pattern against the roles given: the nodes
 *       whose SERVICE answers ok, the one whose SERVICE fails, a node id
 *       that is not up, and a service that never answers. One PASS/FAIL
 *       line per check; exit 1 if any failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gridwire.h"

#define MAX_NODES 16

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail_rc(const char *what, int err)
{
	fprintf(stderr, "gw-rpc-check: %s: %s\n", what, strerror(-err));
	return 1;
}

static int serve(struct gw_client *cl, const char *service, const char *behave)
{
	int rc = gw_service(cl, service);
	if (rc < 0)
		return fail_rc(service, rc);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	fprintf(stderr, "gw-rpc-check: serving %s (%s)\n", service, behave);
	uint64_t requests = 0, casts = 0, other = 0;
	char out[512];
	while (!stop) {
		struct gw_msg m;
		rc = gw_recv(cl, &m, 200);
		if (rc == -ETIMEDOUT || rc == -EINTR)
			continue;
		if (rc < 0)
			return fail_rc("recv", rc);
		if (m.kind == GW_MSG_CAST) {
			casts++;
			continue;
		}
		if (m.kind != GW_MSG_REQUEST) {
			other++;
			continue;
		}
		requests++;
		if (!strcmp(behave, "silent"))
			continue;
		if (!strcmp(behave, "fail")) {
			snprintf(out, sizeof(out), "failed on %u", gw_local_node(cl));
			rc = gw_reply_error(cl, &m, out);
		} else {
			int n = snprintf(out, sizeof(out), "ok %u: %.*s", gw_local_node(cl),
					 (int)(m.len < 400 ? m.len : 400), (const char *)m.data);
			rc = gw_reply(cl, &m, out, (size_t)n);
		}
		if (rc < 0)
			return fail_rc("reply", rc);
	}
	printf("{\"requests\":%" PRIu64 ",\"casts\":%" PRIu64 ",\"other\":%" PRIu64 "}\n",
	       requests, casts, other);
	return 0;
}

static int failures;

static void check(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(bool ok, const char *name, const char *fmt, ...)
{
	char why[256] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ", ok ? "" : why);
	failures += !ok;
}

static bool reply_is(const struct gw_result *r, const char *prefix)
{
	return r->data && r->len >= strlen(prefix) && !memcmp(r->data, prefix, strlen(prefix));
}

struct roles {
	uint16_t ok[MAX_NODES];
	unsigned nok;
	uint16_t fail, absent, quiet_node;
	const char *quiet;
	int timeout_ms;
};

static void check_nodes(struct gw_client *cl, const struct roles *r)
{
	struct gw_node_info nodes[64];
	int n = gw_nodes(cl, nodes, 64);
	unsigned up = 0, self = 0, batching = 0;
	bool absent_seen = false;
	for (int i = 0; i < n && i < 64; i++) {
		up += nodes[i].up;
		batching += nodes[i].up &&
			    nodes[i].caps == (GW_NODE_BATCHING | GW_NODE_URGENT | GW_NODE_GRANT |
					      GW_NODE_TOPICS);
		self += nodes[i].self && nodes[i].id == gw_local_node(cl);
		absent_seen |= nodes[i].id == r->absent && nodes[i].up;
	}
	/* Every ok node and the failing one are up gateways (self included). */
	check(n >= (int)r->nok + 1 && up >= r->nok + 1 && self == 1 && !absent_seen, "nodes",
	      "%d nodes, %u up, self %u, absent node seen up %d", n, up, self, absent_seen);
	/* The mesh batches, takes urgent lanes and topics, grants ([cc]
	 * control's default) and does not authenticate: what each hello says. */
	check(batching == up, "node capabilities",
	      "%u of %u up nodes say batching, urgent, grants and topics only",
	      batching, up);
}

static void check_single(struct gw_client *cl, const char *svc, const struct roles *r)
{
	struct gw_msg m;
	char want[64];
	for (unsigned i = 0; i < r->nok; i++) {
		int rc = gw_call(cl, r->ok[i], svc, "ping", 4, r->timeout_ms, &m);
		snprintf(want, sizeof(want), "ok %u: ping", r->ok[i]);
		check(rc == 0 && m.kind == GW_MSG_REPLY && m.len == strlen(want) &&
			      !memcmp(m.data, want, m.len) && m.node == r->ok[i],
		      "call ok node", "node %u: rc %d (%s)", r->ok[i], rc, strerror(-rc));
	}
	int rc = gw_call(cl, r->fail, svc, "ping", 4, r->timeout_ms, &m);
	snprintf(want, sizeof(want), "failed on %u", r->fail);
	check(rc == -EREMOTEIO && m.len == strlen(want) && !memcmp(m.data, want, m.len),
	      "call handler failure", "rc %d (%s)", rc, strerror(-rc));
	rc = gw_call(cl, r->absent, svc, "ping", 4, r->timeout_ms, &m);
	check(rc == -EHOSTUNREACH, "call node down (badrpc)", "rc %d (%s)", rc, strerror(-rc));
	rc = gw_call(cl, r->ok[0], "no-such-service", "ping", 4, r->timeout_ms, &m);
	check(rc == -ENOENT, "call no such service", "rc %d (%s)", rc, strerror(-rc));
	rc = gw_call(cl, r->quiet_node, r->quiet, "ping", 4, r->timeout_ms, &m);
	check(rc == -ETIMEDOUT, "call timeout", "rc %d (%s)", rc, strerror(-rc));
	rc = gw_call(cl, r->ok[0], svc, "ping", 4, 0, &m);
	check(rc == -EINVAL, "call without timeout refused", "rc %d", rc);
	rc = gw_register(cl, "~call.1");
	check(rc == -EPERM, "reply endpoints cannot be taken", "rc %d", rc);
	uint8_t big[65536] = { 0 };
	rc = gw_call(cl, r->ok[0], svc, big, gw_msg_max(cl) - GW_CALL_HDR + 1, r->timeout_ms, &m);
	check(rc == -EMSGSIZE, "call too big", "rc %d", rc);
	/* Async: several in flight, each reply matched to its call. */
	uint32_t ids[8];
	char req[8][16];
	for (unsigned i = 0; i < 8; i++) {
		snprintf(req[i], sizeof(req[i]), "q%u", i);
		rc = gw_call_start(cl, r->ok[i % r->nok], svc, req[i], strlen(req[i]), r->timeout_ms,
				   &ids[i]);
		if (rc < 0)
			break;
	}
	unsigned matched = 0;
	for (unsigned got = 0; rc == 0 && got < 8; got++) {
		if (gw_recv(cl, &m, r->timeout_ms) < 0 || m.kind != GW_MSG_REPLY)
			break;
		for (unsigned i = 0; i < 8; i++) {
			snprintf(want, sizeof(want), "ok %u: q%u", r->ok[i % r->nok], i);
			if (ids[i] == m.call_id && m.error == 0 && m.len == strlen(want) &&
			    !memcmp(m.data, want, m.len))
				matched++;
		}
	}
	check(matched == 8, "async calls matched", "%u of 8 matched", matched);
}

static void check_patterns(struct gw_client *cl, const char *svc, const struct roles *r)
{
	struct gw_result res[8], one;
	uint16_t me = gw_local_node(cl);
	char want[32];
	int rc;

	/* call_one: the failing node and the absent one are passed over. */
	uint16_t l1[] = { r->fail, r->absent, r->ok[1] };
	rc = gw_call_one(cl, l1, 3, svc, "x", 1, r->timeout_ms, 0, &one);
	snprintf(want, sizeof(want), "ok %u:", r->ok[1]);
	check(rc == 0 && one.node == r->ok[1] && reply_is(&one, want), "call_one falls back",
	      "rc %d node %u", rc, one.node);
	gw_results_free(&one, 1);
	uint16_t l2[] = { r->absent, r->fail };
	rc = gw_call_one(cl, l2, 2, svc, "x", 1, r->timeout_ms, 0, &one);
	check(rc == -EREMOTEIO && one.node == r->fail, "call_one all fail", "rc %d", rc);
	gw_results_free(&one, 1);

	/* call_any: the first ok wins, without waiting for the silent one. */
	uint16_t l3[] = { r->fail, r->absent, r->ok[0] };
	rc = gw_call_any(cl, l3, 3, svc, "x", 1, r->timeout_ms, 0, &one);
	check(rc == 0 && one.node == r->ok[0], "call_any first ok", "rc %d node %u", rc, one.node);
	gw_results_free(&one, 1);
	uint16_t l4[] = { r->fail, r->absent };
	rc = gw_call_any(cl, l4, 2, svc, "x", 1, r->timeout_ms, 0, &one);
	check(rc == -EREMOTEIO, "call_any no ok", "rc %d", rc);
	gw_results_free(&one, 1);
	rc = gw_call_any(cl, l4, 2, svc, "x", 1, r->timeout_ms, GW_BADRPC_ERRORS, &one);
	check(rc == -EHOSTUNREACH || rc == -EREMOTEIO, "call_any no ok, badrpc counted", "rc %d", rc);
	gw_results_free(&one, 1);

	/* call_all: every ok node answers; a failure fails it; badrpc only if asked. */
	rc = gw_call_all(cl, r->ok, r->nok, svc, "x", 1, r->timeout_ms, 0, res);
	unsigned oks = 0;
	for (unsigned i = 0; i < r->nok; i++) {
		snprintf(want, sizeof(want), "ok %u:", r->ok[i]);
		oks += res[i].error == 0 && res[i].node == r->ok[i] && reply_is(&res[i], want);
	}
	check(rc == 0 && oks == r->nok, "call_all all ok", "rc %d, %u ok", rc, oks);
	gw_results_free(res, r->nok);
	uint16_t l5[] = { r->ok[0], r->fail };
	rc = gw_call_all(cl, l5, 2, svc, "x", 1, r->timeout_ms, 0, res);
	check(rc == -EREMOTEIO && res[0].error == 0 && res[1].error == -EREMOTEIO,
	      "call_all one fails", "rc %d", rc);
	gw_results_free(res, 2);
	uint16_t l6[] = { r->ok[0], r->absent };
	rc = gw_call_all(cl, l6, 2, svc, "x", 1, r->timeout_ms, 0, res);
	check(rc == 0 && res[1].error == -EHOSTUNREACH, "call_all badrpc ignored", "rc %d", rc);
	gw_results_free(res, 2);
	rc = gw_call_all(cl, l6, 2, svc, "x", 1, r->timeout_ms, GW_BADRPC_ERRORS, res);
	check(rc == -EHOSTUNREACH, "call_all badrpc counted", "rc %d", rc);
	gw_results_free(res, 2);
	uint16_t l6b[] = { r->absent };
	rc = gw_call_all(cl, l6b, 1, svc, "x", 1, r->timeout_ms, 0, res);
	check(rc == -EHOSTUNREACH, "call_all nobody reachable", "rc %d", rc);
	gw_results_free(res, 1);

	/* call_all_wait: every outcome, in list order. */
	uint16_t l7[] = { r->ok[0], r->fail, r->absent, r->ok[1] };
	rc = gw_call_all_wait(cl, l7, 4, svc, "x", 1, r->timeout_ms, res);
	check(rc == 2 && res[0].error == 0 && res[1].error == -EREMOTEIO &&
		      res[2].error == -EHOSTUNREACH && res[3].error == 0 && res[2].node == r->absent,
	      "call_all_wait collects all", "rc %d: %d %d %d %d", rc, res[0].error, res[1].error,
	      res[2].error, res[3].error);
	gw_results_free(res, 4);
	uint16_t l8[] = { r->ok[0], r->quiet_node };
	rc = gw_call_all_wait(cl, l8, 2, r->quiet, "x", 1, r->timeout_ms, res);
	check(rc == 0 && res[0].error == -ENOENT && res[1].error == -ETIMEDOUT,
	      "call_all_wait no service and timeout", "rc %d: %d %d", rc, res[0].error,
	      res[1].error);
	gw_results_free(res, 2);

	/* cast_one prefers this node when listed; cast_all counts who took it. */
	uint16_t l9[] = { r->ok[1], me, r->absent };
	rc = gw_cast_one(cl, l9, 3, svc, "x", 1);
	check(rc == me, "cast_one local first", "rc %d (self %u)", rc, me);
	uint16_t l10[] = { r->absent, r->ok[1] };
	rc = gw_cast_one(cl, l10, 2, svc, "x", 1);
	check(rc == r->ok[1], "cast_one skips down nodes", "rc %d", rc);
	uint16_t l11[] = { r->ok[0], r->ok[1], r->absent };
	rc = gw_cast_all(cl, l11, 3, svc, "x", 1, 0);
	check(rc == 2, "cast_all", "rc %d", rc);
	rc = gw_cast_all(cl, l11, 3, svc, "x", 1, GW_BADRPC_ERRORS);
	check(rc == -EHOSTUNREACH, "cast_all badrpc counted", "rc %d", rc);
}

/* Messages that arrive while gw_call waits are kept for gw_recv, in order. */
static void check_kept(struct gw_client *cl, const char *svc, const struct roles *r)
{
	int rc = gw_register(cl, "inbox");
	uint16_t me = gw_local_node(cl);
	for (unsigned i = 0; rc == 0 && i < 5; i++) {
		char b[8];
		snprintf(b, sizeof(b), "m%u", i);
		rc = gw_send(cl, me, "inbox", b, strlen(b), 1000);
	}
	struct gw_msg m;
	if (rc == 0)
		rc = gw_call(cl, r->ok[0], svc, "k", 1, r->timeout_ms, &m);
	unsigned inorder = 0;
	for (unsigned i = 0; rc == 0 && i < 5; i++) {
		char b[8];
		snprintf(b, sizeof(b), "m%u", i);
		if (gw_recv(cl, &m, 1000) == 0 && m.kind == GW_MSG_DATA && m.len == strlen(b) &&
		    !memcmp(m.data, b, m.len))
			inorder++;
	}
	check(rc == 0 && inorder == 5, "messages kept during a call", "rc %d, %u of 5 in order",
	      rc, inorder);
}

static int parse_nodes(const char *s, uint16_t *out, unsigned max)
{
	unsigned n = 0;
	char *end;
	while (*s && n < max) {
		unsigned long v = strtoul(s, &end, 10);
		if (end == s || v == 0 || v > 65535)
			return -1;
		out[n++] = (uint16_t)v;
		s = *end == ',' ? end + 1 : end;
	}
	return (int)n;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gw-rpc-check serve|patterns ... (see the source)\n");
		return 2;
	}
	const char *cmd = argv[1], *sock = NULL, *svc = NULL, *behave = "ok", *ok = NULL;
	struct roles r = { .timeout_ms = 1000 };
	static const struct option lo[] = {
		{ "behave", 1, NULL, 'b' }, { "ok", 1, NULL, 'o' }, { "fail", 1, NULL, 'f' },
		{ "absent", 1, NULL, 'a' }, { "quiet", 1, NULL, 'q' }, { "timeout-ms", 1, NULL, 't' },
		{ 0 },
	};
	int c;
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:e:", lo, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'e': svc = optarg; break;
		case 'b': behave = optarg; break;
		case 'o': ok = optarg; break;
		case 'f': r.fail = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'a': r.absent = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'q': {
			char *at = strchr(optarg, '@');
			if (!at)
				return 2;
			*at = '\0';
			r.quiet = optarg;
			r.quiet_node = (uint16_t)strtoul(at + 1, NULL, 0);
			break;
		}
		case 't': r.timeout_ms = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!sock || !svc) {
		fprintf(stderr, "gw-rpc-check: -s SOCK and -e SERVICE are required\n");
		return 2;
	}
	struct gw_client *cl;
	int rc = gw_connect(sock, &cl);
	if (rc < 0)
		return fail_rc(sock, rc);
	if (!strcmp(cmd, "serve"))
		rc = serve(cl, svc, behave);
	else if (!strcmp(cmd, "patterns")) {
		int n = ok ? parse_nodes(ok, r.ok, MAX_NODES) : -1;
		if (n < 2 || !r.fail || !r.absent || !r.quiet) {
			fprintf(stderr, "gw-rpc-check: patterns needs --ok N,N[,...] --fail N "
					"--absent N --quiet SERVICE@N\n");
			return 2;
		}
		r.nok = (unsigned)n;
		check_nodes(cl, &r);
		check_single(cl, svc, &r);
		check_patterns(cl, svc, &r);
		check_kept(cl, svc, &r);
		printf("%d failed\n", failures);
		rc = failures ? 1 : 0;
	} else {
		fprintf(stderr, "gw-rpc-check: unknown command %s (serve, patterns)\n", cmd);
		rc = 2;
	}
	gw_close(cl);
	return rc;
}
