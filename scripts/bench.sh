#!/usr/bin/env bash
# bench.sh: the reference benchmark (the ecall workload), scaled to this
# machine, between the two namespaces (bond mode 4 over two veths, MTU
# 9000), 225-byte messages, every message verified (once, in order):
#
#  1. the writer-population sweep: W writers over 4 sender processes, each
#     sending MSGS messages with a PAUSE between them (100 ms as in the
#     reference), so the intended rate is W / PAUSE; batched and unbatched
#     (proto.batch_max=1) at every point. Per point: intended and delivered
#     msg/s, elapsed, messages and bytes per frame, gateway and client CPU
#     seconds per million messages, peak gateway memory, latency p50/p99/
#     max and a histogram in decades;
#  2. the unpaced maximum (4 x 250 writers, as fast as they go), batched
#     and unbatched, REPS times;
#  3. references measured here and now: the bonded link's capacity by
#     dpdk-testpmd (9000-byte frames, txonly -> rxonly, converted to
#     225-byte messages at gridwire's packing), and what a user could write
#     on the kernel instead between the same namespaces: TCP with 64 KB
#     application buffering, and ZeroMQ PUSH/PULL (app/gw-ref).
#
# Everything goes to results/bench-<time>/: sweep.csv, max.csv, refs.json,
# report.txt (the tables, also printed) and sweep.png (gnuplot).
#
#   scripts/bench.sh [--points W,W,...] [--msgs M] [--pause-ms P] [--reps N]
#                    [--max-msgs M] [--no-refs] [--quick]
#                    [--compare OLD_DIR_OR_CSV [--tolerance PERCENT]]
#
# --compare flags every sweep point (mode and writers) and every maximum
# whose delivered msg/s fell more than PERCENT (default 10) below OLD's,
# and exits 1. --quick: three points, one rep, no references (a smoke run).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
points=2000,10000,20000,50000,100000,200000,300000,400000
msgs=20 pause_ms=100 reps=3 max_msgs=10000 refs=1 compare="" tolerance=10
while (($#)); do
    case $1 in
    --points) points=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --pause-ms) pause_ms=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --max-msgs) max_msgs=$2; shift 2 ;;
    --no-refs) refs=0; shift ;;
    --quick) points=2000,20000,100000 reps=1 max_msgs=4000 refs=0; shift ;;
    --compare) compare=$2; shift 2 ;;
    --tolerance) tolerance=$2; shift 2 ;;
    *) gw_die "bench.sh: unknown option $1 (see the header of scripts/bench.sh)" ;;
    esac
done
[[ -z $compare || -r $compare ]] ||
    gw_die "bench.sh: cannot read $compare (a results/bench-* folder or its sweep.csv)"
IFS=, read -r -a W <<<"$points"
for w in "${W[@]}"; do
    [[ $w =~ ^[0-9]+$ ]] && ((w >= 4 && w % 4 == 0)) ||
        gw_die "bench.sh: --points takes writer counts divisible by 4, got '$w'"
done
out=$ROOT/results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out/runs"
gw_ns_up >/dev/null

# --- 1. the sweep -----------------------------------------------------------
n=$((${#W[@]} * 2)) k=0
for w in "${W[@]}"; do
    rate=$((w * 1000 / pause_ms / 4)) # per sender process
    for mode in on off; do
        k=$((k + 1))
        name=$([[ $mode == on ]] && echo batched || echo unbatched)
        printf '%s [%2d/%d] sweep %-9s %7d writers, %9d msg/s intended ... ' \
            "$(date +%T)" "$k" "$n" "$name" "$w" $((rate * 4)) >&2
        if "$ROOT/scripts/pair.sh" --keep-ns --procs 4 --writers $((w / 4)) --msgs "$msgs" \
            --rate "$rate" --batch "$mode" >"$out/runs/sweep-$w-$mode.json" 2>"$out/runs/sweep-$w-$mode.err"; then
            python3 "$ROOT/scripts/bench_report.py" --line "$out/runs/sweep-$w-$mode.json" \
                $((rate * 4)) >&2
        else
            echo "FAILED (see $out/runs/sweep-$w-$mode.err)" >&2
        fi
    done
done

# --- 2. the unpaced maximum -------------------------------------------------
for r in $(seq "$reps"); do
    for mode in on off; do
        m=$max_msgs
        [[ $mode == off ]] && m=$((max_msgs / 10))
        gw_log "bench: maximum, run $r/$reps, batching $mode, $((1000 * m)) messages"
        "$ROOT/scripts/pair.sh" --keep-ns --procs 4 --writers 250 --msgs "$m" --batch "$mode" \
            >"$out/runs/max-$r-$mode.json" 2>"$out/runs/max-$r-$mode.err" ||
            gw_log "bench: that run failed (see $out/runs/max-$r-$mode.err)"
    done
done

# --- 3. references ----------------------------------------------------------
echo '{}' >"$out/refs.json"
if ((refs)); then
    "$ROOT/scripts/refs.sh" "$out" >"$out/refs.json" 2>"$out/runs/refs.err" ||
        gw_log "bench: references incomplete (see $out/runs/refs.err)"
fi

python3 "$ROOT/scripts/bench_report.py" "$out" "$msgs" "$pause_ms" "$compare" "$tolerance"
