# SPDX-License-Identifier: BSD-3-Clause
# Services and calls: every outcome, call_start/cancel, casts, ecall's
# multi-node patterns with their policies.
import errno
import threading
import time

import pytest

import gridwire
from gridwire import Kind
from conftest import NODE_A, NODE_B, SOCK_A, SOCK_B

NOWHERE = 77


class Service:
    """A service in a thread: echoes, fails on b"fail", never answers b"slow"."""

    def __init__(self, sock, name):
        self.c = gridwire.connect(sock)
        self.c.service(name)
        self.casts = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            m = self.c.recv(0.1)
            if m is None:
                continue
            if m.kind is Kind.REQUEST:
                if m.data == b"fail":
                    self.c.reply_error(m, "it failed")
                elif m.data != b"slow":
                    self.c.reply(m, b"%d:" % self.c.local_node + m.data)
            elif m.kind is Kind.CAST:
                self.casts.append(m.data)

    def close(self):
        self.stop.set()
        self.thread.join()
        self.c.close()


@pytest.fixture
def svc(name):
    """The service on both nodes; yields its name and the two."""
    s = [Service(SOCK_A, name), Service(SOCK_B, name)]
    yield name, s
    for x in s:
        x.close()


def test_call_outcomes(a, svc):
    name, _ = svc
    assert a.call(NODE_B, name, b"ping") == b"%d:ping" % NODE_B
    assert a.call(NODE_A, name, bytearray(b"local")) == b"%d:local" % NODE_A
    with pytest.raises(gridwire.RemoteError) as e:
        a.call(NODE_B, name, b"fail")
    assert e.value.reason == b"it failed" and e.value.errno == errno.EREMOTEIO
    assert "it failed" in str(e.value)
    with pytest.raises(gridwire.NoService):
        a.call(NODE_B, name + "-none", b"x", 2)
    with pytest.raises(gridwire.HostUnreachable):
        a.call(NOWHERE, name, b"x", 2)
    with pytest.raises(gridwire.Timeout) as e:
        a.call(NODE_B, name, b"slow", timeout=0.3)
    assert isinstance(e.value, TimeoutError)
    assert a.call(NODE_B, name, b"again", urgent=True) == b"%d:again" % NODE_B


def test_call_start_and_cancel(a, svc):
    name, _ = svc
    ids = [a.call_start(NODE_B, name, b"%d" % i) for i in range(100)]
    slow = a.call_start(NODE_B, name, b"slow", 2.0)
    a.call_cancel(slow)
    with pytest.raises(gridwire.NoService):  # ended already
        a.call_cancel(slow)
    got = {}
    while len(got) < 100:
        m = a.recv(5)
        assert m is not None and m.kind is Kind.REPLY and m.call_id != slow
        got[m.call_id] = m.result()
    assert [got[i] for i in ids] == [b"%d:%d" % (NODE_B, i) for i in range(100)]
    failing = a.call_start(NODE_B, name, b"fail")
    m = a.recv(5)
    assert m.call_id == failing and m.error == -errno.EREMOTEIO
    with pytest.raises(gridwire.RemoteError):
        m.result()
    timing_out = a.call_start(NODE_B, name, b"slow", timeout=0.2)
    m = a.recv(5)  # recv reports the deadline
    assert m.call_id == timing_out and m.error == -errno.ETIMEDOUT


def test_cast(a, svc):
    name, (sa, sb) = svc
    a.cast(NODE_B, name, b"one way")
    a.cast(NODE_B, name, b"urgent way", urgent=True)
    deadline = time.monotonic() + 5
    while len(sb.casts) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(sb.casts) == [b"one way", b"urgent way"]


def test_patterns(a, svc):
    name, (sa, sb) = svc
    r = a.call_one([NOWHERE, NODE_B], name, b"x")
    assert (r.node, r.data, r.ok) == (NODE_B, b"%d:x" % NODE_B, True)
    r = a.call_any([NODE_A, NODE_B], name, b"y")
    assert r.ok and r.data == b"%d:y" % r.node
    rs = a.call_all([NODE_A, NODE_B], name, b"z")
    assert [(x.node, x.data) for x in rs] == [(NODE_A, b"%d:z" % NODE_A),
                                              (NODE_B, b"%d:z" % NODE_B)]
    # An unreachable node is left out of the verdict, unless badrpc_errors.
    rs = a.call_all([NODE_A, NODE_B, NOWHERE], name, b"z")
    assert rs[0].ok and rs[1].ok and isinstance(rs[2].error, gridwire.HostUnreachable)
    with pytest.raises(gridwire.HostUnreachable) as e:
        a.call_all([NODE_A, NODE_B, NOWHERE], name, b"z", badrpc_errors=True)
    assert [r.ok for r in e.value.results] == [True, True, False]  # who did answer
    with pytest.raises(gridwire.HostUnreachable) as e:
        a.call_any([NOWHERE], name, b"z", badrpc_errors=True)
    assert e.value.node == NOWHERE
    with pytest.raises(gridwire.RemoteError) as e:
        a.call_all([NODE_A, NODE_B], name, b"fail")
    assert e.value.reason == b"it failed"
    with pytest.raises(gridwire.RemoteError):
        a.call_one([NODE_A, NODE_B], name, b"fail")
    rs = a.call_all_wait([NODE_A, NODE_B, NOWHERE], name, b"w", timeout=2)
    assert [x.ok for x in rs] == [True, True, False]
    assert isinstance(rs[2].error, gridwire.HostUnreachable)
    assert a.cast_one([NODE_B], name, b"c1") == NODE_B
    assert a.cast_one([NODE_B, NODE_A], name, b"c2") == NODE_A  # this node, if listed
    assert a.cast_all([NODE_A, NODE_B], name, b"c3") == 2
    with pytest.raises(gridwire.HostUnreachable):
        a.cast_all([NODE_A, NOWHERE], name, b"c4", badrpc_errors=True)
    with pytest.raises(gridwire.HostUnreachable):
        a.cast_one([NOWHERE], name, b"c5")


def test_calls_from_threads(svc):
    name, _ = svc
    errors = []

    def caller(t):
        try:
            with gridwire.connect(SOCK_A) as c:
                for i in range(200):
                    assert c.call(NODE_B, name, b"%d-%d" % (t, i)) == b"%d:%d-%d" % (NODE_B, t, i)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(t,), daemon=True) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_busy(a, b, name):
    b.service(name)  # offered, never answered
    ids = [a.call_start(NODE_B, name, b"", timeout=30) for _ in range(gridwire.CALLS_MAX)]
    with pytest.raises(gridwire.Busy):
        a.call_start(NODE_B, name, b"", timeout=30)
    for i in ids:
        a.call_cancel(i)
