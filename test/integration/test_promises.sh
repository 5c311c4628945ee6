#!/usr/bin/env bash
# What a send promises, against real gateways on the cable.
# Registered means reachable: 500 times a client of beta (2 workers and 2
# receiver lcores each, so the directory is published across lcores) registers
# a new name and a client of alpha sends to it the moment that returns:
# every message arrives, none is refused as unknown (-ENOENT).
# A gateway SIGKILLed under 32 sending threads (each its own client, sends
# of 8 to 8,192 bytes to beta's endpoint over the cable): no send is
# accepted once any client has heard the gateway is gone, gw_node_up
# says the peer is down, and every send accepted before either arrived at
# beta (once, in order) or came back to its sender as a REJECT, those in
# doubt with -EPIPE. Beta holds a full destination for 60 s here instead
# of refusing it after 100 ms: a REJECT on its way back to a gateway that
# died is the one word that cannot reach a sender (doc/api.md).
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
CHECK=$ROOT/build/test/gw-promise-check
[[ -x $CHECK ]] || gw_die "no $CHECK: ./scripts/gw build"
gw_workdir promises
gw_ns_up >/dev/null

# Registered means reachable, both gateways pooled.
GW_WORKERS=2 GW_RECEIVERS=2 gw_gateways_up "$work"
if out=$(ip netns exec gwa "$CHECK" register -s /run/gridwire/alpha.sock -n 2 \
    --at /run/gridwire/beta.sock -w 500 2>&1); then
    echo "ok: registered means reachable: $out"
else
    echo "FAIL: registered means reachable: $out"
    exit 1
fi
gw_gateways_down

GW_ARGS_B="--set chan.dest_block_ms=60000" gw_gateways_up "$work"

ip netns exec gwb "$CHECK" rx -s /run/gridwire/beta.sock -e sink -o "$work/rx.out" \
    >"$work/rx.err" 2>&1 &
pid_rx=$!
gw_cleanup_push _gw_stop_pid "$pid_rx"
gw_wait_ready "$work/rx.err" "rx ready" "$pid_rx" "the receiver"
ip netns exec gwa "$CHECK" tx -s /run/gridwire/alpha.sock -n 2 -e sink -w 32 -o "$work/tx.out" \
    >"$work/tx.err" 2>&1 &
pid_tx=$!
gw_cleanup_push _gw_stop_pid "$pid_tx"
gw_wait_ready "$work/tx.err" "tx started" "$pid_tx" "the senders"
sleep 2
gw_log "SIGKILL to alpha's gateway under 32 sending threads"
kill -9 "$GW_PID_A"
wait "$pid_tx" || { cat "$work/tx.err" >&2; gw_die "the senders failed"; }
wait "$pid_rx" || { cat "$work/rx.err" >&2; gw_die "the receiver failed"; }
gw_gateways_down

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def load(name):
    with open(f"{work}/{name}", "rb") as f:
        head = json.loads(f.readline())
        return head, f.read()
tx, tx_maps = load("tx.out")
rx, rx_maps = load("rx.out")
bad, lost, doubt_arrived = [], 0, 0
got_off = rej_off = 0
for w, acc in enumerate(tx["accepted"]):
    top = rx["top"][w]
    got = rx_maps[got_off:got_off + (top + 7) // 8]
    rej = tx_maps[rej_off:rej_off + (acc + 7) // 8]
    got_off += (top + 7) // 8
    rej_off += (acc + 7) // 8
    if top > acc:
        bad.append(f"writer {w}: beta got seq {top - 1}, only {acc} accepted")
    for s in range(acc):
        g = s < top and got[s // 8] >> (s % 8) & 1
        r = rej[s // 8] >> (s % 8) & 1
        lost += not g and not r
        doubt_arrived += bool(g and r)
delivered = rx["received"]
if lost: bad.append(f"{lost} accepted sends neither delivered nor reported")
if tx["accepted_after_known"]: bad.append(f"{tx['accepted_after_known']} sends accepted after -EPIPE")
if rx["out_of_order"]: bad.append(f"{rx['out_of_order']} out of order at beta")
if rx["malformed"] or tx["bad_rejects"]: bad.append("malformed messages or REJECTs")
if tx["rejects_epipe"] == 0: bad.append("no send was in doubt: the kill came after the senders")
if delivered == 0: bad.append("nothing was delivered before the kill")
print(f"{'FAIL: ' + '; '.join(bad) if bad else 'ok'}: {tx['accepted_total']} sends accepted, "
      f"{delivered} delivered, {tx['rejects_epipe']} told -EPIPE "
      f"({doubt_arrived} of them had arrived), {tx['rejects_other']} other REJECTs, "
      f"{lost} lost, {tx['accepted_after_known']} accepted after -EPIPE "
      f"(gw_unconfirmed at -EPIPE: {tx['unconfirmed_at_epipe']})")
sys.exit(1 if bad else 0)
PY
