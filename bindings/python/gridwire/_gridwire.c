/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gridwire._gridwire: the CPython module over libgridwire (gridwire.h).
 * The package (__init__.py) adds the exceptions, the kinds and the
 * asyncio layer; this file keeps what runs per message in C.
 *
 * Threads: each Client has one lock, taken around every libgridwire call,
 * so that threads may share a client safely. It is taken without the GIL
 * held when it is contended, and released before the GIL is taken again,
 * so the two never deadlock. Waits (a full channel, an empty one) are
 * gw_arm and poll() on the client's descriptors with the GIL and the lock
 * released, in slices, so that signals (Ctrl-C) are seen while waiting.
 * Calls and the multi-node patterns run inside libgridwire with the GIL
 * released and the lock held: they are bounded by their timeout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "gridwire.h"

/* How long one wait sleeps before it looks at signals again. */
#define WAIT_SLICE_MS 100

/* Set by the package at import: errno -> exception class, kind -> enum. */
static PyObject *error_map;  /* dict: int errno -> class */
static PyObject *error_base; /* gridwire.Error */
static PyObject *result_cls; /* gridwire.Result */
static PyObject *node_cls;   /* gridwire.NodeInfo */

/* ------------------------------------------------------------------ */
/* errors */

/* Raise the exception for a negative errno; reason: -EREMOTEIO's text. */
static PyObject *raise_err(int err, const char *reason, Py_ssize_t rlen)
{
	PyObject *num = PyLong_FromLong(-err);
	PyObject *cls = num && error_map ? PyDict_GetItemWithError(error_map, num) : NULL;
	Py_XDECREF(num);
	if (PyErr_Occurred())
		return NULL;
	if (!cls)
		cls = error_base ? error_base : PyExc_OSError;
	PyObject *args;
	if (reason)
		args = Py_BuildValue("(isy#)", -err, gw_strerror(err), reason, rlen);
	else
		args = Py_BuildValue("(is)", -err, gw_strerror(err));
	if (args) {
		PyErr_SetObject(cls, args);
		Py_DECREF(args);
	}
	return NULL;
}

/* The exception object itself (for results that carry an error). */
static PyObject *make_err(int err, const void *reason, size_t rlen)
{
	raise_err(err, reason, (Py_ssize_t)rlen);
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	Py_XDECREF(type);
	Py_XDECREF(tb);
	return value;
}

/* ------------------------------------------------------------------ */
/* arguments */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* timeout in seconds (None: for ever) -> ms as libgridwire takes it. */
static int timeout_arg(PyObject *o, int *ms)
{
	if (!o || o == Py_None) {
		*ms = -1;
		return 0;
	}
	double s = PyFloat_AsDouble(o);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	if (!(s >= 0) || s > 2000000.0) {
		PyErr_Format(PyExc_ValueError,
			     "timeout must be None or 0 .. 2000000 seconds, not %R", o);
		return -1;
	}
	*ms = (int)ceil(s * 1000.0);
	return 0;
}

static int node_arg(PyObject *o, uint16_t *node)
{
	long v = PyLong_AsLong(o);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (v < 0 || v > 0xffff) {
		PyErr_Format(PyExc_ValueError, "node must be 0 .. 65535, not %ld", v);
		return -1;
	}
	*node = (uint16_t)v;
	return 0;
}

/* node_arg as a PyArg "O&" converter (1: done, 0: an error is set). */
static int node_conv(PyObject *o, void *node)
{
	return node_arg(o, node) == 0;
}

/* A list of node ids -> a malloc'd array. */
static uint16_t *nodes_arg(PyObject *o, unsigned *n)
{
	PyObject *seq = PySequence_Fast(o, "nodes must be a sequence of node ids");
	if (!seq)
		return NULL;
	Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
	if (len == 0 || len > 0xffff) {
		Py_DECREF(seq);
		PyErr_SetString(PyExc_ValueError, "nodes must name 1 .. 65535 nodes");
		return NULL;
	}
	uint16_t *v = PyMem_Malloc(sizeof(*v) * (size_t)len);
	if (!v) {
		Py_DECREF(seq);
		return (uint16_t *)PyErr_NoMemory();
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		if (node_arg(PySequence_Fast_GET_ITEM(seq, i), &v[i]) < 0) {
			PyMem_Free(v);
			Py_DECREF(seq);
			return NULL;
		}
	}
	Py_DECREF(seq);
	*n = (unsigned)len;
	return v;
}

/* A name (endpoint, service, topic) as UTF-8; libgridwire checks it. */
static const char *name_arg(PyObject *o, const char *what)
{
	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what,
			     Py_TYPE(o)->tp_name);
		return NULL;
	}
	Py_ssize_t len;
	const char *s = PyUnicode_AsUTF8AndSize(o, &len);
	if (s && (size_t)len != strlen(s)) {
		PyErr_Format(PyExc_ValueError, "%s must not hold a NUL", what);
		return NULL;
	}
	return s;
}

/* ------------------------------------------------------------------ */
/* Message */

struct message {
	PyObject_HEAD
	PyObject *kind;
	PyObject *data; /* bytes, or a memoryview (copy=False, recv_into) */
	uint32_t endpoint;
	uint16_t node;
	uint16_t sender;
	int error;
	uint32_t msg_id;
	uint32_t call_id;
	unsigned flags;
	int raw_kind;
};

static PyTypeObject message_type;

/* The Kind members by number (the package hands them over): one look per message. */
#define KINDS_MAX 16
static PyObject *kinds[KINDS_MAX];

static PyObject *kind_obj(int kind)
{
	if (kind >= 0 && kind < KINDS_MAX && kinds[kind])
		return Py_NewRef(kinds[kind]);
	return PyLong_FromLong(kind); /* a kind this module does not name yet: the number */
}

/* A Message from m; data: what to show as its data (stolen). */
static PyObject *message_new(const struct gw_msg *m, PyObject *data)
{
	if (!data)
		return NULL;
	struct message *o = PyObject_New(struct message, &message_type);
	if (!o) {
		Py_DECREF(data);
		return NULL;
	}
	o->data = data;
	o->kind = kind_obj(m->kind);
	if (!o->kind) {
		Py_DECREF(o);
		return NULL;
	}
	o->raw_kind = m->kind;
	o->endpoint = m->endpoint;
	o->node = m->node;
	o->sender = m->sender;
	o->error = m->error;
	o->msg_id = m->msg_id;
	o->call_id = m->call_id;
	o->flags = m->flags;
	return (PyObject *)o;
}

static void message_dealloc(struct message *o)
{
	Py_XDECREF(o->kind);
	Py_XDECREF(o->data);
	PyObject_Free(o);
}

static PyObject *message_repr(struct message *o)
{
	Py_ssize_t len = PyObject_Size(o->data); /* -1 once a view is released */
	PyErr_Clear();
	PyObject *name = PyObject_GetAttrString(o->kind, "name"); /* Kind.DATA: DATA */
	if (!name) {
		PyErr_Clear();
		name = PyObject_Str(o->kind);
		if (!name)
			return NULL;
	}
	PyObject *r = PyUnicode_FromFormat("<gridwire.Message %U node=%u sender=%u endpoint=0x%x "
				    "len=%zd error=%d%s>",
				    name, o->node, o->sender, o->endpoint, len, o->error,
				    o->flags & GW_URGENT ? " urgent" : "");
	Py_DECREF(name);
	return r;
}

static PyObject *message_urgent(struct message *o, void *unused)
{
	return PyBool_FromLong(o->flags & GW_URGENT);
}

/* A REPLY's outcome: the data, or its error raised. */
static PyObject *message_result(struct message *o, PyObject *unused)
{
	if (!o->error) {
		Py_INCREF(o->data);
		return o->data;
	}
	if (o->error == -EREMOTEIO) {
		Py_buffer b;
		if (PyObject_GetBuffer(o->data, &b, PyBUF_SIMPLE) < 0)
			return NULL;
		raise_err(o->error, b.buf, b.len);
		PyBuffer_Release(&b);
		return NULL;
	}
	return raise_err(o->error, NULL, 0);
}

