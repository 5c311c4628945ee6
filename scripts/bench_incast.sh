#!/usr/bin/env bash
# bench_incast.sh: many gateways sending to one through a shallow switch
# port. A mesh (scripts/mesh.sh) of N+1 gateways; the switch's two ports
# toward node 1 (n1m0, n1m1) shaped by tc tbf (RATE each, a queue of QUEUE
# bytes); nodes 2..N+1 each send MSGS messages of SIZE bytes to node 1
# (4 writers each, unpaced), every message verified (once, in order per
# writer), while node 2 also sends urgent messages at Poisson times
# (URGENT_RATE a second) to another endpoint of node 1. For each N and each
# [cc] control in MODES, through a strict-priority port that trusts DSCP
# (and once, at FIFO_AT senders, through a plain FIFO port: what the
# priority queue buys the urgent messages): goodput as a share of the shaped capacity,
# retransmitted frames per delivered DATA frame, the switch's drops
# (tc -s), the receivers' gaps, the latency of both classes. Then the same
# bytes as N kernel TCP flows (64 KB writes; --tcp-cc, cubic by default,
# Debian's, whatever the machine's sysctl says) through one shaped port,
# with the segments they sent again (nstat) and the port's drops. Last,
# sharing: one gridwire stream beside one kernel TCP flow through one FIFO
# port for SHARE_S seconds, under each [cc] control: each one's share of
# the port and Jain's fairness index of the two (1 = even, 0.5 = one takes
# all), and what a kernel TCP flow (cubic) gets in gridwire's place.
# Ends with results/bench-incast-<time>/{incast.json,report.txt,incast.png}.
#
#   scripts/bench_incast.sh [--senders "2 4 8 15"] [--msgs M] [--size S]
#                           [--rate 400mbit] [--queue 256kb] [--modes "delay off"]
#                           (a mode delay@US: [cc] target_us US too)
#                           [--urgent-rate R] [--fifo-at N] [--no-tcp]
#                           [--share-s S] (0: no sharing runs) [--tcp-cc cubic]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
senders="2 4 8 15" msgs=200000 size=225 rate=400mbit queue=256kb modes="delay off"
urgent_rate=1000 tcp=1 fifo_at=8 share_s=8 tcp_cc=cubic
while (($#)); do
    case $1 in
    --senders) senders=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --queue) queue=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --urgent-rate) urgent_rate=$2; shift 2 ;;
    --no-tcp) tcp=0; shift ;;
    --fifo-at) fifo_at=$2; shift 2 ;;
    --share-s) share_s=$2; shift 2 ;;
    --tcp-cc) tcp_cc=$2; shift 2 ;;
    *) gw_die "bench_incast.sh: unknown option $1 (see the header of scripts/bench_incast.sh)" ;;
    esac
done
[[ -x $BIN/gridwired && -x $BIN/gw-perf ]] || gw_die "not built: run ./scripts/gw build"
command -v tc >/dev/null || gw_die "no tc: apt-get install iproute2"
for n in $senders; do
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 15)) || gw_die "--senders: each 1..15 (a mesh holds 16 nodes), got '$n'"
done
rate_bps=$(gw_rate_bps "$rate")
out=$ROOT/results/bench-incast-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
gw_workdir incast
writers=4

shape() { gw_mesh_shape 1 "$1" "$rate" "$queue"; }
drops() { gw_mesh_drops 1; }

