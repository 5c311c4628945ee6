#!/usr/bin/env bash
# Several gateways into one through a shaped switch port (congestion
# control, [cc]). A mesh of five (scripts/mesh.sh); the switch's ports
# toward node 1 shaped to 200 Mbit/s each with a 128 KB queue, as a
# priority port that trusts DSCP (gw_mesh_shape prio):
#  1. nodes 2..5 send to node 1 at once, unpaced, node 5 with [cc] off
#     (no GW_CAP_GRANT: a peer that does not know grants), node 2 also
#     urgent messages: every message arrives once and in order; the
#     retransmissions, the port's drops and the receiver's gaps are
#     reported; a capture on the port shows urgent frames with DSCP 46 and
#     an 802.1Q tag of priority 4 (VLAN 0), bulk ones with DSCP 0 and no
#     tag, and ACKs from node 1 to the [cc] nodes with grants, to node 5
#     without;
#  2. the same with [auth] on;
#  3. node 3's gateway killed (SIGKILL) in the middle: the other senders'
#     messages all arrive, node 3's a prefix of each writer's, in order;
#  4. one gridwire stream and one kernel TCP flow through one FIFO port:
#     both make progress (each above 10 % of it).
# gw-timeout: 180
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
gw_workdir incast
rate=200mbit queue=128kb msgs=20000 writers=2 fail=0
command -v tshark >/dev/null || gw_die "no tshark: ./scripts/gw deps installs it"
sock() { echo "/run/gridwire/n$1.sock"; }

# mesh ARGS...: five gateways, nodes 1..4 with [cc] and urgent frames
# priority-tagged (802.1Q PCP 4), node 5 with neither; ports toward 1
# shaped as PORT (prio).
mesh() {
    "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
    gw_cleanup_push "$ROOT/scripts/mesh.sh" down
    "$ROOT/scripts/mesh.sh" up 5 >/dev/null
    local k own
    for k in 1 2 3 4 5; do
        : >"$work/n$k.log"
        own=(--set cc.control=delay --set qos.pcp_urgent=4)
        ((k == 5)) && own=(--set cc.control=off)
        gw_mesh_start "$work" "$k" "${own[@]}" "$@"
    done
    gw_mesh_wait "$work" 5 4
    gw_mesh_shape 1 "${PORT:-prio}" "$rate" "$queue"
}

stop_mesh() {
    local k
    for k in 1 2 3 4 5; do _gw_stop_gateway "${GW_MESH_PID[k]}"; done
    "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
}

# incast NAME [KILL]: nodes 2..5 to node 1's sink (node 3 to sink3, whose
# count is not required when KILL is set), node 2's urgent writer to alarm.
incast() {
    local name=$1 kill=${2:-} k p pids=() rxs=()
    ip netns exec gwm1 "$BIN/gw-perf" rx -s "$(sock 1)" -e sink --expect $((3 * writers * msgs)) \
        --writers-max $((8 * writers)) --idle-timeout 60 >"$work/$name-rx.json" 2>"$work/$name-rx.err" &
    rxs+=($!)
    gw_cleanup_push _gw_stop_pid "$!"
    gw_wait_ready "$work/$name-rx.err" "rx ready" "$!" "the bulk receiver"
    ip netns exec gwm1 "$BIN/gw-perf" rx -s "$(sock 1)" -e sink3 --expect $((writers * msgs)) \
        --writers-max $((8 * writers)) --idle-timeout "$([[ -n $kill ]] && echo 10 || echo 60)" \
        >"$work/$name-rx3.json" 2>"$work/$name-rx3.err" &
    local rx3=$!
    gw_cleanup_push _gw_stop_pid "$rx3"
    gw_wait_ready "$work/$name-rx3.err" "rx ready" "$rx3" "node 3's receiver"
    ip netns exec gwm1 "$BIN/gw-perf" rx -s "$(sock 1)" -e alarm --urgent --expect 2000 \
        --writers-max 1 --idle-timeout 60 >"$work/$name-urx.json" 2>"$work/$name-urx.err" &
    rxs+=($!)
    gw_cleanup_push _gw_stop_pid "$!"
    gw_wait_ready "$work/$name-urx.err" "rx ready" "$!" "the urgent receiver"
    for k in 2 3 4 5; do
        ip netns exec "gwm$k" "$BIN/gw-perf" tx -s "$(sock "$k")" -n 1 -e "$( ((k == 3)) && echo sink3 || echo sink)" \
            -w "$writers" -m "$msgs" --id-base $(((k - 2) * writers)) \
            >"$work/$name-tx$k.json" 2>"$work/$name-tx$k.err" &
        ((k == 3)) && local tx3=$! || pids+=($!)
    done
    ip netns exec gwm2 "$BIN/gw-perf" tx -s "$(sock 2)" -n 1 -e alarm -w 1 -m 2000 --rate 1000 \
        --poisson --urgent >"$work/$name-utx.json" 2>"$work/$name-utx.err" &
    pids+=($!)
    if [[ -n $kill ]]; then
        sleep 0.5
        kill -KILL "${GW_MESH_PID[3]}"
        wait "$tx3" || true # it is told -EPIPE
    else
        pids+=("$tx3")
    fi
    local bad=0
    for p in "${pids[@]}" "${rxs[@]}"; do wait "$p" || bad=1; done
    if [[ -n $kill ]]; then wait "$rx3" || true; else wait "$rx3" || bad=1; fi
    echo "$name: node 1's ports dropped $(gw_mesh_drops 1) frames"
    return "$bad"
}

