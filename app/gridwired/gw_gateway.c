/* SPDX-License-Identifier: BSD-3-Clause */
/* gridwired's assembly and loop: see gw_gateway.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "gw_gateway.h"

#define GW_CTL_POLL_NS (1000 * 1000ull)

/* --- the loop --- */

/* Wait until every other lcore has passed a quiescent state: nothing it was
 * doing before the call (a tx_burst on a member being closed) still runs. */
static void quiesce(void *gateway)
{
	struct gw_gateway *g = gateway;
	rte_rcu_qsbr_synchronize(g->qs, g->lc[0].qs_id);
}

/* A member taken down or brought back (telemetry /gridwire/member). */
static void port_req_poll(struct gw_gateway *g)
{
	struct gw_port_req *r = &g->port_req;
	uint64_t asked = __atomic_load_n(&r->asked, __ATOMIC_ACQUIRE);
	uint32_t seq = (uint32_t)(asked >> 32);
	if (seq == r->done)
		return;
	r->why[0] = '\0';
	r->rc = gw_port_member_set(&g->port, (unsigned)(asked & 0xffffffffu) >> 1, asked & 1,
				   quiesce, g, r->why, sizeof(r->why));
	__atomic_store_n(&r->done, seq, __ATOMIC_RELEASE);
}

/* The main lcore's own roles: peers, control, the operator's requests. */
static void main_roles(struct gw_gateway *g, uint64_t now)
{
	gw_peers_poll(&g->peers, &g->lc[0].txq, now);
	if (now - g->last_tick_ns >= g->cfg->hello_ms * 1000000ull) {
		g->last_tick_ns = now;
		gw_control_sample(&g->ctl);
		gw_port_watch(&g->port);
		if (g->node.auth) {
			uint64_t bytes = 0;
			for (unsigned i = 0; i < g->layout.n; i++)
				bytes += __atomic_load_n(&g->lc[i].st.tx_bytes, __ATOMIC_RELAXED);
			gw_keys_tick(&g->keys, now, bytes);
		}
	}
	if (now - g->last_ctl_ns >= GW_CTL_POLL_NS) {
		g->last_ctl_ns = now;
		gw_control_poll(&g->ctl);
		port_req_poll(g);
	}
}

/* One pass over the roles of an lcore, in the order a frame moves. */
static bool lcore_step(struct gw_lcore *lc, uint64_t now)
{
	bool work = false;
	if (lc->prx)
		work |= gw_port_rx_step(lc->prx, now);
	if (lc->rv)
		work |= gw_receiver_step(lc->rv, now);
	if (lc->e->main)
		main_roles(lc->g, now);
	if (lc->w)
		work |= gw_worker_step(lc->w, now);
	gw_txq_flush(&lc->txq, now);
	rte_rcu_qsbr_quiescent(lc->g->qs, lc->qs_id);
	return work;
}

static void lcore_pass(struct gw_lcore *lc)
{
	uint64_t now = gw_clock_ns();
	/* A pass that found work runs until this one starts (no idle wait
	 * between them): its time is busy time, with no clock read more. */
	if (lc->busy_since)
		__atomic_store_n(&lc->busy_ns, lc->busy_ns + (now - lc->busy_since), __ATOMIC_RELAXED);
	if (lcore_step(lc, now)) {
		lc->idle_polls = 0;
		lc->busy_since = now;
	} else {
		lc->busy_since = 0;
		gw_idle(lc->g->cfg, &lc->idle_polls);
	}
}

/* The lcore function of every lcore but the main one. */
static int lcore_main(void *arg)
{
	struct gw_lcore *lc = arg;
	rte_rcu_qsbr_thread_register(lc->g->qs, lc->qs_id);
	rte_rcu_qsbr_thread_online(lc->g->qs, lc->qs_id);
	while (!__atomic_load_n(&lc->g->node.stop, __ATOMIC_ACQUIRE))
		lcore_pass(lc);
	rte_rcu_qsbr_thread_offline(lc->g->qs, lc->qs_id);
	rte_rcu_qsbr_thread_unregister(lc->g->qs, lc->qs_id);
	return 0;
}

