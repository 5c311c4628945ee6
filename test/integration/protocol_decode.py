#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An independent decoder of gridwire frames, written from doc/protocol.md
alone (issue 22: the document must be enough to implement the protocol).

  protocol_decode.py [--port PORT] [--summary] FILE
  protocol_decode.py --selftest

FILE is a capture, classic libpcap or pcapng (as tshark writes them), of
Ethernet frames (Linux cooked captures, SLL and SLL2, are read too). Every
IPv4/UDP frame to the gridwire port (the document does not name a number:
PORT, 47000 by default, as in config/gridwire.ini) is decoded as the
document's "Receiving a frame" section says, and printed as one JSON object
on stdout, keyed "frame" by its number in the capture (1-based, counting
every packet as tshark does). Frames that are not IPv4/UDP to the port are
not printed. With --summary one JSON line of counts follows on stderr.

Per frame:
  frame, caplen, gridwire    the document's check 2 passed (Ethernet,
                             IPv4, UDP to the port, magic 'GW')
  error                      the first failed check (GW_EWIRE_SHORT,
                             GW_EWIRE_NOTGW, GW_EWIRE_VERSION,
                             GW_EWIRE_CRC) or null
  src_ip dst_ip sport dport  the outer headers
  magic version type type_name src_node dst_node lane_raw lane urgent
  nrec epoch seq base len crc
  crc_calc crc_ok            the CRC32C computed and its verdict (null
                             when the payload is encrypted: the CRC covers
                             the plaintext)
  auth                       the [auth] trailer, or null
  records                    DATA: [{len, kind, kind_name, flags, dst_ep,
                             src_chan, reserved, msg_id[, reject][, subs:
                             {version, total, first, topics: [{id, name}]}]}]
  ack                        ACK: {acked_epoch, cum, nbits, grant (units of 64 bytes, 0: none),
                             sack (hex), held: [seq...]}
  hello                      HELLO: {caps, caps_auth, caps_batching,
                             interval_ms, name_len, nkeys, name, keys}
  payload_error              what the type's payload decoder rejects, or
                             null
"""
import json
import struct
import sys

# --- CRC32C (Castagnoli), table-driven ---------------------------------
# Reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
_CRC_POLY = 0x82F63B78
_CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ _CRC_POLY if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)
_CRC_TABLE = tuple(_CRC_TABLE)


def crc32c(data, crc=0):
    """CRC32C of data; crc continues an earlier call's result."""
    table = _CRC_TABLE
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def endpoint_id(name):
    """The id a message names its endpoint by: 32-bit FNV-1a of the name's
    bytes (offset basis 0x811c9dc5, prime 0x01000193), 0 sent as 1."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h or 1


def selftest():
    """The document's check value: "123456789" gives 0xE3069283."""
    got = crc32c(b"123456789")
    # Split in two: continuing a CRC must give the same value.
    split = crc32c(b"56789", crc32c(b"1234"))
    # And the document's endpoint ids.
    ids = endpoint_id("sink") == 0x11D259D2 and endpoint_id("~call.1") == 0xBB4F4720
    # A DATA frame with no records is legal: 74 bytes, nrec 0, len 0.
    hdr = struct.pack("<HBBHHHHIIIII", MAGIC, VERSION, 1, 1, 2, 0, 0, 7, 0, 0, 0, 0)
    hdr = hdr[:28] + struct.pack("<I", crc32c(hdr))
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, IP_LEN + UDP_LEN + HDR_LEN, 0, 0x4000, 64, 17, 0,
                     0xC6120001, 0xC6120002)
    udp = struct.pack(">HHHH", 47000, 47000, UDP_LEN + HDR_LEN, 0)
    empty = decode_frame(bytes(12) + b"\x08\x00" + ip + udp + hdr, 47000)
    empty_ok = empty["error"] is None and empty["records"] == [] and not empty["payload_error"]
    return got == 0xE3069283 and split == got and ids and empty_ok, got


# --- captures ------------------------------------------------------------
LINK_ETHERNET, LINK_SLL, LINK_SLL2 = 1, 113, 276


def read_pcap(data):
    """Yield (linktype, frame bytes, original length) of a classic pcap."""
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError("not a pcap file")
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0x0FFFFFFF
    off = 24
    while off + 16 <= len(data):
        incl, orig = struct.unpack(e + "II", data[off + 8:off + 16])
        yield linktype, data[off + 16:off + 16 + incl], orig
        off += 16 + incl


