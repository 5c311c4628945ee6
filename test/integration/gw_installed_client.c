/* SPDX-License-Identifier: BSD-3-Clause */
/* Built by test_install.sh and test_deb.sh against an installed gridwire.pc. */
#include <stdio.h>
#include <string.h>
#include <gridwire.h>
/* 1,000 messages to an endpoint of its own, back once and in order. */
int main(int argc, char **argv)
{
	struct gw_client *cl;
	int rc = gw_connect(argv[1], &cl);
	if (rc < 0 || (rc = gw_register(cl, "self")) < 0) {
		fprintf(stderr, "client: %s\n", gw_strerror(rc));
		return 1;
	}
	for (unsigned i = 0; i < 1000; i++)
		if ((rc = gw_send(cl, gw_local_node(cl), "self", &i, sizeof(i), 1000)) < 0)
			return fprintf(stderr, "send: %s\n", gw_strerror(rc)), 1;
	for (unsigned i = 0; i < 1000; i++) {
		struct gw_msg m;
		unsigned v;
		if ((rc = gw_recv(cl, &m, 5000)) < 0 || m.kind != GW_MSG_DATA || m.len != sizeof(v))
			return fprintf(stderr, "recv %u: %s\n", i, gw_strerror(rc)), 1;
		memcpy(&v, m.data, sizeof(v));
		if (v != i)
			return fprintf(stderr, "message %u where %u was due\n", v, i), 1;
	}
	printf("1000 of 1000 in order\n");
	gw_close(cl);
	return 0;
}
