/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-evil: a client that breaks its own channel on purpose, for the tests.
 *
 *   gw-evil SOCK MODE     MODE: desc | ring | scribble
 *
 * It connects like any client (the handshake in gw_ctl.h, the region with
 * gw_chan_attach), sends a few good messages, then writes an impossible
 * descriptor (desc), claims a million descriptors in its ring header
 * (ring), or fills its whole region with random bytes (scribble). It then
 * waits for the gateway to hang up on it: exit 0 if it did within 5 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "gw_chan.h"
#include "gw_ctl.h"

static int hello(const char *path, struct gw_chan *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	struct gw_ctl_msg m = { .op = GW_CTL_HELLO, .arg = GW_CTL_VERSION };
	if (send(s, &m, sizeof(m), 0) != sizeof(m))
		return -1;
	char cbuf[CMSG_SPACE(GW_CTL_FDS * sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	if (recvmsg(s, &mh, 0) != sizeof(m) || m.status != 0)
		return -1;
	int fds[GW_CTL_FDS];
	memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(fds));
	close(fds[3]); /* the liveness page: not this client's business */
	if (gw_chan_attach(c, fds[0], fds[1], fds[2]) < 0)
		return -1;
	return s;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: gw-evil SOCK desc|ring|scribble\n");
		return 2;
	}
	struct gw_chan c;
	int s = hello(argv[1], &c);
	if (s < 0) {
		fprintf(stderr, "gw-evil: cannot connect to %s\n", argv[1]);
		return 2;
	}
	for (int i = 0; i < 10; i++)
		gw_chan_send(&c, 2, gw_ctl_ep_id("nowhere"), "harmless", 8);
	if (!strcmp(argv[2], "desc")) {
		struct gw_chan_desc d = { .pos = 0, .len = 60000, .node = 2, .ep = 1 };
		rte_ring_sp_enqueue_elem(c.tx[GW_CLASS_BULK].ring, &d, sizeof(d));
	} else if (!strcmp(argv[2], "ring")) {
		c.tx[GW_CLASS_BULK].ring->prod.tail += 1000000;
	} else {
		srand(7);
		for (uint32_t i = 0; i < c.size; i++)
			c.base[i] = (uint8_t)rand();
	}
	struct pollfd p = { .fd = s, .events = POLLIN };
	int rc = poll(&p, 1, 5000);
	char b;
	bool hung_up = rc == 1 && recv(s, &b, 1, MSG_DONTWAIT) <= 0;
	printf("gw-evil %s: %s\n", argv[2], hung_up ? "cut off by the gateway" : "still connected");
	return hung_up ? 0 : 1;
}
