#!/usr/bin/env bash
# bench_calls.sh: casts and calls, batched against unbatched (one message
# per frame: proto.batch_max=1) in the same invocation, between the two
# namespaces (bond mode 4, MTU 9000), 225-byte payloads, everything
# verified (every reply carries its own call's payload, casts arrive once
# and in order):
#   - call at low load: one caller, one call at a time: round trip p50/p99;
#   - call under load: PROCS processes x CALLERS callers, one call in flight
#     each (the reference's call test): calls/s and round trip p50/p99;
#   - cast: 4 processes x 250 writers: casts/s.
# Prints a table with the ratios; writes results/calls-<time>.{json,csv}.
#
#   scripts/bench_calls.sh [--calls PER_CALLER] [--callers N] [--procs N]
#                          [--casts PER_WRITER] [--reps N]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
calls=200 callers=1000 procs=2 casts=2000 reps=3 lowcalls=5000
while (($#)); do
    case $1 in
    --calls) calls=$2; shift 2 ;;
    --callers) callers=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --casts) casts=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) gw_die "bench_calls.sh: unknown option $1 (--calls, --callers, --procs, --casts, --reps)" ;;
    esac
done
mkdir -p "$ROOT/results"
out=$ROOT/results/calls-$(date +%Y%m%d-%H%M%S)
gw_workdir bench-calls
gw_ns_up >/dev/null
A=/run/gridwire/alpha.sock B=/run/gridwire/beta.sock
runs=()

one_mode() { # MODE REP: gateways up, the three workloads, gateways down
    local mode=$1 rep=$2 sets=() p pids=()
    [[ $mode == off ]] && sets=(--set proto.batch_max=1)
    gw_gateways_up "$work" "${sets[@]}"
    ip netns exec gwb "$BIN/gw-perf" echo -s "$B" -e echo >"$work/echo.json" 2>"$work/echo.err" &
    local echo_pid=$!
    gw_cleanup_push _gw_stop_pid "$echo_pid"
    gw_wait_ready "$work/echo.err" ready "$echo_pid" "the echo service"

    gw_log "calls: $mode, low load (1 caller x $lowcalls calls)"
    ip netns exec gwa "$BIN/gw-perf" call -s "$A" -n 2 -e echo -w 1 -m "$lowcalls" >"$work/low.json"

    gw_log "calls: $mode, under load ($procs x $callers callers x $calls calls)"
    for ((p = 0; p < procs; p++)); do
        ip netns exec gwa "$BIN/gw-perf" call -s "$A" -n 2 -e echo -w "$callers" -m "$calls" \
            --stats-period 2 >"$work/load$p.json" &
        pids+=($!)
    done
    wait "${pids[@]}"

    gw_log "casts: $mode, 4 x 250 writers x $casts casts"
    gw_rx_start "$work" castrx -e castsink --service --expect $((1000 * casts)) --writers-max 1000
    pids=()
    for ((p = 0; p < 4; p++)); do
        ip netns exec gwa "$BIN/gw-perf" tx --cast -s "$A" -n 2 -e castsink -w 250 -m "$casts" \
            --id-base $((p * 250)) >"$work/cast$p.json" &
        pids+=($!)
    done
    wait "${pids[@]}"
    wait "$GW_PID_RX" || true
    kill -TERM "$echo_pid" 2>/dev/null || true
    gw_gateways_down
    runs+=("$(python3 - "$work" "$mode" "$rep" "$procs" <<'PY'
import json, sys
work, mode, rep, procs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
j = lambda n: json.load(open(f"{work}/{n}.json"))
low, loads, rx = j("low"), [j(f"load{p}") for p in range(procs)], j("castrx")
ok = (low["ok"] == low["calls"] and all(l["ok"] == l["calls"] and not l["wrong"] for l in loads)
      and rx["delivered"] > 0 and not rx["duplicates"] and not rx["order_violations"])
print(json.dumps({
    "batch": mode, "rep": rep, "verified": ok,
    "low_calls_per_s": low["calls_per_s"], "low_p50_us": low["lat_us"]["p50"],
    "low_p99_us": low["lat_us"]["p99"],
    "load_calls_per_s": sum(l["calls_per_s"] for l in loads),
    "load_p50_us": max(l["lat_us"]["p50"] for l in loads),
    "load_p99_us": max(l["lat_us"]["p99"] for l in loads),
    "casts_per_s": rx["msgs_per_s"],
}))
PY
)")
}

for r in $(seq "$reps"); do
    for mode in on off; do one_mode "$mode" "$r"; done
done
printf '[%s]\n' "$(IFS=,; echo "${runs[*]}")" >"$out.json"
python3 - "$out" <<'PY'
import csv, json, statistics, sys
out = sys.argv[1]
runs = json.load(open(out + ".json"))
keys = ["low_calls_per_s", "low_p50_us", "low_p99_us", "load_calls_per_s", "load_p50_us",
        "load_p99_us", "casts_per_s"]
with open(out + ".csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["batch", "rep", "verified"] + keys)
    for r in runs:
        w.writerow([r["batch"], r["rep"], r["verified"]] + [r[k] for k in keys])
med = lambda m, k: statistics.median(r[k] for r in runs if r["batch"] == m)
names = {"low_calls_per_s": "calls/s, 1 caller", "low_p50_us": "  round trip p50 us",
         "low_p99_us": "  round trip p99 us", "load_calls_per_s": "calls/s under load",
         "load_p50_us": "  round trip p50 us", "load_p99_us": "  round trip p99 us",
         "casts_per_s": "casts/s"}
print(f"{'':<24}{'batched':>12}{'unbatched':>12}{'ratio':>8}")
for k in keys:
    a, b = med("on", k), med("off", k)
    print(f"{names[k]:<24}{a:>12,.0f}{b:>12,.0f}{(a / b if b else 0):>8.2f}")
bad = [r for r in runs if not r["verified"]]
print(f"every run verified: {'yes' if not bad else 'NO'}; {out}.csv")
sys.exit(1 if bad else 0)
PY
