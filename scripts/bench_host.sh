#!/usr/bin/env bash
# bench_host.sh: gridwire between the two emulated gateway hosts
# (scripts/host.sh) against dpdk-testpmd on the same emulated NICs, in one
# run. testpmd: txonly on A's two NICs (frames of gridwire's size), rxonly
# on B, B's Rx-pps read from testpmd's own stats; counted as messages at
# gridwire's packing (its messages per frame in the same run). gridwire:
# the unpaced maximum A -> B, PROCS senders of WRITERS writers each, the
# verifying receiver on B; the share of the lanes' frames each of B's two
# receivers takes. Absolute figures under full emulation (TCG) say
# nothing about a real host; the ratio is the figure.
#
#   scripts/bench_host.sh [--msgs M] [--procs P] [--writers W] [--seconds S]
#                         [--rss on|off]
#
# --rss off gives the NICs no RSS (the tap's flow hash spreads the lanes
# over the queues instead): QEMU 7.2's RSS is done in software, and a queue
# whose frames it moves to a full queue stalls for good (doc/operations.md, "On a
# gateway host"). gridwire keeps at most 2 x 256 frames in flight to a
# host, under the 1,024 entries of each RX ring, so it runs with RSS on.
# Results in results/bench-host-<time>/: host.json, report.txt.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
H=$ROOT/scripts/host.sh
STATE=${GW_HOST_STATE:-/run/gridwire-host}
msgs=100000 procs=2 writers=8 seconds=20 rss=on
while (($#)); do
    case $1 in
    --msgs) msgs=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rss) rss=$2; shift 2 ;;
    *) gw_die "bench_host.sh: unknown option $1 (see the header of scripts/bench_host.sh)" ;;
    esac
done
out=$ROOT/results/bench-host-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
total=$((procs * writers * msgs))
gw_cleanup_push "$H" down
gw_log "bench host: booting A and B (RSS $rss)"
GW_HOST_RSS=$rss "$H" up
for g in A B; do
    "$H" run "$g" "app/gridwire-setup/gridwire-setup -c config/host-${g,,}.ini" >"$out/setup-$g.txt" ||
        { cat "$out/setup-$g.txt"; gw_die "gridwire-setup failed on $g"; }
done

# gridwire first: its packing sets testpmd's frame size and msg/frame.
gw_log "bench host: gridwire, $procs x $writers writers x $msgs messages of 225 bytes, unpaced"
"$H" run B "setsid build/app/gridwired -c config/host-b.ini --stats-file /gw/gw.json >/gw/gw.log 2>&1 </dev/null &"
"$H" run A "setsid build/app/gridwired -c config/host-a.ini --stats-file /gw/gw.json >/gw/gw.log 2>&1 </dev/null &"
for _ in $(seq 120); do
    grep -q "peer 2 (host-b) is up" "$STATE/A/share/gw.log" 2>/dev/null && break
    sleep 1
done
grep -q "peer 2 (host-b) is up" "$STATE/A/share/gw.log" || gw_die "the gateways did not find each other"
"$H" run B "setsid build/app/gw-perf rx -s /run/gridwire/host-b.sock -e sink --expect $total \
    --writers-max $((procs * writers)) --idle-timeout 60 >/gw/rx.json 2>/gw/rx.err </dev/null &
    sleep 2; grep -q 'rx ready' /gw/rx.err"
"$H" run A "for p in \$(seq 0 $((procs - 1))); do
        build/app/gw-perf tx -s /run/gridwire/host-a.sock -n 2 -e sink -w $writers -m $msgs -z 225 \
            --id-base \$((p * $writers)) >/gw/tx.\$p.json 2>/gw/tx.\$p.err &
    done; wait"