static PyMemberDef message_members[] = {
	{ "kind", T_OBJECT, offsetof(struct message, kind), READONLY,
	  "Kind: DATA, REJECT, REQUEST, CAST, REPLY, LOST or PUBLISH" },
	{ "data", T_OBJECT, offsetof(struct message, data), READONLY,
	  "the payload: bytes, or a memoryview (recv(copy=False), recv_into)" },
	{ "endpoint", T_UINT, offsetof(struct message, endpoint), READONLY,
	  "DATA, REQUEST, CAST: our endpoint's id; REJECT: its target's; PUBLISH: the topic's" },
	{ "node", T_USHORT, offsetof(struct message, node), READONLY,
	  "DATA, REQUEST, CAST, PUBLISH: the source node; REJECT, REPLY: the node asked" },
	{ "sender", T_USHORT, offsetof(struct message, sender), READONLY,
	  "the sending client's channel on its node" },
	{ "error", T_INT, offsetof(struct message, error), READONLY,
	  "REJECT, REPLY: 0 or a negative errno (see result())" },
	{ "msg_id", T_UINT, offsetof(struct message, msg_id), READONLY,
	  "REJECT: which send (counting per client and class; URGENT_ID bit for urgent)" },
	{ "call_id", T_UINT, offsetof(struct message, call_id), READONLY,
	  "REQUEST: the caller's call; REPLY: which of our calls (call_start's id)" },
	{ "flags", T_UINT, offsetof(struct message, flags), READONLY,
	  "URGENT if it came as urgent" },
	{ NULL },
};

static PyGetSetDef message_getset[] = {
	{ "urgent", (getter)message_urgent, NULL, "True if it came as urgent", NULL },
	{ NULL },
};

static PyMethodDef message_methods[] = {
	{ "result", (PyCFunction)message_result, METH_NOARGS,
	  "A REPLY's outcome: its data, or the call's error raised (RemoteError carries the "
	  "handler's reason)." },
	{ NULL },
};

static PyTypeObject message_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gridwire.Message",
	.tp_basicsize = sizeof(struct message),
	.tp_dealloc = (destructor)message_dealloc,
	.tp_repr = (reprfunc)message_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A message handed out by Client.recv: kind, data, node, sender, endpoint, "
		  "msg_id, call_id, error, flags.",
	.tp_members = message_members,
	.tp_getset = message_getset,
	.tp_methods = message_methods,
};

/* ------------------------------------------------------------------ */
/* Channel views */

/*
 * The exporter behind recv(copy=False)'s memoryview: the message's bytes
 * in the channel. Every view of them (the memoryview, its slices, what
 * was made from them) holds an export here, so the next receive knows
 * whether any is still alive before the channel reuses the memory.
 */
struct chanview {
	PyObject_HEAD
	void *buf;
	Py_ssize_t len;
	Py_ssize_t exports;
	bool released;
};

/* What an empty message's view shows (REJECTs, calls' failures carry none). */
static char chanview_empty[1];

static int chanview_getbuffer(struct chanview *v, Py_buffer *view, int flags)
{
	if (v->released) {
		PyErr_SetString(PyExc_ValueError, "the message's data was released");
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)v, v->buf, v->len, 1, flags) < 0)
		return -1;
	v->exports++;
	return 0;
}

static void chanview_releasebuffer(struct chanview *v, Py_buffer *view)
{
	v->exports--;
}

static PyBufferProcs chanview_as_buffer = {
	.bf_getbuffer = (getbufferproc)chanview_getbuffer,
	.bf_releasebuffer = (releasebufferproc)chanview_releasebuffer,
};

static PyTypeObject chanview_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gridwire._ChannelView",
	.tp_basicsize = sizeof(struct chanview),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_as_buffer = &chanview_as_buffer,
};

/* ------------------------------------------------------------------ */
/* Client */

struct client {
	PyObject_HEAD
	struct gw_client *cl;
	PyThread_type_lock lock;
	PyObject *view;           /* the memoryview of the last recv(copy=False), or NULL */
	struct chanview *exporter; /* what it views */
	/* The last endpoint name sent to and its id: a loop that sends to one
	 * name hashes (and checks) it once. */
	PyObject *ep_name;
	uint32_t ep_id;
	PyObject *weakrefs;
};

static PyTypeObject client_type;

/* Take the client's lock, holding the GIL on return (see the top). */
static void lock_client(struct client *c)
{
	if (PyThread_acquire_lock(c->lock, NOWAIT_LOCK))
		return;
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(c->lock, WAIT_LOCK);
	Py_END_ALLOW_THREADS
}

static void unlock_client(struct client *c)
{
	PyThread_release_lock(c->lock);
}

static int open_client(struct client *c)
{
	if (c->cl)
		return 0;
	PyErr_SetString(PyExc_ValueError, "the client is closed");
	return -1;
}

/* Take the lock of an open client: 0, or -1 (closed: ValueError, no lock). */
static int lock_open(struct client *c)
{
	lock_client(c);
	if (open_client(c) == 0)
		return 0;
	unlock_client(c);
	return -1;
}

/*
 * Wait (GIL and lock released) until what may go on, the deadline passes,
 * or a signal comes: 0 to try again, -ETIMEDOUT, -EPIPE, or -1 with a
 * Python error set (the signal's).
 */
static int wait_for(struct client *c, enum gw_wait what, int64_t deadline)
{
	if (lock_open(c) < 0)
		return -1;
	int fds[2];
	int rc = gw_arm(c->cl, what);
	int rc2 = gw_wait_fds(c->cl, what, fds);
	int due = what == GW_WAIT_RECV ? gw_wait_ms(c->cl) : -1;
	unlock_client(c);
	if (rc < 0 || rc2 < 0)
		return -EPIPE;
	if (rc == 1)
		return 0;
	int ms = WAIT_SLICE_MS;
	if (deadline >= 0) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (left < ms)
			ms = (int)left;
	}
	if (due >= 0 && due < ms)
		ms = due;
	struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN },
			       { .fd = fds[1], .events = POLLIN } };
	Py_BEGIN_ALLOW_THREADS
	poll(p, 2, ms);
	Py_END_ALLOW_THREADS
	if (PyErr_CheckSignals() < 0)
		return -1;
	return 0;
}

static int64_t deadline_of(int ms)
{
	return ms < 0 ? -1 : now_ms() + ms;
}

static PyObject *client_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", NULL };
	PyObject *path;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:connect", kwlist, PyUnicode_FSConverter,
					 &path))
		return NULL;
	struct client *c = (struct client *)t->tp_alloc(t, 0);
	if (!c) {
		Py_DECREF(path);
		return NULL;
	}
	c->lock = PyThread_allocate_lock();
	if (!c->lock) {
		Py_DECREF(path);
		Py_DECREF(c);
		return PyErr_NoMemory();
	}
	int rc;
	const char *p = PyBytes_AS_STRING(path);
	Py_BEGIN_ALLOW_THREADS
	rc = gw_connect(p, &c->cl);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		c->cl = NULL;
		PyObject *num = PyLong_FromLong(-rc);
		PyObject *cls = num && error_map ? PyDict_GetItemWithError(error_map, num) : NULL;
		Py_XDECREF(num);
		PyObject *a = PyErr_Occurred() ? NULL
			: Py_BuildValue("(iN)", -rc,
					PyUnicode_FromFormat("cannot connect to the gateway at %s: %s",
							     p, gw_strerror(rc)));
		if (a) {
			PyErr_SetObject(cls ? cls : error_base ? error_base : PyExc_OSError, a);
			Py_DECREF(a);
		}
		Py_DECREF(path);
		Py_DECREF(c);
		return NULL;
	}
	Py_DECREF(path);
	return (PyObject *)c;
}

