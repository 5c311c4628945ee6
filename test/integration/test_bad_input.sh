#!/usr/bin/env bash
# Bad input harms nothing. (1) Bad command lines and configs: one clear
# line naming what is wrong, exit 2, nothing started (no socket); a
# second ./scripts/gw test while one runs: one line, nothing run. (2) Ports
# that cannot be opened (no such interface, no such PCI device, a cable
# socket another process listens on, hugepages that are not there, an MTU
# the device cannot take): after EAL's own lines, one line of gridwired's
# naming the member or key and the fix, exit 2, nothing left behind. (3)
# Thousands of malformed frames fired at beta from outside (random bytes,
# truncations, junk to the gridwire port, frames from a node nobody
# configured, bad CRCs) during a verified run on the veths: beta keeps
# running, counts what it refused, and every message of the run still
# arrives once, in order.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
GWD=$ROOT/build/app/gridwired
gw_workdir bad
fail=0

# refuse WANT ARGS...: before EAL, so the line is all there is.
# refuse_port NS WANT ARGS...: in namespace NS, after EAL started: its lines
# come first, then gridwired's only line, the last.
refuse() {
    refuse_in "" 1 "$@"
}
refuse_port() {
    refuse_in "$1" 0 "${@:2}"
}
refuse_in() { # NS ONLY_LINE WANT ARGS...
    local ns=$1 only=$2 want=$3 out rc=0 ours run=()
    shift 3
    [[ -n $ns ]] && run=(ip netns exec "$ns")
    out=$("${run[@]}" "$GWD" "$@" --set "node.socket=$work/never.sock" 2>&1 >/dev/null) || rc=$?
    ours=$(printf '%s\n' "$out" | grep -c '^gridwired: ' || true)
    local last=${out##*$'\n'}
    if ((rc == 2 && ours == 1)) && [[ $last == "gridwired: "*"$want"* && ! -e $work/never.sock ]] &&
        { ((!only)) || [[ $out == "$last" ]]; } && [[ -z $ns || -z $(ip netns pids "$ns") ]]; then
        echo "ok: refused ($rc): $last"
    else
        echo "FAIL: gridwired $* -> exit $rc, output: $out"
        fail=1
    fi
}
printf '[port]\nmtu = 12000\n' >"$work/mtu.ini"
printf '[port]\nmtuu = 9000\n' >"$work/typo.ini"
printf '[node]\nid = 1\npeers = 1\n' >"$work/self.ini"
printf 'just words\n' >"$work/words.ini"
refuse "unknown or incomplete argument" --frobnicate
# A second test run while one holds the lock (here a lock of our own, so
# that this holds whether or not the suite runs us): refused at once, in
# one line, before it builds or tears anything down.
exec {lockfd}>"$work/test.lock"
flock -n "$lockfd"
rc=0
out=$(GW_TEST_LOCK=$work/test.lock GW_TEST_LOCKED='' "$ROOT/scripts/gw" test integration docs 2>&1) || rc=$?
exec {lockfd}>&-
if ((rc == 1)) && [[ $out == *"FATAL: another ./scripts/gw test is running"* && $(wc -l <<<"$out") == 1 ]]; then
    echo "ok: refused ($rc): $out"
else
    echo "FAIL: a second gw test while one runs -> exit $rc, output: $out"
    fail=1
fi
refuse "mtu" -c "$work/mtu.ini"
refuse "mtuu" -c "$work/typo.ini"
refuse "peers" -c "$work/self.ini"
refuse "words.ini" -c "$work/words.ini"
refuse "no-such.ini" -c "$work/no-such.ini"
refuse "window" --set proto.window=100
refuse "bond_mode" --set port.bond_mode=3
refuse "eal.args" --set "eal.args"
refuse "unknown kind of member" --set port.members=nosuch:thing
refuse "bond_mode 4" --set port.members=vhost:/run/gridwire/x0.sock --set port.bond_mode=2
refuse "kind parallel needs two members or more" --set port.kind=parallel --set port.members=veth0
refuse "kind parallel has no bond and no LACP" --set port.kind=parallel \
    --set port.members=veth0,veth1 --set port.bond_mode=4
refuse "fault member 2: the port has members 0..1" --set port.members=veth0,veth1 --set fault.member=2
refuse "take --no-pci out" --set port.members=pci:0000:ff:1f.7
refuse "not a PCI address" --set "eal.args=-l 0 --no-huge" --set port.members=pci:03:00.0
refuse "hugepages asked for" --set "eal.args=-l 0 --no-pci -m 1048576 --no-shconf"

gw_ns_up >/dev/null
refuse_port gwa "does it exist in this namespace?" --set port.members=af_packet:nosuch0
refuse_port gwa "'pci:0000:ff:1f.7': no such PCI device" --set "eal.args=-l 0 --no-huge -m 512 --no-shconf" \
    --set port.kind=single --set port.members=pci:0000:ff:1f.7
refuse_port gwa "[port] mtu = 9000: member 'tap:gwtap0' takes an MTU of at most" \
    --set port.kind=single --set port.members=tap:gwtap0
ip -n gwa link show gwtap0 >/dev/null 2>&1 && { echo "FAIL: the tap interface was left behind"; fail=1; }
# A cable socket a live process listens on is not taken from it.
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(60)' \
    "$work/cable.sock" &
holder=$!
gw_cleanup_push _gw_stop_pid "$holder"
for _ in $(seq 50); do [[ -S $work/cable.sock ]] && break; sleep 0.1; done
refuse_port gwa "another process listens on $work/cable.sock" \
    --set port.members=virtio_user:$work/cable.sock
[[ -S $work/cable.sock ]] || { echo "FAIL: the listener's socket was removed"; fail=1; }
_gw_stop_pid "$holder"

export GW_LINK=veth
gw_pair_bg "$work/pair.out" --procs 2 --writers 100 --msgs 8000 --rate 100000
pair=$GW_PID_PAIR
# Three bursts a second apart: one CI run once counted none of a single
# burst (the bond may drop frames on a member LACP is not collecting on
# yet), and the point here is what gridwire does with those that arrive.
sent=0
for _ in 1 2 3; do
    sleep 1
    n=$(ip netns exec gwa python3 "$ROOT/test/integration/inject.py" 1000 veth-a0 veth-a1)
    sent=$((sent + n))
done
gw_log "fired $sent bad frames at beta"
wait "$pair" || true
js=$(tail -1 "$work/pair.out")
python3 - "$js" "$sent" <<'PY' || fail=1
import json, sys
js, sent = json.loads(sys.argv[1]), int(sys.argv[2])
r = js["refused_at_beta"]
print(f"beta refused {r} of {sent} fired; run {js}")
bad = []
if js["delivered"] != js["sent"] or js["duplicates"] or js["order_violations"] or js["sender_failed"]:
    bad.append("the run's messages did not all arrive once and in order")
for k in ("bad_frames", "not_ours", "unknown_peer", "bad_crc"):
    if r[k] == 0:
        bad.append(f"no {k} counted")
print("FAIL: " + "; ".join(bad) if bad else "ok: beta refused the bad frames, counted them, and lost nothing")
sys.exit(1 if bad else 0)
PY
exit $fail
