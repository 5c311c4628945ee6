#!/usr/bin/env bash
# bench_erlang.sh: the article's experiment through the Erlang binding.
# Node A (namespace gwa) runs N writer processes, each sending the 225-byte
# nested map M times with a 100 ms pause, to receivers on node B (gwb):
# native Erlang distribution (!, erpc:cast, erpc:call) over kernel TCP on
# a veth pair, against gridwire:send, cast and call through the two
# gateways on the kernel-bypass cable. One run, every point and operation
# in turn; per point the intended and delivered rate, elapsed, the sending
# VM's peak memory, scheduler busy share, scheduler seconds per million
# operations (the article's "resource bill") and its largest run queue.
#
#   scripts/bench_erlang.sh [--writers "1000 2000 ..."] [--msgs M]
#                           [--receivers R] [--ops "send send_gw ..."]
#                           [--hold MS] [--gw-set SECTION.KEY=V]... [--save]
#
# --hold sets the gateways' dest_block_ms (how long a full receiver's
# messages are held before they are rejected); --gw-set any other key.
# GW_BENCH_CHANNELS: node A's pool of channels (default 8).
#
# R receivers (default 1,000; writer w sends to receiver w mod R: the
# gateway's directory holds 4,096 endpoints). Results in
# results/bench-erlang-<time>/ (erlang.csv, report.txt, erlang.png);
# --save copies them to doc/bench/.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
writers="1000 2000 5000 10000 20000" msgs=20 receivers=1000
ops="send send_gw cast cast_gw call call_gw" save=0 gwset=()
while (($#)); do
    case $1 in
    --writers) writers=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --receivers) receivers=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --save) save=1; shift ;;
    --hold) gwset+=(--set "chan.dest_block_ms=$2"); shift 2 ;;
    --gw-set) gwset+=(--set "$2"); shift 2 ;;
    *) gw_die "bench_erlang.sh: unknown option $1 (see the header of scripts/bench_erlang.sh)" ;;
    esac
done
root=$(gw_root)
EBIN=$root/build/bindings/erlang
[[ -f $EBIN/gridwire_bench.beam ]] || gw_die "no Erlang binding in $EBIN (./scripts/gw build)"
out=$root/results/bench-erlang-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
work=$out
gw_ns_up >/dev/null
gw_gateways_up "$work" "${gwset[@]}"

# Native distribution: its own veth pair (the gateways use the cable), an
# epmd per namespace.
ip -n gwa addr replace 10.77.0.1/30 dev veth-a1
ip -n gwb addr replace 10.77.0.2/30 dev veth-b1
_bench_net_down() {
    ip -n gwa addr del 10.77.0.1/30 dev veth-a1 2>/dev/null || true
    ip -n gwb addr del 10.77.0.2/30 dev veth-b1 2>/dev/null || true
    for ns in gwa gwb; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do
            [[ $(cat "/proc/$p/comm" 2>/dev/null) == epmd ]] && kill "$p" 2>/dev/null
        done
    done
    return 0
}
gw_cleanup_push _bench_net_down
export GW_SOCK_A=/run/gridwire/alpha.sock GW_SOCK_B=/run/gridwire/beta.sock GW_NODE_B=2
export ERL_CRASH_DUMP=$out/erl_crash.dump
# Two VMs and two gateways share two cores: no scheduler spins when idle.
vm=(erl -noshell -setcookie gwbench +S 2 +P 4000000 +sbwt none +sbwtdcpu none +sbwtdio none
    -pa "$EBIN")
ip netns exec gwb "${vm[@]}" -name b@10.77.0.2 -eval 'gridwire_bench:serve(), halt().' \
    >"$out/b.log" 2>&1 &
pid_b=$!
gw_cleanup_push _gw_stop_pid "$pid_b"
# The gateways' and B's processes, for the CPU each point costs them.
# (ip netns exec and erl exec what they start: the pids are theirs.)
sleep 1
export GW_BENCH_PIDS="vm_b=$pid_b,gw_a=$GW_PID_A,gw_b=$GW_PID_B"
ws=$(echo "$writers" | tr ' ' ',')
os=$(echo "$ops" | tr ' ' ',')
gw_log "erlang: writers $writers, $msgs messages each, $receivers receivers; ops $ops"
ip netns exec gwa "${vm[@]}" -name a@10.77.0.1 -eval "
    timer:sleep(2000),
    ok = gridwire_bench:run(#{b => 'b@10.77.0.2', writers => [$ws], msgs => $msgs,
                              receivers => $receivers, ops => [$os], channels => ${GW_BENCH_CHANNELS:-8},
                              csv => \"$out/erlang.csv\"}),
    halt()." 2>&1 | tee "$out/a.log" | grep -v "^=\|^    " || true
[[ -s $out/erlang.csv ]] || { tail -n 20 "$out/a.log" "$out/b.log"; gw_die "the run made no CSV"; }
gw_gateways_down
python3 "$root/scripts/bench_erlang_report.py" "$out" | tee "$out/report.txt"
if ((save)); then
    cp "$out/erlang.csv" "$root/doc/bench/"
    cp "$out/report.txt" "$root/doc/bench/erlang-report.txt"
    cp "$out/erlang.png" "$root/doc/bench/" 2>/dev/null || true
    gw_log "saved to doc/bench/"
fi
