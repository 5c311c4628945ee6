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
 * be delivered (kind GW_MSG_REJECT), so nothing is lost silently: every
 * send that returned 0 is delivered once, or comes back as a REJECT, within
 * [proto] peer_timeout_ms + [chan] dest_block_ms (1.1 s by default) of the
 * gateway taking it from the channel, on a working link (doc/api.md, "What
 * a send promises"), and at once with -EPIPE if the gateway dies first.
 * A REJECT needs room in this client's channel: one that reads nothing for
 * dest_block_ms while REJECTs wait for it (or cannot make room for them
 * within 10 x dest_block_ms) has them dropped, and is told how many
 * instead (GW_MSG_LOST). gw_recv may hand out kinds this header does not
 * name yet: ignore those.
 *
 * On top of messages, ecall's vocabulary (see "Services and calls" below):
 * a client offers named services; others cast to them (one way) or call
 * them (a reply, an error, or a timeout), one node or a list of nodes at
 * a time (gw_cast_one ... gw_call_all_wait). Requests and replies are
 * ordinary messages, so they are batched like everything else.
 *
 * No DPDK runtime is needed: link with `pkg-config --libs gridwire`.
 * A gw_client is not thread-safe: use one per thread, or lock around its
 * calls. One split is allowed: sending with timeout 0 (gw_send,
 * gw_send_id, gw_cast, gw_respond) under one lock and everything else
 * under another, with gw_call_start under both (the Erlang binding does
 * this; a send that waits also touches the receive side).
 *
 * Every function returns 0 (or a count) on success and a negative errno:
 *   -EAGAIN        the channel is full (send) or empty (recv), try later
 *   -ETIMEDOUT     a blocking call's timeout passed
 *   -EMSGSIZE      the message is larger than the gateway's msg_max
 *   -EHOSTUNREACH  the destination node is not up
 *   -EINVAL        a bad argument (endpoint name, node id)
 *   -EEXIST        the endpoint name is taken on this node
 *   -EPERM         the endpoint name is reserved (it starts with '~'; a
 *                  topic's such name is -EINVAL)
 *   -ECONNREFUSED  no gateway listens on the socket
 *   -EACCES        this user may not use the gateway ([node] socket_mode/group)
 *   -EPIPE         the gateway went away or refused this client (see "When
 *                  the gateway goes away" below)
 * and for calls (as a return value or in a GW_MSG_REPLY's error):
 *   -ENOENT        no such service (endpoint) on that node
 *   -EHOSTUNREACH  badrpc: the node was not up when the request left
 *   -EHOSTDOWN     badrpc: the node went down with the request in flight
 *                  (it may or may not have run)
 *   -EREMOTEIO     the handler failed; the reply data is its reason
 *   -ENOBUFS       the service's ring was full and it did not drain it
 *   -ETIMEDOUT     no answer within the call's timeout
 *   -EOVERFLOW     GW_CALL_KEEP messages are kept for gw_recv: receive them
 *   -EBUSY         GW_CALLS_MAX calls are in flight
 */
#ifndef GRIDWIRE_H
#define GRIDWIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gw_client;

/* One of the errors above in the words of this API (strerror for the rest). */
const char *gw_strerror(int err);

enum gw_msg_kind {
	GW_MSG_DATA = 1,    /* a message for one of our endpoints */
	GW_MSG_REJECT = 2,  /* one of our sent messages was not delivered */
	GW_MSG_REQUEST = 3, /* a call to one of our services: answer with gw_reply() */
	GW_MSG_CAST = 4,    /* a cast to one of our services: nothing to answer */
	GW_MSG_REPLY = 5,   /* the outcome of one of our gw_call_start() calls */
	GW_MSG_LOST = 6,    /* some of our sends (casts, call requests) were not
			     * delivered and their REJECTs were dropped: our own
			     * channel had no room for them (error -ENOBUFS). data
			     * is a uint64_t, how many; which ones is not known (a
			     * call among them ends with -ETIMEDOUT) */
	GW_MSG_PUBLISH = 7, /* a message published to a topic we subscribe to */
};

struct gw_msg {
	enum gw_msg_kind kind;
	const void *data;  /* valid until the next gw_recv() (or gw_call*) on this client */
	size_t len;
	uint32_t endpoint; /* DATA, REQUEST, CAST: our endpoint it was sent to; REJECT: its target;
			    * PUBLISH: the topic's id */
	uint16_t node;     /* DATA, REQUEST, CAST, PUBLISH: source node; REJECT, REPLY: the
			    * node asked */
	uint16_t sender;   /* DATA, REQUEST, CAST, PUBLISH: the sending client's channel on
			    * its node */
	int error;         /* REJECT: why (-ENOENT, -ENOBUFS, -EMSGSIZE, -EHOSTUNREACH,
			    * -EHOSTDOWN, -EPIPE); REPLY: 0 or why the call failed (see
			    * above; -EREMOTEIO: data/len is the handler's reason, not
			    * NUL-terminated) */
	uint32_t msg_id;   /* REJECT: which send, counting from 0 per client and class
			    * the sends that returned 0 (GW_MSG_ID_URGENT set for an
			    * urgent one) */
	uint32_t call_id;  /* REQUEST: the caller's call; REPLY: which of our calls */
	unsigned flags;    /* DATA, REQUEST, CAST: GW_URGENT if it came as urgent */
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

/*
 * --- when the gateway goes away ---
 *
 * The client knows the moment its gateway dies, however it dies (the
 * kernel marks a word the client reads on every send), or cuts it off
 * (its socket closes). From then on every send, cast, call, flush, arm
 * and gw_nodes returns -EPIPE, gw_node_up says no node is up, and gw_recv
 * hands out what the gateway had delivered, then one GW_MSG_REJECT with
 * error -EPIPE for each send the gateway had accepted but not settled
 * (settled: delivered into its destination's ring, or refused there, in
 * which case its REJECT came): such a message may or may not have
 * arrived, and nothing else will be said of it. Then gw_recv returns
 * -EPIPE. A call whose request is among them ends with -EPIPE. A client
 * that reconnects gets a new channel (gw_connect); message ids start again.
 */

/* Sends accepted (0 returned) and not settled yet: in flight while the
 * gateway runs; after it went away, those still to be told as REJECTs. */
uint64_t gw_unconfirmed(const struct gw_client *cl);

/* This gateway's node id. */
uint16_t gw_local_node(const struct gw_client *cl);
/* 1 if the node is up (reachable now), else 0. */
int gw_node_up(const struct gw_client *cl, uint16_t node);
/* Largest message the channel takes. */
size_t gw_msg_max(const struct gw_client *cl);

/*
 * Register (or drop) an endpoint name that messages can be sent to: at
 * most 31 printable characters, no spaces (else -EINVAL). -EEXIST when
 * another client (or a name with the same id) holds it, -EPERM for a name
 * starting with '~' (the gateway's own: call replies), -ENOSPC when the
 * gateway's directory is full, -ENOENT (unregister) when this client does
 * not hold it. gw_register returns once every receiver of the gateway
 * knows the name: from then on a message sent to it is delivered, never
 * refused as unknown. Endpoints and topics are apart: a topic may have
 * an endpoint's name (its publications come as GW_MSG_PUBLISH, messages
 * to the endpoint as GW_MSG_DATA, both with the name's id in endpoint).
 */
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
 * --- urgent messages ---
 *
 * A message sent with GW_URGENT never waits behind bulk ones: the gateway
 * takes it before its sender's bulk messages, sends it at once in a frame
 * of its own class, on a lane of its own to each peer (a lost bulk frame
 * never holds it up), and the far gateway delivers it first. Order holds
 * per sender and per class: urgent messages arrive in the order they were
 * sent, and may overtake the same sender's bulk messages sent before them.
 * Urgent messages have a ring of their own in the channel, an eighth of
 * the bulk one (a full one is -EAGAIN like any). The receiver sees
 * gw_msg.flags & GW_URGENT; a reply travels in its request's class. Flags
 * other than those named are -EINVAL. The multi-node patterns take
 * GW_URGENT in their flags.
 */
#define GW_URGENT 0x100u
#define GW_MSG_ID_URGENT 0x80000000u /* gw_msg.msg_id of an urgent send's REJECT */

int gw_send_flags(struct gw_client *cl, uint16_t node, const char *endpoint, const void *buf,
		  size_t len, int timeout_ms, unsigned flags);
int gw_cast_flags(struct gw_client *cl, uint16_t node, const char *service, const void *req,
		  size_t len, int timeout_ms, unsigned flags);
int gw_call_flags(struct gw_client *cl, uint16_t node, const char *service, const void *req,
		  size_t len, int timeout_ms, unsigned flags, struct gw_msg *reply);
int gw_call_start_flags(struct gw_client *cl, uint16_t node, const char *service,
			const void *req, size_t len, int timeout_ms, unsigned flags,
			uint32_t *call_id);
/* gw_call_start_flags only: -EAGAIN at once when the channel is full,
 * instead of waiting up to timeout_ms for room (an event loop's call: wait
 * with GW_WAIT_SEND, then start it again). */
#define GW_NOWAIT 0x200u

/*
 * Receive the next message. timeout_ms as for gw_send (0 = poll). Waiting
 * sleeps on an eventfd, so it costs no CPU.
 */
int gw_recv(struct gw_client *cl, struct gw_msg *m, int timeout_ms);

/*
 * --- topics ---
 *
 * A topic is named as an endpoint is. Clients on any nodes subscribe to
 * it; gw_publish sends a message once: the gateway puts one copy on the
 * wire to each node with subscribers, and each subscriber's gateway
 * delivers it into each subscriber's channel, where gw_recv hands it out
 * as GW_MSG_PUBLISH (endpoint: the topic's id, gw_endpoint_id(topic);
 * node and sender: the publisher). Topics and endpoints are apart: a
 * topic may have an endpoint's name. Order holds per publisher, per
 * subscriber and per class.
 *
 * A subscriber gets what is published after its subscription has reached
 * the publisher's gateway, and nothing published before, whatever its
 * policy: a topic keeps no messages. gw_subscribe returns once its own
 * gateway delivers to it; other gateways learn of it asynchronously, from
 * that gateway's advertisement (within milliseconds on a LAN; counted
 * subs_applied on the publisher's gateway, where `gwctl topics` lists the
 * subscriber's node). Nothing in this API tells a publisher that it has
 * arrived: what it publishes before then does not reach that subscriber,
 * with no error and no REJECT (doc/api.md, "Topics").
 *
 * A subscriber that falls behind is served by its policy: GW_SUB_HOLD, as
 * an endpoint (the publisher's lane waits dest_block_ms, then the
 * publisher gets a REJECT, -ENOBUFS); GW_SUB_LATEST, once it has 64
 * messages unread ([topics] latest_unread) or its channel is full, the
 * gateway keeps only the newest message per key for it (the first 8
 * bytes of a message, or n with GW_SUB_LATEST_KEY(n)) until it reads
 * again, and never holds the publisher. GW_SUB_LATEST is no last-value
 * cache: it conflates only what is queued for a subscriber that falls
 * behind. A publication that reaches nobody (no subscriber anywhere, as
 * far as the publisher's gateway knows) is not an error: no REJECT, and
 * it is settled (gw_unconfirmed stops counting it) as soon as the gateway
 * takes it from the channel. gw_subscribe again changes the policy.
 */
#define GW_SUB_HOLD 0u
#define GW_SUB_LATEST 1u
#define GW_SUB_LATEST_KEY(n) (GW_SUB_LATEST | ((unsigned)(n) << 8)) /* n: 1..64 */

/* 0, -EINVAL (a bad name, a name starting with '~', or a bad policy: a
 * kind other than the two, a key over 64 bytes, GW_SUB_HOLD with a key
 * length), -EEXIST (another topic the gateway knows has its id), -ENOSPC
 * (1,024 topics known to the gateway, or 32 subscribers of this one),
 * -EPIPE. */
int gw_subscribe(struct gw_client *cl, const char *topic, unsigned policy);
/* 0, -EINVAL (a bad name, refused without asking the gateway), -ENOENT
 * (this client does not subscribe to it, as for any '~' name), -EPIPE.
 * On its return this client's gateway copies no more publications into
 * it (a receiver lcore may finish the one it is copying); those already
 * in the channel, or kept for a latest subscriber, still come from
 * gw_recv. Other gateways learn of it when the topic has no subscriber
 * left on this gateway, from its next advertisement. */
int gw_unsubscribe(struct gw_client *cl, const char *topic);
/* As gw_send_flags, to every subscriber of topic: 0, -EINVAL (a bad name
 * or flags), -EMSGSIZE, -EAGAIN, -ETIMEDOUT, -EPIPE; never -EHOSTUNREACH.
 * A '~' name is taken and reaches nobody (no one can subscribe to it). */
int gw_publish(struct gw_client *cl, const char *topic, const void *buf, size_t len,
	       int timeout_ms, unsigned flags);

/* --- event loops ---
 *
 * A program with an event loop of its own (epoll, libuv, Erlang's
 * enif_select) waits on the client's descriptors instead of inside
 * gw_recv or gw_send. To receive:
 *   1. gw_recv with timeout 0 until it returns -EAGAIN;
 *   2. gw_arm(cl, GW_WAIT_RECV): 1 means something came meanwhile (go to
 *      1), 0 means armed;
 *   3. wait until fds[0] or fds[1] of gw_wait_fds is readable, or for
 *      gw_wait_ms (calls in flight have deadlines that gw_recv reports),
 *      then go to 1.
 * No wake-up is lost between 1 and 3. To send into a full channel, the
 * same with gw_send and GW_WAIT_SEND. fds[1] readable means the gateway
 * went away: the next call returns -EPIPE. The descriptors stay the
 * client's: do not read or close them (dup them for an event loop that
 * closes what it watches). gw_arm clears fds[0].
 */
enum gw_wait {
	GW_WAIT_RECV = 0,
	GW_WAIT_SEND = 1,
};

/* The two descriptors to watch for reading. 0, or -EPIPE. */
int gw_wait_fds(const struct gw_client *cl, enum gw_wait what, int fds[2]);
/* 0 when armed, 1 when there is something already (do not sleep), -EPIPE. */
int gw_arm(struct gw_client *cl, enum gw_wait what);
/* How long the loop may sleep before gw_recv is due: ms, or -1 (no limit). */
int gw_wait_ms(const struct gw_client *cl);

/* --- nodes --- */

#define GW_NODE_AUTH 1u     /* its frames are authenticated ([auth] key_file) */
#define GW_NODE_BATCHING 2u /* it batches (proto.batch_max != 1) */
#define GW_NODE_URGENT 4u   /* it takes urgent lanes; to one without, urgent messages go as bulk */
#define GW_NODE_GRANT 8u    /* it does congestion control ([cc] control) and grants */
#define GW_NODE_TOPICS 16u  /* it takes topics: its subscribers get publications */

struct gw_node_info {
	uint16_t id;
	int up;        /* reachable now (hellos heard within the peer timeout) */
	int self;      /* this gateway's own node */
	unsigned caps; /* GW_NODE_*, as its last hello said */
	char name[32];
};

/*
 * The nodes this gateway knows (itself, configured peers and peers found
 * by their hellos), in id order: up to max of them in out. Returns how
 * many there are (which may be more than max).
 */
int gw_nodes(struct gw_client *cl, struct gw_node_info *out, unsigned max);

/* --- services and calls ---
 *
 * A service is an endpoint whose messages are requests: gw_service()
 * registers it, and gw_recv() hands out its requests as GW_MSG_REQUEST
 * (answer each with gw_reply() or gw_reply_error()) or GW_MSG_CAST.
 * Requests and replies carry an 8-byte header: their payloads can be at
 * most gw_msg_max() - GW_CALL_HDR bytes.
 *
 * A call never waits for ever: each has a timeout (timeout_ms > 0) and
 * fails with -EHOSTDOWN as soon as the gateway declares its node down
 * (proto.peer_timeout_ms, 1 s by default). Calls to this client's own
 * node never touch the wire.
 *
 * gw_call() waits for its reply; messages that arrive meanwhile are kept
 * (in order) for gw_recv(), up to GW_CALL_KEEP of them, past which
 * gw_call (and the patterns) return -EOVERFLOW: receive them first. gw_call_start() returns
 * at once and the outcome arrives through gw_recv() as a GW_MSG_REPLY, so
 * one thread can have up to GW_CALLS_MAX calls in flight.
 */
#define GW_CALL_HDR 8
#define GW_CALLS_MAX 4096
#define GW_CALL_KEEP 4096

int gw_service(struct gw_client *cl, const char *name);

/* One way: 0 once it is in the channel (the timeout is for a full channel). */
int gw_cast(struct gw_client *cl, uint16_t node, const char *service, const void *req,
	    size_t len, int timeout_ms);

/*
 * Call and wait. On 0, reply->data/len is the answer. On -EREMOTEIO,
 * reply->data/len is the handler's reason. timeout_ms must be > 0.
 */
int gw_call(struct gw_client *cl, uint16_t node, const char *service, const void *req,
	    size_t len, int timeout_ms, struct gw_msg *reply);

/* Call without waiting: *call_id names the GW_MSG_REPLY that will come. */
int gw_call_start(struct gw_client *cl, uint16_t node, const char *service, const void *req,
		  size_t len, int timeout_ms, uint32_t *call_id);
/* No longer wait for that call: no GW_MSG_REPLY comes for it, and its slot
 * (one of GW_CALLS_MAX) is free at once. -ENOENT if it had ended. The
 * request may still run at the far end. */
int gw_call_cancel(struct gw_client *cl, uint32_t call_id);

/* Answer a GW_MSG_REQUEST: with a result, or with a failure and its reason.
 * Both wait as long as the channel is full. */
int gw_reply(struct gw_client *cl, const struct gw_msg *req, const void *buf, size_t len);
int gw_reply_error(struct gw_client *cl, const struct gw_msg *req, const char *reason);
/* Either, with a timeout as for gw_send (0: -EAGAIN when full): a result
 * (failed 0) or a failure whose reason is buf. Only req's kind, node,
 * sender, call_id and flags are read, so a copy of them answers as well. */
int gw_respond(struct gw_client *cl, const struct gw_msg *req, int failed, const void *buf,
	       size_t len, int timeout_ms);

/* --- several nodes (ecall's patterns) ---
 *
 * Nodes that cannot be asked (badrpc: -EHOSTUNREACH, -EHOSTDOWN) are
 * ignored unless flags has GW_BADRPC_ERRORS, which counts them as errors.
 * The results are always filled in, whatever the return value (a node whose
 * call never started says -ECANCELED); a gw_result's data is the library's
 * copy: free it with gw_results_free.
 */
#define GW_BADRPC_ERRORS 1u

struct gw_result {
	uint16_t node;
	int error; /* 0, or as for gw_call (-EREMOTEIO: data is the reason) */
	void *data;
	size_t len;
};
void gw_results_free(struct gw_result *res, unsigned n);

/* Cast to one node: this node if it is in the list, else the first one up
 * from a random start. Returns the node chosen, or -EHOSTUNREACH. */
int gw_cast_one(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len);
/* Cast to every node. Returns how many took it, or the first error
 * (badrpc only with GW_BADRPC_ERRORS). */
int gw_cast_all(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, unsigned flags);
/* One node at a time, in list order, each with timeout_ms, until one
 * answers ok: 0 and *res; else the last error (and *res holds it). */
int gw_call_one(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, int timeout_ms, unsigned flags,
		struct gw_result *res);
/* All at once; the first ok answer wins: 0 and *res, else the last error. */
int gw_call_any(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, int timeout_ms, unsigned flags,
		struct gw_result *res);
/* All at once; every node must answer ok. res[i] is node i's outcome.
 * 0, or the first failing node's error. */
int gw_call_all(struct gw_client *cl, const uint16_t *nodes, unsigned n, const char *service,
		const void *req, size_t len, int timeout_ms, unsigned flags,
		struct gw_result *res);
/* All at once; every outcome in res[i]. Returns how many answered ok. */
int gw_call_all_wait(struct gw_client *cl, const uint16_t *nodes, unsigned n,
		     const char *service, const void *req, size_t len, int timeout_ms,
		     struct gw_result *res);

#ifdef __cplusplus
}
#endif

#endif
