#!/usr/bin/env bash
# A client that writes garbage into its own shared-memory channel (an
# impossible descriptor, an impossible ring position, random bytes over the
# whole region) is cut off, and only it: a steady verified flow between
# two other clients runs on, and the gateway counts each cut-off.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
gw_workdir evil
gw_ns_up >/dev/null
gw_gateways_up "$work"

gw_rx_start "$work" rx -e sink --expect 200000 --writers-max 10 --idle-timeout 20
pid_rx=$GW_PID_RX
ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e sink -w 10 -m 20000 \
    --rate 50000 >"$work/tx.json" 2>"$work/tx.err" &
pid_tx=$!
fail=0
sleep 1
for mode in desc ring scribble; do
    ip netns exec gwa "$ROOT/build/test/gw-evil" /run/gridwire/alpha.sock "$mode" || fail=1
done
wait "$pid_tx" || true
wait "$pid_rx" || true
gw_gateways_down
python3 - "$work" <<'PY' || fail=1
import json, sys
work = sys.argv[1]
rx = json.load(open(f"{work}/rx.json"))
alpha = json.load(open(f"{work}/alpha.json"))
bad = []
if rx["delivered"] != 200000 or rx["duplicates"] or rx["order_violations"]:
    bad.append(f"the steady flow was disturbed: {rx}")
if alpha["clients_broken"] != 3:
    bad.append(f"clients_broken is {alpha['clients_broken']}, not 3")
print("FAIL: " + "; ".join(bad) if bad else
      f"ok: 3 bad clients cut off (clients_broken {alpha['clients_broken']}), steady flow intact: {rx}")
sys.exit(1 if bad else 0)
PY
exit $fail
