#!/usr/bin/env python3
"""Fire bad frames at a gateway from outside: an AF_PACKET socket on the
given interfaces (run inside the sending namespace). A replay attack in two
steps: --capture IFACE[,IFACE] N FILE saves N gridwire frames arriving there (in
the receiving namespace), and which of the interfaces each came in on;
--send FILE IFACE[,IFACE] [STEER] sends each again from the other side
into the link it came in on (a receiver keeps a replay window per link),
STEER times from as many UDP source ports (the outer headers are not
authenticated: a replay can be steered to another RX queue). Kinds, in turn:
random bytes, every truncation of a valid frame, valid UDP to the gridwire
port with junk after it, valid-CRC frames from a node nobody configured,
and frames whose CRC is wrong. Prints how many frames it sent."""
import os
import random
import socket
import struct
import sys
import time

PORT = 47000


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def ipv4_udp(payload, src_ip=0xC6120009, dst_ip=0xC6120002, sport=PORT, dport=PORT):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    total = 20 + len(udp) + len(payload)
    hdr = struct.pack("!BBHHHBBHII", 0x45, 0, total, 0, 0x4000, 64, 17, 0, src_ip, dst_ip)
    csum = sum(struct.unpack("!10H", hdr))
    csum = (csum & 0xFFFF) + (csum >> 16)
    csum = ~((csum & 0xFFFF) + (csum >> 16)) & 0xFFFF
    hdr = hdr[:10] + struct.pack("!H", csum) + hdr[12:]
    eth = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x09" + b"\x08\x00"
    return eth + hdr + udp + payload


def gridwire(src_node, dst_node, ftype=1, seq=0, payload=b"", good_crc=True):
    """Header as doc/protocol.md gives it: little-endian, CRC over header+payload."""
    hdr = struct.pack("<HBBHHHHIIIII", 0x5747, 1, ftype, src_node, dst_node, 0, 1,
                      0x1234, seq, 0, len(payload), 0)
    crc = crc32c(hdr + payload)
    if not good_crc:
        crc ^= 0x1
    return hdr[:28] + struct.pack("<I", crc) + payload


def record(ep, data):
    return struct.pack("<HBBIHHI", len(data), 1, 0, ep, 1, 0, 0) + data


def frames(rng, n):
    valid = ipv4_udp(gridwire(9, 2, seq=0, payload=record(0xdeadbeef, b"x" * 100)))
    for i in range(n):
        kind = i % 5
        if kind == 0:
            yield bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 1500)))
        elif kind == 1:
            yield valid[: rng.randint(1, len(valid) - 1)]
        elif kind == 2:
            yield ipv4_udp(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300))))
        elif kind == 3:
            yield ipv4_udp(gridwire(9, 2, seq=i, payload=record(0xdeadbeef, b"y" * rng.randint(0, 200))))
        else:
            yield ipv4_udp(gridwire(1, 2, seq=i, payload=record(0x1, b"z" * 50), good_crc=False))


def capture(ifaces, n, path):
    """Capture n gridwire DATA frames arriving on any of ifaces into path."""
    import ctypes
    import select
    # Named as a capture, which gw_gateways_up lets watch a namespace.
    ctypes.CDLL(None).prctl(15, b"gw-capture", 0, 0, 0)  # PR_SET_NAME
    socks = []
    for name in ifaces:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        # Room for seconds of frames: beside busy gateways on two cores this
        # process runs now and then, and a small buffer would drop nearly all.
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE (root)
        s.bind((name, 0))
        socks.append(s)
    # Named and listening: what test_auth waits for before it starts the run.
    print(f"capturing on {','.join(ifaces)}", file=sys.stderr, flush=True)
    got = []
    deadline = time.time() + 30  # the run may still be starting its senders
    while len(got) < n:
        ready, _, _ = select.select(socks, [], [], max(0.0, deadline - time.time()))
        if not ready:
            raise TimeoutError(f"only {len(got)} frames in 30 s")
        for s in ready:
            link = socks.index(s)
            f, addr = s.recvfrom(65536)
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            # UDP to the gridwire port, gridwire type 1 (DATA): not the HELLOs
            # that come first when the capture starts before the run.
            if (len(f) > 46 and f[23] == 17 and struct.unpack("!H", f[36:38])[0] == PORT
                    and f[45] == 1):
                got.append((link, f))
    with open(path, "wb") as out:
        for link, f in got[:n]:
            out.write(struct.pack("<IB", len(f), link) + f)
    return min(n, len(got))


def send_file(path, ifaces, steer=1):
    """Send again the frames capture() saved, each into the link it came in
    on (ifaces, in the capture's order): the receiver has seen them all."""
    socks = []
    for name in ifaces:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((name, 0))
        socks.append(s)
    data, n = open(path, "rb").read(), 0
    while data:
        if n % 50 == 49:
            time.sleep(0.005)  # paced, as the forgeries: a burst would overflow the
            # receiving socket's ring on a loaded machine, and none would be seen
        length, link = struct.unpack("<IB", data[:5])
        frame = bytearray(data[5:5 + length])
        s = socks[link % len(socks)]
        (sport,) = struct.unpack(">H", frame[34:36])
        for k in range(steer):
            frame[34:36] = struct.pack(">H", (sport + 8 * k) & 0xFFFF)
            frame[40:42] = b"\0\0"  # no UDP checksum, as gridwire sends
            s.send(bytes(frame))
            n += 1
        data = data[5 + length:]
    return n


def main():
    if sys.argv[1] == "--capture":
        print(capture(sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]))
        return
    if sys.argv[1] == "--send":
        print(send_file(sys.argv[2], sys.argv[3].split(","),
                        int(sys.argv[4]) if len(sys.argv) > 4 else 1))
        return
    n = int(sys.argv[1])
    ifaces = sys.argv[2:]
    rng = random.Random(5)
    socks = []
    for name in ifaces:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((name, 0))
        socks.append(s)
    sent = 0
    for i, f in enumerate(frames(rng, n)):
        if len(f) < 14:
            f = f + b"\x00" * (14 - len(f))  # the kernel wants a link header
        socks[i % len(socks)].send(f)
        sent += 1
        if i % 50 == 0:
            time.sleep(0.005)
    print(sent)


if __name__ == "__main__":
    main()
