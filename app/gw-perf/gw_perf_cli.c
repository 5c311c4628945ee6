/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-perf interactive: a testpmd-style prompt on DPDK's cmdline library.
 *
 *   set mode tx|rx|echo|call    set node N       set endpoint NAME
 *   set rate N (msg/s, 0 = unpaced)   set size N   set writers N   set burst N
 *   start    stop    show perf|port|lane|client|peer stats    clear stats    quit
 *
 * A run is a child process (fork) doing what `gw-perf MODE` does with the
 * current settings, until stop; its counters and the settings that apply
 * live (rate, burst) sit in a shared mapping. A run that fails cannot take
 * the prompt with it, and stop prints the run's JSON summary. The gateway
 * stats come from its telemetry through gwctl (app/gwctl), for the
 * gateway this client is connected to.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_num.h>
#include <cmdline_parse_string.h>
#include <cmdline_rdline.h>
#include <cmdline_socket.h>

#include "gridwire.h"
#include "gw_perf.h"

struct cli_shared {
	struct perf_live live;
	struct opts o;
};

static struct cli_shared *sh;
static enum perf_mode mode = PERF_TX;
static pid_t run_pid;
static uint64_t run_start_ns;
static char endpoint[32] = "sink", gateway_name[32];
/* clear stats and the rates of show: a baseline of the live counters */
static struct perf_live base, last;
static uint64_t last_ns;

static bool running(void)
{
	if (run_pid && waitpid(run_pid, NULL, WNOHANG) == run_pid)
		run_pid = 0; /* it ended by itself (a count, or an error) */
	return run_pid != 0;
}

/* --- start / stop --- */

struct cmd_word {
	cmdline_fixed_string_t w;
};

static void cmd_start_parsed(void *res, struct cmdline *cl, void *data)
{
	if (running()) {
		cmdline_printf(cl, "already running (%s): stop first\n", perf_mode_names[mode]);
		return;
	}
	sh->live = (struct perf_live){ 0 };
	base = last = sh->live;
	last_ns = run_start_ns = now_ns();
	sh->o.endpoint = endpoint;
	sh->o.msgs = sh->o.expect = 0; /* until stop */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGINT, SIG_IGN); /* Ctrl-C at the prompt is not for the run */
		live = &sh->live;
		int rc = perf_run(mode, &sh->o);
		fflush(stdout); /* the run's summary */
		_exit(rc);
	}
	if (pid < 0) {
		cmdline_printf(cl, "cannot start: %s\n", strerror(errno));
		return;
	}
	run_pid = pid;
	cmdline_printf(cl, "%s started: node %u, endpoint %s, %u writers, %u bytes, rate %" PRIu64
			   "%s, burst %u\n", perf_mode_names[mode], sh->o.node, endpoint,
		       sh->o.writers, sh->o.size, sh->o.rate, sh->o.rate ? " msg/s" : " (unpaced)",
		       sh->o.burst);
}

