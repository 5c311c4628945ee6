#!/usr/bin/env python3
"""bench_failover_report.py OUT CUTS RATE: the table, failover.json and the
plot of scripts/bench_failover.sh's run in OUT (per mode: MODE-cuts-run.json
and MODE-cuts.json, MODE-timeline.csv, MODE-lossy-run.json,
MODE-max-run.json; pair.sh's JSON lines and the cut times)."""
import csv
import json
import os
import subprocess
import sys

out, cuts, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
MODES = [m for m in ("mode4", "parallel") if os.path.exists(f"{out}/{m}-cuts-run.json")]
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


def timeline(mode):
    with open(f"{out}/{mode}-timeline.csv") as f:
        return [{k: int(v) for k, v in r.items()} for r in csv.DictReader(f)]


result = {"cuts": cuts, "pace_msgs_per_s": rate}
per_cut = {}
for mode in MODES:
    run = load(f"{out}/{mode}-cuts-run.json") or {}
    cut_times = json.load(open(f"{out}/{mode}-cuts.json"))
    bins = timeline(mode)
    # Around each cut: the 100 ms bins from just before it went down until
    # half a second after it was back in service.
    worst = []
    for c in cut_times:
        lo, hi = (c["down_s"] - 0.1) * 1000, (c["in_service_s"] + 0.5) * 1000
        near = [b for b in bins if lo <= b["t_ms"] <= hi]
        worst.append({"member": c["member"],
                      "max_ms": max((b["max_us"] for b in near), default=0) / 1000,
                      "p99_ms": max((b["p99_us"] for b in near), default=0) / 1000})
    per_cut[mode] = worst
    lossy = load(f"{out}/{mode}-lossy-run.json") or {}
    mx = load(f"{out}/{mode}-max-run.json") or {}
    result[mode] = {
        "max_gap_ms": run.get("max_gap_ms"),
        "max_latency_ms": run.get("lat_us", {}).get("max", 0) / 1000,
        "p99_ms_around_cuts": max((w["p99_ms"] for w in worst), default=None),
        "max_ms_around_cuts": max((w["max_ms"] for w in worst), default=None),
        "retrans": run.get("retrans"),
        "lost": run["sent"] - run["delivered"] if run else None,
        "delivered_in_order": bool(run) and run["delivered"] == run["sent"] and
        not run["duplicates"] and not run["order_violations"],
        "max_msgs_per_s": mx.get("msgs_per_s"),
        "p50_us": run.get("lat_us", {}).get("p50"),
    }
    if mode == "parallel":
        result[mode]["redundant_discarded"] = run.get("redundant_at_beta")
        result[mode]["tx_copies_dropped"] = run.get("tx_copies_dropped")
    result.setdefault("lossy_member", {})[mode] = {
        "retrans": lossy.get("retrans"),
        "p99_ms": lossy.get("lat_us", {}).get("p99", 0) / 1000,
        "max_ms": lossy.get("lat_us", {}).get("max", 0) / 1000,
        "delivered_in_order": bool(lossy) and lossy["delivered"] == lossy["sent"] and
        not lossy["duplicates"] and not lossy["order_violations"],
    }

say(f"Failover on the cable: {cuts} member cuts in a paced stream of {rate:,} msg/s, every message verified")
say()
say(f"{'':28}" + "".join(f"{m:>14}" for m in MODES))
rows = [("largest gap of a writer, ms", "max_gap_ms"), ("max latency, ms", "max_latency_ms"),
        ("p99 near a cut (100 ms), ms", "p99_ms_around_cuts"),
        ("max near a cut (100 ms), ms", "max_ms_around_cuts"),
        ("retransmissions", "retrans"), ("messages lost", "lost"),
        ("all once, in order", "delivered_in_order"), ("latency p50, us", "p50_us"),
        ("copies discarded", "redundant_discarded"), ("unpaced max, msg/s", "max_msgs_per_s")]
for name, key in rows:
    say(f"{name:28}" + "".join(f"{str(result[m].get(key, '-')):>14}" for m in MODES))
say()
say("One member losing 20 % (the other clean):")
for name, key in (("retransmissions", "retrans"), ("latency p99, ms", "p99_ms"),
                  ("latency max, ms", "max_ms"), ("all once, in order", "delivered_in_order")):
    say(f"{name:28}" + "".join(f"{str(result['lossy_member'][m].get(key)):>14}" for m in MODES))
say()
say("Per cut, max latency in the 100 ms bins around it (ms):")
for mode in MODES:
    say(f"  {mode:9} " + " ".join(f"{w['max_ms']:.0f}" for w in per_cut[mode]))

if set(MODES) == {"mode4", "parallel"}:
    p, m4 = result["parallel"], result["mode4"]
    targets = {
        "gap_tenth_of_mode4": bool(p["max_gap_ms"] is not None and m4["max_gap_ms"] and
                                   p["max_gap_ms"] <= m4["max_gap_ms"] / 10),
        "parallel_nothing_lost": p["lost"] == 0 and p["delivered_in_order"],
        "parallel_no_retrans_on_cuts": p["retrans"] == 0,
        "parallel_no_retrans_lossy": result["lossy_member"]["parallel"]["retrans"] == 0,
        "max_ratio": round(p["max_msgs_per_s"] / m4["max_msgs_per_s"], 2)
        if p.get("max_msgs_per_s") and m4.get("max_msgs_per_s") else None,
    }
    targets["max_ratio_at_least_0_7"] = bool(targets["max_ratio"] and targets["max_ratio"] >= 0.7)
    result["targets"] = targets
    say()
    say("Targets: " + ", ".join(f"{k} {v}" for k, v in targets.items()))
json.dump(result, open(f"{out}/failover.json", "w"), indent=1)

# Latency through the cuts, one panel per mode, on the run's own clock.
panels = []
for mode in MODES:
    bins = timeline(mode)
    t0 = bins[0]["t_ms"] if bins else 0
    with open(f"{out}/{mode}-latency.dat", "w") as f:
        for b in bins:
            f.write(f"{(b['t_ms'] - t0) / 1000:.1f} {max(b['max_us'], 1) / 1000:.3f} "
                    f"{max(b['p99_us'], 1) / 1000:.3f}\n")
    arrows = "".join(
        f"set arrow from {c['down_s'] - t0 / 1000:.2f}, graph 0 to {c['down_s'] - t0 / 1000:.2f}, graph 1 "
        f"nohead lc rgb '#{'cc3333' if c['member'] == 0 else '3366cc'}' dt 3\n"
        for c in json.load(open(f"{out}/{mode}-cuts.json")))
    panels.append(f"""unset arrow
{arrows}set title '{mode}: max gap of a writer {result[mode]['max_gap_ms']} ms, {result[mode]['retrans']} retransmissions'
plot '{out}/{mode}-latency.dat' using 1:2 with lines lw 1 lc rgb '#444444' title 'max per 100 ms', \\
     '' using 1:3 with lines lw 1 lc rgb '#33aa33' title 'p99 per 100 ms'
""")
gp = f"""set terminal pngcairo size 1200,{350 * max(len(MODES), 1)} font ',10'
set output '{out}/failover.png'
set multiplot layout {max(len(MODES), 1)},1 title 'latency through {cuts} member cuts at {rate:,} msg/s (dotted: a cut; red member 0, blue member 1)'
set grid
set logscale y
set xlabel 'seconds into the run'
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
