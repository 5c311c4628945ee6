#!/usr/bin/env python3
"""bench_fanout_report.py DIR WRITERS MSGS "S...": fanout.json, report.txt and
fanout.png from the runs scripts/bench_fanout.sh left in DIR."""
import glob
import json
import os
import subprocess
import sys

out, writers, msgs, subs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
published = writers * msgs


def load(path):
    return json.load(open(path))


def run(name):
    """One run: the publisher, its receivers, alpha's bytes out."""
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
        "publisher_cpu_us_per_msg": round(tx["cpu_s"] * 1e6 / published, 3),
        "verified": all(r["duplicates"] == 0 and r["order_violations"] == 0 and
                        r["delivered"] == published for r in hold),
        "latest": rx.get("latest"),
        "beta_conflated": wire["beta_conflated"],
        "beta_evicted": wire["beta_evicted"],
    }


res = {"writers": writers, "msgs_per_writer": msgs, "published": published, "by_subscribers": {}}
lines = [f"{'S':>3} {'way':6} {'published/s':>12} {'deliveries/s':>13} {'wire B/msg':>11} "
         f"{'pub CPU us/msg':>15}"]
for s in subs:
    t, b = run(f"topic-{s}"), run(f"sends-{s}")
    res["by_subscribers"][s] = {"topic": t, "sends": b,
                                "published_ratio": round(t["published_msgs_per_s"] /
                                                         b["published_msgs_per_s"], 2),
                                "wire_ratio": round(t["wire_bytes_per_msg"] /
                                                    max(b["wire_bytes_per_msg"], 1e-9), 2)}
    for way, r in (("topic", t), ("sends", b)):
        lines.append(f"{s:>3} {way:6} {r['published_msgs_per_s']:>12,} {r['deliveries_per_s']:>13,} "
                     f"{r['wire_bytes_per_msg']:>11} {r['publisher_cpu_us_per_msg']:>15}")
base, slow = run("topic-4"), run("topic-4-latest")
lt = slow["latest"]
res["latest"] = {
    "others_deliveries_per_s": slow["deliveries_per_s"],
    "others_deliveries_per_s_without": base["deliveries_per_s"],
    "others_ratio": round(slow["deliveries_per_s"] / base["deliveries_per_s"], 2),
    "latest_delivered": lt["delivered"], "latest_skipped": lt["skipped"],
    "latest_writers_finished": lt["finished"], "latest_order_violations": lt["order_violations"],
    "latest_duplicates": lt["duplicates"],
    "beta_conflated": slow["beta_conflated"] - base["beta_conflated"],
    "beta_evicted": slow["beta_evicted"] - base["beta_evicted"],
}
res["verified"] = all(v[w]["verified"] for v in res["by_subscribers"].values()
                      for w in ("topic", "sends")) and base["verified"] and slow["verified"] and \
    lt["finished"] == writers and not lt["order_violations"] and not lt["duplicates"]
json.dump(res, open(os.path.join(out, "fanout.json"), "w"), indent=1)
L = res["latest"]
lines += ["", f"a latest subscriber reading 10 msg/s beside 4 hold ones: it got {L['latest_delivered']:,} "
              f"of {published:,} (skipped {L['latest_skipped']:,}, conflated at beta "
              f"{L['beta_conflated']:,}, evicted {L['beta_evicted']:,}), every writer's last: "
              f"{L['latest_writers_finished']}/{writers}, out of order {L['latest_order_violations']}; "
              f"the others' deliveries/s {L['others_deliveries_per_s']:,} against "
              f"{L['others_deliveries_per_s_without']:,} without it ({L['others_ratio']}x)",
          f"every delivery verified: {res['verified']}"]
report = "\n".join(lines) + "\n"
open(os.path.join(out, "report.txt"), "w").write(report)
sys.stdout.write(report)

with open(os.path.join(out, "fanout.dat"), "w") as f:
    for s in subs:
        v = res["by_subscribers"][s]
        f.write(f"{s} {v['topic']['published_msgs_per_s']} {v['sends']['published_msgs_per_s']} "
                f"{v['topic']['wire_bytes_per_msg']} {v['sends']['wire_bytes_per_msg']}\n")
gp = f"""set terminal pngcairo size 1200,480 font ',10' noenhanced
set output '{out}/fanout.png'
set multiplot layout 1,2 title 'one signal to S subscribers (half on the far gateway), one run on the cable'
set grid
set logscale x 2
set xlabel 'subscribers S'
set key top right
set ylabel 'published msg/s'
set title 'publisher rate'
plot '{out}/fanout.dat' using 1:2 with linespoints title 'topic', '' using 1:3 with linespoints title 'one send per subscriber'
set ylabel 'bytes on the wire per published message'
set title 'wire cost'
plot '{out}/fanout.dat' using 1:4 with linespoints title 'topic', '' using 1:5 with linespoints title 'one send per subscriber'
unset multiplot
"""
try:
    subprocess.run(["gnuplot"], input=gp, text=True, check=True, capture_output=True)
except (OSError, subprocess.CalledProcessError) as e:
    print(f"no plot: gnuplot failed ({e}); install gnuplot-nox (./scripts/gw deps)")
