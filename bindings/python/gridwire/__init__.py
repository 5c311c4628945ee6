# SPDX-License-Identifier: BSD-3-Clause
"""gridwire: send, receive and call through the local gridwire gateway.

A client connects to its gateway's control socket and gets a private
shared-memory channel; the gateway batches what it sends into frames to
the destination node. Messages of one client reach each destination in
the order they were sent, and a message that cannot be delivered comes
back as a REJECT message: nothing is lost without a word.

    import gridwire
    with gridwire.connect("/run/gridwire/alpha.sock") as c:
        c.register("inbox")
        c.send(2, "inbox", b"hello")          # to endpoint "inbox" on node 2
        m = c.recv(timeout=1.0)               # a Message, or None
        print(c.call(2, "echo", b"ping"))     # b'ping', or an Error raised

The API is libgridwire's (doc/api.md) in Python's manner: timeouts in
seconds (None waits for ever, 0 does not wait), errors raised as
subclasses of gridwire.Error (an OSError with the errno), bytes-like
data taken without a copy. gridwire.aio has the same for asyncio.
"""
import enum
import errno
from typing import NamedTuple, Optional

from . import _gridwire
from ._gridwire import (CALL_HDR, CALL_KEEP, CALLS_MAX, NODE_AUTH, NODE_BATCHING,
                        NODE_GRANT, NODE_TOPICS, NODE_URGENT, SUB_HOLD, SUB_LATEST,
                        URGENT, URGENT_ID, WAIT_RECV, WAIT_SEND, Client, Message,
                        endpoint_id, strerror)

__all__ = [
    "connect", "Client", "Message", "Kind", "Result", "NodeInfo", "endpoint_id",
    "strerror", "sub_latest_key",
    "Error", "InvalidArgument", "WouldBlock", "Timeout", "MessageTooLarge", "HostUnreachable", "HostDown",
    "NoService", "NameTaken", "ReservedName", "NoSpace", "ConnectionRefused",
    "AccessDenied", "GatewayGone", "RemoteError", "NoBuffers", "Overflow", "Busy",
    "SUB_HOLD", "SUB_LATEST", "URGENT", "URGENT_ID", "WAIT_RECV", "WAIT_SEND",
    "CALL_HDR", "CALL_KEEP", "CALLS_MAX",
    "NODE_AUTH", "NODE_BATCHING", "NODE_URGENT", "NODE_GRANT", "NODE_TOPICS",
]


class Kind(enum.IntEnum):
    """What a received Message is (gw_msg_kind)."""
    DATA = 1      #: a message for one of our endpoints
    REJECT = 2    #: one of our sends was not delivered (error says why)
    REQUEST = 3   #: a call to one of our services: answer with reply/reply_error
    CAST = 4      #: a cast to one of our services: nothing to answer
    REPLY = 5     #: the outcome of one of our call_start calls (result())
    LOST = 6      #: some REJECTs were dropped, our channel being full: data is the count
    PUBLISH = 7   #: a message published to a topic we subscribe to

    def __str__(self):  # Kind.DATA, not 1, as print() shows it
        return f"Kind.{self.name}"


class Error(OSError):
    """A gridwire call failed: errno is the error, strerror says it in words."""


class InvalidArgument(Error, ValueError):
    """libgridwire refused an argument: a bad name, node id or flag (EINVAL)."""


class WouldBlock(Error, BlockingIOError):
    """The channel is full (send) and the timeout was 0 (EAGAIN)."""


class Timeout(Error, TimeoutError):
    """A timeout passed: no room in the channel, or no answer to a call (ETIMEDOUT)."""


class MessageTooLarge(Error):
    """The message is larger than the gateway's msg_max (EMSGSIZE)."""


class HostUnreachable(Error):
    """The destination node is not up (EHOSTUNREACH; for a call: badrpc)."""


class HostDown(Error):
    """The node went down with the call in flight: it may or may not have run (EHOSTDOWN)."""


class NoService(Error):
    """No such service, endpoint or subscription on that node (ENOENT)."""


class NameTaken(Error):
    """The endpoint or topic name is taken (EEXIST)."""


class ReservedName(Error, PermissionError):
    """The name is the gateway's own: it starts with '~' (EPERM)."""


class NoSpace(Error):
    """The gateway's directory (names, topics, subscribers) is full (ENOSPC)."""


class ConnectionRefused(Error, ConnectionRefusedError):
    """No gateway listens on that socket (ECONNREFUSED)."""


class AccessDenied(Error, PermissionError):
    """This user may not use the gateway ([node] socket_mode, socket_group) (EACCES)."""


class GatewayGone(Error, BrokenPipeError):
    """The gateway went away or cut this client off (EPIPE): connect again."""


class RemoteError(Error):
    """The service's handler failed: reason is what it said (bytes) (EREMOTEIO)."""

    def __init__(self, errno_, strerror_, reason=b""):
        super().__init__(errno_, strerror_)
        self.reason = reason

    def __str__(self):
        return f"{self.strerror}: {self.reason.decode('utf-8', 'replace')}"


class NoBuffers(Error):
    """The service's ring was full, or our own channel had no room for a REJECT (ENOBUFS)."""


class Overflow(Error):
    """CALL_KEEP messages arrived during calls and wait for recv: receive them (EOVERFLOW)."""


class Busy(Error):
    """CALLS_MAX calls are in flight (EBUSY)."""


class Result(NamedTuple):
    """One node's outcome of a multi-node call: data, or error (an Error instance)."""
    node: int
    data: Optional[bytes]
    error: Optional[Error]

    @property
    def ok(self) -> bool:
        return self.error is None


class NodeInfo(NamedTuple):
    """A node the gateway knows (Client.nodes)."""
    id: int
    up: bool      #: reachable now
    self: bool    #: this gateway's own node
    caps: int     #: NODE_* bits, as its last hello said
    name: str


def sub_latest_key(n: int) -> int:
    """SUB_LATEST, keyed by the first n bytes (1 .. 64) of each message."""
    if not 1 <= n <= 64:
        raise ValueError(f"a key is 1 .. 64 bytes, not {n}")
    return SUB_LATEST | n << 8


def connect(path: str) -> Client:
    """Connect to the gateway listening on path (its [node] socket)."""
    return Client(path)


_ERRORS = {
    errno.EAGAIN: WouldBlock, errno.ETIMEDOUT: Timeout, errno.EMSGSIZE: MessageTooLarge,
    errno.EHOSTUNREACH: HostUnreachable, errno.EHOSTDOWN: HostDown, errno.ENOENT: NoService,
    errno.EEXIST: NameTaken, errno.EPERM: ReservedName, errno.ENOSPC: NoSpace,
    errno.ECONNREFUSED: ConnectionRefused, errno.EACCES: AccessDenied,
    errno.EPIPE: GatewayGone, errno.EREMOTEIO: RemoteError, errno.ENOBUFS: NoBuffers,
    errno.EOVERFLOW: Overflow, errno.EBUSY: Busy, errno.EINVAL: InvalidArgument,
}
_gridwire._setup(_ERRORS, Error, {int(k): k for k in Kind}, Result, NodeInfo)
