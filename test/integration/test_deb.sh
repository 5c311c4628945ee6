#!/usr/bin/env bash
# The Debian packages: dpkg-buildpackage builds gridwired, libgridwire0,
# libgridwire-dev, erlang-gridwire and python3-gridwire from a copy of this
# tree (running the unit suites and failing on any change to the library's
# symbols); lintian finds no error and no warning; gridwired depends on the
# package of every DPDK driver its port kinds load as a plugin. Then they
# are installed on this machine (apt, as a user would), a client is built
# against the system gridwire.pc and run against the installed gridwired
# with /etc/gridwire/gridwire.ini, Debian's tshark loads the dissector from
# its plugin folder, Debian's Erlang loads the binding's application and
# NIF, Debian's python3 (from /, with a clean environment) imports gridwire
# and gridwire.aio from /usr/lib/python3/dist-packages, renders their help
# and sends itself a message through the installed gridwired, and a purge
# leaves nothing behind.
# gw-timeout: 270
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
gw_workdir deb
gw_packages_lock # beside test_host, whose guests read this machine's packages
fail=0
pkgs=(gridwired libgridwire0 libgridwire-dev erlang-gridwire python3-gridwire)
if dpkg-query -W -f='${Status}\n' "${pkgs[@]}" 2>/dev/null | grep -q "^install ok installed"; then
    gw_die "gridwire packages are installed already (apt-get purge ${pkgs[*]}, then rerun)"
fi

if gw_debs_build "$work"; then
    echo "ok: dpkg-buildpackage (unit suites: $(grep -c '^ *[0-9]*/[0-9]* .* OK ' "$work/build.log") passed)"
else
    echo "FAIL: dpkg-buildpackage"
    tail -20 "$work/build.log"
    exit 1
fi
changes=$(ls "$work"/src/gridwire_*_amd64.changes)
if lintian --fail-on error,warning "$changes" >"$work/lintian.log" 2>&1; then
    echo "ok: lintian, no error or warning"
else
    echo "FAIL: lintian"
    grep '^[EW]:' "$work/lintian.log" | head -20
    fail=1
fi

