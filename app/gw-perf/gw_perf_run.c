/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-perf's runs: each mode (tx, rx, echo, call, probe) as a function of
 * its options, with what they share: message stamps, latency histograms,
 * ledgers, the live counters. main.c (the command line) and gw_perf_cli.c
 * (the prompt) start them through perf_run; the modes are described at
 * the top of main.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gridwire.h"
#include "gw_perf.h"


#define PERF_MAGIC 0x66726570u /* "perf" */

struct perf_hdr {
	uint32_t magic;
	uint32_t writer;
	uint64_t seq;
	uint64_t sent_ns;
};

#define PERF_MAX_EPS 16

/* Each counter has one writer (the run); readers only look: no locked add. */
#define COUNT(field, n) \
	__atomic_store_n(&live->field, __atomic_load_n(&live->field, __ATOMIC_RELAXED) + (n), \
			 __ATOMIC_RELAXED)

struct perf_live *live = &(struct perf_live){ 0 };


static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "gw-perf: %s: %s\n", what, strerror(-err));
	return 1;
}

/*
 * Latencies in microseconds: 64 linear steps per power of two, so a
 * percentile is within 1.6 % of the true value, in 20 KB whatever the
 * count. The decades are the buckets of the reference thread's tables.
 */
#define LAT_SUB 64
#define LAT_BUCKETS (LAT_SUB * 40)
static const uint64_t lat_edges_us[] = { 100, 1000, 10000, 100000, 1000000 };
#define LAT_DECADES (sizeof(lat_edges_us) / sizeof(lat_edges_us[0]) + 1)

struct lat_hist {
	uint64_t n, min_us, max_us;
	uint64_t decade[LAT_DECADES];
	uint64_t b[LAT_BUCKETS];
};

static unsigned lat_index(uint64_t us)
{
	if (us < LAT_SUB)
		return (unsigned)us;
	unsigned e = 63 - (unsigned)__builtin_clzll(us);
	unsigned i = (e - 5) * LAT_SUB + (unsigned)((us >> (e - 6)) & (LAT_SUB - 1));
	return i < LAT_BUCKETS ? i : LAT_BUCKETS - 1;
}

static uint64_t lat_value(unsigned i)
{
	if (i < LAT_SUB)
		return i;
	return (uint64_t)(LAT_SUB + i % LAT_SUB) << (i / LAT_SUB - 1);
}

static void lat_add(struct lat_hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000;
	if (!h->n || us < h->min_us)
		h->min_us = us;
	if (us > h->max_us)
		h->max_us = us;
	h->n++;
	h->b[lat_index(us)]++;
	unsigned d = 0;
	while (d < LAT_DECADES - 1 && us > lat_edges_us[d])
		d++;
	h->decade[d]++;
}

/* A Poisson process of `rate` per second: the nanoseconds to its next event. */
static uint64_t poisson_gap_ns(uint64_t rate)
{
	static uint64_t x = 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	double u = (double)(x >> 11) / (double)(1ull << 53); /* [0, 1) */
	return (uint64_t)(-log1p(-u) * 1e9 / (double)rate);
}

static void sleep_until(uint64_t due, uint64_t t)
{
	nanosleep(&(struct timespec){ .tv_sec = (time_t)((due - t) / 1000000000ull),
				      .tv_nsec = (long)((due - t) % 1000000000ull) },
		  NULL);
}

static uint64_t lat_pct(const struct lat_hist *h, double p)
{
	uint64_t want = (uint64_t)((double)h->n * p), seen = 0;
	for (unsigned i = 0; i < LAT_BUCKETS; i++)
		if ((seen += h->b[i]) > want)
			return lat_value(i);
	return h->max_us;
}

/*
 * The timeline: 100 ms bins, each with a histogram of a quarter of the
 * precision above (four buckets a power of two: p99 within 19 %).
 */
#define TL_BIN_NS 100000000ull
#define TL_BUCKETS (LAT_BUCKETS / 16)
struct tl_bin {
	uint32_t n, max_us;
	uint32_t b[TL_BUCKETS];
};
struct timeline {
	uint64_t first; /* bin number of bins[0] */
	size_t nbins;
	struct tl_bin *bins;
};

