# SPDX-License-Identifier: BSD-3-Clause
# The suite runs against two real gateways on the kernel-bypass cable,
# started by test/integration/test_python.sh: alpha (GW_SOCK_A, node
# GW_NODE_A) and beta (GW_SOCK_B, GW_NODE_B). GW_RESTART_A is a command that
# kills alpha's gateway and starts it again (the gateway-killed test).
import itertools
import os

import pytest

import gridwire

SOCK_A = os.environ.get("GW_SOCK_A", "/run/gridwire/alpha.sock")
SOCK_B = os.environ.get("GW_SOCK_B", "/run/gridwire/beta.sock")
NODE_A = int(os.environ.get("GW_NODE_A", "1"))
NODE_B = int(os.environ.get("GW_NODE_B", "2"))

_names = itertools.count()


@pytest.fixture
def name():
    """A name no other test uses (endpoints are per node, tests share gateways)."""
    return f"py{os.getpid()}-{next(_names)}"


@pytest.fixture
def a():
    with gridwire.connect(SOCK_A) as c:
        yield c


@pytest.fixture
def b():
    with gridwire.connect(SOCK_B) as c:
        yield c
