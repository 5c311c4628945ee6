#!/usr/bin/env python3
"""bench_urgent_report.py DIR: urgent.json, report.txt and urgent.png from
the runs scripts/bench_urgent.sh left in DIR."""
import json
import os
import re
import subprocess
import sys

out = sys.argv[1]


def load(name):
    path = os.path.join(out, name)
    return json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else None


def lat(rx):
    l = rx["lat_us"]
    return {"p50_us": l["p50"], "p99_us": l["p99"], "p999_us": l["p999"], "max_us": l["max"]}


def sent(name):
    n = 0
    for f in os.listdir(out):
        if f.startswith(name + "-tx") and f.endswith(".json"):
            d = load(f)
            n += d["sent"] if d else 0
    return n


rows = {  # key in urgent.json: (scenario, receiver)
    "urgent_alone": ("urgent_alone", "urgent"),
    "bulk_alone": ("bulk_alone", "bulk"),
    "urgent_under_bulk": ("both", "urgent"),
    "bulk_under_load": ("both", "bulk"),
    "urgent_under_half_bulk": ("half", "urgent"),
    "bulk_under_half_load": ("half", "bulk"),
    "urgent_under_bulk_loss1": ("loss1", "urgent"),
    "bulk_under_loss1": ("loss1", "bulk"),
}
res, hist, lost, delivered = {}, {}, 0, 0
for key, (scen, cls) in rows.items():
    rx = load(f"{scen}-rx-{cls}.json")
    res[key] = lat(rx)
    hist[key] = rx["lat_hist"]
    delivered += rx["delivered"]
    if rx["duplicates"] or rx["order_violations"] or rx.get("wrong_class"):
        sys.exit(f"bench_urgent_report: {key}: duplicates, order violations or wrong class")
scens = sorted({f.split("-rx-")[0] for f in os.listdir(out) if "-rx-" in f})
for scen in scens:
    lost += sent(scen)
    for cls in ("bulk", "urgent"):
        rx = load(f"{scen}-rx-{cls}.json")
        if rx and scen not in {s for s, _ in rows.values()}:
            delivered += rx["delivered"]  # the other rounds'
lost -= delivered
floor = load("both-floor.json")
res["floor"] = lat(floor)
hist["floor"] = floor["lat_hist"]
res["floor_half"] = lat(load("half-floor.json"))


def rates(name):
    """The bulk receiver's rate in every round of a scenario (name, name2, ...)."""
    round_of = re.compile(re.escape(name) + r"[0-9]*-rx-bulk\.json$")
    return sorted(load(f)["msgs_per_s"] for f in os.listdir(out) if round_of.match(f))


