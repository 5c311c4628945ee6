#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Kernel TCP flows, the baseline of scripts/bench_incast.sh.

  tcp_flows.py sink PORT N          take N connections, read each to its end;
                                    prints {"bytes", "elapsed_s"} (first byte
                                    to last, over all of them)
  tcp_flows.py send HOST PORT BYTES send BYTES in 64 KB writes (or, as
                                    "for:S", for S seconds); prints {"bytes",
                                    "segs_out", "retrans_segs"}: the namespace's
                                    TCP counters over the flow (run one sender
                                    per network namespace)
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


def sink(port, n):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(n)
    got, first, last, lock = [0], [None], [0.0], threading.Lock()

    def drain(c):
        while True:
            b = c.recv(1 << 20)
            now = time.monotonic()
            if not b:
                break
            with lock:
                got[0] += len(b)
                first[0] = first[0] or now
                last[0] = now
        c.close()

    threads = []
    for _ in range(n):
        c, _ = srv.accept()
        t = threading.Thread(target=drain, args=(c,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    print(json.dumps({"bytes": got[0], "elapsed_s": round(last[0] - (first[0] or last[0]), 4)}))


def send(host, port, amount):
    out0, re0 = tcp_counters()
    s = socket.create_connection((host, port))
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
    print(json.dumps({"bytes": nbytes, "segs_out": out1 - out0, "retrans_segs": re1 - re0}))


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "sink":
        sink(int(a[1]), int(a[2]))
    elif len(a) == 4 and a[0] == "send":
        send(a[1], int(a[2]), a[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
