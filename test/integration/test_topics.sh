#!/usr/bin/env bash
# Topics end to end on two gateways. On beta: two subscribers of "volts"
# that read everything (hold) and one that reads a message every 2 ms
# (latest, key: the first 8 bytes, the perf header's magic and writer); on
# alpha: one local subscriber. Once alpha has beta's advertisement, one
# publisher on alpha (50 writers) publishes 20,000 messages to "volts".
#   - every hold subscriber gets each message once, in order per writer;
#   - one PUB record per publication crossed to beta (not one per
#     subscriber), and alpha's local subscriber was served without the wire;
#   - the latest subscriber fell behind, had messages conflated (counted),
#     saw each writer's messages in order with none twice, and got every
#     writer's last one; it never held the publisher (no REJECT, none lost);
#   - an unsubscribe travels: once every subscriber on beta has left,
#     alpha's advertisement from beta is empty and new publications
#     cross no more (counted as published to nobody there), and are
#     settled at once on idle gateways (gw_unconfirmed reads 0).
# Then the same with 2 workers and 2 receivers per gateway (the worker
# that tells a peer is the peer's node id mod workers). Last, urgent
# publications from half the writers, and one of two subscribers killed
# in the middle: the other gets every message in its class and order; and
# a mesh of 3 with two publishers.
# gw-timeout: 180
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
gw_workdir topics
gw_ns_up >/dev/null

writers=50 msgs=400
total=$((writers * msgs))

# wait_for WHAT NODE NAME MIN: until NODE's counter NAME is at least MIN (60 s)
wait_for() {
    for _ in $(seq 600); do
        (($(gw_stat "$2" "$3") >= $4)) && return 0
        sleep 0.1
    done
    gw_die "$1: $2's $3 stayed under $4 for 60 s"
}

