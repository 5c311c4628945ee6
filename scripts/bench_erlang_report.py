#!/usr/bin/env python3
"""The Erlang experiment's report (scripts/bench_erlang.sh): the article's
three tables (rate per writer count, native against gridwire), the
resource bill at the top of the sweep, the targets of issue 12 checked,
and a gnuplot PNG of delivered rate and sender memory."""
import csv, subprocess, sys

out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/erlang.csv")))
for r in rows:
    for k in r:
        if k != "op":
            r[k] = float(r[k])
by = {(r["op"], int(r["writers"])): r for r in rows}
writers = sorted({int(r["writers"]) for r in rows})
pairs = [("send", "send_gw", "native `!`", "`gridwire:send`"),
         ("cast", "cast_gw", "`erpc:cast`", "`gridwire:cast`"),
         ("call", "call_gw", "`erpc:call`", "`gridwire:call`")]

def fmt(v):
    return f"{v:,.0f}"

lines = []
for nat, gw, nname, gname in pairs:
    if not any((nat, w) in by and (gw, w) in by for w in writers):
        continue
    lines.append(f"\n{nat}: msg/s delivered (intended), elapsed s, ratio\n")
    lines.append(f"| writers | intended | {nname} | {gname} | ratio | elapsed native / gridwire |")
    lines.append("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for w in writers:
        a, b = by.get((nat, w)), by.get((gw, w))
        if not a or not b:
            continue
        lines.append(f"| {w:,} | {fmt(a['intended'])} | {fmt(a['rate'])} | {fmt(b['rate'])} | "
                     f"{b['rate'] / a['rate']:.2f} | {a['elapsed']:.1f} / {b['elapsed']:.1f} |")
top = writers[-1]
lines.append(f"\nThe resource bill at {top:,} writers (the sending VM):\n")
lines.append("| operation | peak memory MB native / gridwire (above the writers) | scheduler busy native / gridwire "
             "| scheduler s per M ops native / gridwire | ratio | max run queue native / gridwire |")
lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
for nat, gw, nname, gname in pairs:
    a, b = by.get((nat, top)), by.get((gw, top))
    if not a or not b:
        continue
    above = (f" ({a['backlog_mb']:.0f} / {b['backlog_mb']:.0f})" if "backlog_mb" in a else "")
    lines.append(f"| {nat} | {a['peak_mem_mb']:.0f} / {b['peak_mem_mb']:.0f}{above} | "
                 f"{a['busy'] * 100:.0f} % / {b['busy'] * 100:.0f} % | "
                 f"{a['sched_s_per_m']:.1f} / {b['sched_s_per_m']:.1f} | "
                 f"{a['sched_s_per_m'] / max(b['sched_s_per_m'], 1e-9):.1f}x | "
                 f"{a['max_runq']:.0f} / {b['max_runq']:.0f} |")
if "cpu_vm_a" in rows[0]:
    lines.append(f"\nWhere the two cores go at {top:,} writers: CPU seconds from the writers' release "
                 "until the last message arrived (or 3 s after it, when some never did)\n")
    lines.append("| operation | elapsed s | node A's VM | node B's VM | gateway A | gateway B |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for nat, gw, _, _ in pairs:
        for op in (nat, gw):
            r = by.get((op, top))
            if r:
                lines.append(f"| {op} | {r['elapsed']:.2f} | {r['cpu_vm_a']:.2f} | {r['cpu_vm_b']:.2f} | "
                             f"{r['cpu_gw_a']:.2f} | {r['cpu_gw_b']:.2f} |")
lost = [(r["op"], int(r["writers"]), int(r["msgs"] - r["delivered"]), int(r["errors"]),
         int(r.get("rejected", 0)))
        for r in rows if r["delivered"] < r["msgs"] or r["errors"]]
lines.append("\nNot delivered: " +
             (", ".join(f"{o} at {w:,}: {m:,} ({e:,} errors, {j:,} REJECTs to the writers)"
                        for o, w, m, e, j in lost) or "none"))

# Where the messages went, by the gateways' own counters (whole run).
import json, os
for g in ("alpha", "beta"):
    f = f"{out}/{g}.json"
    if os.path.exists(f):
        j = json.load(open(f))
        c = j.get("counters", j)
        keys = ("msgs_out", "msgs_in", "msgs_local", "retrans", "rejects_sent", "rejects_lost",
                "reject_dest_full", "reject_unknown_ep", "reject_node_down", "abandoned_frames")
        lines.append(f"{g}'s gateway: " + ", ".join(f"{k} {c[k]:,}" for k in keys if k in c))

# Issue 12's targets.
def ratio(nat, gw, w):
    a, b = by.get((nat, w)), by.get((gw, w))
    return b["rate"] / a["rate"] if a and b else None
checks = []
for nat, gw in (("send", "send_gw"), ("cast", "cast_gw")):
    r = ratio(nat, gw, top)
    if r is not None:
        checks.append((f"{gw} at the top of the sweep >= 5x {nat}", r >= 5, f"{r:.2f}x"))
for nat, gw, _, _ in pairs:
    pace = [(w, by[(gw, w)]["rate"] / by[(gw, w)]["intended"], by[(nat, w)]["rate"] / by[(nat, w)]["intended"])
            for w in writers if (gw, w) in by and (nat, w) in by]
    bad = [f"{w}: {g * 100:.0f} %" for w, g, n in pace if n >= 0.95 and g < 0.95]
    if pace:
        checks.append((f"{gw} keeps 95 % of the pace wherever {nat} does", not bad,
                       ", ".join(bad) or "yes"))
# Flat: what the sending VM holds above its writers (the backlog) does not
# grow with them; the writers themselves cost the same on both paths.
if "backlog_mb" in rows[0]:
    mem = [by[("send_gw", w)]["backlog_mb"] for w in writers if ("send_gw", w) in by]
    nat = [by[("send", w)]["backlog_mb"] for w in writers if ("send", w) in by]
    if len(mem) > 1:
        checks.append(("gridwire:send's sender backlog memory flat across the sweep (top <= 100 MB)",
                       max(mem) <= 100, f"{mem[0]:.0f} .. {max(mem):.0f} MB; native's "
                       f"{nat[0]:.0f} .. {max(nat):.0f} MB" if nat else ""))
a, b = by.get(("send", top)), by.get(("send_gw", top))
if a and b:
    r = b["sched_s_per_m"] / max(a["sched_s_per_m"], 1e-9)
    checks.append(("scheduler s per M sends <= 1/5 of native's", r <= 0.2, f"{r:.2f} of native's"))
lines.append("\nTargets (issue 12):")
for what, ok, how in checks:
    lines.append(f"  {'met' if ok else 'NOT met'}: {what} ({how})")
print("\n".join(lines))

# The plot: delivered rate against writers, and the sender's peak memory.
dat = f"{out}/erlang.dat"
with open(dat, "w") as f:
    for w in writers:
        f.write(f"{w} " + " ".join(f"{by[(o, w)]['rate'] if (o, w) in by else 'NaN'}"
                                    for o in ("send", "send_gw", "cast", "cast_gw", "call", "call_gw")))
        f.write(f" {w * 10} " + " ".join(f"{by[(o, w)].get(k, 'NaN') if (o, w) in by else 'NaN'}"
                                         for k in ("peak_mem_mb", "backlog_mb")
                                         for o in ("send", "send_gw")) + "\n")
script = f"""
set terminal pngcairo size 1100,480 font ',10'
set output '{out}/erlang.png'
set multiplot layout 1,2 title 'The article workload on this machine: N writers, 225-byte maps every 100 ms'
set xlabel 'writers'; set ylabel 'delivered msg/s (intended: off the top)'; set key top left; set grid
set yrange [0:*<400000]
plot '{dat}' u 1:8 w l dt 2 lc rgb 'gray' t 'intended', \\
     '' u 1:2 w lp lc rgb '#c0392b' t 'native !', '' u 1:3 w lp lc rgb '#1f77b4' t 'gridwire:send', \\
     '' u 1:4 w lp dt 3 lc rgb '#c0392b' t 'erpc:cast', '' u 1:5 w lp dt 3 lc rgb '#1f77b4' t 'gridwire:cast', \\
     '' u 1:6 w lp dt 4 lc rgb '#e67e22' t 'erpc:call', '' u 1:7 w lp dt 4 lc rgb '#2ca02c' t 'gridwire:call'
set ylabel 'sending VM memory, MB'; set yrange [0:*]
plot '{dat}' u 1:9 w l dt 2 lc rgb '#c0392b' t 'native !, peak', \
     '' u 1:10 w l dt 2 lc rgb '#1f77b4' t 'gridwire:send, peak', \
     '' u 1:11 w lp lc rgb '#c0392b' t 'native !, above the writers (backlog)', \
     '' u 1:12 w lp lc rgb '#1f77b4' t 'gridwire:send, above the writers (backlog)'
unset multiplot
"""
subprocess.run(["gnuplot"], input=script, text=True, check=False)
