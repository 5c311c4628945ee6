#!/usr/bin/env python3
"""bench_crypto_report.py DIR: crypto.json, report.txt and crypto.png from
the runs scripts/bench_crypto.sh left in DIR."""
import glob
import json
import os
import statistics
import subprocess
import sys

out = sys.argv[1]


def load(path):
    return json.load(open(path))


def ok(js):
    return (js["delivered"] == js["sent"] and not js["duplicates"] and not js["order_violations"]
            and not js["sender_failed"])


modes = ("none", "authenticate", "encrypt")
runs = {m: [load(p) for p in sorted(glob.glob(f"{out}/max-{m}-*.json"))] for m in modes}
rate = {m: statistics.median(r["msgs_per_s"] for r in runs[m]) for m in modes}
cpu = {m: statistics.median(r["gw_cpu_s_per_M"] for r in runs[m]) for m in modes}
roles = {}
for line in open(f"{out}/roles.jsonl"):
    js = json.loads(line)
    roles.setdefault(js["role"], []).append(js["msgs_per_s"])
lcore = {k: round(statistics.median(v)) for k, v in roles.items()}
rx = load(f"{out}/rotation-rx.json")
tx = load(f"{out}/rotation-tx.json")
ledger = load(f"{out}/rotation-ledger.json")
ka = load(f"{out}/rotation-keys-alpha.json")
kb = load(f"{out}/rotation-keys-beta.json")
gwb = load(f"{out}/rotation-gw-beta.json")
result = {
    "none_msgs_per_s": round(rate["none"]),
    "authenticate_msgs_per_s": round(rate["authenticate"]),
    "encrypt_msgs_per_s": round(rate["encrypt"]),
    "authenticate_ratio": round(rate["authenticate"] / rate["none"], 2),
    "encrypt_ratio": round(rate["encrypt"] / rate["none"], 2),
    "gw_cpu_s_per_M": {m: cpu[m] for m in modes},
    "rounds": {m: [r["msgs_per_s"] for r in runs[m]] for m in modes},
    "every_max_run_verified": all(ok(r) for m in modes for r in runs[m]),
    "seal_msgs_per_s_lcore": lcore["auth_seal"],
    "open_msgs_per_s_lcore": lcore["auth_open"],
    "encrypt_seal_msgs_per_s_lcore": lcore["encrypt_seal"],
    "encrypt_open_msgs_per_s_lcore": lcore["encrypt_open"],
    "rotation_run": {
        "sent": ledger["sent"],
        "delivered": rx["delivered"],
        "duplicates": rx["duplicates"],
        "order_violations": rx["order_violations"],
        "lost_in_silence": ledger["missing"],
        "rotations": min(ka["loads"], kb["loads"]) - 1,
        "rolls": ka["rolls"],
        "refused_at_beta": {k: gwb[k] for k in ("auth_forged", "auth_replayed",
                                                 "auth_unknown_key", "auth_wrong_mode")},
        "msgs_per_s": rx["msgs_per_s"],
    },
}
targets = [
    ("authenticate >= 0.9x no [auth]", result["authenticate_ratio"] >= 0.9,
     f"{result['authenticate_ratio']:.2f}x"),
    ("encrypt >= 0.9x no [auth]", result["encrypt_ratio"] >= 0.9, f"{result['encrypt_ratio']:.2f}x"),
    ("seal >= 15 M msg/s on one lcore (encrypt)", result["encrypt_seal_msgs_per_s_lcore"] >= 15e6,
     f"{result['encrypt_seal_msgs_per_s_lcore'] / 1e6:.1f} M"),
    ("open >= 15 M msg/s on one lcore (encrypt)", result["encrypt_open_msgs_per_s_lcore"] >= 15e6,
     f"{result['encrypt_open_msgs_per_s_lcore'] / 1e6:.1f} M"),
    ("rotation run: everything, in order",
     rx["delivered"] == ledger["sent"] and not rx["order_violations"] and not rx["duplicates"],
     f"{rx['delivered']:,} of {ledger['sent']:,}, {result['rotation_run']['rotations']} rotations"),
]
result["targets"] = {name: {"met": met, "value": v} for name, met, v in targets}
json.dump(result, open(f"{out}/crypto.json", "w"), indent=1)

lines = ["| [auth] | msg/s (median) | ratio | gateway CPU s per M | rounds |",
         "| --- | ---: | ---: | ---: | --- |"]
for m in modes:
    lines.append(f"| {m} | {rate[m]:,.0f} | {rate[m] / rate['none']:.2f}x | {cpu[m]} | "
                 + ", ".join(f"{r['msgs_per_s'] / 1e6:.2f} M" for r in runs[m]) + " |")
lines += ["", "| one lcore, 225-byte messages | msg/s |", "| --- | ---: |"]
for k in ("auth_seal", "auth_open", "encrypt_seal", "encrypt_open"):
    lines.append(f"| {k} | {lcore[k]:,} |")
rr = result["rotation_run"]
lines += ["", f"rotation run: {rr['delivered']:,} of {rr['sent']:,} delivered, "
          f"{rr['duplicates']} twice, {rr['order_violations']} out of order, "
          f"{rr['lost_in_silence']} lost in silence; {rr['rotations']} new secrets, "
          f"{rr['rolls']} rolls; beta refused {rr['refused_at_beta']}", "",
          "| target | met | value |", "| --- | --- | --- |"]
lines += [f"| {n} | {'yes' if met else 'NO'} | {v} |" for n, met, v in targets]
report = "\n".join(lines) + "\n"
open(f"{out}/report.txt", "w").write(report)
print(report, end="")

with open(f"{out}/crypto.dat", "w") as f:
    for m in modes:
        f.write(f'"{m}" {rate[m] / 1e6:.3f}\n')
subprocess.run(["gnuplot", "-e", f"""
set terminal pngcairo size 640,400; set output '{out}/crypto.png';
set title 'unpaced maximum on the cable by [auth] mode (median of rounds)';
set ylabel 'M msg/s (225 bytes)'; set yrange [0:*]; set offsets 0, 0, graph 0.15, 0; set style fill solid 0.6; set boxwidth 0.5;
unset key; plot '{out}/crypto.dat' using 0:2:xtic(1) with boxes, '' using 0:2:(sprintf('%.2f',$2)) with labels offset 0,1
"""], check=False)