scenario() { # NAME
    local label=$1
    gw_gateways_up "$work"
    local rx=(--topic -e volts --writers-max "$writers" --idle-timeout 30)
    gw_rx_start "$work" b1 "${rx[@]}" --expect "$total"
    local p1=$GW_PID_RX
    gw_rx_start "$work" b2 "${rx[@]}" --expect "$total"
    local p2=$GW_PID_RX
    gw_rx_start "$work" bl "${rx[@]}" --latest -m "$msgs" --expect "$writers" --delay-ms 2
    local pl=$GW_PID_RX
    ip netns exec gwa "$BIN/gw-perf" rx -s /run/gridwire/alpha.sock "${rx[@]}" --expect "$total" \
        >"$work/a1.json" 2>"$work/a1.err" &
    local pa=$!
    gw_cleanup_push _gw_stop_pid "$pa"
    gw_wait_ready "$work/a1.err" "rx ready" "$pa" "alpha's subscriber"
    wait_for "beta's subscriptions reach alpha" alpha subs_applied 1
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock --topic -e volts \
        -w "$writers" -m "$msgs" --linger-ms 1000 >"$work/tx.json" 2>"$work/tx.err" || true
    wait "$p1" "$p2" "$pl" "$pa" || true
    # Every subscriber on beta has left: its empty advertisement reaches
    # alpha, whose publications then go to nobody on beta.
    wait_for "beta's empty advertisement reaches alpha" alpha subs_applied 2
    # ... and alpha's own subscriber is gone too: no topic left there.
    for _ in $(seq 600); do
        [[ $("$BIN/gwctl" -n alpha raw /gridwire/topics 2>/dev/null | tr -d ' \n') == "[]" ]] && break
        sleep 0.1
    done
    # Settled at once, though no frame carries them (up to 20 s: a hang bound).
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock --topic -e volts \
        -w 1 -m 100 --settle-ms 20000 >"$work/tx2.json" 2>"$work/tx2.err" || true
    gw_gateways_down
    python3 - "$work" "$label" "$total" "$writers" <<'PY'
import json, sys
work, name, total, writers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
j = lambda f: json.load(open(f"{work}/{f}.json"))
tx, tx2, alpha, beta = j("tx"), j("tx2"), j("alpha"), j("beta")
subs = {k: j(k) for k in ("b1", "b2", "a1")}
bl = j("bl")
bad = []
for k, s in subs.items():
    print(f"{name}: {k} (hold): delivered {s['delivered']}, duplicates {s['duplicates']}, "
          f"order violations {s['order_violations']}, {s['msgs_per_s']} msg/s")
    if s["delivered"] != total or s["duplicates"] or s["order_violations"] or s["malformed"]:
        bad.append(f"{k} did not get every publication once and in order")
print(f"{name}: bl (latest, 1 message per 2 ms): delivered {bl['delivered']}, skipped "
      f"{bl['skipped']}, writers finished {bl['finished']}/{writers}")
print(f"{name}: publisher {tx}")
print(f"{name}: alpha pub_records {alpha['pub_records']} pub_in {alpha['pub_in']} "
      f"pub_delivered {alpha['pub_delivered']} pub_unsubscribed {alpha['pub_unsubscribed']}; "
      f"beta pub_in {beta['pub_in']} pub_delivered {beta['pub_delivered']} pub_stored "
      f"{beta['pub_stored']} pub_conflated {beta['pub_conflated']} pub_evicted "
      f"{beta['pub_evicted']} subs_parts_in {beta['subs_parts_in']} alpha subs_applied "
      f"{alpha['subs_applied']}")
if tx["sent"] != total or tx["rejected"] or tx["lost"]:
    bad.append(f"the publisher sent {tx['sent']} of {total}, {tx['rejected']} rejected, {tx['lost']} lost")
if bl["finished"] != writers or bl["duplicates"] or bl["order_violations"] or bl["malformed"]:
    bad.append("the latest subscriber missed a writer's last message, or saw one twice or out of order")
if bl["skipped"] == 0 or beta["pub_conflated"] == 0:
    bad.append("the latest subscriber never fell behind: the case did not happen")
if bl["delivered"] + bl["skipped"] != total:
    bad.append(f"latest: delivered {bl['delivered']} + skipped {bl['skipped']} != {total}")
# One record per publication to beta, however many subscribers there, and
# one to alpha itself (its loopback); the 100 after everyone left, none.
if beta["pub_in"] != total:
    bad.append(f"beta took {beta['pub_in']} PUB records for {total} publications")
if alpha["pub_in"] != total or alpha["pub_delivered"] != total:
    bad.append(f"alpha's own subscriber: {alpha['pub_in']} records in, {alpha['pub_delivered']} delivered")
if beta["pub_delivered"] != 2 * total + bl["delivered"]:
    bad.append(f"beta delivered {beta['pub_delivered']} copies, want {2 * total + bl['delivered']}")
if alpha["pub_records"] != 2 * total:
    bad.append(f"alpha made {alpha['pub_records']} PUB records, want {2 * total} (beta's and its own)")
if tx2["sent"] != 100 or alpha["pub_unsubscribed"] != 100:
    bad.append(f"after everyone left: {tx2['sent']} published, {alpha['pub_unsubscribed']} to nobody (want 100)")
if tx2["unconfirmed"]:
    bad.append(f"{tx2['unconfirmed']} publications to nobody still unsettled after 20 s (want 0)")
print(f"{name}: " + ("FAIL: " + "; ".join(bad) if bad else
      "ok: every subscriber served by its policy, one record per node, the unsubscribe travelled"))
sys.exit(1 if bad else 0)
PY
}

# Urgent publications, and a subscriber killed in the middle: every other
# writer publishes urgent (each class in order, in its class), and the
# killed subscriber's gateway drops it from the topic and goes on.
killed() {
    gw_gateways_up "$work"
    local rx=(--topic -e volts --writers-max 20 --idle-timeout 30 --urgent-every 2)
    gw_rx_start "$work" k1 "${rx[@]}" --expect 20000
    local p1=$GW_PID_RX
    gw_rx_start "$work" k2 "${rx[@]}" --expect 20000
    local p2=$GW_PID_RX
    wait_for "beta's subscriptions reach alpha" alpha subs_applied 1
    ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock --topic -e volts -w 20 \
        -m 1000 --rate 5000 --urgent-every 2 >"$work/ktx.json" 2>"$work/ktx.err" &
    local ptx=$!
    sleep 1
    kill -KILL "$p2"
    wait "$ptx" || true
    wait "$p1" || true
    gw_gateways_down
    python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
tx, k1, beta = (json.load(open(f"{work}/{n}.json")) for n in ("ktx", "k1", "beta"))
print(f"killed: publisher {tx}")
print(f"killed: k1 delivered {k1['delivered']}, wrong class {k1['wrong_class']}, order "
      f"violations {k1['order_violations']}; beta urgent_msgs_in {beta['urgent_msgs_in']}, "
      f"pub_delivered {beta['pub_delivered']}")
bad = []
if tx["sent"] != 20000 or tx["rejected"] or tx["lost"]:
    bad.append("the publisher did not publish all 20,000 untold")
if k1["delivered"] != 20000 or k1["order_violations"] or k1["duplicates"] or k1["wrong_class"]:
    bad.append("the surviving subscriber did not get every publication once, in order, in its class")
if beta["urgent_msgs_in"] != 10000:
    bad.append(f"beta counted {beta['urgent_msgs_in']} urgent records in, want 10000 (half the writers')")
if beta["pub_delivered"] >= 40000 or beta["pub_delivered"] < 20000:
    bad.append(f"beta delivered {beta['pub_delivered']} copies: the killed subscriber was not dropped in the middle")
print("killed: " + ("FAIL: " + "; ".join(bad) if bad else
      "ok: urgent publications in their class, a killed subscriber dropped, the other served"))
sys.exit(1 if bad else 0)
PY
}

