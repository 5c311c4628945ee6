/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stats over DPDK telemetry, under /gridwire/ (read them with gwctl or
 * dpdk-telemetry.py -f gw-NAME):
 *   /gridwire/stats            every counter, added up over the lcores
 *   /gridwire/port             port counters as testpmd shows them (as of
 *                              the last hello_ms), with pps and bps since
 *                              the previous call
 *   /gridwire/lanes            "node:lane" of each lane with traffic
 *   /gridwire/lane,NODE:LANE   one lane: frames, retransmissions, window...
 *   /gridwire/clients          channel ids of the connected clients
 *   /gridwire/client,ID        one client: messages taken, delivered, full
 *   /gridwire/peers            node ids heard from
 *   /gridwire/peer,ID          one peer: name, up, epoch, last heard
 *   /gridwire/lcores           the layout's entries, 0 = the main lcore
 *   /gridwire/lcore,I          one entry: its lcore, roles, queues, counters
 *   /gridwire/member,I,down|up an operator takes port member I down or
 *                              brings it back (done by the main lcore)
 *   /gridwire/fault,I|all,PPM  a drill: the [fault] stage drops PPM parts per
 *                              million of what member I (or every member)
 *                              brings in, while its link stays up
 *   /gridwire/key[,load,PATH]  the [auth] keys held, mode, roll and loads; or
 *                              a new secret loaded from PATH
 *
 * The callbacks run on the telemetry thread while the lcores work: they
 * only read counters and fields in gateway memory, never a client's shared
 * memory (which may be unmapped under them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "gw_gateway.h"

static struct gw_gateway *gw;

static int cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct gw_counters s;
	uint64_t frames, full_stops;
	gw_gateway_totals(gw, &s, &frames, &full_stops);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "node", gw->cfg->node_id);
	for (const struct gw_counter_name *c = gw_counter_names; c->name; c++)
		rte_tel_data_add_dict_u64(d, c->name, *(const uint64_t *)((const char *)&s + c->off));
	rte_tel_data_add_dict_u64(d, "data_frames_tx", frames);
	rte_tel_data_add_dict_u64(d, "batch_full_stops", full_stops);
	return 0;
}

/* pps and bps since the previous /gridwire/port, as testpmd's show port stats. */
static int cmd_port(const char *cmd, const char *params, struct rte_tel_data *d)
{
	static struct rte_eth_stats prev;
	static uint64_t prev_ns;
	/* As the main lcore last read them (every hello_ms): asking the
	 * bond from here would walk members an operator may be closing. */
	struct rte_eth_stats st;
	gw_port_stats(&gw->port, &st);
	uint64_t now = gw_clock_ns(), dt = prev_ns ? now - prev_ns : 0;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "port", gw->port.port_id);
	rte_tel_data_add_dict_string(d, "kind", gw->port.parallel ? "parallel"
						: gw->port.bonded ? "bond" : "single");
	rte_tel_data_add_dict_u64(d, "rx_packets", st.ipackets);
	rte_tel_data_add_dict_u64(d, "rx_bytes", st.ibytes);
	rte_tel_data_add_dict_u64(d, "rx_missed", st.imissed);
	rte_tel_data_add_dict_u64(d, "rx_errors", st.ierrors);
	rte_tel_data_add_dict_u64(d, "rx_nombuf", st.rx_nombuf);
	rte_tel_data_add_dict_u64(d, "tx_packets", st.opackets);
	rte_tel_data_add_dict_u64(d, "tx_bytes", st.obytes);
	rte_tel_data_add_dict_u64(d, "tx_errors", st.oerrors);
	rte_tel_data_add_dict_u64(d, "interval_ms", dt / 1000000);
	uint64_t rate[4] = { 0 };
	if (dt) {
		rate[0] = (st.ipackets - prev.ipackets) * 1000000000ull / dt;
		rate[1] = (st.ibytes - prev.ibytes) * 8 * 1000000000ull / dt;
		rate[2] = (st.opackets - prev.opackets) * 1000000000ull / dt;
		rate[3] = (st.obytes - prev.obytes) * 8 * 1000000000ull / dt;
	}
	rte_tel_data_add_dict_u64(d, "rx_pps", rate[0]);
	rte_tel_data_add_dict_u64(d, "rx_bps", rate[1]);
	rte_tel_data_add_dict_u64(d, "tx_pps", rate[2]);
	rte_tel_data_add_dict_u64(d, "tx_bps", rate[3]);
	/* Members as the main lcore last saw them (gw_port_watch): a member
	 * being unplugged must not be asked for its stats from here. */
	for (unsigned i = 0; i < gw->port.nmembers; i++) {
		const struct gw_member *m = &gw->port.members[i];
		char key[32];
		snprintf(key, sizeof(key), "member%u", i);
		rte_tel_data_add_dict_string(d, key, m->spec);
		snprintf(key, sizeof(key), "member%u_up", i);
		rte_tel_data_add_dict_u64(d, key, __atomic_load_n(&m->up, __ATOMIC_RELAXED));
		snprintf(key, sizeof(key), "member%u_rx_packets", i);
		rte_tel_data_add_dict_u64(d, key, __atomic_load_n(&m->rx_packets, __ATOMIC_RELAXED));
		snprintf(key, sizeof(key), "member%u_tx_packets", i);
		rte_tel_data_add_dict_u64(d, key, __atomic_load_n(&m->tx_packets, __ATOMIC_RELAXED));
		/* Since its last frame in, to a heartbeat (hello_ms); and the
		 * parallel port's alarm: up, yet silent while another is not. */
		snprintf(key, sizeof(key), "member%u_quiet_ms", i);
		rte_tel_data_add_dict_u64(d, key, (uint64_t)__atomic_load_n(&m->quiet, __ATOMIC_RELAXED) *
							  gw->cfg->hello_ms);
		snprintf(key, sizeof(key), "member%u_in_service", i);
		rte_tel_data_add_dict_u64(d, key, __atomic_load_n(&m->in_service, __ATOMIC_RELAXED));
		snprintf(key, sizeof(key), "member%u_silent", i);
		rte_tel_data_add_dict_u64(d, key, __atomic_load_n(&m->silent, __ATOMIC_RELAXED));
	}
	prev = st;
	prev_ns = now;
	return 0;
}

