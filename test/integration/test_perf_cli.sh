#!/usr/bin/env bash
# gw-perf interactive (DPDK cmdline, testpmd style) answers help and drives real runs: tx at a
# set rate, changed while running; show perf/port/client stats; clear
# stats; stop prints the run's summary; then call mode against an echo
# service. Checks the prompt's answers, not speeds. The sleeps only give
# the runs time to do something between commands.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build/app
gw_workdir perfcli
gw_ns_up >/dev/null
gw_gateways_up "$work"
gw_rx_start "$work" rx -e sink --expect 0
ip netns exec gwb "$BIN/gw-perf" echo -s /run/gridwire/beta.sock -e echo \
    >"$work/echo.json" 2>"$work/echo.err" &
gw_cleanup_push _gw_stop_pid $!
sleep 0.5
{
    echo "help"
    echo "set writers 50"
    echo "set rate 100000"
    echo "start"
    sleep 1
    echo "show perf stats"
    echo "set rate 300000"
    sleep 1
    echo "show perf stats"
    echo "show port stats"
    echo "show client stats"
    echo "clear stats"
    echo "show perf stats"
    echo "stop"
    sleep 3 # the prompt works through the lines above (gwctl takes a while)
    echo "set mode call"
    echo "set endpoint echo"
    echo "set writers 10"
    echo "set rate 0"
    echo "set size 10"
    echo "start"
    sleep 1
    echo "show perf stats"
    echo "stop"
    echo "quit"
} | ip netns exec gwa "$BIN/gw-perf" interactive -s /run/gridwire/alpha.sock >"$work/cli.out" 2>&1
cat "$work/cli.out"
kill -TERM "$GW_PID_RX" 2>/dev/null || true
wait "$GW_PID_RX" || true

python3 - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
out = open(f"{work}/cli.out").read()
bad = []
def need(pattern, what):
    if not re.search(pattern, out, re.M):
        bad.append(what)
need(r"^  start: run the current mode until stop", "help did not list the commands")
need(r"^tx started: node 2, endpoint sink, 50 writers, 225 bytes, rate 100000", "tx did not start")
need(r"^rate = 300000", "set rate while running")
need(r"Send-pps: +[1-9]", "no send rate shown")
need(r"RX-packets: +\d+", "no port stats")
need(r"msgs_taken", "no client stats")
need(r"counters cleared", "clear stats")
need(r"^bad value 10 for size", "a bad size was not refused")
need(r"^call started: node 2, endpoint echo, 10 writers", "call did not start")
need(r'"role":"tx","sent":[1-9]', "no tx summary at stop")
need(r'"role":"call".*"wrong":0', "no call summary at stop, or wrong replies")
n = len(re.findall(r"^stopped \(exit 0\)", out, re.M))
if n != 2: bad.append(f"{n} clean stops of 2")
rx = json.load(open(f"{work}/rx.json"))
tx = json.loads(re.search(r'(\{"role":"tx".*\})', out).group(1)) if '"role":"tx"' in out else {}
if rx.get("delivered") != tx.get("sent") or rx.get("order_violations") or rx.get("duplicates"):
    bad.append(f"receiver {rx} against sender {tx}")
print("FAIL: " + "; ".join(bad) if bad else
      f"ok: the prompt ran tx ({tx.get('sent')} messages, all received in order) and call")
sys.exit(1 if bad else 0)
PY