static void tl_add(struct timeline *t, uint64_t at_ns, uint64_t lat_ns)
{
	uint64_t bin = at_ns / TL_BIN_NS;
	if (!t->nbins)
		t->first = bin;
	if (bin < t->first)
		bin = t->first; /* a stamp a little before the first one */
	size_t i = (size_t)(bin - t->first);
	if (i >= t->nbins) {
		size_t n = i + 1 > 2 * t->nbins ? i + 1 : 2 * t->nbins;
		struct tl_bin *b = realloc(t->bins, n * sizeof(*b));
		if (!b)
			return; /* the timeline stops; the run goes on */
		memset(b + t->nbins, 0, (n - t->nbins) * sizeof(*b));
		t->bins = b;
		t->nbins = n;
	}
	struct tl_bin *b = &t->bins[i];
	uint64_t us = lat_ns / 1000;
	b->n++;
	b->max_us = us > b->max_us ? (uint32_t)(us > UINT32_MAX ? UINT32_MAX : us) : b->max_us;
	b->b[lat_index(us) / 16]++;
}

static void tl_write(const struct timeline *t, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "gw-perf: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "t_ms,msgs,p99_us,max_us\n");
	size_t last = t->nbins;
	while (last && !t->bins[last - 1].n)
		last--;
	for (size_t i = 0; i < last; i++) {
		const struct tl_bin *b = &t->bins[i];
		uint64_t want = b->n - b->n / 100, seen = 0, p99 = 0;
		for (unsigned k = 0; k < TL_BUCKETS && b->n; k++)
			if ((seen += b->b[k]) >= want) {
				p99 = lat_value(k * 16 + 15);
				break;
			}
		fprintf(f, "%" PRIu64 ",%u,%" PRIu64 ",%u\n", (uint64_t)((t->first + i) * (TL_BIN_NS / 1000000)),
			b->n, p99 < b->max_us ? p99 : b->max_us, b->max_us);
	}
	fclose(f);
}

/* ,"lat_us":{...},"lat_hist":{...} for the JSON line. */
static void lat_print(const struct lat_hist *h)
{
	printf(",\"lat_us\":{\"min\":%" PRIu64 ",\"p50\":%" PRIu64 ",\"p99\":%" PRIu64
	       ",\"p999\":%" PRIu64 ",\"max\":%" PRIu64 "},\"lat_hist\":{\"le_100us\":%" PRIu64 ",\"le_1ms\":%" PRIu64
	       ",\"le_10ms\":%" PRIu64 ",\"le_100ms\":%" PRIu64 ",\"le_1s\":%" PRIu64
	       ",\"gt_1s\":%" PRIu64 "}",
	       h->min_us, lat_pct(h, 0.5), lat_pct(h, 0.99), lat_pct(h, 0.999), h->max_us,
	       h->decade[0], h->decade[1],
	       h->decade[2], h->decade[3], h->decade[4], h->decade[5]);
}

/*
 * One bit per message, at writer * msgs + seq: what the sender was told
 * failed, or what the receiver got. A checker ORs the two to see that every
 * message was either delivered or reported.
 */
struct ledger {
	uint8_t *bits;
	uint64_t n, msgs;
};

static void ledger_init(struct ledger *l, uint64_t writers, uint64_t msgs)
{
	l->n = writers * msgs;
	l->msgs = msgs;
	l->bits = calloc((l->n + 7) / 8, 1);
}

/* Set bit (writer, seq); returns its old value, or -1 when out of range. */
static int ledger_set(struct ledger *l, uint64_t writer, uint64_t seq)
{
	uint64_t i = writer * l->msgs + seq;
	if (seq >= l->msgs || i >= l->n)
		return -1;
	int old = (l->bits[i / 8] >> (i % 8)) & 1;
	l->bits[i / 8] |= (uint8_t)(1u << (i % 8));
	return old;
}

/* Written whole, then renamed: a reader that sees the file sees all of it. */
static void ledger_write(const struct ledger *l, const char *path)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.part", path);
	FILE *f = fopen(tmp, "wb");
	bool ok = f && fwrite(l->bits, 1, (l->n + 7) / 8, f) == (l->n + 7) / 8;
	ok = f && !fclose(f) && ok && !rename(tmp, path);
	if (!ok)
		fprintf(stderr, "gw-perf: cannot write %s\n", path);
}

/*
 * Has every one of the first n messages either arrived (ours) or been
 * reported to its sender (the sender's ledger at path, there once it
 * ended)? Then nothing more can come that the run waits for.
 */
static bool ledger_settled(const struct ledger *ours, const char *path, uint64_t n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	bool settled = n <= ours->n;
	for (uint64_t i = 0; settled && i < (n + 7) / 8; i++) {
		int c = fgetc(f);
		uint8_t want = i == n / 8 ? (uint8_t)((1u << (n % 8)) - 1) : 0xff;
		settled = c != EOF && ((ours->bits[i] | (uint8_t)c) & want) == want;
	}
	fclose(f);
	return settled;
}

