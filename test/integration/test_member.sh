#!/usr/bin/env bash
# A bond member going down and coming back in the middle of a run: no
# message lost, and traffic moves to the other member. A paced run (2
# senders x 250,000 msg/s, about 12 s) crosses the bonded pair; the member
# carrying it is taken down, traffic must appear on the other one; it comes
# back; then the other member goes down and traffic must come back to the
# first, which proves it rejoined the bond. Every message is verified.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
out=$(mktemp /tmp/gridwire-member.XXXXXX)
gw_cleanup_push rm -f "$out"
gw_ns_up >/dev/null
gw_pair_bg "$out" --procs 2 --writers 250 --msgs 20000 --rate 250000
pair=$GW_PID_PAIR

tx() { ip netns exec gwa cat "/sys/class/net/$1/statistics/tx_packets"; }
# wait_moving IFACE: true once IFACE sends 1,000 more frames, within 10 s.
wait_moving() {
    local start
    start=$(tx "$1")
    for _ in $(seq 50); do
        (($(tx "$1") > start + 1000)) && return 0
        sleep 0.2
    done
    return 1
}

# Wait for the data to flow, then find the member carrying it.
busy=
for _ in $(seq 60); do
    kill -0 "$pair" 2>/dev/null || { cat "$out"; gw_die "the run ended before traffic was seen"; }
    a0=$(tx veth-a0) a1=$(tx veth-a1)
    sleep 0.5
    d0=$(($(tx veth-a0) - a0)) d1=$(($(tx veth-a1) - a1))
    if ((d0 > 1000 || d1 > 1000)); then
        if ((d0 > d1)); then busy=veth-a0 other=veth-a1; else busy=veth-a1 other=veth-a0; fi
        break
    fi
done
[[ -n $busy ]] || gw_die "no traffic seen in 30 s"
fail=0
step() { # description command...
    local what=$1
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
ip netns exec gwa ip link set "$busy" down
step "$busy down: traffic moved to $other" wait_moving "$other"
ip netns exec gwa ip link set "$busy" up
sleep 5 # LACP agrees again on the returning member (about 3 s)
ip netns exec gwa ip link set "$other" down
step "$other down: traffic came back to $busy, which rejoined the bond" wait_moving "$busy"
ip netns exec gwa ip link set "$other" up
wait "$pair" || true
tail -4 "$out"
js=$(tail -1 "$out")
python3 - "$js" <<'PY' || fail=1
import json, sys
js = json.loads(sys.argv[1])
bad = [w for w, c in (("messages lost", js["delivered"] != js["sent"]),
                      ("duplicates", js["duplicates"]), ("order violations", js["order_violations"]),
                      ("a sender failed", js["sender_failed"])) if c]
print("FAIL: " + ", ".join(bad) if bad else f"ok: all {js['sent']} messages once and in order, {js['retrans']} retransmissions")
sys.exit(1 if bad else 0)
PY
exit $fail
