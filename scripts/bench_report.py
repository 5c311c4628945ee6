#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench_report.py OUT MSGS PAUSE_MS [COMPARE [TOLERANCE]]: the tables, CSV
files, plot and target check of a scripts/bench.sh run from OUT/runs/*.json.
Writes OUT/sweep.csv, OUT/max.csv, OUT/report.txt and OUT/sweep.png; prints
the report. COMPARE (an older results folder or its sweep.csv) flags points
whose delivered msg/s fell more than TOLERANCE percent; exit 1 then, or
when a run failed its verification."""
import csv
import glob
import json
import os
import re
import statistics
import subprocess
import sys

if sys.argv[1] == "--line":  # bench_report.py --line RUN.json INTENDED: the progress line's end
    r, intended = json.load(open(sys.argv[2])), int(sys.argv[3])
    print(f"{r['msgs_per_s']:>9,} delivered ({100 * r['msgs_per_s'] / intended:.1f} %), "
          f"{r['msgs_per_frame']} msgs/frame, p99 {r['lat_us']['p99'] / 1000:.1f} ms")
    sys.exit(0)
out, msgs, pause_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
compare = sys.argv[4] if len(sys.argv) > 4 else ""
tolerance = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
MODES = (("on", "batched"), ("off", "unbatched"))
lines = []


def say(s=""):
    lines.append(s)
    print(s)


def load(path):
    try:
        r = json.load(open(path))
        return r if "msgs_per_s" in r else None
    except (OSError, ValueError):
        return None


def verified(r):
    return r and r["delivered"] == r["sent"] and not r["duplicates"] and not r["order_violations"]


# --- the sweep ---
SWEEP = ["mode", "writers", "intended", "delivered", "pct_of_pace", "elapsed_s", "msgs_per_frame",
         "bytes_per_frame", "gw_cpu_s_per_M", "client_cpu_s_per_M", "gw_mem_peak_mb", "lat_p50_us",
         "lat_p99_us", "lat_max_us", "le_100us", "le_1ms", "le_10ms", "le_100ms", "le_1s", "gt_1s",
         "verified"]
rows, failed = [], []
for path in glob.glob(f"{out}/runs/sweep-*.json"):
    w, mode = re.search(r"sweep-(\d+)-(on|off)\.json$", path).groups()
    w = int(w)
    r = load(path)
    if not verified(r):
        failed.append(os.path.basename(path))
        if not r:
            continue
    intended = w * 1000 // pause_ms
    h = r["lat_hist"]
    rows.append({
        "mode": dict(MODES)[mode], "writers": w, "intended": intended,
        "delivered": r["msgs_per_s"], "pct_of_pace": round(100 * r["msgs_per_s"] / intended, 1),
        "elapsed_s": r["elapsed_s"], "msgs_per_frame": r["msgs_per_frame"],
        "bytes_per_frame": r["bytes_per_frame"], "gw_cpu_s_per_M": r["gw_cpu_s_per_M"],
        "client_cpu_s_per_M": r["client_cpu_s_per_M"],
        "gw_mem_peak_mb": round(r["gw_mem_kb"][1] / 1024), "lat_p50_us": r["lat_us"]["p50"],
        "lat_p99_us": r["lat_us"]["p99"], "lat_max_us": r["lat_us"]["max"],
        **{k: h[k] for k in ("le_100us", "le_1ms", "le_10ms", "le_100ms", "le_1s", "gt_1s")},
        "verified": verified(r),
    })
rows.sort(key=lambda x: (x["writers"], x["mode"]))
with open(f"{out}/sweep.csv", "w", newline="") as f:
    wr = csv.DictWriter(f, SWEEP)
    wr.writeheader()
    wr.writerows(rows)

say(f"Writer-population sweep: 225-byte messages, {msgs} per writer, {pause_ms} ms pause, "
    "4 sender processes, bond mode 4, MTU 9000")
say(f"{'writers':>8} {'intended':>10} | {'batched':>10} {'%':>6} {'msg/fr':>6} {'B/fr':>5} "
    f"{'gwCPU/M':>7} {'p50ms':>6} {'p99ms':>6} | {'unbatched':>10} {'%':>6} {'gwCPU/M':>7} "
    f"{'p99ms':>7} | {'ratio':>5}")
by = {(r["mode"], r["writers"]): r for r in rows}
writers = sorted({r["writers"] for r in rows})
for w in writers:
    b, u = by.get(("batched", w)), by.get(("unbatched", w))
    cells = f"{w:>8,} {w * 1000 // pause_ms:>10,} | "
    cells += (f"{b['delivered']:>10,} {b['pct_of_pace']:>6.1f} {b['msgs_per_frame']:>6.1f} "
              f"{b['bytes_per_frame']:>5} {b['gw_cpu_s_per_M']:>7.3f} {b['lat_p50_us'] / 1000:>6.1f} "
              f"{b['lat_p99_us'] / 1000:>6.1f} | ") if b else f"{'-':>58} | "
    cells += (f"{u['delivered']:>10,} {u['pct_of_pace']:>6.1f} {u['gw_cpu_s_per_M']:>7.3f} "
              f"{u['lat_p99_us'] / 1000:>7.1f} | ") if u else f"{'-':>34} | "
    cells += f"{b['delivered'] / u['delivered']:>5.2f}" if b and u and u["delivered"] else ""
    say(cells)
say()
say("Latency histogram (messages delivered within):")
say(f"{'mode':<10}{'writers':>8} {'<=0.1ms':>9} {'<=1ms':>9} {'<=10ms':>9} {'<=100ms':>9} "
    f"{'<=1s':>9} {'>1s':>9} {'max ms':>8}")
for r in rows:
    say(f"{r['mode']:<10}{r['writers']:>8,} {r['le_100us']:>9,} {r['le_1ms']:>9,} {r['le_10ms']:>9,} "
        f"{r['le_100ms']:>9,} {r['le_1s']:>9,} {r['gt_1s']:>9,} {r['lat_max_us'] / 1000:>8.1f}")

# --- the maximum ---
MAXF = ["mode", "rep", "msgs_per_s", "msgs_per_frame", "gw_cpu_s_per_M", "client_cpu_s_per_M", "retrans",
        "sent", "verified"]
maxrows = []
for path in sorted(glob.glob(f"{out}/runs/max-*.json")):
    rep, mode = re.search(r"max-(\d+)-(on|off)\.json$", path).groups()
    r = load(path)
    if not verified(r):
        failed.append(os.path.basename(path))
        if not r:
            continue
    maxrows.append({"mode": dict(MODES)[mode], "rep": int(rep), "msgs_per_s": r["msgs_per_s"],
                    "msgs_per_frame": r["msgs_per_frame"], "gw_cpu_s_per_M": r["gw_cpu_s_per_M"],
                    "client_cpu_s_per_M": r.get("client_cpu_s_per_M", 0),
                    "retrans": r["retrans"], "sent": r["sent"], "verified": verified(r)})
with open(f"{out}/max.csv", "w", newline="") as f:
    wr = csv.DictWriter(f, MAXF)
    wr.writeheader()
    wr.writerows(maxrows)


def med(mode, key):
    v = [r[key] for r in maxrows if r["mode"] == mode]
    return statistics.median(v) if v else 0


refs = {}
try:
    refs = json.load(open(f"{out}/refs.json"))
except (OSError, ValueError):
    pass
say()
say("Unpaced maximum: 4 processes x 250 writers, as fast as they go (median of "
    f"{len([r for r in maxrows if r['mode'] == 'batched'])} runs), and references measured in this run")
top = med("batched", "msgs_per_s")
say(f"{'path':<44}{'msg/s':>12}{'CPU s/M':>9}{'gridwire is':>13}")
say(f"{'gridwire batched (end to end, 2 gateways)':<44}{top:>12,.0f}{med('batched', 'gw_cpu_s_per_M'):>9.3f}")
say(f"{'gridwire unbatched (1 msg/frame)':<44}{med('unbatched', 'msgs_per_s'):>12,.0f}"
    f"{med('unbatched', 'gw_cpu_s_per_M'):>9.3f}"
    f"{(top / med('unbatched', 'msgs_per_s') if med('unbatched', 'msgs_per_s') else 0):>12.2f}x")
if "testpmd" in refs:
    t = refs["testpmd"]
    say(f"{'link capacity, dpdk-testpmd ' + str(t['pps']) + ' pps x ' + str(t['msgs_per_frame']) + ' msgs':<44}"
        f"{t['msg_capacity']:>12,}{'':>9}{top / t['msg_capacity']:>12.2f}x")
for key, name in (("tcp_64k", "TCP, 64 KB application buffering"), ("zmq", "ZeroMQ PUSH/PULL")):
    if key in refs:
        r = refs[key]
        cpu = r["cpu_s"] / (r["msgs"] / 1e6) if r["msgs"] else 0
        say(f"{name + ' (receiver CPU)':<44}{r['msgs_per_s']:>12,.0f}{cpu:>9.3f}{top / r['msgs_per_s']:>12.2f}x")

# Everything shares the machine's cores, so CPU per message bounds the rate.
ncpu = os.cpu_count() or 1
clients, gws = med("batched", "client_cpu_s_per_M"), med("batched", "gw_cpu_s_per_M")
if clients and gws:
    say()
    say(f"Where the {ncpu} cores go at the maximum (CPU s per million messages, medians):")
    say(f"  senders and receiver {clients:.3f} + gateways {gws:.3f} = {clients + gws:.3f}: "
        f"at most {ncpu / (clients + gws):.1f} M msg/s on these cores")
    if "testpmd" in refs:
        cap = refs["testpmd"]["msg_capacity"] / 1e6
        say(f"  the link alone (testpmd's {ncpu} lcores at capacity) {ncpu / cap:.3f}: half its capacity "
            f"needs the whole path at {2 * ncpu / cap:.3f} or less")

# --- targets ---
say()
say("Targets:")
low = [r for r in rows if r["mode"] == "batched" and r["intended"] <= 1_000_000]
worst = min(low, key=lambda r: r["pct_of_pace"]) if low else None
if worst:
    say(f"  batched keeps >= 95 % of the pace up to 1 M msg/s intended: "
        f"{'yes' if worst['pct_of_pace'] >= 95 else 'NO'} (lowest {worst['pct_of_pace']} % at "
        f"{worst['writers']:,} writers)")
if writers and by.get(("batched", writers[-1])) and by.get(("unbatched", writers[-1])):
    b, u = by[("batched", writers[-1])], by[("unbatched", writers[-1])]
    ratio, cpu = b["delivered"] / u["delivered"], u["gw_cpu_s_per_M"] / b["gw_cpu_s_per_M"]
    say(f"  top of the sweep ({writers[-1]:,} writers): batched {ratio:.1f}x the unbatched msg/s "
        f"({'yes' if ratio >= 10 else 'NO'}, target 10x), {cpu:.1f}x less gateway CPU per message "
        f"({'yes' if cpu >= 10 else 'NO'}, target 10x)")
rss = [r["gw_mem_peak_mb"] for r in rows if r["mode"] == "batched"]
if rss:
    say(f"  gateway memory (PSS) across the sweep (batched, both gateways): {min(rss)}-{max(rss)} MB peak")
if "testpmd" in refs:
    cap = refs["testpmd"]["msg_capacity"]
    say(f"  unpaced maximum >= half the link's 225-byte message capacity: "
        f"{'yes' if top >= cap / 2 else 'NO'} ({top / cap:.2f} of {cap:,})")

# --- comparison ---
regressions = []
if compare:
    old_csv = compare if compare.endswith(".csv") else os.path.join(compare, "sweep.csv")
    old = {(r["mode"], int(r["writers"])): float(r["delivered"]) for r in csv.DictReader(open(old_csv))}
    for r in rows:
        o = old.get((r["mode"], r["writers"]))
        if o and r["delivered"] < o * (1 - tolerance / 100):
            regressions.append(f"{r['mode']} at {r['writers']:,} writers: {r['delivered']:,} msg/s, "
                               f"was {o:,.0f} ({100 * (r['delivered'] / o - 1):+.1f} %)")
    old_max = os.path.join(os.path.dirname(old_csv), "max.csv")
    if os.path.exists(old_max):
        om = {}
        for r in csv.DictReader(open(old_max)):
            om.setdefault(r["mode"], []).append(float(r["msgs_per_s"]))
        for mode, name in MODES:
            if om.get(name) and med(name, "msgs_per_s") < statistics.median(om[name]) * (1 - tolerance / 100):
                regressions.append(f"{name} maximum: {med(name, 'msgs_per_s'):,.0f} msg/s, was "
                                   f"{statistics.median(om[name]):,.0f}")
    say()
    say(f"Compared with {old_csv} (tolerance {tolerance:g} %): "
        + ("no point got slower" if not regressions else f"{len(regressions)} got slower"))
    for x in regressions:
        say(f"  SLOWER: {x}")
if failed:
    say()
    say("FAILED verification or no result: " + ", ".join(sorted(failed)))

# --- the plot ---
gp = f"""set terminal pngcairo size 1200,500 font ',10'
set output '{out}/sweep.png'
set datafile separator ','
set multiplot layout 1,2 title 'gridwire writer-population sweep (225-byte messages, {pause_ms} ms pause)'
set key top left
set grid
set logscale xy
set xlabel 'intended msg/s'
set ylabel 'delivered msg/s'
set format x '%.0s%c'
set format y '%.0s%c'
plot '< grep ^batched {out}/sweep.csv' using 3:4 with linespoints lw 2 title 'batched', \\
     '< grep ^unbatched {out}/sweep.csv' using 3:4 with linespoints lw 2 title 'unbatched (1 msg/frame)', \\
     x with lines dt 2 lc rgb 'gray' title 'intended'
unset logscale y
set logscale x
set ylabel 'messages per frame'
set format y '%g'
plot '< grep ^batched {out}/sweep.csv' using 3:7 with linespoints lw 2 title 'batched', \\
     '< grep ^unbatched {out}/sweep.csv' using 3:7 with linespoints lw 2 title 'unbatched'
unset multiplot
"""
try:
    subprocess.run(["gnuplot"], input=gp, text=True, check=True, capture_output=True)
    say()
    say(f"Results: {out}/ (sweep.csv, max.csv, refs.json, report.txt, sweep.png)")
except (OSError, subprocess.CalledProcessError) as e:
    say(f"no plot: gnuplot failed ({e}); install gnuplot-nox (./scripts/gw deps)")
open(f"{out}/report.txt", "w").write("\n".join(lines) + "\n")
sys.exit(1 if regressions or failed else 0)
