/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello: the smallest gridwire client that does something, built and run
 * by the recipe in doc/operations.md ("Two gateways to point clients at").
 *
 *   hello serve SOCKET N      answer N calls to the service "hello", then exit
 *   hello call SOCKET NODE    call NODE's "hello" and print the answer; while
 *                             the service is not there yet (-ENOENT), or its
 *                             node not up, try again, for up to 10 s
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gridwire.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "hello: %s: %s\n", what, gw_strerror(err));
	return 1;
}

static int serve(struct gw_client *cl, int n)
{
	int rc = gw_service(cl, "hello");
	if (rc < 0)
		return fail("gw_service", rc);
	printf("serving \"hello\" on node %u\n", gw_local_node(cl));
	fflush(stdout);
	struct gw_msg m;
	while (n > 0 && (rc = gw_recv(cl, &m, -1)) == 0) {
		if (m.kind != GW_MSG_REQUEST)
			continue;
		char answer[64];
		int len = snprintf(answer, sizeof(answer), "hello from node %u", gw_local_node(cl));
		if ((rc = gw_reply(cl, &m, answer, (size_t)len)) < 0)
			return fail("gw_reply", rc);
		n--;
	}
	if (rc < 0)
		return fail("gw_recv", rc);
	/* Closing drops what the gateway has not taken yet: the last reply too. */
	if ((rc = gw_flush(cl, 10000)) < 0)
		return fail("gw_flush", rc);
	return 0;
}

static int call(struct gw_client *cl, uint16_t node)
{
	struct gw_msg reply;
	int rc;
	for (int tries = 0; tries < 100; tries++) {
		/* 10 s: a busy machine may leave the service unscheduled a while. */
		rc = gw_call(cl, node, "hello", "hi", 2, 10000, &reply);
		if (rc != -ENOENT && rc != -EHOSTUNREACH)
			break;
		usleep(100 * 1000); /* not registered, or not up, yet */
	}
	if (rc < 0)
		return fail("gw_call", rc);
	printf("node %u answered: %.*s\n", node, (int)reply.len, (const char *)reply.data);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "serve") && strcmp(argv[1], "call"))) {
		fprintf(stderr, "usage: hello serve SOCKET N | hello call SOCKET NODE\n");
		return 2;
	}
	struct gw_client *cl;
	int rc = gw_connect(argv[2], &cl);
	if (rc < 0)
		return fail(argv[2], rc);
	rc = !strcmp(argv[1], "serve") ? serve(cl, atoi(argv[3])) : call(cl, (uint16_t)atoi(argv[3]));
	gw_close(cl);
	return rc;
}