/* Release the last zero-copy view before its memory goes back to the
 * channel; refuse while any view of it is alive (a slice, an export). */
static int drop_view(struct client *c)
{
	if (!c->exporter)
		return 0;
	static PyObject *release;
	if (!release && !(release = PyUnicode_InternFromString("release")))
		return -1;
	PyObject *r = c->view ? PyObject_CallMethodNoArgs(c->view, release) : Py_NewRef(Py_None);
	if (r) {
		Py_DECREF(r);
		Py_CLEAR(c->view); /* its own export goes with it */
	} else if (!PyErr_ExceptionMatches(PyExc_BufferError)) {
		return -1;
	} else {
		PyErr_Clear();
	}
	if (c->view || c->exporter->exports) {
		PyErr_SetString(PyExc_BufferError,
				"a view of the last message's data (recv(copy=False)) is still "
				"alive: release it (or copy it) before the next receive");
		return -1;
	}
	c->exporter->released = true;
	Py_CLEAR(c->exporter);
	return 0;
}

/* Close the client: -1 (BufferError, still open) while a view of its
 * channel is alive, which would outlive the mapping. */
static int close_client(struct client *c)
{
	if (drop_view(c) < 0)
		return -1;
	if (c->cl) {
		struct gw_client *cl = c->cl;
		c->cl = NULL;
		Py_BEGIN_ALLOW_THREADS
		gw_close(cl);
		Py_END_ALLOW_THREADS
	}
	return 0;
}

static void client_dealloc(struct client *c)
{
	if (c->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)c);
	if (c->lock) {
		lock_client(c);
		if (close_client(c) < 0) {
			/* A view still reads the channel: keep it mapped (leak the
			 * client) rather than let the view read unmapped memory. */
			PyErr_WriteUnraisable((PyObject *)c);
			c->cl = NULL;
		}
		unlock_client(c);
		PyThread_free_lock(c->lock);
	}
	Py_CLEAR(c->ep_name);
	Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *client_close(struct client *c, PyObject *unused)
{
	lock_client(c);
	int rc = close_client(c);
	unlock_client(c);
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *client_enter(struct client *c, PyObject *unused)
{
	if (open_client(c) < 0)
		return NULL;
	Py_INCREF(c);
	return (PyObject *)c;
}

static PyObject *client_exit(struct client *c, PyObject *args)
{
	return client_close(c, NULL);
}

/* --- sending --- */

/*
 * After a send that returned rc < 0: 1 to try again (room may have come),
 * or 0 with the error raised. ms: the call's timeout (0: no wait, the
 * channel's -EAGAIN is the answer); *deadline starts at -2.
 */
static int send_again(struct client *c, int rc, int ms, int64_t *deadline)
{
	if (rc != -EAGAIN || ms == 0) {
		raise_err(rc, NULL, 0);
		return 0;
	}
	if (*deadline == -2)
		*deadline = deadline_of(ms);
	rc = wait_for(c, GW_WAIT_SEND, *deadline);
	if (rc == 0)
		return 1;
	if (rc != -1)
		raise_err(rc, NULL, 0);
	return 0;
}

enum send_op { OP_SEND, OP_CAST, OP_PUBLISH };

/* One try at timeout 0, under the lock. */
static int send_once(struct client *c, enum send_op op, uint16_t node, uint32_t id,
		     const char *name, Py_buffer *b, unsigned flags)
{
	if (op == OP_PUBLISH)
		return gw_publish(c->cl, name, b->buf, (size_t)b->len, 0, flags);
	if (op == OP_CAST)
		return gw_cast_flags(c->cl, node, name, b->buf, (size_t)b->len, 0, flags);
	if (!name)
		return gw_send_id(c->cl, node, id, b->buf, (size_t)b->len, 0);
	return gw_send_flags(c->cl, node, name, b->buf, (size_t)b->len, 0, flags);
}

/* Send, waiting for room as the timeout allows: None on success. */
static PyObject *do_send(struct client *c, enum send_op op, uint16_t node, PyObject *target,
			 Py_buffer *b, PyObject *timeout, int urgent)
{
	int ms;
	const char *name = NULL;
	unsigned long id = 0;
	if (timeout_arg(timeout, &ms) < 0)
		return NULL;
	if (op == OP_SEND && !urgent && target == c->ep_name) {
		id = c->ep_id;
	} else if (op == OP_SEND && PyLong_Check(target)) {
		id = PyLong_AsUnsignedLong(target);
		if (PyErr_Occurred() || id > UINT32_MAX) {
			PyErr_Clear();
			PyErr_SetString(PyExc_ValueError,
					"an endpoint id must be 0 .. 2**32-1 (endpoint_id(name))");
			return NULL;
		}
	} else if (!(name = name_arg(target, op == OP_PUBLISH ? "topic"
						: op == OP_CAST ? "service" : "endpoint"))) {
		return NULL;
	}
	if (urgent && !name) {
		PyErr_SetString(PyExc_ValueError, "an urgent send names its endpoint (a str)");
		return NULL;
	}
	unsigned flags = urgent ? GW_URGENT : 0;
	int64_t deadline = -2;
	for (;;) {
		if (lock_open(c) < 0)
			return NULL;
		int rc = send_once(c, op, node, (uint32_t)id, name, b, flags);
		unlock_client(c);
		if (rc >= 0) {
			if (op == OP_SEND && name && !urgent) { /* a good name: keep it */
				Py_INCREF(target);
				Py_XSETREF(c->ep_name, target);
				c->ep_id = gw_endpoint_id(name);
			}
			Py_RETURN_NONE;
		}
		if (!send_again(c, rc, ms, &deadline))
			return NULL;
	}
}

/* send() and cast(): node, a name (send: or an endpoint id), data, timeout, urgent. */
static PyObject *node_send(struct client *c, PyObject *args, PyObject *kw, enum send_op op)
{
	static char *kw_send[] = { "node", "endpoint", "data", "timeout", "urgent", NULL };
	static char *kw_cast[] = { "node", "service", "data", "timeout", "urgent", NULL };
	uint16_t node;
	PyObject *target, *timeout = Py_None;
	Py_buffer b;
	int urgent = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, op == OP_CAST ? "O&Oy*|O$p:cast" : "O&Oy*|O$p:send",
					 op == OP_CAST ? kw_cast : kw_send, node_conv, &node,
					 &target, &b, &timeout, &urgent))
		return NULL;
	PyObject *r = do_send(c, op, node, target, &b, timeout, urgent);
	PyBuffer_Release(&b);
	return r;
}

/* send() is called per message: positional calls skip the keyword parser. */
static PyObject *client_send(struct client *c, PyObject *const *args, Py_ssize_t nargs,
			     PyObject *kwnames)
{
	if (kwnames || nargs < 3 || nargs > 4) {
		Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
		PyObject *t = PyTuple_New(nargs), *kw = nkw ? PyDict_New() : NULL, *r = NULL;
		for (Py_ssize_t i = 0; t && i < nargs; i++)
			PyTuple_SET_ITEM(t, i, Py_NewRef(args[i]));
		for (Py_ssize_t i = 0; t && kw && i < nkw; i++)
			if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
				Py_CLEAR(t);
		if (t && (kw || !nkw))
			r = node_send(c, t, kw, OP_SEND);
		Py_XDECREF(t);
		Py_XDECREF(kw);
		return r;
	}
	uint16_t node;
	Py_buffer b;
	if (node_arg(args[0], &node) < 0 || PyObject_GetBuffer(args[2], &b, PyBUF_SIMPLE) < 0)
		return NULL;
	PyObject *r = do_send(c, OP_SEND, node, args[1], &b, nargs == 4 ? args[3] : Py_None, 0);
	PyBuffer_Release(&b);
	return r;
}

static PyObject *client_cast(struct client *c, PyObject *args, PyObject *kw)
{
	return node_send(c, args, kw, OP_CAST);
}