/* Does writer w send (tx) or must it arrive (rx) in the urgent class? */
static bool urgent_writer(const struct opts *o, uint64_t w)
{
	return o->urgent_every && w % o->urgent_every == 0;
}

/*
 * The writers of each class, in the order the sends go round them: a
 * REJECT's msg_id counts the accepted sends of its class, so its k-th
 * send is writer of[k % n], message k / n.
 */
struct perf_classes {
	uint32_t *of[2];
	unsigned n[2];
};

static int classes_init(struct perf_classes *c, const struct opts *o)
{
	for (unsigned k = 0; k < 2; k++)
		if (!(c->of[k] = calloc(o->writers, sizeof(uint32_t))))
			return -ENOMEM;
	for (unsigned w = 0; w < o->writers; w++) {
		unsigned k = urgent_writer(o, o->id_base + w);
		c->of[k][c->n[k]++] = o->id_base + w;
	}
	return 0;
}

static bool deaf; /* tx --deaf-ms: reading nothing (yet) */

/* Count REJECTs waiting for us; they name sends that were not delivered
 * (a LOST says how many more were not, unnamed). */
static void drain_rejects(struct gw_client *cl, const struct perf_classes *c, struct ledger *l)
{
	if (deaf)
		return;
	struct gw_msg m;
	uint64_t n = 0;
	while (gw_recv(cl, &m, 0) == 0)
		if (m.kind == GW_MSG_REJECT) {
			if (n == 0)
				fprintf(stderr, "gw-perf: message %u rejected: %s\n", m.msg_id,
					strerror(-m.error));
			unsigned k = !!(m.msg_id & GW_MSG_ID_URGENT);
			uint32_t id = m.msg_id & ~GW_MSG_ID_URGENT;
			if (l->bits && c->n[k])
				ledger_set(l, c->of[k][id % c->n[k]], id / c->n[k]);
			n++;
		} else if (m.kind == GW_MSG_LOST) {
			uint64_t k;
			memcpy(&k, m.data, sizeof(k));
			fprintf(stderr, "gw-perf: %" PRIu64 " messages not delivered, their REJECTs "
				"dropped: we read nothing while they waited\n", k);
			COUNT(lost, k);
		}
	COUNT(rejected, n);
}

/* Take REJECTs for ms milliseconds, or (settled) until the gateway has
 * settled every send, whichever comes first. */
static void listen_rejects(struct gw_client *cl, const struct perf_classes *c, struct ledger *l,
			   unsigned ms, bool settled)
{
	for (uint64_t end = now_ns() + ms * 1000000ull;
	     (!settled || gw_unconfirmed(cl)) && now_ns() < end;) {
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
		drain_rejects(cl, c, l);
	}
}

/* --stats-period: one line on stderr every period, checked by the caller's loop. */
static void progress(const struct opts *o, const char *what, uint64_t done, uint64_t total,
		     uint64_t t0)
{
	static uint64_t last_ns, last_done;
	if (!o->stats_period)
		return;
	uint64_t t = now_ns();
	if (!last_ns)
		last_ns = t0;
	if (t - last_ns < o->stats_period * 1000000000ull)
		return;
	fprintf(stderr, "gw-perf: %" PRIu64 "/%" PRIu64 " %s (%.0f%%), %.0f %s/s\n", done, total,
		what, 100.0 * (double)done / (double)total,
		(double)(done - last_done) * 1e9 / (double)(t - last_ns), what);
	last_ns = t;
	last_done = done;
}

static int tx_one(struct gw_client *cl, const struct opts *o, uint16_t node, uint32_t ep,
		  const char *name, const void *buf, uint32_t writer, int timeout_ms)
{
	unsigned flags = urgent_writer(o, writer) ? GW_URGENT : 0;
	if (o->topic)
		return gw_publish(cl, name, buf, o->size, timeout_ms, flags);
	if (o->cast)
		return gw_cast_flags(cl, node, name, buf, o->size, timeout_ms, flags);
	if (flags)
		return gw_send_flags(cl, node, name, buf, o->size, timeout_ms, flags);
	return gw_send_id(cl, node, ep, buf, o->size, timeout_ms);
}

