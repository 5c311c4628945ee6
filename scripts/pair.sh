#!/usr/bin/env bash
# pair.sh: one verified run between two gateways. Gateway alpha (node 1) in
# namespace gwa, beta (node 2) in gwb, joined by the kernel-bypass cable
# (--link cable, the default) or by the two veths (--link veth); PROCS
# sender processes in gwa with WRITERS logical senders each, one verifying
# receiver in gwb. Prints a summary for people on stderr and one JSON line
# on stdout.
#
#   scripts/pair.sh [--procs P] [--writers W] [--msgs M] [--size S]
#                   [--batch on|off] [--drop PERMILLE] [--drop-acks PERMILLE]
#                   [--set section.key=value]... [--workers N] [--receivers R] [--rate MSGS_PER_S_PER_PROC]
#                   [--link cable|veth] [--keep-ns] [--timeline FILE]
#                   [--urgent-every K]
#
# GW_PIN_A and GW_PIN_B pin the senders and the receiver to those CPUs
# (taskset), as two hosts would have them; by default they float.
#
# --urgent-every K: writers w with w % K == 0 send urgent messages (the
# receiver checks each writer's class).
# --timeline FILE keeps the receiver's messages and latency per 100 ms
# (gw-perf rx --timeline). --drop loses PERMILLE/1000 of the frames beta receives (the data),
# --drop-acks of those alpha receives (the acks): by XDP on the veths, or
# on the cable, where there is no kernel to hook, by the gateways' own
# [fault] stage.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app

procs=4 writers=250 msgs=1000 size=225 batch=on drop=0 drop_acks=0 keep_ns=0
# A run that checks every message arrives: a receiver that a loaded
# machine leaves unscheduled for a while is waited for, not rejected after
# the default 100 ms (the hold-then-reject policy has test_slow_dest); a
# --set of it overrides this.
sets=(--set chan.dest_block_ms=30000) rate=() timeline=() classes=()
while (($#)); do
    case $1 in
    --procs) procs=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --drop) drop=$2; shift 2 ;;
    --drop-acks) drop_acks=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    --workers) export GW_WORKERS=$2; shift 2 ;;
    --receivers) export GW_RECEIVERS=$2; shift 2 ;;
    --rate) rate=(--rate "$2"); shift 2 ;;
    --link) export GW_LINK=$2; shift 2 ;;
    --keep-ns) keep_ns=1; shift ;;
    --timeline) timeline=(--timeline "$2"); shift 2 ;;
    --urgent-every) classes=(--urgent-every "$2"); shift 2 ;;
    *) gw_die "pair.sh: unknown option $1 (see the header of scripts/pair.sh)" ;;
    esac
done
[[ $batch == on || $batch == off ]] || gw_die "pair.sh: --batch must be on or off"
[[ -x $BIN/gridwired && -x $BIN/gw-perf ]] || gw_die "not built: run ./scripts/gw build"
[[ $batch == off ]] && sets+=(--set proto.batch_max=1)
link=$(gw_link)
if [[ $link == cable ]]; then
    ((drop > 0)) && export GW_ARGS_B="${GW_ARGS_B:-} --set fault.drop_ppm=$((drop * 1000))"
    ((drop_acks > 0)) && export GW_ARGS_A="${GW_ARGS_A:-} --set fault.drop_ppm=$((drop_acks * 1000))"
fi

total=$((procs * writers * msgs))
gw_workdir pair
if ((keep_ns)); then
    gw_netns status >/dev/null 2>&1 || gw_netns up >/dev/null
else
    gw_ns_up >/dev/null
fi

gw_gateways_up "$work" "${sets[@]}"
pid_a=$GW_PID_A pid_b=$GW_PID_B
# The far side must know the endpoint before anything is sent to it.
gw_rx_start "$work" rx -e sink --expect "$total" --writers-max $((procs * writers)) --idle-timeout 30 \
    "${timeline[@]}" "${classes[@]}"
pid_rx=$GW_PID_RX

xdp=0
[[ $link == veth ]] && ((drop > 0 || drop_acks > 0)) && xdp=1
((xdp && drop > 0)) && { gw_netns drop veth-b0 "$drop"; gw_netns drop veth-b1 "$drop"; } >/dev/null
((xdp && drop_acks > 0)) && { gw_netns drop veth-a0 "$drop_acks"; gw_netns drop veth-a1 "$drop_acks"; } >/dev/null

cpu_of() { # pid -> utime+stime in clock ticks
    awk '{print $14 + $15}' "/proc/$1/stat"
}
gw_log "pair: $procs processes x $writers writers x $msgs messages of $size bytes, batching $batch, $link link"
cpu0=$(($(cpu_of "$pid_a") + $(cpu_of "$pid_b")))
rss0=$(($(gw_pss "$pid_a") + $(gw_pss "$pid_b")))
txpids=()
for p in $(seq 0 $((procs - 1))); do
    ip netns exec gwa ${GW_PIN_A:+taskset -c "$GW_PIN_A"} "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e sink \
        -w "$writers" -m "$msgs" -z "$size" --id-base $((p * writers)) "${rate[@]}" "${classes[@]}" \
        >"$work/tx$p.json" 2>"$work/tx$p.err" &
    txpids+=($!)
done
rss_max=$rss0
while kill -0 "$pid_rx" 2>/dev/null; do
    r=$(($(gw_pss "$pid_a") + $(gw_pss "$pid_b")))
    ((r > rss_max)) && rss_max=$r
    sleep 0.5