static PyObject *client_publish(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "topic", "data", "timeout", "urgent", NULL };
	PyObject *topic, *timeout = Py_None;
	Py_buffer b;
	int urgent = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "Oy*|O$p:publish", kwlist, &topic, &b,
					 &timeout, &urgent))
		return NULL;
	PyObject *r = do_send(c, OP_PUBLISH, 0, topic, &b, timeout, urgent);
	PyBuffer_Release(&b);
	return r;
}

/* --- receiving --- */

enum recv_mode { RX_COPY, RX_VIEW, RX_INTO };

/*
 * One message, the lock held (timeout 0): 1 and *out, 0 when there is
 * none, or -1 with an error set. into: recv_into's buffer.
 */
static int recv_locked(struct client *c, enum recv_mode mode, Py_buffer *into, PyObject **out)
{
	struct gw_msg m;
	int rc = gw_recv(c->cl, &m, 0);
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0) {
		raise_err(rc, NULL, 0);
		return -1;
	}
	PyObject *data;
	if (mode == RX_COPY) {
		data = PyBytes_FromStringAndSize(m.data, (Py_ssize_t)m.len);
	} else if (mode == RX_INTO) {
		/* The buffer holds msg_max (checked): the message always fits. */
		memcpy(into->buf, m.data, m.len);
		PyObject *mv = PyMemoryView_FromObject(into->obj);
		PyObject *mb = mv ? PyObject_CallMethod(mv, "cast", "s", "B") : NULL;
		data = mb ? PySequence_GetSlice(mb, 0, (Py_ssize_t)m.len) : NULL;
		Py_XDECREF(mb);
		Py_XDECREF(mv);
	} else {
		struct chanview *v = PyObject_New(struct chanview, &chanview_type);
		data = NULL;
		if (v) {
			v->buf = m.len ? (void *)m.data : chanview_empty;
			v->len = (Py_ssize_t)m.len;
			v->exports = 0;
			v->released = false;
			data = PyMemoryView_FromObject((PyObject *)v);
			if (data) {
				Py_INCREF(data);
				c->view = data;
				c->exporter = v;
			} else {
				Py_DECREF(v);
			}
		}
	}
	*out = message_new(&m, data);
	return *out ? 1 : -1;
}

/* recv_locked, taking the client's lock (and the last view back) for it. */
static int recv_once(struct client *c, enum recv_mode mode, Py_buffer *into, PyObject **out)
{
	if (lock_open(c) < 0)
		return -1;
	int rc = drop_view(c) < 0 ? -1 : recv_locked(c, mode, into, out);
	unlock_client(c);
	return rc;
}

/* Receive one message, waiting as the timeout allows: it, None, or NULL. */
static PyObject *do_recv(struct client *c, enum recv_mode mode, Py_buffer *into, int ms)
{
	int64_t deadline = -2;
	for (;;) {
		PyObject *m;
		int rc = recv_once(c, mode, into, &m);
		if (rc > 0)
			return m;
		if (rc < 0)
			return NULL;
		if (ms == 0)
			Py_RETURN_NONE;
		if (deadline == -2)
			deadline = deadline_of(ms);
		rc = wait_for(c, GW_WAIT_RECV, deadline);
		if (rc == -ETIMEDOUT)
			Py_RETURN_NONE;
		if (rc == -1)
			return NULL;
		if (rc < 0) { /* -EPIPE: gw_recv hands out what is left, then says so */
			rc = recv_once(c, mode, into, &m);
			return rc > 0 ? m : rc < 0 ? NULL : raise_err(-EPIPE, NULL, 0);
		}
	}
}

static PyObject *client_recv(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", "copy", NULL };
	PyObject *timeout = Py_None;
	int copy = 1, ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$p:recv", kwlist, &timeout, &copy) ||
	    timeout_arg(timeout, &ms) < 0)
		return NULL;
	return do_recv(c, copy ? RX_COPY : RX_VIEW, NULL, ms);
}

static PyObject *client_recv_into(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "buffer", "timeout", NULL };
	PyObject *timeout = Py_None;
	Py_buffer b;
	int ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "w*|O:recv_into", kwlist, &b, &timeout))
		return NULL;
	PyObject *r = NULL;
	if (timeout_arg(timeout, &ms) == 0 && open_client(c) == 0) {
		size_t max = gw_msg_max(c->cl);
		if ((size_t)b.len < max)
			PyErr_Format(PyExc_ValueError,
				     "recv_into needs a buffer of at least msg_max (%zu) bytes, "
				     "not %zd", max, b.len);
		else
			r = do_recv(c, RX_INTO, &b, ms);
	}
	PyBuffer_Release(&b);
	return r;
}

static PyObject *client_recv_batch(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "n", "timeout", NULL };
	Py_ssize_t n;
	PyObject *timeout = Py_None;
	int ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "n|O:recv_batch", kwlist, &n, &timeout) ||
	    timeout_arg(timeout, &ms) < 0)
		return NULL;
	if (n < 1) {
		PyErr_SetString(PyExc_ValueError, "recv_batch needs n >= 1");
		return NULL;
	}
	PyObject *list = PyList_New(0);
	if (!list)
		return NULL;
	/* Wait for the first; take the rest that are there already, under one
	 * lock (the first took the last view back). */
	PyObject *m = do_recv(c, RX_COPY, NULL, ms);
	if (m == Py_None) {
		Py_DECREF(m);
	} else if (m) {
		int rc = PyList_Append(list, m);
		Py_DECREF(m);
		if (rc == 0 && n > 1 && lock_open(c) == 0) {
			while (PyList_GET_SIZE(list) < n && recv_locked(c, RX_COPY, NULL, &m) > 0) {
				rc = PyList_Append(list, m);
				Py_DECREF(m);
				if (rc < 0)
					break;
			}
			unlock_client(c);
		}
	}
	if (PyErr_Occurred()) {
		if (PyList_GET_SIZE(list) == 0) {
			Py_DECREF(list);
			return NULL;
		}
		/* Messages already taken are handed out; the error comes next time
		 * (a gateway gone is said again by every call). */
		PyErr_Clear();
	}
	return list;
}

/* --- control --- */

typedef int (*name_fn)(struct gw_client *, const char *);

static PyObject *do_name(struct client *c, PyObject *o, name_fn fn, const char *what)
{
	const char *name = name_arg(o, what);
	if (!name)
		return NULL;
	if (lock_open(c) < 0)
		return NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = fn(c->cl, name);
	Py_END_ALLOW_THREADS
	unlock_client(c);
	if (rc < 0)
		return raise_err(rc, NULL, 0);
	Py_RETURN_NONE;
}

static PyObject *client_register(struct client *c, PyObject *o)
{
	return do_name(c, o, gw_register, "endpoint");
}

static PyObject *client_unregister(struct client *c, PyObject *o)
{
	return do_name(c, o, gw_unregister, "endpoint");
}

static PyObject *client_service(struct client *c, PyObject *o)
{
	return do_name(c, o, gw_service, "service");
}

static PyObject *client_unsubscribe(struct client *c, PyObject *o)
{
	return do_name(c, o, gw_unsubscribe, "topic");
}

static PyObject *client_subscribe(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "topic", "policy", NULL };
	PyObject *topic, *policy_o = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:subscribe", kwlist, &topic, &policy_o))
		return NULL;
	unsigned long policy = policy_o ? PyLong_AsUnsignedLong(policy_o) : GW_SUB_HOLD;
	if (PyErr_Occurred() || policy > UINT_MAX) {
		if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
			PyErr_Clear();
			PyErr_SetString(PyExc_ValueError, "policy must be SUB_HOLD, SUB_LATEST or "
					"sub_latest_key(n)");
		}
		return NULL;
	}
	const char *name = name_arg(topic, "topic");
	if (!name)
		return NULL;
	if (lock_open(c) < 0)
		return NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = gw_subscribe(c->cl, name, (unsigned)policy);
	Py_END_ALLOW_THREADS
	unlock_client(c);
	if (rc < 0)
		return raise_err(rc, NULL, 0);
	Py_RETURN_NONE;
}

