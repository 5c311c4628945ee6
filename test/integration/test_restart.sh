#!/usr/bin/env bash
# The peer gateway killed (SIGKILL) and restarted in the middle of a run.
# Nothing is lost silently and nothing hangs: every message is either
# received (the receiver drains what the old gateway had acknowledged into
# its ring, then follows the new gateway) or reported to its sender (a
# REJECT: its node was down, or the new gateway had no such endpoint yet;
# while the node is down, sends are refused at once and the sender retries).
# Frames in flight are retransmitted to the new instance. Order per sender
# holds; a message may arrive twice across the restart (its ACK died with
# the old gateway), which is counted. On both links: on the cable the
# restarted beta takes back its sockets from the dead one (stale files)
# and alpha's vhost-user ends reconnect by themselves. Once more on the
# cable with both gateways' ports parallel. A quarter of the senders send
# urgent messages throughout: both classes are in flight at the kill.
# gw-timeout: 330
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build/app
gw_workdir restart
gw_ns_up >/dev/null
export GW_URGENT_EVERY=4
fail=0
run() { # LINK [WORKERS RECEIVERS]
    export GW_LINK=$1 GW_WORKERS=${2:-0} GW_RECEIVERS=${3:-0}
    gw_log "$1 link, $GW_WORKERS workers, $GW_RECEIVERS receivers"
    gw_gateways_up "$work"

    writers=100 msgs=20000
    gw_ledger_run "$work" "$writers" "$msgs" 200000 --reconnect
    pid_rx=$GW_PID_RX pid_tx=$GW_PID_TX

    sleep 3
    gw_log "killing beta"
    kill -9 "$GW_PID_B"
    sleep 1.5 # longer than peer_timeout_ms: alpha declares it down
    gw_log "restarting beta"
    GW_PID_B=$(gw_gateway_start "$work" 1)
    gw_cleanup_push _gw_stop_pid "$GW_PID_B"
    wait "$pid_tx" || true
    wait "$pid_rx" || true

    # The other end: alpha killed with no client on it, restarted; beta
    # takes the new connection (on the cable: its virtio-user servers) and
    # a verified 100,000 messages cross.
    gw_log "killing alpha, restarting it"
    ups=$(grep -c "peer 1 (alpha) is up" "$work/beta.log")
    ups_a=$(grep -c "peer 2 (beta) is up" "$work/alpha.log")
    kill -9 "$GW_PID_A"
    sleep 1.5
    GW_PID_A=$(gw_gateway_start "$work" 0)
    gw_cleanup_push _gw_stop_pid "$GW_PID_A"
    for _ in $(seq 300); do
        (($(grep -c "peer 1 (alpha) is up" "$work/beta.log") > ups &&
            $(grep -c "peer 2 (beta) is up" "$work/alpha.log") > ups_a)) && break
        sleep 0.1
    done
    gw_rx_start "$work" rx2 -e again --expect 100000 --writers-max 10 --idle-timeout 20
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e again -w 10 \
        -m 10000 >"$work/tx2.json" 2>"$work/tx2.err" || true
    wait "$GW_PID_RX" || true
    gw_gateways_down

    python3 - "$work" $((writers * msgs)) "$1${GW_ARGS_A:+, $GW_ARGS_A}" $(gw_ledger_count "$work" $((writers * msgs))) <<'PY' || fail=1
import json, sys
work, total, missing, both = sys.argv[1], int(sys.argv[2]), int(sys.argv[4]), int(sys.argv[5])
tx = json.load(open(f"{work}/tx.json"))
rx = json.load(open(f"{work}/rx.json"))
print(f"sender: {tx}")
print(f"receiver: {rx}")
print(f"of {total}: received {rx['delivered']}, reported {tx['rejected']}, neither {missing}, "
      f"both (reported, yet received: an in-flight outcome) {both}")
bad = []
if missing: bad.append(f"{missing} messages neither received nor reported")
if rx["reordered"]: bad.append(f"{rx['reordered']} out of order")
if rx["reconnects"] < 1: bad.append("the receiver never saw the restart")
if rx["malformed"]: bad.append("malformed messages")
if rx["wrong_class"]: bad.append(f"{rx['wrong_class']} messages in the wrong class")
rx2 = json.load(open(f"{work}/rx2.json"))
tx2 = json.load(open(f"{work}/tx2.json"))
# A send in the moment before beta's receivers see the new endpoint is
# reported (REJECT) and leaves a gap in its writer's sequence; nothing may
# go missing unreported, and no gap without a report.
if (rx2["delivered"] + tx2["rejected"] != 100000 or rx2["duplicates"] or rx2["reordered"]
        or (rx2["order_violations"] and not tx2["rejected"])):
    bad.append(f"after alpha's restart: {rx2}; sender {tx2}")
print(f"FAIL: {sys.argv[3]}: " + "; ".join(bad) if bad else f"ok: {sys.argv[3]}: nothing lost silently across the restart, order kept")
sys.exit(1 if bad else 0)
PY
}
run cable
run veth
run cable 2 2
# Parallel redundancy: the same, with every frame on both cable ends.
GW_ARGS_A="--set port.kind=parallel" GW_ARGS_B="--set port.kind=parallel" run cable
exit $fail
