#!/usr/bin/env python3
"""bench_failover_report.py OUT CUTS RATE: the table, failover.json and the
plot of scripts/bench_failover.sh's run in OUT. Per mode (mode4, parallel)
and kind of cut (link, silent): MODE-KIND-run.json (pair.sh's JSON line),
MODE-KIND-cuts.json (the cut times, CLOCK_MONOTONIC) and
MODE-KIND-timeline.csv (the receiver's 100 ms bins); per mode
MODE-lossy-run.json and MODE-max-R-run.json (R = 1, 2, 3)."""
import csv
import json
import os
import statistics
import subprocess
import sys

out, cuts, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
KINDS = ("link", "silent")
MODES = [m for m in ("mode4", "parallel") if os.path.exists(f"{out}/{m}-link-run.json")]
lines = []


def say(s=""):
    lines.append(s)
    print(s)


def load(path):
    try:
        with open(path) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


def timeline(mode, kind):
    try:
        with open(f"{out}/{mode}-{kind}-timeline.csv") as f:
            return [{k: int(v) for k, v in r.items()} for r in csv.DictReader(f)]
    except OSError:
        return []


def in_order(run):
    return bool(run) and run["delivered"] == run["sent"] and not run["duplicates"] and \
        not run["order_violations"]


def cut_stats(mode, kind):
    """A stream's figures, and per cut the worst 100 ms bins around it."""
    run = load(f"{out}/{mode}-{kind}-run.json") or {}
    try:
        cut_times = json.load(open(f"{out}/{mode}-{kind}-cuts.json"))
    except (OSError, ValueError):
        cut_times = []
    bins = timeline(mode, kind)
    worst = []
    for c in cut_times:
        # From just before it went down to half a second after it was back.
        lo, hi = (c["down_s"] - 0.1) * 1000, (c["in_service_s"] + 0.5) * 1000
        near = [b for b in bins if lo <= b["t_ms"] <= hi]
        worst.append({"member": c["member"],
                      "max_ms": max((b["max_us"] for b in near), default=0) / 1000,
                      "p99_ms": max((b["p99_us"] for b in near), default=0) / 1000})
    s = {
        "cuts": len(cut_times),
        "max_gap_ms": run.get("max_gap_ms"),
        "max_latency_ms": run.get("lat_us", {}).get("max", 0) / 1000,
        "p99_ms_near_cuts": max((w["p99_ms"] for w in worst), default=None),
        "retrans": run.get("retrans"),
        "lost": run["sent"] - run["delivered"] if run else None,
        "delivered_in_order": in_order(run),
        "p50_us": run.get("lat_us", {}).get("p50"),
    }
    if mode == "parallel":
        s["redundant_discarded"] = run.get("redundant_at_beta")
    return s, worst


result = {"cuts": 0, "pace_msgs_per_s": rate}
per_cut = {}
for mode in MODES:
    kinds = {}
    for kind in KINDS:
        kinds[kind], per_cut[(mode, kind)] = cut_stats(mode, kind)
    k = list(kinds.values())
    maxes = [r["msgs_per_s"] for r in (load(f"{out}/{mode}-max-{i}-run.json") for i in (1, 2, 3))
             if r and r["delivered"] == r["sent"]]
    # The headline: the worst of both kinds of cut.
    result[mode] = {
        "max_gap_ms": max((x["max_gap_ms"] or 0 for x in k), default=None),
        "max_latency_ms": max(x["max_latency_ms"] for x in k),
        "retrans": sum(x["retrans"] or 0 for x in k),
        "lost": sum(x["lost"] or 0 for x in k),
        "delivered_in_order": all(x["delivered_in_order"] for x in k),
        "max_msgs_per_s": statistics.median(maxes) if maxes else None,
        "max_msgs_per_s_runs": maxes,
        "link_cuts": kinds["link"],
        "silent_cuts": kinds["silent"],
    }
    if mode == "parallel":
        result[mode]["redundant_discarded"] = sum(x.get("redundant_discarded") or 0 for x in k)
    result["cuts"] = sum(x["cuts"] for x in k)
    lossy = load(f"{out}/{mode}-lossy-run.json") or {}
    result.setdefault("lossy_member", {})[mode] = {
        "retrans": lossy.get("retrans"),
        # retransmitted frames that had arrived (the far end's duplicates):
        # late acks, not the loss
        "spurious": lossy.get("dup_frames"),
        "p99_ms": lossy.get("lat_us", {}).get("p99", 0) / 1000,
        "max_ms": lossy.get("lat_us", {}).get("max", 0) / 1000,
        "delivered_in_order": in_order(lossy),
    }

say(f"Failover on the cable: {cuts} link cuts and {cuts} silent cuts per mode, each member "
    f"down {json.load(open(f'{out}/params.json'))['down_ms']} ms, in paced streams of {rate:,} msg/s, "
    "every message verified")
say()
cols = [(m, k) for m in MODES for k in KINDS]
say(f"{'':28}" + "".join(f"{m + ' ' + k:>16}" for m, k in cols))
for name, key in (("largest gap of a writer, ms", "max_gap_ms"), ("max latency, ms", "max_latency_ms"),
                  ("p99 near a cut (100 ms), ms", "p99_ms_near_cuts"), ("retransmissions", "retrans"),
                  ("messages lost", "lost"), ("all once, in order", "delivered_in_order"),
                  ("latency p50, us", "p50_us"), ("copies discarded", "redundant_discarded")):
    say(f"{name:28}" + "".join(f"{str(result[m][k + '_cuts'].get(key, '-')):>16}" for m, k in cols))
