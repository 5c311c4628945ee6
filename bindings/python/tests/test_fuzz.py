# SPDX-License-Identifier: BSD-3-Clause
# The module fuzzed with random arguments for a few seconds: every call
# either works or raises TypeError, ValueError, OverflowError, BufferError
# or a gridwire.Error; the process never crashes, and the client works
# afterwards.
import os
import random
import time

import gridwire
from conftest import NODE_A, NODE_B

SECONDS = float(os.environ.get("GW_PY_FUZZ_S", "4"))

VALUES = [None, 0, 1, -1, 2, 77, 65535, 65536, 2**31, 2**32, 2**64, -2**63, 0.0, 0.5, -0.5,
          float("nan"), float("inf"), 1e300, "", "x", "ep", "~x", "a b", "é" * 20, "x" * 100,
          "a\0b", b"", b"data", bytearray(b"buf"), memoryview(b"view"), bytes(9000),
          [], [1], [2, 1], [77], ["1"], (2,), {}, object(), True, False, gridwire.Kind.DATA]
# Timeouts never None here: a wait for ever would be the fuzzer's doing.
TIMEOUTS = [0, 0.001, 0.01, -1, "1", float("nan"), float("inf"), 1e12, [], True]
METHODS = ["send", "cast", "publish", "recv", "recv_into", "recv_batch", "register",
           "unregister", "service", "subscribe", "unsubscribe", "flush", "call", "call_start",
           "call_cancel", "reply", "reply_error", "call_one", "call_any", "call_all",
           "call_all_wait", "cast_one", "cast_all", "nodes", "node_up", "wait_fds", "arm",
           "wait_ms"]
WAITS = {"send", "cast", "publish", "recv", "recv_into", "recv_batch", "flush", "call",
         "call_start", "reply", "reply_error", "call_one", "call_any", "call_all",
         "call_all_wait"}
OK = (TypeError, ValueError, OverflowError, BufferError, gridwire.Error)


def test_fuzz_arguments(a, b, name):
    rnd = random.Random(int(os.environ.get("GW_PY_FUZZ_SEED", "0")) or None)
    seed = rnd.randrange(1 << 30)
    rnd.seed(seed)
    calls = raised = 0
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        meth = rnd.choice(METHODS)
        args = [rnd.choice(VALUES) for _ in range(rnd.randrange(0, 5))]
        # A method that waits always gets a timeout of the fuzzer's: a None
        # among the positional ones then collides with it (TypeError)
        # instead of waiting for ever.
        kw = {"timeout": rnd.choice(TIMEOUTS)} if meth in WAITS or rnd.random() < 0.3 else {}
        if rnd.random() < 0.2:
            kw[rnd.choice(["urgent", "copy", "wait", "badrpc_errors", "policy", "n", "x"])] = \
                rnd.choice(VALUES)
        calls += 1
        try:
            getattr(a, meth)(*args, **kw)
        except OK:
            raised += 1
        for fn in (gridwire.endpoint_id, gridwire.strerror, gridwire.sub_latest_key):
            try:
                fn(rnd.choice(VALUES))
            except OK:
                pass
    print(f"seed {seed}: {calls} calls, {raised} raised")
    # The client (and the gateway) work after it.
    while a.recv(0) is not None:
        pass
    b.register(name)
    a.send(NODE_B, name, b"after the fuzz")
    m = b.recv(5)
    assert m is not None and m.data == b"after the fuzz"
    assert a.local_node == NODE_A
