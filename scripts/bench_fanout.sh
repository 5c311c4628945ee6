#!/usr/bin/env bash
# bench_fanout.sh: one signal to S subscribers, by a topic against the
# fan-out a publisher does today (one send per subscriber). One run on the
# cable (alpha and beta); for S = 1, 2, 4, 8, 16 the subscribers are split
# between beta (ceil(S/2)) and alpha itself (the rest, local):
#   topic  one publisher process, WRITERS writers, MSGS messages each, to
#          topic "volts"; every subscriber verifies (each message once, in
#          order per writer);
#   sends  the same messages sent to each subscriber's endpoint in turn
#          (gw-perf tx --each), every endpoint verifying the same way.
# Per S and way: published msg/s (the publisher's), deliveries/s (all
# subscribers' messages over the longest one's time), wire bytes per
# published message (alpha's port bytes out over messages published), and
# the publisher's CPU per message. Then a latest subscriber on beta that
# reads 10 messages a second beside 4 hold ones: what it saw (the newest
# per writer, in order), beta's store (conflated, evicted) and the others'
# rate against the same run without it.
# Results: fanout.json, report.txt and fanout.png in
# results/bench-fanout-<time>/.
#
#   scripts/bench_fanout.sh [--writers W] [--msgs M] [--size BYTES] [--subs "1 2 4 8 16"]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
writers=250 msgs=200 size=225 subs="1 2 4 8 16"
while (($#)); do
    case $1 in
    --writers) writers=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --subs) subs=$2; shift 2 ;;
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

# Alpha knows beta subscribes to volts (beta's advertisement arrived).
beta_subscribes() {
    [[ ,$(gw_topic_nodes alpha volts), == *,2,* ]]
}

# run_one WAY S [latest]: one verified run; JSON in $out/$run-*.json
run_one() {
    local way=$1 s=$2 latest=${3:-} k eps="" b0
    run=$way-$s${latest:+-latest}
    pids=()
    gw_log "fanout bench: $run"
    for k in $(seq 1 "$s"); do
        local where=gwb sock=beta node=2
        ((k > (s + 1) / 2)) && where=gwa sock=alpha node=1
        if [[ $way == topic ]]; then
            sub "$where" "$sock" "$k" -e volts --topic --expect "$total"
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
        for _ in $(seq 300); do beta_subscribes && break; sleep 0.1; done
        beta_subscribes || gw_die "fanout bench: alpha never heard of beta's subscribers"
    fi
    b0=$(gw_stat alpha tx_bytes)
    local tx=(-w "$writers" -m "$msgs" -z "$size")
    if [[ $way == topic ]]; then
        ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock --topic -e volts "${tx[@]}" \
            >"$work/$run-tx.json" 2>"$work/$run-tx.err"
    else
        ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock --each -e "$eps" "${tx[@]}" \
            >"$work/$run-tx.json" 2>"$work/$run-tx.err"
    fi
    local fail=0 p
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    ((fail)) && { cat "$work/$run"-*.err >&2; gw_die "fanout bench: $run failed verification"; }
    echo "{\"tx_bytes\": $(($(gw_stat alpha tx_bytes) - b0)), \"beta_conflated\": $(gw_stat beta pub_conflated), \"beta_evicted\": $(gw_stat beta pub_evicted)}" >"$work/$run-wire.json"
    cp "$work/$run"-*.json "$out/"
}

gw_gateways_up "$work"
for s in $subs; do
    run_one topic "$s"
    run_one sends "$s"
done
run_one topic 4
run_one topic 4 latest
gw_gateways_down
cp "$work/alpha.json" "$out/gw-alpha.json"
cp "$work/beta.json" "$out/gw-beta.json"
python3 "$ROOT/scripts/bench_fanout_report.py" "$out" "$writers" "$msgs" "$subs"
gw_log "fanout bench: results in $out"
