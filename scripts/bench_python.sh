#!/usr/bin/env bash
# bench_python.sh: the Python binding against what a Python programmer
# would use instead, in one run, between the two namespaces: alpha (node 1,
# gwa) and beta (node 2, gwb) joined by the kernel-bypass cable; host A's
# processes (alpha, the senders, the callers) on CPU 0 and host B's (beta,
# the receivers, the services) on CPU 1, as scripts/bench.sh places them.
#
#  1. throughput: 4 Python sender processes in gwa, each sending MSGS
#     225-byte messages as fast as it goes (each carries its sender id and
#     sequence number), to one Python receiver in gwb that verifies every
#     one (count, order per sender); msg/s = all of them over the time from
#     the first send to the last receive; the senders' and the receiver's
#     CPU seconds (os.times) per million messages, and the gateways' (/proc).
#     Three transports, REPS runs of each, interleaved (the median counts):
#       gridwire  the sync API: send(2, endpoint, data), timeout None
#                 (waits for room); the receiver takes recv_batch(256, 1.0);
#       pyzmq     PUSH/PULL over TCP on veth-a1/veth-b1 (10.77.0.1/30,
#                 10.77.0.2/30, given for the run and taken back after);
#       TCP       plain sockets on the same veths, 4 connections,
#                 length-prefixed frames, a 64 KB buffer sent (sendall)
#                 when full, received with recv_into;
#  2. calls: one at a time from Python (c.call, 8-byte payload, CALLS after
#     a warm-up) to a Python service on beta, and to gw-perf's C echo,
#     against the C client (gw-perf call -w 1 -> gw-perf echo): round trip
#     p50/p99; then CONCURRENCY calls at once from gridwire.aio
#     (asyncio.gather, rounds until ACALLS) to the Python service, beside
#     gw-perf call -w CONCURRENCY to the C echo: calls/s.
#
# Results in results/bench-python-<time>/: python.json (every figure),
# report.txt (the table, also printed: ratios gridwire/pyzmq and
# gridwire/TCP, Python p50 / C p50, and the issue's targets) and python.png
# (msg/s per transport); runs/ holds each program's output and the
# gateways' logs. --save copies python.json, report.txt (as
# python-report.txt) and python.png to doc/bench/. The defaults take about
# 1-2 minutes on the 2-core machine.
#
#   scripts/bench_python.sh [--msgs PER_SENDER] [--reps N] [--calls N] [--warmup N]
#                           [--acalls N] [--concurrency C] [--save]
#
# Defaults: 3,000,000 messages per sender, 3 runs, 20,000 calls after
# 2,000, 100,000 calls 1,000 at a time. Nothing is made to spin: the
# Python programs block in the binding's waits, pyzmq's or the kernel's;
# the gateways keep their [idle] back-off as configured, and libgridwire
# (gw-perf, the binding's calls) its short spin that backs off.
#
# The namespaces are shared: the run holds the integration tests' lock
# (/run/lock/gridwire-test.lock) and waits (a minute at a time, up to 15
# minutes) while a test run holds it or processes run in gwa or gwb.
# GW_PIN_A / GW_PIN_B (default 0 / 1; empty: float) place the two sides.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(gw_root)
msgs=3000000 reps=3 calls=20000 warmup=2000 acalls=100000 concurrency=1000 save=0
args=("$@")
while (($#)); do
    case $1 in
    --msgs) msgs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --acalls) acalls=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --save) save=1; shift ;;
    *) gw_die "bench_python.sh: unknown option $1 (see the header of scripts/bench_python.sh)" ;;
    esac
