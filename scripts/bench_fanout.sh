#!/usr/bin/env bash
# bench_fanout.sh: one signal to S subscribers, by a topic against the
# fan-out a publisher does today (one send per subscriber). One run, in two
# places: on the cable, the publisher on alpha and the subscribers split
# between beta (ceil(S/2)) and alpha itself (the rest, local); on a mesh of
# 3 gateways, the publisher on n1 and the subscribers split between n2
# (ceil(S/2)) and n3. For S = 1, 2, 4, 8, 16:
#   topic  one publisher process, WRITERS writers, MSGS messages each, to
#          topic "volts"; every subscriber verifies (each message once, in
#          order per writer);
#   sends  the same messages sent to each subscriber's endpoint in turn
#          (gw-perf tx --each), every endpoint verifying the same way.
# Per S and way: published msg/s (the publisher's), deliveries/s (all
# subscribers' messages over the longest one's time), wire bytes and
# records per published message (the publishing gateway's bytes and
# records out, PUB ones included, over messages published), the
# publishing gateway's CPU (/proc, user and system) and the publisher's
# CPU per message. Then, on
# the cable, a latest subscriber on beta that reads 10 messages a second
# beside 4 hold ones: what it saw (the newest per writer, in order), beta's
# store (conflated, evicted) and the others' rate against the same run
# without it (N runs of each, alternated, medians; M messages a writer).
# Results: fanout.json, report.txt and fanout.png in
# results/bench-fanout-<time>/.
#
#   scripts/bench_fanout.sh [--writers W] [--msgs M] [--size BYTES] [--subs "1 2 4 8 16"]
#                           [--places "cable mesh"] [--reps N] [--latest-msgs M]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
writers=250 msgs=2000 size=225 subs="1 2 4 8 16" places="cable mesh" reps=3 latest_msgs=20000
while (($#)); do
    case $1 in
    --writers) writers=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --subs) subs=$2; shift 2 ;;
    --places) places=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --latest-msgs) latest_msgs=$2; shift 2 ;;
    *) gw_die "bench_fanout.sh: unknown option $1 (see the header of scripts/bench_fanout.sh)" ;;
    esac
done
[[ -x $BIN/gridwired && -x $BIN/gw-perf ]] || gw_die "not built: run ./scripts/gw build"
out=$ROOT/results/bench-fanout-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
export GW_LINK=cable
gw_ns_up >/dev/null
gw_workdir fanout
total=$((writers * msgs))

# The place the runs are in: the publisher's namespace, socket and
# gateway (name, pid), and where subscriber k of s goes (sub_at).
place() {
    if [[ $1 == cable ]]; then
        pub_ns=gwa pub_sock=alpha pub_gw=alpha pub_pid=$GW_PID_A
    else
        pub_ns=gwm1 pub_sock=n1 pub_gw=n1 pub_pid=${GW_MESH_PID[1]}
    fi
    at=$1
}

# sub_at K S: "NS SOCK NODE" of subscriber K of S
sub_at() {
    if (($1 <= ($2 + 1) / 2)); then
        [[ $at == cable ]] && echo "gwb beta 2" || echo "gwm2 n2 2"
    else
        [[ $at == cable ]] && echo "gwa alpha 1" || echo "gwm3 n3 3"
    fi
}

# The publishing gateway's CPU seconds so far (user and system).
pub_cpu() {
    awk '{ printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$pub_pid/stat"
}

# sub NS SOCK LABEL ARGS...: a verifying receiver in namespace NS, its JSON
# in $work/$run-rx-LABEL.json
sub() {
    local nsn=$1 sock=$2 label=$3 pid
    shift 3
    ip netns exec "$nsn" "$BIN/gw-perf" rx -s "/run/gridwire/$sock.sock" --writers-max "$writers" \
        --idle-timeout 60 "$@" >"$work/$run-rx-$label.json" 2>"$work/$run-rx-$label.err" &
    pid=$!
    pids+=("$pid")
    gw_cleanup_push _gw_stop_pid "$pid"
    gw_wait_ready "$work/$run-rx-$label.err" "rx ready" "$pid" "subscriber $label"
}

