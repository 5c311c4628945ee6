#!/usr/bin/env bash
# bench_roles.sh: what one lcore of each role does alone, with no port and
# no kernel (app/gw-roles runs gridwired's own role code fed from memory):
# a worker packing client channels into sealed frames, a receiver checking,
# unbatching and delivering frames into client rings with acks (records for
# 64 clients in turn, and receiver_runs: each frame's records for one client,
# as a worker packs a client's burst; the lcore count below takes the
# first), CRC32C per
# frame, and [auth] sealing and opening per frame (modes authenticate and
# encrypt); for 225-byte and 64-byte messages. RUNS runs each (after a warm-up), pinned to CPU 1; the table
# gives the median and the spread (min..max), and how many lcores of each
# role a bond of two 10 GbE links at line rate needs.
#
#   scripts/bench_roles.sh [--runs N] [--sizes S,S]
#
# Results in results/bench-roles-<time>/: roles.jsonl, roles.csv, report.txt.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
runs=7 sizes=225,64
while (($#)); do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) gw_die "bench_roles.sh: unknown option $1 (see the header of scripts/bench_roles.sh)" ;;
    esac
done
root=$(gw_root)
out=$root/results/bench-roles-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
for s in ${sizes//,/ }; do
    gw_log "roles: $s-byte messages, $runs runs"
    taskset -c 1 "$root/build/app/gw-roles" --runs "$runs" --size "$s" 2>"$out/gw-roles.err" |
        tee -a "$out/roles.jsonl" | while read -r line; do
        python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("  %-10s %8.2f M msg/s %8.0f k frames/s" % (j["role"], j["msgs_per_s"]/1e6, j["frames_per_s"]/1e3))' "$line"
    done
done
python3 - "$out" <<'PY'
import json, statistics, sys
from collections import defaultdict
out = sys.argv[1]
runs = defaultdict(list)
for line in open(f"{out}/roles.jsonl"):
    j = json.loads(line)
    runs[(j["role"], j["size"])].append(j)
# Line rate of a 2 x 10 GbE bond in messages/s: 9000-byte frames (each 38
# bytes more on the wire: Ethernet header, FCS, preamble, gap), packed as
# gridwire packs them (the worker's own frames say how many per frame).
def line_rate(size):
    w = runs.get(("worker", size))
    per_frame = statistics.median(r["msgs"] / r["frames"] for r in w) if w else 1
    return 2 * 10e9 / 8 / (9000 + 38) * per_frame
rows, lines = [], []
lines.append(f"{'role':10} {'size':>5} {'median M msg/s':>15} {'spread':>17} {'k frames/s':>11} {'runs':>5}")
for (role, size), rs in sorted(runs.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
    v = [r["msgs_per_s"] for r in rs]
    f = statistics.median(r["frames_per_s"] for r in rs)
    med = statistics.median(v)
    rows.append((role, size, med, min(v), max(v), f, len(v)))
    lines.append(f"{role:10} {size:5} {med/1e6:15.2f} {min(v)/1e6:8.2f}..{max(v)/1e6:<8.2f} {f/1e3:11.0f} {len(v):5}")
with open(f"{out}/roles.csv", "w") as c:
    c.write("role,size,median_msgs_per_s,min,max,median_frames_per_s,runs\n")
    for r in rows:
        c.write(",".join(str(round(x)) if isinstance(x, float) else str(x) for x in r) + "\n")
med = {(r[0], r[1]): r[2] for r in rows}
lines.append("")
lines.append("lcores for a 2 x 10 GbE bond at line rate (one direction):")
for size in sorted({r[1] for r in rows}, reverse=True):
    rate = line_rate(size)
    def need(*roles):
        if not all((x, size) in med for x in roles):
            return "?"
        per_lcore = 1 / sum(1 / med[(x, size)] for x in roles)  # roles on one lcore in turn
        return f"{-(-rate // per_lcore):.0f} ({per_lcore/1e6:.1f} M/s each)"
    lines.append(f"  {size}-byte messages, {rate/1e6:.1f} M msg/s: workers {need('worker')}, "
                 f"receivers {need('receiver')}; [auth] authenticate: workers "
                 f"{need('worker', 'auth_seal')}, receivers {need('receiver', 'auth_open')}; "
                 f"encrypt: workers {need('worker', 'encrypt_seal')}, "
                 f"receivers {need('receiver', 'encrypt_open')}")
report = "\n".join(lines)
open(f"{out}/report.txt", "w").write(report + "\n")
print(report)
PY
gw_log "results in $out"