# gridwire MODE N PORT: one verified incast; its figures in
# $out/gw-MODE-N-PORT.json.
gridwire() {
    local mode=$1 n=$2 port=$3 k pids=() total=$((n * msgs)) est umsgs
    gw_log "incast: gridwire, [cc] control=$mode, $n senders x $msgs messages, $port port"
    local sets=(--set "cc.control=${mode%@*}")
    [[ $mode == *@* ]] && sets+=(--set "cc.target_us=${mode#*@}")
    gw_mesh_up "$work" $((n + 1)) "${sets[@]}"
    shape "$port"
    # The urgent writer's share of the run: about 60 % of its expected length.
    est=$(python3 -c "print(max(1.0, $total * ($size + 16) * 8 / (2 * $rate_bps)))")
    umsgs=$(python3 -c "print(max(200, int($urgent_rate * 0.6 * $est)))")
    ip netns exec gwm1 "$BIN/gw-perf" rx -s /run/gridwire/n1.sock -e sink --expect "$total" \
        --writers-max $((n * writers)) --idle-timeout 60 >"$work/rx.json" 2>"$work/rx.err" &
    local rx=$!
    gw_cleanup_push _gw_stop_pid "$rx"
    gw_wait_ready "$work/rx.err" "rx ready" "$rx" "the bulk receiver"
    ip netns exec gwm1 "$BIN/gw-perf" rx -s /run/gridwire/n1.sock -e alarm --urgent \
        --expect "$umsgs" --writers-max 1 --idle-timeout 60 >"$work/urx.json" 2>"$work/urx.err" &
    local urx=$!
    gw_cleanup_push _gw_stop_pid "$urx"
    gw_wait_ready "$work/urx.err" "rx ready" "$urx" "the urgent receiver"
    for ((k = 2; k <= n + 1; k++)); do
        ip netns exec "gwm$k" "$BIN/gw-perf" tx -s "/run/gridwire/n$k.sock" -n 1 -e sink \
            -w "$writers" -m $((msgs / writers)) -z "$size" --id-base $(((k - 2) * writers)) \
            >"$work/tx$k.json" 2>"$work/tx$k.err" &
        pids+=($!)
    done
    sleep "$(python3 -c "print(round(0.1 * $est, 2))")"
    ip netns exec gwm2 "$BIN/gw-perf" tx -s /run/gridwire/n2.sock -n 1 -e alarm -w 1 -m "$umsgs" \
        -z "$size" --rate "$urgent_rate" --poisson --urgent >"$work/utx.json" 2>"$work/utx.err" &
    pids+=($!)
    local fail=0 p
    for p in "${pids[@]}" "$rx" "$urx"; do wait "$p" || fail=1; done
    local dropped
    dropped=$(drops)
    for ((k = 1; k <= n + 1; k++)); do _gw_stop_gateway "${GW_MESH_PID[k]}"; done
    "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
    ((fail)) && { tail -n 3 "$work"/*.err >&2; gw_die "incast: gridwire $mode $n failed verification"; }
    mkdir -p "$out/gw-$mode-$n-$port"
    cp "$work"/n*.json "$out/gw-$mode-$n-$port/" # each gateway's counters
    python3 - "$work" "$n" "$mode" "$dropped" "$rate_bps" "$total" "$port" \
        >"$out/gw-$mode-$n-$port.json" <<'PY'
import json, sys
work, n, mode, dropped, rate, total, port = (sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]),
                                             int(sys.argv[5]), int(sys.argv[6]), sys.argv[7])
j = lambda name: json.load(open(f"{work}/{name}.json"))
rx, urx, sink = j("rx"), j("urx"), j("n1")
snd = [j(f"n{k}") for k in range(2, n + 2)]
sent_frames = sum(s["data_frames_tx"] for s in snd)
retrans = sum(s["retrans"] for s in snd)
# Goodput: the DATA bytes node 1 took once, over the run, against both ports.
unique = sink["rx_bytes"] * max(0, sink["data_frames"] - sink["dup_frames"]) / max(1, sink["data_frames"])
print(json.dumps({
    "transport": "gridwire", "cc": mode, "senders": n, "port": port,
    "verified": rx["delivered"] == total and not rx["duplicates"] and not rx["order_violations"],
    "delivered": rx["delivered"], "duplicates": rx["duplicates"], "order_violations": rx["order_violations"],
    "elapsed_s": rx["elapsed_s"], "msgs_per_s": rx["msgs_per_s"],
    "goodput": round(unique * 8 / rx["elapsed_s"] / (2 * rate), 3),
    "data_frames_sent": sent_frames, "retrans": retrans,
    "retrans_per_frame": round(retrans / max(1, sent_frames), 4),
    "switch_drops": dropped, "drops_per_frame": round(dropped / max(1, sent_frames + retrans), 4),
    "rx_gaps": sink.get("rx_gaps", 0), "budget_cuts": sink.get("cc_budget_cuts", 0),
    "cc_cuts_delay": sum(s.get("cc_cuts_delay", 0) for s in snd),
    "cc_cuts_loss": sum(s.get("cc_cuts_loss", 0) for s in snd),
    "bulk_p50_us": rx["lat_us"]["p50"], "bulk_p99_us": rx["lat_us"]["p99"],
    "urgent_msgs": urx["delivered"], "urgent_p50_us": urx["lat_us"]["p50"],
    "urgent_p99_us": urx["lat_us"]["p99"],
}))
PY
}

# tcp_mesh N: N namespaces, no gateways, each an address on mesh0 (mesh1
# down): kernel TCP into node 1 through the FIFO port n1m0.
tcp_mesh() {
    local k
    "$ROOT/scripts/mesh.sh" up "$1" >/dev/null
    gw_cleanup_push "$ROOT/scripts/mesh.sh" down
    for ((k = 1; k <= $1; k++)); do
        ip -n "gwm$k" addr add "10.78.0.$k/24" dev mesh0
        ip -n "gwm$k" link set mesh1 down
    done
    shape fifo
}

# tcp N: the same bytes as N kernel TCP flows into node 1 through n1m0.
tcp_flows() {
    local n=$1 k pids=() bytes=$((msgs * (size + 16)))
    gw_log "incast: kernel TCP, $n flows x $bytes bytes"
    tcp_mesh $((n + 1))
    gw_tcp_sink "$work/tcp-rx.json" "$n"
    local rx=$GW_TCP_SINK_PID
    for ((k = 2; k <= n + 1; k++)); do
        ip netns exec "gwm$k" python3 "$ROOT/scripts/tcp_flows.py" send 10.78.0.1 47100 "$bytes" "$tcp_cc" \
            >"$work/tcp-tx$k.json" &
        pids+=($!)
    done
    local p
    for p in "${pids[@]}" "$rx"; do wait "$p" || gw_die "incast: a TCP flow failed"; done
    local dropped
    dropped=$(drops)
    "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
    python3 - "$work" "$n" "$dropped" "$rate_bps" >"$out/tcp-$n.json" <<'PY'
import json, sys
work, n, dropped, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rx = json.load(open(f"{work}/tcp-rx.json"))
tx = [json.load(open(f"{work}/tcp-tx{k}.json")) for k in range(2, n + 2)]
segs = sum(t["segs_out"] for t in tx)
retrans = sum(t["retrans_segs"] for t in tx)
print(json.dumps({
    "transport": "tcp", "cc": tx[0]["cc"], "senders": n, "port": "fifo", "verified": rx["bytes"] == sum(t["bytes"] for t in tx),
    "elapsed_s": rx["elapsed_s"], "goodput": round(rx["bytes"] * 8 / rx["elapsed_s"] / rate, 3),
    "segments_sent": segs, "retrans": retrans, "retrans_per_frame": round(retrans / max(1, segs), 4),
    "switch_drops": dropped, "drops_per_frame": round(dropped / max(1, segs), 4),
}))
PY
}

# share MODE: one gridwire stream (node 2, [cc] MODE, 4 writers, unpaced) and
# one kernel TCP flow (node 3) into node 1 through the one FIFO port n1m0.
share() {
    local mode=$1
    gw_log "incast: one gridwire stream ([cc] control=$mode) beside one TCP flow, one FIFO port, $share_s s"
    local sets=(--set "cc.control=${mode%@*}" --set port.members=mesh0)
    [[ $mode == *@* ]] && sets+=(--set "cc.target_us=${mode#*@}")
    gw_mesh_up "$work" 3 "${sets[@]}" >/dev/null
    shape fifo
    ip -n gwm1 addr add 10.78.0.1/24 dev mesh0
    ip -n gwm3 addr add 10.78.0.3/24 dev mesh0
    gw_tcp_sink "$work/share-tcp-rx.json" 1
    local tcprx=$GW_TCP_SINK_PID
    ip netns exec gwm1 "$BIN/gw-perf" rx -s /run/gridwire/n1.sock -e share --expect 0 --writers-max 4 \
        >"$work/share-rx.json" 2>"$work/share-rx.err" &
    local shrx=$!
    gw_cleanup_push _gw_stop_pid "$shrx"
    gw_wait_ready "$work/share-rx.err" "rx ready" "$shrx" "the shared port's receiver"
    ip netns exec gwm3 python3 "$ROOT/scripts/tcp_flows.py" send 10.78.0.1 47100 "for:$share_s" "$tcp_cc" \
        >"$work/share-tcp-tx.json" &
    local tcptx=$!
    # Node 2's lanes to node 1, 4 times a second (window, grant, round
    # trips, competing): what the controller did beside TCP.
    python3 - "$ROOT/app/gwctl/gwctl" "$share_s" >"$out/share-$mode-lanes.jsonl" <<'PY' &
import json, subprocess, sys, time
gwctl, secs = sys.argv[1], float(sys.argv[2])
t0 = time.time()
while time.time() - t0 < secs:
    q = lambda c: json.loads(subprocess.run([gwctl, "-n", "n2", "raw", c], capture_output=True,
                                            text=True, timeout=5).stdout or "null")
    try:
        for lane in q("/gridwire/lanes") or []:
            r = q(f"/gridwire/lane,{lane}")
            if isinstance(r, dict) and r.get("peer") == 1:
                print(json.dumps({"t": round(time.time() - t0, 2), **{k: v for k, v in r.items()
                      if k.startswith("cc_") or k in ("lane", "class", "srtt_us", "tx_inflight", "tx_retrans")}}), flush=True)
    except (ValueError, subprocess.SubprocessError):
        pass
    time.sleep(0.25)
PY
    local sampler=$!
    ip netns exec gwm2 "$BIN/gw-perf" tx -s /run/gridwire/n2.sock -n 1 -e share -w 4 -m 0 -z "$size" \
        --duration "$share_s" >"$work/share-tx.json" 2>"$work/share-tx.err" ||
        gw_die "incast: the sharing run's gridwire sender failed ($work/share-tx.err)"
    wait "$tcptx" || gw_die "incast: the sharing run's TCP sender failed"
    wait "$tcprx" || gw_die "incast: the sharing run's TCP sink failed"
    wait "$sampler" || true
    sleep 1
    kill -INT "$shrx" 2>/dev/null || true
    wait "$shrx" || true
    local k
    for k in 1 2 3; do _gw_stop_gateway "${GW_MESH_PID[k]}"; done
    "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
    mkdir -p "$out/share-$mode"
    cp "$work"/n*.json "$out/share-$mode/" # each gateway's counters
    python3 - "$work" "$mode" "$rate_bps" "$size" >"$out/share-$mode.json" <<'PY'
import json, sys
work, mode, rate, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rx = json.load(open(f"{work}/share-rx.json"))
tcp = json.load(open(f"{work}/share-tcp-rx.json"))
tcp_cc = json.load(open(f"{work}/share-tcp-tx.json"))["cc"]
gw = rx["delivered"] * (size + 16) * 8 / max(rx["elapsed_s"], 1e-9) / rate  # 16: a record's header
tc = tcp["bytes"] * 8 / max(tcp["elapsed_s"], 1e-9) / rate
snd, sink = json.load(open(f"{work}/n2.json")), json.load(open(f"{work}/n1.json"))
print(json.dumps({"cc": mode, "tcp_cc": tcp_cc, "verified": not rx["duplicates"] and not rx["order_violations"],
                  "gridwire_share": round(gw, 3), "tcp_share": round(tc, 3),
                  "retrans": snd["retrans"], "cc_cuts_delay": snd.get("cc_cuts_delay", 0),
                  "cc_cuts_loss": snd.get("cc_cuts_loss", 0), "rx_gaps": sink.get("rx_gaps", 0),
                  "budget_cuts": sink.get("cc_budget_cuts", 0)}))
PY
}

# share_tcp: the baseline of the sharing runs, what a kernel TCP flow (cubic)
# gets in gridwire's place beside the same TCP flow ($tcp_cc).
share_tcp() {
    gw_log "incast: one kernel TCP flow (cubic) beside one TCP flow ($tcp_cc), one FIFO port, $share_s s"
    tcp_mesh 3
    gw_tcp_sink "$work/share2-rx.json" 2 per-peer
    local k pids=() rx=$GW_TCP_SINK_PID
    ip netns exec gwm2 python3 "$ROOT/scripts/tcp_flows.py" send 10.78.0.1 47100 "for:$share_s" cubic \
        >"$work/share2-tx2.json" &
    pids+=($!)
    ip netns exec gwm3 python3 "$ROOT/scripts/tcp_flows.py" send 10.78.0.1 47100 "for:$share_s" "$tcp_cc" \
        >"$work/share2-tx3.json" &
    pids+=($!)
    for k in "${pids[@]}" "$rx"; do wait "$k" || gw_die "incast: a sharing TCP flow failed"; done
    "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
    python3 - "$work" "$rate_bps" "$tcp_cc" >"$out/share-tcp.json" <<'PY'
import json, sys
work, rate, tcp_cc = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rx = json.load(open(f"{work}/share2-rx.json"))
a, b = (rx["per_peer"].get(f"10.78.0.{k}", {"bytes": 0, "elapsed_s": 1}) for k in (2, 3))
mine, other = (x["bytes"] * 8 / max(x["elapsed_s"], 1e-9) / rate for x in (a, b))
print(json.dumps({"cc": "tcp cubic", "tcp_cc": tcp_cc, "verified": True,
                  "gridwire_share": round(mine, 3), "tcp_share": round(other, 3)}))
PY
}

for n in $senders; do
    for mode in $modes; do gridwire "$mode" "$n" prio; done
    ((n == fifo_at)) && gridwire "${modes%% *}" "$n" fifo
    if ((tcp)); then tcp_flows "$n"; fi
done
if ((share_s > 0)); then
    for mode in $modes; do share "$mode"; done
    share_tcp
fi
python3 "$ROOT/scripts/bench_incast_report.py" "$out" "$rate" "$queue"
gw_log "incast bench: results in $out"
