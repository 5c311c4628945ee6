#!/usr/bin/env bash
# [auth] mode encrypt, and keys that change while messages flow:
#  1. verified encrypted runs on the cable (AES-256-GCM, then
#     ChaCha20-Poly1305) and on the veths; on the veths
#     tshark captures beta's side: a run in mode authenticate shows the
#     messages' plaintext ("perf" headers), the encrypted one none, and the
#     dissector marks its payloads encrypted;
#  2. rotation under load: a new secret every second for 6 s, loaded on
#     alpha with `gwctl key load` and on beta by rewriting its key file and
#     SIGHUP, the frame keys also rolling every second: every message
#     delivered once, in order, and nothing refused but HELLOs under a key
#     the other side has not loaded yet (each side sends one under each key
#     it holds);
#  3. a peer with the old key only: alpha loads a new secret and retires the
#     old one (overlap_s = 3); beta refuses alpha's frames and counts them
#     (auth_unknown_key), then loads it, and the run completes: every
#     message delivered or reported to its sender;
#  4. a restarted peer (kill -9 mid-run, on the veths, captured): it comes
#     back with a new epoch and so new keys, and no (key, nonce) in the
#     capture ever covers two different frames;
#  5. bad key files: at start one line and exit 2; at run time (gwctl key
#     load, SIGHUP) one line, the keys in use kept and the error counted.
# gw-timeout: 300
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
GWCTL=$ROOT/app/gwctl/gwctl
LUA=$ROOT/app/wireshark/gridwire.lua
command -v tshark >/dev/null || gw_die "no tshark: ./scripts/gw deps installs it"
gw_workdir crypto
newkey() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1"; }
newkey "$work/key"
fail=0
check() { # WHAT PYTHON-EXPR JSON
    if python3 -c "import json, sys; js = json.loads(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$3"; then
        gw_log "ok: $1"
    else
        gw_log "FAIL: $1: $3"
        fail=1
    fi
}
OK='js["delivered"] == js["sent"] and not js["duplicates"] and not js["order_violations"] and not js["sender_failed"]'
ENC=(--set "auth.key_file=$work/key" --set auth.mode=encrypt)

# 1. Encrypted runs.
run=$("$ROOT/scripts/pair.sh" --procs 2 --writers 100 --msgs 2000 "${ENC[@]}" | tail -1)
check "cable, encrypted: every message once and in order" "$OK" "$run"
run=$("$ROOT/scripts/pair.sh" --procs 1 --writers 100 --msgs 1000 "${ENC[@]}" \
    --set auth.aead=chacha20-poly1305 | tail -1)
check "cable, encrypted with ChaCha20-Poly1305 (CPUs without AES-NI)" "$OK" "$run"
export GW_LINK=veth
gw_ns_up >/dev/null
captured() { # PCAP MODE: a verified run on the veths, beta's side captured
    ip netns exec gwb tshark -q -B 128 -i veth-b0 -i veth-b1 -w "$1" >"$work/tshark.out" 2>&1 &
    local cap=$!
    gw_cleanup_push _gw_stop_pid "$cap"
    gw_wait_ready "$work/tshark.out" "Capture started" "$cap" "tshark on beta's veths"
    "$ROOT/scripts/pair.sh" --keep-ns --procs 1 --writers 20 --msgs 1000 --rate 20000 \
        --set "auth.key_file=$work/key" --set "auth.mode=$2" --urgent-every 4 | tail -1
    sleep 0.5
    kill -INT "$cap"
    wait "$cap" 2>/dev/null || true
}
plain=$(captured "$work/auth.pcap" authenticate)
enc=$(captured "$work/enc.pcap" encrypt)
check "veths, authenticated: every message once and in order" "$OK" "$plain"
check "veths, encrypted: every message once and in order" "$OK" "$enc"
# The messages' own header: "perf", then the writer's number (< 2^24).
seen() { python3 -c 'import re, sys; print(len(re.findall(rb"perf.\x00\x00\x00", open(sys.argv[1], "rb").read(), re.S)))' "$1"; }
n_plain=$(seen "$work/auth.pcap") n_enc=$(seen "$work/enc.pcap")
gw_log "plaintext message headers in the capture: $n_plain authenticated, $n_enc encrypted"
((n_plain >= 1000)) || { gw_log "FAIL: the authenticated capture shows only $n_plain message headers"; fail=1; }
((n_enc == 0)) || { gw_log "FAIL: $n_enc plaintext message headers in the encrypted capture"; fail=1; }
ts() { tshark -X "lua_script:$LUA" -r "$1" -Y "$2" 2>/dev/null | wc -l; }
n_ct=$(ts "$work/enc.pcap" "gridwire.auth.encrypted == 1 && gridwire.ciphertext")
n_rec=$(ts "$work/enc.pcap" "gridwire.rec")
gw_log "dissector: $n_ct frames with an encrypted payload, $n_rec with records shown"
((n_ct > 0 && n_rec == 0)) || { gw_log "FAIL: the dissector should show ciphertext, never records"; fail=1; }

