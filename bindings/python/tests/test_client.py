# SPDX-License-Identifier: BSD-3-Clause
# gridwire.Client against two real gateways: every function, every
# documented error, zero-copy receiving, threads, memory.
import errno
import struct
import threading
import time

import pytest

import gridwire
from gridwire import Kind
from conftest import NODE_A, NODE_B, SOCK_A, SOCK_B

NOWHERE = 77  # a node no gateway knows


def next_of(c, kind, timeout=5.0):
    """The next message of that kind (others in between are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        m = c.recv(max(0.0, deadline - time.monotonic()))
        assert m is not None, f"no {kind.name} message within {timeout} s"
        if m.kind == kind:
            return m


def test_send_recv_every_buffer_kind(a, b, name):
    b.register(name)
    sent = [b"bytes", bytearray(b"bytearray"), memoryview(b"--memoryview")[2:], b""]
    for data in sent:
        a.send(NODE_B, name, data)
    a.send(NODE_B, gridwire.endpoint_id(name), b"by id")
    for data in sent + [b"by id"]:
        m = b.recv(5)
        assert m.kind is Kind.DATA and m.data == bytes(data)
        assert m.node == NODE_A and m.endpoint == gridwire.endpoint_id(name)
        assert not m.urgent and isinstance(m.data, bytes)
        assert "DATA" in repr(m)


def test_urgent_arrives_urgent(a, b, name):
    b.register(name)
    a.send(NODE_B, name, b"now", urgent=True)
    m = b.recv(5)
    assert m.urgent and m.flags & gridwire.URGENT and m.data == b"now"


def test_unknown_endpoint_comes_back_as_reject(a, name):
    a.send(NODE_B, name, b"nobody home")  # the first send: msg_id 0
    m = next_of(a, Kind.REJECT)
    assert (m.error, m.msg_id, m.node) == (-errno.ENOENT, 0, NODE_B)
    assert m.endpoint == gridwire.endpoint_id(name)


def test_send_errors(a, name):
    with pytest.raises(gridwire.MessageTooLarge) as e:
        a.send(NODE_B, name, bytes(a.msg_max + 1))
    assert e.value.errno == errno.EMSGSIZE and "msg_max" not in str(type(e.value))
    with pytest.raises(gridwire.HostUnreachable):
        a.send(NOWHERE, name, b"x")
    with pytest.raises(gridwire.InvalidArgument):
        a.send(NODE_B, "has space", b"x")
    assert isinstance(gridwire.InvalidArgument(22, "x"), ValueError)


def test_full_channel_would_block(a, b, name):
    """b never reads: a's channel fills faster than the gateway takes it,
    and a send with timeout 0 says so; then b's ring fills, the gateway
    holds what comes, and refuses it to its sender (-ENOBUFS)."""
    b.register(name)
    data = bytes(1000)
    with pytest.raises(gridwire.WouldBlock) as e:
        for _ in range(5_000_000):
            a.send(NODE_B, name, data, timeout=0)
    assert e.value.errno == errno.EAGAIN and isinstance(e.value, BlockingIOError)
    # Past what b's channel holds (4 MB here), waiting for room: the rest is
    # held dest_block_ms, then refused, and a is told.
    for _ in range(10_000):
        a.send(NODE_B, name, data, timeout=30)
    m = next_of(a, Kind.REJECT, timeout=30)
    assert m.error == -errno.ENOBUFS and m.node == NODE_B


def test_recv_timeouts(a):
    assert a.recv(0) is None
    assert a.recv(0.05) is None
    assert a.recv_batch(8, 0) == []


def test_names(a, b, name):
    a.register(name)
    with gridwire.connect(SOCK_A) as a2:
        with pytest.raises(gridwire.NameTaken):
            a2.register(name)
        with pytest.raises(gridwire.NoService):
            a2.unregister(name)
    b.register(name)  # names are per node
    with pytest.raises(gridwire.ReservedName):
        a.register("~mine")
    for bad in ("has space", "x" * 40, ""):
        with pytest.raises(gridwire.InvalidArgument):
            a.register(bad)
    a.unregister(name)
    a.register(name)


def test_zero_copy_view(a, b, name):
    b.register(name)
    a.send(NODE_B, name, b"first")
    a.send(NODE_B, name, b"second")
    a.send(NODE_B, name, b"third")
    m = b.recv(5, copy=False)
    view = m.data
    assert isinstance(view, memoryview) and view.readonly and bytes(view) == b"first"
    held = view[1:]  # an export of the view: the next receive must refuse
    with pytest.raises(BufferError):
        b.recv(5)
    held.release()
    m2 = b.recv(5, copy=False)
    assert bytes(m2.data) == b"second"
    with pytest.raises(ValueError):  # the first one's memory is the channel's again
        bytes(view)
    assert b.recv(5).data == b"third"
    with pytest.raises(ValueError):
        bytes(m2.data)


def test_zero_copy_of_messages_without_data(a, b, name):
    """REJECTs and a call's own failure carry no data: as views, too."""
    a.send(NODE_B, name, b"nobody home")
    m = a.recv(5, copy=False)
    assert m.kind is Kind.REJECT and m.error == -errno.ENOENT and bytes(m.data) == b""
    b.service(name)  # offered, never answered
    a.call_start(NODE_B, name, b"x", timeout=0.2)
    m = a.recv(5, copy=False)
    assert m.kind is Kind.REPLY and m.error == -errno.ETIMEDOUT and len(m.data) == 0
    with pytest.raises(gridwire.Timeout):
        m.result()
    a.close()  # no view alive: it closes