/* --- putting it together --- */

/* Where lcore entry i reaches worker k: a receiver's ACKs and REJECTs,
 * the main lcore's channel commands; calls when k runs there too. */
static int wire_proxies(struct gw_gateway *g, struct gw_lcore *lc, unsigned i)
{
	unsigned what = (lc->rv ? GW_PROXY_ACKS | GW_PROXY_REJECTS : 0) |
			(lc->e->main ? GW_PROXY_CMDS : 0);
	for (unsigned k = 0; k < g->layout.workers; k++) {
		struct gw_worker *w = &g->workers[k];
		if (gw_worker_proxy_init(&lc->proxies[k], w, i, lc->w == w, what) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int init_roles(struct gw_gateway *g, uint64_t auth_start)
{
	const struct gw_layout *l = &g->layout;
	int rc;
	g->workers = rte_zmalloc("gw_workers", sizeof(*g->workers) * l->workers, 64);
	g->receivers = rte_zmalloc("gw_receivers", sizeof(*g->receivers) * l->receivers, 64);
	g->prx = rte_zmalloc("gw_port_rx", sizeof(*g->prx) * l->receivers, 64);
	g->lc = rte_zmalloc("gw_lcores", sizeof(*g->lc) * l->n, 64);
	size_t qsz = rte_rcu_qsbr_get_memsize(l->n);
	g->qs = rte_zmalloc("gw_qsbr", qsz, RTE_CACHE_LINE_SIZE);
	if (!g->workers || !g->receivers || !g->prx || !g->lc || !g->qs ||
	    rte_rcu_qsbr_init(g->qs, l->n) < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < l->n; i++) {
		struct gw_lcore *lc = &g->lc[i];
		lc->g = g;
		lc->e = &l->e[i];
		lc->qs_id = i;
		gw_txq_init(&lc->txq, &g->node, &g->port.links, lc->e->txq, lc->e->txq_urgent,
			    &lc->st, auth_start);
		if (lc->e->worker >= 0)
			lc->w = &g->workers[lc->e->worker];
		if (lc->e->receiver >= 0) {
			lc->rv = &g->receivers[lc->e->receiver];
			lc->prx = &g->prx[lc->e->receiver];
		}
	}
	if ((rc = gw_peers_init(&g->peers, &g->node, &g->lc[0].st)) < 0)
		return rc;
	for (unsigned i = 0; i < l->n; i++) {
		struct gw_lcore *lc = &g->lc[i];
		if (!lc->w)
			continue;
		unsigned k = (unsigned)lc->e->worker;
		char name[32];
		snprintf(name, sizeof(name), "gw_loop%u", k);
		g->loops[k].ring = rte_ring_create(name, GW_LOOPQ, SOCKET_ID_ANY,
						   RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!g->loops[k].ring ||
		    (rc = gw_worker_init(lc->w, &g->node, &g->peers, (uint16_t)k, &lc->txq, &lc->st,
					 &g->loops[k])) < 0)
			return g->loops[k].ring ? rc : -ENOMEM;
		lc->w->topics = &g->ctl.topics.cur;
		lc->w->nworkers = l->workers;
	}
	/* Receivers and the control role reach workers through proxies. */
	for (unsigned i = 0; i < l->n; i++) {
		struct gw_lcore *lc = &g->lc[i];
		if ((lc->rv || lc->e->main) && (rc = wire_proxies(g, lc, i)) < 0)
			return rc;
		if (!lc->rv)
			continue;
		gw_receiver_init(lc->rv, (uint8_t)lc->e->receiver, &g->node, &g->peers, &g->ctl,
				 lc->proxies, l->workers, &lc->txq, &lc->st);
		if (!(lc->rv->to_ctl = gw_control_add_subs_ring(&g->ctl, lc->rv->id)))
			return -ENOMEM;
		g->peers.heard[g->peers.nheard++] = lc->rv->heard;
	}
	/* Worker k's frames for this node: delivered by receiver k mod R. */
	for (unsigned k = 0; k < l->workers; k++) {
		struct gw_receiver *rv = &g->receivers[k % l->receivers];
		rv->loops[rv->nloops++].lb = &g->loops[k];
	}
	for (unsigned i = 0; i < l->n; i++) {
		struct gw_lcore *lc = &g->lc[i];
		if (!lc->prx)
			continue;
		struct gw_port_rx *prx = lc->prx;
		if ((rc = gw_port_rx_init(prx, &g->node, lc->rv, &g->peers, &lc->st)) < 0)
			return rc;
		memcpy(prx->queues, lc->e->rxq, sizeof(prx->queues[0]) * lc->e->nrxq);
		prx->nqueues = lc->e->nrxq;
		prx->workers = lc->proxies;
		prx->nworkers = l->workers;
		prx->hello.st = &lc->st;
		if (lc->e->main)
			prx->hello.direct = &g->peers;
		else if (!(prx->hello.ring = gw_peers_add_ring(&g->peers, lc->rv->id)))
			return -ENOMEM;
		prx->nrecv = l->receivers;
	}
	/* Once every port RX is set up: the rings between the receivers' lcores. */
	for (unsigned i = 0; i < l->n; i++) {
		struct gw_lcore *lc = &g->lc[i];
		struct gw_port_rx *prx = lc->prx;
		for (unsigned r = 0; prx && r < l->receivers; r++) {
			if (r == lc->rv->id)
				continue;
			if (!(prx->handoff[r] = gw_receiver_add_handoff(&g->receivers[r], i)) ||
			    (g->node.auth &&
			     !(prx->auth_out[r] = gw_port_rx_add_auth_in(&g->prx[r], i))))
				return -ENOMEM;
		}
	}
	g->ctl.node = &g->node;
	g->ctl.peers = &g->peers;
	g->ctl.workers = g->lc[0].proxies;
	g->ctl.nworkers = l->workers;
	g->ctl.nrecv = l->receivers;
	g->ctl.st = &g->lc[0].st;
	g->ctl.qs = g->qs;
	g->ctl.qs_id = g->lc[0].qs_id;
	g->peers.on_change = gw_control_set_node_up;
	g->peers.on_restart = gw_control_peer_restarted;
	g->peers.ctx = &g->ctl;
	return 0;
}

static int launch(struct gw_gateway *g, char *err, size_t errlen)
{
	rte_rcu_qsbr_thread_register(g->qs, g->lc[0].qs_id);
	rte_rcu_qsbr_thread_online(g->qs, g->lc[0].qs_id);
	g->launched = true;
	for (unsigned i = 1; i < g->layout.n; i++) {
		int rc = rte_eal_remote_launch(lcore_main, &g->lc[i], g->lc[i].e->lcore_id);
		if (rc < 0) {
			snprintf(err, errlen, "cannot start lcore %u: %s", g->lc[i].e->lcore_id,
				 rte_strerror(-rc));
			__atomic_store_n(&g->node.stop, true, __ATOMIC_RELEASE);
			rte_eal_mp_wait_lcore();
			return rc;
		}
	}
	return 0;
}

int gw_gateway_init(struct gw_gateway *g, const struct gw_config *cfg, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->port_req.lock, NULL);
	g->cfg = cfg;
	g->ctl.listen_fd = g->ctl.epfd = -1;
	g->node.cfg = cfg;
	g->node.epoch = (uint32_t)rte_rand() | 1;
	g->node.payload_max = gw_config_frame_payload(cfg);
	unsigned lcores[GW_LCORES_MAX], n = 0, id;
	lcores[n++] = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(id)
		if (n < GW_LCORES_MAX)
			lcores[n++] = id;
	int rc = gw_layout_plan(&g->layout, cfg->workers, cfg->receivers, lcores, n, err, errlen);
	if (rc < 0)
		return rc;
	if (cfg->fault_drop_ppm || cfg->fault_dup_ppm || cfg->fault_corrupt_ppm ||
	    cfg->fault_reorder_ppm)
		GW_LOG(WARNING, "fault injection on: drop %u dup %u corrupt %u reorder %u ppm, seed %u",
		       cfg->fault_drop_ppm, cfg->fault_dup_ppm, cfg->fault_corrupt_ppm,
		       cfg->fault_reorder_ppm, cfg->fault_seed);
	if (cfg->auth_key_file[0]) {
		if ((rc = gw_keys_init(&g->keys, cfg, cfg->node_id, g->node.epoch, gw_clock_ns(), err,
				       errlen)) < 0)
			return rc;
		g->node.auth = &g->keys.store;
	}
	rc = gw_port_open(&g->port, cfg, (uint16_t)g->layout.nqueues, (uint16_t)g->layout.n, err,
			  errlen);
	if (rc < 0)
		return rc;
	g->node.pool = g->port.pool;
	g->node.links = &g->port.links;
	memcpy(g->node.self.mac, g->port.mac.addr_bytes, 6);
	g->node.self.ip = cfg->ip;
	g->node.self.port = cfg->udp_port;
	/* Auth counters start at the wall clock: a restarted gateway never
	 * reuses a nonce, and its peers' replay windows move on. */
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	uint64_t start = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	if ((rc = init_roles(g, start)) < 0) {
		snprintf(err, errlen, "cannot set up the lcores' roles: %s (give EAL more memory, -m)",
			 strerror(-rc));
		return rc;
	}
	if ((rc = gw_control_open(&g->ctl, err, errlen)) < 0)
		return rc;
	prctl(PR_SET_TIMERSLACK, 1000UL); /* make short sleeps short */
	GW_LOG(INFO, "lcore layout: %u worker(s), %u receiver(s), %u queue pair(s)",
	       g->layout.workers, g->layout.receivers, g->layout.n);
	for (unsigned i = 0; i < g->layout.n; i++) {
		char line[256];
		gw_layout_describe(&g->layout, i, line, sizeof(line));
		GW_LOG(INFO, "  %s", line);
	}
	if ((rc = launch(g, err, errlen)) < 0)
		return rc;
	char members[GW_CONFIG_MAX_MEMBERS * (GW_MEMBER_MAX + 2)] = "";
	for (unsigned i = 0, k = 0; i < cfg->nmembers; i++)
		k += (unsigned)snprintf(members + k, sizeof(members) - k, "%s%s", i ? ", " : "",
					cfg->members[i]);
	char mode[16] = "";
	if (g->port.bonded)
		snprintf(mode, sizeof(mode), "bond mode %u ", cfg->bond_mode);
	else if (g->port.parallel)
		snprintf(mode, sizeof(mode), "parallel ");
	GW_LOG(NOTICE, "node %u (%s) epoch %08x listening on %s, port: %s(%s), mtu %u, %s, %s%s",
	       cfg->node_id, cfg->node_name, g->node.epoch, cfg->socket_path, mode, members, cfg->mtu,
	       cfg->batch_max == 1 ? "batching off" : "batching on",
	       g->layout.n == 1 ? "one lcore" : "split lcores",
	       !g->node.auth			       ? ""
	       : cfg->auth_mode == GW_CONFIG_AUTH_ENCRYPT ? ", frames encrypted"
							  : ", frames authenticated");
	return 0;
}

/*
 * Work still owed at shutdown: frames not yet acknowledged, local frames
 * not yet delivered, REJECTs not yet sent. (A pass begun before the drain
 * is waited out by the grace period in gw_gateway_run.)
 */
static uint64_t pending_work(const struct gw_gateway *g)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < g->layout.receivers; i++) {
		n += gw_receiver_pending(&g->receivers[i]);
		for (unsigned k = 0; k < g->prx[i].nauth_in; k++)
			n += rte_ring_count(g->prx[i].auth_in[k]);
	}
	for (unsigned i = 0; i < g->layout.workers; i++)
		n += gw_worker_pending(&g->workers[i]);
	return n;
}

