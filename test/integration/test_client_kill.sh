#!/usr/bin/env bash
# Clients that die: 500 times a sender is SIGKILLed while sending and 500
# times a receiver is SIGKILLed while registered and being sent to (200 on
# the veths, and 200 on the cable again with the lcores pooled). The
# gateways reclaim every channel and endpoint (their open file descriptors
# come back to exactly what they were, their memory does not grow), other
# clients are not disturbed (a steady verified flow runs throughout), and a
# client whose gateway dies hears -EPIPE instead of waiting for ever. On
# both links, the cable and the veths.
# gw-timeout: 330
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build/app
cycles=${GW_KILL_CYCLES:-500}
gw_workdir kill
gw_ns_up >/dev/null
fail=0
run() { # LINK [WORKERS RECEIVERS CYCLES]
    export GW_LINK=$1 GW_WORKERS=${2:-0} GW_RECEIVERS=${3:-0}
    local cycles=${4:-$cycles}
    gw_log "$1 link, $GW_WORKERS workers, $GW_RECEIVERS receivers"
    gw_gateways_up "$work"

    fds() { ls "/proc/$1/fd" | wc -l; }
    # Memory as proportional set size (gw_pss): the cable's shared buffers,
    # which each end maps, count once in the two gateways' sum.

    # Before any client: what the gateways hold with nobody connected.
    fd_a=$(fds "$GW_PID_A") fd_b=$(fds "$GW_PID_B")
    rss_a=$(gw_pss "$GW_PID_A") rss_b=$(gw_pss "$GW_PID_B")

    # The steady flow: 20,000 msg/s from alpha to beta's "sink" for as long
    # as the kills take (about 40 s for 500 cycles).
    steady=$((cycles * 1600))
    gw_rx_start "$work" rx -e sink --expect "$steady" --writers-max 10 --idle-timeout 30
    pid_rx=$GW_PID_RX
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e sink -w 10 \
        -m $((steady / 10)) --rate 20000 >"$work/tx.json" 2>"$work/tx.err" &
    pid_tx=$!
    gw_cleanup_push _gw_stop_pid "$pid_tx"
    sleep 1
    gw_log "killing $cycles senders and $cycles receivers"
    for i in $(seq "$cycles"); do
        ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e victim -w 4 \
            -m 100000000 >/dev/null 2>&1 &
        s=$!
        ip netns exec gwb "$BIN/gw-perf" rx -s /run/gridwire/beta.sock -e victim --expect 100000000 \
            >/dev/null 2>&1 &
        r=$!
        sleep 0.0$((RANDOM % 5 + 1))
        kill -9 "$s" "$r" 2>/dev/null || true
        wait "$s" "$r" 2>/dev/null || true
        ((i % 100 == 0)) && gw_log "  $i cycles"
    done
    wait "$pid_tx" || true
    wait "$pid_rx" || true
    sleep 1 # the gateways poll their control sockets every millisecond
    # Everybody has gone again: the gateways must be back where they started.
    fd_a2=$(fds "$GW_PID_A") fd_b2=$(fds "$GW_PID_B")
    rss_a2=$(gw_pss "$GW_PID_A") rss_b2=$(gw_pss "$GW_PID_B")

    # The gateway goes; its client must not hang.
    ip netns exec gwb "$BIN/gw-perf" rx -s /run/gridwire/beta.sock -e orphan --expect 10 \
        --idle-timeout 60 >/dev/null 2>"$work/orphan.err" &
    orphan=$!
    for _ in $(seq 50); do grep -q "rx ready" "$work/orphan.err" && break; sleep 0.1; done
    kill -9 "$GW_PID_B"
    for _ in $(seq 50); do kill -0 "$orphan" 2>/dev/null || break; sleep 0.1; done
    orphan_alive=0
    kill -0 "$orphan" 2>/dev/null && orphan_alive=1
    kill -9 "$orphan" 2>/dev/null || true
    gw_gateways_down

    python3 - "$work" "$steady" "$fd_a" "$fd_a2" "$fd_b" "$fd_b2" "$rss_a" "$rss_a2" "$rss_b" "$rss_b2" "$orphan_alive" "$1" <<'PY' || fail=1
import json, sys
work, steady = sys.argv[1], int(sys.argv[2])
fa, fa2, fb, fb2, ra, ra2, rb, rb2, orphan_alive = map(int, sys.argv[3:12])
link = sys.argv[12]
rx = json.load(open(f"{work}/rx.json"))
bad = []
print(f"alpha: fds {fa} -> {fa2}, PSS {ra // 1024} -> {ra2 // 1024} MB; beta: fds {fb} -> {fb2}, PSS {rb // 1024} -> {rb2 // 1024} MB")
print(f"steady flow: {rx}")
if fa2 != fa or fb2 != fb: bad.append("file descriptors leaked")
if (ra2 + rb2) - (ra + rb) > 16384: bad.append("the gateways' memory grew by more than 16 MB")
if rx["delivered"] != steady or rx["duplicates"] or rx["order_violations"]:
    bad.append("the steady flow was disturbed")
if orphan_alive: bad.append("a client of a dead gateway still waits after 5 s")
err = open(f"{work}/orphan.err").read()
if "Broken pipe" not in err: bad.append(f"the orphaned client did not report EPIPE: {err!r}")
print(f"FAIL: {link}: " + "; ".join(bad) if bad else f"ok: {link}: every channel reclaimed, others undisturbed, no hang")
sys.exit(1 if bad else 0)
PY
}
run cable
run veth 0 0 200
run cable 2 2 200
exit $fail
