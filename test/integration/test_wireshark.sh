#!/usr/bin/env bash
# The Wireshark dissector (app/wireshark/gridwire.lua) against real frames:
# tshark captures a verified run on both sides of the veths (DATA arriving
# at beta, ACKs and HELLOs arriving at alpha: af_packet sends past the
# kernel's taps, so each side's own frames are seen at the other), and
#  - every frame decodes as gridwire, none malformed, no expert error;
#  - the records of the distinct DATA frames add up to the messages the
#    run delivered (when the capture lost no packet);
#  - ACKs and HELLOs decode (HELLO names the peer);
#  - one byte flipped in a DATA frame's payload is flagged: bad CRC;
#  - a quarter of the writers send urgent messages: their frames decode
#    as the urgent class, as many of their records as the gateway sent.
# Port 47000 belongs to Wireshark's HCrt dissector; the script takes it.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
LUA=$ROOT/app/wireshark/gridwire.lua
command -v tshark >/dev/null || gw_die "no tshark: ./scripts/gw deps installs it"
gw_workdir wireshark
export GW_LINK=veth
gw_ns_up >/dev/null
ts() { tshark -X "lua_script:$LUA" "$@" 2>/dev/null; }

gw_captured_run "$work" --procs 1 --writers 20 --msgs 1000 --rate 4000 --urgent-every 4
run=$(tail -1 "$work/pair.out")

# A copy of one DATA frame with a payload byte flipped (as pcap: a 24-byte
# file header, 16-byte record headers; two interfaces make tshark write
# pcapng, which editcap turns back).
editcap -F pcap "$work/beta.pcap" "$work/beta1.pcap"
python3 - "$work/beta1.pcap" "$work/bad.pcap" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
off = 24
while off + 16 <= len(data):
    incl = struct.unpack("<I", data[off + 8:off + 12])[0]
    frame = bytearray(data[off + 16:off + 16 + incl])
    if len(frame) > 200 and frame[42:44] == b"GW" and frame[45] == 1:
        frame[150] ^= 0x10
        open(sys.argv[2], "wb").write(data[:24] + data[off:off + 16] + bytes(frame))
        break
    off += 16 + incl
PY

# Every UDP frame to the gridwire port (the rest is the bond's LACP and the
# kernel's IPv6 chatter).
ts -r "$work/beta.pcap" -Y "udp.dstport == 47000" -T fields -e gridwire.type -e gridwire.src_node \
    -e gridwire.lane -e gridwire.seq -e gridwire.nrec -e gridwire.crc_ok -e gridwire.class \
    >"$work/beta.fields"
ts -r "$work/alpha.pcap" -Y "udp.dstport == 47000" -T fields -e gridwire.type \
    -e gridwire.hello.name -e gridwire.ack.cum >"$work/alpha.fields"
ts -r "$work/beta.pcap" -Y "_ws.malformed || _ws.expert.severity == error" >"$work/beta.bad"
ts -r "$work/alpha.pcap" -Y "_ws.malformed || _ws.expert.severity == error" >"$work/alpha.bad"
ts -r "$work/bad.pcap" -V >"$work/bad.txt"
ts -r "$work/beta.pcap" -c 1 -V -Y "gridwire.type == 1" >"$work/decoded.txt"
sed -n '/^gridwire/,/Record: /p' "$work/decoded.txt" | head -20

python3 - "$work" "$run" <<'PY'
import json, sys
work, run = sys.argv[1], json.loads(sys.argv[2])
def lines(name):
    return [l.split("\t") for l in open(f"{work}/{name}").read().splitlines()]
beta, alpha = lines("beta.fields"), lines("alpha.fields")
drops = sum(int(w) for f in ("tshark-a.out", "tshark-b.out")
            for l in open(f"{work}/{f}") for w in l.split()[:1] if "dropped" in l and w.isdigit())
bad = []
if run["delivered"] != run["sent"] or run["order_violations"]:
    bad.append(f"the run itself: {run}")
data, urgent = {}, {}
for t, src, lane, seq, nrec, ok, cls in ((l + [""] * 7)[:7] for l in beta):
    if t == "1" and src == "1":
        data[(lane, cls, seq)] = int(nrec)
        if cls == "1":
            urgent[(lane, seq)] = int(nrec)
records = sum(data.values())
undecoded = sum(1 for l in beta + alpha if not l[0])
acks = sum(1 for l in alpha if l[0] == "2")
hellos = {l[1] for l in alpha if l[0] == "3"}
print(f"beta's side: {len(beta)} frames, {len(data)} distinct DATA frames from alpha, {records} records; "
      f"run delivered {run['delivered']}; alpha's side: {len(alpha)} frames, {acks} ACKs, "
      f"HELLOs from {sorted(hellos)}; capture drops {drops}")
if undecoded: bad.append(f"{undecoded} frames not decoded as gridwire")
for side in ("beta", "alpha"):
    n = len(open(f"{work}/{side}.bad").read().splitlines())
    if n: bad.append(f"{n} malformed or flagged frames on {side}'s side")
if not data: bad.append("no DATA frame captured")
if drops == 0 and records != run["delivered"]:
    bad.append(f"records in the capture {records} != messages delivered {run['delivered']}")
if run["wrong_class"]: bad.append(f"{run['wrong_class']} messages in the wrong class")
if not urgent: bad.append("no DATA frame decoded as urgent")
elif drops == 0 and sum(urgent.values()) != run["urgent_msgs"]:
    bad.append(f"urgent records {sum(urgent.values())} != urgent messages sent {run['urgent_msgs']}")
if not acks: bad.append("no ACK decoded")
if "beta" not in hellos: bad.append("no HELLO from beta decoded")
badtxt = open(f"{work}/bad.txt").read()
if "CRC32C does not match" not in badtxt or "CRC32C good: False" not in badtxt:
    bad.append("the flipped byte was not flagged as a bad CRC")
added = "the records add up" if drops == 0 else f"(records not compared: the capture dropped {drops})"
print(f"urgent: {len(urgent)} DATA frames, {sum(urgent.values())} records")
print("FAIL: " + "; ".join(bad) if bad else f"ok: every frame decodes, {added}, a bad CRC is flagged")
sys.exit(1 if bad else 0)
PY