def test_close_refuses_while_a_view_lives(a, b, name):
    b.register(name)
    a.send(NODE_B, name, b"held")
    m = b.recv(5, copy=False)
    held = m.data[1:]
    with pytest.raises(BufferError):
        b.close()
    assert not b.closed and bytes(held) == b"eld"
    held.release()
    b.close()
    assert b.closed


def test_recv_into(a, b, name):
    b.register(name)
    with pytest.raises(ValueError):
        b.recv_into(bytearray(16))
    with pytest.raises(TypeError):
        b.recv_into(bytes(b.msg_max))  # not writable
    buf = bytearray(b.msg_max)
    a.send(NODE_B, name, b"into the buffer")
    m = b.recv_into(buf, 5)
    assert bytes(m.data) == b"into the buffer" and buf.startswith(b"into the buffer")
    assert b.recv_into(buf, 0) is None


def test_recv_batch_keeps_order(a, b, name):
    b.register(name)
    for i in range(1000):
        a.send(NODE_B, name, b"%d" % i)
    got = []
    while len(got) < 1000:
        batch = b.recv_batch(64, 5)
        assert batch and len(batch) <= 64
        got += [int(m.data) for m in batch]
    assert got == list(range(1000))
    with pytest.raises(ValueError):
        b.recv_batch(0)


def test_topics(a, b, name):
    b.subscribe(name)
    # A subscription reaches the publisher's gateway a moment later.
    deadline = time.monotonic() + 10
    m = None
    while m is None and time.monotonic() < deadline:
        a.publish(name, b"reading")
        m = b.recv(0.05)
    assert m is not None and m.kind is Kind.PUBLISH and m.data == b"reading"
    assert m.endpoint == gridwire.endpoint_id(name) and m.node == NODE_A
    b.subscribe(name, gridwire.sub_latest_key(8))  # a new policy
    with pytest.raises(ValueError):
        gridwire.sub_latest_key(65)
    with pytest.raises(gridwire.InvalidArgument):
        b.subscribe(name, 0x7777)
    b.unsubscribe(name)
    with pytest.raises(gridwire.NoService):
        b.unsubscribe(name)
    a.publish("nobody-listens", b"fine")


def test_nodes_and_state(a):
    nodes = {n.id: n for n in a.nodes()}
    assert nodes[NODE_A].self and nodes[NODE_A].up and not nodes[NODE_B].self
    assert nodes[NODE_B].up and nodes[NODE_B].caps & gridwire.NODE_URGENT
    assert isinstance(nodes[NODE_B].name, str)
    assert a.node_up(NODE_B) and not a.node_up(NOWHERE)
    assert a.local_node == NODE_A and a.msg_max > 1000 and a.unconfirmed >= 0
    a.flush(5)
    a.flush()


def test_event_loop_calls(a, name):
    import select
    fds = a.wait_fds(gridwire.WAIT_RECV)
    assert len(fds) == 2 and all(isinstance(fd, int) for fd in fds)
    assert a.wait_ms() is None  # no call in flight
    while a.recv(0) is not None:
        pass
    assert a.arm(gridwire.WAIT_RECV) is False  # armed: sleep on fds
    a.register(name)
    a.send(NODE_A, name, b"wake up")
    r, _, _ = select.select([fds[0], fds[1]], [], [], 5)
    assert fds[0] in r
    assert a.recv(0).data == b"wake up"
    with pytest.raises(ValueError):
        a.wait_fds(7)


def test_closed_client():
    c = gridwire.connect(SOCK_A)
    with c as same:
        assert same is c and not c.closed
    assert c.closed
    c.close()  # again: nothing
    for call in (lambda: c.send(NODE_B, "x", b""), lambda: c.recv(0), c.nodes,
                 lambda: c.register("x"), lambda: c.call(NODE_B, "x", b""),
                 lambda: c.local_node, c.flush):
        with pytest.raises(ValueError):
            call()


