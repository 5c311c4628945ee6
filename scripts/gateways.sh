#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Two long-lived gateways to point clients at: alpha (node 1) in namespace
# gwa and beta (node 2) in gwb, joined by the kernel-bypass cable (or the
# veths), as the demo runs them, but left running until `down`.
#
#   gateways.sh up [--link cable|veth]   start both (namespaces too); wait until
#                                         they see each other; print how to use them
#   gateways.sh status                    running or not, and each one's peers
#   gateways.sh down                      stop both (SIGINT: they flush and write
#                                         their counters), remove the namespaces
#
# Clients run in a gateway's namespace and connect to its socket:
#   ip netns exec gwa APP   ->  /run/gridwire/alpha.sock  (node 1)
#   ip netns exec gwb APP   ->  /run/gridwire/beta.sock   (node 2)
# Logs and counters: /run/gridwire/gateways/{alpha,beta}.{log,json}.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
DIR=/run/gridwire/gateways

running() { # NAME: its pid, if it runs
    local pid
    pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
    gw_alive "$pid" && echo "$pid"
}

cmd_up() {
    case "${1:-}" in
    "") ;;
    --link) export GW_LINK=${2:-} && gw_link >/dev/null ;;
    *) gw_die "usage: gateways.sh up [--link cable|veth]" ;;
    esac
    if running alpha >/dev/null || running beta >/dev/null; then
        gw_die "the gateways run already (./scripts/gw gateways status; down to stop them)"
    fi
    [[ -x $ROOT/build/app/gridwired ]] || gw_die "no build/app/gridwired: ./scripts/gw build"
    mkdir -p "$DIR"
    "$ROOT/scripts/netns.sh" up >/dev/null
    : >"$DIR/alpha.log"
    : >"$DIR/beta.log"
    # Beta first: on the cable it owns the sockets alpha connects to.
    gw_gateway_start "$DIR" 1 >"$DIR/beta.pid"
    gw_gateway_start "$DIR" 0 >"$DIR/alpha.pid"
    for _ in $(seq 300); do
        if gw_peer_up "$DIR/alpha.log" && gw_peer_up "$DIR/beta.log"; then
            echo "gateways: alpha (node 1, netns gwa, /run/gridwire/alpha.sock) and" \
                "beta (node 2, netns gwb, /run/gridwire/beta.sock) up on the $(gw_link)"
            echo "  a client: ip netns exec gwa APP (connects to /run/gridwire/alpha.sock)"
            echo "  logs and counters: $DIR; stop: ./scripts/gw gateways down"
            return 0
        fi
        running alpha >/dev/null && running beta >/dev/null && { sleep 0.1; continue; }
        cat "$DIR/alpha.log" "$DIR/beta.log" >&2
        cmd_down >/dev/null
        gw_die "a gateway did not start (its log is above)"
    done
    cmd_down >/dev/null
    gw_die "the gateways did not find each other in 30 s (logs: $DIR)"
}

cmd_status() {
    local name pid rc=0
    for name in alpha beta; do
        if pid=$(running "$name"); then
            echo "$name: running (pid $pid)"
            "$ROOT/app/gwctl/gwctl" -n "$name" peers 2>&1 | sed 's/^/  /' || true
        else
            echo "$name: not running"
            rc=1
        fi
    done
    return "$rc"
}

cmd_down() {
    local name pid
    for name in alpha beta; do
        pid=$(running "$name") || continue
        kill -INT "$pid"
        for _ in $(seq 50); do
            gw_alive "$pid" || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$DIR/$name.pid"
    done
    "$ROOT/scripts/netns.sh" down >/dev/null 2>&1 || true
    echo "gateways: down (logs and counters kept in $DIR)"
}

case "${1:-}" in
up) shift && cmd_up "$@" ;;
status) cmd_status ;;
down) cmd_down ;;
*) gw_die "usage: gateways.sh up [--link cable|veth] | status | down" ;;
esac