static int run_tx(const struct opts *o)
{
	struct gw_client *cl;
	int rc = gw_connect(o->sock, &cl);
	if (rc < 0)
		return fail(o->sock, rc);
	size_t max = gw_msg_max(cl) - (o->cast ? GW_CALL_HDR : 0);
	if (o->size < sizeof(struct perf_hdr) || o->size > max) {
		fprintf(stderr, "gw-perf: size %u out of range %zu..%zu\n", o->size,
			sizeof(struct perf_hdr), max);
		return 2;
	}
	uint32_t ep[PERF_MAX_EPS];
	uint16_t epnode[PERF_MAX_EPS];
	const char *epname[PERF_MAX_EPS];
	unsigned nep = 0;
	char names[512];
	snprintf(names, sizeof(names), "%s", o->endpoint);
	/* NAME, or NODE:NAME for one on another node than -n's */
	for (char *sv, *t = strtok_r(names, ",", &sv); t && nep < PERF_MAX_EPS; t = strtok_r(NULL, ",", &sv)) {
		char *colon = strchr(t, ':');
		epnode[nep] = (uint16_t)(colon ? strtoul(t, NULL, 0) : o->node);
		epname[nep] = colon ? colon + 1 : t;
		ep[nep] = gw_endpoint_id(epname[nep]);
		if (!epnode[nep] && !o->topic) {
			fprintf(stderr, "gw-perf: endpoint %s has no node: -n NODE, or NODE:%s\n", t, t);
			return 2;
		}
		nep++;
	}
	if (!nep || !o->writers) {
		fprintf(stderr, "gw-perf: tx needs a writer or more (-w N) and an endpoint name or more (-e NAME[,NAME...])\n");
		return 2;
	}
	/* The peer may still be coming up (bond mode 4 takes seconds). */
	for (unsigned k = 0; k < nep && !o->topic; k++)
		for (int t = 0; t < 300 && !gw_node_up(cl, epnode[k]); t++)
			nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	uint8_t *buf = calloc(1, o->size);
	uint64_t total = o->msgs ? o->msgs * o->writers * (o->each ? nep : 1) : UINT64_MAX;
	uint64_t refused = 0, i;
	struct ledger led = { 0 };
	if (o->ledger)
		ledger_init(&led, o->id_base + o->writers, o->msgs);
	struct perf_classes classes = { 0 };
	if (classes_init(&classes, o) < 0)
		return fail("memory", -ENOMEM);
	deaf = o->deaf_ms != 0;
	double c0 = cpu_s();
	uint64_t t0 = now_ns(), pace_t0 = t0, pace_i0 = 0, pace_rate = 0, pdue = t0;
	struct perf_stamp stamp = { 0 };
	bool waited = true;
	/* Message i is writer w's seq-th, to endpoint `to`: counted along, not
	 * divided out (three divisions were ~40 % of this loop's own time). */
	uint32_t w = 0;
	uint64_t seq = 0;
	unsigned to = 0;
	for (i = 0; i < total && !live->stop; i++) {
		struct perf_hdr h = { .magic = PERF_MAGIC, .writer = o->id_base + w, .seq = seq };
		uint64_t rate = __atomic_load_n(&o->rate, __ATOMIC_RELAXED);
		unsigned burst = __atomic_load_n(&o->burst, __ATOMIC_RELAXED);
		if (rate != pace_rate) { /* a new pace (interactive set rate) counts from now */
			pace_t0 = now_ns();
			pace_i0 = i;
			pace_rate = rate;
		}
		if (rate && o->poisson) {
			uint64_t t = perf_stamp(&stamp, waited);
			if (pdue > t) {
				sleep_until(pdue, t);
				waited = true;
			}
			pdue += poisson_gap_ns(rate);
		} else if (rate) {
			/* Sleep until this message (or its burst) is due; a late
			 * wake-up sends what fell due meanwhile back to back (as
			 * many writers waking together would), so the pace holds
			 * on average and no CPU goes to spinning. */
			uint64_t k = i - pace_i0;
			k -= burst > 1 ? k % burst : 0;
			uint64_t due = pace_t0 + k * 1000000000ull / rate;
			uint64_t t = perf_stamp(&stamp, waited);
			if (due > t) {
				sleep_until(due, t);
				waited = true;
			}
		}
		h.sent_ns = perf_stamp(&stamp, waited);
		waited = false;
		memcpy(buf, &h, sizeof(h));
		rc = tx_one(cl, o, epnode[to], ep[to], epname[to], buf, h.writer, 0);
		if (rc == -EAGAIN) {
			waited = true;
			COUNT(eagain, 1); /* backpressure: the channel is full, wait for room */
			drain_rejects(cl, &classes, &led);
			rc = tx_one(cl, o, epnode[to], ep[to], epname[to], buf, h.writer, 10000);
		}
		/* The node is down and we were told at once: try again later,
		 * up to a minute, so every writer's sequence stays whole. */
		for (int k = 0; rc == -EHOSTUNREACH && o->retry_unreachable && k < 6000; k++) {
			refused++;
			waited = true;
			nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
			drain_rejects(cl, &classes, &led);
			rc = tx_one(cl, o, epnode[to], ep[to], epname[to], buf, h.writer, 10000);
		}
		if ((i & 1023) == 1023) {
			drain_rejects(cl, &classes, &led);
			progress(o, "msgs", i + 1, total, t0);
		}
		if (rc == -EINTR && live->stop)
			break; /* --duration or ^C while waiting for room: the run's end */
		if (rc < 0)
			return fail("send", rc);
		COUNT(sent, 1);
		if (++to == nep)
			to = 0;
		else if (o->each)
			continue; /* the same message to the next endpoint */
		if (++w == o->writers) {
			w = 0;
			to = 0;
			seq++;
		}
	}
	total = i;
	rc = gw_flush(cl, 30000);
	uint64_t t1 = now_ns();
	if (rc < 0)
		return fail("flush", rc);
	if (deaf) {
		nanosleep(&(struct timespec){ .tv_sec = o->deaf_ms / 1000,
					      .tv_nsec = o->deaf_ms % 1000 * 1000000l }, NULL);
		deaf = false;
	}
	drain_rejects(cl, &classes, &led);
	listen_rejects(cl, &classes, &led, o->linger_ms, false);
	listen_rejects(cl, &classes, &led, o->settle_ms, true); /* --settle-ms */
	if (o->ledger)
		ledger_write(&led, o->ledger);
	free(led.bits);
	free(classes.of[0]);
	free(classes.of[1]);
	double el = (double)(t1 - t0) / 1e9;
	printf("{\"role\":\"tx\",\"sent\":%" PRIu64 ",\"rejected\":%" PRIu64
	       ",\"lost\":%" PRIu64 ",\"refused_retries\":%" PRIu64 ",\"eagain\":%" PRIu64
	       ",\"unconfirmed\":%" PRIu64 ",\"elapsed_s\":%.3f,\"msgs_per_s\":%.0f,\"cpu_s\":%.3f}\n",
	       total, live->rejected, live->lost, refused, live->eagain, gw_unconfirmed(cl), el,
	       (double)total / el, cpu_s() - c0);
	gw_close(cl);
	free(buf);
	return live->rejected || live->lost ? 1 : 0;
}

