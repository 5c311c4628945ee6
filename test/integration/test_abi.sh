#!/usr/bin/env bash
# libgridwire's ABI, as a program built against it sees it: the shared
# object exports exactly the functions gridwire.h declares (no internal
# gw_chan_* or gw_client_* symbols), each under the version node that
# lib/client/libgridwire.map gives it (GRIDWIRE_0, then one node per
# release that added functions), with SONAME libgridwire.so.0, and it needs
# no DPDK library.
# gw-timeout: 120
# gw-lane: apart
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
so=$(ls "$ROOT"/build/lib/libgridwire.so.0.* | head -1)
[[ -f $so ]] || gw_die "no built libgridwire.so.0.* in build/lib"
python3 - "$so" "$ROOT/lib/client/gridwire.h" "$ROOT/lib/client/libgridwire.map" <<'PY'
import re, subprocess, sys
so, header, mapfile = sys.argv[1], sys.argv[2], sys.argv[3]
node_of = {}
for node, body in re.findall(r'(GRIDWIRE_[0-9.]+)\s*\{(.*?)\}', open(mapfile).read(), re.S):
    for name in re.findall(r'\b(gw_[a-z0-9_]+);', body):
        node_of[name] = node
declared = set(re.findall(r'^[a-z][^\n;(]*?\b(gw_[a-z0-9_]+)\(', open(header).read(), re.M))
dyn = subprocess.run(["objdump", "-T", so], capture_output=True, text=True, check=True).stdout
exported = {}
for line in dyn.splitlines():
    f = line.split()
    # objdump -T: address flags section size version name; defined ones only
    if len(f) >= 6 and f[-1].startswith("gw_") and "*UND*" not in line:
        exported[f[-1]] = f[-2]
dynamic = subprocess.run(["readelf", "-d", so], capture_output=True, text=True, check=True).stdout
soname = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", dynamic)
needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dynamic)
bad = []
extra, missing = sorted(set(exported) - declared), sorted(declared - set(exported))
if extra: bad.append(f"exported but not in gridwire.h: {', '.join(extra)}")
if missing: bad.append(f"in gridwire.h but not exported: {', '.join(missing)}")
wrong = sorted(f"{n} ({v}, map: {node_of.get(n)})" for n, v in exported.items()
               if v != node_of.get(n))
if wrong: bad.append(f"not under the map's version node: {', '.join(wrong)}")
if not soname or soname.group(1) != "libgridwire.so.0":
    bad.append(f"SONAME {soname.group(1) if soname else None}, want libgridwire.so.0")
rte = [n for n in needed if n.startswith("librte")]
if rte: bad.append(f"needs DPDK libraries: {', '.join(rte)}")
print(f"{len(exported)} symbols exported, {len(declared)} declared; SONAME "
      f"{soname.group(1) if soname else '?'}; needs {', '.join(needed)}")
nodes = sorted(set(node_of.values()))
print("FAIL: " + "; ".join(bad) if bad else
      f"ok: the ABI is gridwire.h's, versioned {', '.join(nodes)}")
sys.exit(1 if bad else 0)
PY
