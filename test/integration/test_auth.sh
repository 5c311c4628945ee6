#!/usr/bin/env bash
# Frame authentication with a pre-shared key ([auth] key_file): the same
# workload with it off and on in one run (batching spreads one tag over a
# frame of messages, so the cost per message is small), then, with it on,
# forged frames (valid CRC, no or wrong tag) and replayed frames (captured
# on the wire and sent again) fired at beta during a verified run: all
# dropped and counted, every real message delivered once and in order
# (a quarter of the senders urgent: their frames overtake bulk ones, each
# under the same replay windows).
# The cost is measured on the default link (the cable); the attack runs
# on the veths, where frames can be captured and injected from outside.
# Then again pooled (2 workers, 2 receivers a gateway) and encrypted
# ([auth] mode encrypt), each replay sent
# from 4 UDP source ports so that most land on another receiver's queue
# than the original did: the slot's one replay window still refuses them
# (had each receiver its own windows, they would pass as duplicates).
# gw-timeout: 240
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
pair=$ROOT/scripts/pair.sh
gw_workdir auth
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/key"
fail=0

off=$("$pair" --procs 4 --writers 250 --msgs 2000 | tail -1)
on=$("$pair" --procs 4 --writers 250 --msgs 2000 --set "auth.key_file=$work/key" | tail -1)

export GW_LINK=veth
gw_ns_up >/dev/null
attack() { # OUT STEER MODE: a verified run at beta with replays and forgeries fired at it
    # Replay: frames beta has already accepted, captured as they arrived, sent
    # again. The capture starts first: once the run's ten polling lcores are
    # up, a new process can wait many seconds for the CPU before it listens.
    rm -f "$work/kit"
    ip netns exec gwb python3 "$ROOT/test/integration/inject.py" --capture veth-b0,veth-b1 300 \
        "$work/kit" >"$work/capture.out" 2>&1 &
    local cap=$!
    # Until it listens, under its capture's name (pair.sh refuses to start
    # beside any other process in the namespace): on a loaded machine
    # python can take seconds to get there.
    gw_wait_ready "$work/capture.out" "capturing on" "$cap" "the capture on beta's veths"
    gw_pair_bg "$work/pair.out" --procs 2 --writers 100 --msgs 20000 --rate 100000 \
        --set "auth.key_file=$work/key" --set "auth.mode=$3" --urgent-every 4
    local pid=$GW_PID_PAIR
    if ! wait "$cap" || [[ ! -s $work/kit ]]; then
        # What the run said meanwhile, and what beta's port counted.
        tail -3 "$work/capture.out" >&2
        cat "$work/pair.out" >&2
        ip -n gwb -s link show veth-b0 >&2 || true
        gw_die "captured too few frames to replay: did the run's traffic stop? (its output is above)"
    fi
    forged=$(ip netns exec gwa python3 "$ROOT/test/integration/inject.py" 2000 veth-a0 veth-a1)
    kill -0 "$pid" || gw_die "the run ended before the attack was over: make it longer"
    # Replays in rounds, while the run lasts, until beta has refused 90 %
    # of one round's: on a loaded machine a receiving socket's ring can be
    # full for a whole round (the run's own frames are sent again; these
    # are not), and gwctl itself may not answer (counted as none yet).
    local refused=0 rounds=0
    replayed=0
    while kill -0 "$pid" 2>/dev/null && ((rounds == 0 || (rounds < 10 && refused * 10 < 9 * replayed))); do
        # Each into the link it came in on: beta keeps a replay window per
        # link, and a frame first seen on the other link is the lane's
        # duplicate to drop, not a replay (load run 14: none of 2 x 1,200
        # refused, which a kit of frames from link 1 sent into link 0 gives).
        replayed=$(ip netns exec gwa python3 "$ROOT/test/integration/inject.py" --send "$work/kit" \
            veth-a0,veth-a1 "$2")
        rounds=$((rounds + 1))
        refused=$(gw_stat beta auth_replayed)
    done
    ((rounds > 0)) || gw_die "the run ended before the replays: make it longer"
    gw_log "fired $forged forged and $rounds x $replayed replayed frames at beta"
    wait "$pid" || true
    tail -1 "$work/pair.out" >"$1"
}
attack "$work/attacked" 1 authenticate
attacked=$(cat "$work/attacked") replayed1=$replayed
GW_WORKERS=2 GW_RECEIVERS=2 attack "$work/pooled" 4 encrypt
pooled=$(cat "$work/pooled")

python3 - "$off" "$on" "$attacked" "$replayed1" "$pooled" "$replayed" <<'PY' || fail=1
import json, sys
off, on, att = (json.loads(a) for a in sys.argv[1:4])
replayed = int(sys.argv[4])
pooled, replayed_pooled = json.loads(sys.argv[5]), int(sys.argv[6])
def ok(js):
    return (js["delivered"] == js["sent"] and not js["duplicates"] and not js["order_violations"]
            and not js["sender_failed"] and not js["wrong_class"])
def forged(r): # refused before any window: a bad tag, no trailer, another mode, an unknown key
    return r["auth_forged"] + r["auth_truncated"] + r["auth_wrong_mode"] + r["auth_unknown_key"]
r = att["refused_at_beta"]
print(f"auth off: {off['msgs_per_s']:,} msg/s, {off['gw_cpu_s_per_M']} gateway CPU s per million")
print(f"auth on:  {on['msgs_per_s']:,} msg/s, {on['gw_cpu_s_per_M']} gateway CPU s per million "
      f"({on['msgs_per_s'] / off['msgs_per_s']:.2f}x the throughput of off)")
print(f"under attack: forged dropped {forged(r)} ({r['auth_forged']} with a bad tag), replayed dropped {r['auth_replayed']} "
      f"(of {replayed} replayed a round); run {att['delivered']:,} of {att['sent']:,} delivered")
bad = []
if not ok(off) or not ok(on): bad.append("a clean run lost, doubled or reordered messages")
if not ok(att): bad.append("the attacked run lost, doubled or reordered messages")
if forged(r) == 0: bad.append("no forged frame counted")
if r["auth_replayed"] == 0: bad.append("no replayed frame counted")
if r["unknown_peer"] or r["bad_crc"]:
    bad.append("forged frames got past the tag check")
rp = pooled["refused_at_beta"]
print(f"pooled, replays steered: forged dropped {forged(rp)}, replayed dropped "
      f"{rp['auth_replayed']} (of {replayed_pooled} sent a round), {pooled['auth_handoffs_at_beta']} frames "
      f"handed to their slot's receiver; "
      f"run {pooled['delivered']:,} of {pooled['sent']:,} delivered")
if not ok(pooled): bad.append("the pooled attacked run lost, doubled or reordered messages")
# Nearly a round of steered replays refused (a few may be lost on the way), and
# the hand-over to the slot's owner seen to happen.
if rp["auth_replayed"] < 0.9 * replayed_pooled:
    bad.append(f"pooled: only {rp['auth_replayed']} of {replayed_pooled} steered replays refused")
if pooled["auth_handoffs_at_beta"] == 0:
    bad.append("pooled: no frame was handed to its slot's receiver: the steering did not happen")
print("FAIL: " + "; ".join(bad) if bad else "ok")
sys.exit(1 if bad else 0)
PY
exit $fail
