#!/usr/bin/env bash
# Issue 22: doc/protocol.md is enough to implement the protocol.
# test/integration/protocol_decode.py is a decoder written from the document
# alone (no look at lib/wire, lib/auth or the Lua dissector). tshark captures
# a verified run on both sides of the veths (DATA arriving at beta, ACKs and
# HELLOs arriving at alpha, as in test_wireshark.sh; a quarter of the
# writers urgent, 1% of the DATA frames lost), and the decoder and tshark's
# gridwire dissector must agree frame for frame:
#  - the same set of gridwire frames in each capture;
#  - the same header (type, version, nodes, lane and class, epoch, seq,
#    base, record count, length, CRC) in every one;
#  - DATA: the same records (length, kind, endpoint, channel, msg id);
#    ACK: the same acked epoch, cum, SACK bits; HELLO: the same name,
#    capabilities and interval;
#  - the same CRC verdict, good for every frame;
#  - more than 1000 frames compared;
#  - a DATA frame with one payload byte flipped is a bad CRC for both;
#  - what the messages carry, as the document's "What a message carries"
#    says: every MSG names the endpoint "sink" by its FNV-1a id, comes from
#    a channel 1 .. 65535, and each channel's numbers of each class (bit
#    31: urgent, as its lane) run from 0 with no gap, one per message sent;
#    HELLOs carry no key ids ([auth] off) and names of A-Z a-z 0-9 _ -.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
LUA=$ROOT/app/wireshark/gridwire.lua
DEC=$ROOT/test/integration/protocol_decode.py
PORT=47000 # udp_port in config/gridwire.ini (the document names no number)
command -v tshark >/dev/null || gw_die "no tshark: ./scripts/gw deps installs it"
gw_workdir protocol
export GW_LINK=veth
gw_ns_up >/dev/null
fail=0

gw_check "the decoder's self-test: the CRC32C check value, the endpoint ids and a DATA frame with no records, as the document gives them" python3 "$DEC" --selftest

# 1% of the frames beta receives dropped (XDP, before its capture sees
# them): retransmissions, and ACKs with SACK bits for the decoders.
gw_captured_run "$work" --procs 1 --writers 20 --msgs 500 --rate 4000 --urgent-every 4 --drop 10
run=$(tail -1 "$work/pair.out")
echo "run: $run"
gw_check "the run delivered every message in order" python3 -c '
import json, sys
r = json.loads(sys.argv[1])
sys.exit(0 if r["delivered"] == r["sent"] > 0 and not r["order_violations"] else 1)' "$run"

# The fields tshark's dissector gives, every occurrence (records, per DATA
# frame), one line per frame of the capture.
FIELDS=(frame.number udp.dstport gridwire.magic gridwire.version gridwire.type
    gridwire.src_node gridwire.dst_node gridwire.lane gridwire.class gridwire.nrec
    gridwire.epoch gridwire.seq gridwire.base gridwire.len gridwire.crc gridwire.crc_ok
    gridwire.rec.len gridwire.rec.kind gridwire.rec.dst_ep gridwire.rec.src_chan
    gridwire.rec.msg_id gridwire.ack.epoch gridwire.ack.cum gridwire.ack.nbits
    gridwire.ack.held gridwire.hello.caps gridwire.hello.caps.auth
    gridwire.hello.caps.batching gridwire.hello.interval_ms gridwire.hello.name)
fields() {
    local f args=()
    for f in "${FIELDS[@]}"; do args+=(-e "$f"); done
    tshark -X "lua_script:$LUA" -r "$1" -T fields -E separator=/t -E occurrence=a \
        -E 'aggregator=;' "${args[@]}" 2>/dev/null
}
# Both sides at once (two CPUs): the decoder and tshark for each capture.
for side in beta alpha; do
    python3 "$DEC" --port "$PORT" --summary "$work/$side.pcap" >"$work/$side.dec" \
        2>"$work/$side.dec.sum" &
    fields "$work/$side.pcap" >"$work/$side.fields" &
done
wait
cat "$work/beta.dec.sum" "$work/alpha.dec.sum"

