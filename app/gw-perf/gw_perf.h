/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-perf internals: the options of a run, the live counters a run
 * publishes as it goes, the runs (gw_perf_run.c) and the two front ends
 * that start them (main.c: command line; gw_perf_cli.c: the interactive
 * prompt, testpmd style).
 */
#ifndef GW_PERF_H
#define GW_PERF_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct opts {
	const char *sock, *endpoint;
	unsigned node, writers, size, id_base, writers_max, idle_timeout, linger_ms, settle_ms, stall_s, delay_ms;
	unsigned deaf_ms; /* tx: read nothing for this long after the last send */
	uint64_t delay_count;
	const char *ledger; /* tx: rejected messages; rx: received ones (bitmaps) */
	const char *settled_by; /* rx: the sender's ledger; done once it and ours cover --expect */
	const char *timeline; /* rx: messages and latency per 100 ms, as CSV */
	bool retry_unreachable, reconnect, cast, stop_on_down;
	/* tx, call: writer w sends with GW_URGENT when w % urgent_every == 0
	 * (1: every writer, 0: none); rx: expects exactly that */
	unsigned urgent_every;
	bool poisson; /* tx, probe: --rate as the mean of Poisson arrivals */
	bool topic;   /* tx: publish to the topic -e names; rx: subscribe to it */
	bool each;    /* tx: every message to every endpoint (a fan-out by sends) */
	unsigned latest_key; /* rx --topic --latest[=N]: a latest subscriber, key N bytes */
	uint64_t msgs, expect; /* 0: until stopped */
	uint64_t rate;         /* msg/s, 0 = unpaced; read live by tx */
	unsigned burst;        /* tx: messages sent back to back per pacing step; read live */
	int timeout_ms;
	unsigned stats_period;
	unsigned duration_s; /* end the run after this long (0: by count, or SIGINT) */
};

/* What a run has done so far; a run ends early when stop is set. */
struct perf_live {
	volatile int stop;
	uint64_t sent, eagain, rejected, lost, received, requests, calls_ok, calls_failed;
};
extern struct perf_live *live;

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Message stamps. A clock read costs about as much as a send here (~30 ns,
 * kvm-clock), so messages handled back to back share one reading, taken
 * afresh every PERF_STAMP_EVERY messages and after anything that may have
 * waited: a stamp is then at most a few microseconds early or late.
 */
#define PERF_STAMP_EVERY 8
struct perf_stamp {
	uint64_t ns;
	unsigned uses;
};

static inline uint64_t perf_stamp(struct perf_stamp *s, bool waited)
{
	if (waited || s->uses % PERF_STAMP_EVERY == 0) {
		s->ns = now_ns();
		s->uses = 0;
	}
	s->uses++;
	return s->ns;
}

enum perf_mode { PERF_TX, PERF_RX, PERF_ECHO, PERF_CALL, PERF_PROBE, PERF_MODES };
extern const char *const perf_mode_names[PERF_MODES];

/* One run; prints its JSON summary on stdout. 0, 1 (verification failed) or 2. */
int perf_run(enum perf_mode mode, const struct opts *o);

/* The interactive prompt (gw-perf interactive); o holds the first settings. */
int perf_cli(struct opts *o);

#endif
