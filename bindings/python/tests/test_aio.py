# SPDX-License-Identifier: BSD-3-Clause
# gridwire.aio: 1,000 tasks sending, receiving and calling on one loop,
# the service helper, a full channel waited for without blocking the loop.
import asyncio
import struct
import sys
import threading
import time

import pytest

import gridwire
import gridwire.aio
from conftest import NODE_A, NODE_B, SOCK_A, SOCK_B


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


def test_thousand_tasks_send_recv_call(name):
    # serve() takes every message of its client: the data goes to another one.
    async def whole():
        a = await gridwire.aio.connect(SOCK_A)
        rx = await gridwire.aio.connect(SOCK_B)
        b = await gridwire.aio.connect(SOCK_B)
        svc = name + "-svc"

        async def handler(m):
            if m.data == b"boom":
                raise RuntimeError("boom went the handler")
            await asyncio.sleep(0)
            return bytes(m.data[::-1])

        server = asyncio.create_task(b.serve(svc, handler))
        await rx.register(name)
        for _ in range(100):  # the service is offered once a call finds it
            try:
                await a.call(NODE_B, svc, b"up?", timeout=1)
                break
            except gridwire.NoService:
                await asyncio.sleep(0.05)

        async def sender(t):
            for i in range(20):
                await a.send(NODE_B, name, struct.pack("<II", t, i))

        async def receiver():
            nxt = [0] * 1000
            for _ in range(20 * 1000):
                m = await rx.recv(30)
                assert m is not None and m.kind is gridwire.Kind.DATA, m
                t, i = struct.unpack("<II", m.data)
                assert i == nxt[t], f"task {t}: {i} after {nxt[t] - 1}"
                nxt[t] += 1
            return nxt

        reading = asyncio.create_task(receiver())
        senders = [asyncio.create_task(sender(t)) for t in range(1000)]
        replies = await asyncio.gather(*(a.call(NODE_B, svc, b"%04d" % t)
                                         for t in range(1000)))
        assert replies == [(b"%04d" % t)[::-1] for t in range(1000)]
        with pytest.raises(gridwire.RemoteError) as e:
            await a.call(NODE_B, svc, b"boom")
        assert b"boom went the handler" in e.value.reason
        await asyncio.gather(*senders)
        assert await reading == [20] * 1000
        assert await rx.recv(0.1) is None
        server.cancel()
        for c in (a, b, rx):
            c.close()

    run(whole())


def test_timeouts_and_cancel(name):
    async def main():
        async with await gridwire.aio.connect(SOCK_A) as a, \
                await gridwire.aio.connect(SOCK_B) as b:
            assert await a.recv(0) is None
            assert await a.recv(0.05) is None
            await b.service(name)  # offered, never answered
            with pytest.raises(gridwire.Timeout):
                await a.call(NODE_B, name, b"x", timeout=0.2)
            t = asyncio.create_task(a.call(NODE_B, name, b"y", timeout=5))
            await asyncio.sleep(0.1)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            assert not a._calls  # cancelled with gw_call_cancel: nothing waits
            with pytest.raises(gridwire.HostUnreachable):
                await a.call(77, name, b"z")
        with pytest.raises(ValueError):
            await a.recv()

    run(main())


def test_full_channel_waits_without_blocking_the_loop(name):
    """b reads slowly in a thread: a's channel fills, and await send() waits
    for room while the loop keeps running other tasks."""
    n = 200_000
    got = []
    with gridwire.connect(SOCK_B) as b:
        b.register(name)

        stop = threading.Event()

        def reader():
            while not stop.is_set():
                batch = b.recv_batch(512, 0.1)
                got.extend(struct.unpack("<I", m.data[:4])[0] for m in batch)
                time.sleep(0.002)

        t = threading.Thread(target=reader, daemon=True)
        t.start()

        async def main():
            ticks = 0
            done = False

            async def ticker():
                nonlocal ticks
                while not done:
                    ticks += 1
                    await asyncio.sleep(0.001)

            tick = asyncio.create_task(ticker())
            async with await gridwire.aio.connect(SOCK_A) as a:
                data = bytearray(1000)
                for i in range(n):
                    struct.pack_into("<I", data, 0, i)
                    await a.send(NODE_B, name, data)
                await a.flush(30)
                # Every send settles: delivered, or told back (a REJECT each,
                # or a LOST count when a's own channel had no room for them).
                rejected, lost = set(), 0
                give_up = time.monotonic() + 60
                while True:
                    m = await a.recv(0.2)
                    if m is None and not a.client.unconfirmed:
                        # All settled: their REJECTs are in the channel, if
                        # not taken yet by the loop's reader.
                        m = a.client.recv(0)
                        if m is None:
                            break
                    if m is None:
                        assert time.monotonic() < give_up, "sends never settled"
                        continue
                    if m.kind is gridwire.Kind.REJECT:
                        rejected.add(m.msg_id)
                    elif m.kind is gridwire.Kind.LOST:
                        lost += int.from_bytes(m.data, sys.byteorder)
            done = True
            await tick
            return ticks, rejected, lost

        try:
            ticks, rejected, lost = run(main())
            deadline = time.monotonic() + 60  # the reader takes what was delivered
            while len(got) + len(rejected) + lost < n and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:  # however main() ends, the reader stops
            stop.set()
            t.join(5)
    # Each arrived in order, or came back to its sender (a reader starved for
    # dest_block_ms on a loaded machine is refused, and the sender told).
    assert got == sorted(got) and len(set(got)) == len(got)
    missing = set(range(n)) - set(got) - rejected
    assert len(missing) <= lost, f"{len(missing)} messages neither delivered nor told back"
    assert got and ticks > 0