static bool lane_used(const struct gw_peer *p, unsigned l)
{
	return p->tx[l].frames || p->rx[l].frames;
}

static int cmd_lanes(const char *cmd, const char *params, struct rte_tel_data *d)
{
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	unsigned known = gw_peers_known(&gw->peers);
	for (unsigned k = 0; k < known; k++)
		for (unsigned l = 0; l < GW_LANE_SLOTS; l++)
			if (lane_used(&gw->peers.peer[gw->peers.known[k]], l)) {
				char id[16];
				snprintf(id, sizeof(id), "%u:%u", gw->peers.known[k], gw_lane_of_slot(l));
				rte_tel_data_add_array_string(d, id);
			}
	return 0;
}

static int cmd_lane(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned node, lane;
	if (!params || sscanf(params, "%u:%u", &node, &lane) != 2 || node >= GW_MAX_NODES ||
	    lane > UINT16_MAX || !gw_lane_valid((uint16_t)lane) || !gw->peers.peer[node].lanes)
		return -EINVAL;
	unsigned l = gw_lane_slot((uint16_t)lane), w = lane & ~GW_LANE_URGENT;
	bool urgent = lane & GW_LANE_URGENT;
	const struct gw_peer *p = &gw->peers.peer[node];
	const struct gw_lane_tx *tx = &p->tx[l];
	const struct gw_lane_rx *rx = &p->rx[l];
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "peer", node);
	rte_tel_data_add_dict_u64(d, "lane", lane);
	rte_tel_data_add_dict_string(d, "class", urgent ? "urgent" : "bulk");
	rte_tel_data_add_dict_u64(d, "tx_frames", tx->frames);
	rte_tel_data_add_dict_u64(d, "tx_msgs", tx->msgs);
	rte_tel_data_add_dict_u64(d, "tx_retrans", tx->retrans);
	rte_tel_data_add_dict_u64(d, "tx_acks", tx->acks);
	rte_tel_data_add_dict_u64(d, "tx_bad_acks", tx->bad_acks);
	rte_tel_data_add_dict_u64(d, "tx_inflight", gw_lane_tx_inflight(tx));
	rte_tel_data_add_dict_u64(d, "window", tx->win);
	rte_tel_data_add_dict_u64(d, "srtt_us", tx->srtt_ns / 1000);
	/* srtt's samples by bucket, "rtt_us_le_16" .. "rtt_us_le_inf", and their sum. */
	for (unsigned b = 0; b < GW_LANE_RTT_BUCKETS; b++) {
		char key[32];
		if (b < GW_LANE_RTT_BUCKETS - 1)
			snprintf(key, sizeof(key), "rtt_us_le_%llu",
				 (GW_LANE_RTT_FIRST_NS << b) / 1000);
		else
			snprintf(key, sizeof(key), "rtt_us_le_inf");
		rte_tel_data_add_dict_u64(d, key, tx->rtt_hist[b]);
	}
	rte_tel_data_add_dict_u64(d, "rtt_sum_ns", tx->rtt_sum_ns);
	/* Congestion control ([cc]): its window and grant in bytes (grant 0:
	 * none), pacing rate, base round trip, why it held frames back, cuts. */
	const struct gw_cc *cc = &tx->cc;
	rte_tel_data_add_dict_string(d, "cc", cc->p.on ? "delay" : "off");
	rte_tel_data_add_dict_u64(d, "cc_inflight_bytes", tx->inflight_bytes);
	rte_tel_data_add_dict_u64(d, "cc_cwnd_bytes", cc->cwnd);
	rte_tel_data_add_dict_u64(d, "cc_grant_bytes", cc->grant == UINT64_MAX ? 0 : cc->grant);
	rte_tel_data_add_dict_u64(d, "cc_rate_bps", gw_cc_rate(cc) * 8);
	rte_tel_data_add_dict_u64(d, "cc_base_rtt_us", cc->base_ns == UINT64_MAX ? 0 : cc->base_ns / 1000);
	rte_tel_data_add_dict_u64(d, "cc_competing", cc->competing); /* loss alone cuts now */
	rte_tel_data_add_dict_u64(d, "cc_cuts_delay", cc->cuts_delay);
	rte_tel_data_add_dict_u64(d, "cc_cuts_loss", cc->cuts_loss);
	rte_tel_data_add_dict_u64(d, "cc_paced", cc->paced);
	rte_tel_data_add_dict_u64(d, "cc_cwnd_limited", cc->cwnd_limited);
	rte_tel_data_add_dict_u64(d, "rx_gaps", rx->gaps);
	rte_tel_data_add_dict_u64(d, "rx_frames", rx->frames);
	rte_tel_data_add_dict_u64(d, "rx_msgs", rx->msgs);
	rte_tel_data_add_dict_u64(d, "rx_dups", rx->dups);
	rte_tel_data_add_dict_u64(d, "rx_redundant", rx->redundant);
	rte_tel_data_add_dict_u64(d, "rx_beyond_window", rx->out_of_window);
	/* The receiver that owns it (-1: none yet). */
	rte_tel_data_add_dict_int(d, "receiver", (int)__atomic_load_n(&p->rx_owner[l], __ATOMIC_RELAXED) - 1);
	/* Messages per frame, for the frames of this lane's class its worker
	 * built (to every peer): 1, 2-3, 4-7, ... */
	if (w < gw->layout.workers) {
		static const char *const names[GW_HIST_BUCKETS] = {
			"frames_1_msg", "frames_2_3_msgs", "frames_4_7_msgs", "frames_8_15_msgs",
			"frames_16_31_msgs", "frames_32_63_msgs", "frames_64_msgs_up",
		};
		for (unsigned b = 0; b < GW_HIST_BUCKETS; b++)
			rte_tel_data_add_dict_u64(d, names[b], gw->workers[w].hist[urgent][b]);
	}
	return 0;
}

