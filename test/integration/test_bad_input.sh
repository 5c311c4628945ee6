#!/usr/bin/env bash
# Bad input harms nothing. (1) Bad command lines and configs: one clear
# line naming what is wrong, a non-zero exit, nothing started (no socket).
# (2) Thousands of malformed frames fired at beta from outside (random
# bytes, truncations, junk to the gridwire port, frames from a node nobody
# configured, bad CRCs) during a verified run: beta keeps running, counts
# what it refused, and every message of the run still arrives once, in order.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
GWD=$ROOT/build/app/gridwired
gw_workdir bad
fail=0

refuse() { # what-the-line-must-mention args...
    local want=$1 out rc=0
    shift
    out=$("$GWD" "$@" --set "node.socket=$work/never.sock" 2>&1 >/dev/null) || rc=$?
    if ((rc != 0)) && [[ $(printf '%s\n' "$out" | wc -l) -eq 1 && $out == *"$want"* && ! -e $work/never.sock ]]; then
        echo "ok: refused ($rc): $out"
    else
        echo "FAIL: gridwired $* -> exit $rc, output: $out"
        fail=1
    fi
}
printf '[port]\nmtu = 12000\n' >"$work/mtu.ini"
printf '[port]\nmtuu = 9000\n' >"$work/typo.ini"
printf '[node]\nid = 1\npeers = 1\n' >"$work/self.ini"
printf 'just words\n' >"$work/words.ini"
refuse "unknown or incomplete argument" --frobnicate
refuse "mtu" -c "$work/mtu.ini"
refuse "mtuu" -c "$work/typo.ini"
refuse "peers" -c "$work/self.ini"
refuse "words.ini" -c "$work/words.ini"
refuse "no-such.ini" -c "$work/no-such.ini"
refuse "window" --set proto.window=100
refuse "bond_mode" --set port.bond_mode=3
refuse "eal.args" --set "eal.args"

gw_ns_up >/dev/null
gw_pair_bg "$work/pair.out" --procs 2 --writers 100 --msgs 8000 --rate 100000
pair=$GW_PID_PAIR
# Three bursts a second apart: one CI run once counted none of a single
# burst (the bond may drop frames on a member LACP is not collecting on
# yet), and the point here is what gridwire does with those that arrive.
sent=0
for _ in 1 2 3; do
    sleep 1
    n=$(ip netns exec gwa python3 "$ROOT/test/integration/inject.py" 1000 veth-a0 veth-a1)
    sent=$((sent + n))
done
gw_log "fired $sent bad frames at beta"
wait "$pair" || true
js=$(tail -1 "$work/pair.out")
python3 - "$js" "$sent" <<'PY' || fail=1
import json, sys
js, sent = json.loads(sys.argv[1]), int(sys.argv[2])
r = js["refused_at_beta"]
print(f"beta refused {r} of {sent} fired; run {js}")
bad = []
if js["delivered"] != js["sent"] or js["duplicates"] or js["order_violations"] or js["sender_failed"]:
    bad.append("the run's messages did not all arrive once and in order")
for k in ("bad_frames", "not_ours", "unknown_peer", "bad_crc"):
    if r[k] == 0:
        bad.append(f"no {k} counted")
print("FAIL: " + "; ".join(bad) if bad else "ok: beta refused the bad frames, counted them, and lost nothing")
sys.exit(1 if bad else 0)
PY
exit $fail