say()
say(f"{'':28}" + "".join(f"{m:>16}" for m in MODES))
say(f"{'unpaced max, msg/s (median)':28}" + "".join(f"{str(result[m]['max_msgs_per_s']):>16}" for m in MODES))
say(f"{'  the three runs, M msg/s':28}" + "".join(f"{' ' + '/'.join(f'{x / 1e6:.2f}' for x in result[m]['max_msgs_per_s_runs']):>16}" for m in MODES))
say("One member losing 20 % (the other clean):")
for name, key in (("retransmissions", "retrans"), ("  of frames that had arrived", "spurious"),
                  ("latency p99, ms", "p99_ms"),
                  ("latency max, ms", "max_ms"), ("all once, in order", "delivered_in_order")):
    say(f"{name:28}" + "".join(f"{str(result['lossy_member'][m].get(key)):>16}" for m in MODES))
say()
say("Per cut, max latency in the 100 ms bins around it (ms):")
for m, k in cols:
    say(f"  {m + ' ' + k:16} " + " ".join(f"{w['max_ms']:.0f}" for w in per_cut[(m, k)]))

if set(MODES) == {"mode4", "parallel"}:
    p, m4 = result["parallel"], result["mode4"]
    targets = {
        "gap_at_most_a_tenth_of_mode4": bool(p["max_gap_ms"] is not None and m4["max_gap_ms"] and
                                             p["max_gap_ms"] <= m4["max_gap_ms"] / 10),
        "parallel_nothing_lost": p["lost"] == 0 and p["delivered_in_order"],
        "parallel_no_retrans_on_cuts": p["retrans"] == 0,
        # a retransmission the lossy member made needed: one of a frame that had not arrived
        "parallel_lossy_none_resent_for_loss": result["lossy_member"]["parallel"]["retrans"] ==
        result["lossy_member"]["parallel"]["spurious"],
        "max_ratio": round(p["max_msgs_per_s"] / m4["max_msgs_per_s"], 2)
        if p.get("max_msgs_per_s") and m4.get("max_msgs_per_s") else None,
    }
    targets["max_ratio_at_least_0_7"] = bool(targets["max_ratio"] and targets["max_ratio"] >= 0.7)
    result["targets"] = targets
    say()
    say("Targets: " + ", ".join(f"{k} {v}" for k, v in targets.items()))
json.dump(result, open(f"{out}/failover.json", "w"), indent=1)

# Latency through the cuts: a panel per mode and kind, on the run's clock.
panels = []
for m, k in cols:
    bins = timeline(m, k)
    t0 = bins[0]["t_ms"] / 1000 if bins else 0
    with open(f"{out}/{m}-{k}-latency.dat", "w") as f:
        for b in bins:  # a bin nothing arrived in breaks the line: a gap
            f.write(f"{b['t_ms'] / 1000 - t0:.1f} {max(b['max_us'], 1) / 1000:.3f} "
                    f"{max(b['p99_us'], 1) / 1000:.3f}\n" if b["msgs"] else "\n")
    try:
        marks = json.load(open(f"{out}/{m}-{k}-cuts.json"))
    except (OSError, ValueError):
        marks = []
    arrows = "".join(
        f"set arrow from {c['down_s'] - t0:.2f}, graph 0 to {c['down_s'] - t0:.2f}, graph 1 "
        f"nohead lc rgb '#{'cc3333' if c['member'] == 0 else '3366cc'}' dt 3\n" for c in marks)
    r = result[m][k + "_cuts"]
    panels.append(f"""unset arrow
{arrows}set title '{m}, {k} cuts: largest gap of a writer {r['max_gap_ms']} ms, {r['retrans']} retransmissions'
plot '{out}/{m}-{k}-latency.dat' using 1:2 with lines lw 1 lc rgb '#444444' title 'max per 100 ms', \\
     '' using 1:3 with lines lw 1 lc rgb '#33aa33' title 'p99 per 100 ms'
""")
gp = f"""set terminal pngcairo size 1200,{300 * max(len(cols), 1)} font ',10'
set output '{out}/failover.png'
set multiplot layout {max(len(cols), 1)},1 title 'latency through member cuts at {rate:,} msg/s (dotted: a cut; red member 0, blue member 1)'
set grid
set logscale y
set yrange [0.01:*]
set xlabel 'seconds into the stream'
set ylabel 'latency, ms'
set key top right
{''.join(panels)}unset multiplot
"""
try:
    subprocess.run(["gnuplot"], input=gp, text=True, check=True, capture_output=True)
    say()
    say(f"Results: {out}/ (failover.json, report.txt, failover.png, the runs' JSON and timelines)")
except (OSError, subprocess.CalledProcessError) as e:
    say(f"no plot: gnuplot failed ({e}); install gnuplot-nox (./scripts/gw deps)")
open(f"{out}/report.txt", "w").write("\n".join(lines) + "\n")