done
tx_fail=0
for p in "${txpids[@]}"; do wait "$p" || tx_fail=1; done
wait "$pid_rx" || true
cpu1=$(($(cpu_of "$pid_a") + $(cpu_of "$pid_b")))
rss1=$(($(gw_pss "$pid_a") + $(gw_pss "$pid_b")))
((xdp)) && gw_netns drop veth-b0 0 >/dev/null && gw_netns drop veth-b1 0 >/dev/null &&
    gw_netns drop veth-a0 0 >/dev/null && gw_netns drop veth-a1 0 >/dev/null
gw_gateways_down
((tx_fail)) && cat "$work"/tx*.err >&2

[[ -s $work/rx.json && -s $work/alpha.json ]] || {
    cat "$work"/*.log "$work"/*.err >&2
    gw_die "the run left no results"
}
hz=$(getconf CLK_TCK)
python3 - "$work" "$total" "$((cpu1 - cpu0))" "$hz" "$rss0" "$rss_max" "$rss1" "$tx_fail" "$size" <<'EOF'
import glob, json, os, sys
work, total, ticks, hz, rss0, rssmax, rss1, txfail, size = sys.argv[1:]
total = int(total)
rx = json.load(open(f"{work}/rx.json"))
a = json.load(open(f"{work}/alpha.json"))
b = json.load(open(f"{work}/beta.json"))
cpu = int(ticks) / int(hz)
frames = a["data_frames_tx"]
out = {
    "sent": total,
    "delivered": rx["delivered"],
    "duplicates": rx["duplicates"],
    "order_violations": rx["order_violations"],
    "wrong_class": rx.get("wrong_class", 0),
    "urgent_msgs": a.get("urgent_msgs_out", 0),
    "msgs_per_s": round(rx["msgs_per_s"]),
    "frames": frames,
    "msgs_per_frame": round(a["msgs_out"] / frames, 2) if frames else 0,
    "retrans": a["retrans"],
    "dup_frames": b["dup_frames"],
    # kind = parallel: copies of a transmission another member brought first
    "redundant_at_beta": b.get("redundant_frames", 0),
    "tx_copies_dropped": a.get("tx_copies_dropped", 0) + b.get("tx_copies_dropped", 0),
    # the longest a writer's stream waited between two messages at the receiver
    "max_gap_ms": round(rx.get("max_gap_us", 0) / 1000, 1),
    # DATA frames that came in on another receiver's lcore than their lane's
    "lane_handoffs": a.get("lane_handoffs", 0) + b.get("lane_handoffs", 0),
    # [auth] frames verified on one receiver's lcore, checked for replay on another's
    "auth_handoffs_at_beta": b.get("auth_handoffs", 0),
    # the receiving client asleep on a receiver's CPU: shown messages without
    # a wake, and woken because the oldest had waited 200 us (lib/deliver)
    "wakes_deferred_at_beta": b.get("wakes_deferred", 0),
    "wakes_at_age_at_beta": b.get("wakes_at_age", 0),
    "bad_crc": a["bad_crc"] + b["bad_crc"],
    "refused_at_beta": {k: b[k] for k in ("bad_frames", "bad_crc", "not_ours", "unknown_peer",
                                          "auth_forged", "auth_replayed", "auth_unknown_key",
                                          "auth_truncated", "auth_wrong_mode")},
    "faults": {k[6:]: a[k] + b[k] for k in a if k.startswith("fault_")},
    "link": os.environ.get("GW_LINK", "cable"),
    "alpha_member_tx": [m["tx_packets"] for m in a.get("members", [])],
    "gw_cpu_s_per_M": round(cpu / (total / 1e6), 3),
    "client_cpu_s_per_M": round((rx["cpu_s"] + sum(json.load(open(f))["cpu_s"]
                                 for f in glob.glob(f"{work}/tx*.json") if os.path.getsize(f)))
                                / (total / 1e6), 3),
    # Each DATA frame: 74 bytes of headers, then 16 + size per message.
    "bytes_per_frame": round(74 + a["msgs_out"] * (int(size) + 16) / frames) if frames else 0,
    "elapsed_s": rx["elapsed_s"],
    "lat_us": rx["lat_us"],
    "lat_hist": rx["lat_hist"],
    "gw_mem_kb": [int(rss0), int(rssmax), int(rss1)],
    "sender_failed": int(txfail),
    "sender_eagain": sum(json.load(open(f)).get("eagain", 0)
                         for f in glob.glob(f"{work}/tx*.json") if os.path.getsize(f)),
}
print(f"  sent {out['sent']:,}  delivered {out['delivered']:,}  duplicates {out['duplicates']}"
      f"  order violations {out['order_violations']}", file=sys.stderr)
print(f"  {out['msgs_per_s']:,} msg/s end to end, {frames:,} frames, "
      f"{out['msgs_per_frame']} msgs/frame, {out['retrans']} retransmissions", file=sys.stderr)
print(f"  latency p50 {out['lat_us']['p50']} us, p99 {out['lat_us']['p99']} us, "
      f"max {out['lat_us']['max']} us", file=sys.stderr)
print(f"  gateways: {out['gw_cpu_s_per_M']} CPU s per million messages, "
      f"memory {int(rss0)//1024}->{int(rssmax)//1024} MB peak", file=sys.stderr)
print(json.dumps(out, separators=(",", ":")))
EOF