static int cmd_clients(const char *cmd, const char *params, struct rte_tel_data *d)
{
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	for (unsigned i = 0; i < gw->cfg->clients_max; i++) {
		const struct gw_client *cl = &gw->ctl.clients[i];
		if (cl->used && !cl->leaving && cl->chan.shm)
			rte_tel_data_add_array_int(d, cl->chan_id);
	}
	return 0;
}

static int cmd_client(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned id;
	uint16_t slot;
	if (!params || sscanf(params, "%u", &id) != 1 || id > UINT16_MAX ||
	    !(slot = __atomic_load_n(&gw->ctl.chan_slot[id], __ATOMIC_ACQUIRE)))
		return -EINVAL;
	const struct gw_client *cl = &gw->ctl.clients[slot - 1];
	if (cl->chan_id != id)
		return -EINVAL; /* left, and the slot given to another since */
	/* The published directory. Telemetry is no rte_rcu_qsbr reader, so the
	 * control role may be rewriting this copy: only the count can tear. */
	const struct gw_dir *dir = __atomic_load_n(&gw->ctl.dir.cur, __ATOMIC_ACQUIRE);
	unsigned eps = 0;
	for (unsigned i = 0; i < GW_DIR_SLOTS; i++)
		eps += dir->slot[i].id && dir->slot[i].chan == id;
	uint64_t delivered = 0, full = 0, rejecting = 0;
	for (unsigned r = 0; r < cl->chan.rx_parts; r++) {
		delivered += cl->chan.rx[r].delivered;
		full += cl->chan.rx[r].full;
		rejecting |= cl->rx[r].hold.rejecting;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "channel", id);
	rte_tel_data_add_dict_u64(d, "worker", cl->worker);
	rte_tel_data_add_dict_u64(d, "endpoints", eps);
	rte_tel_data_add_dict_u64(d, "msgs_taken", cl->chan.tx[GW_CLASS_BULK].msgs);
	rte_tel_data_add_dict_u64(d, "urgent_msgs_taken", cl->chan.tx[GW_CLASS_URGENT].msgs);
	/* The client's own count; it could lie, but only about itself. */
	rte_tel_data_add_dict_u64(d, "tx_full", cl->tx_full);
	rte_tel_data_add_dict_u64(d, "msgs_delivered", delivered);
	rte_tel_data_add_dict_u64(d, "rx_full", full);
	rte_tel_data_add_dict_u64(d, "rejecting", rejecting);
	/* Its fullest receive part, in thousandths, as the control role last
	 * sampled it (every hello_ms). */
	rte_tel_data_add_dict_u64(d, "rx_fill_permille", cl->rx_fill_permille);
	return 0;
}