# run_one WAY S [latest [REP]]: one verified run; JSON in $out/$run-*.json
run_one() {
    local way=$1 s=$2 latest=${3:-} rep=${4:-} k eps="" nodes="" b0 r0 c0 where sock node
    run=$at-$way-$s${latest:+-latest}${rep:+-$rep}
    pids=()
    gw_log "fanout bench: $run"
    for k in $(seq 1 "$s"); do
        read -r where sock node < <(sub_at "$k" "$s")
        if [[ $way == topic ]]; then
            sub "$where" "$sock" "$k" -e volts --topic --expect "$total"
            ((node == 1)) || [[ ,$nodes, == *,$node,* ]] || nodes+="${nodes:+,}$node"
        else
            sub "$where" "$sock" "$k" -e "sub$k" --expect "$total"
            eps+="${eps:+,}$node:sub$k"
        fi
    done
    # The latest subscriber reads 10 messages a second and ends once it has
    # had every writer's last.
    [[ -n $latest ]] &&
        sub gwb beta latest -e volts --topic --latest -m "$msgs" --expect "$writers" --delay-ms 100
    if [[ $way == topic ]]; then
        # The publisher's gateway has every subscribing node's advertisement.
        for _ in $(seq 300); do [[ $(gw_topic_nodes "$pub_gw" volts) == "$nodes" ]] && break; sleep 0.1; done
        [[ $(gw_topic_nodes "$pub_gw" volts) == "$nodes" ]] ||
            gw_die "fanout bench: $pub_gw never heard of the subscribers on nodes $nodes"
    fi
    b0=$(gw_stat "$pub_gw" tx_bytes) r0=$(gw_stat "$pub_gw" msgs_out)
    c0=$(pub_cpu)
    local tx=(-s "/run/gridwire/$pub_sock.sock" -w "$writers" -m "$msgs" -z "$size")
    if [[ $way == topic ]]; then
        ip netns exec "$pub_ns" "$BIN/gw-perf" tx --topic -e volts "${tx[@]}" \
            >"$work/$run-tx.json" 2>"$work/$run-tx.err"
    else
        ip netns exec "$pub_ns" "$BIN/gw-perf" tx --each -e "$eps" "${tx[@]}" \
            >"$work/$run-tx.json" 2>"$work/$run-tx.err"
    fi
    local c1 fail=0 p
    c1=$(pub_cpu)
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    ((fail)) && { cat "$work/$run"-*.err >&2; gw_die "fanout bench: $run failed verification"; }
    local conflated=0 evicted=0
    [[ $at == cable ]] && conflated=$(gw_stat beta pub_conflated) evicted=$(gw_stat beta pub_evicted)
    cat >"$work/$run-wire.json" <<EOF2
{"tx_bytes": $(($(gw_stat "$pub_gw" tx_bytes) - b0)),
 "records": $(($(gw_stat "$pub_gw" msgs_out) - r0)),
 "gateway_cpu_s": $(python3 -c "print(round($c1 - $c0, 2))"),
 "beta_conflated": $conflated, "beta_evicted": $evicted}
EOF2
    cp "$work/$run"-*.json "$out/"
}

for at in $places; do
    case $at in
    cable) gw_gateways_up "$work" ;;
    mesh) gw_mesh_up "$work" 3 ;;
    *) gw_die "fanout bench: unknown place $at (valid: cable mesh)" ;;
    esac
    place "$at"
    for s in $subs; do
        run_one topic "$s"
        run_one sends "$s"
    done
    if [[ $at == cable ]]; then
        # Alternated, for medians: the others' rate moves between runs,
        # and longer ones (LATEST_MSGS a writer) move less.
        msgs_main=$msgs msgs=$latest_msgs total=$((writers * latest_msgs))
        for r in $(seq "$reps"); do
            run_one topic 4 "" "r$r"
            run_one topic 4 latest "r$r"
        done
        msgs=$msgs_main total=$((writers * msgs))
        gw_gateways_down
        cp "$work/alpha.json" "$out/gw-alpha.json"
        cp "$work/beta.json" "$out/gw-beta.json"
    else
        for k in 1 2 3; do _gw_stop_gateway "${GW_MESH_PID[k]}"; done
        "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
    fi
done
python3 "$ROOT/scripts/bench_fanout_report.py" "$out" "$writers" "$msgs" "$subs" "$places" "$reps" "$latest_msgs"
gw_log "fanout bench: results in $out"
