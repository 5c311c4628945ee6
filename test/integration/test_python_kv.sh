#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The Python binding's example, bindings/python/examples/kv.py, against the
# C one it copies, app/gw-kv, on a mesh of three gateways: n1 and n3 hold
# the store with gw-kv, n2 with kv.py. What one writes the other reads
# (kv.py puts to all, gw-kv gets from each node alone, and the reverse); a
# missing key and a bad request fail through either; with n3's gateway
# killed, kv.py's put passes over it, unless --strict. Also kv.py's bad
# usage and a gateway not there (one line, status 1), and its serve ending
# cleanly on SIGTERM and on SIGINT. Skipped when the binding is not built.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
PYDIR=$ROOT/build/bindings/python
KV=$ROOT/bindings/python/examples/kv.py
if ! compgen -G "$PYDIR/gridwire/_gridwire*.so" >/dev/null; then
    echo "skip: no Python binding in $PYDIR/gridwire (it needs python3-dev: ./scripts/gw build)"
    exit 0
fi
gw_workdir python-kv
# mesh.sh up kills what runs in the mesh's namespaces: someone else's test.
for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E '^gwm([0-9]+|sw)$' || true); do
    left=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    [[ -z ${left// /} ]] || gw_die "processes still run in namespace $ns: $left(another mesh test?)"
done
gw_mesh_up "$work" 3 >/dev/null

# prog c|py: the command line of gw-kv or kv.py (Debian's python3, the binding's).
prog() {
    if [[ $1 == c ]]; then
        echo "$ROOT/build/app/gw-kv"
    else
        printf '%s\n' env "PYTHONPATH=$PYDIR" /usr/bin/python3 "$KV"
    fi
}

# start NAME NODE c|py: a server on node NODE; its stderr in WORK/NAME.err.
declare -A SRV=()
start() {
    local srv=$1 k=$2 cmd
    mapfile -t cmd < <(prog "$3")
    ip netns exec "gwm$k" "${cmd[@]}" -s "/run/gridwire/n$k.sock" serve 2>"$work/$srv.err" &
    SRV[$srv]=$!
    gw_cleanup_push _gw_stop_pid "${SRV[$srv]}"
    gw_wait_ready "$work/$srv.err" serving "${SRV[$srv]}" "$srv"
}

# run NODE c|py ARGS...: a client on node NODE; its output (stdout and
# stderr) in $out, its status in $rc, both kept in WORK/clients.log.
run() {
    local k=$1 cmd
    mapfile -t cmd < <(prog "$2")
    shift 2
    rc=0
    out=$(ip netns exec "gwm$k" "${cmd[@]}" -s "/run/gridwire/n$k.sock" "$@" 2>&1) || rc=$?
    printf '$ %s on n%s: %s\n%s\n[status %s]\n' "${cmd[-1]##*/}" "$k" "$*" "$out" "$rc" \
        >>"$work/clients.log"
}

# check DESC STATUS LINE...: the last run ended with STATUS and printed
# these lines (extended regexes, each for a whole line) and no others.
fail=0
check() {
    local desc=$1 want=$2 line bad="" lines
    shift 2
    [[ $rc == "$want" ]] || bad="status $rc, not $want"
    for line in "$@"; do
        grep -qxE -- "$line" <<<"$out" || bad+="${bad:+; }no line '$line'"
    done
    if [[ $(wc -l <<<"$out") != "$#" ]]; then
        bad+="${bad:+; }$(wc -l <<<"$out") lines, not $#"
    fi
    if [[ -z $bad ]]; then
        echo "ok: $desc"
    else
        echo "FAIL: $desc: $bad"
        mapfile -t lines <<<"$out"
        printf '    %s\n' "${lines[@]}"
        fail=1
    fi
}

gw_log "servers: gw-kv on n1 and n3, kv.py on n2"
start c1 1 c
start py2 2 py
start c3 3 c
run 1 py nodes
check "kv.py nodes on n1: all three up" 0 "node 1 n1 up \(this node\)" "node 2 n2 up" \
    "node 3 n3 up"

gw_log "kv.py writes, gw-kv reads; gw-kv writes, kv.py reads"
run 1 py put --nodes 1,2,3 colour "deep blue"
check "kv.py put to n1, n2, n3: each stored it" 0 "put colour: ok" \
    "  node 1: ok: stored" "  node 2: ok: stored" "  node 3: ok: stored"
for k in 1 2 3; do
    run $((k % 3 + 1)) c get --nodes "$k" colour
    check "gw-kv get from n$k alone: kv.py's value" 0 "get colour: ok" \
        "  node $k: ok: deep blue"
done
run 2 c put --nodes 1,2,3 shape square
check "gw-kv put to n1, n2, n3: each stored it" 0 "put shape: ok" \
    "  node 1: ok: stored" "  node 2: ok: stored" "  node 3: ok: stored"
for k in 1 2 3; do
    run $((k % 3 + 1)) py get --nodes "$k" shape
    check "kv.py get from n$k alone: gw-kv's value" 0 "get shape: ok" "  node $k: ok: square"
done

gw_log "failures: a missing key, a bad request, bad usage"
run 1 c get --nodes 1,2,3 no-such-key
check "gw-kv get of a missing key from all three fails" 1 \
    "get no-such-key: the handler failed" "  node [123]: the handler failed: no such key"
run 1 c get --nodes 2 no-such-key
check "gw-kv get of a missing key from kv.py's n2 fails with its reason" 1 \
    "get no-such-key: the handler failed" "  node 2: the handler failed: no such key"
run 3 py get --nodes 1,2,3 no-such-key
check "kv.py get of a missing key from all three fails" 1 \
    "get no-such-key: the handler failed" "  node [123]: the handler failed: no such key"
run 3 py get --nodes 3 no-such-key
check "kv.py get of a missing key from gw-kv's n3 fails with its reason" 1 \
    "get no-such-key: the handler failed" "  node 3: the handler failed: no such key"
long=$(printf 'k%.0s' $(seq 70)) # a key of 70 bytes: gw-kv's hold 63
run 1 c put --nodes 2 "$long" v
check "gw-kv put of a 70-byte key to kv.py's n2: bad request" 1 \
    "put $long: the handler failed" "  node 2: the handler failed: bad request"
run 1 py put --nodes 1,2,3 "$long" v
check "kv.py put of a 70-byte key: bad request" 1 "put $long: the handler failed" \
    "  node 1: the handler failed: bad request" "  node 2: the handler failed: bad request" \
    "  node 3: the handler failed: bad request"
run 1 py put colour red
check "kv.py put without --nodes: one line, status 1" 1 \
    "kv.py: put needs --nodes \(usage: kv\.py .*\)"
run 1 py get --nodes 1,x colour
check "kv.py get with a bad node id: one line, status 1" 1 \
    "kv.py: --nodes takes node ids like 1,2,3, not '1,x' \(usage: kv\.py .*\)"

gw_log "killing gateway n3"
{ kill -9 "${GW_MESH_PID[3]}" && wait "${GW_MESH_PID[3]}"; } 2>/dev/null || true
_gw_stop_pid "${SRV[c3]}" # its gw-kv would spin on its gateway gone
for _ in $(seq 300); do # n1 declares n3 down after proto.peer_timeout_ms
    grep -q "peer 3 (n3) is down" "$work/n1.log" && break
    sleep 0.1
done
run 1 py nodes
check "kv.py nodes on n1: n3 down" 0 "node 1 n1 up \(this node\)" "node 2 n2 up" \
    "node 3 n3 down"
run 3 py nodes
check "kv.py on n3 without its gateway: one line, status 1" 1 \
    "kv.py: cannot connect to /run/gridwire/n3\.sock: .* \(is gridwired running\?\)"
run 1 py get --nodes 3,2 colour
check "kv.py get from n3 or n2: n2 answers" 0 "get colour: ok" "  node 2: ok: deep blue"
run 1 py put --nodes 1,2,3 colour red
check "kv.py put to n1, n2, n3 without --strict: ok, n3 badrpc" 0 "put colour: ok" \
    "  node 1: ok: stored" "  node 2: ok: stored" "  node 3: badrpc: .*"
run 1 c get --nodes 2 colour
check "gw-kv get from n2: that put's value" 0 "get colour: ok" "  node 2: ok: red"
run 1 py put --nodes 1,2,3 colour green --strict
check "kv.py put to n1, n2, n3 with --strict: fails, badrpc, n1 and n2 stored it" 1 \
    "put colour: badrpc: .*" "  node 1: ok: stored" "  node 2: ok: stored" "  node 3: badrpc: .*"

gw_log "kv.py serve stopped by SIGTERM, then again by SIGINT"
for sig in TERM INT; do
    [[ $sig == INT ]] && start py2 2 py
    kill -"$sig" "${SRV[py2]}"
    rc=0
    wait "${SRV[py2]}" || rc=$?
    out=$(cat "$work/py2.err")
    check "kv.py serve ends on SIG$sig: status 0, nothing more said" 0 "kv.py: node 2 serving kv"
done
exit $fail