def read_pcapng(data):
    """Yield (linktype, frame bytes, original length) of a pcapng file:
    enhanced, simple and obsolete packet blocks, in file order."""
    off, e, links, snaps = 0, "<", [], []
    while off + 12 <= len(data):
        btype = struct.unpack(e + "I", data[off:off + 4])[0]
        if btype == 0x0A0D0D0A:  # section header: byte order, interfaces anew
            bom = data[off + 8:off + 12]
            e = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            links, snaps = [], []
        blen = struct.unpack(e + "I", data[off + 4:off + 8])[0]
        if blen < 12:
            raise ValueError(f"pcapng block of length {blen} at {off}")
        body = data[off + 8:off + blen - 4]
        if btype == 0x00000001:  # interface description
            lt, _, snap = struct.unpack(e + "HHI", body[:8])
            links.append(lt)
            snaps.append(snap or 0xFFFFFFFF)
        elif btype == 0x00000006:  # enhanced packet
            iface, _, _, cap, orig = struct.unpack(e + "IIIII", body[:20])
            yield links[iface], body[20:20 + cap], orig
        elif btype == 0x00000003:  # simple packet (interface 0)
            orig = struct.unpack(e + "I", body[:4])[0]
            cap = min(orig, snaps[0], len(body) - 4)
            yield links[0], body[4:4 + cap], orig
        elif btype == 0x00000002:  # obsolete packet block
            iface, _, _, _, cap, orig = struct.unpack(e + "HHIIII", body[:20])
            yield links[iface], body[20:20 + cap], orig
        off += blen


def read_capture(path):
    data = open(path, "rb").read()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        return read_pcapng(data)
    return read_pcap(data)


# --- gridwire --------------------------------------------------------------
ETH_LEN, IP_LEN, UDP_LEN, HDR_LEN = 14, 20, 8, 32
HDR_OFF = ETH_LEN + IP_LEN + UDP_LEN  # 42
FRAME_MIN = HDR_OFF + HDR_LEN  # 74
IP_MTU = 9000
MAGIC = 0x5747
VERSION = 1
TYPES = {1: "DATA", 2: "ACK", 3: "HELLO"}
KINDS = {1: "MSG", 2: "REJECT", 3: "PUB", 4: "SUBS"}
LANE_URGENT = 0x8000
SACK_BITS = 256
NAME_MAX = 32  # name_len 1 .. 31 (GW_NAME_MAX - 1)
TRAILER_LEN = 32


def to_ethernet(linktype, pkt):
    """The frame as Ethernet II bytes (a cooked capture gets a made-up
    14-byte header: only its ethertype is read), or None."""
    if linktype == LINK_ETHERNET:
        return pkt
    if linktype == LINK_SLL and len(pkt) >= 16:
        return bytes(12) + pkt[14:16] + pkt[16:]
    if linktype == LINK_SLL2 and len(pkt) >= 20:
        return bytes(12) + pkt[0:2] + pkt[20:]
    return None


def outer(frame, port):
    """(src_ip, dst_ip, sport, dport) of an IPv4/UDP frame to port, else
    None: the frames this decoder reports at all."""
    if len(frame) < HDR_OFF:
        return None
    if struct.unpack(">H", frame[12:14])[0] != 0x0800:
        return None
    ip = frame[ETH_LEN:ETH_LEN + IP_LEN]
    if ip[0] >> 4 != 4 or ip[9] != 17:
        return None
    ihl = (ip[0] & 0x0F) * 4
    udp = ETH_LEN + ihl
    if len(frame) < udp + UDP_LEN:
        return None
    sport, dport = struct.unpack(">HH", frame[udp:udp + 4])
    if dport != port:
        return None
    dot = lambda b: ".".join(str(x) for x in b)
    return dot(ip[12:16]), dot(ip[16:20]), sport, dport


def decode_trailer(t):
    slot, flags, roll, key_id, counter = struct.unpack("<BBHIQ", t[:16])
    return {"slot": slot, "flags": flags, "encrypted": bool(flags & 1), "aead": flags >> 4,
            "roll": roll, "key_id": key_id, "counter": counter, "tag": t[16:32].hex()}


def decode_subs(d):
    """A SUBS record's data: (version, total, first, topics), or an error."""
    if len(d) < 8 or (len(d) - 8) % 36 or (len(d) - 8) // 36 > 28:
        return None, f"data of {len(d)} bytes"
    version, total, first = struct.unpack("<IHH", d[:8])
    n = (len(d) - 8) // 36
    if first + n > total:
        return None, f"entries {first} + {n} past total {total}"
    topics = []
    for e in range(8, len(d), 36):
        tid, name = struct.unpack("<I", d[e:e + 4])[0], d[e + 4:e + 36]
        if tid == 0 or 0 not in name:
            return None, "an entry with id 0 or a name without a NUL"
        topics.append({"id": tid, "name": name[:name.index(0)].decode("latin-1")})
    return {"version": version, "total": total, "first": first, "topics": topics}, None


