#!/usr/bin/env bash
# A destination that stops reading, or reads at a trickle, must not stall
# the others for long, and nothing meant for it is lost silently. One
# sender (200 writers) sends to two endpoints on beta in alternation:
# "fast" reads everything, "slow" either reads nothing for 4 s, or reads
# one message per 50 ms for 60 messages; then it reads the rest. The
# policy (chan.dest_block_ms, 100 ms): the lane waits for a full ring at
# most that long; then the channel is stopped and REJECTs go back to the
# sender until it has read its ring down to half. So: fast gets every
# message in order; slow's delivered plus the sender's rejects equal what
# was sent to slow, and some were rejected in both cases. A third run has
# the sender read nothing for 1.5 s after its last send (a starved VM):
# its channel (4,096 descriptors) cannot hold its REJECTs, its gateway
# drops the rest and counts them where the sender reads them, so it is
# told how many (GW_MSG_LOST): delivered + rejected + lost is still all.
# gw-timeout: 150
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build/app
gw_workdir slow
gw_ns_up >/dev/null

writers=200 msgs=200
half=$((writers * msgs / 2))

scenario() { # name sender-options slow-receiver-options...
    local name=$1 txopts
    read -ra txopts <<<"$2"
    shift 2
    gw_gateways_up "$work"
    gw_rx_start "$work" fast -e fast --expect "$half" --writers-max "$writers" --idle-timeout 20
    local pid_fast=$GW_PID_RX
    gw_rx_start "$work" slow -e slow --expect "$half" --writers-max "$writers" --idle-timeout 3 "$@"
    local pid_slow=$GW_PID_RX
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e fast,slow \
        -w "$writers" -m "$msgs" --linger-ms 2000 "${txopts[@]}" >"$work/tx.json" 2>"$work/tx.err" || true
    wait "$pid_fast" || true
    wait "$pid_slow" || true
    gw_gateways_down
    python3 - "$work" "$half" "$name" <<'PY'
import json, sys
work, half, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tx = json.load(open(f"{work}/tx.json"))
fast = json.load(open(f"{work}/fast.json"))
slow = json.load(open(f"{work}/slow.json"))
beta = json.load(open(f"{work}/beta.json"))
alpha = json.load(open(f"{work}/alpha.json"))
print(f"{name}: sender {tx}")
print(f"{name}: fast {fast}")
print(f"{name}: slow {slow}")
print(f"{name}: beta reject_dest_full {beta['reject_dest_full']} rejects_sent {beta['rejects_sent']}")
bad = []
if fast["delivered"] != half or fast["duplicates"] or fast["order_violations"]:
    bad.append("the fast destination did not get all its messages once and in order")
if slow["duplicates"]:
    bad.append("duplicates at the slow destination")
if tx["rejected"] == 0 or beta["reject_dest_full"] == 0:
    bad.append("no message was rejected although a destination fell behind")
if slow["delivered"] + tx["rejected"] + tx["lost"] != half:
    bad.append(f"slow: delivered {slow['delivered']} + rejected {tx['rejected']} + lost {tx['lost']} != sent {half}")
if alpha["rejects_lost"] != tx["lost"] or alpha["rejects_lost_told"] != tx["lost"]:
    bad.append(f"alpha dropped {alpha['rejects_lost']} REJECTs and counted {alpha['rejects_lost_told']} to the sender, which was told of {tx['lost']}")
if name == "deaf-sender" and tx["lost"] == 0:
    bad.append("the sender read nothing for 1.5 s, yet no REJECT was dropped: the case did not happen")
print(f"{name}: " + ("FAIL: " + "; ".join(bad) if bad else "ok: nothing lost silently, the fast destination kept flowing"))
sys.exit(1 if bad else 0)
PY
}

scenario stopped "" --stall-s 4
scenario trickling "" --delay-ms 50 --delay-count 60
scenario deaf-sender "--deaf-ms 1500" --stall-s 4