# A copy of one DATA frame of beta's capture, as it is and with one payload
# byte flipped, each a classic pcap of one frame.
python3 - "$DEC" "$work" <<'PY' || echo "no DATA frame to copy"
import json, os, struct, sys
dec, work = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.dirname(dec))
from protocol_decode import read_capture
pick = next(d["frame"] for d in map(json.loads, open(f"{work}/beta.dec"))
            if d.get("type") == 1 and d["len"] > 100 and d["crc_ok"])
frame = next(bytearray(p) for n, (_, p, _) in enumerate(read_capture(f"{work}/beta.pcap"), 1)
             if n == pick)
def write(name, f):
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    open(f"{work}/{name}", "wb").write(hdr + struct.pack("<IIII", 0, 0, len(f), len(f)) + bytes(f))
write("good.pcap", frame)
frame[74 + 60] ^= 0x10  # a byte of the first record's data
write("bad.pcap", frame)
print(f"flipped: a byte of beta's frame {pick}")
PY
for f in good bad; do
    touch "$work/$f.pcap"
    python3 "$DEC" --port "$PORT" "$work/$f.pcap" >"$work/$f.dec" || true
    fields "$work/$f.pcap" >"$work/$f.fields" || true
done

python3 - "$work" "$PORT" "$DEC" "$run" <<'PY' || fail=1
import json, os, re, sys
work, port = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from protocol_decode import endpoint_id
run = json.loads(sys.argv[4])
FIELDS = ("frame.number udp.dstport gridwire.magic gridwire.version gridwire.type "
          "gridwire.src_node gridwire.dst_node gridwire.lane gridwire.class gridwire.nrec "
          "gridwire.epoch gridwire.seq gridwire.base gridwire.len gridwire.crc gridwire.crc_ok "
          "gridwire.rec.len gridwire.rec.kind gridwire.rec.dst_ep gridwire.rec.src_chan "
          "gridwire.rec.msg_id gridwire.ack.epoch gridwire.ack.cum gridwire.ack.nbits "
          "gridwire.ack.held gridwire.hello.caps gridwire.hello.caps.auth "
          "gridwire.hello.caps.batching gridwire.hello.interval_ms gridwire.hello.name").split()
results = []
def check(ok, what):
    results.append(ok)
    print(("ok: " if ok else "FAIL: ") + what)

def tshark_rows(name):
    """frame number -> {field: [values]} for the frames tshark calls gridwire."""
    rows = {}
    for line in open(f"{work}/{name}").read().splitlines():
        cols = (line.split("\t") + [""] * len(FIELDS))[:len(FIELDS)]
        row = {f: (c.split(";") if c else []) for f, c in zip(FIELDS, cols)}
        if row["gridwire.magic"]:
            rows[int(row["frame.number"][0])] = row
    return rows

def decoded(name):
    return {d["frame"]: d for d in map(json.loads, open(f"{work}/{name}")) if d["gridwire"]}

def num(v):
    return int(v, 0)

def boolean(v):
    return {"1": True, "true": True, "0": False, "false": False}[v.lower()]

def one(row, f, conv=num):
    v = row[f]
    return conv(v[0]) if len(v) == 1 else ("missing" if not v else v)

def many(row, f, conv=num):
    return [conv(v) for v in row[f]]

# What each decoded field is in tshark's terms: (tshark field, the
# decoder's value, the types it must be present for; compared whenever
# tshark gives it).
HEADER = [
    ("gridwire.magic", lambda d: d["magic"], (1, 2, 3)),
    ("gridwire.version", lambda d: d["version"], (1, 2, 3)),
    ("gridwire.type", lambda d: d["type"], (1, 2, 3)),
    ("gridwire.src_node", lambda d: d["src_node"], (1, 2, 3)),
    ("gridwire.dst_node", lambda d: d["dst_node"], (1, 2, 3)),
    ("gridwire.lane", lambda d: d["lane"], (1, 2)),
    ("gridwire.class", lambda d: int(d["urgent"]), (1, 2)),
    ("gridwire.epoch", lambda d: d["epoch"], (1, 2, 3)),
    ("gridwire.nrec", lambda d: d["nrec"], (1,)),
    ("gridwire.seq", lambda d: d["seq"], (1,)),
    ("gridwire.base", lambda d: d["base"], (1,)),
    ("gridwire.len", lambda d: d["len"], (1, 2, 3)),
    ("gridwire.crc", lambda d: d["crc"], (1, 2, 3)),
]
RECORDS = [("gridwire.rec.len", "len"), ("gridwire.rec.kind", "kind"),
           ("gridwire.rec.dst_ep", "dst_ep"), ("gridwire.rec.src_chan", "src_chan"),
           ("gridwire.rec.msg_id", "msg_id")]