static PyObject *client_flush(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *timeout = Py_None;
	int ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:flush", kwlist, &timeout) ||
	    timeout_arg(timeout, &ms) < 0)
		return NULL;
	/* A look at the channel under the lock (gw_flush waits 1 ms at most),
	 * then a wait for the gateway to take more without it, as a full
	 * channel's send waits: other threads and the event loop go on. */
	int64_t deadline = deadline_of(ms);
	for (;;) {
		int rc;
		if (lock_open(c) < 0)
			return NULL;
		rc = gw_flush(c->cl, 1);
		unlock_client(c);
		if (rc == 0)
			Py_RETURN_NONE;
		if (rc == -ETIMEDOUT && (deadline < 0 || now_ms() < deadline))
			rc = wait_for(c, GW_WAIT_SEND, deadline);
		if (rc == -1)
			return NULL;
		if (rc < 0)
			return raise_err(rc, NULL, 0);
	}
}

/* --- calls --- */

/* A call's timeout: seconds > 0, 5 when not given (ecall's default). */
static int call_timeout(PyObject *o, int *ms)
{
	if (!o) {
		*ms = 5000;
		return 0;
	}
	if (timeout_arg(o, ms) < 0)
		return -1;
	if (*ms <= 0) {
		PyErr_SetString(PyExc_ValueError, "a call's timeout must be > 0 seconds");
		return -1;
	}
	return 0;
}

static PyObject *client_call(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "node", "service", "data", "timeout", "urgent", NULL };
	uint16_t node;
	PyObject *svc, *timeout = NULL;
	Py_buffer b;
	int urgent = 0, ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&Oy*|O$p:call", kwlist, node_conv, &node,
					 &svc, &b, &timeout, &urgent))
		return NULL;
	PyObject *r = NULL;
	const char *name = name_arg(svc, "service");
	if (!name || call_timeout(timeout, &ms) < 0)
		goto out;
	lock_client(c);
	if (open_client(c) < 0 || drop_view(c) < 0) {
		unlock_client(c);
		goto out;
	}
	struct gw_msg m;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = gw_call_flags(c->cl, node, name, b.buf, (size_t)b.len, ms, urgent ? GW_URGENT : 0,
			   &m);
	Py_END_ALLOW_THREADS
	if (rc == 0)
		r = PyBytes_FromStringAndSize(m.data, (Py_ssize_t)m.len);
	else if (rc == -EREMOTEIO)
		raise_err(rc, m.data, (Py_ssize_t)m.len);
	else
		raise_err(rc, NULL, 0);
	unlock_client(c);
out:
	PyBuffer_Release(&b);
	return r;
}

static PyObject *client_call_start(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "node", "service", "data", "timeout", "urgent", "wait",
				  NULL };
	uint16_t node;
	PyObject *svc, *timeout = NULL;
	Py_buffer b;
	int urgent = 0, wait = 1, ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&Oy*|O$pp:call_start", kwlist, node_conv,
					 &node, &svc, &b, &timeout, &urgent, &wait))
		return NULL;
	PyObject *r = NULL;
	const char *name = name_arg(svc, "service");
	if (!name || call_timeout(timeout, &ms) < 0)
		goto out;
	unsigned flags = (urgent ? GW_URGENT : 0) | GW_NOWAIT;
	int64_t deadline = -2;
	for (;;) {
		uint32_t id;
		if (lock_open(c) < 0)
			goto out;
		int rc = gw_call_start_flags(c->cl, node, name, b.buf, (size_t)b.len, ms, flags,
					     &id);
		unlock_client(c);
		if (rc == 0) {
			r = PyLong_FromUnsignedLong(id);
			goto out;
		}
		if (!send_again(c, rc, wait ? ms : 0, &deadline))
			goto out;
	}
out:
	PyBuffer_Release(&b);
	return r;
}

static PyObject *client_call_cancel(struct client *c, PyObject *o)
{
	unsigned long id = PyLong_AsUnsignedLong(o);
	if (PyErr_Occurred())
		return NULL;
	if (lock_open(c) < 0)
		return NULL;
	int rc = id > UINT32_MAX ? -ENOENT : gw_call_cancel(c->cl, (uint32_t)id);
	unlock_client(c);
	if (rc < 0)
		return raise_err(rc, NULL, 0);
	Py_RETURN_NONE;
}

/* A REQUEST Message -> the fields gw_respond reads. */
static int request_arg(PyObject *o, struct gw_msg *m)
{
	if (!PyObject_TypeCheck(o, &message_type) ||
	    ((struct message *)o)->raw_kind != GW_MSG_REQUEST) {
		PyErr_SetString(PyExc_TypeError, "request must be a Message of kind REQUEST");
		return 0;
	}
	struct message *r = (struct message *)o;
	*m = (struct gw_msg){ .kind = GW_MSG_REQUEST, .node = r->node, .sender = r->sender,
			      .call_id = r->call_id, .flags = r->flags };
	return 1;
}

static PyObject *do_respond(struct client *c, struct gw_msg *req, int failed, Py_buffer *b,
			    int ms)
{
	int64_t deadline = -2;
	for (;;) {
		if (lock_open(c) < 0)
			return NULL;
		int rc = gw_respond(c->cl, req, failed, b->buf, (size_t)b->len, 0);
		unlock_client(c);
		if (rc >= 0)
			Py_RETURN_NONE;
		if (!send_again(c, rc, ms, &deadline))
			return NULL;
	}
}

static PyObject *client_reply(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "request", "data", "timeout", NULL };
	struct gw_msg req;
	Py_buffer b;
	PyObject *timeout = Py_None;
	int ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&y*|O:reply", kwlist, request_arg, &req,
					 &b, &timeout))
		return NULL;
	PyObject *r = timeout_arg(timeout, &ms) < 0 ? NULL : do_respond(c, &req, 0, &b, ms);
	PyBuffer_Release(&b);
	return r;
}

static PyObject *client_reply_error(struct client *c, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "request", "reason", "timeout", NULL };
	struct gw_msg req;
	PyObject *reason, *timeout = Py_None;
	int ms;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O|O:reply_error", kwlist, request_arg,
					 &req, &reason, &timeout) ||
	    timeout_arg(timeout, &ms) < 0)
		return NULL;
	Py_buffer b;
	PyObject *bytes = NULL;
	if (PyUnicode_Check(reason)) {
		bytes = PyUnicode_AsUTF8String(reason);
		if (!bytes)
			return NULL;
		reason = bytes;
	}
	if (PyObject_GetBuffer(reason, &b, PyBUF_SIMPLE) < 0) {
		Py_XDECREF(bytes);
		return NULL;
	}
	PyObject *r = do_respond(c, &req, 1, &b, ms);
	PyBuffer_Release(&b);
	Py_XDECREF(bytes);
	return r;
}

/* --- several nodes --- */

static PyObject *make_result(const struct gw_result *res)
{
	PyObject *data = Py_None, *err = Py_None;
	Py_INCREF(Py_None);
	Py_INCREF(Py_None);
	if (res->error == 0) {
		Py_DECREF(data);
		data = PyBytes_FromStringAndSize(res->data, (Py_ssize_t)res->len);
	} else {
		Py_DECREF(err);
		err = make_err(res->error, res->error == -EREMOTEIO ? res->data : NULL,
			       res->len);
	}
	if (!data || !err) {
		Py_XDECREF(data);
		Py_XDECREF(err);
		return NULL;
	}
	PyObject *r = PyObject_CallFunction(result_cls, "INN", (unsigned)res->node, data, err);
	return r;
}

static PyObject *results_list(const struct gw_result *res, unsigned n)
{
	PyObject *r = PyList_New(n);
	for (unsigned i = 0; r && i < n; i++) {
		PyObject *x = make_result(&res[i]);
		if (!x)
			Py_CLEAR(r);
		else
			PyList_SET_ITEM(r, i, x);
	}
	return r;
}