done
for v in "$msgs" "$reps" "$calls" "$acalls" "$concurrency"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || gw_die "bench_python.sh: counts are positive integers, not '$v'"
done
[[ $warmup =~ ^[0-9]+$ ]] || gw_die "bench_python.sh: --warmup takes a count, not '$warmup'"
((concurrency <= 4096)) || gw_die "bench_python.sh: --concurrency is at most 4096 (gridwire.CALLS_MAX)"
PY=/usr/bin/python3 # Debian's: the binding is built for it, python3-zmq is its
BENCH=$root/bindings/python/bench/bench_python.py
BIN=$root/build/app
export PYTHONPATH=$root/build/bindings/python
[[ -x $BIN/gridwired && -x $BIN/gw-perf ]] || gw_die "not built: run ./scripts/gw build"
"$PY" -c 'import gridwire' 2>/dev/null ||
    gw_die "no Python binding in $PYTHONPATH (./scripts/gw build; needs python3-dev)"
"$PY" -c 'import zmq' 2>/dev/null || gw_die "no pyzmq for $PY (apt-get install python3-zmq)"

# --- the shared namespaces --------------------------------------------------
lock=${GW_TEST_LOCK:-/run/lock/gridwire-test.lock}
# _ns_users: what uses gwa and gwb (pid and name), nothing when idle: the
# processes in them, and the scripts that make and tear them down (a test
# run alone, without ./scripts/gw test and its lock, takes them too; its
# namespaces stand empty between its steps).
_ns_users() {
    local ns p cmd
    for ns in gwa gwb; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do
            printf ' %s:%s(%s)' "$ns" "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"
        done
    done
    for p in /proc/[0-9]*; do
        { cmd=$(tr '\0' ' ' <"$p/cmdline"); } 2>/dev/null || continue
        [[ $cmd =~ (test/integration/(test_[a-z0-9_]+|demo)|scripts/(bench[a-z_]*|pair|gateways|mesh|refs|example|host))\.sh ]] &&
            [[ ${BASH_REMATCH[0]} != scripts/bench_python.sh ]] && printf ' %s(%s)' "${p#/proc/}" "${BASH_REMATCH[0]}"
    done
    return 0
}
if [[ -z ${_GW_BENCH_PY_LOCKED:-} ]]; then
    # The lock is held by flock(1) alone (-o), as ./scripts/gw test holds it:
    # nothing the run starts keeps it after the run. 75: a test run holds it;
    # 76: the run found the namespaces in use.
    mkdir -p "${lock%/*}"
    t0=$SECONDS
    while :; do
        rc=0
        _GW_BENCH_PY_LOCKED=1 flock -n -o -E 75 "$lock" bash "${BASH_SOURCE[0]}" "${args[@]}" || rc=$?
        ((rc == 75 || rc == 76)) || exit "$rc"
        ((SECONDS - t0 < 900)) ||
            gw_die "bench_python.sh: gwa and gwb still in use after 15 minutes: try again later"
        gw_log "python bench: the namespaces are in use ($([[ $rc == 75 ]] && echo "a test run holds $lock" || echo "something else uses them")); trying again in 60 s"
        sleep 60
    done
fi
out=$root/results/bench-python-$(date +%Y%m%d-%H%M%S)
runs=$out/runs
mkdir -p "$runs"
export GW_PIN_A=${GW_PIN_A-0} GW_PIN_B=${GW_PIN_B-1}
pin_a=(${GW_PIN_A:+taskset -c "$GW_PIN_A"})
pin_b=(${GW_PIN_B:+taskset -c "$GW_PIN_B"})
A=/run/gridwire/alpha.sock B=/run/gridwire/beta.sock
SENDERS=4 SIZE=225 ADDR_A=10.77.0.1 ADDR_B=10.77.0.2
"$PY" - "$runs/config.json" <<EOF
import json, os, sys
json.dump({"senders": $SENDERS, "msgs": $msgs, "size": $SIZE, "calls": $calls, "warmup": $warmup,
           "reps": $reps, "call_size": 8, "acalls": $acalls, "concurrency": $concurrency,
           "pin_a": "${GW_PIN_A}", "pin_b": "${GW_PIN_B}", "link": "cable",
           "loadavg_at_start": os.getloadavg(), "cpus": os.cpu_count(),
           "commit": "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"},
          open(sys.argv[1], "w"), indent=1)
EOF

