#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The Python binding's bench (scripts/bench_python.sh runs it): the
programs of each side, one subcommand each, and the report.

Throughput, 225-byte messages that carry (sender id, sequence), every one
verified by the receiver (count, order per sender):

  gw-tx / gw-rx      gridwire, sync API: send(node, endpoint, data) with
                     the default timeout (waits for room); recv_batch
  zmq-push / zmq-pull  pyzmq PUSH/PULL over TCP
  tcp-tx / tcp-rx    plain sockets, length-prefixed frames, 64 KB
                     buffers (sendall when full, recv_into a buffer)

A sender prints "ready" on stderr once set up, then waits for the file
--go to exist, so that all start together; each prints one JSON line on
stdout: when it started (CLOCK_MONOTONIC, the same clock in every
namespace), what it sent, its CPU seconds. A receiver prints one JSON line
when it has all or gives up (--idle seconds without a message).

Calls: echo (a service on beta answering with the request's data), call
(one at a time, p50/p99), acall (gridwire.aio, C calls in flight at once,
asyncio.gather rounds). report OUT: OUT/python.json, the table
(OUT/report.txt) and OUT/python.png.
"""
import argparse
import json
import os
import signal
import socket
import struct
import sys
import time

HDR = struct.Struct("<IQ")       # sender id, sequence: the start of each message
TCP_HDR = struct.Struct("<IIQ")  # TCP frames: length, then the message


def cpu_s():
    t = os.times()
    return t.user + t.system


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def ready(what):
    sys.stderr.write(f"bench_python: {what} ready\n")
    sys.stderr.flush()


def wait_go(path):
    """Until the file exists: every sender starts at once."""
    while not os.path.exists(path):
        time.sleep(0.001)


def message(size, sid):
    if size < HDR.size:
        sys.exit(f"bench_python: messages carry {HDR.size} bytes of header: --size >= {HDR.size}")
    buf = bytearray(size)
    HDR.pack_into(buf, 0, sid, 0)
    return buf


class Checker:
    """Count, and each sender's sequence in order (0, 1, 2, ...)."""

    def __init__(self, senders):
        self.next = [0] * senders
        self.got = 0
        self.order = 0
        self.bad = 0

    def result(self, role, transport, expect, first, last, cpu):
        el = (last - first) / 1e9 if last and first else 0.0
        return {"role": role, "transport": transport, "expect": expect, "delivered": self.got,
                "order_violations": self.order, "malformed": self.bad,
                "verified": self.got == expect and not self.order and not self.bad,
                "first_ns": first, "last_ns": last, "rx_elapsed_s": round(el, 6),
                "cpu_s": round(cpu, 3)}


# --- gridwire ---------------------------------------------------------------

def gw_connect(sock, node=None):
    import gridwire
    c = gridwire.connect(sock)
    if node is not None:
        for _ in range(300):
            if c.node_up(node):
                break
            time.sleep(0.1)
        else:
            sys.exit(f"bench_python: node {node} is not up after 30 s")
    return c


def cmd_gw_tx(a):
    import gridwire
    c = gw_connect(a.sock, a.node)
    ep = gridwire.endpoint_id(a.endpoint) if a.by_id else a.endpoint
    buf = message(a.size, a.id)
    pack, send, node, sid = HDR.pack_into, c.send, a.node, a.id
    ready("gw-tx")
    wait_go(a.go)
    c0, t0 = cpu_s(), time.monotonic_ns()
    for seq in range(a.msgs):
        pack(buf, 0, sid, seq)
        send(node, ep, buf)
    t1 = time.monotonic_ns()
    # Every send settled (delivered or refused), and the refusals counted.
    c.flush(30.0)
    rejects = other = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = c.recv(0 if not c.unconfirmed else 0.05)
        if m is None:
            if not c.unconfirmed:
                break
            continue
        if m.kind == gridwire.Kind.REJECT:
            rejects += 1
        else:
            other += 1
    emit({"role": "tx", "transport": "gridwire", "id": sid, "sent": a.msgs, "first_ns": t0,
          "sent_ns": t1, "cpu_s": round(cpu_s() - c0, 3), "rejects": rejects, "other": other,
          "unconfirmed": c.unconfirmed})
    c.close()


def cmd_gw_rx(a):
    import gridwire
    c = gw_connect(a.sock)
    c.register(a.endpoint)
    DATA = gridwire.Kind.DATA
    chk, expect, size = Checker(a.senders), a.senders * a.msgs, a.size
    nxt, unpack, batch, recv_batch = chk.next, HDR.unpack_from, a.batch, c.recv_batch
    first = last = 0
    other = 0
    ready("gw-rx")
    c0 = cpu_s()
    idle_since = time.monotonic()
    while chk.got < expect:
        ms = recv_batch(batch, 1.0)
        if not ms:
            if time.monotonic() - idle_since > a.idle:
                break
            continue
        if not first:
            first = time.monotonic_ns()
        got = len(ms)
        for m in ms:
            if m.kind is not DATA:
                other += 1
                got -= 1
                continue
            d = m.data
            if len(d) != size:
                chk.bad += 1
                continue
            sid, seq = unpack(d)
            if sid >= len(nxt):
                chk.bad += 1
                continue
            if seq != nxt[sid]:
                chk.order += 1
            nxt[sid] = seq + 1
        chk.got += got
        last = time.monotonic_ns()
        idle_since = time.monotonic()
    r = chk.result("rx", "gridwire", expect, first, last, cpu_s() - c0)
    r["other"] = other
    r["verified"] = r["verified"] and not other
    emit(r)
    c.close()


def cmd_echo(a):
    """A service on this node answering each request with its data."""
    import gridwire
    REQUEST = gridwire.Kind.REQUEST
    c = gw_connect(a.sock)
    c.service(a.service)
    done = [False]

    def stop(*_):
        done[0] = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    n = other = 0
    ready("echo")
    c0 = cpu_s()
    reply, recv_batch = c.reply, c.recv_batch
    try:
        while not done[0]:
            for m in recv_batch(256, 0.5):
                if m.kind is REQUEST:
                    reply(m, m.data)
                    n += 1
                else:
                    other += 1
    except KeyboardInterrupt:
        pass
    emit({"role": "echo", "requests": n, "other": other, "cpu_s": round(cpu_s() - c0, 3)})


def pct(sorted_v, q):
    if not sorted_v:
        return 0
    return sorted_v[min(len(sorted_v) - 1, int(q * len(sorted_v)))]


def cmd_call(a):
    """One call at a time: round trip per call, after a warm-up."""
    c = gw_connect(a.sock, a.node)
    node, svc, call = a.node, a.service, c.call
    pays = [struct.pack("<Q", i) * (a.size // 8) for i in range(1000)]
    for i in range(a.warmup):
        call(node, svc, pays[i % 1000])
    lat = [0] * a.calls
    wrong = 0
    clock = time.perf_counter_ns
    c0, t0 = cpu_s(), clock()
    for i in range(a.calls):
        p = pays[i % 1000]
        s = clock()
        r = call(node, svc, p)
        lat[i] = clock() - s
        if r != p:
            wrong += 1
    el = (clock() - t0) / 1e9
    lat.sort()
    us = lambda ns: round(ns / 1000, 1)
    emit({"role": "call", "calls": a.calls, "warmup": a.warmup, "size": a.size, "wrong": wrong,
          "elapsed_s": round(el, 3), "calls_per_s": round(a.calls / el),
          "cpu_s": round(cpu_s() - c0, 3),
          "lat_us": {"min": us(lat[0]), "p50": us(pct(lat, 0.5)), "p99": us(pct(lat, 0.99)),
                     "p999": us(pct(lat, 0.999)), "max": us(lat[-1])}})
    c.close()


def cmd_acall(a):
    """gridwire.aio: rounds of C calls at once (asyncio.gather) until N."""
    import asyncio
    import gridwire.aio

    async def main():
        async with await gridwire.aio.connect(a.sock) as c:
            for _ in range(300):
                if c.node_up(a.node):
                    break
                await asyncio.sleep(0.1)
            pays = [struct.pack("<Q", i) * (a.size // 8) for i in range(a.concurrency)]

            async def round_():
                rs = await asyncio.gather(*(c.call(a.node, a.service, p, a.timeout)
                                            for p in pays), return_exceptions=True)
                bad = sum(1 for r, p in zip(rs, pays) if r != p)
                errs = [r for r in rs if isinstance(r, BaseException)]
                return bad, errs

            await round_()  # warm-up
            rounds = -(-a.calls // a.concurrency)
            wrong, errors, rtt = 0, {}, []
            c0, t0 = cpu_s(), time.perf_counter_ns()
            for _ in range(rounds):
                s = time.perf_counter_ns()
                bad, errs = await round_()
                rtt.append(time.perf_counter_ns() - s)
                wrong += bad
                for e in errs:
                    errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            el = (time.perf_counter_ns() - t0) / 1e9
            n = rounds * a.concurrency
            rtt.sort()
            emit({"role": "acall", "calls": n, "concurrency": a.concurrency, "size": a.size,
                  "wrong": wrong, "errors": errors, "elapsed_s": round(el, 3),
                  "calls_per_s": round(n / el), "cpu_s": round(cpu_s() - c0, 3),
                  "round_ms": {"p50": round(pct(rtt, 0.5) / 1e6, 2),
                               "max": round(rtt[-1] / 1e6, 2)}})

    asyncio.run(main())


# --- pyzmq ------------------------------------------------------------------

def cmd_zmq_push(a):
    import zmq
    ctx = zmq.Context(1)
    s = ctx.socket(zmq.PUSH)
    s.linger = -1
    s.connect(a.connect)
    buf = message(a.size, a.id)
    pack, send, sid = HDR.pack_into, s.send, a.id
    ready("zmq-push")
    wait_go(a.go)
    c0, t0 = cpu_s(), time.monotonic_ns()
    for seq in range(a.msgs):
        pack(buf, 0, sid, seq)
        send(buf)
    t1 = time.monotonic_ns()
    s.close()
    ctx.term()  # linger -1: until every message is sent
    emit({"role": "tx", "transport": "zmq", "id": sid, "sent": a.msgs, "first_ns": t0,
          "sent_ns": t1, "cpu_s": round(cpu_s() - c0, 3)})


def cmd_zmq_pull(a):
    import zmq
    ctx = zmq.Context(1)
    s = ctx.socket(zmq.PULL)
    s.rcvtimeo = 1000
    s.bind(a.bind)
    chk, expect, size = Checker(a.senders), a.senders * a.msgs, a.size
    nxt, unpack, recv = chk.next, HDR.unpack_from, s.recv
    first = last = 0
    ready("zmq-pull")
    c0 = cpu_s()
    idle_since = time.monotonic()
    while chk.got < expect:
        try:
            d = recv()
        except zmq.Again:
            if time.monotonic() - idle_since > a.idle:
                break
            continue
        if not first:
            first = time.monotonic_ns()
        if len(d) != size:
            chk.bad += 1
        else:
            sid, seq = unpack(d)
            if sid >= len(nxt):
                chk.bad += 1
            else:
                if seq != nxt[sid]:
                    chk.order += 1
                nxt[sid] = seq + 1
        chk.got += 1
        # A clock read per message would cost the receiver; read it per 256.
        if not chk.got & 255:
            idle_since = time.monotonic()
    last = time.monotonic_ns()
    emit(chk.result("rx", "zmq", expect, first, last, cpu_s() - c0))
    s.close(0)
    ctx.term()


# --- plain TCP ----------------------------------------------------------------

def hostport(s):
    h, _, p = s.rpartition(":")
    return h, int(p)


def cmd_tcp_tx(a):
    sk = socket.create_connection(hostport(a.connect))
    sk.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    frame = TCP_HDR.size - HDR.size + a.size
    buf = bytearray(a.buffer)
    view = memoryview(buf)
    per = a.buffer // frame
    if per < 1:
        sys.exit("bench_python: --buffer smaller than a frame")
    pack, sendall, sid, size = TCP_HDR.pack_into, sk.sendall, a.id, a.size
    ready("tcp-tx")
    wait_go(a.go)
    c0, t0 = cpu_s(), time.monotonic_ns()
    off = 0
    end = per * frame
    for seq in range(a.msgs):
        pack(buf, off, size, sid, seq)
        off += frame
        if off == end:
            sendall(view[:off])
            off = 0
    if off:
        sendall(view[:off])
    t1 = time.monotonic_ns()
    sk.shutdown(socket.SHUT_WR)
    sk.recv(1)  # the receiver closes once it has read everything
    sk.close()
    emit({"role": "tx", "transport": "tcp", "id": sid, "sent": a.msgs, "first_ns": t0,
          "sent_ns": t1, "cpu_s": round(cpu_s() - c0, 3)})


def cmd_tcp_rx(a):
    import selectors
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(hostport(a.bind))
    ls.listen(a.senders)
    ready("tcp-rx")
    conns = [ls.accept()[0] for _ in range(a.senders)]
    ls.close()
    sel = selectors.DefaultSelector()
    cap = 4 * a.buffer
    for k in conns:
        k.setblocking(False)
        buf = bytearray(cap)
        sel.register(k, selectors.EVENT_READ, [buf, memoryview(buf), 0])
    chk, expect, size = Checker(a.senders), a.senders * a.msgs, a.size
    nxt, unpack, hdr = chk.next, TCP_HDR.unpack_from, TCP_HDR.size - HDR.size
    full = TCP_HDR.size
    first = last = 0
    open_ = len(conns)
    c0 = cpu_s()
    idle_since = time.monotonic()
    while open_ and chk.got < expect:
        evs = sel.select(1.0)
        if not evs:
            if time.monotonic() - idle_since > a.idle:
                break
            continue
        for key, _ in evs:
            st = key.data
            buf, view, have = st
            try:
                n = key.fileobj.recv_into(view[have:])
            except BlockingIOError:
                continue
            if not n:
                sel.unregister(key.fileobj)
                open_ -= 1
                continue
            if not first:
                first = time.monotonic_ns()
            have += n
            off = 0
            got = 0
            while have - off >= full:
                ln, sid, seq = unpack(buf, off)
                if have - off < hdr + ln:
                    break
                if ln != size or sid >= len(nxt):
                    chk.bad += 1
                else:
                    if seq != nxt[sid]:
                        chk.order += 1
                    nxt[sid] = seq + 1
                got += 1
                off += hdr + ln
            chk.got += got
            if off:
                view[:have - off] = view[off:have]
                have -= off
            st[2] = have
        last = time.monotonic_ns()
        idle_since = time.monotonic()
    cpu = cpu_s() - c0
    for k in conns:
        k.close()
    emit(chk.result("rx", "tcp", expect, first, last, cpu))


# --- the report -------------------------------------------------------------

TRANSPORTS = (("gridwire", "gridwire (sync API, cable)"),
              ("zmq", "pyzmq PUSH/PULL (TCP, veth)"),
              ("tcp", "Python TCP, 64 KB buffers (veth)"))


def load(path):
    try:
        with open(path) as f:
            lines = [ln for ln in f.read().splitlines() if ln.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except OSError:
        return None


def one_run(runs, t, rep, senders):
    """One throughput run's figures, or None if a program left no result."""
    f = os.path.join(runs, f"tput-{t}-r{rep}")
    rx = load(f + "-rx.json")
    txs = [load(f"{f}-tx{i}.json") for i in range(senders)]
    if rx is None or any(x is None for x in txs) or not rx["last_ns"]:
        return None
    first = min(x["first_ns"] for x in txs)
    el = (rx["last_ns"] - first) / 1e9
    total = rx["delivered"]
    cpu_tx = sum(x["cpu_s"] for x in txs)
    r = {"msgs_per_s": round(total / el) if el > 0 else 0, "delivered": total,
         "expect": rx["expect"], "elapsed_s": round(el, 3),
         "order_violations": rx["order_violations"], "malformed": rx["malformed"],
         "rejects": sum(x.get("rejects", 0) for x in txs),
         "verified": rx["verified"] and not any(x.get("rejects") or x.get("unconfirmed")
                                                for x in txs),
         "cpu_s_senders": round(cpu_tx, 2), "cpu_s_receiver": rx["cpu_s"],
         "python_cpu_s_per_M": round((cpu_tx + rx["cpu_s"]) / (total / 1e6), 2) if total else 0,
         "send_loop_s": [round((x["sent_ns"] - x["first_ns"]) / 1e9, 3) for x in txs]}
    gw = load(f + "-gw.json")
    if gw:
        r["gateways_cpu_s"] = {"alpha": gw["alpha_cpu_s"], "beta": gw["beta_cpu_s"]}
        if t == "gridwire" and total:
            r["gateways_cpu_s_per_M"] = round((gw["alpha_cpu_s"] + gw["beta_cpu_s"]) /
                                              (total / 1e6), 2)
    return r


def cmd_report(a):
    import subprocess
    out = a.out
    runs = os.path.join(out, "runs")
    cfg = json.load(open(os.path.join(runs, "config.json")))
    res = {"config": cfg, "throughput": {}, "calls": {}, "targets": []}
    lines = []
    senders, msgs = cfg["senders"], cfg["msgs"]
    lines.append(f"Throughput: {senders} Python senders in gwa (CPU {cfg['pin_a'] or '-'}) -> "
                 f"1 Python receiver in gwb (CPU {cfg['pin_b'] or '-'}), {cfg['size']}-byte "
                 f"messages, {msgs:,} per sender, every one verified (count, order per sender)")
    lines.append(f"msg/s: all messages over the time from the first send to the last receive; "
                 f"{cfg['reps']} run{'s' if cfg['reps'] != 1 else ''} of each transport, "
                 f"interleaved\n")
    lines.append("| transport | messages | msg/s | runs' msg/s | elapsed s | Python CPU s senders / "
                 "receiver | Python CPU s per M msgs | gateways' CPU s alpha / beta | verified |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for t, name in TRANSPORTS:
        per = [one_run(runs, t, r, senders) for r in range(1, cfg["reps"] + 1)]
        ok = [x for x in per if x]
        if not ok:
            lines.append(f"| {name} | - | failed | | | | | | no |")
            res["throughput"][t] = {"failed": True}
            continue
        # The median run by msg/s (the lower middle one of an even count).
        r = dict(sorted(ok, key=lambda x: x["msgs_per_s"])[(len(ok) - 1) // 2])
        r["runs_msgs_per_s"] = [x["msgs_per_s"] if x else None for x in per]
        r["verified"] = len(ok) == len(per) and all(x["verified"] for x in ok)
        res["throughput"][t] = r
        gw = (f"{r['gateways_cpu_s']['alpha']:.2f} / {r['gateways_cpu_s']['beta']:.2f}"
              if "gateways_cpu_s" in r else "-")
        bad = [f"run {k + 1}: " + ("failed" if not x else f"{x['expect'] - x['delivered']:,} missing, "
                                   f"{x['order_violations']:,} out of order, {x['malformed']:,} "
                                   f"malformed, {x.get('rejects', 0):,} refused")
               for k, x in enumerate(per) if not x or not x["verified"]]
        runs_s = " / ".join(f"{v:,}" if v else "-" for v in r["runs_msgs_per_s"])
        lines.append(f"| {name} | {r['delivered']:,} | {r['msgs_per_s']:,} | {runs_s} | "
                     f"{r['elapsed_s']:.2f} | {r['cpu_s_senders']:.2f} / {r['cpu_s_receiver']:.2f} | "
                     f"{r['python_cpu_s_per_M']:.2f} | {gw} | "
                     f"{'yes' if not bad else 'NO (' + '; '.join(bad) + ')'} |")
    lines.append("\nmsg/s: the median of the runs (each run's in the next column); the other columns "
                 "are that run's. Python CPU: the senders' and the receiver's own (os.times, user + "
                 "system: the kernel's TCP work done in their system calls is in it). Gateways: "
                 "alpha's and beta's CPU seconds over the run (DPDK lcores polling with their idle "
                 "back-off; up through the kernel transports' runs too, where they idle).")
    g = res["throughput"].get("gridwire", {})
    if "gateways_cpu_s_per_M" in g:
        lines.append(f"gridwire's gateways: {g['gateways_cpu_s_per_M']:.2f} CPU s per M messages "
                     f"besides Python's.")

    def rate(t):
        return res["throughput"].get(t, {}).get("msgs_per_s", 0)

    ratios = {}
    for t, want in (("zmq", 2.0), ("tcp", 1.5)):
        if rate("gridwire") and rate(t):
            ratios[f"gridwire_over_{t}"] = round(rate("gridwire") / rate(t), 2)
            res["targets"].append({"what": f"gridwire >= {want}x {dict(TRANSPORTS)[t]} msg/s",
                                   "value": ratios[f"gridwire_over_{t}"],
                                   "met": ratios[f"gridwire_over_{t}"] >= want})

    lines.append(f"\nCalls, one at a time ({cfg['calls']:,} after {cfg['warmup']:,} warm-up; "
                 f"Python: {cfg['call_size']}-byte payload, C: gw-perf's smallest, 24 bytes)\n")
    lines.append("| caller -> service | calls | p50 us | p99 us | max us | calls/s | CPU s caller |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = (("py_py", "Python c.call -> Python service"),
            ("py_c", "Python c.call -> C gw-perf echo"),
            ("c_c", "C gw-perf call -w 1 -> C gw-perf echo"))
    for key, name in rows:
        j = load(os.path.join(runs, f"call-{key}.json"))
        if not j:
            lines.append(f"| {name} | failed | | | | | |")
            continue
        ok = j.get("ok", j["calls"] - j.get("wrong", 0))
        res["calls"][key] = {"calls": j["calls"], "ok": ok, "wrong": j.get("wrong", 0),
                             "lat_us": j["lat_us"], "calls_per_s": j["calls_per_s"],
                             "cpu_s": j["cpu_s"]}
        lines.append(f"| {name} | {j['calls']:,} | {j['lat_us']['p50']:,} | {j['lat_us']['p99']:,} | "
                     f"{j['lat_us']['max']:,} | {j['calls_per_s']:,.0f} | {j['cpu_s']:.2f} |")
    pp, cc = res["calls"].get("py_py"), res["calls"].get("c_c")
    if pp and cc and cc["lat_us"]["p50"]:
        ratios["python_p50_over_c_p50"] = round(pp["lat_us"]["p50"] / cc["lat_us"]["p50"], 2)
        res["targets"].append({"what": "Python one-at-a-time call p50 <= 2x the C client's",
                               "value": ratios["python_p50_over_c_p50"],
                               "met": ratios["python_p50_over_c_p50"] <= 2.0})
    pc = res["calls"].get("py_c")
    if pc and cc and cc["lat_us"]["p50"]:
        ratios["python_to_c_echo_p50_over_c_p50"] = round(pc["lat_us"]["p50"] / cc["lat_us"]["p50"], 2)

    lines.append(f"\nCalls, {cfg['concurrency']:,} in flight at once (rounds until "
                 f"{cfg['acalls']:,} calls)\n")
    lines.append("| caller -> service | calls | calls/s | failed or wrong | CPU s caller |")
    lines.append("| --- | ---: | ---: | ---: | ---: |")
    for key, name in (("aio_py", "Python gridwire.aio gather -> Python service"),
                      ("aio_c", "C gw-perf call -w N -> C gw-perf echo")):
        j = load(os.path.join(runs, f"acall-{key}.json"))
        if not j:
            lines.append(f"| {name} | failed | | | |")
            continue
        bad = j.get("wrong", 0) + sum(j.get("errors", {}).values()) + (j["calls"] - j["ok"]
                                                                        if "ok" in j else 0)
        res["calls"][key] = {"calls": j["calls"], "calls_per_s": j["calls_per_s"],
                             "failed_or_wrong": bad, "cpu_s": j["cpu_s"],
                             **({"errors": j["errors"]} if j.get("errors") else {})}
        lines.append(f"| {name} | {j['calls']:,} | {j['calls_per_s']:,.0f} | {bad:,} | "
                     f"{j['cpu_s']:.2f} |")
    for key in ("py", "c"):
        j = load(os.path.join(runs, f"echo-{key}.json"))
        if j:
            res["calls"][f"echo_{key}_service"] = j

    res["ratios"] = ratios
    lines.append("\nRatios: " + ", ".join(f"{k} {v}" for k, v in ratios.items()))
    lines.append("Targets:")
    for t in res["targets"]:
        lines.append(f"  {'met' if t['met'] else 'NOT met'}: {t['what']} ({t['value']}x)")
    verified = all(v.get("verified") for v in res["throughput"].values()) and \
        all(v.get("wrong", 0) == 0 and v.get("failed_or_wrong", 0) == 0 and
            v.get("ok", v.get("calls")) == v.get("calls")
            for k, v in res["calls"].items() if not k.startswith("echo"))
    res["verified"] = verified
    lines.append(f"every message and call verified: {'yes' if verified else 'NO'}")
    report = "\n".join(lines) + "\n"
    with open(os.path.join(out, "python.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write(report)
    sys.stdout.write(report)

    dat = os.path.join(runs, "python.dat")
    with open(dat, "w") as f:
        for i, (t, name) in enumerate(TRANSPORTS):
            v = res["throughput"].get(t, {})
            short = {"gridwire": "gridwire (cable)", "zmq": "pyzmq (TCP)", "tcp": "TCP, 64 KB"}[t]
            f.write(f"{i} \"{short}\" {v.get('msgs_per_s', 0) / 1e6} {v.get('python_cpu_s_per_M', 0)}\n")
    gp = f"""set terminal pngcairo size 1200,480 font ',10' noenhanced
set output '{out}/python.png'
set multiplot layout 1,2 title "Python: {senders} senders (gwa) -> 1 receiver (gwb), {cfg['size']}-byte messages, every one verified; median of {cfg['reps']} runs"
set style fill solid 0.8 border -1
set boxwidth 0.6
set grid ytics
set xrange [-0.6:2.6]
set offsets 0, 0, graph 0.1, 0
unset key
set title 'throughput'
set ylabel 'million msg/s'
set yrange [0:*]
plot '{dat}' using 1:3:xtic(2) with boxes lc rgb '#1f77b4', \\
     '' using 1:3:(sprintf('%.2f M', $3)) with labels offset 0,0.8
set title "the Python programs' CPU (os.times)"
set ylabel 'CPU s per million messages'
plot '{dat}' using 1:4:xtic(2) with boxes lc rgb '#e67e22', \\
     '' using 1:4:(sprintf('%.2f', $4)) with labels offset 0,0.8
unset multiplot
"""
    try:
        subprocess.run(["gnuplot"], input=gp, text=True, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"no plot: gnuplot failed ({e}); install gnuplot-nox (./scripts/gw deps)")
    sys.exit(0 if verified else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def tx(name, fn, target):
        s = sub.add_parser(name)
        s.add_argument(target[0], **target[1])
        s.add_argument("--id", type=int, required=True)
        s.add_argument("--msgs", type=int, required=True)
        s.add_argument("--size", type=int, default=225)
        s.add_argument("--go", required=True, help="start once this file exists")
        s.set_defaults(fn=fn)
        return s

    def rx(name, fn, target):
        s = sub.add_parser(name)
        s.add_argument(target[0], **target[1])
        s.add_argument("--senders", type=int, required=True)
        s.add_argument("--msgs", type=int, required=True, help="per sender")
        s.add_argument("--size", type=int, default=225)
        s.add_argument("--idle", type=float, default=30, help="give up after so long without any")
        s.set_defaults(fn=fn)
        return s

    s = tx("gw-tx", cmd_gw_tx, ("--sock", {"required": True}))
    s.add_argument("--node", type=int, required=True)
    s.add_argument("--endpoint", required=True)
    s.add_argument("--by-id", action="store_true", help="send to endpoint_id(name), not the name")
    s = rx("gw-rx", cmd_gw_rx, ("--sock", {"required": True}))
    s.add_argument("--endpoint", required=True)
    s.add_argument("--batch", type=int, default=256)
    tx("zmq-push", cmd_zmq_push, ("--connect", {"required": True, "help": "tcp://HOST:PORT"}))
    rx("zmq-pull", cmd_zmq_pull, ("--bind", {"required": True, "help": "tcp://HOST:PORT"}))
    s = tx("tcp-tx", cmd_tcp_tx, ("--connect", {"required": True, "help": "HOST:PORT"}))
    s.add_argument("--buffer", type=int, default=65536)
    s = rx("tcp-rx", cmd_tcp_rx, ("--bind", {"required": True, "help": "HOST:PORT"}))
    s.add_argument("--buffer", type=int, default=65536)

    s = sub.add_parser("echo")
    s.add_argument("--sock", required=True)
    s.add_argument("--service", required=True)
    s.set_defaults(fn=cmd_echo)
    for name, fn in (("call", cmd_call), ("acall", cmd_acall)):
        s = sub.add_parser(name)
        s.add_argument("--sock", required=True)
        s.add_argument("--node", type=int, required=True)
        s.add_argument("--service", required=True)
        s.add_argument("--calls", type=int, required=True)
        s.add_argument("--size", type=int, default=8, help="payload bytes (a multiple of 8)")
        s.set_defaults(fn=fn)
    sub.choices["call"].add_argument("--warmup", type=int, default=2000)
    sub.choices["acall"].add_argument("--concurrency", type=int, default=1000)
    sub.choices["acall"].add_argument("--timeout", type=float, default=10.0)

    s = sub.add_parser("report")
    s.add_argument("out")
    s.set_defaults(fn=cmd_report)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
