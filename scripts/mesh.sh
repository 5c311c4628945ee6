#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# N "hosts" on one machine, for meshes of gateways: network namespaces
# gwm1..gwmN, each with two veths mesh0 and mesh1 (MTU 9000), plugged into
# two Linux bridges (one per bond member, like two switches) in a switch
# namespace gwmsw. Every gateway reaches every other over either member.
# Bond mode 4 needs LACP from its partner, which a bridge does not speak:
# meshes use mode 2 (balance-xor, l34) instead (config/mesh.ini).
set -euo pipefail

PREFIX="${GW_MESH_PREFIX:-gwm}"
SW="${PREFIX}sw"
MTU="${GW_MTU:-9000}"

usage() {
    cat <<EOF2
usage: ${0##*/} up N | down | status

  up N     (re)create namespaces ${PREFIX}1..${PREFIX}N and the switch $SW
           (bridges br0, br1); N is 2..16
  down     kill processes left in them and delete them; never fails
  status   the links of every mesh namespace
EOF2
}

log() { printf '%s\n' "mesh: $*" >&2; }
die() { log "$*"; exit 1; }

mesh_namespaces() {
    ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^${PREFIX}([0-9]+|sw)$" || true
}

cmd_down() {
    local ns pids
    for ns in $(mesh_namespaces); do
        pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
        # shellcheck disable=SC2086
        [[ -z "${pids// /}" ]] || kill -KILL $pids 2>/dev/null || true
    done
    sleep 0.2
    for ns in $(mesh_namespaces); do
        ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
    done
}

cmd_up() {
    local n=${1:-} k m
    [[ "$n" =~ ^[0-9]+$ ]] && ((n >= 2 && n <= 16)) || die "up: N must be 2..16, got '${n}'"
    [[ $EUID -eq 0 ]] || die "must run as root"
    cmd_down
    ip netns add "$SW"
    for m in 0 1; do
        ip -n "$SW" link add "br$m" mtu "$MTU" type bridge stp_state 0 forward_delay 0
        ip -n "$SW" link set dev "br$m" up
    done
    for ((k = 1; k <= n; k++)); do
        ip netns add "$PREFIX$k"
        ip -n "$PREFIX$k" link set dev lo up
        ip netns exec "$PREFIX$k" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
            net.ipv6.conf.default.disable_ipv6=1 || true
        for m in 0 1; do
            ip -n "$PREFIX$k" link add "mesh$m" mtu "$MTU" type veth \
                peer name "n${k}m$m" netns "$SW" mtu "$MTU"
            ip -n "$SW" link set dev "n${k}m$m" master "br$m" up
            ip -n "$PREFIX$k" link set dev "mesh$m" up
        done
    done
    for ((k = 0; k < 30; k++)); do
        ip -n "$SW" -o link show type veth | grep -qv 'state UP' || break
        sleep 0.1
    done
    log "up: ${PREFIX}1..${PREFIX}$n, each mesh0 -> $SW/br0 and mesh1 -> $SW/br1, MTU $MTU"
}

cmd_status() {
    local ns
    for ns in $(mesh_namespaces); do
        printf '%s:\n' "$ns"
        ip -n "$ns" -br link show | sed 's/^/  /'
    done
}

case "${1:-}" in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
status) cmd_status ;;
-h | --help) usage ;;
*) usage >&2; exit 2 ;;
esac