for _ in $(seq 120); do [[ -s $STATE/B/share/rx.json ]] && break; sleep 1; done
"$H" run A "build/app/gwctl -n host-a raw /gridwire/stats" >"$out/a-stats.json"
for l in 3 4; do "$H" run B "build/app/gwctl -n host-b raw /gridwire/lcore,$l" >"$out/b-lcore$l.json"; done
cp "$STATE/B/share/rx.json" "$out/rx.json"
"$H" run A "pkill -INT -x gridwired"
"$H" run B "pkill -INT -x gridwired; sleep 3"
fpm=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(a["msgs_out"] / max(a["data_frames_tx"], 1))' "$out/a-stats.json")
# A frame of gridwire's at 225 bytes: header, records of 4 + 225 bytes.
flen=$(python3 -c 'import sys; print(min(9014, round(64 + float(sys.argv[1]) * 229)))' "$fpm")

gw_log "bench host: dpdk-testpmd, txonly on A, rxonly on B, ${flen}-byte frames, $seconds s"
tp="dpdk-testpmd -l 0,1 -a 0000:00:04.0 -a 0000:00:05.0 --file-prefix=tp -m 512 --huge-dir /dev/hugepages"
tp+=" -- --nb-cores=1 --rxq=1 --txq=1 --mbuf-size=10240 --max-pkt-len=9018 --total-num-mbufs=8192"
"$H" run B "setsid $tp --forward-mode=rxonly --stats-period 1 >/gw/tp.log 2>&1 </dev/null &"
sleep 20
"$H" run A "timeout -s INT $((seconds + 15)) $tp --forward-mode=txonly --txpkts=$flen --stats-period 5 \
    >/gw/tp.log 2>&1 </dev/null; true"
"$H" run B "pkill -INT dpdk-testpmd; sleep 3"
cp "$STATE/B/share/tp.log" "$out/testpmd-b.log"

python3 - "$out" "$fpm" "$flen" "$total" <<'PY'
import json, re, statistics, sys
out, fpm, flen, total = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rx = json.load(open(f"{out}/rx.json"))
share = [json.load(open(f"{out}/b-lcore{l}.json"))["data_frames"] for l in (3, 4)]
# testpmd prints one block per port each period; B's rate is the sum of its
# ports' Rx-pps in a period; the steady state is the median of the periods
# that received anything.
blocks = open(f"{out}/testpmd-b.log").read().split("NIC statistics for port")
pps = [int(m) for b in blocks for m in re.findall(r"Rx-pps:\s+(\d+)", b)]
periods = [sum(pps[i:i + 2]) for i in range(0, len(pps) - 1, 2)]
busy = [p for p in periods if p > 0]
tp_fps = statistics.median(busy) if busy else 0
res = {
    "gridwire_msgs_per_s": round(rx["msgs_per_s"]), "delivered": rx["delivered"], "sent": total,
    "order_violations": rx["order_violations"], "msgs_per_frame": round(fpm, 2),
    "testpmd_frames_per_s": tp_fps, "testpmd_frame_bytes": flen,
    "testpmd_msgs_per_s_at_gridwire_packing": round(tp_fps * fpm),
    "ratio": round(rx["msgs_per_s"] / (tp_fps * fpm), 2) if tp_fps else None,
    "receiver_frames": share, "receiver_share": [round(s / max(sum(share), 1), 2) for s in share],
}
json.dump(res, open(f"{out}/host.json", "w"), indent=1)
rep = f"""gridwire between the emulated hosts against dpdk-testpmd on the same NICs (one run, TCG)
| path | frames/s | msg/s (225 B) |
| --- | --- | --- |
| dpdk-testpmd txonly -> rxonly, {flen}-byte frames | {tp_fps:,.0f} | {tp_fps * fpm:,.0f} (at {fpm:.1f} msg/frame) |
| gridwire, verified ({rx['delivered']:,} of {total:,}, {rx['order_violations']} out of order) | {rx['msgs_per_s'] / fpm:,.0f} | {rx['msgs_per_s']:,.0f} |
ratio gridwire / testpmd: {res['ratio']}
B's receivers took {share[0]:,} and {share[1]:,} of the lanes' frames ({res['receiver_share'][0]:.0%} / {res['receiver_share'][1]:.0%})
"""
open(f"{out}/report.txt", "w").write(rep)
print(rep)
PY
gw_log "bench host: results in $out"
