/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gridwire_nif: libgridwire for the Erlang VM (the module gridwire_nif,
 * used by gridwire.erl and gridwire_chan.erl; see bindings/erlang/README.md).
 *
 * One resource is one gateway channel (a gw_client). Processes send on it
 * from their own schedulers, never waiting: a full channel is
 * {error, eagain}. One Erlang process per channel (gridwire_chan) drains
 * it: drain/2 hands each message straight to the process that registered
 * its endpoint (decoded with binary_to_term's safe option into the
 * message), each call's outcome to its caller and each REJECT to the
 * process that sent the message, then arms the channel and selects on its
 * descriptors (enif_select), so an idle channel costs no thread and no
 * wake-up is lost.
 *
 * Locks, always taken in this order: ctl for the gateway's control socket
 * (register, unregister, nodes: dirty I/O schedulers, so a slow gateway
 * holds up no normal scheduler), rx for what reads the channel (drain, the
 * tables), tx for what writes it (send, cast, respond). A call takes rx
 * then tx (the library keeps its call table beside the receive side), and
 * so does registering a service (its list, read by every receive).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <erl_nif.h>

#include "gridwire.h"

#define EPS_SLOTS 4096u           /* endpoints and services per channel, x2 */
#define REJECT_WINDOW (1u << 18)  /* sends whose sender a REJECT can still find */
#define URGENT_WINDOW (1u << 14)  /* the same for urgent sends, counted apart */
#define CHECK_EVERY 64u           /* deliveries to one process between mailbox checks */
#define SERVERS_MAX 16            /* processes serving one service name */

enum ep_kind { EP_FREE = 0, EP_ENDPOINT = 1, EP_SERVICE = 2, EP_GONE = 3, EP_TOPIC = 4 };

/* An endpoint's owner, a service's servers (its requests and casts go to
 * them in turn: ecall's workers on the far node, a pool at this end), or
 * a topic's subscribers here (each gets every publication: the channel
 * subscribes once, with one policy). */
struct ep_entry {
	uint32_t id;
	uint8_t kind;
	unsigned policy;    /* a topic's: GW_SUB_* */
	uint8_t raw;        /* deliver binaries, not terms */
	uint8_t npids, next;
	uint16_t unchecked; /* deliveries since a mailbox was last looked at */
	ErlNifPid pid[SERVERS_MAX];
	char name[32];      /* to register again after a reconnect */
};

/* Who sent message msg_id: written (pid, then msg_id) before the send, so
 * that its REJECT, however early, finds it; read back with msg_id checked
 * on both sides of the pid. */
struct sent {
	uint32_t msg_id;
	bool set;
	ErlNifPid pid;
};

/* The sends of one class (the library numbers each class apart). */
struct sent_log {
	uint32_t next; /* the library's count of our sends of this class */
	uint32_t size; /* of s, a power of two */
	struct sent *s;
};

struct caller {
	uint32_t call_id; /* 0: free */
	ErlNifPid pid;
};

struct chan {
	ErlNifMutex *ctl, *rx, *tx;
	struct gw_client *cl; /* NULL once closed */
	bool dead;            /* the gateway went away: sends say epipe */
	bool closed;          /* for good: close/1, or its process died (ctl held) */
	bool orphaned;        /* its process died while a control request held ctl */
	int fds[2];           /* dups of gw_wait_fds, watched by enif_select */
	int index;            /* the pool slot, in reply messages */
	ErlNifPid owner;      /* the draining process: when it dies, the channel closes */
	ErlNifMonitor owner_mon;
	ErlNifEnv *msg_env;   /* reused for every message sent to a process */
	struct sent_log sent[2]; /* bulk, urgent */
	struct caller calls[GW_CALLS_MAX];
	struct ep_entry eps[EPS_SLOTS];
	unsigned neps;
	uint64_t delivered, rejects_unrouted, rejects_sender_gone, rejects_lost, bad_terms;
};

static ErlNifResourceType *chan_type;
static ERL_NIF_TERM a_ok, a_error, a_eagain, a_epipe, a_emsgsize, a_hostunreach, a_einval,
	a_eexist, a_eperm, a_enospc, a_enoent, a_ebusy, a_econnrefused, a_eacces, a_timeout,
	a_nodedown, a_noservice, a_overload, a_more, a_armed, a_wait, a_closed,
	a_gridwire, a_gridwire_cast, a_gridwire_request, a_gridwire_reply, a_gridwire_reject,
	a_gridwire_bad_term, a_badrpc, a_rx, a_hup, a_true, a_false, a_endpoint, a_service,
	a_unreachable, a_enomem, a_gridwire_orphan, a_enobufs,
	a_ehostdown, a_drain, a_gridwire_name_lost, a_gridwire_lost, a_topic, a_gridwire_publish;

/* --- errors --- */

static ERL_NIF_TERM errno_atom(ErlNifEnv *env, int err)
{
	switch (err) {
	case -EAGAIN: return a_eagain;
	case -EPIPE: return a_epipe;
	case -EMSGSIZE: return a_emsgsize;
	case -EHOSTUNREACH: return a_hostunreach;
	case -EINVAL: return a_einval;
	case -EEXIST: return a_eexist;
	case -EPERM: return a_eperm;
	case -ENOSPC: return a_enospc;
	case -ENOENT: return a_enoent;
	case -EBUSY: return a_ebusy;
	case -ECONNREFUSED: return a_econnrefused;
	case -EACCES: return a_eacces;
	case -ENOMEM: return a_enomem;
	case -ETIMEDOUT: return a_timeout;
	case -ENOBUFS: return a_enobufs;
	case -EHOSTDOWN: return a_ehostdown;
	default: return enif_make_int(env, err);
	}
}

static ERL_NIF_TERM error_tuple(ErlNifEnv *env, int err)
{
	return enif_make_tuple2(env, a_error, errno_atom(env, err));
}

/* --- the resource --- */

static void chan_stop(ErlNifEnv *env, void *obj, ErlNifEvent fd, int is_direct_call)
{
	close((int)fd); /* our dup; the client keeps its own */
}

