#!/usr/bin/env bash
# bench_urgent.sh: does an urgent message wait behind bulk? One run on the
# cable, every message of both classes verified (order, count, class):
#   1. urgent alone: one writer of urgent messages at Poisson times
#      (URGENT_RATE a second, 4 s);
#   2. bulk alone at the unpaced maximum (PROCS x WRITERS writers);
#   3. both: 2 again with the urgent writer sending through the middle 70 %
#      of it, and beside it, on the urgent writer's CPU, a probe that
#      sleeps to the same kind of Poisson times and records how late it
#      wakes (the floor: the CPU scheduler's share, which a gateway host
#      with isolated lcores does not have);
#   4. urgent with bulk paced at half of 2's rate in bursts (writers
#      sending 20 at a time, then pausing), the probe beside it again;
#   5. 3 again with 1 % of the frames beta receives lost ([fault]).
# 2 and 3 run ROUNDS times, interleaved: the bulk rates compared are the
# medians (one run of each moves by 20 % here); the latencies are the
# first round's.
# Latency is the sender's clock to the receiver's (one machine). It ends
# with urgent.json, a table (report.txt) and a plot (urgent.png) in
# results/bench-urgent-<time>/.
#
#   scripts/bench_urgent.sh [--procs P] [--writers W] [--bulk-msgs M]
#                           [--urgent-rate N] [--size S] [--rounds R]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
procs=4 writers=250 bulk_msgs=10000 urgent_rate=5000 size=225 rounds=5
while (($#)); do
    case $1 in
    --procs) procs=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --bulk-msgs) bulk_msgs=$2; shift 2 ;;
    --urgent-rate) urgent_rate=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) gw_die "bench_urgent.sh: unknown option $1 (see the header of scripts/bench_urgent.sh)" ;;
    esac
done
[[ -x $BIN/gridwired && -x $BIN/gw-perf ]] || gw_die "not built: run ./scripts/gw build"
out=$ROOT/results/bench-urgent-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
export GW_LINK=cable
gw_ns_up >/dev/null
gw_workdir urgent
URGENT_CPU=0 # the urgent writer's, and the probe's
bulk_total=$((procs * writers * bulk_msgs))

# scenario NAME URGENT_MSGS BULK(0|1) [BULK_RATE_PER_PROC]: one verified
# run; results in $out/NAME-*.json.
scenario() {
    local name=$1 umsgs=$2 bulk=$3 prate=${4:-0} pids=() rxpids=() p lead=0
    gw_log "urgent bench: $name"
    if ((bulk)); then
        gw_rx_start "$work" "$name-rx-bulk" rx -e sink --expect "$bulk_total" \
            --writers-max $((procs * writers)) --idle-timeout 30
        rxpids+=("$GW_PID_RX")
    fi
    if ((umsgs)); then
        gw_rx_start "$work" "$name-rx-urgent" rx -e alarm --urgent --expect "$umsgs" \
            --writers-max 1 --idle-timeout 30
        rxpids+=("$GW_PID_RX")
    fi
    if ((bulk)); then
        local pace=()
        ((prate)) && pace=(--rate "$prate" --burst 20)
        for p in $(seq 0 $((procs - 1))); do
            ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e sink \
                -w "$writers" -m "$bulk_msgs" -z "$size" --id-base $((p * writers)) "${pace[@]}" \
                >"$work/$name-tx$p.json" 2>"$work/$name-tx$p.err" &
            pids+=($!)
        done
        lead=$5
    fi
    if ((umsgs)); then
        sleep "$lead"
        ip netns exec gwa taskset -c "$URGENT_CPU" "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock \
            -n 2 -e alarm -w 1 -m "$umsgs" -z "$size" --rate "$urgent_rate" --poisson --urgent \
            >"$work/$name-tx-urgent.json" 2>"$work/$name-tx-urgent.err" &
        pids+=($!)
        if [[ $name == both || $name == half ]]; then
            taskset -c "$URGENT_CPU" "$BIN/gw-perf" probe --rate "$urgent_rate" --poisson \
                --duration $(((umsgs + urgent_rate - 1) / urgent_rate)) >"$work/$name-floor.json" &
            pids+=($!)
        fi
    fi
    local fail=0
    for p in "${pids[@]}" "${rxpids[@]}"; do wait "$p" || fail=1; done
    ((fail)) && { cat "$work"/"$name"-*.err >&2; gw_die "urgent bench: $name failed verification"; }
    cp "$work/$name"-*.json "$out/"
}

secs() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['elapsed_s'])" "$1"; }
rate_of() { python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['msgs_per_s']))" "$1"; }
umsgs_for() { python3 -c "import sys; print(max(1000, round($urgent_rate * 0.7 * float(sys.argv[1]))))" "$1"; }
frac() { python3 -c "import sys; print(round(float(sys.argv[1]) * 0.15, 2))" "$1"; }

gw_gateways_up "$work"
scenario urgent_alone $((urgent_rate * 4)) 0
scenario bulk_alone 0 1 0 0
t2=$(secs "$out/bulk_alone-rx-bulk.json")
max_rate=$(rate_of "$out/bulk_alone-rx-bulk.json")
scenario both "$(umsgs_for "$t2")" 1 0 "$(frac "$t2")"
for r in $(seq 2 "$rounds"); do
    scenario "bulk_alone$r" 0 1 0 0
    scenario "both$r" "$(umsgs_for "$t2")" 1 0 "$(frac "$t2")"
done
half=$((max_rate / 2 / procs))
scenario half "$(umsgs_for "$(python3 -c "print(2 * $t2)")")" 1 "$half" "$(frac "$(python3 -c "print(2 * $t2)")")"
gw_gateways_down
cp "$work/alpha.json" "$out/gw-alpha.json"
cp "$work/beta.json" "$out/gw-beta.json"
GW_ARGS_B="--set fault.drop_ppm=10000" gw_gateways_up "$work"
scenario loss1 "$(umsgs_for "$t2")" 1 0 "$(frac "$t2")"
gw_gateways_down
cp "$work/alpha.json" "$out/gw-alpha-loss1.json"

python3 "$ROOT/scripts/bench_urgent_report.py" "$out"
gw_log "urgent bench: results in $out"