def compare(d, row, bad):
    """The fields of one frame that disagree, added to bad[field]."""
    def diff(field, mine, theirs):
        if mine != theirs:
            bad.setdefault(field, []).append((d["frame"], mine, theirs))
    t = d["type"]
    for f, get, need in HEADER:
        if row[f] or t in need:
            diff(f, get(d), one(row, f))
    diff("gridwire.crc_ok", d["crc_ok"], one(row, "gridwire.crc_ok", boolean))
    if t == 1:
        for f, k in RECORDS:
            diff(f, [r[k] for r in d.get("records") or []], many(row, f))
        diff("nrec = records in the payload", d["nrec"], len(d.get("records") or []))
    elif t == 2:
        a = d.get("ack") or {}
        diff("gridwire.ack.epoch", a.get("acked_epoch"), one(row, "gridwire.ack.epoch"))
        diff("gridwire.ack.cum", a.get("cum"), one(row, "gridwire.ack.cum"))
        diff("gridwire.ack.nbits", a.get("nbits"), one(row, "gridwire.ack.nbits"))
        held = [int(x) for v in row["gridwire.ack.held"] for x in v.replace(",", " ").split()
                if x.isdigit()]
        diff("gridwire.ack.held", a.get("held", []), held)
    elif t == 3:
        h = d.get("hello") or {}
        diff("gridwire.hello.name", h.get("name"), one(row, "gridwire.hello.name", str))
        diff("gridwire.hello.caps", h.get("caps"), one(row, "gridwire.hello.caps"))
        diff("gridwire.hello.caps.auth", h.get("caps_auth"),
             one(row, "gridwire.hello.caps.auth", boolean))
        diff("gridwire.hello.caps.batching", h.get("caps_batching"),
             one(row, "gridwire.hello.caps.batching", boolean))
        diff("gridwire.hello.interval_ms", h.get("interval_ms"),
             one(row, "gridwire.hello.interval_ms"))
    if d["error"] or d.get("payload_error"):
        diff("decoder error", None, d["error"] or d["payload_error"])

compared, bad, types, urgent, records, sacks = 0, {}, {1: 0, 2: 0, 3: 0}, 0, 0, 0
for side in ("beta", "alpha"):
    dec, ts = decoded(f"{side}.dec"), tshark_rows(f"{side}.fields")
    only_dec, only_ts = sorted(dec.keys() - ts.keys()), sorted(ts.keys() - dec.keys())
    check(not only_dec and not only_ts and dec,
          f"{side}'s capture: the decoder and tshark see the same {len(dec)} gridwire frames"
          + (f" (decoder only: {only_dec[:5]}, tshark only: {only_ts[:5]})"
             if only_dec or only_ts else ""))
    for n in sorted(dec.keys() & ts.keys()):
        d = dec[n]
        compare(d, ts[n], bad)
        compared += 1
        types[d["type"]] = types.get(d["type"], 0) + 1
        urgent += d["type"] == 1 and d["urgent"]
        records += len(d.get("records") or [])
        sacks += bool((d.get("ack") or {}).get("held"))
print(f"compared {compared} frames: {types[1]} DATA ({urgent} urgent, {records} records), "
      f"{types[2]} ACK ({sacks} with SACK bits), {types[3]} HELLO")
check(compared > 1000, f"more than 1000 frames compared ({compared})")
check(all(types.values()) and urgent > 0 and sacks > 0,
      "DATA (bulk and urgent), ACK (with SACK bits) and HELLO frames seen")