void gw_gateway_run(struct gw_gateway *g, volatile bool *stop, unsigned flush_ms)
{
	struct gw_lcore *lc = &g->lc[0];
	bool link = false;
	while (!*stop) {
		lcore_pass(lc);
		if (!link && gw_port_link_up(&g->port)) {
			link = true;
			GW_LOG(NOTICE, "link up");
		}
	}
	/* Shutdown: take nothing new, let in-flight frames be acked. */
	__atomic_store_n(&g->node.draining, true, __ATOMIC_RELEASE);
	uint64_t end = gw_clock_ns() + flush_ms * 1000000ull;
	GW_LOG(NOTICE, "stopping: flushing %" PRIu64 " frames and messages in flight",
	       pending_work(g));
	/* The counts are other lcores' and move under us: nothing is left
	 * only if nothing is still after every lcore has finished a pass. */
	while (gw_clock_ns() < end) {
		if (!pending_work(g)) {
			quiesce(g);
			if (!pending_work(g))
				break;
		}
		lcore_pass(lc);
	}
	__atomic_store_n(&g->node.stop, true, __ATOMIC_RELEASE);
	rte_eal_mp_wait_lcore();
	uint64_t left = pending_work(g), waiting = 0;
	for (unsigned i = 0; i < g->cfg->clients_max; i++) {
		const struct gw_chan *c = &g->ctl.clients[i].chan;
		if (g->ctl.clients[i].used && c->shm)
			for (unsigned k = 0; k < GW_CLASSES; k++)
				waiting += gw_chan_backlog(c, k);
	}
	if (left || waiting)
		GW_LOG(WARNING, "stopped with %" PRIu64 " frames or REJECTs undelivered and %" PRIu64
		       " messages not taken from clients",
		       left, waiting);
	else
		GW_LOG(NOTICE, "stopped: everything sent was acknowledged");
}

