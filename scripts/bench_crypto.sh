#!/usr/bin/env bash
# bench_crypto.sh: what [auth] costs. In one run, on the cable:
#   1. the unpaced maximum (scripts/pair.sh, every message verified) with
#      no [auth], with mode authenticate and with mode encrypt, ROUNDS
#      rounds interleaved; the ratios are of the medians (one run moves by
#      20 % here);
#   2. one lcore sealing and opening full frames of 225-byte messages in
#      each mode (app/gw-roles --role auth, RUNS runs, the median);
#   3. a verified run in mode encrypt while the secret changes every
#      second on both gateways (alpha by `gwctl key load`, beta by its key
#      file rewritten and SIGHUP) and the frame keys roll every second.
# It leaves crypto.json, a table (report.txt) and a plot (crypto.png) in
# results/bench-crypto-<time>/.
#
#   scripts/bench_crypto.sh [--procs P] [--writers W] [--msgs M] [--rounds R]
#                           [--rotations N]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
GWCTL=$ROOT/app/gwctl/gwctl
procs=4 writers=250 msgs=4000 rounds=3 rotations=10
while (($#)); do
    case $1 in
    --procs) procs=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --rotations) rotations=$2; shift 2 ;;
    *) gw_die "bench_crypto.sh: unknown option $1 (see the header of scripts/bench_crypto.sh)" ;;
    esac
done
[[ -x $BIN/gridwired && -x $BIN/gw-roles ]] || gw_die "not built: run ./scripts/gw build"
out=$ROOT/results/bench-crypto-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
export GW_LINK=cable
gw_ns_up >/dev/null
gw_workdir crypto-bench
newkey() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1"; }
newkey "$work/key"

# 1. The maximum, by mode, rounds interleaved.
for r in $(seq "$rounds"); do
    for mode in none authenticate encrypt; do
        gw_log "crypto bench: round $r of $rounds, $mode"
        sets=()
        [[ $mode != none ]] && sets=(--set "auth.key_file=$work/key" --set "auth.mode=$mode")
        "$ROOT/scripts/pair.sh" --keep-ns --procs "$procs" --writers "$writers" --msgs "$msgs" \
            "${sets[@]}" | tail -1 >"$out/max-$mode-$r.json"
    done
done

# 2. One lcore's seal and open.
gw_log "crypto bench: seal and open on one lcore"
taskset -c 1 "$BIN/gw-roles" --role auth --runs 5 --size 225 2>"$work/gw-roles.err" >"$out/roles.jsonl" ||
    { cat "$work/gw-roles.err" >&2; gw_die "gw-roles failed"; }

# 3. Rotation under load.
gw_log "crypto bench: a verified run while the secret changes every second, $rotations times"
cp "$work/key" "$work/key-b"
GW_ARGS_A="--set auth.key_file=$work/key" GW_ARGS_B="--set auth.key_file=$work/key-b" \
    gw_gateways_up "$work" --set auth.mode=encrypt --set auth.overlap_s=3 --set auth.roll_s=1
rot_writers=100 rot_msgs=$((2500 * (rotations + 2)))
gw_ledger_run "$work" "$rot_writers" "$rot_msgs" 250000
for i in $(seq "$rotations"); do
    sleep 1
    newkey "$work/k$i"
    "$GWCTL" -n alpha key load "$work/k$i" >/dev/null
    cp "$work/k$i" "$work/key-b" && kill -HUP "$GW_PID_B"
done
wait "$GW_PID_TX" || true
wait "$GW_PID_RX" || true
read -r missing _ < <(gw_ledger_count "$work" $((rot_writers * rot_msgs)))
"$GWCTL" -n alpha raw /gridwire/key >"$out/rotation-keys-alpha.json"
"$GWCTL" -n beta raw /gridwire/key >"$out/rotation-keys-beta.json"
gw_gateways_down
cp "$work/rx.json" "$out/rotation-rx.json"
cp "$work/tx.json" "$out/rotation-tx.json"
cp "$work/beta.json" "$out/rotation-gw-beta.json"
echo "{\"missing\": $missing, \"sent\": $((rot_writers * rot_msgs))}" >"$out/rotation-ledger.json"

python3 "$ROOT/scripts/bench_crypto_report.py" "$out"
gw_log "crypto bench: results in $out"