static void cmd_stop_parsed(void *res, struct cmdline *cl, void *data)
{
	if (!running()) {
		cmdline_printf(cl, "not running\n");
		return;
	}
	sh->live.stop = 1;
	int st;
	waitpid(run_pid, &st, 0);
	run_pid = 0;
	cmdline_printf(cl, "stopped (exit %d)\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void cmd_quit_parsed(void *res, struct cmdline *cl, void *data)
{
	if (running())
		cmd_stop_parsed(res, cl, data);
	cmdline_quit(cl);
}

/* --- show / clear --- */

struct cmd_show {
	cmdline_fixed_string_t show, what, stats;
};

static void show_perf(struct cmdline *cl)
{
	struct perf_live now = sh->live;
	uint64_t t = now_ns();
	double dt = last_ns && t > last_ns ? (double)(t - last_ns) / 1e9 : 0;
	cmdline_printf(cl, "\n  ######## gw-perf %s (%s, %.0f s) ########\n", perf_mode_names[mode],
		       running() ? "running" : "stopped",
		       run_start_ns ? (double)(t - run_start_ns) / 1e9 : 0.0);
	cmdline_printf(cl, "  Sent: %-12" PRIu64 " EAGAIN: %-10" PRIu64 " Rejected: %-10" PRIu64 "\n",
		       now.sent - base.sent, now.eagain - base.eagain, now.rejected - base.rejected);
	cmdline_printf(cl, "  Received: %-8" PRIu64 " Requests: %-8" PRIu64 " Calls ok: %-10" PRIu64
			   " failed: %" PRIu64 "\n", now.received - base.received,
		       now.requests - base.requests, now.calls_ok - base.calls_ok,
		       now.calls_failed - base.calls_failed);
	if (dt > 0)
		cmdline_printf(cl, "  Send-pps: %-10.0f Recv-pps: %-10.0f Calls/s: %-10.0f (since the last show)\n",
			       (double)(now.sent - last.sent) / dt,
			       (double)(now.received - last.received + now.requests - last.requests) / dt,
			       (double)(now.calls_ok - last.calls_ok) / dt);
	cmdline_printf(cl, "  ##########################################\n\n");
	last = now;
	last_ns = t;
}

/* gwctl lies beside gw-perf, installed (bindir) or built (build/app);
 * GW_GWCTL names another. */
static void gwctl_path(char *buf, size_t len)
{
	const char *env = getenv("GW_GWCTL");
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash = NULL;
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
	}
	if (env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	if (slash) {
		*slash = '\0';
		if ((size_t)snprintf(buf, len, "%s/gwctl", exe) < len)
			return;
	}
	snprintf(buf, len, "gwctl"); /* none beside us (or no room for its path): PATH's */
}

/* The gateway's side, from its telemetry, by the tool that already formats it. */
static void show_gateway(struct cmdline *cl, const char *what)
{
	char gwctl[PATH_MAX];
	gwctl_path(gwctl, sizeof(gwctl));
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "'%s' -n '%s' %s", gwctl, gateway_name, what);
	fflush(stdout);
	if (system(cmd) != 0)
		cmdline_printf(cl, "could not read the gateway's stats (%s)\n", cmd);
}

static void cmd_show_parsed(void *res, struct cmdline *cl, void *data)
{
	struct cmd_show *r = res;
	if (!strcmp(r->what, "perf"))
		show_perf(cl);
	else if (!strcmp(r->what, "port"))
		show_gateway(cl, "port");
	else if (!strcmp(r->what, "lane"))
		show_gateway(cl, "lanes");
	else if (!strcmp(r->what, "client"))
		show_gateway(cl, "clients");
	else
		show_gateway(cl, "peers");
}

static void cmd_clear_parsed(void *res, struct cmdline *cl, void *data)
{
	base = last = sh->live;
	last_ns = now_ns();
	cmdline_printf(cl, "gw-perf counters cleared\n");
}

/* --- set --- */

struct cmd_set_num {
	cmdline_fixed_string_t set, what;
	uint64_t value;
};

static void cmd_set_num_parsed(void *res, struct cmdline *cl, void *data)
{
	struct cmd_set_num *r = res;
	struct opts *o = &sh->o;
	bool live_ok = !strcmp(r->what, "rate") || !strcmp(r->what, "burst");
	if (running() && !live_ok) {
		cmdline_printf(cl, "%s applies to the next start: stop first (rate and burst apply live)\n",
			       r->what);
		return;
	}
	if (!strcmp(r->what, "rate")) {
		__atomic_store_n(&o->rate, r->value, __ATOMIC_RELAXED);
	} else if (!strcmp(r->what, "burst") && r->value >= 1 && r->value <= 4096) {
		__atomic_store_n(&o->burst, (unsigned)r->value, __ATOMIC_RELAXED);
	} else if (!strcmp(r->what, "size") && r->value >= 24 && r->value <= 65536) {
		o->size = (unsigned)r->value;
	} else if (!strcmp(r->what, "writers") && r->value >= 1 && r->value <= 1u << 20) {
		o->writers = (unsigned)r->value;
	} else if (!strcmp(r->what, "node") && r->value >= 1 && r->value < 65536) {
		o->node = (unsigned)r->value;
	} else if (!strcmp(r->what, "timeout") && r->value >= 1 && r->value < 1u << 31) {
		o->timeout_ms = (int)r->value;
	} else {
		cmdline_printf(cl, "bad value %" PRIu64 " for %s (burst 1..4096, size 24..65536, "
				   "writers 1..1048576, node 1..65535, timeout ms > 0)\n", r->value, r->what);
		return;
	}
	cmdline_printf(cl, "%s = %" PRIu64 "\n", r->what, r->value);
}

struct cmd_set_str {
	cmdline_fixed_string_t set, what, value;
};

static void cmd_set_mode_parsed(void *res, struct cmdline *cl, void *data)
{
	struct cmd_set_str *r = res;
	if (running()) {
		cmdline_printf(cl, "stop first\n");
		return;
	}
	for (int i = 0; i < PERF_MODES; i++)
		if (!strcmp(r->value, perf_mode_names[i]))
			mode = (enum perf_mode)i;
	cmdline_printf(cl, "mode = %s\n", perf_mode_names[mode]);
}

static void cmd_set_endpoint_parsed(void *res, struct cmdline *cl, void *data)
{
	struct cmd_set_str *r = res;
	if (running()) {
		cmdline_printf(cl, "stop first\n");
		return;
	}
	if (strlen(r->value) >= sizeof(endpoint)) {
		cmdline_printf(cl, "endpoint names are at most %zu characters\n", sizeof(endpoint) - 1);
		return;
	}
	memcpy(endpoint, r->value, strlen(r->value) + 1);
	cmdline_printf(cl, "endpoint = %s\n", endpoint);
}

/* --- the grammar --- */

#define WORD(name, strct, field, words) \
	static cmdline_parse_token_string_t name = TOKEN_STRING_INITIALIZER(strct, field, words)

WORD(tok_start, struct cmd_word, w, "start");
WORD(tok_stop, struct cmd_word, w, "stop");
WORD(tok_quit, struct cmd_word, w, "quit");
WORD(tok_help, struct cmd_word, w, "help");
WORD(tok_show, struct cmd_show, show, "show");
WORD(tok_show_what, struct cmd_show, what, "perf#port#lane#client#peer");
WORD(tok_show_stats, struct cmd_show, stats, "stats");
WORD(tok_clear, struct cmd_show, show, "clear");
WORD(tok_set_n, struct cmd_set_num, set, "set");
WORD(tok_set_n_what, struct cmd_set_num, what, "rate#size#writers#burst#node#timeout");
static cmdline_parse_token_num_t tok_set_n_value =
	TOKEN_NUM_INITIALIZER(struct cmd_set_num, value, RTE_UINT64);
WORD(tok_set_s, struct cmd_set_str, set, "set");
WORD(tok_set_mode, struct cmd_set_str, what, "mode");
WORD(tok_set_mode_value, struct cmd_set_str, value, "tx#rx#echo#call");
WORD(tok_set_ep, struct cmd_set_str, what, "endpoint");
WORD(tok_set_ep_value, struct cmd_set_str, value, NULL);

static cmdline_parse_inst_t cmd_start = {
	.f = cmd_start_parsed, .help_str = "start: run the current mode until stop",
	.tokens = { (void *)&tok_start, NULL },
};
static cmdline_parse_inst_t cmd_stop = {
	.f = cmd_stop_parsed, .help_str = "stop: end the run, print its summary",
	.tokens = { (void *)&tok_stop, NULL },
};
static cmdline_parse_inst_t cmd_quit = {
	.f = cmd_quit_parsed, .help_str = "quit", .tokens = { (void *)&tok_quit, NULL },
};
/* testpmd users type help first. */
static void cmd_help_parsed(void *res, struct cmdline *cl, void *data);
static cmdline_parse_inst_t cmd_help = {
	.f = cmd_help_parsed, .help_str = "help: this list ('?' or TAB completes a command)",
	.tokens = { (void *)&tok_help, NULL },
};
static cmdline_parse_inst_t cmd_show = {
	.f = cmd_show_parsed,
	.help_str = "show perf|port|lane|client|peer stats: this client's counters or the gateway's",
	.tokens = { (void *)&tok_show, (void *)&tok_show_what, (void *)&tok_show_stats, NULL },
};
static cmdline_parse_inst_t cmd_clear = {
	.f = cmd_clear_parsed, .help_str = "clear stats: zero this client's counters",
	.tokens = { (void *)&tok_clear, (void *)&tok_show_stats, NULL },
};
static cmdline_parse_inst_t cmd_set_num = {
	.f = cmd_set_num_parsed,
	.help_str = "set rate|size|writers|burst|node|timeout N (rate 0 = unpaced; rate, burst live)",
	.tokens = { (void *)&tok_set_n, (void *)&tok_set_n_what, (void *)&tok_set_n_value, NULL },
};
static cmdline_parse_inst_t cmd_set_mode = {
	.f = cmd_set_mode_parsed, .help_str = "set mode tx|rx|echo|call",
	.tokens = { (void *)&tok_set_s, (void *)&tok_set_mode, (void *)&tok_set_mode_value, NULL },
};
static cmdline_parse_inst_t cmd_set_endpoint = {
	.f = cmd_set_endpoint_parsed, .help_str = "set endpoint NAME (tx/call target, rx/echo name)",
	.tokens = { (void *)&tok_set_s, (void *)&tok_set_ep, (void *)&tok_set_ep_value, NULL },
};

static cmdline_parse_ctx_t ctx[] = {
	&cmd_start, &cmd_stop, &cmd_show, &cmd_clear, &cmd_set_num, &cmd_set_mode,
	&cmd_set_endpoint, &cmd_help, &cmd_quit, NULL,
};

static void cmd_help_parsed(void *res, struct cmdline *cl, void *data)
{
	cmdline_printf(cl, "commands:\n");
	for (cmdline_parse_ctx_t *c = ctx; *c; c++)
		cmdline_printf(cl, "  %s\n", (*c)->help_str);
}

int perf_cli(struct opts *o)
{
	/* The gateway's name, for its telemetry; and a check that it is there. */
	struct gw_client *c;
	int rc = gw_connect(o->sock, &c);
	if (rc < 0) {
		fprintf(stderr, "gw-perf: %s: %s (is gridwired running?)\n", o->sock, gw_strerror(rc));
		return 1;
	}
	struct gw_node_info nodes[64];
	int n = gw_nodes(c, nodes, 64);
	for (int i = 0; i < n && i < 64; i++)
		if (nodes[i].self)
			snprintf(gateway_name, sizeof(gateway_name), "%s", nodes[i].name);
	gw_close(c);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	sh->o = *o;
	if (o->endpoint)
		snprintf(endpoint, sizeof(endpoint), "%s", o->endpoint);
	if (!sh->o.node)
		sh->o.node = 2;
	printf("gw-perf interactive on gateway %s (%s); 'help' lists the commands\n", gateway_name,
	       o->sock);
	fflush(stdout);
	struct cmdline *cl = cmdline_stdin_new(ctx, "gw-perf> ");
	if (!cl)
		return 1;
	cmdline_interact(cl);
	cmdline_stdin_exit(cl);
	if (running()) {
		sh->live.stop = 1;
		waitpid(run_pid, NULL, 0);
	}
	return 0;
}
