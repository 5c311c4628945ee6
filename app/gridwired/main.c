/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gridwired: the gridwire gateway daemon.
 *
 *   gridwired [-c FILE] [--set section.key=value]... [--check] [--stats-file PATH]
 *
 * Everything, EAL arguments included, comes from one INI file (built-in
 * defaults without -c); --set overrides single keys. SIGINT/SIGTERM stop
 * taking messages, flush what is in flight and report what was not acked.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "gw_config.h"
#include "gw_gateway.h"

int gw_logtype;
static volatile bool stop;

static void on_signal(int sig)
{
	stop = true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gridwired [-c FILE] [--set section.key=value]... [--check] "
		   "[--stats-file PATH]\n"
		   "  -c FILE          config file (default: built-in defaults, see config/gridwire.ini)\n"
		   "  --set S.K=V      override one key, e.g. --set proto.batch_max=1\n"
		   "  --check          validate the config and exit\n"
		   "  --stats-file P   write the counters as JSON to P on exit\n");
}

/* Split the [eal] args on spaces into argv, adding a per-node file prefix. */
static int eal_argv(const struct gw_config *cfg, char *buf, size_t len, char **argv, int max)
{
	int argc = 0;
	snprintf(buf, len, "%s", cfg->eal_args);
	argv[argc++] = "gridwired";
	for (char *save, *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (argc >= max - 2)
			return -E2BIG;
		argv[argc++] = t;
	}
	if (!strstr(cfg->eal_args, "--file-prefix")) {
		static char prefix[64];
		snprintf(prefix, sizeof(prefix), "--file-prefix=gw-%s", cfg->node_name);
		argv[argc++] = prefix;
	}
	argv[argc] = NULL;
	return argc;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *stats_file = NULL;
	char *overrides[64] = { 0 };
	unsigned nover = 0;
	bool check = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-c") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(a, "--set") && i + 1 < argc && nover < 64) {
			overrides[nover++] = argv[++i];
		} else if (!strcmp(a, "--stats-file") && i + 1 < argc) {
			stats_file = argv[++i];
		} else if (!strcmp(a, "--check")) {
			check = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "gridwired: unknown or incomplete argument '%s' (see --help)\n", a);
			return 2;
		}
	}

	static struct gw_config cfg;
	char err[256];
	if (gw_config_load(&cfg, path, overrides, nover, err, sizeof(err)) < 0) {
		fprintf(stderr, "gridwired: %s\n", err);
		return 2;
	}
	if (check) {
		printf("gridwired: config ok (node %u %s)\n", cfg.node_id, cfg.node_name);
		return 0;
	}

	char ebuf[sizeof(cfg.eal_args)], *eargv[64];
	int eargc = eal_argv(&cfg, ebuf, sizeof(ebuf), eargv, 64);
	if (eargc < 0) {
		fprintf(stderr, "gridwired: [eal] args: too many arguments\n");
		return 2;
	}
	if (rte_eal_init(eargc, eargv) < 0) {
		fprintf(stderr, "gridwired: EAL init failed: %s (check [eal] args)\n",
			rte_strerror(rte_errno));
		return 1;
	}
	gw_logtype = rte_log_register_type_and_pick_level("gridwire.gateway", RTE_LOG_INFO);
	if (gw_logtype < 0)
		gw_logtype = RTE_LOGTYPE_USER1;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	static struct gw_gateway g;
	int rc = gw_gateway_init(&g, &cfg);
	if (rc < 0) {
		fprintf(stderr, "gridwired: cannot start: %s\n", strerror(-rc));
		gw_gateway_fini(&g);
		rte_eal_cleanup();
		return 1;
	}
	gw_gateway_run(&g, &stop, 2000);

	char js[2048];
	gw_gateway_stats_json(&g, js, sizeof(js));
	GW_LOG(NOTICE, "stats %s", js);
	if (stats_file) {
		FILE *f = fopen(stats_file, "w");
		if (f) {
			fprintf(f, "%s\n", js);
			fclose(f);
		}
	}
	gw_gateway_fini(&g);
	rte_eal_cleanup();
	return 0;
}