/* rx takes messages to its endpoint, its service or its topic. */
static int rx_attach(struct gw_client *cl, const struct opts *o)
{
	if (o->topic)
		return gw_subscribe(cl, o->endpoint,
				    o->latest_key ? GW_SUB_LATEST_KEY(o->latest_key) : GW_SUB_HOLD);
	return o->cast ? gw_service(cl, o->endpoint) : gw_register(cl, o->endpoint);
}

/*
 * rx: every writer's messages once, in order. A latest subscriber (--topic
 * --latest) may miss some (conflated: counted as skipped) and ends once
 * --expect writers have each had their last (-m MSGS - 1).
 */
static int run_rx(const struct opts *o)
{
	struct gw_client *cl;
	int rc = gw_connect(o->sock, &cl);
	if (rc < 0)
		return fail(o->sock, rc);
	rc = rx_attach(cl, o);
	if (rc < 0)
		return fail(o->endpoint, rc);
	/* Tell whoever started us that the endpoint exists. */
	fprintf(stderr, "gw-perf: rx ready on %s\n", o->endpoint);
	if (o->stall_s)
		sleep(o->stall_s);
	uint64_t *next = calloc(o->writers_max, sizeof(*next));
	uint64_t *last_at = calloc(o->writers_max, sizeof(*last_at));
	uint64_t got = 0, dups = 0, order = 0, reordered = 0, bad = 0, t0 = 0, t1 = 0, max_gap = 0;
	uint64_t wrong_class = 0, skipped = 0, finished = 0;
	bool latest = o->topic && o->latest_key;
	struct timeline tl = { 0 };
	uint64_t reconnects = 0;
	struct ledger led = { 0 };
	if (o->ledger)
		ledger_init(&led, o->writers_max, o->msgs);
	static struct lat_hist lat;
	struct perf_stamp stamp = { 0 };
	double c0 = cpu_s();
	while ((!o->expect || (latest ? finished : got) < o->expect) && !live->stop) {
		struct gw_msg m;
		rc = gw_recv(cl, &m, 0);
		bool waited = rc == -EAGAIN;
		/* Without a count, run until stopped: wake to look now and then. */
		if (waited && o->settled_by) {
			/* Look at the sender's ledger between short waits. */
			for (unsigned k = 0; k < o->idle_timeout * 5 && rc == -EAGAIN; k++) {
				if (ledger_settled(&led, o->settled_by, o->expect))
					break;
				rc = gw_recv(cl, &m, 200);
				rc = rc == -ETIMEDOUT ? -EAGAIN : rc;
			}
			if (rc == -EAGAIN && ledger_settled(&led, o->settled_by, o->expect)) {
				fprintf(stderr, "gw-perf: settled: %" PRIu64 " received, the rest "
						"reported to the sender\n", got);
				break;
			}
			rc = rc == -EAGAIN ? -ETIMEDOUT : rc;
		} else if (waited) {
			rc = gw_recv(cl, &m, o->expect ? (int)o->idle_timeout * 1000 : 200);
		}
		if ((rc == -ETIMEDOUT && !o->expect) || rc == -EINTR)
			continue; /* a signal: look at stop */
		if (rc == -ETIMEDOUT) {
			fprintf(stderr, "gw-perf: no message for %u s, %" PRIu64 " of %" PRIu64
				" received\n", o->idle_timeout, got, o->expect);
			break;
		}
		if (rc == -EPIPE && o->reconnect) {
			/* Everything the old gateway delivered has been read (recv
			 * drains the ring first); find the new one. */
			gw_close(cl);
			cl = NULL;
			for (unsigned k = 0; k < o->idle_timeout * 10 && !cl; k++) {
				nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
				if (gw_connect(o->sock, &cl) == 0 && rx_attach(cl, o) < 0) {
					gw_close(cl);
					cl = NULL;
				}
			}
			if (!cl)
				return fail("reconnect", -ETIMEDOUT);
			fprintf(stderr, "gw-perf: reconnected to %s\n", o->sock);
			reconnects++;
			continue;
		}
		if (rc < 0)
			return fail("recv", rc);
		struct perf_hdr h;
		if (m.kind != (o->topic ? GW_MSG_PUBLISH : o->cast ? GW_MSG_CAST : GW_MSG_DATA) ||
		    m.len < sizeof(h)) {
			bad++;
			continue;
		}
		memcpy(&h, m.data, sizeof(h));
		if (h.magic != PERF_MAGIC || h.writer >= o->writers_max) {
			bad++;
			continue;
		}
		wrong_class += !(m.flags & GW_URGENT) != !urgent_writer(o, h.writer);
		t1 = perf_stamp(&stamp, waited);
		if (!t0)
			t0 = t1;
		/* Both ends read CLOCK_MONOTONIC of the same machine. */
		lat_add(&lat, t1 > h.sent_ns ? t1 - h.sent_ns : 0);
		if (o->timeline)
			tl_add(&tl, t1, t1 > h.sent_ns ? t1 - h.sent_ns : 0);
		if (last_at[h.writer] && t1 - last_at[h.writer] > max_gap && t1 > last_at[h.writer])
			max_gap = t1 - last_at[h.writer];
		last_at[h.writer] = t1;
		if (led.bits) {
			int old = ledger_set(&led, h.writer, h.seq);
			if (old < 0) {
				bad++;
				continue;
			}
			if (old) {
				dups++;
				continue;
			}
			if (h.seq < next[h.writer]) {
				reordered++; /* new, yet behind a later one: out of order */
				got++;
				continue;
			}
		} else if (h.seq < next[h.writer]) {
			dups++;
			continue;
		}
		if (h.seq > next[h.writer] && latest)
			skipped += h.seq - next[h.writer];
		else if (h.seq > next[h.writer])
			order++;
		finished += latest && h.seq + 1 == o->msgs;
		next[h.writer] = h.seq + 1;
		got++;
		COUNT(received, 1);
		if (o->delay_ms && (!o->delay_count || got <= o->delay_count))
			nanosleep(&(struct timespec){ .tv_nsec = (long)o->delay_ms * 1000000 }, NULL);
	}
	double el = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
	if (o->ledger)
		ledger_write(&led, o->ledger);
	if (o->timeline)
		tl_write(&tl, o->timeline);
	free(led.bits);
	free(tl.bins);
	free(last_at);
	printf("{\"role\":\"rx\",\"delivered\":%" PRIu64 ",\"duplicates\":%" PRIu64
	       ",\"order_violations\":%" PRIu64 ",\"reordered\":%" PRIu64 ",\"malformed\":%" PRIu64
	       ",\"reconnects\":%" PRIu64 ",\"elapsed_s\":%.3f,\"msgs_per_s\":%.0f,\"cpu_s\":%.3f"
	       ",\"max_gap_us\":%" PRIu64 ",\"wrong_class\":%" PRIu64 ",\"skipped\":%" PRIu64
	       ",\"finished\":%" PRIu64,
	       got, dups, order, reordered, bad, reconnects, el, el > 0 ? (double)got / el : 0.0,
	       cpu_s() - c0, max_gap / 1000, wrong_class, skipped, finished);
	lat_print(&lat);
	printf("}\n");
	gw_close(cl);
	free(next);
	return ((latest ? finished : got) == o->expect || !o->expect) && !dups && !order && !bad &&
			       !wrong_class
		       ? 0
		       : 1;
}

