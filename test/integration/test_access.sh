#!/usr/bin/env bash
# Who may use a gateway: root, its own user, and members of [node]
# socket_group. Another user is refused (by the socket's file mode, or,
# where the mode lets anyone connect, by SO_PEERCRED with a clear -EACCES),
# and a member of the group gets through and is served. No client can
# register an endpoint another holds, so none can read another's messages
# (each channel is its own memfd, handed only to its client).
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
BIN=$(gw_root)/build/app
gw_workdir access
chmod 755 "$work"
# A copy other users can surely run, wherever the checkout lives.
cp "$BIN/gw-perf" "$work/"
cp -L "$(gw_root)/build/lib/libgridwire.so.0" "$work/" # its SONAME
chmod 755 "$work"/*
gw_ns_up >/dev/null
fail=0

as_nobody() { # group gw-perf-args...: run gw-perf in gwa as user nobody
    local group=$1
    shift
    ip netns exec gwa setpriv --reuid=nobody --regid="$group" --clear-groups \
        env LD_LIBRARY_PATH="$work" "$work/gw-perf" "$@"
}
expect() { # description want-rc(0|nonzero) grep-pattern cmd...
    local what=$1 want=$2 pattern=$3 out rc=0
    shift 3
    out=$("$@" 2>&1) || rc=$?
    if { [[ $want == 0 ]] && ((rc == 0)); } || { [[ $want != 0 ]] && ((rc != 0)); }; then
        if [[ -z $pattern || $out == *"$pattern"* ]]; then
            echo "ok: $what"
            return
        fi
    fi
    echo "FAIL: $what (exit $rc): $out"
    fail=1
}
send3() { echo "-s /run/gridwire/alpha.sock -n 1 -e nobody-sink -w 1 -m 3"; }

# Default mode 0660, no group: the file mode keeps other users out.
gw_gateways_up "$work"
expect "another user cannot even connect (mode 0660)" nonzero "alpha.sock: Permission denied" \
    as_nobody nogroup tx $(send3)
gw_gateways_down

# Mode 0666: anyone may connect, SO_PEERCRED decides.
gw_gateways_up "$work" --set node.socket_mode=0666
expect "another user is refused with EACCES (SO_PEERCRED)" nonzero "alpha.sock: Permission denied" \
    as_nobody nogroup tx $(send3)
gw_gateways_down
grep -q '"clients_refused":1' "$work/alpha.json" && echo "ok: the refusal was counted" ||
    { echo "FAIL: clients_refused not counted: $(cat "$work/alpha.json")"; fail=1; }

# Mode 0660 with group nogroup: its members are served.
gw_gateways_up "$work" --set node.socket_group=nogroup
ip netns exec gwa "$BIN/gw-perf" rx -s /run/gridwire/alpha.sock -e nobody-sink --expect 3 \
    --idle-timeout 10 >"$work/rx.json" 2>"$work/rx.err" &
rx=$!
for _ in $(seq 50); do grep -q "rx ready" "$work/rx.err" && break; sleep 0.1; done
# Nobody can take over another client's endpoint to read its messages.
expect "an endpoint name held by another client is refused (EEXIST)" nonzero "File exists" \
    as_nobody nogroup rx -s /run/gridwire/alpha.sock -e nobody-sink --expect 1 --idle-timeout 1
expect "a member of socket_group connects and sends" 0 "" as_nobody nogroup tx $(send3)
wait "$rx" && echo "ok: its messages were delivered" || { echo "FAIL: not delivered: $(cat "$work/rx.json")"; fail=1; }
gw_gateways_down
exit $fail