/* Raise err (with res's reason for -EREMOTEIO), the attribute name set to
 * value (stolen) on the exception. */
static void raise_with(int err, const struct gw_result *res, const char *name, PyObject *value)
{
	if (!value)
		return;
	if (err == -EREMOTEIO && res)
		raise_err(err, res->data, (Py_ssize_t)res->len);
	else
		raise_err(err, NULL, 0);
	PyObject *type, *exc, *tb;
	PyErr_Fetch(&type, &exc, &tb);
	PyErr_NormalizeException(&type, &exc, &tb);
	if (exc && PyObject_SetAttrString(exc, name, value) < 0)
		PyErr_Clear();
	Py_DECREF(value);
	PyErr_Restore(type, exc, tb);
}

enum multi_op { M_ONE, M_ANY, M_ALL, M_ALL_WAIT };

static PyObject *do_multi(struct client *c, PyObject *args, PyObject *kw, enum multi_op op,
			  const char *fmt)
{
	static char *kwlist[] = { "nodes", "service", "data", "timeout", "urgent",
				  "badrpc_errors", NULL };
	static char *kwlist_wait[] = { "nodes", "service", "data", "timeout", NULL };
	PyObject *nodes_o, *svc, *timeout = NULL;
	Py_buffer b;
	int urgent = 0, badrpc = 0, ms;
	if (!(op == M_ALL_WAIT
		      ? PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist_wait, &nodes_o, &svc, &b,
						    &timeout)
		      : PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &nodes_o, &svc, &b,
						    &timeout, &urgent, &badrpc)))
		return NULL;
	PyObject *r = NULL;
	unsigned n = 0;
	uint16_t *nodes = NULL;
	struct gw_result *res = NULL;
	const char *name = name_arg(svc, "service");
	if (!name || call_timeout(timeout, &ms) < 0 ||
	    !(nodes = nodes_arg(nodes_o, &n)))
		goto out;
	unsigned nres = op == M_ONE || op == M_ANY ? 1 : n;
	res = PyMem_Calloc(nres, sizeof(*res));
	if (!res) {
		PyErr_NoMemory();
		goto out;
	}
	unsigned flags = (urgent ? GW_URGENT : 0) | (badrpc ? GW_BADRPC_ERRORS : 0);
	lock_client(c);
	if (open_client(c) < 0 || drop_view(c) < 0) {
		unlock_client(c);
		goto out;
	}
	int rc;
	Py_BEGIN_ALLOW_THREADS
	switch (op) {
	case M_ONE:
		rc = gw_call_one(c->cl, nodes, n, name, b.buf, (size_t)b.len, ms, flags, res);
		break;
	case M_ANY:
		rc = gw_call_any(c->cl, nodes, n, name, b.buf, (size_t)b.len, ms, flags, res);
		break;
	case M_ALL:
		rc = gw_call_all(c->cl, nodes, n, name, b.buf, (size_t)b.len, ms, flags, res);
		break;
	default:
		rc = gw_call_all_wait(c->cl, nodes, n, name, b.buf, (size_t)b.len, ms, res);
		break;
	}
	Py_END_ALLOW_THREADS
	unlock_client(c);
	if (op == M_ONE || op == M_ANY) {
		if (rc == 0)
			r = make_result(&res[0]);
		else
			raise_with(rc, &res[0], "node", PyLong_FromLong(res[0].node));
	} else if (rc < 0 && op == M_ALL) {
		/* The first failing node's error (its reason where it has one), and
		 * every node's outcome: a write to all says who stored it. */
		unsigned i = 0;
		while (i < n && res[i].error != rc)
			i++;
		raise_with(rc, i < n ? &res[i] : NULL, "results", results_list(res, n));
	} else if (rc < 0) {
		raise_err(rc, NULL, 0);
	} else {
		r = results_list(res, n);
	}
out:
	if (res)
		gw_results_free(res, op == M_ONE || op == M_ANY ? 1 : n);
	PyMem_Free(res);
	PyMem_Free(nodes);
	PyBuffer_Release(&b);
	return r;
}

static PyObject *client_call_one(struct client *c, PyObject *a, PyObject *k)
{
	return do_multi(c, a, k, M_ONE, "OOy*|O$pp:call_one");
}

static PyObject *client_call_any(struct client *c, PyObject *a, PyObject *k)
{
	return do_multi(c, a, k, M_ANY, "OOy*|O$pp:call_any");
}

static PyObject *client_call_all(struct client *c, PyObject *a, PyObject *k)
{
	return do_multi(c, a, k, M_ALL, "OOy*|O$pp:call_all");
}

static PyObject *client_call_all_wait(struct client *c, PyObject *a, PyObject *k)
{
	return do_multi(c, a, k, M_ALL_WAIT, "OOy*|O:call_all_wait");
}

static PyObject *do_cast_multi(struct client *c, PyObject *args, PyObject *kw, int all)
{
	static char *kwlist[] = { "nodes", "service", "data", "urgent", "badrpc_errors", NULL };
	static char *kwlist_one[] = { "nodes", "service", "data", NULL };
	PyObject *nodes_o, *svc;
	Py_buffer b;
	int urgent = 0, badrpc = 0;
	if (!(all ? PyArg_ParseTupleAndKeywords(args, kw, "OOy*|$pp:cast_all", kwlist, &nodes_o,
						&svc, &b, &urgent, &badrpc)
		  : PyArg_ParseTupleAndKeywords(args, kw, "OOy*:cast_one", kwlist_one, &nodes_o,
						&svc, &b)))
		return NULL;
	PyObject *r = NULL;
	unsigned n;
	uint16_t *nodes = NULL;
	const char *name = name_arg(svc, "service");
	if (!name || !(nodes = nodes_arg(nodes_o, &n)))
		goto out;
	if (lock_open(c) < 0)
		goto out;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = all ? gw_cast_all(c->cl, nodes, n, name, b.buf, (size_t)b.len,
			       (urgent ? GW_URGENT : 0) | (badrpc ? GW_BADRPC_ERRORS : 0))
		 : gw_cast_one(c->cl, nodes, n, name, b.buf, (size_t)b.len);
	Py_END_ALLOW_THREADS
	unlock_client(c);
	r = rc < 0 ? raise_err(rc, NULL, 0) : PyLong_FromLong(rc);
out:
	PyMem_Free(nodes);
	PyBuffer_Release(&b);
	return r;
}

static PyObject *client_cast_one(struct client *c, PyObject *a, PyObject *k)
{
	return do_cast_multi(c, a, k, 0);
}

static PyObject *client_cast_all(struct client *c, PyObject *a, PyObject *k)
{
	return do_cast_multi(c, a, k, 1);
}

/* --- nodes and the event loop --- */

static PyObject *client_nodes(struct client *c, PyObject *unused)
{
	struct gw_node_info info[256];
	if (lock_open(c) < 0)
		return NULL;
	struct gw_node_info *v = info;
	int n = gw_nodes(c->cl, v, 256);
	if (n > 256) {
		v = PyMem_Malloc(sizeof(*v) * (size_t)n);
		n = v ? gw_nodes(c->cl, v, (unsigned)n) : -ENOMEM;
	}
	unlock_client(c);
	PyObject *r = n < 0 ? raise_err(n, NULL, 0) : PyList_New(n);
	for (int i = 0; r && i < n; i++) {
		PyObject *x = PyObject_CallFunction(node_cls, "IOOIs", (unsigned)v[i].id,
						    v[i].up ? Py_True : Py_False,
						    v[i].self ? Py_True : Py_False, v[i].caps,
						    v[i].name);
		if (!x)
			Py_CLEAR(r);
		else
			PyList_SET_ITEM(r, i, x);
	}
	if (v != info)
		PyMem_Free(v);
	return r;
}

