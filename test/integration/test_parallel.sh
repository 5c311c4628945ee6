#!/usr/bin/env bash
# Parallel redundancy ([port] kind = parallel): every frame goes out on both
# members, the far end keeps the first copy. On the cable and on the veths,
# both gateways parallel, each check a verified run (every message once, in
# per-sender order):
#   - member 0, then member 1, cut in a paced run and brought back: on the
#     cable by the operator's command (gwctl member N down|up unplugs a
#     cable end), on the veths from outside (ip link set down); copies are
#     discarded as redundant, both members carried frames;
#   - one member losing 20 % and reordering 10 % of what it brings in, the
#     other clean ([fault] member = 1);
#   - with [auth]: a frame's copy is not taken for a replay;
#   - both members cut for longer than peer_timeout_ms, then one brought
#     back: every message received or reported to its sender;
#   - veths: a flood of garbage frames into one member during a run; one
#     member that stays up but carries nothing (XDP drops all it gets):
#     the "member silent" alarm in the log and telemetry, and its end.
# (A peer restarted in parallel mode is in test_restart.sh; the config's
# refusals in test_bad_input.sh.)
# gw-timeout: 330
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
gw_workdir parallel
gw_ns_up >/dev/null
fail=0
export GW_ARGS_A="--set port.kind=parallel" GW_ARGS_B="--set port.kind=parallel"

# until_port NODE KEY VALUE: until the gateway's /gridwire/port says so (15 s at most)
until_port() {
    for _ in $(seq 75); do
        [[ $(gw_port_field "$1" "$2") == "$3" ]] && return 0
        sleep 0.2
    done
    return 1
}
verified() { # NAME PAIR-JSON PYTHON-CONDITION DESCRIPTION
    python3 - "$@" <<'PY' || fail=1
import json, sys
name, js, cond, what = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
bad = [w for w, c in (("messages lost", js["delivered"] != js["sent"]),
                      ("duplicates", js["duplicates"]), ("order violations", js["order_violations"]),
                      ("a sender failed", js["sender_failed"])) if c]
if not eval(cond, {}, {"js": js}):
    bad.append(f"expected {what}")
print(f"FAIL: {name}: " + ", ".join(bad) if bad else
      f"ok: {name}: all {js['sent']} once and in order; {js['redundant_at_beta']} copies discarded "
      f"as redundant, {js['retrans']} retransmissions, longest wait of a writer {js['max_gap_ms']} ms, "
      f"alpha's members sent {js['alpha_member_tx']}")
sys.exit(1 if bad else 0)
PY
}

# Each member cut and back while a verified run (20 s) carries traffic.
# Both ends of the receiving side must have seen member N come back before
# the other is cut, or the cut would take both. On a loaded machine the
# cuts can outlast the run (its gateways gone, gwctl has no one to ask):
# a member whose cut the run did not see through is cut again in the next
# run (at most 3).
alive() { kill -0 "$GW_PID_PAIR" 2>/dev/null; }
# step WHAT CMD...: ok, or FAIL unless the run ended meanwhile (then 1).
step() {
    if "${@:2}" >/dev/null 2>&1; then echo "ok: $1"; return 0; fi
    alive || return 1
    echo "FAIL: $1"
    fail=1
}
cuts() { # LINK
    local link=$1 n=0 runs=0
    while ((n < 2 && runs < 3)); do
        runs=$((runs + 1))
        gw_pair_bg "$out.$runs" --procs 2 --writers 100 --msgs 20000 --rate 100000
        while ((n < 2)) && sleep 1.5 && alive; do
            step "$link: member $n cut" gw_member "$link" "$n" down || break
            step "$link: beta sees member $n go" until_port beta "member${n}_up" 0 || break
            sleep 1.5
            step "$link: member $n back" gw_member "$link" "$n" up || break
            step "$link: beta sees member $n back" until_port beta "member${n}_up" 1 || break
            n=$((n + 1))
        done
        # The kernel's link outlives the run: a veth cut the run did not see back.
        if ((n < 2)) && [[ $link == veth ]]; then gw_member veth "$n" up; fi
        wait "$GW_PID_PAIR" || true
        verified "$link: cuts of each member (run $runs)" "$(tail -1 "$out.$runs")" \
            'js["redundant_at_beta"] > 0 and min(js["alpha_member_tx"]) > 0' \
            "copies discarded and frames on both members"
    done
    ((n == 2)) || { echo "FAIL: $link: the cuts did not fit in $runs runs"; fail=1; }
}

