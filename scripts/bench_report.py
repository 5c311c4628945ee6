#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench_report.py OUT MSGS PAUSE_MS LINK [COMPARE [TOLERANCE]]: the tables, CSV
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
out, msgs, pause_ms, link = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
compare = sys.argv[5] if len(sys.argv) > 5 else ""
tolerance = float(sys.argv[6]) if len(sys.argv) > 6 else 10.0
MODES = (("on", "batched"), ("off", "unbatched"))
LINKS = {"cable": "the cable (vhost-user <-> virtio-user, bond mode 4)",
         "veth": "the veths (af_packet, bond mode 4)"}
# The maximum's runs: max-REP-VARIANT.json
VARIANTS = (("batched", "gridwire batched, cable"), ("batched_veth", "gridwire batched, veths (af_packet)"),
            ("batched_huge", "gridwire batched, cable, hugepages"),
            ("unbatched", "gridwire unbatched (1 msg/frame), cable"))
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
    f"4 sender processes, over {LINKS.get(link, link)}, MTU 9000")
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
    rep, mode = re.search(r"max-(\d+)-(\w+)\.json$", path).groups()
    r = load(path)
    if not verified(r):
        failed.append(os.path.basename(path))
        if not r:
            continue
    maxrows.append({"mode": mode, "rep": int(rep), "msgs_per_s": r["msgs_per_s"],
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
nreps = len([r for r in maxrows if r["mode"] == "batched"])
say(f"Unpaced maximum: 4 processes x 250 writers, as fast as they go (median of {nreps} runs each, "
    "interleaved), and references measured in this run")
top = med("batched", "msgs_per_s")
say(f"{'path':<58}{'msg/s':>12}{'gw CPU/M':>9}{'cl CPU/M':>9}{'cable is':>10}")
for key, name in VARIANTS:
    m = med(key, "msgs_per_s")
    if not m:
        continue
    ratio = "" if key == "batched" else f"{top / m:>9.2f}x"
    say(f"{name:<58}{m:>12,.0f}{med(key, 'gw_cpu_s_per_M'):>9.3f}{med(key, 'client_cpu_s_per_M'):>9.3f}{ratio:>10}")
for key, name in (("testpmd_cable", "cable capacity, dpdk-testpmd, 2 links unbonded"),
                  ("testpmd", "veth capacity, dpdk-testpmd, bond mode 2")):
    if key in refs:
        t = refs[key]
        label = f"{name}: {t['pps'] / 1e6:.2f} Mpps x {t['msgs_per_frame']}"
        say(f"{label:<58}{t['msg_capacity']:>12,}{'':>18}{top / t['msg_capacity']:>9.2f}x")
for key, name in (("tcp_64k", "TCP, 64 KB application buffering"), ("zmq", "ZeroMQ PUSH/PULL")):
    if key in refs:
        r = refs[key]
        cpu = r["cpu_s"] / (r["msgs"] / 1e6) if r["msgs"] else 0
        say(f"{name + ' (receiver CPU)':<58}{r['msgs_per_s']:>12,.0f}{'':>9}{cpu:>9.3f}"
            f"{top / r['msgs_per_s']:>9.2f}x")

# Everything shares the machine's cores, so CPU per message bounds the rate.
ncpu = os.cpu_count() or 1
for key, name in (("batched", "cable"), ("batched_veth", "veths")):
    clients, gws = med(key, "client_cpu_s_per_M"), med(key, "gw_cpu_s_per_M")
    if clients and gws:
        if key == "batched":
            say()
            say(f"Where the {ncpu} cores go at the maximum (CPU s per million messages, medians):")
        say(f"  {name}: senders and receiver {clients:.3f} + gateways {gws:.3f} = {clients + gws:.3f}: "
            f"at most {ncpu / (clients + gws):.1f} M msg/s on these cores")

# --- targets ---
say()
say("Targets:")
low = [r for r in rows if r["mode"] == "batched" and r["intended"] <= 4_000_000]
worst = min(low, key=lambda r: r["pct_of_pace"]) if low else None
if worst:
    say(f"  batched keeps >= 95 % of the pace up to 4 M msg/s intended: "
        f"{'yes' if worst['pct_of_pace'] >= 95 else 'NO'} (lowest {worst['pct_of_pace']} % at "
        f"{worst['writers']:,} writers)")
if top:
    say(f"  unpaced maximum on the cable >= 7 M msg/s: {'yes' if top >= 7e6 else 'NO'} ({top:,.0f})")
veth = med("batched_veth", "msgs_per_s")
if top and veth:
    say(f"  cable >= 1.5x the af_packet maximum of the same run: {'yes' if top >= 1.5 * veth else 'NO'} "
        f"({top / veth:.2f}x)")
if top and "tcp_64k" in refs:
    t = refs["tcp_64k"]["msgs_per_s"]
    say(f"  cable >= 0.5x TCP with 64 KB buffering: {'yes' if top >= t / 2 else 'NO'} ({top / t:.2f}x)")
rss = [r["gw_mem_peak_mb"] for r in rows if r["mode"] == "batched"]
if rss:
    say(f"  gateway memory (PSS, both gateways) flat across the sweep: {min(rss)}-{max(rss)} MB peak")
huge = med("batched_huge", "msgs_per_s")
if top and huge:
    say(f"  (hugepages against --no-huge on the cable: {huge / top:.2f}x; "
        f"{'--no-huge stays the default' if huge < 1.05 * top else 'hugepages are faster here'})")
if writers and by.get(("batched", writers[-1])) and by.get(("unbatched", writers[-1])):
    b, u = by[("batched", writers[-1])], by[("unbatched", writers[-1])]
    say(f"  (top of the sweep, {writers[-1]:,} writers: batched {b['delivered'] / u['delivered']:.1f}x the "
        f"unbatched msg/s, {u['gw_cpu_s_per_M'] / b['gw_cpu_s_per_M']:.1f}x less gateway CPU per message)")

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
        for name, _ in VARIANTS:
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
set multiplot layout 1,2 title 'gridwire writer-population sweep (225-byte messages, {pause_ms} ms pause, {link})'
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