/* --- counters --- */

void gw_gateway_totals(const struct gw_gateway *g, struct gw_counters *s, uint64_t *frames,
		       uint64_t *full_stops)
{
	memset(s, 0, sizeof(*s));
	*frames = *full_stops = 0;
	for (unsigned i = 0; g->lc && i < g->layout.n; i++)
		gw_counters_add(s, &g->lc[i].st);
	for (unsigned i = 0; g->workers && i < g->layout.workers; i++) {
		for (unsigned c = 0; c < GW_CLASSES; c++) {
			const struct gw_batcher *b = &g->workers[i].batch[c];
			*frames += b->frames;
			*full_stops += b->full_stops;
			s->pub_records += b->pub_records;
			s->pub_unsubscribed += b->pub_unsubscribed;
			s->pub_unreachable += b->pub_unreachable;
		}
	}
}

void gw_gateway_stats_json(const struct gw_gateway *g, char *buf, size_t len)
{
	struct gw_counters s;
	uint64_t frames, full_stops;
	gw_gateway_totals(g, &s, &frames, &full_stops);
	size_t n = (size_t)snprintf(buf, len, "{\"node\":%u,\"lanes\":%u,\"receivers\":%u",
				    g->cfg->node_id, g->layout.workers, g->layout.receivers);
	for (const struct gw_counter_name *c = gw_counter_names; c->name && n < len; c++)
		n += (size_t)snprintf(buf + n, len - n, ",\"%s\":%" PRIu64, c->name,
				      *(const uint64_t *)((const char *)&s + c->off));
	static const char *const faults[] = { "", "fault_dropped", "fault_duplicated",
					      "fault_corrupted", "fault_delayed" };
	for (int v = GW_FAULT_DROP; v <= GW_FAULT_DELAY && n < len; v++) {
		uint64_t count = 0;
		for (unsigned r = 0; g->prx && r < g->layout.receivers; r++)
			count += g->prx[r].fault.counts[v];
		n += (size_t)snprintf(buf + n, len - n, ",\"%s\":%" PRIu64, faults[v], count);
	}
	/* The members' packets as gw_port_watch last saw them. */
	for (unsigned i = 0; i < g->port.nmembers && n < len; i++) {
		const struct gw_member *m = &g->port.members[i];
		n += (size_t)snprintf(buf + n, len - n,
				      "%s{\"member\":\"%s\",\"rx_packets\":%" PRIu64
				      ",\"tx_packets\":%" PRIu64 ",\"silent\":%d}%s",
				      i ? "," : ",\"members\":[", m->spec, m->rx_packets,
				      m->tx_packets, m->silent, i + 1 == g->port.nmembers ? "]" : "");
	}
	if (g->node.auth && n < len)
		n += (size_t)snprintf(buf + n, len - n,
				      ",\"auth_loads\":%" PRIu64 ",\"auth_load_errors\":%" PRIu64
				      ",\"auth_rolls\":%" PRIu64 ",\"auth_retires\":%" PRIu64,
				      g->keys.loads, g->keys.load_errors, g->keys.rolls,
				      g->keys.retires);
	/* Congestion control, over every lane: its cuts and holds, the gaps
	 * its receivers saw, and the receivers' budget cuts. */
	uint64_t cc[6] = { 0 };
	for (unsigned k = 0; k < gw_peers_known(&g->peers); k++) {
		const struct gw_peer *p = &g->peers.peer[g->peers.known[k]];
		for (unsigned l = 0; l < GW_LANE_SLOTS; l++) {
			cc[0] += p->tx[l].cc.cuts_delay;
			cc[1] += p->tx[l].cc.cuts_loss;
			cc[2] += p->tx[l].cc.paced;
			cc[3] += p->tx[l].cc.cwnd_limited;
			cc[4] += p->rx[l].gaps;
		}
	}
	for (unsigned r = 0; g->receivers && r < g->layout.receivers; r++)
		cc[5] += g->receivers[r].budget.cuts;
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n,
				      ",\"cc_cuts_delay\":%" PRIu64 ",\"cc_cuts_loss\":%" PRIu64
				      ",\"cc_paced\":%" PRIu64 ",\"cc_cwnd_limited\":%" PRIu64
				      ",\"rx_gaps\":%" PRIu64 ",\"cc_budget_cuts\":%" PRIu64,
				      cc[0], cc[1], cc[2], cc[3], cc[4], cc[5]);
	if (n < len)
		snprintf(buf + n, len - n,
			 ",\"data_frames_tx\":%" PRIu64 ",\"msgs_per_frame\":%.2f"
			 ",\"batch_full_stops\":%" PRIu64 "}",
			 frames, frames ? (double)(s.msgs_out + s.msgs_local) / (double)frames : 0.0,
			 full_stops);
}

