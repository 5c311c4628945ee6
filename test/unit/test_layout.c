/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_layout: which lcore runs which role on which queues. */
#include <errno.h>
#include <string.h>

#include "gw_layout.h"
#include "gw_test.h"

static const unsigned lcores[] = { 7, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 };

/* Which entry polls RX queue q. */
static int poller(const struct gw_layout *l, unsigned q)
{
	int who = -1, n = 0;
	for (unsigned i = 0; i < l->n; i++)
		for (unsigned k = 0; k < l->e[i].nrxq; k++)
			if (l->e[i].rxq[k] == q) {
				who = (int)i;
				n++;
			}
	return n == 1 ? who : -2; /* every queue has exactly one poller */
}

/* Every queue is polled, and each entry's urgent queues come first. */
static void check_queues(const struct gw_layout *l)
{
	for (unsigned q = 0; q < l->nqueues; q++)
		CU_ASSERT(poller(l, q) >= 0);
	for (unsigned i = 0; i < l->n; i++)
		for (unsigned k = 0; k < l->e[i].nrxq; k++)
			CU_ASSERT_EQUAL(l->e[i].rxq[k] >= l->n, k < l->e[i].nrxq_urgent);
}

/* Both 0: one lcore does everything, on one queue pair. */
static void test_run_to_completion(void)
{
	struct gw_layout l;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(gw_layout_plan(&l, 0, 0, lcores, 1, err, sizeof(err)), 0);
	CU_ASSERT(l.n == 1 && l.workers == 1 && l.receivers == 1);
	CU_ASSERT(l.e[0].main && l.e[0].worker == 0 && l.e[0].receiver == 0);
	CU_ASSERT(l.e[0].lcore_id == 7 && l.e[0].txq == 0 && poller(&l, 0) == 0);
	/* Worker 0's urgent queue is the second pair. */
	CU_ASSERT(l.nqueues == 2 && l.e[0].txq_urgent == 1 && poller(&l, 1) == 0);
	check_queues(&l);
	char line[256];
	gw_layout_describe(&l, 0, line, sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "lcore 7: tx queues 0 and 1 (urgent), rx queues [1u,0], "
				     "main worker0 receiver0");
}

/* Workers only: the main lcore keeps receiving on every queue. */
static void test_workers(void)
{
	struct gw_layout l;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(gw_layout_plan(&l, 2, 0, lcores, 3, err, sizeof(err)), 0);
	CU_ASSERT(l.n == 3 && l.workers == 2 && l.receivers == 1);
	CU_ASSERT(l.e[0].worker == -1 && l.e[0].receiver == 0);
	CU_ASSERT(l.e[1].worker == 0 && l.e[2].worker == 1 && l.e[1].txq == 1 && l.e[2].txq == 2);
	CU_ASSERT(l.nqueues == 5 && l.e[1].txq_urgent == 3 && l.e[2].txq_urgent == 4);
	CU_ASSERT(l.e[0].txq_urgent == 0); /* no worker: its own queue */
	for (unsigned q = 0; q < 5; q++)
		CU_ASSERT_EQUAL(poller(&l, q), 0);
	check_queues(&l);
}

/* Both ends pooled: queue q goes to receiver q mod R, so a peer's worker
 * k (its TX queue k + 1) lands on receiver (k + 1) mod R. */
static void test_pooled(void)
{
	struct gw_layout l;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(gw_layout_plan(&l, 2, 2, lcores, 5, err, sizeof(err)), 0);
	CU_ASSERT(l.n == 5 && l.e[0].worker == -1 && l.e[0].receiver == -1 && l.e[0].nrxq == 0);
	CU_ASSERT(l.e[3].receiver == 0 && l.e[4].receiver == 1);
	for (unsigned i = 0; i < l.n; i++)
		CU_ASSERT_EQUAL(l.e[i].txq, i);
	for (unsigned q = 0; q < 7; q++)
		CU_ASSERT_EQUAL(poller(&l, q), 3 + (int)(q % 2));
	check_queues(&l);
	char buf[64];
	gw_layout_rx_queues(&l.e[3], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "6u,0,2,4");
	gw_layout_roles(&l.e[4], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "receiver1");
	/* Receivers only: worker 0 stays on the main lcore. */
	CU_ASSERT_EQUAL_FATAL(gw_layout_plan(&l, 0, 3, lcores, 4, err, sizeof(err)), 0);
	CU_ASSERT(l.e[0].worker == 0 && l.e[0].receiver == -1 && l.e[1].receiver == 0);
	CU_ASSERT(poller(&l, 0) == 1 && poller(&l, 1) == 2 && poller(&l, 2) == 3 && poller(&l, 3) == 1);
	CU_ASSERT(l.nqueues == 5 && poller(&l, 4) == 2);
	check_queues(&l);
}

/* Too few lcores, or more than the config allows: one line, -EINVAL. */
static void test_too_few(void)
{
	struct gw_layout l;
	char err[256] = "";
	CU_ASSERT_EQUAL(gw_layout_plan(&l, 2, 2, lcores, 4, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "need 5 lcores, EAL has 4"));
	CU_ASSERT_EQUAL(gw_layout_plan(&l, GW_CONFIG_MAX_WORKERS + 1, 0, lcores, 17, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(gw_layout_plan(&l, GW_CONFIG_MAX_WORKERS, GW_CONFIG_MAX_RECEIVERS, lcores, 17,
				       err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(l.n, GW_LAYOUT_MAX);
}

static const struct gw_test_case cases[] = {
	{ "run to completion", test_run_to_completion },
	{ "workers only", test_workers },
	{ "pooled at both ends", test_pooled },
	{ "too few lcores", test_too_few },
	{ NULL, NULL },
};

int main(void)
{
	return gw_test_run("layout", cases);
}
