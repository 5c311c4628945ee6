#!/usr/bin/env bash
# bench.sh: the reference benchmark (the ecall workload), scaled to this
# machine, between the two namespaces, 225-byte messages, every message
# verified (once, in order). The gateways are joined by the kernel-bypass
# cable (two vhost-user <-> virtio-user links, bond mode 4, MTU 9000; the
# sweep's link is --link) and, for comparison, by the two veths through
# af_packet (bond mode 4, MTU 9000):
#
#  1. the writer-population sweep: W writers over 4 sender processes, each
#     sending MSGS messages with a PAUSE between them (100 ms as in the
#     reference), so the intended rate is W / PAUSE; batched and unbatched
#     (proto.batch_max=1) at every point. Per point: intended and delivered
#     msg/s, elapsed, messages and bytes per frame, gateway and client CPU
#     seconds per million messages, peak gateway memory, latency p50/p99/
#     max and a histogram in decades;
#  2. the unpaced maximum (4 x 250 writers, as fast as they go), REPS times
#     each, interleaved so that all see the same machine: batched on the
#     cable, batched on the veths, unbatched on the cable, and batched on
#     the cable with the gateways on hugepages (if ./scripts/gw hugepages
#     can reserve them; they are given back after);
#  3. references measured here and now: each link's own capacity by
#     dpdk-testpmd (9000-byte frames, txonly -> rxonly, converted to
#     225-byte messages at gridwire's packing), and what a user could write
#     on the kernel instead between the same namespaces: TCP with 64 KB
#     application buffering, and ZeroMQ PUSH/PULL (app/gw-ref).
#
# Every run models two one-core hosts: host A's processes (alpha and its
# senders) on CPU 0, host B's (beta and its receiver) on CPU 1, as the TCP
# and ZeroMQ references are placed; only the link crosses between them.
#
# Everything goes to results/bench-<time>/: sweep.csv, max.csv, refs.json,
# report.txt (the tables, also printed) and sweep.png (gnuplot).
#
#   scripts/bench.sh [--points W,W,...] [--msgs M] [--pause-ms P] [--reps N]
#                    [--max-msgs M] [--link cable|veth] [--no-refs] [--quick]
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
msgs=20 pause_ms=100 reps=3 max_msgs=10000 refs=1 compare="" tolerance=10 link=cable
while (($#)); do
    case $1 in
    --points) points=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --pause-ms) pause_ms=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --max-msgs) max_msgs=$2; shift 2 ;;
    --no-refs) refs=0; shift ;;
    --link) link=$2; shift 2 ;;
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
export GW_PIN_A=0 GW_PIN_B=1 # scripts/pair.sh: the senders on CPU 0, the receiver on CPU 1
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
        if "$ROOT/scripts/pair.sh" --keep-ns --link "$link" --procs 4 --writers $((w / 4)) --msgs "$msgs" \
            --rate "$rate" --batch "$mode" >"$out/runs/sweep-$w-$mode.json" 2>"$out/runs/sweep-$w-$mode.err"; then
            python3 "$ROOT/scripts/bench_report.py" --line "$out/runs/sweep-$w-$mode.json" \
                $((rate * 4)) >&2
        else
            echo "FAILED (see $out/runs/sweep-$w-$mode.err)" >&2
        fi
    done
done

# --- 2. the unpaced maximum -------------------------------------------------
variants=(batched batched_veth unbatched)
huge=0
gw_cleanup_push "$ROOT/scripts/hugepages.sh" release # also after a reservation half made
if "$ROOT/scripts/hugepages.sh" reserve 2048 2>"$out/runs/hugepages.err"; then
    variants+=(batched_huge)
    huge=1
else
    gw_log "bench: no hugepages ($(tail -1 "$out/runs/hugepages.err")): that row is left out"
fi
for r in $(seq "$reps"); do
    for v in "${variants[@]}"; do
        args=(--link cable) m=$max_msgs
        case $v in
        batched_veth) args=(--link veth) ;;
        unbatched) args+=(--batch off) m=$((max_msgs / 10)) ;;
        esac
        gw_log "bench: maximum, run $r/$reps, $v, $((1000 * m)) messages"
        GW_HUGE=$([[ $v == batched_huge ]] && echo 1 || echo 0) \
            "$ROOT/scripts/pair.sh" --keep-ns --procs 4 --writers 250 --msgs "$m" "${args[@]}" \
            >"$out/runs/max-$r-$v.json" 2>"$out/runs/max-$r-$v.err" ||
            gw_log "bench: that run failed (see $out/runs/max-$r-$v.err)"
    done
done
if ((huge)); then
    "$ROOT/scripts/hugepages.sh" release 2>/dev/null || gw_log "bench: hugepages not released yet (again on exit)"
fi

# --- 3. references ----------------------------------------------------------
echo '{}' >"$out/refs.json"
if ((refs)); then
    "$ROOT/scripts/refs.sh" "$out" >"$out/refs.json" 2>"$out/runs/refs.err" ||
        gw_log "bench: references incomplete (see $out/runs/refs.err)"
fi

python3 "$ROOT/scripts/bench_report.py" "$out" "$msgs" "$pause_ms" "$link" "$compare" "$tolerance"