/* The published topics. As with the directory (cmd_client), telemetry is no
 * rte_rcu_qsbr reader: a table being rewritten can show a torn entry. */
static const struct gw_topics *topics_now(void)
{
	return __atomic_load_n(&gw->ctl.topics.cur, __ATOMIC_ACQUIRE);
}

static int cmd_topics(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct gw_topics *ts = topics_now();
	rte_tel_data_start_array(d, RTE_TEL_U64_VAL);
	for (unsigned i = 0; i < GW_TOPICS_MAX; i++)
		if (ts->t[i].id)
			rte_tel_data_add_array_u64(d, ts->t[i].id);
	return 0;
}

static int cmd_topic(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned long id;
	const struct gw_topics *ts = topics_now();
	const struct gw_topic *t;
	if (!params || sscanf(params, "%lu", &id) != 1 || !id || id > UINT32_MAX ||
	    !(t = gw_topic_find(ts, (uint32_t)id)))
		return -EINVAL;
	unsigned latest = 0;
	for (unsigned k = 0; k < t->nsubs; k++)
		latest += t->sub[k].policy == GW_TOPIC_LATEST;
	char nodes[4 * GW_TOPIC_NODES] = "";
	size_t n = 0;
	for (unsigned node = 0; node < GW_TOPIC_NODES && n < sizeof(nodes) - 5; node++)
		if (gw_topic_has_node(t, (uint16_t)node))
			n += (size_t)snprintf(nodes + n, sizeof(nodes) - n, "%s%u", n ? "," : "", node);
	const char *name = gw_dir_name(&ts->dir, t->id);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "topic", name ? name : "?");
	rte_tel_data_add_dict_u64(d, "id", t->id);
	rte_tel_data_add_dict_u64(d, "subscribers", t->nsubs);
	rte_tel_data_add_dict_u64(d, "latest", latest);
	rte_tel_data_add_dict_string(d, "nodes", n ? nodes : "-");
	return 0;
}

static int cmd_peers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	unsigned known = gw_peers_known(&gw->peers);
	for (unsigned k = 0; k < known; k++)
		rte_tel_data_add_array_int(d, gw->peers.known[k]);
	return 0;
}

