#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kv.py: app/gw-kv in Python, a tiny replicated key-value store, "write
to all, read from any", to show the binding's calls and services. It
speaks gw-kv's requests, so the two mix on one mesh: either's put and get
against either's servers.

    kv.py serve -s SOCK                        hold a store, answer "kv" calls
    kv.py put -s SOCK --nodes 1,2,3 KEY VALUE [--strict]
                                               call_all: every node stores it
    kv.py get -s SOCK --nodes 1,2,3 KEY        call_any: the first node that has it
    kv.py nodes -s SOCK                        the nodes this gateway knows

Requests are "put KEY VALUE" and "get KEY"; a get of a missing key fails
(the handler answers reply_error), which call_any passes over. --strict
counts unreachable nodes as failures (badrpc_errors). Output as gw-kv's:
the outcome, then each node's (a failed call_all's error carries every
node's Result, a failed call_any's the node it ends with).

Run it with the python3 the binding was built for (Debian's /usr/bin/python3),
e.g. PYTHONPATH=build/bindings/python /usr/bin/python3 bindings/python/examples/kv.py.
"""
import getopt
import os
import signal
import sys

import gridwire

PROG = "kv.py"
USAGE = (f"usage: {PROG} [-s SOCK] serve | nodes | put --nodes N,N KEY VALUE [--strict] "
         "| get --nodes N,N KEY")
KV_MAX = 1024   # keys a store holds, as gw-kv
KEY_MAX = 63    # bytes of a key
VAL_MAX = 255   # bytes of a value kept (longer ones are cut, as gw-kv does)
REQ_MAX = 399   # bytes of a request read


class Usage(Exception):
    """Bad command line: the message says what."""


def say(*parts):
    """One line on stdout, bytes written as they are (values are bytes)."""
    out = sys.stdout.buffer
    for p in parts:
        out.write(p if isinstance(p, bytes) else p.encode())
    out.write(b"\n")
    out.flush()


def token(s):
    """strtok_r(s, " "): the next word of s and what follows its space."""
    s = s.lstrip(b" ")
    if not s:
        return None, b""
    word, _, rest = s.partition(b" ")
    return word, rest


def answer(store, req):
    """A request's outcome, as gw-kv's handler: (True, data) or (False, reason)."""
    req = req[:REQ_MAX].split(b"\0", 1)[0]  # read as gw-kv reads it: a C string
    op, rest = token(req)
    key, val = token(rest)
    if not op or not key or len(key) > KEY_MAX:
        return False, "bad request"
    if op == b"get":
        return (True, store[key]) if key in store else (False, "no such key")
    if op == b"put" and val and (key in store or len(store) < KV_MAX):
        store[key] = val[:VAL_MAX]
        return True, b"stored"
    return False, "store full" if key not in store and len(store) == KV_MAX else "bad request"


def serve(c):
    """Hold a store and answer "kv" calls until SIGINT or SIGTERM."""
    store = {}
    try:
        c.service("kv")
    except gridwire.Error as e:
        print(f"{PROG}: cannot offer service kv: {e.strerror}", file=sys.stderr)
        return 1
    stop = []
    # The handler only marks the stop: the loop sees it within recv's
    # timeout, never in the middle of a reply.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(True))
    print(f"{PROG}: node {c.local_node} serving kv", file=sys.stderr, flush=True)
    while not stop:
        m = c.recv(timeout=0.2)  # GatewayGone when the gateway goes: main says so
        if m is None or m.kind != gridwire.Kind.REQUEST:
            continue  # REJECTs of replies to callers gone: nothing to do
        ok, data = answer(store, m.data)
        try:
            if ok:
                c.reply(m, data, timeout=1.0)
            else:
                c.reply_error(m, data, timeout=1.0)
        except gridwire.GatewayGone:
            raise
        except gridwire.Error as e:  # this caller's loss (it times out): serve on
            print(f"{PROG}: reply to node {m.node}: {e.strerror}", file=sys.stderr)
    return 0


def outcome(err):
    """An outcome in ecall's words: a node that could not be asked is badrpc."""
    if err is None:
        return "ok"
    badrpc = isinstance(err, (gridwire.HostUnreachable, gridwire.HostDown))
    return ("badrpc: " if badrpc else "") + err.strerror


def reason(err):
    """What the handler said, for a RemoteError: b"" otherwise."""
    return err.reason if isinstance(err, gridwire.RemoteError) else b""


def show(r):
    """One node's line: its outcome, then its data or the handler's reason."""
    data = r.data if r.ok else reason(r.error)
    say(f"  node {r.node}: {outcome(r.error)}", *((b": ", data) if data else ()))


def put(c, nodes, key, value, strict):
    req = b"put " + key + b" " + value
    try:
        res, err = c.call_all(nodes, "kv", req, timeout=1.0, badrpc_errors=strict), None
    except gridwire.Error as e:
        res, err = getattr(e, "results", []), e
    say(b"put ", key, b": " + outcome(err).encode())
    for r in res:
        show(r)
    return 0 if err is None else 1


def get(c, nodes, key, strict):
    try:
        r, err = c.call_any(nodes, "kv", b"get " + key, timeout=1.0, badrpc_errors=strict), None
    except gridwire.Error as e:
        r, err = gridwire.Result(getattr(e, "node", nodes[-1]), None, e), e
    say(b"get ", key, b": " + outcome(err).encode())
    show(r)
    return 0 if err is None else 1


def nodes(c):
    for n in c.nodes():
        say(f"node {n.id} {n.name} {'up' if n.up else 'down'}{' (this node)' if n.self else ''}"
            f"{', authenticated' if n.caps & gridwire.NODE_AUTH else ''}")
    return 0


def node_ids(arg):
    try:
        ids = [int(t) for t in arg.split(",") if t]
    except ValueError:
        ids = []
    if not ids or not all(0 <= i < 65536 for i in ids):
        raise Usage(f"--nodes takes node ids like 1,2,3, not '{arg}'")
    return ids


def parse(argv):
    """(sock, command, its words as bytes, nodes, strict), options anywhere as gw-kv's."""
    try:
        opts, args = getopt.gnu_getopt(argv, "s:h", ["nodes=", "strict", "help"])
    except getopt.GetoptError as e:
        raise Usage(str(e)) from None
    sock, ids, strict = "/run/gridwire/alpha.sock", [], False
    for o, v in opts:
        if o == "-s":
            sock = v
        elif o == "--nodes":
            ids += node_ids(v)
        elif o == "--strict":
            strict = True
        else:
            say(USAGE)
            sys.exit(0)
    cmd, words = (args[0], [os.fsencode(a) for a in args[1:]]) if args else ("", [])
    want = {"serve": 0, "nodes": 0, "put": 2, "get": 1}
    if cmd not in want:
        raise Usage(f"unknown command '{cmd}'" if cmd else "no command")
    if len(words) != want[cmd]:
        raise Usage(f"{cmd} takes {' '.join(['KEY', 'VALUE'][:want[cmd]]) or 'no arguments'}")
    if want[cmd] and not ids:
        raise Usage(f"{cmd} needs --nodes")
    if want[cmd] and (b" " in words[0] or not words[0]):
        raise Usage("a key is one word")  # a space would end it in the request
    return sock, cmd, words, ids, strict


def main(argv):
    try:
        sock, cmd, words, ids, strict = parse(argv)
    except Usage as e:
        print(f"{PROG}: {e} ({USAGE})", file=sys.stderr)
        return 1
    try:
        c = gridwire.connect(sock)
    except gridwire.Error as e:
        # In the system's words, as gw-kv says it.
        print(f"{PROG}: cannot connect to {sock}: {os.strerror(e.errno)} (is gridwired running?)",
              file=sys.stderr)
        return 1
    with c:
        try:
            if cmd == "serve":
                return serve(c)
            if cmd == "nodes":
                return nodes(c)
            if cmd == "put":
                return put(c, ids, words[0], words[1], strict)
            return get(c, ids, words[0], strict)
        except gridwire.Error as e:  # the gateway gone, mostly
            print(f"{PROG}: {cmd}: {e.strerror}", file=sys.stderr)
            return 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C in a put, get or nodes
        sys.exit(130)
