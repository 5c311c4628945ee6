#!/usr/bin/env bash
# A bond member lost and coming back in the middle of a run, on both links:
# no message lost, and traffic moves to the other member. A paced run (2
# senders x 250,000 msg/s, about 40 s) crosses the bond; the member
# carrying it is lost, traffic must appear on the other one; it comes back;
# then the other member is lost and traffic must come back to the first,
# which proves it rejoined the bond (LACP agreed again). On the veths a
# member is lost from outside (ip link set down: both kernels see the
# carrier go). The cable has no kernel interface: alpha's operator command
# unplugs one end (gwctl member N down closes the vhost-user device), beta
# sees its virtio-user end lose the connection, and plugging it in again
# (gwctl member N up) reconnects it. Every message is verified.
# gw-timeout: 300
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
gw_workdir member
out=$work/pair.out
gw_ns_up >/dev/null
fail=0

# tx N: packets alpha's member N has sent (its gateway counts them).
tx() {
    gw_port_field alpha "member$1_tx_packets"
}
# wait_moving N: true once member N sends 1,000 more frames, within 15 s.
wait_moving() {
    local start
    start=$(tx "$1")
    for _ in $(seq 75); do
        (($(tx "$1") > start + 1000)) && return 0
        sleep 0.2
    done
    return 1
}

# in_service N: alpha's and beta's member N distributing (bond mode 4:
# LACP agreed), within 60 s.
in_service() {
    local t
    for t in $(seq 300); do
        if [[ $(gw_port_field alpha "member$1_in_service") == 1 &&
            $(gw_port_field beta "member$1_in_service") == 1 ]]; then
            gw_log "member $1 in service at both ends after $((t / 5)) s"
            return 0
        fi
        sleep 0.2
    done
    return 1
}

for link in cable veth; do
    export GW_LINK=$link
    # 40 s: the flips, waits for LACP included, take 15-30 s, and on a slow
    # day a 20 s run ended before the last of them (its gateways gone, the
    # checks failed against nothing).
    gw_pair_bg "$out" --procs 2 --writers 250 --msgs 40000 --rate 250000
    pair=$GW_PID_PAIR
    # Wait for the data to flow, then find the member carrying it.
    busy=
    for _ in $(seq 60); do
        kill -0 "$pair" 2>/dev/null || { cat "$out"; gw_die "the run ended before traffic was seen"; }
        a0=$(tx 0) a1=$(tx 1)
        sleep 0.5
        d0=$(($(tx 0) - a0)) d1=$(($(tx 1) - a1))
        if ((d0 > 1000 || d1 > 1000)); then
            if ((d0 > d1)); then busy=0 other=1; else busy=1 other=0; fi
            break
        fi
    done
    [[ -n $busy ]] || gw_die "$link: no traffic seen in 30 s"
    gw_check "$link: member $busy taken down" gw_member $link $busy down
    gw_check "$link: member $busy lost, traffic moved to member $other" wait_moving $other
    gw_check "$link: member $busy brought back" gw_member $link $busy up
    # Reconnected (the cable's client retries every second), then LACP
    # agreed again on both ends (about 3 s on a quiet machine; a fixed
    # wait of 6 s was not enough on a slow day).
    gw_check "$link: member $busy in service again at both ends" in_service $busy
    gw_check "$link: member $other taken down" gw_member $link $other down
    gw_check "$link: member $other lost, traffic came back to member $busy, which rejoined" wait_moving $busy
    gw_check "$link: member $other brought back" gw_member $link $other up
    gw_check "$link: the run lasted through the flips" kill -0 "$pair"
    wait "$pair" || true
    tail -4 "$out"
    python3 - "$(tail -1 "$out")" "$link" <<'PY' || fail=1
import json, sys
js, link = json.loads(sys.argv[1]), sys.argv[2]
bad = [w for w, c in (("messages lost", js["delivered"] != js["sent"]),
                      ("duplicates", js["duplicates"]), ("order violations", js["order_violations"]),
                      ("a sender failed", js["sender_failed"])) if c]
print(f"FAIL: {link}: " + ", ".join(bad) if bad else f"ok: {link}: all {js['sent']} messages once and in order, {js['retrans']} retransmissions")
sys.exit(1 if bad else 0)
PY
done
exit $fail
