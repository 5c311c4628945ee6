# SPDX-License-Identifier: BSD-3-Clause
# Alpha's gateway killed under a Python sender: the sender gets
# GatewayGone, never a hang or a crash; every message it sent is either
# delivered (in order) or comes back as a REJECT; then it connects again
# as the C client does. Runs last (it restarts alpha): the z_ prefix.
import errno
import os
import struct
import subprocess
import threading
import time

import pytest

import gridwire
from gridwire import Kind
from conftest import NODE_A, NODE_B, SOCK_A, SOCK_B

RESTART = os.environ.get("GW_RESTART_A")


@pytest.mark.skipif(not RESTART, reason="GW_RESTART_A not set (test/integration/test_python.sh sets it)")
def test_gateway_killed_under_a_sender(name):
    b = gridwire.connect(SOCK_B)
    b.register(name)
    got = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            got.extend(struct.unpack("<I", m.data)[0] for m in b.recv_batch(512, 0.1))

    rt = threading.Thread(target=reader, daemon=True)
    rt.start()
    # However the test ends, the reader stops: pytest never waits on it.
    try:
        a = gridwire.connect(SOCK_A)
        sent = 0
        outcome = []

        def sender():
            nonlocal sent
            try:
                while True:
                    a.send(NODE_B, name, struct.pack("<I", sent), timeout=5)
                    sent += 1
            except Exception as e:  # noqa: BLE001 (the test looks at it)
                outcome.append(e)

        # A call from beta to a service on alpha, in flight when alpha dies.
        svc = gridwire.connect(SOCK_A)
        svc.service(name + "-svc")  # never answers
        call_outcome = []

        def caller():
            with gridwire.connect(SOCK_B) as c:
                try:
                    c.call(NODE_A, name + "-svc", b"", timeout=30)
                except gridwire.Error as e:
                    call_outcome.append(e)

        ct = threading.Thread(target=caller, daemon=True)
        ct.start()
        st = threading.Thread(target=sender, daemon=True)
        st.start()
        time.sleep(0.5)
        restart = subprocess.Popen(["bash", "-c", RESTART])
        st.join(30)
        assert not st.is_alive(), "the sender hangs with its gateway gone"
        assert isinstance(outcome[0], gridwire.GatewayGone), outcome
        ct.join(30)
        assert not ct.is_alive() and isinstance(call_outcome[0], gridwire.HostDown), call_outcome
        svc.close()
        assert outcome[0].errno == errno.EPIPE and isinstance(outcome[0], BrokenPipeError)
        # What the gateway had taken and not settled comes back, then GatewayGone.
        rejected, lost = set(), 0
        with pytest.raises(gridwire.GatewayGone):
            while True:
                m = a.recv(10)
                assert m is not None, "recv waits for ever on a dead gateway"
                if m.kind is Kind.REJECT:
                    rejected.add(m.msg_id)
                elif m.kind is Kind.LOST:
                    lost += int.from_bytes(m.data, "little")
        for call in (lambda: a.send(NODE_B, name, b"x"), a.nodes, lambda: a.flush(1),
                     lambda: a.call(NODE_B, name, b"x")):
            with pytest.raises(gridwire.GatewayGone):
                call()
        a.close()
        assert restart.wait(60) == 0, "alpha did not come back"
        # Again, as the C client does: a new connection (and a new channel).
        for _ in range(300):
            try:
                a = gridwire.connect(SOCK_A)
                break
            except gridwire.ConnectionRefused:
                time.sleep(0.1)
        for _ in range(300):
            try:
                a.send(NODE_B, name, struct.pack("<I", 1 << 31))
                break
            except gridwire.HostUnreachable:  # until alpha's peer is up again
                time.sleep(0.1)
        deadline = time.monotonic() + 20
        while (1 << 31) not in got and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        rt.join()
        a.close()
        b.close()
        assert got[-1] == 1 << 31, "nothing arrived after reconnecting"
        before = got[:-1]
        assert before == sorted(before) and len(set(before)) == len(before), "order broken"
        missing = set(range(sent)) - set(before) - rejected
        assert len(missing) <= lost, f"{len(missing)} messages neither delivered nor told back"
        print(f"sent {sent}: {len(before)} delivered, {len(rejected)} rejected (EPIPE)")
    finally:
        stop.set()
        rt.join(5)