static void chan_dtor(ErlNifEnv *env, void *obj)
{
	struct chan *c = obj;
	for (int i = 0; i < 2; i++) /* never selected (a failed open) */
		if (c->fds[i] >= 0)
			close(c->fds[i]);
	if (c->cl)
		gw_close(c->cl);
	free(c->sent[0].s);
	free(c->sent[1].s);
	if (c->msg_env)
		enif_free_env(c->msg_env);
	if (c->ctl)
		enif_mutex_destroy(c->ctl);
	if (c->rx)
		enif_mutex_destroy(c->rx);
	if (c->tx)
		enif_mutex_destroy(c->tx);
}

static bool get_chan(ErlNifEnv *env, ERL_NIF_TERM t, struct chan **c)
{
	return enif_get_resource(env, t, chan_type, (void **)c);
}

/* A name given as an atom, a binary or a string: 0 or -EINVAL. */
static int get_name(ErlNifEnv *env, ERL_NIF_TERM t, char *buf, size_t len)
{
	ErlNifBinary b;
	if (enif_get_atom(env, t, buf, (unsigned)len, ERL_NIF_LATIN1) > 0)
		return 0;
	if (enif_inspect_binary(env, t, &b) && b.size < len && !memchr(b.data, 0, b.size)) {
		memcpy(buf, b.data, b.size);
		buf[b.size] = 0;
		return 0;
	}
	if (enif_get_string(env, t, buf, (unsigned)len, ERL_NIF_LATIN1) > 0)
		return 0;
	return -EINVAL;
}

static bool get_node(ErlNifEnv *env, ERL_NIF_TERM t, uint16_t *node)
{
	unsigned v;
	if (!enif_get_uint(env, t, &v) || v > UINT16_MAX)
		return false;
	*node = (uint16_t)v;
	return true;
}

/* --- the endpoint table: id -> owner, open addressing --- */

static struct ep_entry *ep_find(struct chan *c, uint32_t id)
{
	for (unsigned i = 0, h = id & (EPS_SLOTS - 1); i < EPS_SLOTS; i++, h = (h + 1) & (EPS_SLOTS - 1)) {
		struct ep_entry *e = &c->eps[h];
		if (e->kind == EP_FREE)
			return NULL;
		if (e->kind != EP_GONE && e->id == id)
			return e;
	}
	return NULL;
}

static struct ep_entry *ep_add(struct chan *c, uint32_t id)
{
	if (c->neps >= EPS_SLOTS / 2)
		return NULL;
	for (unsigned h = id & (EPS_SLOTS - 1);; h = (h + 1) & (EPS_SLOTS - 1))
		if (c->eps[h].kind == EP_FREE || c->eps[h].kind == EP_GONE) {
			c->neps++;
			return &c->eps[h];
		}
}

/* A name of ours at the gateway: an endpoint, a service or a subscription. */
static bool ep_named(const struct ep_entry *e)
{
	return e->kind == EP_ENDPOINT || e->kind == EP_SERVICE || e->kind == EP_TOPIC;
}

/* Ask the gateway for e's name again (a new client after a reconnect). */
static int ep_claim(struct gw_client *cl, const struct ep_entry *e)
{
	return e->kind == EP_SERVICE ? gw_service(cl, e->name)
	       : e->kind == EP_TOPIC ? gw_subscribe(cl, e->name, e->policy)
				     : gw_register(cl, e->name);
}

/* --- control: dirty I/O --- */

static void select_stop(ErlNifEnv *env, struct chan *c)
{
	for (int i = 0; i < 2; i++)
		if (c->fds[i] >= 0) {
			enif_select(env, (ErlNifEvent)c->fds[i], ERL_NIF_SELECT_STOP, c, NULL,
				    a_ok);
			c->fds[i] = -1;
		}
}

/* A client of the gateway at path, and dups of its descriptors to select on. */
static int client_open(const char *path, struct gw_client **out, int dups[2])
{
	struct gw_client *cl;
	int rc = gw_connect(path, &cl);
	if (rc < 0)
		return rc;
	int fds[2];
	gw_wait_fds(cl, GW_WAIT_RECV, fds);
	dups[0] = dup(fds[0]);
	dups[1] = dup(fds[1]);
	if (dups[0] < 0 || dups[1] < 0) {
		int err = -errno;
		for (int i = 0; i < 2; i++)
			if (dups[i] >= 0)
				close(dups[i]);
		gw_close(cl);
		return err;
	}
	*out = cl;
	return 0;
}

/* Start using cl (all of c's locks held, or c not shared yet). */
static void chan_attach(struct chan *c, struct gw_client *cl, const int dups[2])
{
	c->cl = cl;
	c->fds[0] = dups[0];
	c->fds[1] = dups[1];
	c->dead = false;
	c->sent[0].next = c->sent[1].next = 0;
}

