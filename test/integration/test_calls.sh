#!/usr/bin/env bash
# ecall's vocabulary across a mesh of four gateways (scripts/mesh.sh), two
# of them (n2, n4) pooled at both ends (2 worker and 2 receiver lcores):
#  1. every call outcome and every multi-node pattern's policy, with nodes
#     answering ok (n1, n2, n4), failing (n3), not up (node 9) and a service
#     that never answers (gw-rpc-check patterns, run on n1);
#  2. casts from two nodes to a third: each sender's casts arrive once and
#     in order (gw-perf tx --cast / rx --service);
#  3. thousands of concurrent calls from several clients on three nodes,
#     each reply matched to its own call (gw-perf call checks the echoed
#     payload);
#  4. a gateway killed (SIGKILL) while 1,000 calls to it are in flight, with
#     a 60 s call timeout: every call still ends, failed as badrpc, none by
#     timeout, and calls to the other node go on untouched.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build
gw_workdir calls
GW_MESH_POOLED="2 4" gw_mesh_up "$work" 4
sock() { echo "/run/gridwire/n$1.sock"; }

# bg NAME NODE CMD...: a client in node NODE's namespace, in the background.
declare -A PID=()
bg() {
    local name=$1 k=$2
    shift 2
    ip netns exec "gwm$k" "$@" >"$work/$name.json" 2>"$work/$name.err" &
    PID[$name]=$!
    gw_cleanup_push _gw_stop_pid "${PID[$name]}"
}
ready() { # NAME WORD: wait until the client's stderr says WORD
    gw_wait_ready "$work/$1.err" "$2" "${PID[$1]}" "$1"
}

gw_log "1. calls and patterns"
bg svc1 1 "$BIN/test/gw-rpc-check" serve -s "$(sock 1)" -e svc --behave ok
bg svc2 2 "$BIN/test/gw-rpc-check" serve -s "$(sock 2)" -e svc --behave ok
bg quiet2 2 "$BIN/test/gw-rpc-check" serve -s "$(sock 2)" -e quiet --behave silent
bg svc3 3 "$BIN/test/gw-rpc-check" serve -s "$(sock 3)" -e svc --behave fail
bg svc4 4 "$BIN/test/gw-rpc-check" serve -s "$(sock 4)" -e svc --behave ok
for n in svc1 svc2 quiet2 svc3 svc4; do ready "$n" serving; done
ip netns exec gwm1 "$BIN/test/gw-rpc-check" patterns -s "$(sock 1)" -e svc --ok 1,2,4 --fail 3 \
    --absent 9 --quiet quiet@2 --timeout-ms 2000 | tee "$work/patterns.out"

gw_log "2. casts from n1 and n3 to n2, in order per sender"
bg casts 2 "$BIN/app/gw-perf" rx -s "$(sock 2)" -e castsink --service --expect 400000 \
    --writers-max 200 --idle-timeout 20
ready casts "rx ready"
ip netns exec gwm1 "$BIN/app/gw-perf" tx --cast -s "$(sock 1)" -n 2 -e castsink -w 100 \
    -m 2000 >"$work/cast1.json" &
c1=$!
ip netns exec gwm3 "$BIN/app/gw-perf" tx --cast -s "$(sock 3)" -n 2 -e castsink -w 100 \
    -m 2000 --id-base 100 >"$work/cast3.json"
wait "$c1"
wait "${PID[casts]}" || true

gw_log "3. concurrent calls: 2 clients x 1,000 callers on n1, 1 x 1,000 on n3 and on n4, to n2"
bg echo2 2 "$BIN/app/gw-perf" echo -s "$(sock 2)" -e echo
bg echo3 3 "$BIN/app/gw-perf" echo -s "$(sock 3)" -e echo
ready echo2 "echo ready"
ready echo3 "echo ready"
for k in a b; do
    bg "calls1$k" 1 "$BIN/app/gw-perf" call -s "$(sock 1)" -n 2 -e echo -w 1000 -m 100
done
bg calls3 3 "$BIN/app/gw-perf" call -s "$(sock 3)" -n 2 -e echo -w 1000 -m 100
bg calls4 4 "$BIN/app/gw-perf" call -s "$(sock 4)" -n 2 -e echo -w 1000 -m 100
for n in calls1a calls1b calls3 calls4; do wait "${PID[$n]}" || true; done

gw_log "4. n3 killed with 1,000 calls in flight to it"
bg lost 1 "$BIN/app/gw-perf" call -s "$(sock 1)" -n 3 -e echo -w 1000 -m 100000 \
    --timeout-ms 60000 --stop-on-down --stats-period 1
bg steady 1 "$BIN/app/gw-perf" call -s "$(sock 1)" -n 2 -e echo -w 100 -m 3000 \
    --timeout-ms 60000
ready lost "calls/s"
gw_log "killing n3"
kill -9 "${GW_MESH_PID[3]}"
wait "${PID[lost]}" || true
wait "${PID[steady]}" || true
kill -TERM "${PID[svc1]}" "${PID[svc2]}" "${PID[svc4]}" "${PID[quiet2]}" "${PID[echo2]}" 2>/dev/null || true
sleep 0.5

python3 - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
def j(name):
    try:
        return json.load(open(f"{work}/{name}.json"))
    except Exception as e:
        return {"error": f"{name}: {e}"}
bad = []
out = open(f"{work}/patterns.out").read()
passed, failed = out.count("PASS "), out.count("FAIL ")
print(f"1. patterns: {passed} passed, {failed} failed")
if failed or passed < 25: bad.append(f"patterns: {failed} failed, {passed} passed")

rx, c1, c3 = j("casts"), j("cast1"), j("cast3")
print(f"2. casts: sent {c1.get('sent')} + {c3.get('sent')}, received {rx}")
if rx.get("delivered") != 400000 or rx.get("duplicates") or rx.get("order_violations") or rx.get("malformed"):
    bad.append(f"casts: {rx}")

for n in ("calls1a", "calls1b", "calls3", "calls4"):
    c = j(n)
    print(f"3. {n}: {c.get('ok')} ok of {c.get('calls')}, wrong {c.get('wrong')}, "
          f"{c.get('calls_per_s')} calls/s, rtt p50 {c.get('lat_us', {}).get('p50')} us")
    if c.get("ok") != 100000 or c.get("wrong") != 0: bad.append(f"{n}: {c}")

lost, steady = j("lost"), j("steady")
print(f"4. calls to the killed node: {lost}")
print(f"   calls to the other node meanwhile: {steady}")
ended = sum(lost.get(k, 0) for k in ("ok", "timeout", "hostdown", "unreachable", "noservice", "remote", "other"))
if ended != lost.get("calls") or lost.get("wrong"): bad.append("lost: not every call ended once")
if lost.get("timeout"): bad.append(f"lost: {lost['timeout']} calls waited for their timeout")
if lost.get("hostdown", 0) + lost.get("unreachable", 0) == 0: bad.append("lost: no badrpc seen")
if steady.get("ok") != 300000 or steady.get("wrong"): bad.append(f"steady: {steady}")
for k in (1, 2, 4):
    if "peer 3 (n3) is down" not in open(f"{work}/n{k}.log").read():
        bad.append(f"n{k} never saw n3 go down")
print("FAIL: " + "; ".join(bad) if bad else "ok: calls, patterns, casts and node loss behave")
sys.exit(1 if bad else 0)
PY
