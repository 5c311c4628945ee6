#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Two "hosts" on one machine: network namespaces $GW_NS_A (gwa) and $GW_NS_B
# (gwb) joined by veth pairs veth-aN <-> veth-bN at MTU 9000, for DPDK
# net_af_packet ports.  See usage() below and doc notes in
# /work/shared/notes/machine.md (MTU trap, XDP loss injection).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
NS_A="${GW_NS_A:-gwa}"
NS_B="${GW_NS_B:-gwb}"
MTU="${GW_MTU:-9000}"
XDP_SRC="$ROOT/scripts/xdp_drop.c"
XDP_DIR="${GW_BUILD_DIR:-$ROOT/build}"
SELFTEST_A=198.18.99.1
SELFTEST_B=198.18.99.2

usage() {
    cat <<EOF
usage: ${0##*/} COMMAND [ARGS]

  up [N]                 (re)create namespaces $NS_A and $NS_B joined by N veth
                         pairs (default 2): veth-aI in $NS_A <-> veth-bI in $NS_B,
                         MTU $MTU, up, IPv6 off, loopback up; tears down leftovers first
  down                   kill processes left in the namespaces, detach XDP,
                         delete both namespaces (and so the veths); never fails
  status                 interfaces of both namespaces with MTU, state and XDP;
                         exit 1 if a namespace is missing
  drop IFACE PERMILLE    attach scripts/xdp_drop.c to IFACE (in whichever of the
                         two namespaces holds it) dropping PERMILLE/1000 of
                         received frames at random; PERMILLE 0 detaches
  fixmtu NS [IFACE...]   set MTU $MTU again (after DPDK started a port it is 1500);
                         no IFACE: every veth in NS
  selftest [PERMILLE] [COUNT]
                         prove the drop works: temporary addresses on
                         veth-a0/veth-b0, ping -s 8000 COUNT times (default 200)
                         with PERMILLE (default 100) dropped, then with none

environment: GW_NS_A, GW_NS_B (namespace names), GW_MTU (default 9000),
             GW_XDP_MODE (xdpdrv|xdpgeneric; default: try xdpdrv, then xdpgeneric)
EOF
}

log() { printf '%s\n' "netns: $*" >&2; }
die() { log "$*"; exit 1; }

need_root() {
    [[ $EUID -eq 0 ]] || die "must run as root"
}

ns_exists() {
    [[ -e "/run/netns/$1" ]]
}

# Veth names in a namespace, one per line (the "@peer" suffix removed).
ns_veths() {
    ip -n "$1" -o link show type veth 2>/dev/null |
        awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'
}

xdp_detach() {  # NS IFACE
    ip -n "$1" link set dev "$2" xdpgeneric off 2>/dev/null || true
    ip -n "$1" link set dev "$2" xdpdrv off 2>/dev/null || true
}

ns_kill_pids() {
    local ns=$1 pids i
    pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')" || true
    [[ -n "${pids// /}" ]] || return 0
    log "killing processes left in $ns: $pids"
    # shellcheck disable=SC2086  # word splitting of the pid list is wanted
    kill -TERM $pids 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
        pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')" || true
        [[ -n "${pids// /}" ]] || return 0
        sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
}

ns_delete() {
    local ns=$1 dev
    ns_exists "$ns" || return 0
    while read -r dev; do
        [[ -n "$dev" ]] && xdp_detach "$ns" "$dev"
    done < <(ns_veths "$ns")
    ns_kill_pids "$ns"
    ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
}

cmd_down() {
    need_root
    ns_delete "$NS_A"
    ns_delete "$NS_B"
    return 0
}

cmd_up() {
    local n=${1:-2} i ns
    if ! [[ "$n" =~ ^[0-9]+$ ]] || ((10#$n < 1 || 10#$n > 16)); then
        die "up: N must be 1..16, got '$n'"
    fi
    n=$((10#$n))
    need_root
    [[ "$NS_A" != "$NS_B" ]] || die "GW_NS_A and GW_NS_B must differ"
    cmd_down
    ip netns add "$NS_A"
    ip netns add "$NS_B"
    for ns in "$NS_A" "$NS_B"; do
        ip -n "$ns" link set dev lo up
        # Before the veths exist, so they never get an IPv6 link-local
        # address (no router solicitations on the DPDK ports).
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
            net.ipv6.conf.default.disable_ipv6=1 ||
            log "could not disable IPv6 in $ns (continuing)"
    done
    for ((i = 0; i < n; i++)); do
        # Created inside the namespaces: no name clash with the root one.
        ip -n "$NS_A" link add "veth-a$i" mtu "$MTU" type veth \
            peer name "veth-b$i" netns "$NS_B" mtu "$MTU"
        ip -n "$NS_A" link set dev "veth-a$i" up
        ip -n "$NS_B" link set dev "veth-b$i" up
    done
    # Carrier comes up asynchronously: wait (up to 3 s) so callers can use
    # the links at once.
    for ((i = 0; i < 30; i++)); do
        if ! ip -n "$NS_A" -o link show type veth | grep -qv 'state UP' &&
            ! ip -n "$NS_B" -o link show type veth | grep -qv 'state UP'; then
            break
        fi
        sleep 0.1
    done
    log "up: $NS_A/veth-a[0-$((n - 1))] <-> $NS_B/veth-b[0-$((n - 1))], MTU $MTU"
}

cmd_status() {
    local ns rc=0
    for ns in "$NS_A" "$NS_B"; do
        if ! ns_exists "$ns"; then
            printf '%s: absent\n' "$ns"
            rc=1
            continue
        fi
        printf '%s:\n' "$ns"
        ip -n "$ns" -o link show | awk '
            {
                name = $2; sub(/:$/, "", name); sub(/@.*/, "", name)
                mtu = "?"; state = "?"; xdp = "-"; prog = ""
                for (i = 3; i <= NF; i++) {
                    if ($i == "mtu") mtu = $(i + 1)
                    else if ($i == "state") state = $(i + 1)
                    else if (xdp == "-" && $i ~ /^xdp(generic|offload|multi)?$/) xdp = $i
                    else if ($i ~ /^prog\/xdp/ && $(i + 3) == "name") prog = $(i + 4)
                }
                if (prog != "") xdp = xdp "(" prog ")"
                printf "  %-12s mtu %-6s %-8s xdp %s\n", name, mtu, state, xdp
            }'
    done
    return "$rc"
}

# Which of our namespaces holds IFACE (never the root namespace: the
# machine's own NIC is not ours to touch).
iface_ns() {
    local ns
    for ns in "$NS_A" "$NS_B"; do
        if ns_exists "$ns" && ip -n "$ns" link show dev "$1" >/dev/null 2>&1; then
            printf '%s\n' "$ns"
            return 0
        fi
    done
    return 1
}

xdp_object() {  # PERMILLE -> path of the compiled object
    local p=$1 obj tmp
    obj="$XDP_DIR/xdp_drop_$p.o"
    if [[ ! -f "$obj" || "$XDP_SRC" -nt "$obj" ]]; then
        command -v clang >/dev/null || die "clang is missing (run: scripts/gw deps)"
        [[ -f /usr/include/bpf/bpf_helpers.h ]] ||
            die "bpf/bpf_helpers.h is missing (run: scripts/gw deps; needs libbpf-dev)"
        mkdir -p "$XDP_DIR"
        tmp="$(mktemp "$XDP_DIR/.xdp_drop_$p.XXXXXX")"
        if ! clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
            -DDROP_PERMILLE="$p" -c "$XDP_SRC" -o "$tmp"; then
            rm -f "$tmp"
            die "compiling $XDP_SRC failed"
        fi
        mv -f "$tmp" "$obj"  # atomic: concurrent callers never see half a file
    fi
    printf '%s\n' "$obj"
}

cmd_drop() {
    (($# == 2)) || die "usage: drop IFACE PERMILLE"
    local dev=$1 p=$2 ns obj mode err
    if ! [[ "$p" =~ ^[0-9]+$ ]] || ((10#$p > 1000)); then
        die "drop: PERMILLE must be 0..1000, got '$p'"
    fi
    p=$((10#$p))
    need_root
    ns="$(iface_ns "$dev")" || die "drop: no interface $dev in $NS_A or $NS_B"
    xdp_detach "$ns" "$dev"
    if ((p == 0)); then
        log "drop: $ns/$dev: XDP detached"
        return 0
    fi
    obj="$(xdp_object "$p")"
    for mode in ${GW_XDP_MODE:-xdpdrv xdpgeneric}; do
        if err="$(ip -n "$ns" link set dev "$dev" "$mode" obj "$obj" sec xdp.frags 2>&1)"; then
            log "drop: $ns/$dev: dropping $p/1000 of received frames ($mode)"
            return 0
        fi
        log "drop: $mode attach on $ns/$dev failed: ${err//$'\n'/ }"
    done
    die "drop: could not attach $obj to $ns/$dev"
}

cmd_fixmtu() {
    (($# >= 1)) || die "usage: fixmtu NS [IFACE...]"
    local ns=$1 dev
    shift
    need_root
    ns_exists "$ns" || die "fixmtu: no namespace $ns"
    if (($# == 0)); then
        mapfile -t devs < <(ns_veths "$ns")
        set -- "${devs[@]}"
    fi
    for dev in "$@"; do
        ip -n "$ns" link set dev "$dev" mtu "$MTU"
    done
}

# Loss over ping with PERMILLE dropped on veth-b0, and with none. Prints
# "<permille> <sent> <received> <loss%>" lines. Addresses are temporary and
# only ever inside the two namespaces (198.18.99.0/30, benchmarking range).
cmd_selftest() {
    local p=${1:-100} count=${2:-200} a=$SELFTEST_A b=$SELFTEST_B out sent recv ns pm
    [[ "$p" =~ ^[0-9]+$ && "$count" =~ ^[0-9]+$ ]] || die "usage: selftest [PERMILLE] [COUNT]"
    need_root
    for ns in "$NS_A" "$NS_B"; do
        ns_exists "$ns" || die "selftest: run '${0##*/} up' first"
    done
    # shellcheck disable=SC2317  # invoked through trap
    _selftest_cleanup() {
        xdp_detach "$NS_B" veth-b0
        ip -n "$NS_A" addr del "$SELFTEST_A/30" dev veth-a0 2>/dev/null || true
        ip -n "$NS_B" addr del "$SELFTEST_B/30" dev veth-b0 2>/dev/null || true
    }
    trap _selftest_cleanup EXIT
    ip -n "$NS_A" addr replace "$a/30" dev veth-a0
    ip -n "$NS_B" addr replace "$b/30" dev veth-b0
    ip netns exec "$NS_A" ping -q -c 3 -i 0.2 -W 1 "$b" >/dev/null ||
        die "selftest: no connectivity $NS_A -> $NS_B before any drop"
    for pm in "$p" 0; do
        cmd_drop veth-b0 "$pm"
        out="$(ip netns exec "$NS_A" ping -q -c "$count" -i 0.005 -W 1 -s 8000 "$b" 2>&1 || true)"
        read -r sent recv < <(awk '/packets transmitted/ { print $1, $4 }' <<<"$out")
        [[ -n "${sent:-}" ]] || die "selftest: unexpected ping output: $out"
        awk -v p="$pm" -v s="$sent" -v r="$recv" \
            'BEGIN { printf "permille %d: %d sent, %d received, %.1f%% lost\n", p, s, r, 100 * (s - r) / s }'
    done
}

main() {
    local cmd=${1:-}
    (($# > 0)) && shift
    case "$cmd" in
    up) cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    drop) cmd_drop "$@" ;;
    fixmtu) cmd_fixmtu "$@" ;;
    selftest) cmd_selftest "$@" ;;
    -h | --help | help | "") usage ;;
    *)
        log "unknown command '$cmd' (valid: up down status drop fixmtu selftest)"
        exit 2
        ;;
    esac
}

main "$@"