for link in cable veth; do
    export GW_LINK=$link
    out=$work/cuts-$link.out
    cuts "$link"

    js=$(GW_ARGS_B="$GW_ARGS_B --set fault.member=1 --set fault.drop_ppm=200000 --set fault.reorder_ppm=100000" \
        "$ROOT/scripts/pair.sh" --keep-ns --procs 2 --writers 100 --msgs 2000 --rate 100000 | tail -1)
    verified "$link: member 1 loses 20 % and reorders 10 %" "$js" \
        'js["faults"]["dropped"] > 0 and js["faults"]["delayed"] > 0' "faults on member 1"
done

# [auth]: each member has its own replay windows, so a frame's copy is a
# copy (the lane's to drop), never a replay.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/key"
export GW_LINK=cable
js=$("$ROOT/scripts/pair.sh" --keep-ns --procs 2 --writers 100 --msgs 2000 --rate 100000 \
    --set "auth.key_file=$work/key" | tail -1)
verified "cable, [auth] on: copies are not replays" "$js" \
    'js["redundant_at_beta"] > 0 and js["refused_at_beta"]["auth_replayed"] == 0 and js["refused_at_beta"]["auth_forged"] == 0' \
    "copies discarded as redundant, none taken for a replay"

# Both members cut past peer_timeout_ms, then one back (the cable): alpha
# declares beta down and refuses its senders' messages, which they are told
# of; member 1 back, the rest crosses on it alone.
export GW_LINK=cable
gw_gateways_up "$work"
writers=50 msgs=20000
gw_ledger_run "$work" "$writers" "$msgs" 100000
pid_rx=$GW_PID_RX pid_tx=$GW_PID_TX
sleep 2
gw_check "both members cut" gw_member cable 0 down
gw_member cable 1 down
sleep 2.5 # past peer_timeout_ms (1 s)
gw_check "member 1 back" gw_member cable 1 up
wait "$pid_tx" || true
wait "$pid_rx" || true
gw_check "alpha declared beta down, and up again" \
    bash -c "grep -q 'peer 2 (beta) is down' '$work/alpha.log' && (( \$(grep -c 'peer 2 (beta) is up' '$work/alpha.log') >= 2 ))"
gw_member cable 0 up
gw_gateways_down
python3 - "$work" $((writers * msgs)) $(gw_ledger_count "$work" $((writers * msgs))) <<'PY' || fail=1
import json, sys
work, total, missing = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tx = json.load(open(f"{work}/tx.json"))
rx = json.load(open(f"{work}/rx.json"))
bad = []
if missing: bad.append(f"{missing} messages neither received nor reported")
# (a gap in a writer's sequence is a message reported to its sender)
if rx["reordered"]: bad.append(f"{rx['reordered']} out of order")
if not tx["rejected"]: bad.append("no sender was told of the cut")
print(f"FAIL: both members cut: " + "; ".join(bad) if bad else
      f"ok: both members cut, then one back: of {total}, {rx['delivered']} received and "
      f"{tx['rejected']} reported to their senders, none lost silently, order kept")
sys.exit(1 if bad else 0)
PY

# The veths: garbage on one member, then one member silent.
export GW_LINK=veth
out=$work/flood.out
gw_pair_bg "$out" --procs 2 --writers 100 --msgs 5000 --rate 100000
sent=$(ip netns exec gwa python3 "$ROOT/test/integration/inject.py" 3000 veth-a0 | tail -1)
wait "$GW_PID_PAIR" || true
verified "veth: $sent garbage frames into member 0 during a run" "$(tail -1 "$out")" \
    'js["refused_at_beta"]["bad_frames"] + js["refused_at_beta"]["bad_crc"] + js["refused_at_beta"]["not_ours"] + js["refused_at_beta"]["unknown_peer"] > 0' \
    "the garbage refused"

gw_gateways_up "$work"
gw_netns drop veth-b0 1000 >/dev/null
gw_cleanup_push gw_netns drop veth-b0 0
gw_check "veth: member 0 drops all it gets: beta says it is silent (telemetry)" until_port beta member0_silent 1
gw_check "... and in its log" grep -q "member veth-b0: silent" "$work/beta.log"
gw_check "... while its link is up" test "$(gw_port_field beta member0_up)" = 1
gw_netns drop veth-b0 0 >/dev/null
gw_check "veth: frames again: the alarm ends" until_port beta member0_silent 0
gw_check "... and the log says so" grep -q "member veth-b0: carries frames again" "$work/beta.log"
gw_gateways_down
exit $fail
