#!/usr/bin/env bash
# The stats a DPDK user looks at: after a 200,000-message run, gwctl reads
# each gateway's telemetry (/gridwire/...) and the figures agree with what
# the run did: messages sent and delivered, port packets, the lane with its
# messages-per-frame histogram, the connected client, the peer up, the
# lcore layout with what each lcore did.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
BIN=$ROOT/build/app
GWCTL=$ROOT/app/gwctl/gwctl
gw_workdir stats
gw_ns_up >/dev/null
gw_gateways_up "$work"
# The receiver stays connected for 10 s after the last message, to be seen.
gw_rx_start "$work" rx -e sink --expect 200001 --writers-max 10 --idle-timeout 10
ip netns exec gwa "$BIN/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e sink -w 10 -m 20000 \
    >"$work/tx.json" 2>"$work/tx.err"
sleep 1
for what in stats port lanes peers; do "$GWCTL" -n alpha "$what" >"$work/alpha.$what"; done
"$GWCTL" -n beta clients >"$work/beta.clients"
"$GWCTL" -n beta lanes >"$work/beta.lanes"
"$GWCTL" -n beta lcores >"$work/beta.lcores"
"$GWCTL" -n alpha port >"$work/alpha.port2"
"$GWCTL" -n nosuch stats >"$work/nosuch" 2>&1 && nosuch=0 || nosuch=$?
gw_gateways_down
cat "$work/alpha.stats" "$work/alpha.port2" "$work/alpha.lanes" "$work/alpha.peers" "$work/beta.clients" \
    "$work/beta.lanes" "$work/beta.lcores"

fail=0
want() { # description file pattern (grep -E)
    if grep -Eq "$3" "$2"; then echo "ok: $1"; else echo "FAIL: $1 (no /$3/ in $2)"; fail=1; fi
}
want "alpha counted 200,000 messages out" "$work/alpha.stats" "msgs_out +200000$"
want "alpha's port sent packets" "$work/alpha.port" "TX-packets: [1-9]"
want "a second look gives a rate since the first" "$work/alpha.port2" "since the last look, [0-9]+ ms ago"
want "both bond members shown up" "$work/alpha.port" "Member 1: vhost:/run/gridwire/cable1.sock +up "
want "the members' packets counted" "$work/alpha.port" "Member 0: .* TX-packets: [1-9]"
# The histogram of the lane's frames by messages in them: batching at
# work puts most of them in the buckets of 16 messages and up.
python3 - "$work/alpha.lanes" <<'PY' || fail=1
import sys
lines = open(sys.argv[1]).read().splitlines()
at = next(i for i, l in enumerate(lines) if l.startswith("frames by messages per frame"))
head, rows = lines[at + 1].split(), [l.split() for l in lines[at + 2:] if l.strip()]
row = next((r for r in rows if r[:2] == ["2", "0"]), None)
counts = dict(zip(head[2:], map(int, row[2:]))) if row else {}
top = max(counts, key=counts.get) if counts else None
ok = top in ("frames_16_31_msgs", "frames_32_63_msgs", "frames_64_msgs_up")
print(f"{'ok' if ok else 'FAIL'}: the lane to beta's frames by messages in them, most in {top}: {counts}")
sys.exit(0 if ok else 1)
PY
want "alpha's lane to beta carried the 200,000 messages" "$work/alpha.lanes" "^ +2 +0 +bulk +[1-9][0-9]* +200000 "
# Beta's lane from alpha: all 200,000 delivered by receiver 0, and no
# duplicate or redundant frame but for the copies alpha sent again (an
# ACK late on a busy machine brings one; a duplicate beyond them would
# be a bug).
python3 - "$work/alpha.lanes" "$work/beta.lanes" <<'PY' || fail=1
import sys
def lane(path, peer):
    lines = open(path).read().splitlines()
    head = next(l.split() for l in lines if l.startswith("peer  lane  class"))
    row = next((l.split() for l in lines if l.split()[:3] == [peer, "0", "bulk"]), None)
    return dict(zip(head, row)) if row else {}
a, b = lane(sys.argv[1], "2"), lane(sys.argv[2], "1")
sent_again = int(a.get("tx_retrans", 0))
# a row without its counters counts as a failure, not as fewer duplicates
extra = int(b["rx_dups"]) + int(b["rx_redundant"]) if "rx_dups" in b and "rx_redundant" in b else -1
ok = b.get("rx_msgs") == "200000" and b.get("receiver") == "0" and 0 <= extra <= sent_again
print(f"{'ok' if ok else 'FAIL'}: beta's lane from alpha delivered {b.get('rx_msgs')} messages by receiver "
      f"{b.get('receiver')}, {extra} duplicate or redundant frames for {sent_again} sent again")
sys.exit(0 if ok else 1)
PY
want "beta's one lcore runs every role and took in the 200,000" "$work/beta.lcores" "^ +0 +main worker0 receiver0 +0 +1 +1u,0 +[1-9][0-9]* +[1-9][0-9]* +200000 "
want "beta is up" "$work/alpha.peers" "beta +up"
want "beta's client got all 200,000" "$work/beta.clients" " 200000 "
if ((nosuch != 0)) && grep -q "no gateway named 'nosuch'" "$work/nosuch"; then
    echo "ok: an unknown gateway name gets one clear line"
else
    echo "FAIL: gwctl -n nosuch: $(cat "$work/nosuch")"
    fail=1
fi
exit $fail
