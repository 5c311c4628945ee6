#!/usr/bin/env bash
# The Erlang binding (bindings/erlang) against two real gateways on the
# kernel-bypass cable: its EUnit suite (gridwire_tests) runs in a VM with
# four schedulers on alpha's gateway, with a peer VM on beta's. Per-process
# order with 1,000 senders, every call outcome and pattern policy, a slow
# receiver's bounded mailbox (the rest REJECTed to its sender), processes
# killed, alpha's gateway killed and restarted under the senders; then the
# application stopped and the NIF purged, with no descriptor left open.
# gw-timeout: 180
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)

# Called back by the suite (GW_RESTART_A): kill alpha's gateway, start it again.
if [[ ${1:-} == restart-alpha ]]; then
    # Its counters up to here (the restart starts them again), for a failure's story.
    "$ROOT/build/app/gwctl" -n alpha raw /gridwire/stats >"$2/alpha-before-restart.json" 2>&1 || true
    gw_restart_alpha "$2"
    exit
fi

EBIN=$ROOT/build/bindings/erlang
[[ -f $EBIN/gridwire_nif.so && -f $EBIN/gridwire_tests.beam ]] ||
    gw_die "no Erlang binding in $EBIN (is erlang-dev installed? ./scripts/gw build)"
gw_workdir erlang
gw_ns_up >/dev/null
# Beta's channels hold 65,536 messages: the order test's burst (50,000 from
# 1,000 senders) fits whole, so its sink is never refused as full (-ENOBUFS
# after dest_block_ms) however long a loaded machine keeps its VM from
# reading; the slow receiver's test sends past that on purpose, and alpha's
# VM reads nothing while about 34,000 REJECTs come back to its channels of
# the default size: each is told to its sender, or counted lost to the VM
# (GW_MSG_LOST), and the test adds them up.
GW_ARGS_B="--set chan.ring=65536 --set chan.arena_kb=4096" gw_gateways_up "$work"
echo "$GW_PID_A" >"$work/alpha.pid"
_gw_stop_alpha() { kill -9 "$(cat "$work/alpha.pid")" 2>/dev/null || true; }
gw_cleanup_push _gw_stop_alpha

export GW_SOCK_A=/run/gridwire/alpha.sock GW_SOCK_B=/run/gridwire/beta.sock GW_NODE_A=1 \
    GW_NODE_B=2 GW_EBIN=$EBIN GW_RESTART_A="$ROOT/test/integration/test_erlang.sh restart-alpha $work"
fail=0
erl -noshell +S 4 -pa "$EBIN" -eval '
    Fds = fun() -> {ok, L} = file:list_dir("/proc/self/fd"), length(L) end,
    Before = Fds(),
    R = eunit:test(gridwire_tests, [verbose]),
    application:stop(gridwire),
    code:delete(gridwire_nif), code:purge(gridwire_nif),
    [erlang:garbage_collect(P) || P <- processes()],
    timer:sleep(200),
    After = Fds(),
    io:format("descriptors: ~b before the suite, ~b after the application stopped~n",
              [Before, After]),
    After > Before andalso
        [io:format("  ~s -> ~s~n", [F, element(2, file:read_link("/proc/self/fd/" ++ F))])
         || F <- element(2, file:list_dir("/proc/self/fd"))],
    halt(case {R, After =< Before} of {ok, true} -> 0; _ -> 1 end).' \
    >"$work/eunit.log" 2>&1 || fail=1
cat "$work/eunit.log"
# The urgent test's messages went as urgent ones: beta (never restarted)
# counted them on its urgent lanes: the 5,000 sends, and the replies.
GW_PID_A=$(cat "$work/alpha.pid")
gw_gateways_down
python3 - "$work" <<'PY' || fail=1
import json, sys
b = json.load(open(f"{sys.argv[1]}/beta.json"))
ok = b["urgent_msgs_in"] >= 5000 and b["urgent_msgs_out"] >= 2
print(f"{'ok' if ok else 'FAIL'}: urgent messages: beta took {b['urgent_msgs_in']} "
      f"and sent {b['urgent_msgs_out']} (replies)")
sys.exit(0 if ok else 1)
PY
exit $fail