/* echo: every request answered with its own payload. */
static int run_echo(const struct opts *o)
{
	struct gw_client *cl;
	int rc = gw_connect(o->sock, &cl);
	if (rc < 0)
		return fail(o->sock, rc);
	rc = gw_service(cl, o->endpoint);
	if (rc < 0)
		return fail(o->endpoint, rc);
	fprintf(stderr, "gw-perf: echo ready on %s\n", o->endpoint);
	uint64_t other = 0;
	double c0 = cpu_s();
	while (!live->stop) {
		struct gw_msg m;
		rc = gw_recv(cl, &m, 200);
		if (rc == -ETIMEDOUT || rc == -EINTR)
			continue;
		if (rc < 0)
			return fail("recv", rc);
		if (m.kind != GW_MSG_REQUEST) {
			other++;
			continue;
		}
		COUNT(requests, 1);
		rc = gw_reply(cl, &m, m.data, m.len);
		if (rc < 0)
			return fail("reply", rc);
	}
	printf("{\"role\":\"echo\",\"requests\":%" PRIu64 ",\"other\":%" PRIu64 ",\"cpu_s\":%.3f}\n",
	       live->requests, other, cpu_s() - c0);
	gw_close(cl);
	return 0;
}

struct caller {
	uint32_t call_id;
	uint64_t seq, start_ns;
	bool busy;
};

