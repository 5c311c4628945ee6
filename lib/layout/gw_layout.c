/* SPDX-License-Identifier: BSD-3-Clause */
/* The lcore and queue table: see gw_layout.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gw_layout.h"

int gw_layout_plan(struct gw_layout *l, unsigned workers, unsigned receivers,
		   const unsigned *lcores, unsigned nlcores, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	unsigned need = 1 + workers + receivers;
	if (workers > GW_CONFIG_MAX_WORKERS || receivers > GW_CONFIG_MAX_RECEIVERS ||
	    nlcores < need) {
		snprintf(err, errlen,
			 "[lcores] workers = %u and receivers = %u need %u lcores, EAL has %u: "
			 "list them in [eal] args (-l)",
			 workers, receivers, need, nlcores);
		return -EINVAL;
	}
	l->n = need;
	l->workers = workers ? workers : 1;
	l->receivers = receivers ? receivers : 1;
	for (unsigned i = 0; i < need; i++) {
		struct gw_layout_entry *e = &l->e[i];
		e->lcore_id = lcores[i];
		e->txq = (uint16_t)i;
		e->worker = e->receiver = -1;
		e->main = i == 0;
		if (i >= 1 && i <= workers)
			e->worker = (int)(i - 1);
		if (i > workers)
			e->receiver = (int)(i - 1 - workers);
	}
	if (!workers)
		l->e[0].worker = 0;
	if (!receivers)
		l->e[0].receiver = 0;
	l->nqueues = need + l->workers;
	for (unsigned i = 0; i < need; i++) {
		struct gw_layout_entry *e = &l->e[i];
		e->txq_urgent = e->worker >= 0 ? (uint16_t)(need + (unsigned)e->worker) : e->txq;
	}
	/* Urgent queues first in each receiver's list: it polls them first. */
	for (unsigned u = 0; u < 2; u++)
		for (unsigned q = u ? 0 : need; q < (u ? need : l->nqueues); q++) {
			unsigned r = q % l->receivers;
			struct gw_layout_entry *e = &l->e[receivers ? 1 + workers + r : 0];
			e->rxq[e->nrxq++] = (uint16_t)q;
			e->nrxq_urgent += !u;
		}
	return 0;
}

void gw_layout_roles(const struct gw_layout_entry *e, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	if (e->main)
		n += (size_t)snprintf(buf + n, len - n, "main ");
	if (e->worker >= 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "worker%d ", e->worker);
	if (e->receiver >= 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "receiver%d ", e->receiver);
	if (n && n <= len)
		buf[n - 1] = '\0';
}

void gw_layout_rx_queues(const struct gw_layout_entry *e, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned q = 0; q < e->nrxq && n < len; q++)
		n += (size_t)snprintf(buf + n, len - n, "%s%u%s", q ? "," : "", e->rxq[q],
				      q < e->nrxq_urgent ? "u" : "");
}

void gw_layout_describe(const struct gw_layout *l, unsigned i, char *buf, size_t len)
{
	const struct gw_layout_entry *e = &l->e[i];
	char roles[64], rxq[128];
	gw_layout_roles(e, roles, sizeof(roles));
	gw_layout_rx_queues(e, rxq, sizeof(rxq));
	if (e->txq_urgent != e->txq)
		snprintf(buf, len, "lcore %u: tx queues %u and %u (urgent), rx queues [%s], %s",
			 e->lcore_id, e->txq, e->txq_urgent, rxq, roles);
	else
		snprintf(buf, len, "lcore %u: tx queue %u, rx queues [%s], %s", e->lcore_id, e->txq,
			 rxq, roles);
}
