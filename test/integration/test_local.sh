#!/usr/bin/env bash
# Messages to endpoints on the sender's own node never touch the wire but
# follow the same rules: 3 sender processes and a receiver all on alpha,
# every message once and in per-sender order; a message to an endpoint
# nobody registered comes back to its sender as a REJECT (-ENOENT). A
# third of the writers send urgent messages: they go through the same
# loopback ring, in their class. Run in both lcore layouts: everything
# on one lcore, and a worker lcore.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build/app
gw_workdir local
gw_ns_up >/dev/null

run() { # workers
    export GW_WORKERS=$1
    gw_gateways_up "$work"
    ip netns exec gwa "$BIN/gw-perf" rx -s /run/gridwire/alpha.sock -e here --expect 300000 \
        --writers-max 300 --idle-timeout 20 --urgent-every 3 >"$work/rx.json" 2>"$work/rx.err" &
    local rx=$!
    for _ in $(seq 100); do grep -q "rx ready" "$work/rx.err" && break; sleep 0.1; done
    local p pids=()
    for p in 0 1 2; do
        ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 1 -e here \
            -w 100 -m 1000 --id-base $((p * 100)) --urgent-every 3 >"$work/tx$p.json" \
            2>"$work/tx$p.err" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || { cat "$work"/tx*.err >&2; gw_die "a local sender failed"; }; done
    wait "$rx" || true
    # One message to nobody: the sender hears about it.
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 1 -e nobody -w 1 -m 1 \
        --linger-ms 500 >"$work/nobody.json" 2>"$work/nobody.err" || true
    gw_gateways_down
    python3 - "$work" "$1" <<'PY'
import json, sys
work, workers = sys.argv[1], sys.argv[2]
rx = json.load(open(f"{work}/rx.json"))
nobody = json.load(open(f"{work}/nobody.json"))
alpha = json.load(open(f"{work}/alpha.json"))
print(f"workers={workers}: receiver {rx}; to nobody {nobody}; alpha msgs_local {alpha['msgs_local']} data_frames_tx {alpha['data_frames_tx']}")
ok = (rx["delivered"] == 300000 and not rx["duplicates"] and not rx["order_violations"]
      and not rx["wrong_class"]
      and nobody["rejected"] == 1 and "No such file" in open(f"{work}/nobody.err").read()
      and alpha["msgs_local"] >= 300001)
print("ok" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
}
run 0
run 1