void gw_gateway_fini(struct gw_gateway *g)
{
	if (g->launched) {
		__atomic_store_n(&g->node.stop, true, __ATOMIC_RELEASE);
		rte_eal_mp_wait_lcore();
	}
	gw_control_close(&g->ctl);
	gw_peers_fini(&g->peers);
	for (unsigned i = 0; g->receivers && i < g->layout.receivers; i++)
		gw_receiver_fini(&g->receivers[i]);
	for (unsigned i = 0; g->prx && i < g->layout.receivers; i++)
		gw_port_rx_fini(&g->prx[i]);
	for (unsigned i = 0; g->workers && i < g->layout.workers; i++)
		gw_worker_fini(&g->workers[i]);
	for (unsigned i = 0; g->lc && i < g->layout.n; i++) {
		for (unsigned k = 0; k < GW_LANES_MAX; k++)
			gw_worker_proxy_fini(&g->lc[i].proxies[k]);
		gw_txq_fini(&g->lc[i].txq);
	}
	for (unsigned k = 0; k < GW_LANES_MAX; k++)
		rte_ring_free(g->loops[k].ring);
	gw_port_close(&g->port);
	rte_free(g->qs);
	rte_free(g->lc);
	rte_free(g->workers);
	rte_free(g->receivers);
	rte_free(g->prx);
}
