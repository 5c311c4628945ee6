#!/usr/bin/env bash
# What `meson install` gives a gateway host, in a scratch root: the
# programs, libgridwire.so.0 with gridwire.h and gridwire.pc, the default
# config, the systemd unit (checked with systemd-analyze verify: this
# machine's PID 1 is not systemd, so the unit is not started), and the
# Wireshark dissector; nothing installed names the source tree. Then a
# client program is built against the installed gridwire.pc and run
# against the installed gridwired, started with the installed config.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
gw_workdir install
dest=$work/root
meson install -C "$ROOT/build" --destdir "$dest" --no-rebuild >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; gw_die "meson install failed"; }
prefix=$(meson introspect "$ROOT/build" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
libdir=$(meson introspect "$ROOT/build" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
p=$dest$prefix
fail=0
for b in gridwired gwctl gw-perf gw-kv; do gw_check "bin/$b installed, executable" test -x "$p/bin/$b"; done
gw_check "sbin/gridwire-setup installed, executable" test -x "$p/sbin/gridwire-setup"
gw_check "libgridwire.so.0 with its SONAME" sh -c \
    "readelf -d '$p/$libdir/libgridwire.so.0' | grep -q 'soname: \[libgridwire.so.0\]'"
gw_check "gridwire.h" test -f "$p/include/gridwire.h"
gw_check "gridwire.pc" test -f "$p/$libdir/pkgconfig/gridwire.pc"
etc=$dest$( [[ $prefix == /usr ]] && echo /etc || echo "$prefix/etc")
gw_check "the default config" test -f "$etc/gridwire/gridwire.ini"
gw_check "the dissector" test -f "$p/$libdir/wireshark/plugins/gridwire.lua"
unit=$p/lib/systemd/system/gridwired@.service
gw_check "the systemd unit" test -f "$unit"
gw_check "the man pages" test -f "$p/share/man/man8/gridwired.8" -a -f "$p/share/man/man1/gw-perf.1"
erl_app=$(ls -d "$p"/lib/erlang/lib/gridwire-* 2>/dev/null | head -1)
gw_check "the Erlang application (ebin, priv)" test -f "$erl_app/ebin/gridwire.app" -a \
    -f "$erl_app/ebin/gridwire_nif.beam" -a -f "$erl_app/priv/gridwire_nif.so"
gw_check "Erlang loads the installed application and its NIF" env ERL_LIBS="$p/lib/erlang/lib" \
    LD_LIBRARY_PATH="$p/$libdir" erl -noshell -eval '
    ok = application:load(gridwire),
    {module, gridwire_nif} = code:ensure_loaded(gridwire_nif),
    true = lists:prefix(code:lib_dir(gridwire), code:which(gridwire_nif)),
    halt().'
# Nothing installed may name the build or source tree.
if grep -rlF "$ROOT" "$dest" >"$work/refs"; then
    echo "FAIL: installed files name the source tree: $(tr '\n' ' ' <"$work/refs")"
    fail=1
else
    echo "ok: no installed file names $ROOT"
fi
# The unit, with its paths moved into the scratch root, as systemd reads it.
mkdir -p "$work/units"
sed "s#$prefix/#$p/#g; s#$prefix/etc#$etc#g" "$unit" >"$work/units/gridwired@check.service"
# (Its Documentation= names man:gridwired(8), which verify looks up.)
gw_check "systemd-analyze verify gridwired@check.service" env MANPATH="$p/share/man" \
    systemd-analyze verify "$work/units/gridwired@check.service"
sed "s#$prefix/#$p/#g" "$p/lib/systemd/system/gridwire-exporter.service" \
    >"$work/units/gridwire-exporter-check.service"
gw_check "systemd-analyze verify of the exporter's unit" env MANPATH="$p/share/man" \
    systemd-analyze verify "$work/units/gridwire-exporter-check.service"
gw_check "the Prometheus rules, and promtool takes them" \
    promtool check rules "$p/share/gridwire/prometheus/gridwire-rules.yml"

# A client built against the installed library, run against the installed gateway.
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$p/$libdir/pkgconfig
# shellcheck disable=SC2046  # pkg-config's words, split on purpose
gw_check "a client builds against the installed gridwire.pc" \
    cc -o "$work/client" "$ROOT/test/integration/gw_installed_client.c" $(pkg-config --cflags --libs gridwire)
gw_installed_run "$work" "$p/bin/gridwired" "$etc/gridwire/gridwire.ini" "$work/client" "$p/$libdir" ||
    fail=1
exit $fail
