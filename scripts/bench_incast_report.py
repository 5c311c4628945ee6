#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The table (report.txt), incast.json and a gnuplot plot (incast.png) of
scripts/bench_incast.sh's run in OUT: per number of senders, gridwire under
each [cc] control and kernel TCP through the same shaped port."""
import glob
import json
import os
import subprocess
import sys

out, rate, queue = sys.argv[1], sys.argv[2], sys.argv[3]
runs = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/gw-*.json")) + sorted(glob.glob(f"{out}/tcp-*.json"))]
runs.sort(key=lambda r: (r["senders"], r["transport"] != "gridwire", r["cc"], r["port"]))
shares = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/share-*.json"))]
for s in shares:  # Jain's fairness index of the two shares: 1 even, 0.5 one takes all
    a, b = s["gridwire_share"], s["tcp_share"]
    s["jain"] = round((a + b) ** 2 / (2 * (a * a + b * b)) if a + b else 0, 3)
json.dump({"rate": rate, "queue": queue, "runs": runs, "sharing": shares},
          open(f"{out}/incast.json", "w"), indent=1)

cols = [("senders", "N"), ("transport", "transport"), ("cc", "cc"), ("port", "port"), ("verified", "ok"),
        ("goodput", "goodput"), ("retrans_per_frame", "retrans/frame"), ("switch_drops", "drops"),
        ("drops_per_frame", "drops/frame"), ("bulk_p50_us", "bulk p50 us"), ("bulk_p99_us", "bulk p99 us"),
        ("urgent_p50_us", "urgent p50 us"), ("urgent_p99_us", "urgent p99 us")]
rows = [[str(r.get(k, "-")) for k, _ in cols] for r in runs]
w = [max([len(h)] + [len(x[i]) for x in rows]) for i, (_, h) in enumerate(cols)]
lines = []
if rows:  # none when the run was only the sharing one (--senders "")
    lines += [f"incast into one node through switch ports of {rate} with a {queue} queue "
              "(gridwire: both ports; TCP: one)",
              "  ".join(h.rjust(w[i]) for i, (_, h) in enumerate(cols))]
    lines += ["  ".join(x[i].rjust(w[i]) for i in range(len(cols))) for x in rows]
if shares:
    lines += [""] * bool(lines) + ["one gridwire stream beside one kernel TCP flow through one FIFO port "
              "(shares of the port; Jain's index of the two, 1 = even)",
              "cc          ok  gridwire  TCP (its cc)    Jain"]
    lines += [f"{s['cc']:<10} {str(s['verified']):>3}  {s['gridwire_share']:>8}  "
              f"{s['tcp_share']:>5} ({s.get('tcp_cc', '?'):<5})  {s['jain']:>5}" for s in shares]
open(f"{out}/report.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))

# Goodput and retransmissions per frame against N, one line per transport and control.
series = {}
for r in runs:
    if r["transport"] == "tcp" or r["port"] == "prio":
        series.setdefault(f"{r['transport']} {r['cc']}", []).append(r)
dat = f"{out}/incast.dat"
with open(dat, "w") as f:
    for name, rs in series.items():
        f.write(f'"{name}"\n')
        for r in rs:
            f.write(f"{r['senders']} {r['goodput']} {r['retrans_per_frame']}\n")
        f.write("\n\n")
plots = ", ".join(f"'{dat}' index {i} u 1:{{c}} w lp t '{name}'" for i, name in enumerate(series))
script = f"""
set terminal pngcairo size 1100,450
set output '{out}/incast.png'
set multiplot layout 1,2 title 'Incast through a {rate} port with a {queue} queue'
set xlabel 'senders'; set ylabel 'goodput (share of capacity)'; set yrange [0:1.1]
plot {plots.format(c=2)}
set ylabel 'frames sent again per frame'; set autoscale y; set logscale y
plot {plots.format(c=3).replace("u 1:3", "u 1:($3+1e-4)")}
unset multiplot
"""
if series:
    subprocess.run(["gnuplot"], input=script, text=True, check=False)
if os.path.exists(f"{out}/incast.png"):
    print(f"plot: {out}/incast.png")