/*
 * call: each caller keeps one call in flight. The slot bits of a call id
 * (GW_CALLS_MAX of them) find its caller; the echoed payload must be the
 * caller's own (writer, seq), or the reply went to the wrong call.
 */
static int run_call(const struct opts *o)
{
	struct gw_client *cl;
	int rc = gw_connect(o->sock, &cl);
	if (rc < 0)
		return fail(o->sock, rc);
	if (o->writers > GW_CALLS_MAX || o->size < sizeof(struct perf_hdr) ||
	    o->size > gw_msg_max(cl) - GW_CALL_HDR) {
		fprintf(stderr, "gw-perf: call needs -w 1..%u and -z %zu..%zu\n", GW_CALLS_MAX,
			sizeof(struct perf_hdr), gw_msg_max(cl) - GW_CALL_HDR);
		return 2;
	}
	for (int i = 0; i < 300 && !o->topic && !gw_node_up(cl, (uint16_t)o->node); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	uint64_t total = o->msgs ? o->msgs * o->writers : UINT64_MAX, started = 0, done = 0;
	uint64_t ok = 0, wrong = 0;
	uint64_t e_timeout = 0, e_down = 0, e_unreach = 0, e_noent = 0, e_remote = 0, e_other = 0;
	struct caller *callers = calloc(o->writers, sizeof(*callers));
	uint32_t *by_slot = calloc(GW_CALLS_MAX, sizeof(*by_slot));
	static struct lat_hist rtt;
	uint8_t *buf = calloc(1, o->size);
	if (!callers || !by_slot || !buf)
		return fail("memory", -ENOMEM);
	double c0 = cpu_s();
	uint64_t t0 = now_ns();
	while (done < total) {
		if (live->stop)
			total = started; /* only the calls in flight still end */
		/* Idle callers start their next call. */
		for (unsigned w = 0; w < o->writers && started < total; w++) {
			struct caller *c = &callers[w];
			if (c->busy || (o->msgs && c->seq >= o->msgs))
				continue;
			struct perf_hdr h = { .magic = PERF_MAGIC, .writer = w, .seq = c->seq };
			h.sent_ns = c->start_ns = now_ns();
			memcpy(buf, &h, sizeof(h));
			rc = gw_call_start_flags(cl, (uint16_t)o->node, o->endpoint, buf, o->size,
						 o->timeout_ms, urgent_writer(o, w) ? GW_URGENT : 0,
						 &c->call_id);
			if (rc == -EAGAIN)
				break; /* the channel is full: collect replies first */
			started++;
			if (rc < 0) {
				/* Refused at once (node down): an outcome like any other. */
				e_unreach += rc == -EHOSTUNREACH;
				e_other += rc != -EHOSTUNREACH;
				c->seq++;
				done++;
				if (rc == -EHOSTUNREACH && o->stop_on_down)
					total = started; /* only the calls in flight still end */
				continue;
			}
			c->busy = true;
			by_slot[c->call_id % GW_CALLS_MAX] = w;
		}
		struct gw_msg m;
		rc = gw_recv(cl, &m, started > done ? 1000 : 0);
		if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
			continue;
		if (rc < 0)
			return fail("recv", rc);
		if (m.kind != GW_MSG_REPLY)
			continue;
		struct caller *c = &callers[by_slot[m.call_id % GW_CALLS_MAX]];
		if (!c->busy || c->call_id != m.call_id) {
			wrong++;
			continue;
		}
		uint64_t t = now_ns();
		struct perf_hdr h;
		if (m.error == 0) {
			/* The reply comes back in the request's class. */
			if (m.len == o->size && (memcpy(&h, m.data, sizeof(h)), h.magic == PERF_MAGIC) &&
			    h.writer == (uint32_t)(c - callers) && h.seq == c->seq &&
			    !(m.flags & GW_URGENT) == !urgent_writer(o, h.writer)) {
				lat_add(&rtt, t - c->start_ns);
				ok++;
				COUNT(calls_ok, 1);
			} else {
				wrong++;
			}
		} else if (m.error == -ETIMEDOUT) {
			e_timeout++;
		} else if (m.error == -EHOSTDOWN) {
			e_down++;
		} else if (m.error == -EHOSTUNREACH) {
			e_unreach++;
		} else if (m.error == -ENOENT) {
			e_noent++;
		} else if (m.error == -EREMOTEIO) {
			e_remote++;
		} else {
			e_other++;
		}
		if (m.error)
			COUNT(calls_failed, 1);
		c->busy = false;
		c->seq++;
		done++;
		progress(o, "calls", done, total, t0);
	}
	uint64_t t1 = now_ns();
	double el = (double)(t1 - t0) / 1e9;
	printf("{\"role\":\"call\",\"calls\":%" PRIu64 ",\"ok\":%" PRIu64 ",\"wrong\":%" PRIu64
	       ",\"timeout\":%" PRIu64 ",\"hostdown\":%" PRIu64 ",\"unreachable\":%" PRIu64
	       ",\"noservice\":%" PRIu64 ",\"remote\":%" PRIu64 ",\"other\":%" PRIu64
	       ",\"elapsed_s\":%.3f,\"calls_per_s\":%.0f,\"cpu_s\":%.3f",
	       total, ok, wrong, e_timeout, e_down, e_unreach, e_noent, e_remote, e_other, el,
	       (double)total / el, cpu_s() - c0);
	lat_print(&rtt);
	printf("}\n");
	gw_close(cl);
	free(callers);
	free(by_slot);
	free(buf);
	return ok + e_timeout + e_down + e_unreach + e_noent + e_remote + e_other == total && !wrong
		       ? 0 : 1;
}

/* probe: how late a sleeper wakes for the times tx --poisson would send at. */
static int run_probe(const struct opts *o)
{
	static struct lat_hist late;
	uint64_t t0 = now_ns(), due = t0;
	while (!live->stop) {
		due += o->poisson ? poisson_gap_ns(o->rate) : 1000000000ull / o->rate;
		uint64_t t = now_ns();
		if (due > t)
			sleep_until(due, t);
		t = now_ns();
		lat_add(&late, t > due ? t - due : 0);
	}
	printf("{\"role\":\"probe\",\"wakes\":%" PRIu64 ",\"elapsed_s\":%.3f", late.n,
	       (double)(now_ns() - t0) / 1e9);
	lat_print(&late);
	printf("}\n");
	return 0;
}


const char *const perf_mode_names[PERF_MODES] = { "tx", "rx", "echo", "call", "probe" };

int perf_run(enum perf_mode mode, const struct opts *o)
{
	static int (*const run[PERF_MODES])(const struct opts *) = {
		run_tx, run_rx, run_echo, run_call, run_probe,
	};
	return run[mode](o);
}
