#!/usr/bin/env bash
# The Python binding (bindings/python) against two real gateways on the
# kernel-bypass cable: its pytest suite (bindings/python/tests) with
# Debian's python3 and the module as built (build/bindings/python): every
# function and documented error, zero-copy receiving, per-sender order
# from 32 threads, asyncio with 1,000 tasks, a Python service called from
# C and from Erlang and C called from Python, bad arguments and a fuzz of
# them, memory over a million messages, and alpha's gateway killed under a
# Python sender (then restarted, and the sender connects again).
# gw-timeout: 180
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)

# Called back by the suite (GW_RESTART_A): kill alpha's gateway, start it again.
if [[ ${1:-} == restart-alpha ]]; then
    gw_restart_alpha "$2"
    exit
fi

PYDIR=$ROOT/build/bindings/python
ls "$PYDIR"/gridwire/_gridwire*.so >/dev/null 2>&1 ||
    gw_die "no Python binding in $PYDIR (is python3-dev installed? ./scripts/gw build)"
/usr/bin/python3 -c "import pytest" 2>/dev/null ||
    gw_die "Debian's python3 has no pytest (apt-get install python3-pytest, or ./scripts/gw deps)"
/usr/bin/python3 -c "import pytest_timeout" 2>/dev/null ||
    gw_die "Debian's python3 has no pytest-timeout (apt-get install python3-pytest-timeout, or ./scripts/gw deps)"
gw_workdir python
gw_ns_up >/dev/null
# Beta's channels hold 65,536 messages, and a full receiver's messages are
# held 2 s before they are refused: the suite's bursts (96,000 messages from
# 32 threads) fit while a loaded machine keeps its reader from running.
GW_ARGS_A="--set chan.dest_block_ms=2000" \
    GW_ARGS_B="--set chan.ring=65536 --set chan.arena_kb=4096 --set chan.dest_block_ms=2000" \
    gw_gateways_up "$work"
echo "$GW_PID_A" >"$work/alpha.pid"
_gw_stop_alpha() { kill -9 "$(cat "$work/alpha.pid")" 2>/dev/null || true; }
gw_cleanup_push _gw_stop_alpha

export GW_SOCK_A=/run/gridwire/alpha.sock GW_SOCK_B=/run/gridwire/beta.sock GW_NODE_A=1 \
    GW_NODE_B=2 GW_BUILD=$ROOT/build PYTHONPATH=$PYDIR PYTHONDONTWRITEBYTECODE=1 \
    GW_RESTART_A="$ROOT/test/integration/test_python.sh restart-alpha $work"
fail=0
# -p no:cacheprovider: nothing written into the source tree. A test that
# hangs ends the run after 60 s with every thread's stack (the thread
# method: a test stuck in a C call is not interrupted by a signal).
/usr/bin/python3 -m pytest -p no:cacheprovider -q -rs --durations=5 \
    --timeout=60 --timeout-method=thread \
    "$ROOT/bindings/python/tests" >"$work/pytest.log" 2>&1 || fail=1
cat "$work/pytest.log"
GW_PID_A=$(cat "$work/alpha.pid")
gw_gateways_down
exit $fail
