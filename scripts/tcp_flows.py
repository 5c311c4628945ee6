#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Kernel TCP flows, the baseline of scripts/bench_incast.sh.

  tcp_flows.py sink PORT N [per-peer]
                                    take N connections, read each to its end;
                                    prints {"bytes", "elapsed_s"} (first byte
                                    to last, over all of them), and with
                                    per-peer the same of each peer address
                                    ("per_peer")
  tcp_flows.py send HOST PORT BYTES [CC]
                                    send BYTES in 64 KB writes (or, as
                                    "for:S", for S seconds) under congestion
                                    control CC (default cubic, Debian's: not
                                    the machine's sysctl, which may be bbr);
                                    prints {"bytes", "cc", "segs_out",
                                    "retrans_segs"}: the namespace's TCP
                                    counters over the flow (run one sender per
                                    network namespace)
"""
import json
import socket
import sys
import threading
import time

CHUNK = 64 * 1024


def tcp_counters():
    """OutSegs and RetransSegs of this network namespace (/proc/net/snmp)."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    c = dict(zip(rows[0][1:], (int(v) for v in rows[1][1:])))
    return c["OutSegs"], c["RetransSegs"]


def sink(port, n, per_peer=False):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(n)
    lock = threading.Lock()
    flows = []  # [peer, bytes, first, last] of each connection

    def drain(c, f):
        while True:
            b = c.recv(1 << 20)
            now = time.monotonic()
            if not b:
                break
            with lock:
                f[1] += len(b)
                f[2] = f[2] or now
                f[3] = now
        c.close()

    def span(fs):
        firsts = [f[2] for f in fs if f[2]]
        return {"bytes": sum(f[1] for f in fs),
                "elapsed_s": round(max(f[3] for f in fs) - min(firsts), 4) if firsts else 0}

    threads = []
    for _ in range(n):
        c, peer = srv.accept()
        flows.append([peer[0], 0, None, 0.0])
        t = threading.Thread(target=drain, args=(c, flows[-1]))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    out = span(flows)
    if per_peer:
        out["per_peer"] = {p: span([f for f in flows if f[0] == p]) for p in {f[0] for f in flows}}
    print(json.dumps(out))


def send(host, port, amount, cc):
    out0, re0 = tcp_counters()
    s = socket.socket()
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    except OSError as e:
        sys.exit(f"tcp_flows.py: congestion control {cc!r}: {e.strerror} "
                 "(sysctl net.ipv4.tcp_available_congestion_control lists those loaded; modprobe tcp_NAME)")
    s.connect((host, port))
    buf = b"\x5a" * CHUNK
    if amount.startswith("for:"):
        end, nbytes = time.monotonic() + float(amount[4:]), 0
        while time.monotonic() < end:
            nbytes += s.send(buf)
    else:
        nbytes = left = int(amount)
        while left:
            left -= s.send(buf[:min(left, CHUNK)])
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the sink's close: everything was taken
    s.close()
    out1, re1 = tcp_counters()
    print(json.dumps({"bytes": nbytes, "cc": cc, "segs_out": out1 - out0, "retrans_segs": re1 - re0}))


def main():
    a = sys.argv[1:]
    if len(a) in (3, 4) and a[0] == "sink" and a[3:] in ([], ["per-peer"]):
        sink(int(a[1]), int(a[2]), a[3:] == ["per-peer"])
    elif len(a) in (4, 5) and a[0] == "send":
        send(a[1], int(a[2]), a[3], a[4] if len(a) == 5 else "cubic")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