static int cmd_peer(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned id;
	if (!params || sscanf(params, "%u", &id) != 1 || id >= GW_MAX_NODES ||
	    !gw_peers_ready(&gw->peers, (uint16_t)id))
		return -EINVAL;
	const struct gw_peer *p = &gw->peers.peer[id];
	char name[GW_NAME_MAX];
	snprintf(name, sizeof(name), "%s", p->name);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "node", id);
	rte_tel_data_add_dict_string(d, "name", name);
	rte_tel_data_add_dict_u64(d, "up", p->up);
	rte_tel_data_add_dict_u64(d, "epoch", p->epoch);
	rte_tel_data_add_dict_u64(d, "caps", p->caps);
	rte_tel_data_add_dict_u64(d, "heard_ms_ago", (gw_clock_ns() - gw_peers_heard(&gw->peers, (uint16_t)id)) / 1000000);
	return 0;
}

static int cmd_lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	for (unsigned i = 0; i < gw->layout.n; i++)
		rte_tel_data_add_array_int(d, (int)i);
	return 0;
}

static int cmd_lcore(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned i;
	if (!params || sscanf(params, "%u", &i) != 1 || i >= gw->layout.n)
		return -EINVAL;
	const struct gw_layout_entry *e = &gw->layout.e[i];
	const struct gw_counters *st = &gw->lc[i].st;
	char roles[64], rxq[96];
	gw_layout_roles(e, roles, sizeof(roles));
	gw_layout_rx_queues(e, rxq, sizeof(rxq));
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "index", i);
	rte_tel_data_add_dict_u64(d, "lcore", e->lcore_id);
	rte_tel_data_add_dict_string(d, "roles", roles);
	rte_tel_data_add_dict_u64(d, "tx_queue", e->txq);
	rte_tel_data_add_dict_u64(d, "tx_queue_urgent", e->txq_urgent);
	rte_tel_data_add_dict_string(d, "rx_queues", rxq[0] ? rxq : "-");
	/* Time in passes that found work: its busy share is this over time. */
	rte_tel_data_add_dict_u64(d, "busy_ns", __atomic_load_n(&gw->lc[i].busy_ns, __ATOMIC_RELAXED));
	/* What this lcore's roles did, from its own counters. */
	static const char *const keys[] = { "rx_frames", "data_frames", "msgs_in", "msgs_out",
					    "msgs_local", "tx_frames", "retrans", "lane_handoffs",
					    "auth_handoffs", "handoffs_lost" };
	for (unsigned k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (const struct gw_counter_name *c = gw_counter_names; c->name; c++)
			if (!strcmp(c->name, keys[k]))
				rte_tel_data_add_dict_u64(d, c->name,
							  *(const uint64_t *)((const char *)st + c->off));
	return 0;
}

/* "I,down" or "I,up": handed to the main lcore, which owns the port. */
static int cmd_member(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned i;
	char state[8];
	if (!params || sscanf(params, "%u,%7s", &i, state) != 2 ||
	    (strcmp(state, "down") && strcmp(state, "up")))
		return -EINVAL;
	if (i >= GW_CONFIG_MAX_MEMBERS) /* and it would not fit its bits of the request */
		return -EINVAL;
	struct gw_port_req *r = &gw->port_req;
	pthread_mutex_lock(&r->lock);
	uint32_t seq = (uint32_t)(r->asked >> 32) + 1;
	__atomic_store_n(&r->asked, (uint64_t)seq << 32 | i << 1 | !strcmp(state, "up"),
			 __ATOMIC_RELEASE);
	bool done = false;
	for (unsigned k = 0; k < 10000 && !done; k++) { /* 10 s */
		done = __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) == seq;
		if (!done)
			usleep(1000);
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "member", i);
	rte_tel_data_add_dict_string(d, "asked", state);
	rte_tel_data_add_dict_int(d, "rc", done ? r->rc : -ETIMEDOUT);
	rte_tel_data_add_dict_string(d, "error", !done ? "the gateway did not answer in 10 s"
					       : r->rc < 0 ? r->why : "");
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* "I,PPM" or "all,PPM": each port RX's [fault] drop rate, for a drill. */
static int cmd_fault(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char who[8], *end;
	unsigned ppm;
	if (!params || sscanf(params, "%7[^,],%u", who, &ppm) != 2 || ppm > 1000000)
		return -EINVAL;
	int member = -1;
	if (strcmp(who, "all")) {
		unsigned long m = strtoul(who, &end, 10);
		if (end == who || *end || m >= gw->port.nmembers)
			return -EINVAL;
		member = (int)m;
	}
	for (unsigned r = 0; r < gw->layout.receivers; r++)
		gw_port_rx_set_drop(&gw->prx[r], member, ppm);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "member", who);
	rte_tel_data_add_dict_u64(d, "drop_ppm", ppm);
	return 0;
}

