#!/usr/bin/env bash
# bench.sh: the data-path benchmark. In one invocation, the same workload
# (225-byte messages, 4 sender processes x 250 writers, one verifying
# receiver, bonded veth pair at MTU 9000) with batching on and with
# batching off (one message per frame: the unbatched baseline). Prints a
# table and the ratio, and writes results/bench-<time>.json.
#
#   scripts/bench.sh [--msgs PER_WRITER] [--base-msgs PER_WRITER] [--reps N]
#                    [--compare OLD.csv [--tolerance PERCENT]]
#
# Also writes results/bench-<time>.csv (one row per run). --compare flags
# every mode whose median msg/s fell more than PERCENT (default 10) below
# the same mode's median in OLD.csv, and then exits 1.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
msgs=10000 base_msgs=1000 reps=3 compare="" tolerance=10
while (($#)); do
    case $1 in
    --compare) compare=$2; shift 2 ;;
    --tolerance) tolerance=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --base-msgs) base_msgs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) gw_die "bench.sh: unknown option $1 (--msgs, --base-msgs, --reps, --compare, --tolerance)" ;;
    esac
done
[[ -z $compare || -r $compare ]] || gw_die "bench.sh: cannot read $compare (a CSV an earlier bench wrote)"
mkdir -p "$ROOT/results"
out=$ROOT/results/bench-$(date +%Y%m%d-%H%M%S).json
runs=()
for r in $(seq "$reps"); do
    for mode in on off; do
        n=$msgs
        [[ $mode == off ]] && n=$base_msgs
        gw_log "bench: run $r/$reps, batching $mode, $((4 * 250 * n)) messages"
        js=$("$ROOT/scripts/pair.sh" --procs 4 --writers 250 --msgs "$n" --batch "$mode" 2>/dev/null | tail -1)
        runs+=("{\"batch\":\"$mode\",\"rep\":$r,\"result\":$js}")
    done
done
printf '[%s]\n' "$(IFS=,; echo "${runs[*]}")" >"$out"
python3 - "$out" "$compare" "$tolerance" <<'PY'
import csv, json, statistics, sys
runs = json.load(open(sys.argv[1]))
compare, tolerance = sys.argv[2], float(sys.argv[3])
fields = ["batch", "rep", "msgs_per_s", "msgs_per_frame", "gw_cpu_s_per_M", "retrans", "sent"]
with open(sys.argv[1][:-5] + ".csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(fields)
    for r in runs:
        w.writerow([r["batch"], r["rep"]] + [r["result"][k] for k in fields[2:]])
def med(mode, key):
    return statistics.median(r["result"][key] for r in runs if r["batch"] == mode)
ok = all(r["result"]["delivered"] == r["result"]["sent"] and not r["result"]["duplicates"]
         and not r["result"]["order_violations"] for r in runs)
print(f"{'mode':<10}{'msg/s':>12}{'msgs/frame':>12}{'gw CPU s/M':>12}{'retrans':>9}")
for mode, name in (("on", "batched"), ("off", "unbatched")):
    print(f"{name:<10}{med(mode, 'msgs_per_s'):>12,.0f}{med(mode, 'msgs_per_frame'):>12.2f}"
          f"{med(mode, 'gw_cpu_s_per_M'):>12.3f}{med(mode, 'retrans'):>9.0f}")
ratio = med("on", "msgs_per_s") / med("off", "msgs_per_s")
print(f"batched/unbatched: {ratio:.1f}x msg/s, "
      f"{med('off', 'gw_cpu_s_per_M') / med('on', 'gw_cpu_s_per_M'):.1f}x less gateway CPU per message; "
      f"medians of {len(runs) // 2} runs; all verified: {'yes' if ok else 'NO'}")
print(f"results: {sys.argv[1]} and {sys.argv[1][:-5]}.csv")
if compare:
    old = list(csv.DictReader(open(compare)))
    slower = False
    for mode, name in (("on", "batched"), ("off", "unbatched")):
        before = [float(r["msgs_per_s"]) for r in old if r["batch"] == mode]
        if not before:
            continue
        was, now = statistics.median(before), med(mode, "msgs_per_s")
        change = (now - was) / was * 100
        flag = change < -tolerance
        slower |= flag
        print(f"{name}: {was:,.0f} -> {now:,.0f} msg/s ({change:+.1f} %)"
              + (f"  SLOWER than the {tolerance:g} % tolerance" if flag else ""))
    sys.exit(1 if slower else 0)
PY
