/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libgridwire: send and receive messages through the local gridwire gateway.
 *
 * A client connects to its gateway's control socket and gets a private
 * shared-memory channel. gw_send() copies a message into the channel and
 * returns; the gateway batches it with whatever else is waiting into frames
 * to the destination node. Messages of one client reach each destination in
 * the order they were sent. gw_recv() hands out messages for the endpoints
 * this client registered, and reports messages of this client that could not
 * be delivered (kind GW_MSG_REJECT), so nothing is lost silently.
 *
 * No DPDK runtime is needed: link with `pkg-config --libs gridwire`.
 * A gw_client is not thread-safe: use one per thread.
 *
 * Every function returns 0 (or a count) on success and a negative errno:
 *   -EAGAIN        the channel is full (send) or empty (recv), try later
 *   -ETIMEDOUT     a blocking call's timeout passed
 *   -EMSGSIZE      the message is larger than the gateway's msg_max
 *   -EHOSTUNREACH  the destination node is not up
 *   -EINVAL        a bad argument (endpoint name, node id)
 *   -EEXIST        the endpoint name is taken on this node
 *   -ECONNREFUSED  no gateway listens on the socket
 *   -EACCES        this user may not use the gateway ([node] socket_mode/group)
 *   -EPIPE         the gateway went away or refused this client
 */
#ifndef GRIDWIRE_H
#define GRIDWIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gw_client;

enum gw_msg_kind {
	GW_MSG_DATA = 1,   /* a message for one of our endpoints */
	GW_MSG_REJECT = 2, /* one of our sent messages was not delivered */
};

struct gw_msg {
	enum gw_msg_kind kind;
	const void *data;  /* valid until the next gw_recv() on this client */
	size_t len;
	uint32_t endpoint; /* DATA: our endpoint it was sent to; REJECT: its target */
	uint16_t node;     /* DATA: source node; REJECT: the node it was sent to */
	uint16_t sender;   /* DATA: the sending client's channel on its node */
	int error;         /* REJECT: why, as a negative errno */
	uint32_t msg_id;   /* REJECT: which send, counting from 0 per client */
};

/* Connect to the gateway listening on socket_path. */
int gw_connect(const char *socket_path, struct gw_client **out);
/*
 * Wait until the gateway has taken every message sent so far (not that they
 * are delivered: failures still arrive as GW_MSG_REJECT). -ETIMEDOUT if not.
 */
int gw_flush(struct gw_client *cl, int timeout_ms);
/* Disconnect; messages not yet taken by the gateway are dropped (gw_flush first). */
void gw_close(struct gw_client *cl);

/* This gateway's node id. */
uint16_t gw_local_node(const struct gw_client *cl);
/* 1 if the node is up (reachable now), else 0. */
int gw_node_up(const struct gw_client *cl, uint16_t node);
/* Largest message the channel takes. */
size_t gw_msg_max(const struct gw_client *cl);

/* Register (or drop) an endpoint name that messages can be sent to. */
int gw_register(struct gw_client *cl, const char *endpoint);
int gw_unregister(struct gw_client *cl, const char *endpoint);

/* The id an endpoint name travels as; gw_send_id() skips hashing the name. */
uint32_t gw_endpoint_id(const char *endpoint);

/*
 * Send len bytes to endpoint on node. timeout_ms: 0 returns -EAGAIN at
 * once when the channel is full, -1 waits as long as it takes, >0 waits
 * up to that long and then returns -ETIMEDOUT.
 */
int gw_send(struct gw_client *cl, uint16_t node, const char *endpoint, const void *buf,
	    size_t len, int timeout_ms);
int gw_send_id(struct gw_client *cl, uint16_t node, uint32_t endpoint_id, const void *buf,
	       size_t len, int timeout_ms);

/*
 * Receive the next message. timeout_ms as for gw_send (0 = poll). Waiting
 * sleeps on an eventfd, so it costs no CPU.
 */
int gw_recv(struct gw_client *cl, struct gw_msg *m, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