/* open(Path, Index) -> {ok, Chan} | {error, Why}; the caller drains it. */
static ERL_NIF_TERM nif_open(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	char path[108];
	int index;
	if (get_name(env, argv[0], path, sizeof(path)) < 0 || !enif_get_int(env, argv[1], &index))
		return enif_make_badarg(env);
	struct chan *c = enif_alloc_resource(chan_type, sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->fds[0] = c->fds[1] = -1;
	c->index = index;
	c->ctl = enif_mutex_create("gridwire_ctl");
	c->rx = enif_mutex_create("gridwire_rx");
	c->tx = enif_mutex_create("gridwire_tx");
	c->msg_env = enif_alloc_env();
	c->sent[0] = (struct sent_log){ .size = REJECT_WINDOW,
					.s = calloc(REJECT_WINDOW, sizeof(struct sent)) };
	c->sent[1] = (struct sent_log){ .size = URGENT_WINDOW,
					.s = calloc(URGENT_WINDOW, sizeof(struct sent)) };
	enif_self(env, &c->owner);
	struct gw_client *cl;
	int dups[2];
	int rc = c->ctl && c->rx && c->tx && c->msg_env && c->sent[0].s && c->sent[1].s ? client_open(path, &cl, dups)
								  : -ENOMEM;
	if (rc == 0) {
		chan_attach(c, cl, dups);
		/* A channel process killed (no terminate) must not leave the
		 * gateway holding its names: its death closes the channel. */
		enif_monitor_process(env, c, &c->owner, &c->owner_mon);
	}
	ERL_NIF_TERM res = enif_make_resource(env, c);
	enif_release_resource(c);
	if (rc < 0)
		return error_tuple(env, rc);
	return enif_make_tuple2(env, a_ok, res);
}

/*
 * Every caller still waiting gets {error, epipe} (its call went with the
 * gateway). rx held.
 */
static void fail_calls(ErlNifEnv *env, struct chan *c)
{
	for (unsigned i = 0; i < GW_CALLS_MAX; i++) {
		struct caller *k = &c->calls[i];
		if (!k->call_id)
			continue;
		ERL_NIF_TERM m = enif_make_tuple4(c->msg_env, a_gridwire_reply,
						  enif_make_int(c->msg_env, c->index),
						  enif_make_uint(c->msg_env, k->call_id),
						  enif_make_tuple2(c->msg_env, a_error, a_epipe));
		enif_send(env, &k->pid, c->msg_env, m);
		enif_clear_env(c->msg_env);
		k->call_id = 0;
	}
}

/* The library's number for the count-th send of class cls (1: urgent). */
static uint32_t sent_id(unsigned cls, uint32_t count)
{
	return (count & ~GW_MSG_ID_URGENT) | (cls ? GW_MSG_ID_URGENT : 0);
}

/* Where the sender of message msg_id is noted. */
static struct sent *sent_slot(struct chan *c, uint32_t msg_id)
{
	const struct sent_log *l = &c->sent[!!(msg_id & GW_MSG_ID_URGENT)];
	return &l->s[msg_id & (l->size - 1)];
}

/* Stop using the client (all three locks held): no more selects, and
 * waiting callers get {error, epipe}. The caller closes what it returns. */
static struct gw_client *chan_detach(ErlNifEnv *env, struct chan *c)
{
	select_stop(env, c);
	fail_calls(env, c);
	struct gw_client *cl = c->cl;
	c->cl = NULL;
	c->dead = true;
	return cl;
}

/* The name of e is gone: its owners hear {gridwire_name_lost, Name, Why}
 * and the entry goes (ctl and rx held). */
static void name_lost(ErlNifEnv *env, struct chan *c, struct ep_entry *e, ERL_NIF_TERM why)
{
	for (unsigned k = 0; k < e->npids; k++) {
		ERL_NIF_TERM name;
		size_t len = strlen(e->name);
		memcpy(enif_make_new_binary(c->msg_env, len, &name), e->name, len);
		enif_send(env, &e->pid[k], c->msg_env,
			  enif_make_tuple3(c->msg_env, a_gridwire_name_lost, name,
					   enif_make_copy(c->msg_env, why)));
		enif_clear_env(c->msg_env);
	}
	e->kind = EP_GONE;
	c->neps--;
}

/* Close for good (ctl held): the owners of its names hear
 * {gridwire_name_lost, Name, closed}. */
static void close_held(ErlNifEnv *env, struct chan *c)
{
	if (c->closed)
		return;
	enif_mutex_lock(c->rx);
	enif_mutex_lock(c->tx);
	for (unsigned i = 0; i < EPS_SLOTS; i++)
		if (ep_named(&c->eps[i]))
			name_lost(env, c, &c->eps[i], a_closed);
	struct gw_client *cl = chan_detach(env, c);
	c->closed = true;
	enif_mutex_unlock(c->tx);
	enif_mutex_unlock(c->rx);
	if (cl)
		gw_close(cl);
}

static void chan_close(ErlNifEnv *env, struct chan *c)
{
	enif_mutex_lock(c->ctl);
	close_held(env, c);
	enif_mutex_unlock(c->ctl);
}

/* The end of every control request: if the channel's process died
 * meanwhile, the close it could not do waits no longer. */
static void ctl_unlock(ErlNifEnv *env, struct chan *c)
{
	enif_mutex_unlock(c->ctl);
	if (__atomic_load_n(&c->orphaned, __ATOMIC_SEQ_CST))
		chan_close(env, c);
}

/* close(Chan): stop watching, drop the client. */
static ERL_NIF_TERM nif_close(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	if (!get_chan(env, argv[0], &c))
		return enif_make_badarg(env);
	chan_close(env, c);
	return a_ok;
}

/*
 * The channel's process died without closing it: the channel closes, and
 * the supervisor starts it afresh. This runs on a normal scheduler, so it
 * never waits for ctl: a control request holding it closes the channel as
 * it ends (ctl_unlock).
 */
static void chan_down(ErlNifEnv *env, void *obj, ErlNifPid *pid, ErlNifMonitor *mon)
{
	struct chan *c = obj;
	__atomic_store_n(&c->orphaned, true, __ATOMIC_SEQ_CST);
	if (enif_mutex_trylock(c->ctl) == 0) {
		close_held(env, c);
		enif_mutex_unlock(c->ctl);
	}
}

/*
 * reconnect(Chan, Path) -> ok | {error, Why}: after the gateway went away,
 * a new client in the same resource (so the pool and every process's
 * choice of channel stay), with the endpoints and services registered
 * again. Waiting callers have had {error, epipe}.
 */
static ERL_NIF_TERM nif_reconnect(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	char path[108];
	if (!get_chan(env, argv[0], &c) || get_name(env, argv[1], path, sizeof(path)) < 0)
		return enif_make_badarg(env);
	/* The old client goes first (its names with it, at the gateway), then
	 * the new one, ours alone until attached, connects and registers the
	 * names holding only ctl (the table changes only under it). */
	enif_mutex_lock(c->ctl);
	if (c->closed) {
		ctl_unlock(env, c);
		return error_tuple(env, -EPIPE);
	}
	enif_mutex_lock(c->rx);
	enif_mutex_lock(c->tx);
	struct gw_client *old = chan_detach(env, c);
	enif_mutex_unlock(c->tx);
	enif_mutex_unlock(c->rx);
	if (old)
		gw_close(old);
	struct gw_client *cl;
	int dups[2];
	int rc = client_open(path, &cl, dups);
	if (rc < 0) {
		ctl_unlock(env, c);
		return error_tuple(env, rc);
	}
	static _Thread_local int failed[EPS_SLOTS]; /* dirty scheduler threads */
	for (unsigned i = 0; i < EPS_SLOTS; i++) {
		struct ep_entry *e = &c->eps[i];
		failed[i] = 0;
		if (ep_named(e))
			failed[i] = ep_claim(cl, e);
	}
	enif_mutex_lock(c->rx);
	for (unsigned i = 0; i < EPS_SLOTS; i++)
		if (failed[i] < 0) /* taken meanwhile, or no room: its owners hear so */
			name_lost(env, c, &c->eps[i], errno_atom(env, failed[i]));
	enif_mutex_lock(c->tx);
	chan_attach(c, cl, dups);
	enif_mutex_unlock(c->tx);
	enif_mutex_unlock(c->rx);
	ctl_unlock(env, c);
	return a_ok;
}

/* register(Chan, Name, Pid, endpoint | service | {topic, Policy}, Raw) ->
 * ok | {error, Why}; a service already served on this channel takes Pid as
 * one more server, a topic subscribed to with the same policy one more
 * subscriber (another policy: eexist). */
static ERL_NIF_TERM nif_register(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	char name[32];
	ErlNifPid pid;
	int arity;
	const ERL_NIF_TERM *tp;
	unsigned policy = 0;
	bool topic = enif_get_tuple(env, argv[3], &arity, &tp) && arity == 2 && tp[0] == a_topic &&
		     enif_get_uint(env, tp[1], &policy);
	if (!get_chan(env, argv[0], &c) || get_name(env, argv[1], name, sizeof(name)) < 0 ||
	    !enif_get_local_pid(env, argv[2], &pid) ||
	    (argv[3] != a_endpoint && argv[3] != a_service && !topic))
		return enif_make_badarg(env);
	bool service = argv[3] == a_service;
	/* Servers and subscribers share an entry; an endpoint has one owner. */
	uint8_t kind = service ? EP_SERVICE : topic ? EP_TOPIC : EP_ENDPOINT;
	/* The table changes under ctl and rx, so ctl alone may read it. An
	 * endpoint's entry goes in before the gateway knows the name, so no
	 * message for it finds no owner. A service is registered holding rx:
	 * the library's list of services is read by every receive. */
	enif_mutex_lock(c->ctl);
	int rc = -EPIPE;
	if (c->cl && !c->dead) {
		uint32_t id = gw_endpoint_id(name);
		struct ep_entry *e = ep_find(c, id);
		if (e && kind != EP_ENDPOINT && e->kind == kind && !strcmp(e->name, name) &&
		    (!topic || e->policy == policy)) {
			rc = e->npids < SERVERS_MAX ? 0 : -ENOSPC;
			enif_mutex_lock(c->rx);
			if (rc == 0)
				e->pid[e->npids++] = pid;
			enif_mutex_unlock(c->rx);
		} else if (e) {
			rc = -EEXIST;
		} else if (!(e = ep_add(c, id))) {
			rc = -ENOSPC;
		} else {
			enif_mutex_lock(c->rx);
			*e = (struct ep_entry){ .id = id, .pid = { pid }, .npids = 1,
						.raw = argv[4] == a_true, .kind = kind,
						.policy = policy };
			memcpy(e->name, name, sizeof(e->name));
			if (service)
				rc = gw_service(c->cl, name);
			enif_mutex_unlock(c->rx);
			if (!service)
				rc = ep_claim(c->cl, e);
			if (rc < 0) {
				enif_mutex_lock(c->rx);
				e->kind = EP_GONE;
				c->neps--;
				enif_mutex_unlock(c->rx);
			}
		}
	}
	ctl_unlock(env, c);
	return rc < 0 ? error_tuple(env, rc) : a_ok;
}

/* unregister(Chan, Name, Pid) -> ok | {error, Why}: Pid's registration of
 * Name (a name taken meanwhile by another process stays); the name goes
 * with its last server. */
static ERL_NIF_TERM nif_unregister(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	char name[32];
	ErlNifPid pid;
	if (!get_chan(env, argv[0], &c) || get_name(env, argv[1], name, sizeof(name)) < 0 ||
	    !enif_get_local_pid(env, argv[2], &pid))
		return enif_make_badarg(env);
	enif_mutex_lock(c->ctl);
	enif_mutex_lock(c->rx);
	struct ep_entry *e = ep_find(c, gw_endpoint_id(name));
	int rc = -ENOENT;
	bool last = false, service = false, topic = e && e->kind == EP_TOPIC;
	for (unsigned i = 0; e && i < e->npids; i++) {
		if (enif_compare_pids(&e->pid[i], &pid))
			continue;
		e->pid[i] = e->pid[--e->npids];
		rc = 0;
		if ((last = !e->npids)) {
			service = e->kind == EP_SERVICE;
			e->kind = EP_GONE;
			c->neps--;
		}
		break;
	}
	if (!service) /* a service's drop edits the library's list: keep rx */
		enif_mutex_unlock(c->rx);
	if (last && c->cl && !c->dead)
		rc = topic ? gw_unsubscribe(c->cl, name) : gw_unregister(c->cl, name);
	if (service)
		enif_mutex_unlock(c->rx);
	ctl_unlock(env, c);
	return rc < 0 && rc != -EPIPE ? error_tuple(env, rc) : a_ok;
}

/* nodes(Chan) -> [{Id, Name, Up, Self}] | {error, Why} */
static ERL_NIF_TERM nif_nodes(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	if (!get_chan(env, argv[0], &c))
		return enif_make_badarg(env);
	struct gw_node_info info[256];
	enif_mutex_lock(c->ctl);
	int n = c->cl && !c->dead ? gw_nodes(c->cl, info, 256) : -EPIPE;
	ctl_unlock(env, c);
	if (n < 0)
		return error_tuple(env, n);
	ERL_NIF_TERM list = enif_make_list(env, 0);
	for (int i = (n < 256 ? n : 256) - 1; i >= 0; i--) {
		ERL_NIF_TERM name;
		size_t len = strnlen(info[i].name, sizeof(info[i].name));
		memcpy(enif_make_new_binary(env, len, &name), info[i].name, len);
		list = enif_make_list_cell(env,
			enif_make_tuple4(env, enif_make_uint(env, info[i].id), name,
					 info[i].up ? a_true : a_false,
					 info[i].self ? a_true : a_false),
			list);
	}
	return list;
}

/* --- sending: normal schedulers, never waiting --- */

/* Claim the next message number of class cls for the caller, before the
 * send (tx held): the pid first, then the number, which a reader checks
 * on both sides of its read of the pid. sent_done counts it once the send
 * took. */
static void sent_claim(struct chan *c, ErlNifEnv *env, unsigned cls)
{
	uint32_t id = sent_id(cls, c->sent[cls].next);
	struct sent *s = sent_slot(c, id);
	ErlNifPid self;
	enif_self(env, &self);
	__atomic_store_n(&s->set, false, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* "unset" is seen before the new pid */
	__atomic_store_n(&s->pid.pid, self.pid, __ATOMIC_RELAXED);
	__atomic_store_n(&s->msg_id, id, __ATOMIC_RELEASE);
	__atomic_store_n(&s->set, true, __ATOMIC_RELEASE);
}

static void sent_done(struct chan *c, unsigned cls)
{
	c->sent[cls].next++;
}

/* Who sent msg_id, if the window still says (rx held, senders may write). */
static bool sent_by(struct chan *c, uint32_t msg_id, ErlNifPid *pid)
{
	struct sent *s = sent_slot(c, msg_id);
	if (!__atomic_load_n(&s->set, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&s->msg_id, __ATOMIC_ACQUIRE) != msg_id)
		return false;
	pid->pid = __atomic_load_n(&s->pid.pid, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* the pid is read before the re-check */
	return __atomic_load_n(&s->set, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&s->msg_id, __ATOMIC_RELAXED) == msg_id;
}

static bool get_payload(ErlNifEnv *env, ERL_NIF_TERM t, ErlNifBinary *b)
{
	return enif_inspect_binary(env, t, b) || enif_inspect_iolist_as_binary(env, t, b);
}

/* Urgent: true or false, the class of a send (GW_URGENT); else badarg. */
static bool get_urgent(ErlNifEnv *env, ERL_NIF_TERM t, unsigned *cls)
{
	if (t != a_true && t != a_false)
		return false;
	*cls = t == a_true;
	return true;
}

/* send(Chan, Node, Endpoint, IoData, Urgent) and cast(Chan, Node, Service,
 * IoData, Urgent) */
static ERL_NIF_TERM send_or_cast(ErlNifEnv *env, const ERL_NIF_TERM argv[], bool cast)
{
	struct chan *c;
	uint16_t node;
	char name[32];
	ErlNifBinary b;
	unsigned cls;
	if (!get_chan(env, argv[0], &c) || !get_node(env, argv[1], &node) ||
	    !get_payload(env, argv[3], &b) || !get_urgent(env, argv[4], &cls))
		return enif_make_badarg(env);
	if (get_name(env, argv[2], name, sizeof(name)) < 0)
		return error_tuple(env, -EINVAL);
	unsigned flags = cls ? GW_URGENT : 0;
	enif_mutex_lock(c->tx);
	int rc = -EPIPE;
	if (c->cl && !c->dead) {
		sent_claim(c, env, cls);
		rc = cast ? gw_cast_flags(c->cl, node, name, b.data, b.size, 0, flags)
			  : gw_send_flags(c->cl, node, name, b.data, b.size, 0, flags);
		if (rc == 0)
			sent_done(c, cls);
	}
	enif_mutex_unlock(c->tx);
	return rc < 0 ? error_tuple(env, rc) : a_ok;
}

static ERL_NIF_TERM nif_send(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	return send_or_cast(env, argv, false);
}

static ERL_NIF_TERM nif_cast(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	return send_or_cast(env, argv, true);
}

/* publish(Chan, Topic, IoData, Urgent): to every subscriber of Topic; a
 * REJECT (a hold subscriber that stayed full) comes back to the caller. */
static ERL_NIF_TERM nif_publish(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	char name[32];
	ErlNifBinary b;
	unsigned cls;
	if (!get_chan(env, argv[0], &c) || !get_payload(env, argv[2], &b) ||
	    !get_urgent(env, argv[3], &cls))
		return enif_make_badarg(env);
	if (get_name(env, argv[1], name, sizeof(name)) < 0)
		return error_tuple(env, -EINVAL);
	enif_mutex_lock(c->tx);
	int rc = -EPIPE;
	if (c->cl && !c->dead) {
		sent_claim(c, env, cls);
		rc = gw_publish(c->cl, name, b.data, b.size, 0, cls ? GW_URGENT : 0);
		if (rc == 0)
			sent_done(c, cls);
	}
	enif_mutex_unlock(c->tx);
	return rc < 0 ? error_tuple(env, rc) : a_ok;
}

/* call(Chan, Node, Service, IoData, TimeoutMs, Urgent) -> {ok, CallId} |
 * {error, Why}; the outcome comes as {gridwire_reply, Index, CallId, Result}. */
static ERL_NIF_TERM nif_call(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	uint16_t node;
	char name[32];
	ErlNifBinary b;
	int timeout;
	unsigned cls;
	if (!get_chan(env, argv[0], &c) || !get_node(env, argv[1], &node) ||
	    !get_payload(env, argv[3], &b) || !enif_get_int(env, argv[4], &timeout) ||
	    timeout <= 0 || !get_urgent(env, argv[5], &cls))
		return enif_make_badarg(env);
	if (get_name(env, argv[2], name, sizeof(name)) < 0)
		return error_tuple(env, -EINVAL);
	uint32_t id = 0;
	enif_mutex_lock(c->rx);
	enif_mutex_lock(c->tx);
	int rc = -EPIPE;
	bool idle = false;
	if (c->cl && !c->dead) {
		idle = gw_wait_ms(c->cl) < 0; /* the channel's process sleeps with no deadline */
		sent_claim(c, env, cls);
		rc = gw_call_start_flags(c->cl, node, name, b.data, b.size, timeout,
					 cls ? GW_URGENT : 0, &id);
		if (rc == 0) {
			sent_done(c, cls);
			struct caller *k = &c->calls[id % GW_CALLS_MAX];
			k->call_id = id;
			enif_self(env, &k->pid);
		}
	}
	enif_mutex_unlock(c->tx);
	enif_mutex_unlock(c->rx);
	if (rc == 0 && idle) /* so that it looks again by this call's deadline */
		enif_send(env, &c->owner, NULL, a_drain);
	if (rc < 0)
		return error_tuple(env, rc);
	return enif_make_tuple2(env, a_ok, enif_make_uint(env, id));
}

/* forget(Chan, CallId): its outcome is no longer wanted: none comes, and
 * the library's slot is free at once. */
static ERL_NIF_TERM nif_forget(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	unsigned id;
	if (!get_chan(env, argv[0], &c) || !enif_get_uint(env, argv[1], &id))
		return enif_make_badarg(env);
	enif_mutex_lock(c->rx);
	struct caller *k = &c->calls[id % GW_CALLS_MAX];
	if (k->call_id == id) {
		k->call_id = 0;
		if (c->cl)
			gw_call_cancel(c->cl, id);
	}
	enif_mutex_unlock(c->rx);
	return a_ok;
}

/* respond(Chan, Node, Sender, CallId, Failed, IoData, Urgent) -> ok |
 * {error, Why}: Urgent as the request came */
static ERL_NIF_TERM nif_respond(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	uint16_t node;
	unsigned sender, call_id, cls;
	ErlNifBinary b;
	if (!get_chan(env, argv[0], &c) || !get_node(env, argv[1], &node) ||
	    !enif_get_uint(env, argv[2], &sender) || sender > UINT16_MAX ||
	    !enif_get_uint(env, argv[3], &call_id) || !get_payload(env, argv[5], &b) ||
	    !get_urgent(env, argv[6], &cls))
		return enif_make_badarg(env);
	struct gw_msg req = { .kind = GW_MSG_REQUEST, .node = node, .sender = (uint16_t)sender,
			      .call_id = call_id, .flags = cls ? GW_URGENT : 0 };
	enif_mutex_lock(c->tx);
	int rc = -EPIPE;
	if (c->cl && !c->dead) {
		sent_claim(c, env, cls);
		rc = gw_respond(c->cl, &req, argv[4] == a_true, b.data, b.size, 0);
		if (rc == 0)
			sent_done(c, cls);
	}
	enif_mutex_unlock(c->tx);
	return rc < 0 ? error_tuple(env, rc) : a_ok;
}

static ERL_NIF_TERM nif_local_node(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	if (!get_chan(env, argv[0], &c))
		return enif_make_badarg(env);
	enif_mutex_lock(c->rx);
	int n = c->cl ? gw_local_node(c->cl) : -EPIPE;
	enif_mutex_unlock(c->rx);
	return n < 0 ? error_tuple(env, n) : enif_make_int(env, n);
}

static ERL_NIF_TERM nif_node_up(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	uint16_t node;
	if (!get_chan(env, argv[0], &c) || !get_node(env, argv[1], &node))
		return enif_make_badarg(env);
	enif_mutex_lock(c->tx);
	int up = c->cl && !c->dead && gw_node_up(c->cl, node);
	enif_mutex_unlock(c->tx);
	return up ? a_true : a_false;
}

/* --- draining: the channel's process --- */

/* The payload as a term (safe) or, raw or undecodable, a binary. */
static ERL_NIF_TERM payload(struct chan *c, const struct gw_msg *m, bool raw, bool *bad)
{
	ERL_NIF_TERM t;
	*bad = false;
	/* Compressed terms (tag 80) are refused: a few bytes could declare
	 * gigabytes, and the safe option does not bound that. */
	const uint8_t *d = m->data;
	bool compressed = m->len >= 2 && d[0] == 131 && d[1] == 80;
	if (!raw && m->len && !compressed &&
	    enif_binary_to_term(c->msg_env, m->data, m->len, &t, ERL_NIF_BIN2TERM_SAFE) == m->len)
		return t;
	*bad = !raw;
	memcpy(enif_make_new_binary(c->msg_env, m->len, &t), m->data, m->len);
	return t;
}

/* How a call ended, in ecall's words. */
static ERL_NIF_TERM outcome(struct chan *c, const struct gw_msg *m)
{
	ErlNifEnv *e = c->msg_env;
	bool bad;
	switch (m->error) {
	case 0: return enif_make_tuple2(e, a_ok, payload(c, m, false, &bad));
	case -EREMOTEIO: return enif_make_tuple2(e, a_error, payload(c, m, false, &bad));
	case -ETIMEDOUT: return enif_make_tuple2(e, a_error, a_timeout);
	case -ENOENT: return enif_make_tuple2(e, a_error, a_noservice);
	case -ENOBUFS: return enif_make_tuple2(e, a_error, a_overload);
	case -EHOSTDOWN: return enif_make_tuple2(e, a_badrpc, a_nodedown);
	case -EHOSTUNREACH: return enif_make_tuple2(e, a_badrpc, a_unreachable);
	default: return enif_make_tuple2(e, a_error, errno_atom(e, m->error));
	}
}

/* {gridwire_publish, Topic, FromNode, Msg} (Msg as a subscriber with raw
 * takes it; an undecodable term as a binary, counted). */
static ERL_NIF_TERM publication(struct chan *c, const struct gw_msg *m, const struct ep_entry *ep,
				bool *bad)
{
	ErlNifEnv *e = c->msg_env;
	ERL_NIF_TERM topic;
	size_t len = strlen(ep->name);
	memcpy(enif_make_new_binary(e, len, &topic), ep->name, len);
	ERL_NIF_TERM data = payload(c, m, ep->raw, bad);
	c->bad_terms += *bad;
	return enif_make_tuple4(e, a_gridwire_publish, topic, enif_make_uint(e, m->node), data);
}

/*
 * Hand one message to its process (rx held). Returns the entry whose
 * owner's mailbox is due a look, or NULL.
 */
static struct ep_entry *dispatch(ErlNifEnv *env, struct chan *c, const struct gw_msg *m)
{
	ErlNifEnv *e = c->msg_env;
	ERL_NIF_TERM msg, from = enif_make_uint(e, m->node);
	ErlNifPid to = c->owner;
	struct ep_entry *ep = NULL;
	bool bad = false;
	switch (m->kind) {
	case GW_MSG_DATA:
	case GW_MSG_CAST:
	case GW_MSG_REQUEST:
		ep = ep_find(c, m->endpoint);
		if (!ep) { /* unregistered meanwhile: the channel's process counts it */
			msg = enif_make_tuple3(e, a_gridwire_orphan, from,
					       enif_make_uint(e, m->endpoint));
			break;
		}
		ep->next = ep->npids > 1 ? (uint8_t)((ep->next + 1) % ep->npids) : 0;
		to = ep->pid[ep->next];
		if (m->kind == GW_MSG_DATA)
			msg = enif_make_tuple3(e, a_gridwire, from, payload(c, m, ep->raw, &bad));
		else if (m->kind == GW_MSG_CAST)
			msg = enif_make_tuple3(e, a_gridwire_cast, from, payload(c, m, false, &bad));
		else
			msg = enif_make_tuple6(e, a_gridwire_request, from,
					       enif_make_uint(e, m->sender),
					       enif_make_uint(e, m->call_id),
					       m->flags & GW_URGENT ? a_true : a_false,
					       payload(c, m, false, &bad));
		if (bad) {
			c->bad_terms++;
			msg = enif_make_tuple3(e, a_gridwire_bad_term, from,
					       payload(c, m, true, &bad));
		}
		break;
	case GW_MSG_PUBLISH:
		ep = ep_find(c, m->endpoint);
		if (!ep || ep->kind != EP_TOPIC) {
			msg = enif_make_tuple3(e, a_gridwire_orphan, from,
					       enif_make_uint(e, m->endpoint));
			ep = NULL;
			break;
		}
		/* Every subscriber but the last gets its copy here, the last
		 * below as any message. */
		for (unsigned k = 0; k + 1 < ep->npids; k++) {
			enif_send(env, &ep->pid[k], e, publication(c, m, ep, &bad));
			enif_clear_env(e); /* a send takes the env's terms */
		}
		to = ep->pid[ep->npids - 1];
		msg = publication(c, m, ep, &bad);
		ep->next = (uint8_t)(ep->npids - 1); /* whose mailbox a look goes to */
		break;
	case GW_MSG_REPLY: {
		struct caller *k = &c->calls[m->call_id % GW_CALLS_MAX];
		if (k->call_id != m->call_id)
			return NULL; /* its caller is gone (closed) */
		k->call_id = 0;
		to = k->pid;
		msg = enif_make_tuple4(e, a_gridwire_reply, enif_make_int(e, c->index),
				       enif_make_uint(e, m->call_id), outcome(c, m));
		break;
	}
	case GW_MSG_REJECT: {
		if (!sent_by(c, m->msg_id, &to))
			c->rejects_unrouted++; /* to the channel's process, which logs it */
		msg = enif_make_tuple4(e, a_gridwire_reject, from, enif_make_uint(e, m->endpoint),
				       errno_atom(e, m->error));
		break;
	}
	case GW_MSG_LOST: { /* which sends is not known: the channel's process logs it */
		uint64_t k;
		memcpy(&k, m->data, sizeof(k));
		c->rejects_lost += k;
		msg = enif_make_tuple2(e, a_gridwire_lost, enif_make_uint64(e, k));
		break;
	}
	default:
		return NULL;
	}
	if (!enif_send(env, &to, e, msg)) {
		if (ep) /* the owner is gone: its monitor will tell */
			ep = NULL;
		else if (m->kind == GW_MSG_REJECT) /* its sender has exited: counted, for stats/0 */
			c->rejects_sender_gone++;
	}
	enif_clear_env(e);
	c->delivered += m->kind != GW_MSG_LOST;
	if (ep && ++ep->unchecked >= CHECK_EVERY) {
		ep->unchecked = 0;
		return ep;
	}
	return NULL;
}

/*
 * drain(Chan, Max) -> {Status, Due}: hands out up to Max messages. Status:
 * more (Max handed out), armed (empty; {select, ...} comes with the next),
 * {wait, Ms} (armed, and calls in flight want a look within Ms), closed
 * (the gateway went away). Due: the processes whose mailboxes are due a
 * look (each at most once, in no order).
 */
static ERL_NIF_TERM nif_drain(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	unsigned max;
	if (!get_chan(env, argv[0], &c) || !enif_get_uint(env, argv[1], &max))
		return enif_make_badarg(env);
	ERL_NIF_TERM due = enif_make_list(env, 0), status = a_more;
	enif_mutex_lock(c->rx);
	if (!c->cl || c->dead) {
		enif_mutex_unlock(c->rx);
		return enif_make_tuple2(env, a_closed, due);
	}
	unsigned n = 0;
	while (n < max) {
		struct gw_msg m;
		int rc = gw_recv(c->cl, &m, 0);
		if (rc == 0) {
			struct ep_entry *ep = dispatch(env, c, &m);
			if (ep)
				due = enif_make_list_cell(env, enif_make_pid(env, &ep->pid[ep->next]),
							  due);
			n++;
			continue;
		}
		if (rc == -EAGAIN)
			rc = gw_arm(c->cl, GW_WAIT_RECV);
		if (rc == 1)
			continue;
		if (rc == 0) {
			for (int i = 0; i < 2; i++)
				enif_select(env, (ErlNifEvent)c->fds[i], ERL_NIF_SELECT_READ, c, NULL,
					    i ? a_hup : a_rx);
			int ms = gw_wait_ms(c->cl);
			status = ms < 0 ? a_armed : enif_make_tuple2(env, a_wait, enif_make_int(env, ms));
		} else {
			/* Every send in doubt has been told (a REJECT with epipe,
			 * from the library), but one made meanwhile on another
			 * scheduler: with tx held no more can be, so what the
			 * library still has to tell is told now. Then the next
			 * client counts its sends from 0: the log starts afresh. */
			enif_mutex_lock(c->tx);
			c->dead = true;
			struct gw_msg late;
			while (gw_recv(c->cl, &late, 0) == 0)
				dispatch(env, c, &late);
			for (unsigned k = 0; k < 2; k++)
				memset(c->sent[k].s, 0, c->sent[k].size * sizeof(struct sent));
			enif_mutex_unlock(c->tx);
			status = a_closed;
		}
		break;
	}
	enif_mutex_unlock(c->rx);
	if (n) /* about a microsecond a message, of a 1 ms slice */
		enif_consume_timeslice(env, n >= 1000 ? 100 : (int)(n / 10 + 1));
	return enif_make_tuple2(env, status, due);
}

/* stats(Chan) -> #{delivered, rejects_unrouted, rejects_sender_gone, rejects_lost, bad_terms,
 * endpoints} */
static ERL_NIF_TERM nif_stats(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct chan *c;
	if (!get_chan(env, argv[0], &c))
		return enif_make_badarg(env);
	enif_mutex_lock(c->rx);
	ERL_NIF_TERM keys[] = { enif_make_atom(env, "delivered"),
				enif_make_atom(env, "rejects_unrouted"),
				enif_make_atom(env, "rejects_sender_gone"),
				enif_make_atom(env, "rejects_lost"),
				enif_make_atom(env, "bad_terms"), enif_make_atom(env, "endpoints") };
	ERL_NIF_TERM vals[] = { enif_make_uint64(env, c->delivered),
				enif_make_uint64(env, c->rejects_unrouted),
				enif_make_uint64(env, c->rejects_sender_gone),
				enif_make_uint64(env, c->rejects_lost),
				enif_make_uint64(env, c->bad_terms), enif_make_uint(env, c->neps) };
	enif_mutex_unlock(c->rx);
	ERL_NIF_TERM map;
	enif_make_map_from_arrays(env, keys, vals, 6, &map);
	return map;
}

static ERL_NIF_TERM nif_endpoint_id(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	char name[32];
	if (get_name(env, argv[0], name, sizeof(name)) < 0)
		return enif_make_badarg(env);
	return enif_make_uint(env, gw_endpoint_id(name));
}

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
	ErlNifResourceTypeInit init = { .dtor = chan_dtor, .stop = chan_stop, .down = chan_down };
	chan_type = enif_open_resource_type_x(env, "gridwire_chan", &init, ERL_NIF_RT_CREATE,
					      NULL);
	if (!chan_type)
		return -1;
#define A(v, s) v = enif_make_atom(env, s)
	A(a_ok, "ok"); A(a_error, "error"); A(a_eagain, "eagain"); A(a_epipe, "epipe");
	A(a_emsgsize, "emsgsize"); A(a_hostunreach, "ehostunreach"); A(a_einval, "einval");
	A(a_eexist, "eexist"); A(a_eperm, "eperm"); A(a_enospc, "enospc"); A(a_enoent, "enoent");
	A(a_ebusy, "ebusy"); A(a_econnrefused, "econnrefused"); A(a_eacces, "eacces");
	A(a_timeout, "timeout"); A(a_nodedown, "nodedown"); A(a_noservice, "noservice");
	A(a_overload, "overload"); A(a_more, "more"); A(a_armed, "armed");
	A(a_wait, "wait"); A(a_closed, "closed"); A(a_gridwire, "gridwire");
	A(a_gridwire_cast, "gridwire_cast"); A(a_gridwire_request, "gridwire_request");
	A(a_gridwire_reply, "gridwire_reply"); A(a_gridwire_reject, "gridwire_reject");
	A(a_gridwire_lost, "gridwire_lost");
	A(a_gridwire_bad_term, "gridwire_bad_term"); A(a_badrpc, "badrpc"); A(a_rx, "rx");
	A(a_hup, "hup"); A(a_true, "true"); A(a_false, "false"); A(a_endpoint, "endpoint");
	A(a_service, "service"); A(a_unreachable, "unreachable"); A(a_enomem, "enomem");
	A(a_gridwire_orphan, "gridwire_orphan");
	A(a_enobufs, "enobufs"); A(a_ehostdown, "ehostdown"); A(a_drain, "drain");
	A(a_gridwire_name_lost, "gridwire_name_lost");
	A(a_topic, "topic"); A(a_gridwire_publish, "gridwire_publish");
#undef A
	return 0;
}

#define DIRTY ERL_NIF_DIRTY_JOB_IO_BOUND
static ErlNifFunc funcs[] = {
	{ "open", 2, nif_open, DIRTY },
	{ "close", 1, nif_close, DIRTY },
	{ "reconnect", 2, nif_reconnect, DIRTY },
	{ "register", 5, nif_register, DIRTY },
	{ "unregister", 3, nif_unregister, DIRTY },
	{ "nodes", 1, nif_nodes, DIRTY },
	{ "send", 5, nif_send, 0 },
	{ "cast", 5, nif_cast, 0 },
	{ "publish", 4, nif_publish, 0 },
	{ "call", 6, nif_call, 0 },
	{ "forget", 2, nif_forget, 0 },
	{ "respond", 7, nif_respond, 0 },
	{ "drain", 2, nif_drain, 0 },
	{ "local_node", 1, nif_local_node, 0 },
	{ "node_up", 2, nif_node_up, 0 },
	{ "stats", 1, nif_stats, 0 },
	{ "endpoint_id", 1, nif_endpoint_id, 0 },
};

ERL_NIF_INIT(gridwire_nif, funcs, load, NULL, NULL, NULL)
