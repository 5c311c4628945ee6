#!/usr/bin/env bash
# Faults on the link, each with a verified run on the two veths (bond mode
# 4): every message once and in per-sender order, whatever happens to the
# frames. Loss comes from XDP on the veths (real frames dropped by the
# kernel); reordering, duplication and corruption from the gateways' own
# seeded [fault] stage (the kernel has no netem), applied to frames
# received in both directions, so ACKs suffer too. (The cable, which XDP
# cannot reach, loses frames through that stage in test_e2e.sh.)
# gw-timeout: 240
set -euo pipefail
export GW_LINK=veth
here=$(dirname "${BASH_SOURCE[0]}")
pair=$here/../../scripts/pair.sh
small=(--procs 2 --writers 100)

check() { # name json python-condition-on-js description
    python3 - "$@" <<'PY'
import json, sys
name, js, cond, what = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
bad = []
if js["delivered"] != js["sent"]: bad.append(f"delivered {js['delivered']} of {js['sent']}")
if js["duplicates"]: bad.append(f"{js['duplicates']} duplicates")
if js["order_violations"]: bad.append(f"{js['order_violations']} order violations")
if js["sender_failed"]: bad.append("a sender failed")
if not eval(cond, {}, {"js": js}): bad.append(f"expected {what}")
print(f"{name}: {'FAIL: ' + '; '.join(bad) if bad else 'ok'} {json.dumps(js)}")
sys.exit(1 if bad else 0)
PY
}

fail=0
run() { # name condition description pair-args...
    local name=$1 cond=$2 what=$3 js
    shift 3
    js=$("$pair" "${small[@]}" "$@" | tail -1)
    check "$name" "$js" "$cond" "$what" || fail=1
}

run "5% loss each way" 'js["retrans"] > 0' "retransmissions" --msgs 2000 --drop 50 --drop-acks 50
run "20% loss each way" 'js["retrans"] > 0' "retransmissions" --msgs 500 --drop 200 --drop-acks 200
run "20% loss of ACKs only" 'js["retrans"] >= 0' "(delivery checks only)" --msgs 2000 --drop-acks 200
run "5% reordering" 'js["faults"]["delayed"] > 0' "frames held back" \
    --msgs 2000 --set fault.reorder_ppm=50000
run "5% duplication" 'js["dup_frames"] > 0 and js["faults"]["duplicated"] > 0' "duplicate frames dropped" \
    --msgs 2000 --set fault.dup_ppm=50000
run "5% corruption" 'js["bad_crc"] > 0 and js["bad_crc"] == js["faults"]["corrupted"]' \
    "every corrupted frame caught by the CRC" --msgs 2000 --set fault.corrupt_ppm=50000
run "all at once, seed 7" 'js["retrans"] > 0 and js["bad_crc"] > 0' "retransmissions and CRC drops" \
    --msgs 2000 --drop 10 --set fault.seed=7 --set fault.reorder_ppm=20000 \
    --set fault.dup_ppm=20000 --set fault.corrupt_ppm=20000 --set fault.drop_ppm=20000
exit $fail
