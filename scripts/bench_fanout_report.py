#!/usr/bin/env python3
"""bench_fanout_report.py DIR WRITERS MSGS "S..." "PLACES..." REPS LATEST_MSGS: fanout.json, report.txt
and fanout.png from the runs scripts/bench_fanout.sh left in DIR."""
import glob
import json
import os
import subprocess
import sys

out, writers, msgs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
subs, places, reps = sys.argv[4].split(), sys.argv[5].split(), int(sys.argv[6])
latest_msgs = int(sys.argv[7])


def load(path):
    return json.load(open(path))


def run(name, published=writers * msgs):
    """One run: the publisher, its receivers, the publishing gateway's
    bytes, records and CPU."""
    tx = load(os.path.join(out, f"{name}-tx.json"))
    rx = {os.path.basename(p)[len(name) + 4:-5]: load(p)
          for p in glob.glob(os.path.join(out, f"{name}-rx-*.json"))}
    wire = load(os.path.join(out, f"{name}-wire.json"))
    hold = [r for k, r in rx.items() if k != "latest"]
    longest = max(r["elapsed_s"] for r in hold)
    return {
        "published_msgs_per_s": round(published / tx["elapsed_s"]),
        "deliveries_per_s": round(sum(r["delivered"] for r in hold) / longest),
        "deliveries": sum(r["delivered"] for r in hold),
        "wire_bytes_per_msg": round(wire["tx_bytes"] / published, 1),
        "wire_records_per_msg": round(wire["records"] / published, 2),
        "gateway_cpu_us_per_msg": round(wire["gateway_cpu_s"] * 1e6 / published, 3),
        "publisher_cpu_us_per_msg": round(tx["cpu_s"] * 1e6 / published, 3),
        "verified": all(r["duplicates"] == 0 and r["order_violations"] == 0 and
                        r["delivered"] == published for r in hold),
        "latest": rx.get("latest"),
        "beta_conflated": wire["beta_conflated"],
        "beta_evicted": wire["beta_evicted"],
    }


where = {"cable": "alpha publishes; subscribers on beta (half, rounded up) and alpha",
         "mesh": "n1 publishes on a mesh of 3; subscribers on n2 (half, rounded up) and n3"}
published = writers * msgs
res = {"writers": writers, "msgs_per_writer": msgs, "published": published}
lines = []
verified = True
for at in places:
    lines += [f"{at}: {where[at]}",
              f"{'S':>3} {'way':6} {'published/s':>12} {'deliveries/s':>13} {'wire B/msg':>11} "
              f"{'records/msg':>12} {'gw CPU us/msg':>14} {'pub CPU us/msg':>15}"]
    by = res.setdefault(at, {"by_subscribers": {}})["by_subscribers"]
    for s in subs:
        t, b = run(f"{at}-topic-{s}"), run(f"{at}-sends-{s}")
        verified &= t["verified"] and b["verified"]
        by[s] = {"topic": t, "sends": b,
                 "published_ratio": round(t["published_msgs_per_s"] / b["published_msgs_per_s"], 2),
                 "deliveries_ratio": round(t["deliveries_per_s"] / b["deliveries_per_s"], 2),
                 "wire_ratio": round(t["wire_bytes_per_msg"] / max(b["wire_bytes_per_msg"], 1e-9), 2)}
        for way, r in (("topic", t), ("sends", b)):
            lines.append(f"{s:>3} {way:6} {r['published_msgs_per_s']:>12,} {r['deliveries_per_s']:>13,} "
                         f"{r['wire_bytes_per_msg']:>11} {r['wire_records_per_msg']:>12} "
                         f"{r['gateway_cpu_us_per_msg']:>14} {r['publisher_cpu_us_per_msg']:>15}")
    if "8" in by and "1" in by:
        # The targets, at 8 subscribers on 2 nodes.
        t8, one = by["8"]["topic"], by["1"]["sends"]
        res[at]["targets_8"] = {
            "wire_records_per_msg": t8["wire_records_per_msg"],
            "gateway_cpu_vs_one_send": round(t8["gateway_cpu_us_per_msg"] /
                                             max(one["gateway_cpu_us_per_msg"], 1e-9), 2),
            "deliveries_vs_sends": by["8"]["deliveries_ratio"],
        }
        g = res[at]["targets_8"]
        lines.append(f"S=8: {g['wire_records_per_msg']} records per published message on the wire; "
                     f"gateway CPU per message {g['gateway_cpu_vs_one_send']}x one send's (S=1); "
                     f"deliveries/s {g['deliveries_vs_sends']}x one send per subscriber")
    lines.append("")
