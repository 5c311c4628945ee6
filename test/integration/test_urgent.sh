#!/usr/bin/env bash
# The urgent class, on the cable:
#   1. both classes from each sender (a quarter of each process's writers
#      urgent): every message delivered once, each writer's stream in
#      order and in its own class; the gateways counted the urgent ones
#      on their own lanes and queues;
#   2. urgent messages beside a saturating bulk flow with 5 % of the frames
#      beta receives lost: both complete, in order, and the urgent lane
#      retransmitted what it lost;
#   3. urgent calls to an echo service, beside bulk ones: every reply in
#      its request's class (gw-perf call checks it), the two in one run;
#   4. the same on the veths, with 2 workers and 2 receivers a side.
# (A peer restart with both classes in flight is test_restart's.)
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build/app
gw_workdir urgent
gw_ns_up >/dev/null
fail=0

tx() { # NAME gw-perf-tx-args...: a sender on alpha, in the background
    local name=$1
    shift
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 "$@" \
        >"$work/$name.json" 2>"$work/$name.err" &
}

counter() { # NODE KEY: a counter of the gateway's stats file
    python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$work/$1.json" "$2"
}

check() { # WHAT RX.json [KEY=MIN...]: a verified receiver, and counters at least MIN
    python3 - "$@" <<'PY'
import json, sys
what, rx = sys.argv[1], json.load(open(sys.argv[2]))
bad = []
for k in ("duplicates", "order_violations", "reordered", "malformed", "wrong_class"):
    if rx.get(k): bad.append(f"{rx[k]} {k}")
for kv in sys.argv[3:]:
    k, v = kv.split("=")
    if int(v) < 1: bad.append(f"{k} is {v}")
print(f"{'FAIL' if bad else 'ok'}: {what}: {'; '.join(bad) if bad else ''} {rx}")
sys.exit(1 if bad else 0)
PY
}

classes() { # LINK WORKERS RECEIVERS: parts 1 and 3 on one pair of gateways
    export GW_LINK=$1 GW_WORKERS=$2 GW_RECEIVERS=$3
    gw_log "$1 link, $2 workers, $3 receivers: both classes from every sender"
    gw_gateways_up "$work"
    local procs=2 writers=100 msgs=2000
    gw_rx_start "$work" rx1 -e sink --expect $((procs * writers * msgs)) \
        --writers-max $((procs * writers)) --urgent-every 4 --idle-timeout 20
    local pid_rx=$GW_PID_RX pids=()
    for p in $(seq 0 $((procs - 1))); do
        tx "tx1-$p" -e sink -w $writers -m $msgs --id-base $((p * writers)) --urgent-every 4
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    wait "$pid_rx" || fail=1

    gw_log "calls: urgent and bulk callers to one echo service"
    ip netns exec gwb "$BIN/gw-perf" echo -s /run/gridwire/beta.sock -e echo \
        >"$work/echo.json" 2>"$work/echo.err" &
    local pid_echo=$!
    gw_cleanup_push _gw_stop_pid "$pid_echo"
    gw_wait_ready "$work/echo.err" "echo ready" "$pid_echo" "echo service"
    ip netns exec gwa "$BIN/gw-perf" call -s /run/gridwire/alpha.sock -n 2 -e echo -w 64 \
        -m 500 --urgent-every 2 >"$work/call.json" 2>"$work/call.err" || fail=1
    kill -INT "$pid_echo"
    wait "$pid_echo" || true
    gw_gateways_down
    local want=$((procs * writers / 4 * msgs))
    python3 - "$work" "$want" "$1, $2 workers, $3 receivers" <<'PY' || fail=1
import json, sys
work, want, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rx = json.load(open(f"{work}/rx1.json"))
a = json.load(open(f"{work}/alpha.json"))
b = json.load(open(f"{work}/beta.json"))
call = json.load(open(f"{work}/call.json"))
bad = []
if rx["duplicates"] or rx["order_violations"] or rx["wrong_class"]:
    bad.append(f"receiver: {rx}")
# Calls: the requests of half the callers urgent, so at least that many
# urgent messages each way beyond part 1's.
if a["urgent_msgs_out"] < want or b["urgent_msgs_in"] < want:
    bad.append(f"urgent messages: alpha sent {a['urgent_msgs_out']}, beta took {b['urgent_msgs_in']}, want {want}")
if a["urgent_frames"] < 1 or a["urgent_frames"] > a["urgent_msgs_out"]:
    bad.append(f"{a['urgent_frames']} urgent frames for {a['urgent_msgs_out']} messages")
if b["urgent_msgs_out"] < 1:
    bad.append("no urgent reply left beta")
if call["ok"] != call["calls"] or call["wrong"]:
    bad.append(f"calls: {call}")
print(f"{'FAIL' if bad else 'ok'}: {what}: both classes from each sender, {rx['delivered']} delivered; "
      f"urgent {a['urgent_msgs_out']} messages in {a['urgent_frames']} frames; "
      f"calls {call['ok']} of {call['calls']} answered in their class; " + "; ".join(bad))
sys.exit(1 if bad else 0)
PY
}

classes cable 0 0

gw_log "cable: urgent beside saturating bulk, 5 % of beta's frames lost"
export GW_LINK=cable GW_WORKERS=0 GW_RECEIVERS=0
GW_ARGS_B="--set fault.drop_ppm=50000" gw_gateways_up "$work"
gw_rx_start "$work" rx-bulk -e sink --expect 1000000 --writers-max 1000 --idle-timeout 30
rxb=$GW_PID_RX
gw_rx_start "$work" rx-urgent -e alarm --urgent --expect 5000 --writers-max 1 --idle-timeout 30
rxu=$GW_PID_RX
pids=()
for p in 0 1 2 3; do
    tx "bulk$p" -e sink -w 250 -m 1000 --id-base $((p * 250))
    pids+=($!)
done
tx urgent -e alarm -w 1 -m 5000 --rate 5000 --poisson --urgent
pids+=($!)
for p in "${pids[@]}"; do wait "$p" || fail=1; done
wait "$rxb" || fail=1
wait "$rxu" || fail=1
gw_gateways_down
check "bulk under 5 % loss" "$work/rx-bulk.json" || fail=1
check "urgent under bulk and 5 % loss" "$work/rx-urgent.json" \
    "urgent_retrans=$(counter alpha urgent_retrans)" || fail=1

classes veth 2 2
exit $fail