# Twice, 2 s apart: another bench's gateways go down and up between its runs.
users=$(_ns_users)
[[ -z $users ]] && sleep 2 && users=$(_ns_users)
if [[ -n $users ]]; then
    gw_log "python bench: in use:$users"
    rm -rf "$out"
    exit 76
fi

gw_ns_up 2 >/dev/null
# A verified run: a receiver the machine leaves unscheduled for a while is
# waited for, not refused after the default 100 ms (as scripts/pair.sh).
gw_gateways_up "$runs" --set chan.dest_block_ms=30000
gw_log "python bench: gateways up (alpha $GW_PID_A, beta $GW_PID_B); results in $out"

# The kernel's path for pyzmq and TCP: the second veth pair, which the
# gateways on the cable leave alone.
ip -n gwa addr replace "$ADDR_A/30" dev veth-a1
ip -n gwb addr replace "$ADDR_B/30" dev veth-b1
_bench_addrs_down() {
    ip -n gwa addr del "$ADDR_A/30" dev veth-a1 2>/dev/null || true
    ip -n gwb addr del "$ADDR_B/30" dev veth-b1 2>/dev/null || true
}
gw_cleanup_push _bench_addrs_down

cpu_ticks() { # PID: its utime+stime, in clock ticks
    awk '{print $14 + $15}' "/proc/$1/stat"
}

