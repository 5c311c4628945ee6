#!/usr/bin/env bash
# Offered load above what the path carries: 4 unpaced sender processes,
# batched (the gateways' CPU is the limit) and with batching off (the
# link's frame rate is the limit). The senders must feel it (-EAGAIN, then
# they wait), the gateways' memory must stay flat (bounded by config, not
# by the backlog), and nothing is dropped.
# gw-timeout: 120
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
pair=$here/../../scripts/pair.sh
fail=0
for mode in "batched 4000" "unbatched 500"; do
    set -- $mode
    name=$1 msgs=$2
    batch=on
    [[ $name == unbatched ]] && batch=off
    js=$("$pair" --procs 4 --writers 250 --msgs "$msgs" --batch "$batch" | tail -1)
    python3 - "$name" "$js" <<'PY' || fail=1
import json, sys
name, js = sys.argv[1], json.loads(sys.argv[2])
start, peak, end = js["gw_mem_kb"]
bad = []
if js["delivered"] != js["sent"] or js["duplicates"] or js["order_violations"] or js["sender_failed"]:
    bad.append("messages lost, doubled or out of order")
if js["sender_eagain"] == 0:
    bad.append("the senders never saw -EAGAIN")
if peak - start > 32 * 1024:
    bad.append(f"gateway memory grew by {(peak - start) // 1024} MB")
print(f"{name}: {js['sent']:,} messages at {js['msgs_per_s']:,} msg/s; senders saw -EAGAIN "
      f"{js['sender_eagain']:,} times; gateways' memory (PSS) {start // 1024} -> {peak // 1024} MB peak; "
      + ("FAIL: " + "; ".join(bad) if bad else "ok"))
sys.exit(1 if bad else 0)
PY
done
exit $fail
