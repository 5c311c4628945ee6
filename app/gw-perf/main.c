/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-perf: load generator and verifying sink on libgridwire.
 *
 *   gw-perf tx -s SOCK -n NODE -e EP[,EP...] [-w WRITERS] [-m MSGS] [-z SIZE]
 *              [--id-base N] [--rate MSGS_PER_S] [--linger-ms MS] [--settle-ms MS]
 *              [--retry-unreachable] [--ledger FILE] [--deaf-ms MS]
 *   gw-perf rx -s SOCK -e ENDPOINT --expect N [--writers-max N] [--idle-timeout S]
 *              [--stall-s S] [--delay-ms MS [--delay-count N]] [--reconnect]
 *              [-m MSGS --ledger FILE] [--timeline FILE]
 *   gw-perf echo -s SOCK -e SERVICE
 *   gw-perf call -s SOCK -n NODE -e SERVICE [-w CALLERS] [-m CALLS] [-z SIZE]
 *                [--timeout-ms MS] [--stop-on-down]
 *   gw-perf probe --rate N [--poisson] --duration S
 *
 * --urgent: tx and call send with GW_URGENT, and rx checks that every
 * message came in that class (and that no other did: wrong_class);
 * --urgent-every K: only writers w with w % K == 0 do (and rx checks
 * each writer's class), so one sender has streams of both classes.
 * --poisson: tx sends at the times of a Poisson process of mean --rate.
 * probe: no gateway; sleeps to the times tx --poisson would send at and
 * reports how late it woke, the CPU scheduler's share of any latency
 * measured beside it.
 *
 * tx -e takes NODE:NAME for an endpoint on another node than -n's, and
 * --each sends every message to every endpoint listed (a fan-out done by
 * sends, to compare with a topic's).
 * tx --cast and rx --service do the same with casts to a service; tx
 * --topic publishes to topic EP (no node) and rx --topic subscribes to it,
 * with --latest[=KEY] as a latest subscriber (key: the first KEY bytes,
 * 8 by default: the magic and the writer), which may skip messages (counted)
 * and ends once --expect writers have each had their last (-m MSGS).
 * echo answers every request with its own payload until SIGINT/SIGTERM.
 * call: CALLERS logical callers (up to 4096), each with one call in flight,
 * MSGS calls each; every reply must carry its own call's payload. It
 * reports calls/s, round-trip percentiles and every failure by kind.
 * --stop-on-down ends a call run once its node is down, when the calls in
 * flight have ended. --duration S ends any run after S seconds (with -m 0,
 * a run by time; otherwise whichever comes first). --stats-period S prints a progress line every S
 * seconds (tx, call).
 *
 * tx: WRITERS logical senders take turns; each sends MSGS messages of SIZE
 * bytes carrying (writer id, sequence number), writer w to endpoint
 * w % (number of endpoints). REJECTs (messages not delivered) are counted;
 * --linger-ms keeps listening for late ones; --settle-ms waits up to MS
 * for the gateway to settle every send (unconfirmed: those it had not); --deaf-ms reads nothing from
 * the first send until MS after the last (a sender kept from reading: its
 * gateway drops the REJECTs it cannot hold and says how many: lost). rx: checks that every
 * writer's messages arrive exactly once and in order; --stall-s registers
 * and then reads nothing for S seconds (a stopped destination); --delay-ms
 * reads one message per MS milliseconds (a slow one), for the first N
 * messages if --delay-count is given. Both end
 * with one JSON line on stdout. --ledger writes a bitmap (bit writer * MSGS
 * + seq) of the messages rejected (tx) or received (rx), so a checker can
 * see that every message was delivered or reported; rx --settled-by TX
 * (the sender's ledger, which appears when the sender ends) ends the run as
 * soon as every one of the first --expect messages is in one of the two,
 * rather than waiting --idle-timeout for messages that were reported and
 * will never come; --retry-unreachable
 * resends a message refused because its node is down; --reconnect follows
 * a gateway that restarts. rx also reports the longest wait between two
 * messages of one writer (max_gap_us: a stream's stall), and --timeline
 * writes, per 100 ms of CLOCK_MONOTONIC, the messages received and their
 * p99 and max latency (t_ms,msgs,p99_us,max_us), to put beside events
 * timed on the same clock (a link cut).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gridwire.h"
#include "gw_perf.h"


static void on_signal(int sig)
{
	(void)sig;
	live->stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gw-perf tx -s SOCK -n NODE -e EP[,EP...] [-w WRITERS] [-m MSGS] [-z SIZE]\n"
		   "                 [--id-base N] [--rate MSGS_PER_S] [--linger-ms MS] [--settle-ms MS]\n"
		   "                 [--retry-unreachable] [--ledger FILE] [--deaf-ms MS]\n"
		   "       gw-perf rx -s SOCK -e ENDPOINT --expect N [--writers-max N]\n"
		   "                 [--idle-timeout S] [--stall-s S]\n"
		   "                 [--delay-ms MS [--delay-count N]] [--reconnect]\n"
		   "                 [-m MSGS --ledger FILE [--settled-by TX-LEDGER]] [--timeline FILE]\n"
		   "       gw-perf echo -s SOCK -e SERVICE\n"
		   "       gw-perf call -s SOCK -n NODE -e SERVICE [-w CALLERS] [-m CALLS] [-z SIZE]\n"
		   "                 [--timeout-ms MS] [--stop-on-down]\n"
		   "       gw-perf probe --rate N [--poisson] --duration S\n"
		   "       tx, call: --urgent sends with GW_URGENT (rx --urgent expects it),\n"
		   "                 --urgent-every K only writers w %% K == 0 (rx the same);\n"
		   "       tx: --poisson paces --rate as Poisson arrivals\n"
		   "       gw-perf interactive -s SOCK     a testpmd-like prompt: set, start, stop,\n"
		   "                                       show perf|port|lane|client|peer stats, help\n"
		   "       tx --cast / rx --service: casts to a service; tx, call: --stats-period S\n"
		   "       tx -e NODE:EP: an endpoint on another node; --each: every message to\n"
		   "                 every endpoint listed\n"
		   "       tx --topic: publish to topic EP (no -n); rx --topic [--latest[=KEY]]:\n"
		   "                 subscribe (hold, or latest: -m MSGS, ends when --expect writers\n"
		   "                 had their last)\n"
		   "       any mode: --duration S (with -m 0: run for S seconds)\n");
}

int main(int argc, char **argv)
{
	struct opts o = {
		.writers = 1, .msgs = 1000, .size = 225, .writers_max = 1u << 20, .idle_timeout = 10,
		.timeout_ms = 5000, .burst = 1,
	};
	int mode = -1;
	for (int i = 0; argc >= 2 && i < PERF_MODES; i++)
		if (!strcmp(argv[1], perf_mode_names[i]))
			mode = i;
	bool interactive = argc >= 2 && !strcmp(argv[1], "interactive");
	if (interactive)
		mode = PERF_TX;
	if (mode < 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : (strcmp(argv[1], "-h") && strcmp(argv[1], "--help")) * 2;
	}
	bool tx = mode == PERF_TX || mode == PERF_CALL;
	static const struct option lo[] = {
		{ "id-base", 1, NULL, 'b' }, { "rate", 1, NULL, 'r' }, { "expect", 1, NULL, 'x' },
		{ "writers-max", 1, NULL, 'W' }, { "idle-timeout", 1, NULL, 't' },
		{ "linger-ms", 1, NULL, 'l' }, { "stall-s", 1, NULL, 'S' },
		{ "settle-ms", 1, NULL, 'M' },
		{ "delay-ms", 1, NULL, 'd' }, { "delay-count", 1, NULL, 'D' },
		{ "ledger", 1, NULL, 'L' }, { "retry-unreachable", 0, NULL, 'U' },
		{ "reconnect", 0, NULL, 'R' }, { "cast", 0, NULL, 'C' }, { "service", 0, NULL, 'C' },
		{ "timeout-ms", 1, NULL, 'T' }, { "stop-on-down", 0, NULL, 'O' },
		{ "stats-period", 1, NULL, 'P' }, { "burst", 1, NULL, 'B' },
		{ "duration", 1, NULL, 'u' }, { "timeline", 1, NULL, 'Y' },
		{ "urgent", 0, NULL, 'G' }, { "urgent-every", 1, NULL, 'K' },
		{ "poisson", 0, NULL, 'p' }, { "deaf-ms", 1, NULL, 'F' }, { "topic", 0, NULL, 'o' },
		{ "latest", 2, NULL, 'a' }, { "each", 0, NULL, 'E' }, { "settled-by", 1, NULL, 'y' },
		{ 0 },
	};
	int c;
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:n:e:w:m:z:", lo, NULL)) != -1) {
		switch (c) {
		case 's': o.sock = optarg; break;
		case 'n': o.node = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'e': o.endpoint = optarg; break;
		case 'w': o.writers = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm': o.msgs = strtoull(optarg, NULL, 0); break;
		case 'z': o.size = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'b': o.id_base = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': o.rate = strtoull(optarg, NULL, 0); break;
		case 'x': o.expect = strtoull(optarg, NULL, 0); break;
		case 'W': o.writers_max = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': o.idle_timeout = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'l': o.linger_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'M': o.settle_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'F': o.deaf_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'S': o.stall_s = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': o.delay_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'D': o.delay_count = strtoull(optarg, NULL, 0); break;
		case 'L': o.ledger = optarg; break;
		case 'y': o.settled_by = optarg; break;
		case 'U': o.retry_unreachable = true; break;
		case 'R': o.reconnect = true; break;
		case 'C': o.cast = true; break;
		case 'O': o.stop_on_down = true; break;
		case 'T': o.timeout_ms = atoi(optarg); break;
		case 'P': o.stats_period = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'B': o.burst = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'u': o.duration_s = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'Y': o.timeline = optarg; break;
		case 'G': o.urgent_every = 1; break;
		case 'K': o.urgent_every = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'p': o.poisson = true; break;
		case 'o': o.topic = true; break;
		case 'E': o.each = true; break;
		case 'a': o.latest_key = optarg ? (unsigned)strtoul(optarg, NULL, 0) : 8; break;
		default: usage(stderr); return 2;
		}
	}
	if (interactive) {
		if (!o.sock) {
			fprintf(stderr, "gw-perf: interactive needs -s SOCK (the gateway's socket)\n");
			return 2;
		}
		return perf_cli(&o);
	}
	if (mode == PERF_PROBE && (!o.rate || !o.duration_s)) {
		fprintf(stderr, "gw-perf: probe needs --rate N and --duration S\n");
		return 2;
	}
	if (o.latest_key && (!o.topic || mode != PERF_RX || o.latest_key > 64 || !o.msgs)) {
		fprintf(stderr, "gw-perf: --latest[=1..64] is for rx --topic, with -m MSGS (each "
				"writer's count: it ends when --expect writers have had their last)\n");
		return 2;
	}
	if (o.settled_by && (mode != PERF_RX || !o.ledger || !o.expect)) {
		fprintf(stderr, "gw-perf: --settled-by is for rx, with --ledger and --expect\n");
		return 2;
	}
	if (o.each && (mode != PERF_TX || o.ledger || o.topic)) {
		fprintf(stderr, "gw-perf: --each is for tx sends, without --ledger\n");
		return 2;
	}
	if (mode != PERF_PROBE && (!o.sock || !o.endpoint || (tx && !o.writers) ||
	    (mode == PERF_CALL && !o.node) ||
	    (!tx && !o.writers_max) || (tx && o.id_base + o.writers > o.writers_max))) {
		fprintf(stderr, "gw-perf: missing or bad arguments: -s SOCK and -e ENDPOINT are required, "
				"tx and call also need -n NODE (tx: or -e NODE:EP)\n");
		return 2;
	}
	if (mode == PERF_CALL && o.timeout_ms <= 0) {
		fprintf(stderr, "gw-perf: --timeout-ms must be > 0\n");
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGALRM, on_signal);
	alarm(o.duration_s); /* the run stops as on SIGINT: summary and all */
	return perf_run(mode, &o);
}