# _wait_or_kill PID SECONDS: its exit status, or 1 once it has been
# stopped after SECONDS.
_wait_or_kill() {
    local k
    for ((k = 0; k < $2 * 10; k++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$1" 2>/dev/null && { _gw_stop_pid "$1"; return 1; }
    wait "$1"
}

# throughput NAME REP RX-ARGS... -- TX-ARGS...: the receiver in gwb, then
# the senders in gwa, started together once all are ready; waits for all.
# Output in runs/tput-NAME-rREP-{rx,tx*}.json; the gateways' CPU seconds
# over the run (they stay up, backing off while idle) in ...-gw.json.
throughput() {
    local what=$1 rep=$2 rxargs=() txargs=() i pids=() rx go=$runs/go-$1 f a0 b0
    shift 2
    while [[ $1 != -- ]]; do rxargs+=("$1"); shift; done
    shift
    txargs=("$@")
    f=$runs/tput-$what-r$rep
    gw_log "python bench: throughput, $what, run $rep/$reps: $SENDERS senders x $msgs messages"
    a0=$(cpu_ticks "$GW_PID_A") b0=$(cpu_ticks "$GW_PID_B")
    ip netns exec gwb "${pin_b[@]}" "$PY" "$BENCH" "${rxargs[@]}" --senders "$SENDERS" --msgs "$msgs" \
        --size "$SIZE" >"$f-rx.json" 2>"$f-rx.err" &
    rx=$!
    gw_cleanup_push _gw_stop_pid "$rx"
    gw_wait_ready "$f-rx.err" "ready" "$rx" "the $what receiver"
    rm -f "$go"
    for ((i = 0; i < SENDERS; i++)); do
        ip netns exec gwa "${pin_a[@]}" "$PY" "$BENCH" "${txargs[@]}" --id "$i" --msgs "$msgs" \
            --size "$SIZE" --go "$go" >"$f-tx$i.json" 2>"$f-tx$i.err" &
        pids+=($!)
        gw_cleanup_push _gw_stop_pid "$!"
    done
    for ((i = 0; i < SENDERS; i++)); do
        gw_wait_ready "$f-tx$i.err" "ready" "${pids[i]}" "the $what sender $i"
    done
    touch "$go"
    # The receiver ends with all, or after 30 s without any; a sender still
    # waiting for room a minute after that is stopped.
    wait "$rx" || gw_log "python bench: the $what receiver failed ($(tail -n 1 "$f-rx.err"))"
    for ((i = 0; i < SENDERS; i++)); do
        _wait_or_kill "${pids[i]}" 60 ||
            gw_log "python bench: $what sender $i failed ($(tail -n 1 "$f-tx$i.err"))"
    done
    rm -f "$go"
    awk -v a=$(($(cpu_ticks "$GW_PID_A") - a0)) -v b=$(($(cpu_ticks "$GW_PID_B") - b0)) -v hz="$hz" \
        'BEGIN { printf "{\"alpha_cpu_s\": %.2f, \"beta_cpu_s\": %.2f}\n", a / hz, b / hz }' >"$f-gw.json"
}

# --- 1. throughput ------------------------------------------------------------
# Interleaved, REPS times: each transport sees the machine as the others do.
hz=$(getconf CLK_TCK)
for ((r = 1; r <= reps; r++)); do
    throughput gridwire "$r" gw-rx --sock "$B" --endpoint pysink -- \
        gw-tx --sock "$A" --node 2 --endpoint pysink
    throughput zmq "$r" zmq-pull --bind "tcp://$ADDR_B:5601" -- zmq-push --connect "tcp://$ADDR_B:5601"
    throughput tcp "$r" tcp-rx --bind "$ADDR_B:5602" -- tcp-tx --connect "$ADDR_B:5602"
done

# --- 2. calls -------------------------------------------------------------------
ip netns exec gwb "${pin_b[@]}" "$PY" "$BENCH" echo --sock "$B" --service pyecho \
    >"$runs/echo-py.json" 2>"$runs/echo-py.err" &
echo_py=$!
gw_cleanup_push _gw_stop_pid "$echo_py"
ip netns exec gwb "${pin_b[@]}" "$BIN/gw-perf" echo -s "$B" -e cecho >"$runs/echo-c.json" 2>"$runs/echo-c.err" &
echo_c=$!
gw_cleanup_push _gw_stop_pid "$echo_c"
gw_wait_ready "$runs/echo-py.err" "ready" "$echo_py" "the Python echo service"
gw_wait_ready "$runs/echo-c.err" "ready" "$echo_c" "the C echo service"

pycall() { # NAME SUBCOMMAND ARGS...: a Python caller in gwa
    local what=$1
    shift
    ip netns exec gwa "${pin_a[@]}" "$PY" "$BENCH" "$@" >"$runs/$what.json" 2>"$runs/$what.err" ||
        gw_log "python bench: $what failed ($(tail -n 1 "$runs/$what.err"))"
}
ccall() { # NAME gw-perf-call-args...: the C caller in gwa
    local what=$1
    shift
    ip netns exec gwa "${pin_a[@]}" "$BIN/gw-perf" call -s "$A" -n 2 -e cecho -z 24 "$@" \
        >"$runs/$what.json" 2>"$runs/$what.err" ||
        gw_log "python bench: $what failed ($(tail -n 1 "$runs/$what.err"))"
}
gw_log "python bench: calls one at a time, $calls each (after $warmup)"
((warmup > 0)) && ccall call-c_c-warmup -w 1 -m "$warmup"
ccall call-c_c -w 1 -m "$calls"
pycall call-py_py call --sock "$A" --node 2 --service pyecho --calls "$calls" --warmup "$warmup"
pycall call-py_c call --sock "$A" --node 2 --service cecho --calls "$calls" --warmup "$warmup"
gw_log "python bench: $concurrency calls at once, $acalls in all"
pycall acall-aio_py acall --sock "$A" --node 2 --service pyecho --calls "$acalls" \
    --concurrency "$concurrency"
ccall acall-aio_c -w "$concurrency" -m $(((acalls + concurrency - 1) / concurrency))
kill -TERM "$echo_py" "$echo_c" 2>/dev/null || true
wait "$echo_py" "$echo_c" 2>/dev/null || true
gw_gateways_down
_bench_addrs_down

rc=0
"$PY" "$BENCH" report "$out" || rc=$?
if ((save)); then
    cp "$out/python.json" "$root/doc/bench/python.json"
    cp "$out/report.txt" "$root/doc/bench/python-report.txt"
    cp "$out/python.png" "$root/doc/bench/python.png" 2>/dev/null || true
    gw_log "saved to doc/bench/"
fi
gw_log "python bench: results in $out"
exit "$rc"