static PyObject *client_node_up(struct client *c, PyObject *o)
{
	uint16_t node;
	if (node_arg(o, &node) < 0 || open_client(c) < 0)
		return NULL;
	lock_client(c);
	int up = c->cl ? gw_node_up(c->cl, node) : 0;
	unlock_client(c);
	return PyBool_FromLong(up);
}

static int wait_arg(PyObject *o, enum gw_wait *w)
{
	long v = PyLong_AsLong(o);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (v != GW_WAIT_RECV && v != GW_WAIT_SEND) {
		PyErr_SetString(PyExc_ValueError, "what must be WAIT_RECV or WAIT_SEND");
		return -1;
	}
	*w = (enum gw_wait)v;
	return 0;
}

static PyObject *client_wait_fds(struct client *c, PyObject *o)
{
	enum gw_wait w;
	if (wait_arg(o, &w) < 0 || open_client(c) < 0)
		return NULL;
	int fds[2];
	int rc = gw_wait_fds(c->cl, w, fds);
	if (rc < 0)
		return raise_err(rc, NULL, 0);
	return Py_BuildValue("(ii)", fds[0], fds[1]);
}

static PyObject *client_arm(struct client *c, PyObject *o)
{
	enum gw_wait w;
	if (wait_arg(o, &w) < 0)
		return NULL;
	if (lock_open(c) < 0)
		return NULL;
	int rc = gw_arm(c->cl, w);
	unlock_client(c);
	if (rc < 0)
		return raise_err(rc, NULL, 0);
	return PyBool_FromLong(rc);
}

static PyObject *client_wait_ms(struct client *c, PyObject *unused)
{
	if (open_client(c) < 0)
		return NULL;
	lock_client(c);
	int ms = c->cl ? gw_wait_ms(c->cl) : -1;
	unlock_client(c);
	if (ms < 0)
		Py_RETURN_NONE;
	return PyLong_FromLong(ms);
}

static PyObject *client_get_closed(struct client *c, void *unused)
{
	return PyBool_FromLong(c->cl == NULL);
}

static PyObject *client_get_local_node(struct client *c, void *unused)
{
	if (open_client(c) < 0)
		return NULL;
	return PyLong_FromLong(gw_local_node(c->cl));
}

static PyObject *client_get_msg_max(struct client *c, void *unused)
{
	if (open_client(c) < 0)
		return NULL;
	return PyLong_FromSize_t(gw_msg_max(c->cl));
}

static PyObject *client_get_unconfirmed(struct client *c, void *unused)
{
	if (open_client(c) < 0)
		return NULL;
	lock_client(c);
	uint64_t n = c->cl ? gw_unconfirmed(c->cl) : 0;
	unlock_client(c);
	return PyLong_FromUnsignedLongLong(n);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
static PyMethodDef client_methods[] = {
	{ "send", (PyCFunction)(void (*)(void))client_send, METH_FASTCALL | METH_KEYWORDS,
	  "send(node, endpoint, data, timeout=None, *, urgent=False)\n--\n\n"
	  "Send data (bytes-like) to endpoint (a name, or an id from endpoint_id) on node.\n"
	  "Returns once the message is in the channel: a failure to deliver comes back\n"
	  "later as a REJECT message. timeout: seconds to wait for room (None: as long as\n"
	  "it takes; 0: raise WouldBlock at once)." },
	{ "cast", (PyCFunction)(void (*)(void))client_cast, KW,
	  "cast(node, service, data, timeout=None, *, urgent=False)\n--\n\n"
	  "One-way request to a service; the timeout is for a full channel." },
	{ "publish", (PyCFunction)(void (*)(void))client_publish, KW,
	  "publish(topic, data, timeout=None, *, urgent=False)\n--\n\n"
	  "Send data once to every subscriber of topic, on any node." },
	{ "recv", (PyCFunction)(void (*)(void))client_recv, KW,
	  "recv(timeout=None, *, copy=True)\n--\n\n"
	  "The next Message, or None when none comes within timeout seconds (None: wait\n"
	  "for ever; 0: poll). copy=False: data is a memoryview of the channel, valid\n"
	  "until the next receive on this client (then released: using it raises)." },
	{ "recv_into", (PyCFunction)(void (*)(void))client_recv_into, KW,
	  "recv_into(buffer, timeout=None)\n--\n\n"
	  "As recv, copying the data into buffer (writable, at least msg_max bytes); the\n"
	  "Message's data is a memoryview of buffer's first len bytes." },
	{ "recv_batch", (PyCFunction)(void (*)(void))client_recv_batch, KW,
	  "recv_batch(n, timeout=None)\n--\n\n"
	  "Up to n Messages: waits for the first as recv does, then takes those already\n"
	  "there. An empty list when none came." },
	{ "register", (PyCFunction)client_register, METH_O,
	  "register(endpoint)\n--\n\nReceive messages sent to endpoint on this node." },
	{ "unregister", (PyCFunction)client_unregister, METH_O,
	  "unregister(endpoint)\n--\n\nDrop an endpoint this client registered." },
	{ "service", (PyCFunction)client_service, METH_O,
	  "service(name)\n--\n\nOffer a service: its requests arrive as REQUEST (answer with\n"
	  "reply or reply_error) and CAST messages." },
	{ "subscribe", (PyCFunction)(void (*)(void))client_subscribe, KW,
	  "subscribe(topic, policy=SUB_HOLD)\n--\n\n"
	  "Receive what is published to topic (PUBLISH messages). policy: SUB_HOLD, or\n"
	  "SUB_LATEST / sub_latest_key(n) to keep only the newest per key when behind." },
	{ "unsubscribe", (PyCFunction)client_unsubscribe, METH_O,
	  "unsubscribe(topic)\n--\n\nStop receiving a topic." },
	{ "flush", (PyCFunction)(void (*)(void))client_flush, KW,
	  "flush(timeout=None)\n--\n\n"
	  "Wait until the gateway has taken every message sent so far." },
	{ "call", (PyCFunction)(void (*)(void))client_call, KW,
	  "call(node, service, data, timeout=5.0, *, urgent=False)\n--\n\n"
	  "Call a service and wait: its reply's bytes, or an Error raised (Timeout,\n"
	  "NoService, HostUnreachable, HostDown, RemoteError with the handler's reason...).\n"
	  "Messages that arrive meanwhile are kept for recv." },
	{ "call_start", (PyCFunction)(void (*)(void))client_call_start, KW,
	  "call_start(node, service, data, timeout=5.0, *, urgent=False, wait=True)\n--\n\n"
	  "Start a call without waiting for its outcome: returns its id; the outcome comes\n"
	  "through recv as a REPLY message with that call_id (msg.result()). wait=False:\n"
	  "raise WouldBlock at once when the channel is full." },
	{ "call_cancel", (PyCFunction)client_call_cancel, METH_O,
	  "call_cancel(call_id)\n--\n\nNo longer wait for a call: no REPLY will come for it." },
	{ "reply", (PyCFunction)(void (*)(void))client_reply, KW,
	  "reply(request, data, timeout=None)\n--\n\nAnswer a REQUEST message with a result." },
	{ "reply_error", (PyCFunction)(void (*)(void))client_reply_error, KW,
	  "reply_error(request, reason, timeout=None)\n--\n\n"
	  "Answer a REQUEST with a failure: the caller gets RemoteError(reason)." },
	{ "call_one", (PyCFunction)(void (*)(void))client_call_one, KW,
	  "call_one(nodes, service, data, timeout=5.0, *, urgent=False, badrpc_errors=False)"
	  "\n--\n\nAsk one node at a time, in order, until one answers: its Result, or the\n"
	  "last error raised (its node attribute: which node)." },
	{ "call_any", (PyCFunction)(void (*)(void))client_call_any, KW,
	  "call_any(nodes, service, data, timeout=5.0, *, urgent=False, badrpc_errors=False)"
	  "\n--\n\nAsk all at once; the first good answer's Result, or the last error raised\n"
	  "(its node attribute: which node)." },
	{ "call_all", (PyCFunction)(void (*)(void))client_call_all, KW,
	  "call_all(nodes, service, data, timeout=5.0, *, urgent=False, badrpc_errors=False)"
	  "\n--\n\nAsk all at once; every node must answer: a Result per node, or the first\n"
	  "failing node's error raised, with every node's Result as its results attribute\n"
	  "(who did store a write). Nodes that cannot be asked are left out of the\n"
	  "verdict (their Result's error says so) unless badrpc_errors." },
	{ "call_all_wait", (PyCFunction)(void (*)(void))client_call_all_wait, KW,
	  "call_all_wait(nodes, service, data, timeout=5.0)\n--\n\n"
	  "Ask all at once and wait for every outcome: a Result per node (error None or\n"
	  "the exception)." },
	{ "cast_one", (PyCFunction)(void (*)(void))client_cast_one, KW,
	  "cast_one(nodes, service, data)\n--\n\n"
	  "Cast to this node if listed, else to the first node up from a random start:\n"
	  "returns the node chosen." },
	{ "cast_all", (PyCFunction)(void (*)(void))client_cast_all, KW,
	  "cast_all(nodes, service, data, *, urgent=False, badrpc_errors=False)\n--\n\n"
	  "Cast to every node: returns how many took it." },
	{ "nodes", (PyCFunction)client_nodes, METH_NOARGS,
	  "nodes()\n--\n\nThe nodes this gateway knows: a list of NodeInfo, in id order." },
	{ "node_up", (PyCFunction)client_node_up, METH_O,
	  "node_up(node)\n--\n\nTrue if the node is reachable now." },
	{ "wait_fds", (PyCFunction)client_wait_fds, METH_O,
	  "wait_fds(what)\n--\n\nThe two descriptors an event loop watches for reading\n"
	  "(WAIT_RECV or WAIT_SEND): the channel's, and the gateway-gone one. Do not read\n"
	  "or close them." },
	{ "arm", (PyCFunction)client_arm, METH_O,
	  "arm(what)\n--\n\nBefore sleeping on wait_fds: True if something is there already\n"
	  "(do not sleep), False when armed." },
	{ "wait_ms", (PyCFunction)client_wait_ms, METH_NOARGS,
	  "wait_ms()\n--\n\nHow long an event loop may sleep before recv is due (calls in\n"
	  "flight have deadlines): milliseconds, or None." },
	{ "close", (PyCFunction)client_close, METH_NOARGS,
	  "close()\n--\n\nDisconnect; messages the gateway has not taken are dropped\n"
	  "(flush first)." },
	{ "__enter__", (PyCFunction)client_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)client_exit, METH_VARARGS, NULL },
	{ NULL },
};

