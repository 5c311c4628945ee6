#!/usr/bin/env bash
# What `meson install` gives a gateway host, in a scratch root: the
# programs, libgridwire.so.0 with gridwire.h and gridwire.pc, the default
# config, the systemd unit (checked with systemd-analyze verify: this
# machine's PID 1 is not systemd, so the unit is not started), and the
# Wireshark dissector; nothing installed names the source tree. Then a
# client program is built against the installed gridwire.pc and run
# against the installed gridwired, started with the installed config.
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
check() { # description command...
    if "${@:2}" >/dev/null 2>&1; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
for b in gridwired gwctl gw-perf gw-kv; do check "bin/$b installed, executable" test -x "$p/bin/$b"; done
check "sbin/gridwire-setup installed, executable" test -x "$p/sbin/gridwire-setup"
check "libgridwire.so.0 with its SONAME" sh -c \
    "readelf -d '$p/$libdir/libgridwire.so.0' | grep -q 'soname: \[libgridwire.so.0\]'"
check "gridwire.h" test -f "$p/include/gridwire.h"
check "gridwire.pc" test -f "$p/$libdir/pkgconfig/gridwire.pc"
etc=$dest$( [[ $prefix == /usr ]] && echo /etc || echo "$prefix/etc")
check "the default config" test -f "$etc/gridwire/gridwire.ini"
check "the dissector" test -f "$p/$libdir/wireshark/plugins/gridwire.lua"
unit=$p/lib/systemd/system/gridwired@.service
check "the systemd unit" test -f "$unit"
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
check "systemd-analyze verify gridwired@check.service" systemd-analyze verify \
    "$work/units/gridwired@check.service"

# A client built against the installed library, run against the installed gateway.
cat >"$work/client.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <gridwire.h>
/* 1,000 messages to an endpoint of its own, back once and in order. */
int main(int argc, char **argv)
{
	struct gw_client *cl;
	int rc = gw_connect(argv[1], &cl);
	if (rc < 0 || (rc = gw_register(cl, "self")) < 0) {
		fprintf(stderr, "client: %s\n", gw_strerror(rc));
		return 1;
	}
	for (unsigned i = 0; i < 1000; i++)
		if ((rc = gw_send(cl, gw_local_node(cl), "self", &i, sizeof(i), 1000)) < 0)
			return fprintf(stderr, "send: %s\n", gw_strerror(rc)), 1;
	for (unsigned i = 0; i < 1000; i++) {
		struct gw_msg m;
		unsigned v;
		if ((rc = gw_recv(cl, &m, 5000)) < 0 || m.kind != GW_MSG_DATA || m.len != sizeof(v))
			return fprintf(stderr, "recv %u: %s\n", i, gw_strerror(rc)), 1;
		memcpy(&v, m.data, sizeof(v));
		if (v != i)
			return fprintf(stderr, "message %u where %u was due\n", v, i), 1;
	}
	printf("1000 of 1000 in order\n");
	gw_close(cl);
	return 0;
}
C
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$p/$libdir/pkgconfig
# shellcheck disable=SC2046  # pkg-config's words, split on purpose
check "a client builds against the installed gridwire.pc" \
    cc -o "$work/client" "$work/client.c" $(pkg-config --cflags --libs gridwire)
gw_ns_up >/dev/null
sock=/run/gridwire/installed.sock
rm -f "$sock" # a killed gateway's, which would refuse the client
ip netns exec gwa "$p/bin/gridwired" -c "$etc/gridwire/gridwire.ini" --set port.kind=single \
    --set port.members=af_packet:veth-a0 --set "node.socket=$sock" \
    --set "eal.args=--no-pci --no-huge -m 512 --no-shconf -l 0 --file-prefix=gw-installed" \
    >"$work/gridwired.log" 2>&1 &
gw_pid=$!
gw_cleanup_push _gw_stop_pid "$gw_pid"
gw_wait_ready "$work/gridwired.log" "listening on $sock" "$gw_pid" "the installed gridwired"
if LD_LIBRARY_PATH=$p/$libdir ip netns exec gwa "$work/client" "$sock" >"$work/client.out" 2>&1; then
    echo "ok: the installed client and gateway: $(cat "$work/client.out")"
else
    echo "FAIL: the installed client and gateway: $(cat "$work/client.out")"
    tail -5 "$work/gridwired.log"
    fail=1
fi
exit $fail
