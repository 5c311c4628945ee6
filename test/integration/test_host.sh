#!/usr/bin/env bash
# gridwire on two emulated gateway hosts (scripts/host.sh): QEMU guests
# with PCI NICs behind an IOMMU on two wires. Host A runs the tree's
# gridwired; host B boots with systemd as PID 1, installs the project's
# .deb packages and runs gridwired@host-b. On both, gridwire-setup binds
# the NICs to vfio-pci for real, after refusing what it must (the NIC of
# the guest's own network, a PCI address with no device), and gridwired
# bonds them in mode 4 (LACP between the guests), MTU 9000, 2 workers and
# 2 receivers fed by the NICs' RSS.
#
#   - a verified run A -> B: every message once, in order per sender; both
#     of B's receivers take a share of the lanes' frames; dpdk-proc-info
#     and dpdk-dumpcap attach to the gateways;
#   - wire 0 cut from outside in a run (QEMU's set_link on both of its
#     NICs, a cable pulled): both PMDs report it, the bonds move the
#     traffic to wire 1, nothing is lost; the wire back, the bond uses it;
#   - B's gateway SIGKILLed in a run: systemd restarts it, its NICs still
#     bound; nothing lost silently (each message received or reported);
#   - systemctl stop flushes what B was sending; journalctl -u shows it;
#   - both gateways parallel ([port] kind = parallel): every frame on both
#     wires, wire 0 cut in a run, nothing lost, B discards the copies; A's
#     end of wire 0 alone cut: B reports its member 0 silent, then back;
#   - bad input, one line and exit 2 each, nothing bound by half: the
#     guest's own NIC, no such PCI device, no hugepages, and, in the long
#     form, (A booted again without its IOMMU) no IOMMU.
# GW_HOST_LONG=1 (./scripts/gw test host) sends ten times as much and
# boots A a third time without its IOMMU.
# About 7 minutes here, most of it under emulation; beside the other tests
# (gw-lane: apart), it holds gw_packages_lock while it builds the packages
# and B installs them (test_deb changes this machine's, which the guests read).
# gw-timeout: 1500
# gw-lane: apart
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
H=$ROOT/scripts/host.sh
STATE=${GW_HOST_STATE:-/run/gridwire-host}
gw_workdir host
fail=0
scale=$([[ ${GW_HOST_LONG:-0} == 1 ]] && echo 10 || echo 1)
procs=2 writers=4 msgs=$((5000 * scale)) rate=4000
total=$((procs * writers * msgs))

ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
in_a() { "$H" run A "$@"; }
in_b() { "$H" run B "$@"; }
# expect2 WHAT OUT PATTERN: OUT is "rc<TAB>output" of a refused command
expect2() {
    local rc=${2%%$'\t'*} out=${2#*$'\t'}
    if [[ $rc == 2 ]] && grep -Eq "$3" <<<"$out"; then
        ok "$1: exit 2, $(grep -Em1 "$3" <<<"$out")"
    else
        bad "$1 (exit $rc): $out"
    fi
}
# refused HOST CMD: "rc<TAB>output" of CMD in the guest
refused() { local out rc=0; out=$("$H" run "$1" "$2" 2>&1) || rc=$?; printf '%s\t%s' "$rc" "$out"; }
driver_of() { # HOST ADDR
    "$H" run "$1" "basename \$(readlink /sys/bus/pci/devices/$2/driver) 2>/dev/null || echo none"
}

# The packages host B installs, built first: one heavy job at a time.
gw_packages_lock
gw_log "building the Debian packages"
gw_debs_build "$work" || { tail -20 "$work/build.log"; gw_die "dpkg-buildpackage failed"; }
gw_cleanup_push "$H" down
gw_log "booting A, and B with systemd"
"$H" up --systemd B
mkdir -p "$STATE/B/share/debs"
cp "$work"/src/gridwired_*_amd64.deb "$work"/src/libgridwire0_*_amd64.deb "$STATE/B/share/debs/"

# B installs the packages (the longest step before the runs, dpkg over 9p
# under emulation) while A is checked: each guest has vCPUs of its own.
# man-db's trigger would rebuild every manual page's index over 9p (minutes
# under emulation): off, in this guest's overlay only.
in_b "rm -f /var/lib/man-db/auto-update
    dpkg -i /gw/debs/*.deb >/gw/dpkg.log 2>&1 || { tail -5 /gw/dpkg.log; exit 1; }
    cp config/host-b.ini /etc/gridwire/host-b.ini
    gridwire-setup -c /etc/gridwire/host-b.ini && systemctl start gridwired@host-b" >"$work/b-install.out" 2>&1 &
b_install=$!

# --- bad input before anything is bound -----------------------------------
gw_log "A: bad input, then gridwire-setup (B installs meanwhile)"
mk_ini() { # NAME MEMBERS: a copy of host-a.ini with other members, in A's share
    sed "s|^members = .*|members = $2|" "$ROOT/config/host-a.ini" >"$STATE/A/share/$1.ini"
}
mk_ini own "pci:0000:00:04.0, pci:0000:00:03.0"
expect2 "gridwire-setup, a member that carries the guest's network" \
    "$(refused A 'app/gridwire-setup/gridwire-setup -c /gw/own.ini')" \
    "^refuse +0000:00:03.0: carries the host's network \(eth0"
[[ $(driver_of A 0000:00:04.0) == virtio-pci ]] && ok "... and the other member is left as it was (virtio-pci)" ||
    bad "gridwire-setup bound 0000:00:04.0 while refusing 0000:00:03.0"
mk_ini nodev "pci:0000:00:09.0, pci:0000:00:04.0"
expect2 "gridwire-setup, a PCI address with no device" \
    "$(refused A 'app/gridwire-setup/gridwire-setup -c /gw/nodev.ini')" "^refuse +0000:00:09.0: no such PCI device"
expect2 "gridwired, a PCI address with no device" \
    "$(refused A 'build/app/gridwired -c /gw/nodev.ini')" "pci:0000:00:09.0': no such PCI device"
expect2 "gridwired, a member bound to the kernel's driver" \
    "$(refused A 'build/app/gridwired -c /gw/own.ini')" "pci:0000:00:04.0': bound to virtio-pci, not vfio-pci: bind it \(gridwire-setup"

# --- both hosts prepared for real -----------------------------------------
out=$(in_a "app/gridwire-setup/gridwire-setup -c config/host-a.ini" 2>&1) &&
    grep -q "^do .*0000:00:04.0: bind to vfio-pci" <<<"$out" && grep -q "^do .*0000:00:05.0: bind" <<<"$out" &&
    ok "gridwire-setup on A: both NICs bound to vfio-pci" || bad "gridwire-setup on A: $out"
gw_log "A set up: until B has installed its packages"
wait "$b_install" && ok "B: packages installed, gridwire-setup, systemctl start gridwired@host-b" ||
    bad "B: $(cat "$work/b-install.out")"
gw_packages_unlock
gw_log "starting A's gateway: until the bonds see each other"
in_a "setsid build/app/gridwired -c config/host-a.ini --stats-file /gw/a.json >/gw/a.log 2>&1 </dev/null &"
wait_log() { # WHAT HOST COMMAND-PRINTING-THE-LOG PATTERN [COUNT]: until the log has it COUNT times
    local n
    for _ in $(seq 90); do
        n=$("$H" run "$2" "$3" 2>/dev/null | grep -Ec "$4") || true
        ((n >= ${5:-1})) && return 0
        sleep 1
    done
    bad "$1: not seen in 90 s"
    return 1
}
log_a="cat /gw/a.log"
log_b="journalctl -q -o cat -u gridwired@host-b"
wait_log "A sees B" A "$log_a" "peer 2 \(host-b\) is up" && wait_log "B sees A" B "$log_b" "peer 1 \(host-a\) is up" ||
    { in_a "tail -5 /gw/a.log"; in_b "$log_b | tail -5"; exit 1; }
ok "the gateways see each other (bond mode 4 over the two wires)"

# --- runs ----------------------------------------------------------------
# run NAME [rx args...]: B's receiver (the installed gw-perf) waits for
# $total from A's $procs senders; each side keeps a ledger; the check
# prints one line. Call run_start, act, then run_check NAME.
run_start() {
    local name=$1
    shift
    in_b "rm -f /gw/$name.*; setsid gw-perf rx -s /run/gridwire/host-b.sock -e sink --expect $total \
        --writers-max $((procs * writers)) -m $msgs --ledger /gw/$name.received --idle-timeout 60 $* \
        >/gw/$name.rx.json 2>/gw/$name.rx.err </dev/null &
        for i in \$(seq 100); do grep -q 'rx ready' /gw/$name.rx.err && exit 0; sleep 0.1; done; exit 1" ||
        bad "$name: the receiver did not start"
    in_a "rm -f /gw/$name.*; for p in \$(seq 0 $((procs - 1))); do
        setsid build/app/gw-perf tx -s /run/gridwire/host-a.sock -n 2 -e sink -w $writers -m $msgs \
            -z 225 --id-base \$((p * $writers)) --rate $rate --retry-unreachable \
            --ledger /gw/$name.rejected.\$p --linger-ms 3000 >/gw/$name.tx.\$p.json 2>/gw/$name.tx.\$p.err </dev/null &
    done"
}
run_wait() { # NAME: until the receiver and the senders are done (at most 5 minutes)
    for _ in $(seq 300); do
        in_a "pgrep -f 'gw-perf tx' >/dev/null" || in_b "pgrep -f 'gw-perf rx' >/dev/null" || return 0
        sleep 1
    done
}
run_check() { # NAME DESCRIPTION: every message received or reported, in order
    run_wait "$1"
    sleep 2
    python3 - "$STATE" "$1" "$total" "$procs" "$2" <<'PY' || fail=1
import json, os, sys
state, name, total, procs, what = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
b, a = f"{state}/B/share/{name}", f"{state}/A/share/{name}"
try:
    rx = json.load(open(f"{b}.rx.json"))
    got = open(f"{b}.received", "rb").read()
except (OSError, ValueError) as e:
    print(f"FAIL: {what}: the receiver left no result ({e}): {open(b + '.rx.err').read()[-300:]}")
    sys.exit(1)
rej = bytearray(len(got))
reported = 0
for p in range(procs):
    try:
        reported += json.load(open(f"{a}.tx.{p}.json"))["rejected"]
        r = open(f"{a}.rejected.{p}", "rb").read()
        rej = bytearray(x | y for x, y in zip(rej, r.ljust(len(rej), b"\0")))
    except (OSError, ValueError, KeyError):
        print(f"FAIL: {what}: sender {p} left no result: {open(f'{a}.tx.{p}.err').read()[-300:]}")
        sys.exit(1)
missing = sum(bin(~(g | r) & 0xFF).count("1") for g, r in zip(got, rej)) - (len(got) * 8 - total)
bad = []
if missing: bad.append(f"{missing} neither received nor reported")
# A gap in a writer's sequence is a message reported to its sender (the
# ledgers account for it); out of order is one that came after a later one.
if rx["reordered"]: bad.append(f"{rx['reordered']} out of order")
if rx["malformed"]: bad.append(f"{rx['malformed']} malformed")
print(f"FAIL: {what}: " + "; ".join(bad) if bad else
      f"ok: {what}: of {total}, {rx['delivered']} received ({rx['duplicates']} twice), {reported} reported to their senders, none lost, order kept ({rx['order_violations']} gaps where a message was reported)")
sys.exit(1 if bad else 0)
PY
}
lcore_frames() { # HOST GATEWAY LCORE: data frames that lcore took
    "$H" run "$1" "gwctl -n $2 raw /gridwire/lcore,$3 2>/dev/null || build/app/gwctl -n $2 raw /gridwire/lcore,$3" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["data_frames"])' 2>/dev/null || echo 0
}

gw_log "a verified run A -> B, with dpdk-dumpcap on A"
# stdbuf: "Capturing on" goes to stdout once the primary has the capture
# callbacks; into a file it would wait in stdio's buffer until exit.
in_a "setsid timeout 600 stdbuf -oL dpdk-dumpcap --file-prefix=gw-host-a -i net_bonding0 -s 9100 -c 40 \
    -f 'udp and greater 1000' -w /gw/a.pcapng >/gw/dumpcap.log 2>&1 </dev/null &"
# Until it captures (a fixed wait was too short for a guest on a loaded
# machine: it attached after the run and caught only HELLOs and ACKs).
for _ in $(seq 1200); do
    grep -q "Capturing on" "$STATE/A/share/dumpcap.log" 2>/dev/null && break
    sleep 0.1
done
grep -q "Capturing on" "$STATE/A/share/dumpcap.log" 2>/dev/null ||
    bad "dpdk-dumpcap on A not capturing after 120 s: $(tail -3 "$STATE/A/share/dumpcap.log" 2>/dev/null)"
r0=$(lcore_frames B host-b 3) r1=$(lcore_frames B host-b 4)
run_start verified
run_check verified "a verified run A -> B over the emulated NICs"
d0=$(($(lcore_frames B host-b 3) - r0)) d1=$(($(lcore_frames B host-b 4) - r1))
((d0 > 0 && d1 > 0)) && ok "RSS: both of B's receivers took a share of the lanes' frames ($d0 and $d1)" ||
    bad "RSS: B's receivers took $d0 and $d1 of the lanes' frames"
out=$(in_b "dpdk-proc-info --file-prefix=gw-host-b -a 0000:00:04.0 -a 0000:00:05.0 -- -p 3 --stats" 2>&1) &&
    grep -q "NIC statistics for port 1" <<<"$out" &&
    ok "dpdk-proc-info attaches to gridwired@host-b: $(grep -m1 -o 'RX-packets: *[0-9]*' <<<"$out") on member 0" ||
    bad "dpdk-proc-info: $(tail -3 <<<"$out")"
# It stops by itself at 40 frames (-c 40); the rest of its time is 7 s.
in_a "for i in \$(seq 70); do pgrep -x dpdk-dumpcap >/dev/null || exit 0; sleep 0.1; done
    pkill -INT -x dpdk-dumpcap; sleep 2" || true
n=$(tshark -r "$STATE/A/share/a.pcapng" -Y "udp.dstport == 47000 && frame.len > 1000" 2>/dev/null | wc -l) || n=0
((n > 0)) && ok "dpdk-dumpcap attaches to A's gateway: $n DATA frames captured" ||
    bad "dpdk-dumpcap captured no gridwire frame: $(cat "$STATE/A/share/dumpcap.log" 2>/dev/null | tail -3)"

gw_log "a run with wire 0 cut from outside, then back"
run_start cut
sleep 4
"$H" link both 0 off
wait_log "A's PMD reports the cut" A "$log_a" "member pci:0000:00:04.0: link down" &&
    wait_log "B's PMD reports the cut" B "$log_b" "member pci:0000:00:04.0: link down" &&
    ok "the cut: both PMDs report member 0 down"
sleep 4
"$H" link both 0 on
wait_log "A's PMD reports the wire back" A "$log_a" "member pci:0000:00:04.0: link up" &&
    ok "the wire back: A's PMD reports member 0 up"
run_check cut "a run across the cut"
tx0() { in_a "build/app/gwctl -n host-a raw /gridwire/port" | python3 -c 'import json,sys; print(json.load(sys.stdin)["member0_tx_packets"])'; }
m0=$(tx0)
run_start after
run_check after "a run after the wire came back"
m1=$(tx0)
(( m1 - m0 > 100 )) && ok "the bond uses wire 0 again ($((m1 - m0)) frames on it)" || bad "wire 0 carried $((m1 - m0)) frames after it came back"

gw_log "B's gateway SIGKILLed in a run; systemd restarts it"
run_start killed --reconnect
sleep 4
in_b "systemctl kill -s KILL gridwired@host-b"
wait_log "systemd restarts gridwired@host-b" B "$log_b" "listening on /run/gridwire/host-b.sock" 2 &&
    ok "systemd restarted gridwired@host-b after SIGKILL (Restart=on-failure): $(in_b 'systemctl show -p NRestarts --value gridwired@host-b') restart"
run_check killed "a run across B's SIGKILL and restart"
[[ $(driver_of B 0000:00:04.0) == vfio-pci && $(driver_of B 0000:00:05.0) == vfio-pci ]] &&
    ok "B's NICs stayed bound to vfio-pci across the restart" || bad "B's NICs lost vfio-pci"

gw_log "systemctl stop flushes what B sends"
n=20000
in_a "rm -f /gw/flush.*; setsid build/app/gw-perf rx -s /run/gridwire/host-a.sock -e back --expect $n \
    --writers-max 4 --idle-timeout 30 >/gw/flush.rx.json 2>/gw/flush.rx.err </dev/null & sleep 2"
out=$(in_b "gw-perf tx -s /run/gridwire/host-b.sock -n 1 -e back -w 4 -m $((n / 4)) -z 225 >/gw/flush.tx.json &&
    systemctl stop gridwired@host-b && systemctl show -p Result --value gridwired@host-b" 2>&1) || true
for _ in $(seq 30); do [[ -s $STATE/A/share/flush.rx.json ]] && break; sleep 1; done
python3 - "$STATE/A/share/flush.rx.json" "$n" "$out" <<'PY' || fail=1
import json, sys
try:
    rx = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    rx = {"delivered": 0, "order_violations": 0}
n, result = int(sys.argv[2]), sys.argv[3].strip().splitlines()[-1:] or [""]
good = rx["delivered"] == n and not rx["order_violations"] and result[0] == "success"
print(("ok" if good else "FAIL") + f": systemctl stop right after B's sender: {rx['delivered']} of {n} at A, unit result {result[0]!r}")
sys.exit(0 if good else 1)
PY
out=$(in_b "journalctl -q -o cat -u gridwired@host-b" 2>&1)
grep -q "listening on" <<<"$out" && grep -Eq "Stopped|Deactivated" <<<"$out" &&
    ok "journalctl -u gridwired@host-b shows its log ($(wc -l <<<"$out") lines)" || bad "journalctl: $(tail -3 <<<"$out")"

gw_log "parallel: every frame on both wires; wire 0 cut in a run"
in_a "pkill -INT -x gridwired; sleep 3"
in_b "sed -i 's/^kind = bond/kind = parallel/' /etc/gridwire/host-b.ini && systemctl start gridwired@host-b"
in_a "setsid build/app/gridwired -c config/host-a.ini --set port.kind=parallel --stats-file /gw/a.json \
    >/gw/par.log 2>&1 </dev/null &"
wait_log "A sees B, both parallel" A "cat /gw/par.log" "peer 2 \(host-b\) is up" &&
    ok "both gateways parallel ($(in_a "grep -o 'port: parallel[^)]*)' /gw/par.log"))"
gw_log "parallel: the run across wire 0's cut"
run_start par
sleep 4
"$H" link both 0 off
sleep 4
"$H" link both 0 on
run_check par "parallel: a run across wire 0's cut"
out=$(in_b "gwctl -n host-b raw /gridwire/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["redundant_frames"], s["dup_frames"])')
read -r red dup <<<"$out"
((red > 0)) && ok "B kept the first copy of each frame: $red copies discarded as redundant, $dup duplicates" ||
    bad "B discarded no copy as redundant ($out)"
# A's end of wire 0 alone: B's PMD sees nothing, its member 0 stays up but
# carries nothing while member 1 does.
seen() { in_b "$log_b" | grep -c "member pci:0000:00:04.0: $1" || true; }
n_silent=$(seen silent) n_again=$(seen "carries frames again")
gw_log "parallel: A's NIC 0 alone cut"
"$H" link A 0 off
wait_log "B says its member 0 is silent" B "$log_b" "member pci:0000:00:04.0: silent" $((n_silent + 1)) &&
    ok "A's NIC 0 alone cut: B's member 0, link up, is reported silent"
"$H" link A 0 on
wait_log "B's member 0 carries frames again" B "$log_b" "member pci:0000:00:04.0: carries frames again" \
    $((n_again + 1)) && ok "... and carrying frames again once it is back"

# --- more bad input, A's gateway stopped, NICs bound ---------------------
gw_log "bad input: no hugepages"
in_a "pkill -INT -x gridwired; sleep 3"
expect2 "gridwired, no hugepages free" \
    "$(refused A 'echo 0 >/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; build/app/gridwired -c config/host-a.ini')" \
    "hugepages asked for .* 0 MB are free in pages of --huge-dir's size .*gridwire-setup"
out=$(in_a "app/gridwire-setup/gridwire-setup -c config/host-a.ini" 2>&1) && grep -Eq "^do .*hugepages: reserve [0-9]+ pages" <<<"$out" &&
    ok "gridwire-setup reserves them again" || bad "gridwire-setup after the pages went: $out"

# A third boot (about a minute): the long form's (./scripts/gw test host).
if [[ ${GW_HOST_LONG:-0} != 1 ]]; then
    echo "ok: no-IOMMU check left to the long form (./scripts/gw test host)"
    exit $fail
fi
gw_log "A booted again without its IOMMU"
"$H" reboot A --no-iommu >/dev/null
expect2 "gridwire-setup, no IOMMU" "$(refused A 'app/gridwire-setup/gridwire-setup -c config/host-a.ini')" \
    "^refuse +IOMMU: no groups .*intel_iommu=on"
[[ $(driver_of A 0000:00:04.0) == virtio-pci ]] && ok "... nothing bound" || bad "a NIC was bound without an IOMMU"
expect2 "gridwired, no IOMMU" "$(refused A 'build/app/gridwired -c config/host-a.ini')" \
    "no IOMMU, so vfio-pci cannot take it"
exit $fail