def test_bad_arguments_harm_nothing(a, b, name):
    b.register(name)
    bad = [
        (TypeError, lambda: a.send("2", name, b"x")),
        (ValueError, lambda: a.send(-1, name, b"x")),
        (ValueError, lambda: a.send(70000, name, b"x")),
        (TypeError, lambda: a.send(NODE_B, name, "a str")),
        (TypeError, lambda: a.send(NODE_B, name, 5)),
        (TypeError, lambda: a.send(NODE_B, 1.5, b"x")),
        (ValueError, lambda: a.send(NODE_B, 2**40, b"x")),
        (ValueError, lambda: a.send(NODE_B, -1, b"x")),
        (ValueError, lambda: a.send(NODE_B, 5, b"x", urgent=True)),
        (ValueError, lambda: a.send(NODE_B, name, b"x", timeout=-1)),
        (ValueError, lambda: a.send(NODE_B, name, b"x", timeout=float("nan"))),
        (TypeError, lambda: a.send(NODE_B, name, b"x", timeout="1")),
        (TypeError, lambda: a.send(NODE_B, name, b"x", 1, True)),  # urgent is keyword-only
        (ValueError, lambda: a.register("a\0b")),
        (TypeError, lambda: a.register(b"bytes")),
        (ValueError, lambda: a.call(NODE_B, name, b"x", timeout=0)),
        (ValueError, lambda: a.call_all([], name, b"x")),
        (TypeError, lambda: a.call_all(["1"], name, b"x")),
        (TypeError, lambda: a.call_all(5, name, b"x")),
        (TypeError, lambda: a.reply(b"not a message", b"x")),
        (TypeError, lambda: a.recv(timeout=[])),
        (TypeError, lambda: a.arm("recv")),
        (TypeError, lambda: a.call_cancel("id")),
        (TypeError, lambda: gridwire.endpoint_id(5)),
    ]
    for exc, call in bad:
        with pytest.raises(exc):
            call()
    a.send(NODE_B, name, b"x")
    m = b.recv(5)
    with pytest.raises(TypeError):  # a DATA message is not a request
        b.reply(m, b"answer")
    a.send(NODE_B, name, b"still works")
    assert b.recv(5).data == b"still works"


def test_order_from_32_threads_on_one_client(a, b, name):
    b.register(name)
    per = 3000

    def sender(t):
        for i in range(per):
            a.send(NODE_B, name, struct.pack("<II", t, i))

    threads = [threading.Thread(target=sender, args=(t,), daemon=True) for t in range(32)]
    for t in threads:
        t.start()
    nxt = [0] * 32
    total = 0
    while total < 32 * per:
        batch = b.recv_batch(256, 10)
        assert batch, f"stalled after {total} messages"
        for m in batch:
            t, i = struct.unpack("<II", m.data)
            assert i == nxt[t], f"thread {t}: {i} after {nxt[t] - 1}"
            nxt[t] += 1
        total += len(batch)
    for t in threads:
        t.join()
    assert nxt == [per] * 32 and b.recv(0.2) is None


def test_separate_clients_in_threads(b, name):
    b.register(name)
    errors = []

    def sender(t):
        try:
            with gridwire.connect(SOCK_A) as c:
                for i in range(2000):
                    c.send(NODE_B, name, struct.pack("<II", t, i))
                c.flush(10)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=sender, args=(t,), daemon=True) for t in range(8)]
    for t in threads:
        t.start()
    nxt = {}
    for _ in range(8 * 2000):
        m = b.recv(10)
        assert m is not None
        t, i = struct.unpack("<II", m.data)
        assert i == nxt.get((m.sender, t), 0)
        nxt[(m.sender, t)] = i + 1
    for t in threads:
        t.join()
    assert not errors and len(nxt) == 8


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


def test_memory_flat_over_a_million_messages(a, b, name):
    b.register(name)
    data = bytes(100)

    def run(n):
        for _ in range(n // 1000):
            for _ in range(1000):
                a.send(NODE_B, name, data)
            got = 0
            while got < 1000:
                batch = b.recv_batch(1000, 10)
                assert batch, f"{1000 - got} messages did not come"
                got += len(batch)

    run(100_000)  # warm: pools, caches
    before = rss_kb()
    run(1_000_000)
    grown = rss_kb() - before
    print(f"resident memory grew {grown} KB over 1,000,000 messages")
    assert grown < 8192, f"{grown} KB more after 1 M messages"