# A mesh of 3: publishers on n1 and n3 (20 writers each), subscribers on
# n2 (two), n3 and n1; each subscriber gets both publishers' messages,
# each in its order, and n2 took one record per publication.
mesh() {
    local w=20 m=500 k pids=()
    local each=$((2 * w * m))
    gw_mesh_up "$work" 3
    msub() { # NODE LABEL
        ip netns exec "gwm$1" "$BIN/gw-perf" rx -s "/run/gridwire/n$1.sock" --topic -e volts \
            --writers-max $((2 * w)) --idle-timeout 30 --expect "$each" \
            >"$work/m-$2.json" 2>"$work/m-$2.err" &
        pids+=($!)
        gw_cleanup_push _gw_stop_pid "$!"
        gw_wait_ready "$work/m-$2.err" "rx ready" "$!" "subscriber $2"
    }
    msub 2 a
    msub 2 b
    msub 3 c
    msub 1 d
    # Each publisher's gateway has both other nodes' advertisements.
    wait_for "the subscriptions reach n1" n1 subs_applied 2
    wait_for "the subscriptions reach n3" n3 subs_applied 2
    ip netns exec gwm1 "$BIN/gw-perf" tx -s /run/gridwire/n1.sock --topic -e volts -w "$w" \
        -m "$m" >"$work/m-tx1.json" 2>"$work/m-tx1.err" &
    local t1=$!
    ip netns exec gwm3 "$BIN/gw-perf" tx -s /run/gridwire/n3.sock --topic -e volts -w "$w" \
        -m "$m" --id-base "$w" --writers-max $((2 * w)) >"$work/m-tx3.json" 2>"$work/m-tx3.err" &
    local t3=$!
    wait "$t1" "$t3" || true
    for k in "${pids[@]}"; do wait "$k" || true; done
    for k in 1 2 3; do _gw_stop_gateway "${GW_MESH_PID[k]}"; done
    "$ROOT/scripts/mesh.sh" down >/dev/null 2>&1 || true
    python3 - "$work" "$each" <<'PY'
import json, sys
work, each = sys.argv[1], int(sys.argv[2])
j = lambda f: json.load(open(f"{work}/{f}.json"))
bad = []
for k in ("a", "b", "c", "d"):
    r = j(f"m-{k}")
    print(f"mesh: subscriber {k}: delivered {r['delivered']}, duplicates {r['duplicates']}, "
          f"order violations {r['order_violations']}")
    if r["delivered"] != each or r["duplicates"] or r["order_violations"]:
        bad.append(f"subscriber {k} did not get both publishers' messages once and in order")
for t in ("m-tx1", "m-tx3"):
    if j(t)["rejected"] or j(t)["lost"]:
        bad.append(f"{t}: rejections")
n2 = j("n2")
print(f"mesh: n2 pub_in {n2['pub_in']}, pub_delivered {n2['pub_delivered']}")
if n2["pub_in"] != each or n2["pub_delivered"] != 2 * each:
    bad.append("n2 did not take one record per publication for its two subscribers")
print("mesh: " + ("FAIL: " + "; ".join(bad) if bad else
      "ok: two publishers, four subscribers on three nodes, each in order"))
sys.exit(1 if bad else 0)
PY
}

scenario "main lcore"
GW_WORKERS=2 GW_RECEIVERS=2 scenario "2 workers, 2 receivers"
killed
mesh
