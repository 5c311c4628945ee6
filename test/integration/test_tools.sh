#!/usr/bin/env bash
# DPDK's own tools against running gateways. With hugepages reserved
# (./scripts/gw hugepages reserve) the gateways run as multi-process
# primaries on the cable: dpdk-dumpcap captures beta's frames during a
# verified 1,000,000-message run (snap length 9100, so jumbo frames stay
# whole) and every captured gridwire frame is checked (headers, lengths,
# records, CRC32C of a sample); dpdk-proc-info reads alpha's port counters
# and dpdk-telemetry.py its telemetry. The hugepages are given back after.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
gw_workdir tools
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

gw_cleanup_push "$ROOT/scripts/hugepages.sh" release
"$ROOT/scripts/hugepages.sh" reserve 2048
export GW_HUGE=1
gw_ns_up >/dev/null
gw_gateways_up "$work"
grep -q "multi-process primary: .*--file-prefix=gw-beta" "$work/beta.log" &&
    ok "beta says which prefix the tools attach with" || bad "beta did not announce its prefix"

gw_rx_start "$work" rx -e sink --expect 1000000 --writers-max 1000 --idle-timeout 20
stdbuf -oL dpdk-dumpcap --file-prefix=gw-beta -i net_bonding0 -s 9100 -c 3000 -w "$work/beta.pcapng" \
    >"$work/dumpcap.out" 2>&1 &
dumpcap=$!
gw_cleanup_push _gw_stop_pid "$dumpcap"
gw_wait_ready "$work/dumpcap.out" "Capturing on" "$dumpcap" "dpdk-dumpcap"
for p in 0 1 2 3; do
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e sink -w 250 \
        -m 1000 --id-base $((p * 250)) >"$work/tx$p.json" 2>"$work/tx$p.err" &
done
wait "$GW_PID_RX" || true
for _ in $(seq 100); do kill -0 "$dumpcap" 2>/dev/null || break; sleep 0.1; done
kill -INT "$dumpcap" 2>/dev/null || true
wait "$dumpcap" 2>/dev/null || true

python3 - "$work/rx.json" <<'PY' && ok "the run: all 1,000,000 once and in order" || bad "the run"
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["delivered"] == 1000000 and not r["duplicates"] and not r["order_violations"] else 1)
PY
ls -l "$work/beta.pcapng" >"$work/pcap.ls" 2>&1 || true
if cap=$(python3 "$ROOT/test/integration/pcapcheck.py" "$work/beta.pcapng" 47000 2>&1); then
    ok "dpdk-dumpcap captured beta's frames, every gridwire frame whole and well formed: $cap"
else
    bad "the capture: $cap; $(cat "$work/pcap.ls"); dumpcap: $(tail -3 "$work/dumpcap.out")"
fi

stats=$(dpdk-proc-info --file-prefix=gw-alpha --no-pci -- --stats 2>&1 || true)
port=$("$ROOT/app/gwctl/gwctl" -n alpha raw /gridwire/port | python3 -c "import json, sys; print(json.load(sys.stdin)['port'])")
tx=$(awk -v p="$port" '/NIC statistics for port/ { cur = $6 } cur == p && /^ *TX-packets:/ { print $2; exit }' <<<"$stats")
((${tx:-0} > 1000)) && ok "dpdk-proc-info: alpha's bond (port $port) sent $tx packets" ||
    bad "dpdk-proc-info saw no traffic on port $port: $(head -5 <<<"$stats")"

tel=$(printf '/gridwire/peers\n' | dpdk-telemetry.py -f gw-alpha 2>&1 || true)
[[ $tel == *'"/gridwire/peers": [2]'* ]] && ok "dpdk-telemetry.py: $tel" || bad "dpdk-telemetry.py: $tel"
gw_gateways_down
exit $fail
