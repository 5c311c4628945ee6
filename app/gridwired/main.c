/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gridwired: the gridwire gateway daemon.
 *
 *   gridwired [-c FILE] [--set section.key=value]... [--check] [--stats-file PATH]
 *
 * Everything, EAL arguments included, comes from one INI file (built-in
 * defaults without -c); --set overrides single keys. SIGINT/SIGTERM stop
 * taking messages, flush what is in flight and report what was not acked;
 * SIGHUP reads the [auth] key file again (a new secret, see gw_keys.h).
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_pdump.h>

#include "gw_config.h"
#include "gw_gateway.h"
#include "gw_port.h"

static volatile bool stop;
static struct gw_gateway g;

static void on_signal(int sig)
{
	if (sig == SIGHUP) /* [auth]: read the key file again */
		__atomic_store_n(&g.keys.reload, true, __ATOMIC_RELEASE);
	else
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

/* Megabytes of free hugepages of one size (0: of every size). */
static uint64_t hugepages_free_mb(unsigned long only_kb)
{
	uint64_t mb = 0;
	glob_t gl;
	if (glob("/sys/kernel/mm/hugepages/hugepages-*kB", 0, NULL, &gl) == 0) {
		for (size_t i = 0; i < gl.gl_pathc; i++) {
			unsigned long kb = strtoul(strrchr(gl.gl_pathv[i], '-') + 1, NULL, 10);
			if (only_kb && kb != only_kb)
				continue;
			char path[300];
			snprintf(path, sizeof(path), "%s/free_hugepages", gl.gl_pathv[i]);
			FILE *f = fopen(path, "r");
			unsigned long n = 0;
			if (f) {
				if (fscanf(f, "%lu", &n) != 1)
					n = 0;
				fclose(f);
			}
			mb += (uint64_t)n * kb / 1024;
		}
		globfree(&gl);
	}
	return mb;
}

/*
 * Is a hugetlbfs mounted (at dir, when given)? Its page size in kB goes to
 * *kb (0 when not shown: the default size).
 */
static bool hugetlbfs_at(const char *dir, size_t dirlen, unsigned long *kb)
{
	bool found = false;
	*kb = 0;
	FILE *m = fopen("/proc/mounts", "r");
	char line[512];
	while (m && !found && fgets(line, sizeof(line), m)) {
		char at[256], type[32], opts[256];
		if (sscanf(line, "%*s %255s %31s %255s", at, type, opts) != 3 ||
		    strcmp(type, "hugetlbfs"))
			continue;
		if (dir && (strlen(at) != dirlen || strncmp(at, dir, dirlen)))
			continue;
		found = true;
		const char *ps = strstr(opts, "pagesize=");
		if (ps) {
			char unit = 'K';
			unsigned long n = 0;
			if (sscanf(ps + 9, "%lu%c", &n, &unit) >= 1)
				*kb = n * (unit == 'G' ? 1048576 : unit == 'M' ? 1024 : 1);
		}
	}
	if (m)
		fclose(m);
	return found;
}

/*
 * EAL would refuse hugepages that are not there with several lines about
 * page sizes; say it once, with the fix, before it tries. With --huge-dir,
 * only the pages of that mount's size count.
 */
static int check_hugepages(const struct gw_config *cfg, char *err, size_t len)
{
	const char *a = cfg->eal_args;
	if (strstr(a, "--no-huge"))
		return 0;
	const char *hd = strstr(a, "--huge-dir");
	const char *dir = NULL;
	size_t dirlen = 0;
	if (hd) {
		dir = hd + strlen("--huge-dir");
		dir += strspn(dir, " =");
		dirlen = strcspn(dir, " \t");
	}
	unsigned long kb;
	bool mounted = hugetlbfs_at(dir, dirlen, &kb);
	if (!mounted && dir) {
		snprintf(err, len, "[eal] args: --huge-dir %.*s is not a hugetlbfs mount: mount one "
			 "(mount -t hugetlbfs -o pagesize=2M nodev %.*s)",
			 (int)dirlen, dir, (int)dirlen, dir);
		return -ENOENT;
	}
	uint64_t free_mb = hugepages_free_mb(dir ? kb : 0);
	const char *m = strstr(a, "-m ");
	unsigned long want = m && (m == a || m[-1] == ' ') ? strtoul(m + 3, NULL, 10) : 1;
	if (free_mb < want) {
		snprintf(err, len, "[eal] args: hugepages asked for (no --no-huge) but %" PRIu64
			 " MB are free%s where -m wants %lu: reserve them (gridwire-setup -c CONFIG, "
			 "or ./scripts/gw hugepages reserve) or add --no-huge",
			 free_mb, dir ? " in pages of --huge-dir's size" : "", want);
		return -ENOMEM;
	}
	if (!mounted && !strstr(a, "--in-memory")) {
		snprintf(err, len, "[eal] args: hugepages asked for but no hugetlbfs is mounted: "
			 "mount one (./scripts/gw hugepages reserve) or add --in-memory");
		return -ENOENT;
	}
	return 0;
}

/* Split the [eal] args on spaces into argv, adding what the members need
 * and a per-node file prefix. */
static int eal_argv(const struct gw_config *cfg, char *buf, size_t len, char **argv, int max)
{
	int argc = 0;
	snprintf(buf, len, "%s", cfg->eal_args);
	if (gw_port_eal_args(cfg, buf, len) < 0)
		return -E2BIG;
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
	char err[512];
	if (gw_config_load(&cfg, path, overrides, nover, gw_port_check_member, err, sizeof(err)) < 0 ||
	    check_hugepages(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "gridwired: %s\n", err);
		return 2;
	}
	if (check) {
		printf("gridwired: config ok (node %u %s)\n", cfg.node_id, cfg.node_name);
		return 0;
	}

	char ebuf[sizeof(cfg.eal_args) + GW_CONFIG_MAX_MEMBERS * 20], *eargv[64];
	int eargc = eal_argv(&cfg, ebuf, sizeof(ebuf), eargv, 64);
	if (eargc < 0) {
		fprintf(stderr, "gridwired: [eal] args: too many arguments\n");
		return 2;
	}
	/* EAL's own log stream writes every line to stdout and to syslog,
	 * which journald (under the unit) records twice: one copy, on stderr. */
	rte_openlog_stream(stderr);
	if (rte_eal_init(eargc, eargv) < 0) {
		fprintf(stderr, "gridwired: EAL init failed: %s (check [eal] args)\n",
			rte_strerror(rte_errno));
		return 2;
	}
	gw_logtype = rte_log_register_type_and_pick_level("gridwire.gateway", RTE_LOG_INFO);
	if (gw_logtype < 0)
		gw_logtype = RTE_LOGTYPE_USER1;
	/* With hugepages and a shared config the gateway is a multi-process
	 * primary: DPDK's own tools attach to it, and dpdk-dumpcap asks it
	 * to copy frames out (without, rte_pdump_init has nothing to serve). */
	if (rte_pdump_init() < 0)
		GW_LOG(WARNING, "dpdk-dumpcap will not be served: %s", rte_strerror(rte_errno));
	else if (rte_eal_has_hugepages() && !strstr(cfg.eal_args, "--no-shconf") &&
		 !strstr(cfg.eal_args, "--in-memory"))
		GW_LOG(NOTICE, "multi-process primary: dpdk-proc-info and dpdk-dumpcap attach with --file-prefix=%s",
		       strrchr(rte_eal_get_runtime_dir(), '/') + 1);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, on_signal);

	int rc = gw_gateway_init(&g, &cfg, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "gridwired: cannot start: %s\n", err);
		gw_gateway_fini(&g);
		rte_pdump_uninit();
		rte_eal_cleanup();
		return 2;
	}
	/* Telemetry reads the gateway; the gateway knows nothing of it. */
	if ((rc = gw_stats_register(&g)) < 0)
		GW_LOG(WARNING, "telemetry commands not registered: %s", strerror(-rc));
	gw_gateway_run(&g, &stop, 2000);

	char js[4096];
	gw_port_watch(&g.port); /* the members' last counts */
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
	rte_pdump_uninit();
	rte_eal_cleanup();
	return 0;
}