# 2. Rotation under load, on the cable.
export GW_LINK=cable
cp "$work/key" "$work/key-b"
# Each its own key file: a later --set would win over GW_ARGS_*.
GW_ARGS_A="--set auth.key_file=$work/key" GW_ARGS_B="--set auth.key_file=$work/key-b" \
    gw_gateways_up "$work" --set auth.mode=encrypt --set auth.overlap_s=3 --set auth.roll_s=1
gw_ledger_run "$work" 100 20000 250000
for i in 1 2 3 4 5 6; do
    sleep 1
    newkey "$work/k$i"
    if ((i % 2)); then # either side may go first
        "$GWCTL" -n alpha key load "$work/k$i" >/dev/null
        cp "$work/k$i" "$work/key-b" && kill -HUP "$GW_PID_B"
    else
        cp "$work/k$i" "$work/key-b" && kill -HUP "$GW_PID_B"
        sleep 0.3
        "$GWCTL" -n alpha key load "$work/k$i" >/dev/null
    fi
done
wait "$GW_PID_TX" || true
wait "$GW_PID_RX" || true
read -r missing both < <(gw_ledger_count "$work" 2000000)
rx=$(cat "$work/rx.json")
keys_a=$("$GWCTL" -n alpha raw /gridwire/key | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))')
stats_b=$("$GWCTL" -n beta raw /gridwire/stats | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))')
gw_log "rotation: $(python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["delivered"], "received,", r["order_violations"], "out of order")' "$rx"), $missing lost in silence; alpha: $keys_a"
check "rotation under load: all 2,000,000 received, in order, none twice" \
    'js["delivered"] == 2000000 and not js["order_violations"] and not js["duplicates"]' "$rx"
check "rotation: alpha loaded 7 secrets and rolled its frame keys" \
    'js["loads"] == 7 and js["rolls"] >= 3' "$keys_a"
check "rotation: beta refused nothing as forged, replayed or in another mode" \
    'js["auth_forged"] + js["auth_wrong_mode"] + js["auth_replayed"] + js["auth_truncated"] == 0' "$stats_b"

# 3. A peer with the old key only: refused and counted, then accepted.
gw_ledger_run "$work" 10 3000 10000
sleep 1
newkey "$work/k-new"
"$GWCTL" -n alpha key load "$work/k-new" >/dev/null
sleep 4.5 # the overlap (3 s) runs out: alpha seals with the new key only
refused=$("$GWCTL" -n beta raw /gridwire/stats | python3 -c 'import json, sys; print(json.load(sys.stdin)["auth_unknown_key"])')
gw_log "beta, with the old key only, refused $refused frames under alpha's new key"
((refused > 0)) || { gw_log "FAIL: beta counted no frame under a key it does not hold"; fail=1; }
cp "$work/k-new" "$work/key-b" && kill -HUP "$GW_PID_B"
wait "$GW_PID_TX" || true
wait "$GW_PID_RX" || true
read -r missing both < <(gw_ledger_count "$work" 30000)
gw_log "after beta loaded it: $missing of 30,000 lost in silence"
((missing == 0)) || { gw_log "FAIL: $missing messages neither delivered nor reported"; fail=1; }
check "the rest of the run was received" 'js["delivered"] > 0 and not js["order_violations"]' "$(cat "$work/rx.json")"

# 5b. Bad key files at run time: one line, the keys kept, counted.
echo "not a key" >"$work/bad"
before=$("$GWCTL" -n alpha key | awk '/^keys/ {print $2}')
if out=$("$GWCTL" -n alpha key load "$work/bad" 2>&1); then
    gw_log "FAIL: gwctl key load took a bad key file"
    fail=1
