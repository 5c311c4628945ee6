#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The call API at work: app/gw-kv (a replicated key-value store) across a
# mesh of three gateways. Writes go to every node (gw_call_all), reads to
# whichever answers first (gw_call_any); then one gateway is killed and the
# store keeps working, unless asked to be strict about unreachable nodes.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=$(gw_root)/build/app
gw_workdir example
gw_log "starting three gateways n1, n2, n3 (namespaces gwm1..3 on two bridges)"
gw_mesh_up "$work" 3 >/dev/null 2>&1
for k in 1 2 3; do
    ip netns exec "gwm$k" "$BIN/gw-kv" -s "/run/gridwire/n$k.sock" serve 2>>"$work/kv.err" &
    gw_cleanup_push _gw_stop_pid $!
done
for _ in $(seq 50); do
    (($(grep -c serving "$work/kv.err" 2>/dev/null) == 3)) && break
    sleep 0.1
done
kv() { # on node 1
    echo "\$ gw-kv $*"
    ip netns exec gwm1 "$BIN/gw-kv" -s /run/gridwire/n1.sock "$@" || true
    echo
}
kv nodes
kv put --nodes 1,2,3 breaker-17 open
kv get --nodes 3,2 breaker-17
kv get --nodes 2,3 no-such-key
gw_log "killing gateway n3"
{ kill -9 "${GW_MESH_PID[3]}" && wait "${GW_MESH_PID[3]}"; } 2>/dev/null || true
sleep 1.5 # proto.peer_timeout_ms: n1 declares n3 down
kv nodes
kv get --nodes 3,2 breaker-17
kv put --nodes 1,2,3 breaker-17 closed
kv put --nodes 1,2,3 breaker-17 closed --strict
