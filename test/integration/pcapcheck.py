#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check gridwire frames in a pcapng capture (dpdk-dumpcap's output).

  pcapcheck.py FILE UDP_PORT

Every frame to or from UDP_PORT must be whole (captured length = frame
length: the snap length kept jumbo frames), carry a valid gridwire header
(magic, version, type, a length that agrees with the IP datagram), and a
DATA frame's records must fill its payload exactly. The CRC32C of the
first 200 frames is checked too (Python is slow at it). Prints one JSON
line of counts; exits 1 if any frame is wrong.
"""
import json
import struct
import sys

CRC_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    CRC_TABLE.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def packets(path, counts):
    """(captured bytes, original length) of each Enhanced Packet Block. A
    last block cut short (the capture stopped while writing it) ends the
    file; it is counted, not checked."""
    data = open(path, "rb").read()
    off = 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or off + blen > len(data):
            counts["cut_tail"] = len(data) - off
            return
        if btype == 6:
            caplen, origlen = struct.unpack_from("<II", data, off + 20)
            yield data[off + 28:off + 28 + caplen], origlen
        off += blen


def check(frame, origlen, port, n_crc, counts):
    """None if frame is fine (or not gridwire), else what is wrong."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    sport, dport = struct.unpack_from(">HH", frame, 34)
    if dport != port and sport != port:
        return None
    counts["gridwire"] += 1
    if len(frame) != origlen:
        return f"cut at {len(frame)} of {origlen} bytes"
    ip_len = struct.unpack_from(">H", frame, 16)[0]
    magic, ver, ftype, nrec, plen, crc = struct.unpack_from("<HBB6xH12xII", frame, 42)
    if magic != 0x5747 or ver != 1 or ftype not in (1, 2, 3):
        return f"bad header: magic {magic:#x} version {ver} type {ftype}"
    if ip_len != 20 + 8 + 32 + plen or 14 + ip_len > len(frame):
        return f"length {plen} disagrees with the IP datagram ({ip_len})"
    payload = frame[74:74 + plen]
    if counts["crc_checked"] < n_crc:
        hdr = bytearray(frame[42:74])
        hdr[28:32] = b"\0\0\0\0"
        if crc32c(bytes(hdr) + payload) != crc:
            return "bad CRC32C"
        counts["crc_checked"] += 1
    kind = {1: "data", 2: "ack", 3: "hello"}[ftype]
    counts[kind] += 1
    if ftype == 1:
        off = recs = 0
        while off < plen:
            if off + 16 > plen:
                return "a record header runs past the payload"
            off += 16 + struct.unpack_from("<H", payload, off)[0]
            recs += 1
        if off != plen or recs != nrec:
            return f"records do not fill the payload ({recs} of {nrec}, {off} of {plen} bytes)"
        counts["records"] += recs
    return None


def main():
    path, port = sys.argv[1], int(sys.argv[2])
    counts = dict(frames=0, gridwire=0, data=0, ack=0, hello=0, records=0, crc_checked=0, bad=0,
                  cut_tail=0)
    for frame, origlen in packets(path, counts):
        counts["frames"] += 1
        why = check(frame, origlen, port, 200, counts)
        if why:
            counts["bad"] += 1
            if counts["bad"] <= 5:
                print(f"frame {counts['frames']}: {why}", file=sys.stderr)
    print(json.dumps(counts))
    sys.exit(1 if counts["bad"] or not counts["data"] else 0)


if __name__ == "__main__":
    main()