static PyGetSetDef client_getset[] = {
	{ "closed", (getter)client_get_closed, NULL, "True once closed", NULL },
	{ "local_node", (getter)client_get_local_node, NULL, "this gateway's node id", NULL },
	{ "msg_max", (getter)client_get_msg_max, NULL, "the largest message the channel takes",
	  NULL },
	{ "unconfirmed", (getter)client_get_unconfirmed, NULL,
	  "sends accepted and not settled yet (delivered or refused)", NULL },
	{ NULL },
};

static PyTypeObject client_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "gridwire.Client",
	.tp_basicsize = sizeof(struct client),
	.tp_dealloc = (destructor)client_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Client(path)\n--\n\n"
		  "A connection to the gridwire gateway whose control socket is path (as\n"
		  "gridwire.connect). Usable as a context manager; threads may share one\n"
		  "(its calls take turns), or use one each.",
	.tp_weaklistoffset = offsetof(struct client, weakrefs),
	.tp_methods = client_methods,
	.tp_getset = client_getset,
	.tp_new = client_new,
};

/* ------------------------------------------------------------------ */
/* module */

static PyObject *mod_endpoint_id(PyObject *m, PyObject *o)
{
	const char *name = name_arg(o, "name");
	return name ? PyLong_FromUnsignedLong(gw_endpoint_id(name)) : NULL;
}

static PyObject *mod_strerror(PyObject *m, PyObject *o)
{
	long e = PyLong_AsLong(o);
	if (e == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(gw_strerror(e > 0 ? (int)-e : (int)e));
}

/* The package hands over its classes once, at import. */
static PyObject *mod_setup(PyObject *m, PyObject *args)
{
	PyObject *errors, *base, *kind_map_arg, *result, *node;
	if (!PyArg_ParseTuple(args, "O!OO!OO:_setup", &PyDict_Type, &errors, &base,
			      &PyDict_Type, &kind_map_arg, &result, &node))
		return NULL;
	Py_INCREF(errors);
	Py_XSETREF(error_map, errors);
	Py_INCREF(base);
	Py_XSETREF(error_base, base);
	for (int k = 0; k < KINDS_MAX; k++) {
		PyObject *num = PyLong_FromLong(k);
		PyObject *member = num ? PyDict_GetItemWithError(kind_map_arg, num) : NULL;
		Py_XDECREF(num);
		if (PyErr_Occurred())
			return NULL;
		Py_XINCREF(member);
		Py_XSETREF(kinds[k], member);
	}
	Py_INCREF(result);
	Py_XSETREF(result_cls, result);
	Py_INCREF(node);
	Py_XSETREF(node_cls, node);
	Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
	{ "endpoint_id", mod_endpoint_id, METH_O,
	  "endpoint_id(name)\n--\n\nThe id an endpoint (or topic) name travels as." },
	{ "strerror", mod_strerror, METH_O,
	  "strerror(err)\n--\n\nAn errno in the words of this API." },
	{ "_setup", mod_setup, METH_VARARGS, NULL },
	{ NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "gridwire._gridwire",
	.m_doc = "libgridwire for CPython (use the gridwire package).",
	.m_size = -1,
	.m_methods = mod_methods,
};

PyMODINIT_FUNC PyInit__gridwire(void)
{
	if (PyType_Ready(&message_type) < 0 || PyType_Ready(&client_type) < 0 ||
	    PyType_Ready(&chanview_type) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	Py_INCREF(&message_type);
	Py_INCREF(&client_type);
	if (PyModule_AddObject(m, "Message", (PyObject *)&message_type) < 0 ||
	    PyModule_AddObject(m, "Client", (PyObject *)&client_type) < 0 ||
	    PyModule_AddIntConstant(m, "URGENT", GW_URGENT) < 0 ||
	    PyModule_AddIntConstant(m, "URGENT_ID", GW_MSG_ID_URGENT) < 0 ||
	    PyModule_AddIntConstant(m, "SUB_HOLD", GW_SUB_HOLD) < 0 ||
	    PyModule_AddIntConstant(m, "SUB_LATEST", GW_SUB_LATEST) < 0 ||
	    PyModule_AddIntConstant(m, "WAIT_RECV", GW_WAIT_RECV) < 0 ||
	    PyModule_AddIntConstant(m, "WAIT_SEND", GW_WAIT_SEND) < 0 ||
	    PyModule_AddIntConstant(m, "CALL_HDR", GW_CALL_HDR) < 0 ||
	    PyModule_AddIntConstant(m, "CALLS_MAX", GW_CALLS_MAX) < 0 ||
	    PyModule_AddIntConstant(m, "CALL_KEEP", GW_CALL_KEEP) < 0 ||
	    PyModule_AddIntConstant(m, "NODE_AUTH", GW_NODE_AUTH) < 0 ||
	    PyModule_AddIntConstant(m, "NODE_BATCHING", GW_NODE_BATCHING) < 0 ||
	    PyModule_AddIntConstant(m, "NODE_URGENT", GW_NODE_URGENT) < 0 ||
	    PyModule_AddIntConstant(m, "NODE_GRANT", GW_NODE_GRANT) < 0 ||
	    PyModule_AddIntConstant(m, "NODE_TOPICS", GW_NODE_TOPICS) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