fi
gw_log "gwctl key load of a bad file: $out"
[[ $out == *"64 hex digits"* && $(wc -l <<<"$out") == 1 ]] || { gw_log "FAIL: not one line naming the fix"; fail=1; }
cp "$work/bad" "$work/key-b" && kill -HUP "$GW_PID_B"
sleep 0.5
after=$("$GWCTL" -n alpha key | awk '/^keys/ {print $2}')
errs_b=$("$GWCTL" -n beta key | awk '/^load_errors/ {print $2}')
[[ $before == "$after" && $errs_b == 1 ]] ||
    { gw_log "FAIL: keys before $before after $after, beta's load errors $errs_b (want 1)"; fail=1; }
grep -q "key not loaded, the keys in use stay" "$work/beta.log" ||
    { gw_log "FAIL: beta did not say why the SIGHUP's key was refused"; fail=1; }
gw_gateways_down

# 5a. At start: exit 2, one line.
for bad in "$work/missing" "$work/bad"; do
    rc=0
    ip netns exec gwa "$BIN/gridwired" -c "$ROOT/config/demo-a.ini" \
        --set "eal.args=--no-pci --no-huge -m 256 --no-shconf" --set "auth.key_file=$bad" \
        >/dev/null 2>"$work/start.err" || rc=$?
    out=$(grep "cannot start" "$work/start.err" || true)
    gw_log "start with key file ${bad##*/}: exit $rc, $out"
    [[ $rc == 2 && $out == *"[auth] key_file"* ]] ||
        { gw_log "FAIL: want exit 2 and one line naming [auth] key_file"; fail=1; }
done

# 4. A restarted peer, captured: a new epoch, no nonce reused. Each side
# captures what comes in (af_packet's own frames bypass the capture).
export GW_LINK=veth
caps=()
for s in a b; do
    ip netns exec "gw$s" tshark -q -B 128 -i "veth-${s}0" -i "veth-${s}1" -w "$work/restart-$s.pcap" \
        >"$work/tshark-$s.out" 2>&1 &
    caps+=($!)
    gw_cleanup_push _gw_stop_pid $!
    gw_wait_ready "$work/tshark-$s.out" "Capture started" $! "tshark on gw$s's veths"
done
gw_gateways_up "$work" "${ENC[@]}"
GW_URGENT_EVERY=4 gw_ledger_run "$work" 20 5000 20000 --reconnect
sleep 2
kill -9 "$GW_PID_B"
sleep 1.5
GW_PID_B=$(gw_gateway_start "$work" 1 "${ENC[@]}")
gw_cleanup_push _gw_stop_pid "$GW_PID_B"
wait "$GW_PID_TX" || true
wait "$GW_PID_RX" || true
read -r missing both < <(gw_ledger_count "$work" 100000)
gw_gateways_down
kill -INT "${caps[@]}"
wait "${caps[@]}" 2>/dev/null || true
((missing == 0)) || { gw_log "FAIL: across the restart $missing messages lost in silence"; fail=1; }
for s in a b; do
    tshark -X "lua_script:$LUA" -r "$work/restart-$s.pcap" -Y "gridwire.auth" -T fields -E separator=, \
        -e gridwire.src_node -e gridwire.dst_node -e gridwire.epoch -e gridwire.auth.key_id \
        -e gridwire.auth.roll -e gridwire.auth.slot -e gridwire.auth.counter -e gridwire.auth.tag \
        2>/dev/null
done >"$work/nonces.csv"
python3 - "$work/nonces.csv" <<'PY' || fail=1
import sys
seen, epochs, frames = {}, {}, 0
for line in open(sys.argv[1]):
    src, dst, epoch, key, roll, slot, ctr, tag = line.strip().split(",")
    frames += 1
    epochs.setdefault(src, set()).add(epoch)
    nonce = (src, dst, epoch, key, roll, slot, ctr)
    if seen.setdefault(nonce, tag) != tag:
        print(f"FAIL: nonce {nonce} covers two different frames")
        sys.exit(1)
beta = epochs.get("2", set())
print(f"restart: {frames} sealed frames captured from both, {len(seen)} nonces, none reused; "
      f"beta's epochs {sorted(beta)}")
if frames < 1000 or len(beta) < 2:
    print("FAIL: too few frames captured, or beta came back with its old epoch")
    sys.exit(1)
PY
exit $fail