groups = {
    "header (type, version, nodes, lane, class, epoch, nrec, seq, base, len, CRC)":
        [f for f, _, _ in HEADER],
    "DATA records (len, kind, dst_ep, src_chan, msg_id; nrec)":
        [f for f, _ in RECORDS] + ["nrec = records in the payload"],
    "ACK (acked epoch, cum, SACK)":
        ["gridwire.ack.epoch", "gridwire.ack.cum", "gridwire.ack.nbits", "gridwire.ack.held"],
    "HELLO (name, caps, interval)":
        ["gridwire.hello.name", "gridwire.hello.caps", "gridwire.hello.caps.auth",
         "gridwire.hello.caps.batching", "gridwire.hello.interval_ms"],
    "CRC verdicts, every CRC good, no decoder error": ["gridwire.crc_ok", "decoder error"],
}
for what, fs in groups.items():
    wrong = {f: bad[f] for f in fs if f in bad}
    check(not wrong, f"every frame agrees: {what}" + "".join(
        f"; {f}: {len(v)} frames disagree, e.g. frame {v[0][0]}: decoder {v[0][1]!r}, "
        f"tshark {v[0][2]!r}" for f, v in wrong.items()))
left = set(bad) - {f for fs in groups.values() for f in fs}
check(not left, "no other field disagrees" + (f": {sorted(left)}" if left else ""))

# What the messages carry (beta's capture: every DATA frame alpha sent, and
# the copies sent again of those XDP dropped before the capture).
ids, eps, chans, classes_ok, hellos_ok, hellos = {}, set(), set(), True, True, 0
for d in decoded("beta.dec").values():
    if d["type"] == 1 and d["crc_ok"]:
        for r in d.get("records") or []:
            if r["kind"] != 1:
                continue
            eps.add(r["dst_ep"])
            chans.add(r["src_chan"])
            urgent = bool(r["msg_id"] >> 31)
            classes_ok &= urgent == bool(d["urgent"])
            ids.setdefault((d["src_node"], r["src_chan"], urgent), set()).add(r["msg_id"] & 0x7FFFFFFF)
for d in decoded("alpha.dec").values():
    if d["type"] == 3:
        h = d.get("hello") or {}
        hellos += 1
        hellos_ok &= h.get("nkeys") == 0 and bool(re.fullmatch(r"[A-Za-z0-9_-]{1,31}", h.get("name", "")))
check(eps == {endpoint_id("sink")},
      f"every MSG names \"sink\" by its FNV-1a id {endpoint_id('sink'):#x} (seen: {sorted(map(hex, eps))})")
check(chans and all(1 <= c <= 65535 for c in chans), f"every MSG's channel in 1 .. 65535 ({sorted(chans)})")
check(classes_ok, "bit 31 of every msg_id is its lane's class (urgent lanes: set)")
gaps = {k: sorted(set(range(max(v) + 1)) - v)[:3] for k, v in ids.items() if len(v) != max(v) + 1}
total = sum(len(v) for v in ids.values())
check(ids and not gaps and total == run["sent"],
      f"each channel's numbers per class run from 0 without a gap, one per message sent: "
      f"{total} numbers over {len(ids)} channel-classes, {run['sent']} sent"
      + (f"; gaps {gaps}" if gaps else ""))
check(hellos > 0 and hellos_ok, f"{hellos} HELLOs carry no key ids and names of A-Z a-z 0-9 _ -")

def single(name):
    recs = [json.loads(l) for l in open(f"{work}/{name}.dec")]
    rows = list(tshark_rows(f"{name}.fields").values())
    return (recs[0] if len(recs) == 1 else None), (rows[0] if len(rows) == 1 else None)
gd, gt = single("good")
bd, bt = single("bad")
check(gd is not None and gd["crc_ok"] is True and gd["error"] is None
      and gt is not None and one(gt, "gridwire.crc_ok", boolean) is True,
      "the copied DATA frame as it is: good CRC for the decoder and tshark")
check(bd is not None and bd["crc_ok"] is False and bd["error"] == "GW_EWIRE_CRC"
      and bt is not None and one(bt, "gridwire.crc_ok", boolean) is False,
      "one payload byte flipped: bad CRC for the decoder (GW_EWIRE_CRC) and tshark")
sys.exit(0 if all(results) else 1)
PY
exit "$fail"
