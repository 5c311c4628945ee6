/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-kv: the example program of the call API, a tiny replicated key-value
 * store, "write to all, read from any" (ecall's motivating use).
 *
 *   gw-kv serve -s SOCK                     hold a store, answer "kv" calls
 *   gw-kv put -s SOCK --nodes 1,2,3 KEY VALUE [--strict]
 *                                           gw_call_all: every node stores it
 *   gw-kv get -s SOCK --nodes 1,2,3 KEY     gw_call_any: the first node that has it
 *   gw-kv nodes -s SOCK                     the nodes this gateway knows
 *
 * Requests are "put KEY VALUE" and "get KEY"; a get of a missing key fails
 * (the handler answers gw_reply_error), which call_any passes over.
 * --strict counts unreachable nodes as failures (GW_BADRPC_ERRORS).
 * ./scripts/gw example runs it across a mesh of three gateways.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridwire.h"

#define KV_MAX 1024

struct kv {
	char key[64], val[256];
};

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int serve(struct gw_client *cl)
{
	static struct kv store[KV_MAX];
	unsigned n = 0;
	int rc = gw_service(cl, "kv");
	if (rc < 0) {
		fprintf(stderr, "gw-kv: cannot offer service kv: %s\n", strerror(-rc));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "gw-kv: node %u serving kv\n", gw_local_node(cl));
	while (!stop) {
		struct gw_msg m;
		int rc = gw_recv(cl, &m, 200);
		if (rc == -EPIPE) {
			fprintf(stderr, "gw-kv: the gateway went away: %s\n", gw_strerror(rc));
			return 1;
		}
		if (rc < 0 || m.kind != GW_MSG_REQUEST)
			continue;
		char req[400], *key, *val, *save;
		snprintf(req, sizeof(req), "%.*s", (int)(m.len < 399 ? m.len : 399), (const char *)m.data);
		char *op = strtok_r(req, " ", &save);
		key = strtok_r(NULL, " ", &save);
		val = strtok_r(NULL, "", &save);
		if (!op || !key || strlen(key) >= sizeof(store[0].key)) {
			gw_reply_error(cl, &m, "bad request");
			continue;
		}
		unsigned i = 0;
		while (i < n && strcmp(store[i].key, key))
			i++;
		if (!strcmp(op, "get")) {
			if (i == n)
				gw_reply_error(cl, &m, "no such key");
			else
				gw_reply(cl, &m, store[i].val, strlen(store[i].val));
		} else if (!strcmp(op, "put") && val && (i < n || n < KV_MAX)) {
			n += i == n;
			snprintf(store[i].key, sizeof(store[i].key), "%s", key);
			snprintf(store[i].val, sizeof(store[i].val), "%s", val);
			gw_reply(cl, &m, "stored", 6);
		} else {
			gw_reply_error(cl, &m, i == n && n == KV_MAX ? "store full" : "bad request");
		}
	}
	return 0;
}

/* An outcome in ecall's words: a node that could not be asked is badrpc. */
static void outcome(int err)
{
	if (err == -EHOSTUNREACH || err == -EHOSTDOWN)
		printf("badrpc: ");
	printf("%s", err ? gw_strerror(err) : "ok");
}

static void show(const struct gw_result *r)
{
	printf("  node %u: ", r->node);
	outcome(r->error);
	printf("%s%.*s\n", r->len ? ": " : "", (int)r->len, (const char *)r->data);
}

static int usage(FILE *f)
{
	fprintf(f, "usage: gw-kv [-s SOCK] serve | nodes | put --nodes N,N KEY VALUE "
		   "[--strict] | get --nodes N,N KEY\n");
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	const char *sock = "/run/gridwire/alpha.sock";
	uint16_t nodes[64];
	unsigned n = 0, flags = 0;
	static const struct option lo[] = {
		{ "nodes", 1, NULL, 'n' }, { "strict", 0, NULL, 'S' }, { "help", 0, NULL, 'h' },
		{ 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "s:", lo, NULL)) != -1) {
		if (c == 's') {
			sock = optarg;
		} else if (c == 'n') {
			for (char *sv, *t = strtok_r(optarg, ",", &sv); t && n < 64; t = strtok_r(NULL, ",", &sv))
				nodes[n++] = (uint16_t)atoi(t);
		} else if (c == 'S') {
			flags |= GW_BADRPC_ERRORS;
		} else {
			return usage(c == 'h' ? stdout : stderr);
		}
	}
	const char *cmd = optind < argc ? argv[optind] : "";
	if (strcmp(cmd, "serve") && strcmp(cmd, "nodes") && strcmp(cmd, "put") && strcmp(cmd, "get"))
		return usage(stderr);
	struct gw_client *cl;
	int rc = gw_connect(sock, &cl);
	if (rc < 0) {
		fprintf(stderr, "gw-kv: cannot connect to %s: %s (is gridwired running?)\n", sock,
			strerror(-rc));
		return 1;
	}
	char req[400];
	struct gw_result res[64];
	if (!strcmp(cmd, "serve")) {
		rc = serve(cl);
	} else if (!strcmp(cmd, "nodes")) {
		struct gw_node_info info[64];
		int k = gw_nodes(cl, info, 64);
		for (int i = 0; i < k && i < 64; i++)
			printf("node %u %s %s%s%s\n", info[i].id, info[i].name,
			       info[i].up ? "up" : "down", info[i].self ? " (this node)" : "",
			       info[i].caps & GW_NODE_AUTH ? ", authenticated" : "");
		rc = k < 0;
	} else if (!strcmp(cmd, "put") && optind + 2 < argc && n) {
		snprintf(req, sizeof(req), "put %s %s", argv[optind + 1], argv[optind + 2]);
		rc = gw_call_all(cl, nodes, n, "kv", req, strlen(req), 1000, flags, res);
		printf("put %s: ", argv[optind + 1]);
		outcome(rc < 0 ? rc : 0);
		printf("\n");
		for (unsigned i = 0; i < n; i++)
			show(&res[i]);
		gw_results_free(res, n);
		rc = rc < 0;
	} else if (!strcmp(cmd, "get") && optind + 1 < argc && n) {
		snprintf(req, sizeof(req), "get %s", argv[optind + 1]);
		rc = gw_call_any(cl, nodes, n, "kv", req, strlen(req), 1000, flags, res);
		printf("get %s: ", argv[optind + 1]);
		outcome(rc < 0 ? rc : 0);
		printf("\n");
		show(&res[0]);
		gw_results_free(res, 1);
		rc = rc < 0;
	} else {
		rc = usage(stderr);
	}
	gw_close(cl);
	return rc;
}