# report NAME: the counters the run left (the gateways are stopped).
report() {
    python3 - "$work" "$1" "${2:-}" <<'PY'
import json, sys
work, name, killed = sys.argv[1], sys.argv[2], sys.argv[3]
j = lambda f: json.load(open(f"{work}/{f}.json"))
snd = [j(f"n{k}") for k in (2, 3, 4, 5) if not (killed and k == 3)]
sink = j("n1")
frames = sum(s["data_frames_tx"] for s in snd)
retrans = sum(s["retrans"] for s in snd)
rx3 = j(f"{name}-rx3")
each = ", ".join(f"n{k} {j(f'n{k}')['data_frames_tx']}/{j(f'n{k}')['retrans']}"
                 for k in (2, 3, 4, 5) if not (killed and k == 3))
print(f"{name}: DATA frames sent/sent again by node: {each} (n5 without [cc])")
print(f"{name}: {frames} DATA frames sent, {retrans} sent again ({100 * retrans / max(1, frames):.2f} %), "
      f"node 1 saw {sink['rx_gaps']} gaps and cut its budget {sink['cc_budget_cuts']} times; "
      f"senders' cuts: {sum(s['cc_cuts_delay'] for s in snd)} for delay, {sum(s['cc_cuts_loss'] for s in snd)} for loss; "
      f"node 3's sink: {rx3['delivered']} delivered, {rx3['duplicates']} twice, {rx3['order_violations']} out of order")
ok = not rx3["duplicates"] and not rx3["order_violations"] and (killed or rx3["delivered"] == 2 * 20000)
sys.exit(0 if ok else 1)
PY
}