/* The [auth] keys: what is held, or "load,PATH" a new secret. */
static int cmd_key(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct gw_keys *k = &gw->keys;
	if (!gw->node.auth)
		return -ENOENT;
	rte_tel_data_start_dict(d);
	if (params && *params) {
		if (strncmp(params, "load,", 5) || !params[5])
			return -EINVAL;
		char why[300];
		int rc = gw_keys_load(k, params + 5, gw_clock_ns(), why, sizeof(why));
		if (rc == -EINVAL) /* the full hint is too long for telemetry: gwctl gives it */
			snprintf(why, RTE_TEL_MAX_STRING_LEN, "%s: not 64 hex digits (32 bytes)",
				 params + 5);
		why[RTE_TEL_MAX_STRING_LEN - 1] = '\0';
		rte_tel_data_add_dict_int(d, "rc", rc);
		rte_tel_data_add_dict_string(d, rc < 0 ? "error" : "loaded", why);
		return 0;
	}
	uint32_t ids[GW_AUTH_HELD];
	unsigned n = gw_auth_keys_held(&k->store, ids);
	char held[32] = "";
	for (unsigned i = 0, at = 0; i < n; i++)
		at += (unsigned)snprintf(held + at, sizeof(held) - at, "%s%08x", i ? "," : "", ids[i]);
	rte_tel_data_add_dict_string(d, "mode", gw_auth_mode_name(k->store.mode));
	rte_tel_data_add_dict_string(d, "aead", gw_auth_aead_name(k->store.aead));
	rte_tel_data_add_dict_string(d, "keys", held);
	rte_tel_data_add_dict_u64(d, "generation", __atomic_load_n(&k->store.newest, __ATOMIC_RELAXED));
	rte_tel_data_add_dict_u64(d, "roll", __atomic_load_n(&k->store.roll, __ATOMIC_RELAXED));
	rte_tel_data_add_dict_u64(d, "loads", k->loads);
	rte_tel_data_add_dict_u64(d, "load_errors", k->load_errors);
	rte_tel_data_add_dict_u64(d, "rolls", k->rolls);
	rte_tel_data_add_dict_u64(d, "retires", k->retires);
	return 0;
}

int gw_stats_register(struct gw_gateway *g)
{
	static const struct {
		const char *cmd;
		telemetry_cb fn;
		const char *help;
	} cmds[] = {
		{ "/gridwire/stats", cmd_stats, "Every gateway counter. No parameters" },
		{ "/gridwire/port", cmd_port, "Port counters, pps and bps since the last call" },
		{ "/gridwire/lanes", cmd_lanes, "Lanes with traffic, as node:lane" },
		{ "/gridwire/lane", cmd_lane, "One lane. Parameter: node:lane" },
		{ "/gridwire/clients", cmd_clients, "Channel ids of connected clients" },
		{ "/gridwire/client", cmd_client, "One client. Parameter: channel id" },
		{ "/gridwire/topics", cmd_topics, "Ids of the topics with subscribers here or on peers" },
		{ "/gridwire/topic", cmd_topic,
		  "One topic: name, local subscribers (latest of them), peer nodes subscribing. "
		  "Parameter: id" },
		{ "/gridwire/peers", cmd_peers, "Node ids heard from" },
		{ "/gridwire/peer", cmd_peer, "One peer. Parameter: node id" },
		{ "/gridwire/lcores", cmd_lcores, "The lcore layout's entries" },
		{ "/gridwire/lcore", cmd_lcore, "One lcore: roles, queues, counters. Parameter: index" },
		{ "/gridwire/member", cmd_member,
		  "Take a port member down or bring it back. Parameters: index,down|up" },
		{ "/gridwire/fault", cmd_fault,
		  "A drill: drop PPM of what a member brings in. Parameters: index|all,ppm" },
		{ "/gridwire/key", cmd_key,
		  "[auth] keys held, mode, roll. Parameters: none, or load,PATH (a new secret)" },
	};
	gw = g;
	for (unsigned i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int rc = rte_telemetry_register_cmd(cmds[i].cmd, cmds[i].fn, cmds[i].help);
		if (rc < 0)
			return rc;
	}
	return 0;
}