alone, both = rates("bulk_alone"), rates("both")
res["bulk_alone_msgs_per_s"] = alone[len(alone) // 2]
res["bulk_with_urgent_msgs_per_s"] = both[len(both) // 2]
res["bulk_alone_rounds"], res["bulk_with_urgent_rounds"] = alone, both
res["lost"] = lost
alpha = load("gw-alpha.json") or {}
res["urgent_frames"] = alpha.get("urgent_frames", 0)
res["urgent_msgs_out"] = alpha.get("urgent_msgs_out", 0)
loss_alpha = load("gw-alpha-loss1.json") or {}
res["loss1_retrans"] = loss_alpha.get("retrans", 0)
res["loss1_urgent_retrans"] = loss_alpha.get("urgent_retrans", 0)

u, b = res["urgent_under_bulk"], res["bulk_under_load"]
uh, bh = res["urgent_under_half_bulk"], res["bulk_under_half_load"]
checks = [
    ("urgent p99 <= 1/5 of bulk p99 at the maximum", u["p99_us"] * 5 <= b["p99_us"],
     f"{u['p99_us']} us vs {b['p99_us']} us ({b['p99_us'] / max(u['p99_us'], 1):.1f}x)"),
    ("urgent p99 <= urgent alone + 2 x floor p99",
     u["p99_us"] <= res["urgent_alone"]["p99_us"] + 2 * res["floor"]["p99_us"],
     f"{u['p99_us']} us vs {res['urgent_alone']['p99_us']} + 2 x {res['floor']['p99_us']} us"),
    ("urgent p99 <= 1/10 of bulk p99 at half", uh["p99_us"] * 10 <= bh["p99_us"],
     f"{uh['p99_us']} us vs {bh['p99_us']} us ({bh['p99_us'] / max(uh['p99_us'], 1):.1f}x)"),
    ("bulk with urgent >= 0.95 x bulk alone",
     res["bulk_with_urgent_msgs_per_s"] >= 0.95 * res["bulk_alone_msgs_per_s"],
     f"{res['bulk_with_urgent_msgs_per_s'] / res['bulk_alone_msgs_per_s']:.2f}x"),
    ("nothing lost", lost == 0, f"{lost} lost"),
]
res["targets"] = {name: ok for name, ok, _ in checks}
json.dump(res, open(os.path.join(out, "urgent.json"), "w"), indent=1)

lines = [f"{'':28} {'p50 us':>9} {'p99 us':>9} {'p99.9 us':>9} {'max us':>9}"]
for key in list(rows) + ["floor", "floor_half"]:
    r = res[key]
    lines.append(f"{key:28} {r['p50_us']:>9} {r['p99_us']:>9} {r['p999_us']:>9} {r['max_us']:>9}")
lines.append("")
lines.append(f"bulk alone {res['bulk_alone_msgs_per_s']:,.0f} msg/s, with urgent "
             f"{res['bulk_with_urgent_msgs_per_s']:,.0f} msg/s; lost {lost}")
for name, ok, how in checks:
    lines.append(f"{'met ' if ok else 'MISSED'} {name}: {how}")
report = "\n".join(lines) + "\n"
open(os.path.join(out, "report.txt"), "w").write(report)
sys.stdout.write(report)

# The plot: percentiles by case (log scale), and the histogram per class.
keys = list(rows) + ["floor", "floor_half"]
with open(os.path.join(out, "lat.dat"), "w") as f:
    for i, k in enumerate(keys):
        r = res[k]
        f.write(f"{i} {k} {max(r['p50_us'], 1)} {max(r['p99_us'], 1)} {max(r['p999_us'], 1)} "
                f"{max(r['max_us'], 1)}\n")
edges = ["le_100us", "le_1ms", "le_10ms", "le_100ms", "le_1s", "gt_1s"]
shown = ["urgent_under_bulk", "bulk_under_load", "urgent_under_half_bulk", "bulk_under_half_load",
         "floor"]
with open(os.path.join(out, "hist.dat"), "w") as f:
    f.write("edge " + " ".join(shown) + "\n")
    for e in edges:
        f.write(e + " " + " ".join(f"{100 * hist[k][e] / (sum(hist[k].values()) or 1):.2f}"
                                   for k in shown) + "\n")
gp = f"""set terminal pngcairo size 1300,520 font ',10' noenhanced
set output '{out}/urgent.png'
set multiplot layout 1,2 title 'urgent messages beside bulk, one run on the cable'
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'latency, us (log)'
set xtics rotate by 35 right font ',8'
set key top left
set title 'latency by case'
plot '{out}/lat.dat' using 3:xtic(2) title 'p50', '' using 4 title 'p99', '' using 5 title 'p99.9', \\
     '' using 6 title 'max'
unset logscale y
set ylabel '% of messages'
set title 'latency histogram per class'
plot for [c=2:{len(shown) + 1}] '{out}/hist.dat' using c:xtic(1) title columnheader(c)
unset multiplot
"""
try:
    subprocess.run(["gnuplot"], input=gp, text=True, check=True, capture_output=True)
except (OSError, subprocess.CalledProcessError) as e:
    print(f"no plot: gnuplot failed ({e}); install gnuplot-nox (./scripts/gw deps)")
