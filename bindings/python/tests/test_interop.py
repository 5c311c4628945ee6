# SPDX-License-Identifier: BSD-3-Clause
# Python beside the other clients: a Python service called from C
# (gw-perf call) and from Erlang (the binding's gridwire:call), and Python
# calling a C service (gw-perf echo).
import json
import os
import shutil
import subprocess
import threading
import time

import pytest

import gridwire
from gridwire import Kind
from conftest import NODE_A, NODE_B, SOCK_A, SOCK_B

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
BUILD = os.environ.get("GW_BUILD", os.path.join(ROOT, "build"))
GW_PERF = os.path.join(BUILD, "app", "gw-perf")


@pytest.fixture
def echo_service(name):
    """A Python echo service on beta, in a thread."""
    c = gridwire.connect(SOCK_B)
    c.service(name)
    stop = threading.Event()
    served = [0]

    def run():
        while not stop.is_set():
            for m in c.recv_batch(256, 0.1):
                if m.kind is Kind.REQUEST:
                    c.reply(m, m.data)
                    served[0] += 1

    t = threading.Thread(target=run, daemon=True)
    t.start()
    yield name, served
    stop.set()
    t.join()
    c.close()


def test_c_calls_python(echo_service):
    name, served = echo_service
    out = subprocess.run([GW_PERF, "call", "-s", SOCK_A, "-n", str(NODE_B), "-e", name,
                          "-w", "16", "-m", "1000", "--timeout-ms", "5000"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    # gw-perf checks each reply is its own call's payload ("wrong" counts those).
    assert (r["calls"], r["ok"], r["wrong"]) == (16000, 16000, 0)  # 16 callers x 1,000
    assert served[0] == 16000


def test_python_calls_c(a, name):
    p = subprocess.Popen([GW_PERF, "echo", "-s", SOCK_B, "-e", name],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):  # until the C service is offered
            try:
                a.call(NODE_B, name, b"hello", timeout=1)
                break
            except gridwire.NoService:
                p.poll()
                assert p.returncode is None, p.stderr.read()
                time.sleep(0.05)
        for i in range(2000):
            data = os.urandom(i % 200)
            assert a.call(NODE_B, name, data) == data
        r = a.call_all([NODE_B], name, b"all")
        assert r[0].data == b"all"
    finally:
        p.terminate()
        p.wait(10)


@pytest.mark.skipif(not shutil.which("erl"), reason="no Erlang (erlang-nox)")
def test_erlang_calls_python(echo_service):
    name, served = echo_service
    ebin = os.path.join(BUILD, "bindings", "erlang")
    if not os.path.exists(os.path.join(ebin, "gridwire_nif.so")):
        pytest.skip("no Erlang binding built")
    # gridwire:call sends term_to_binary(Req) and decodes the reply the same
    # way: an echo hands the term back.
    prog = f'''
        ok = gridwire:start(#{{socket => "{SOCK_A}", channels => 1}}),
        R = [gridwire:call({NODE_B}, "{name}", {{reading, N, <<"feeder-7">>}}, 5000)
             || N <- lists:seq(1, 500)],
        Want = [{{ok, {{reading, N, <<"feeder-7">>}}}} || N <- lists:seq(1, 500)],
        io:format("~p~n", [R =:= Want]),
        halt(0).'''
    out = subprocess.run(["erl", "-noshell", "-pa", ebin, "-eval", prog],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().endswith("true"), out.stdout + out.stderr
    assert served[0] == 500