if "cable" in places:
    lp = writers * latest_msgs
    bases = [run(f"cable-topic-4-r{r}", lp) for r in range(1, reps + 1)]
    slows = [run(f"cable-topic-4-latest-r{r}", lp) for r in range(1, reps + 1)]
    verified &= all(r["verified"] for r in bases + slows)
    # The median run with the latest subscriber, and the median without.
    k = sorted(range(reps), key=lambda i: slows[i]["deliveries_per_s"])[reps // 2]
    slow, base = slows[k], sorted(bases, key=lambda r: r["deliveries_per_s"])[reps // 2]
    lt = slow["latest"]
    verified &= all(r["latest"]["finished"] == writers and not r["latest"]["order_violations"] and
                    not r["latest"]["duplicates"] for r in slows)
    res["latest"] = {
        "runs": reps, "published": lp,
        "others_deliveries_per_s_each": [r["deliveries_per_s"] for r in slows],
        "others_deliveries_per_s_without_each": [r["deliveries_per_s"] for r in bases],
        "others_deliveries_per_s": slow["deliveries_per_s"],
        "others_deliveries_per_s_without": base["deliveries_per_s"],
        "others_ratio": round(slow["deliveries_per_s"] / base["deliveries_per_s"], 2),
        "latest_delivered": lt["delivered"], "latest_skipped": lt["skipped"],
        "latest_writers_finished": lt["finished"], "latest_order_violations": lt["order_violations"],
        "latest_duplicates": lt["duplicates"],
        # beta's counters since the run before it (its rep's run without)
        "beta_conflated": slow["beta_conflated"] - bases[k]["beta_conflated"],
        "beta_evicted": slow["beta_evicted"] - bases[k]["beta_evicted"],
    }
    L = res["latest"]
    lines.append(f"cable: a latest subscriber reading 10 msg/s beside 4 hold ones: it got "
                 f"{L['latest_delivered']:,} of {lp:,} (skipped {L['latest_skipped']:,}, conflated "
                 f"at beta {L['beta_conflated']:,}, evicted {L['beta_evicted']:,}), every writer's last: "
                 f"{L['latest_writers_finished']}/{writers}, out of order {L['latest_order_violations']}; "
                 f"the others' deliveries/s {L['others_deliveries_per_s']:,} against "
                 f"{L['others_deliveries_per_s_without']:,} without it ({L['others_ratio']}x; medians "
                 f"of {reps} runs each, alternated)")
res["verified"] = verified
json.dump(res, open(os.path.join(out, "fanout.json"), "w"), indent=1)
lines.append(f"every delivery verified: {verified}")
report = "\n".join(lines) + "\n"
open(os.path.join(out, "report.txt"), "w").write(report)
sys.stdout.write(report)

plots = []
for i, at in enumerate(places):
    dat = os.path.join(out, f"fanout-{at}.dat")
    with open(dat, "w") as f:
        for s in subs:
            v = res[at]["by_subscribers"][s]
            f.write(f"{s} {v['topic']['published_msgs_per_s']} {v['sends']['published_msgs_per_s']} "
                    f"{v['topic']['gateway_cpu_us_per_msg']} {v['sends']['gateway_cpu_us_per_msg']}\n")
    plots.append(f"""set title '{at}: publisher rate'
set ylabel 'published msg/s'
plot '{dat}' using 1:2 with linespoints title 'topic', '' using 1:3 with linespoints title 'one send per subscriber'
set title '{at}: publishing gateway CPU'
set ylabel 'us per published message'
plot '{dat}' using 1:4 with linespoints title 'topic', '' using 1:5 with linespoints title 'one send per subscriber'
""")
gp = f"""set terminal pngcairo size 1200,{440 * len(places)} font ',10' noenhanced
set output '{out}/fanout.png'
set multiplot layout {len(places)},2 title 'one signal to S subscribers on 2 nodes, one run'
set grid
set logscale x 2
set xlabel 'subscribers S'
set key top right
{"".join(plots)}unset multiplot
"""
try:
    subprocess.run(["gnuplot"], input=gp, text=True, check=True, capture_output=True)
except (OSError, subprocess.CalledProcessError) as e:
    print(f"no plot: gnuplot failed ({e}); install gnuplot-nox (./scripts/gw deps)")