# Every PMD a port kind creates (gw_port_vdev(m, "KIND", ...) in drivers/),
# found by its registered name in DPDK's plugin folder, must be a dependency.
deb() { ls "$work"/src/"$1"_*_amd64.deb; }
depends=$(dpkg-deb -f "$(deb gridwired)" Depends)
pmds=$(ls -d /usr/lib/"$(dpkg-architecture -qDEB_HOST_MULTIARCH)"/dpdk/pmds-* | tail -1)
kinds=$(grep -ho 'gw_port_vdev(m, "[a-z_]*"' "$ROOT"/drivers/*.c | cut -d'"' -f2 | sort -u)
[[ -n $kinds ]] || gw_die "found no port kinds in drivers/"
for k in $kinds; do
    so=$(grep -l -a "\"name\": \"net_$k\"" "$pmds"/*.so.* | head -1)
    pkg=$(dpkg -S "$(readlink -f "$so")" | cut -d: -f1)
    gw_check "net_$k's plugin ($pkg) is a dependency" grep -qw -- "$pkg" <<<"$depends"
done
for so in librte_bus_pci librte_mempool_ring; do
    pkg=$(dpkg -S "$(readlink -f "$pmds/$so.so")" | cut -d: -f1)
    gw_check "$so's plugin ($pkg) is a dependency" grep -qw -- "$pkg" <<<"$depends"
done

# Installed on this machine, then purged however the test ends.
_gw_purge() { apt-get purge -y -q "${pkgs[@]}" >"$work/purge.log" 2>&1 || true; }
gw_cleanup_push _gw_purge
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "$(deb gridwired)" "$(deb libgridwire0)" "$(deb libgridwire-dev)" "$(deb erlang-gridwire)" \
    "$(deb python3-gridwire)" >"$work/install.log" 2>&1; then
    echo "ok: apt-get install of the five packages"
else
    echo "FAIL: apt-get install"
    tail -10 "$work/install.log"
    exit 1
fi
gw_check "gridwired --check accepts /etc/gridwire/gridwire.ini" \
    gridwired -c /etc/gridwire/gridwire.ini --check
gw_check "man gridwired" man -w gridwired
gw_check "systemd-analyze verify of the installed unit" sh -c \
    "cp /lib/systemd/system/gridwired@.service '$work/gridwired@check.service' &&
     systemd-analyze verify '$work/gridwired@check.service'"
gw_check "systemd-analyze verify of the installed exporter unit" sh -c \
    "cp /lib/systemd/system/gridwire-exporter.service '$work/gridwire-exporter.service' &&
     systemd-analyze verify '$work/gridwire-exporter.service'"
gw_check "promtool takes the installed rules" \
    promtool check rules /usr/share/gridwire/prometheus/gridwire-rules.yml
gw_check "tshark loads the dissector from its plugin folder" sh -c \
    "tshark -G plugins 2>/dev/null | grep -q 'gridwire.lua'"
gw_check "Erlang finds the gridwire application and loads its NIF" erl -noshell -eval '
    ok = application:load(gridwire),
    {module, gridwire_nif} = code:ensure_loaded(gridwire_nif),
    true = is_integer(gridwire_nif:endpoint_id(<<"x">>)),
    halt().'
# Debian's python3 as a user's program runs it: from / (no gridwire in the
# current folder) and with no PYTHONPATH, so the binding can only come from
# the package.
pydir=/usr/lib/python3/dist-packages/gridwire
py3() { (cd / && env -i /usr/bin/python3 "$@"); }
gw_check "Debian's python3 imports gridwire and gridwire.aio from $pydir" py3 -c '
import sys, gridwire, gridwire.aio
for m in (gridwire, gridwire._gridwire, gridwire.aio):
    assert m.__file__.startswith(sys.argv[1] + "/"), m.__file__' "$pydir"
py3 -c 'import gridwire, gridwire.aio; help(gridwire); help(gridwire.aio)' >"$work/pyhelp.txt" 2>&1 || true
gw_check "help(gridwire) and help(gridwire.aio) render" sh -c \
    "grep -q 'class Client(' '$work/pyhelp.txt' && grep -q 'connect(path' '$work/pyhelp.txt' &&
     grep -qx '    $pydir/__init__.py' '$work/pyhelp.txt' && grep -qx '    $pydir/aio.py' '$work/pyhelp.txt'"
# shellcheck disable=SC2046  # pkg-config's words, split on purpose
gw_check "a client builds against the system gridwire.pc" \
    cc -o "$work/client" "$ROOT/test/integration/gw_installed_client.c" $(pkg-config --cflags --libs gridwire)
gw_installed_run "$work" /usr/bin/gridwired /etc/gridwire/gridwire.ini "$work/client" || fail=1
# The binding against the same gateway (still up, on gw_installed_run's
# socket) as the C client was: a message to itself on its own node.
if (cd / && ip netns exec gwa env -i /usr/bin/python3 -c '
import sys, gridwire
with gridwire.connect(sys.argv[1]) as c:
    c.register("py")
    data = b"from python3-gridwire"
    c.send(c.local_node, "py", data)
    m = c.recv(5)
    if m is None or m.kind != gridwire.Kind.DATA or m.data != data:
        sys.exit(f"received {m!r}, not DATA {data!r}")
    print(f"{len(m.data)} bytes back from node {c.local_node}")' \
    /run/gridwire/installed.sock) >"$work/python.out" 2>&1; then
    echo "ok: the installed Python binding and gateway: $(cat "$work/python.out")"
else
    echo "FAIL: the installed Python binding and gateway: $(tail -3 "$work/python.out")"
    fail=1
fi
gw_cleanup_run
left=$(dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null | grep -v "not-installed" || true)
gw_check "purged: no package left" test -z "$left"
gw_check "purged: /etc/gridwire and the unit gone" \
    test ! -e /etc/gridwire -a ! -e /lib/systemd/system/gridwired@.service
gw_check "purged: $pydir gone (its byte-code too)" test ! -e "$pydir"
exit $fail