gw_log "1. incast into node 1, node 5 without [cc], with a capture on the port"
mesh
ip netns exec gwmsw tshark -i n1m0 -i n1m1 -a duration:4 -s 128 -w "$work/port.pcapng" -q 2>"$work/tshark.err" &
cap=$!
gw_wait_ready "$work/tshark.err" "Capturing on" "$cap" "the capture on node 1's ports"
check_shown() { # DESCRIPTION COMMAND...: as gw_check, with the command's lines shown
    if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
check_shown "every message once and in order" incast plain
wait "$cap" || true
stop_mesh
check_shown "node 3's writers in order, counters reported" report plain
ts() { tshark -r "$work/port.pcapng" -T fields "$@" 2>/dev/null | sort | uniq -c; }
# UDP to node 1's gridwire port: its DATA frames (and HELLOs), by DSCP and by sending port
# (lanes: source port = 47000 + slot; urgent slots are the upper half).
dscp=$(tshark -r "$work/port.pcapng" -Y "udp.dstport == 47000 && ip.src != 198.18.0.1 && frame.len > 200" \
    -T fields -e ip.dsfield.dscp -e udp.srcport 2>/dev/null | sort -u | tr '\n' ' ')
echo "DSCP, source port of DATA into node 1: $dscp"
gw_check "bulk DATA frames carry DSCP 0" grep -q "^0	47000\| 0	47000" <<<"$dscp"
gw_check "urgent DATA frames carry DSCP 46" grep -Eq "(^| )46	470" <<<"$dscp"
# Every frame on node 1's ports (both ways) by DSCP, 802.1Q priority and VLAN id.
pcp=$(tshark -r "$work/port.pcapng" -Y "udp.port == 47000 || udp.srcport >= 47000" \
    -T fields -e ip.dsfield.dscp -e vlan.priority -e vlan.id 2>/dev/null | sort -u | tr '\t' ,)
echo "DSCP,PCP,VLAN of frames on node 1's ports:" $pcp
gw_check "every urgent frame and ACK priority-tagged: PCP 4, VLAN 0" test "$(grep "^46," <<<"$pcp")" = "46,4,0"
gw_check "bulk frames untagged" grep -qx "0,," <<<"$pcp"
gw_check "no bulk frame tagged" test "$(grep -cx "0,[0-9],[0-9]*" <<<"$pcp")" = 0
# ACKs from node 1 (gridwire type 2) toward each node: the grant field is bytes 10-11 of the payload.
grants=$(tshark -r "$work/port.pcapng" -Y "ip.src == 198.18.0.1 && udp.srcport >= 47000" -T fields \
    -e ip.dst -e udp.payload 2>/dev/null | python3 -c "
import sys
seen = {}
for line in sys.stdin:
    dst, pl = line.split()
    b = bytes.fromhex(pl)
    if len(b) >= 44 and b[3] == 2 and not int.from_bytes(b[8:10], 'little') & 0x8000:  # a bulk lane's ACK
        seen.setdefault(dst, set()).add(int.from_bytes(b[42:44], 'little') > 0)
print(' '.join(f'{d}:{\"grant\" if True in g else \"none\"}' for d, g in sorted(seen.items())))")
echo "ACKs from node 1: $grants"
gw_check "node 1 grants to a [cc] node" grep -q "198.18.0.2:grant" <<<"$grants"
gw_check "node 1 grants nothing to the node without [cc]" grep -q "198.18.0.5:none" <<<"$grants"

gw_log "2. the same with [auth]"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/key"
mesh --set "auth.key_file=$work/key"
check_shown "with [auth]: every message once and in order" incast auth
stop_mesh
check_shown "with [auth]: counters reported" report auth

gw_log "3. node 3's gateway killed in the middle"
mesh
check_shown "the others' messages all arrive" incast kill 1
stop_mesh
check_shown "node 3's: a prefix of each writer's, in order" report kill 1

gw_log "4. a gridwire stream and a TCP flow through one FIFO port"
# The gateways on mesh0 alone, as TCP is: both through the port n1m0.
PORT=fifo mesh --set port.members=mesh0
ip -n gwm1 addr add 10.78.0.1/24 dev mesh0
ip -n gwm3 addr add 10.78.0.3/24 dev mesh0
gw_tcp_sink "$work/share-tcp-rx.json" 1
tcprx=$GW_TCP_SINK_PID
ip netns exec gwm1 "$BIN/gw-perf" rx -s "$(sock 1)" -e share --expect 0 --writers-max 4 \
    >"$work/share-rx.json" 2>"$work/share-rx.err" &
shrx=$!
gw_wait_ready "$work/share-rx.err" "rx ready" "$shrx" "the shared port's receiver"
ip netns exec gwm3 python3 "$ROOT/scripts/tcp_flows.py" send 10.78.0.1 47100 for:6 >"$work/share-tcp-tx.json" &
tcptx=$!
ip netns exec gwm2 "$BIN/gw-perf" tx -s "$(sock 2)" -n 1 -e share -w 4 -m 0 --duration 6 \
    >"$work/share-tx.json" 2>"$work/share-tx.err" || true
wait "$tcptx" "$tcprx" || fail=1
sleep 1
kill -INT "$shrx" 2>/dev/null || true
wait "$shrx" || true
stop_mesh
python3 - "$work" "$rate" <<'PY' || fail=1
import json, re, sys
work, rate = sys.argv[1], sys.argv[2]
bps = int(re.fullmatch(r"(\d+)mbit", rate)[1]) * 10**6
rx = json.load(open(f"{work}/share-rx.json"))
tcp = json.load(open(f"{work}/share-tcp-rx.json"))
# gridwire's messages are 225 bytes, and 16 of record header each.
gw = rx["delivered"] * 241 * 8 / max(rx["elapsed_s"], 1e-9) / bps
tc = tcp["bytes"] * 8 / max(tcp["elapsed_s"], 1e-9) / bps
print(f"one port, 6 s: gridwire {gw:.2f} of it, TCP {tc:.2f}")
print("ok: both make progress" if gw > 0.1 and tc > 0.1 else "FAIL: both make progress")
sys.exit(0 if gw > 0.1 and tc > 0.1 else 1)
PY
exit "$fail"