def decode_records(p):
    """DATA payload: records back to back. (records, error or None)."""
    recs, off = [], 0
    while off < len(p):
        if off + 16 > len(p):
            return recs, f"record header at {off} runs past the payload"
        ln, kind, flags, dst_ep, src_chan, res, msg_id = struct.unpack("<HBBIHHI", p[off:off + 16])
        if off + 16 + ln > len(p):
            return recs, f"record at {off}: {ln} data bytes run past the payload"
        if kind not in KINDS:
            return recs, f"record at {off}: kind {kind}"
        r = {"len": ln, "kind": kind, "kind_name": KINDS[kind], "flags": flags, "dst_ep": dst_ep,
             "src_chan": src_chan, "reserved": res, "msg_id": msg_id}
        if kind == 2 and ln >= 12:
            err, rmsg, node = struct.unpack("<iIH", p[off + 16:off + 26])
            r["reject"] = {"err": err, "msg_id": rmsg, "node": node}
        if kind == 4:
            r["subs"], err = decode_subs(p[off + 16:off + 16 + ln])
            if err:
                return recs, f"record at {off}: SUBS {err}"
        recs.append(r)
        off += 16 + ln
    return recs, None


def decode_ack(p):
    if len(p) < 12:
        return None, f"ACK payload of {len(p)} bytes (< 12)"
    acked_epoch, cum, nbits, grant = struct.unpack("<IIHH", p[:12])
    a = {"acked_epoch": acked_epoch, "cum": cum, "nbits": nbits, "grant": grant}
    if nbits % 8 or nbits > SACK_BITS:
        return a, f"nbits {nbits}"
    if len(p) != 12 + nbits // 8:
        return a, f"ACK payload of {len(p)} bytes, nbits {nbits}"
    sack = p[12:12 + nbits // 8]
    a["sack"] = sack.hex()
    # Bit i (bit i % 8 of byte i / 8, least significant first): seq
    # cum + 1 + i is held.
    a["held"] = [(cum + 1 + i) & 0xFFFFFFFF for i in range(nbits) if sack[i // 8] >> (i % 8) & 1]
    return a, None


def decode_hello(p):
    if len(p) < 8:
        return None, f"HELLO payload of {len(p)} bytes (< 8)"
    caps, interval, name_len, nkeys = struct.unpack("<IHBB", p[:8])
    h = {"caps": caps, "caps_auth": bool(caps & 1), "caps_batching": bool(caps & 2),
         "interval_ms": interval, "name_len": name_len, "nkeys": nkeys}
    if name_len == 0 or name_len > NAME_MAX - 1:
        return h, f"name_len {name_len}"
    if nkeys > 2:
        return h, f"nkeys {nkeys}"
    if len(p) != 8 + name_len + 4 * nkeys:
        return h, f"HELLO payload of {len(p)} bytes, name_len {name_len}, nkeys {nkeys}"
    name = p[8:8 + name_len]
    if 0 in name:
        return h, "a NUL in the name"
    h["name"] = name.decode("utf-8", "replace")
    h["keys"] = list(struct.unpack(f"<{nkeys}I", p[8 + name_len:8 + name_len + 4 * nkeys]))
    return h, None


def decode_frame(frame, port):
    """One Ethernet frame to the port: the document's checks in order, then
    the header, the trailer and the payload. None if not UDP to port."""
    o = outer(frame, port)
    if o is None:
        return None
    d = {"caplen": len(frame), "src_ip": o[0], "dst_ip": o[1], "sport": o[2], "dport": o[3],
         "gridwire": False, "error": None}
    # 1. at least 74 bytes
    if len(frame) < FRAME_MIN:
        d["error"] = "GW_EWIRE_SHORT"
        return d
    # 2. ethertype, IP version/IHL, protocol, not a fragment, port, magic
    ip = frame[ETH_LEN:ETH_LEN + IP_LEN]
    frag = struct.unpack(">H", ip[6:8])[0]
    magic = struct.unpack("<H", frame[HDR_OFF:HDR_OFF + 2])[0]
    d["magic"] = magic
    if ip[0] != 0x45 or frag & 0x3FFF or magic != MAGIC:
        d["error"] = "GW_EWIRE_NOTGW"
        return d
    d["gridwire"] = True
    (_, version, ftype, src_node, dst_node, lane, nrec, epoch, seq, base, plen,
     crc) = struct.unpack("<HBBHHHHIIIII", frame[HDR_OFF:HDR_OFF + HDR_LEN])
    d.update(version=version, type=ftype, type_name=TYPES.get(ftype), src_node=src_node,
             dst_node=dst_node, lane_raw=lane, lane=lane & 0x7FFF, urgent=bool(lane & LANE_URGENT),
             nrec=nrec, epoch=epoch, seq=seq, base=base, len=plen, crc=crc, crc_calc=None,
             crc_ok=None, auth=None, payload_error=None)
    # 3. lengths. With [auth] the IP and UDP lengths also hold a 32-byte
    # trailer that the header's len does not count (the document's check 3
    # says "len = UDP length - 40 exactly"; its [auth] section adds the
    # trailer): both are accepted, the trailer when exactly 32 bytes remain.
    ip_total = struct.unpack(">H", ip[2:4])[0]
    udp_len = struct.unpack(">H", frame[ETH_LEN + IP_LEN + 4:ETH_LEN + IP_LEN + 6])[0]
    extra = udp_len - UDP_LEN - HDR_LEN - plen
    if not (60 <= ip_total <= len(frame) - ETH_LEN and ip_total <= IP_MTU
            and udp_len == ip_total - IP_LEN and extra in (0, TRAILER_LEN)):
        d["error"] = "GW_EWIRE_SHORT"
        return d
    payload = frame[FRAME_MIN:FRAME_MIN + plen]
    if extra == TRAILER_LEN:
        d["auth"] = decode_trailer(frame[FRAME_MIN + plen:FRAME_MIN + plen + TRAILER_LEN])
    # 4. version and type
    if version != VERSION or ftype not in TYPES:
        d["error"] = "GW_EWIRE_VERSION"
        return d
    # 5. CRC32C of the header with crc zeroed, then the payload (the
    # plaintext: an encrypted payload cannot be checked here)
    if not (d["auth"] and d["auth"]["encrypted"]):
        hdr = frame[HDR_OFF:HDR_OFF + 28] + bytes(4)
        d["crc_calc"] = crc32c(payload, crc32c(hdr))
        d["crc_ok"] = d["crc_calc"] == crc
        if not d["crc_ok"]:
            d["error"] = "GW_EWIRE_CRC"
            return d
    else:
        return d
    if ftype == 1:
        d["records"], d["payload_error"] = decode_records(payload)
    elif ftype == 2:
        d["ack"], d["payload_error"] = decode_ack(payload)
    else:
        d["hello"], d["payload_error"] = decode_hello(payload)
    return d


def main(argv):
    port, summary, path = 47000, False, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--port":
            port = int(args.pop(0))
        elif a == "--summary":
            summary = True
        elif a == "--selftest":
            ok, got = selftest()
            print(f"crc32c('123456789') = {got:#010x}: {'ok' if ok else 'WRONG'}")
            return 0 if ok else 1
        elif path is None and not a.startswith("-"):
            path = a
        else:
            print(__doc__, file=sys.stderr)
            return 2
    if path is None:
        print(__doc__, file=sys.stderr)
        return 2
    if not selftest()[0]:
        print("protocol_decode: CRC32C self-test failed", file=sys.stderr)
        return 1
    counts = {"frames": 0, "udp_to_port": 0, "gridwire": 0, "DATA": 0, "ACK": 0, "HELLO": 0,
              "records": 0, "crc_bad": 0, "errors": 0, "payload_errors": 0}
    out = sys.stdout
    for n, (linktype, pkt, _orig) in enumerate(read_capture(path), 1):
        counts["frames"] += 1
        frame = to_ethernet(linktype, pkt)
        d = decode_frame(frame, port) if frame is not None else None
        if d is None:
            continue
        counts["udp_to_port"] += 1
        counts["gridwire"] += d["gridwire"]
        if d.get("type_name") and d["error"] is None:
            counts[d["type_name"]] += 1
        counts["records"] += len(d.get("records") or ())
        counts["crc_bad"] += d.get("crc_ok") is False
        counts["errors"] += d["error"] is not None
        counts["payload_errors"] += d.get("payload_error") is not None
        out.write(json.dumps({"frame": n, **d}, separators=(",", ":")) + "\n")
    if summary:
        print(json.dumps(counts), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
