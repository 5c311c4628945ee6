# SPDX-License-Identifier: BSD-3-Clause
"""gridwire for asyncio: await recv, send, call, with no thread and no busy loop.

    import asyncio, gridwire.aio

    async def main():
        async with await gridwire.aio.connect("/run/gridwire/alpha.sock") as c:
            await c.send(2, "inbox", b"hello")
            replies = await asyncio.gather(*(c.call(2, "echo", b"%d" % i)
                                             for i in range(1000)))

    asyncio.run(main())

The client's descriptors (gridwire.Client.wait_fds) are watched with
loop.add_reader: one callback takes every message there is, hands call
replies to the calls that wait for them and queues the rest for recv().
That queue is bounded (backlog): when it is full, the client stops
taking messages from its channel until recv() is called, so the
gateway's backpressure still reaches the senders; replies to calls then
wait too. A full channel on the send side is waited for the same way.
"""
import asyncio
import collections
import errno
import logging
from typing import Any, Awaitable, Callable, Optional, Union

import gridwire
from gridwire import Kind, WAIT_RECV, WAIT_SEND

__all__ = ["Client", "connect"]

Buffer = Union[bytes, bytearray, memoryview]

# Messages taken per callback before the loop gets a turn.
_PUMP_BATCH = 256

log = logging.getLogger("gridwire")


async def connect(path: str, *, backlog: int = 1024) -> "Client":
    """Connect to the gateway listening on path: a gridwire.aio.Client."""
    loop = asyncio.get_running_loop()
    sync = await loop.run_in_executor(None, gridwire.Client, path)
    return Client(sync, backlog=backlog)


def _deadline(loop, timeout):
    if timeout is None:
        return None
    if timeout < 0:
        raise ValueError(f"timeout must be None or >= 0 seconds, not {timeout!r}")
    return loop.time() + timeout


class Client:
    """An asyncio client over a gridwire.Client (which it owns and closes)."""

    def __init__(self, client: gridwire.Client, *, backlog: int = 1024) -> None:
        if backlog < 1:
            raise ValueError("backlog must be >= 1")
        self._c = client
        self._loop = asyncio.get_running_loop()
        self._backlog = backlog
        self._queue = collections.deque()    # messages for recv()
        self._receivers = collections.deque()  # futures of recv() calls waiting
        self._calls = {}                     # call_id -> future of its REPLY
        self._senders = []                   # futures waiting for room
        self._timer = None
        self._paused = False
        self._error = None                   # GatewayGone, once the gateway went away
        self._rx_fd, self._hup_fd = client.wait_fds(WAIT_RECV)
        self._tx_fd = client.wait_fds(WAIT_SEND)[0]
        self._tx_watched = False
        self._loop.add_reader(self._rx_fd, self._pump)
        self._loop.add_reader(self._hup_fd, self._on_hup)
        self._loop.call_soon(self._pump)

    @property
    def client(self):
        """The gridwire.Client underneath (for what does not wait)."""
        return self._c

    @property
    def local_node(self):
        return self._c.local_node

    @property
    def msg_max(self):
        return self._c.msg_max

    def nodes(self):
        return self._c.nodes()

    def node_up(self, node):
        return self._c.node_up(node)

    # --- receiving -------------------------------------------------------

    def _pump(self):
        """Take what the channel holds; hand it out; arm for more."""
        if self._c.closed:
            return
        try:
            for _ in range(_PUMP_BATCH):
                if len(self._queue) >= self._backlog and self._full():
                    return
                m = self._c.recv(0)
                if m is None:
                    if not self._c.arm(WAIT_RECV):
                        break
                    continue
                self._dispatch(m)
            else:
                self._loop.call_soon(self._pump)  # more there: let the loop breathe
        except gridwire.GatewayGone as e:
            self._drain(e)
            return
        self._wake_senders()
        self._schedule()

    def _drain(self, err):
        """The gateway went away: take what it had delivered and the REJECTs
        of what it had not settled (recv hands them out, then raises)."""
        try:
            while len(self._queue) < self._backlog + gridwire.CALL_KEEP:
                m = self._c.recv(0)
                if m is None:
                    break
                self._dispatch(m)
        except gridwire.GatewayGone as e:
            err = e
        self._gone(err)

    def _on_hup(self):
        """The gateway went away (its descriptor stays readable). While the
        queue is full the rest waits for recv(); what waits for room or a
        reply is told now."""
        if not self._paused:
            self._pump()
            return
        self._loop.remove_reader(self._hup_fd)
        self._fail_waiters(gridwire.GatewayGone(errno.EPIPE, gridwire.strerror(errno.EPIPE)))

    def _dispatch(self, m):
        if m.kind == Kind.REPLY:
            fut = self._calls.pop(m.call_id, None)
            if fut is not None:
                if not fut.done():
                    fut.set_result(m)
                return
        while self._receivers:
            fut = self._receivers.popleft()
            if not fut.done():
                fut.set_result(m)
                return
        self._queue.append(m)

    def _full(self):
        """The queue for recv() is full: stop taking from the channel. Calls in
        flight need their replies, which may wait behind what is queued: the
        queue may grow by CALL_KEEP more for them (as gw_call keeps messages),
        and past that they fail with Overflow, as gw_call does, rather than
        wait for ever."""
        if self._calls and len(self._queue) < self._backlog + gridwire.CALL_KEEP:
            return False
        calls, self._calls = self._calls, {}
        err = gridwire.Overflow(errno.EOVERFLOW, gridwire.strerror(errno.EOVERFLOW))
        for call_id, fut in calls.items():
            try:
                self._c.call_cancel(call_id)  # no REPLY will come for it
            except gridwire.Error:
                pass  # it had ended (its deadline): its REPLY is dropped as unknown
            if not fut.done():
                fut.set_exception(err)
        self._pause()
        return True

    def _schedule(self):
        """Calls in flight have deadlines that recv reports: look then."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        ms = self._c.wait_ms() if not self._c.closed else None
        if ms is not None and not self._paused:
            self._timer = self._loop.call_later(ms / 1000.0, self._pump)

    def _pause(self):
        if not self._paused:
            self._paused = True
            self._loop.remove_reader(self._rx_fd)

    def _resume(self):
        if self._paused and len(self._queue) < self._backlog and self._error is None:
            self._paused = False
            self._loop.add_reader(self._rx_fd, self._pump)
            self._loop.add_reader(self._hup_fd, self._on_hup)
            self._loop.call_soon(self._pump)

    def _unwatch(self):
        self._loop.remove_reader(self._rx_fd)
        self._loop.remove_reader(self._hup_fd)
        if self._tx_watched:
            self._loop.remove_reader(self._tx_fd)
            self._tx_watched = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _gone(self, err):
        """The gateway went away: what it had delivered is queued; fail the rest."""
        self._error = err
        self._unwatch()
        self._fail_waiters(err)
        while self._receivers and not self._queue:
            fut = self._receivers.popleft()
            if not fut.done():
                fut.set_exception(err)

    def _fail_waiters(self, err, *more):
        """Calls and sends that wait (and more: receivers) end with err."""
        futs = list(self._calls.values()) + self._senders
        for group in more:
            futs += group
            group.clear()
        for fut in futs:
            if not fut.done():
                fut.set_exception(err)
        self._calls.clear()
        self._senders.clear()

    def _check(self):
        if self._c.closed:
            raise ValueError("the client is closed")

    async def recv(self, timeout: Optional[float] = None) -> Optional[gridwire.Message]:
        """The next Message (not a call's REPLY: call() takes those), or None when
        none comes within timeout seconds."""
        self._check()
        if self._queue:
            m = self._queue.popleft()
            self._resume()
            return m
        if self._error is not None:
            m = self._c.recv(0)  # what is left after the gateway went, then GatewayGone
            if m is None:
                raise self._error
            return m
        if timeout is not None and timeout <= 0:
            return None
        fut = self._loop.create_future()
        self._receivers.append(fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            return None
        except BaseException:
            # Cancelled after the message was handed to us: it goes back,
            # first in line, not lost.
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._queue.appendleft(fut.result())
            raise
        finally:
            if not fut.done():
                fut.cancel()

    # --- sending ---------------------------------------------------------

    def _wake_senders(self):
        senders, self._senders = self._senders, []
        for fut in senders:
            if not fut.done():
                fut.set_result(None)
        if self._tx_watched and not self._senders:
            self._loop.remove_reader(self._tx_fd)
            self._tx_watched = False

    async def _room(self, deadline):
        """Wait until the channel may have room again (or raise Timeout)."""
        if self._error is not None:
            raise self._error
        if self._c.arm(WAIT_SEND):
            return
        left = None if deadline is None else deadline - self._loop.time()
        if left is not None and left <= 0:
            raise gridwire.Timeout(errno.ETIMEDOUT, gridwire.strerror(errno.ETIMEDOUT))
        fut = self._loop.create_future()
        self._senders.append(fut)
        if not self._tx_watched:
            self._loop.add_reader(self._tx_fd, self._wake_senders)
            self._tx_watched = True
        try:
            await asyncio.wait_for(fut, left)
        except asyncio.TimeoutError:
            raise gridwire.Timeout(errno.ETIMEDOUT,
                                   gridwire.strerror(errno.ETIMEDOUT)) from None

    async def _sending(self, timeout, fn, *args, **kw):
        self._check()
        deadline = _deadline(self._loop, timeout)
        while True:
            try:
                return fn(*args, timeout=0, **kw)
            except gridwire.WouldBlock:
                if timeout == 0:
                    raise
            await self._room(deadline)

    async def send(self, node: int, endpoint: Union[str, int], data: Buffer,
                   timeout: Optional[float] = None, *, urgent: bool = False) -> None:
        """As gridwire.Client.send; a full channel is waited for without blocking
        the loop (up to timeout seconds, then Timeout)."""
        return await self._sending(timeout, self._c.send, node, endpoint, data,
                                   urgent=urgent)

    async def cast(self, node: int, service: str, data: Buffer,
                   timeout: Optional[float] = None, *, urgent: bool = False) -> None:
        return await self._sending(timeout, self._c.cast, node, service, data, urgent=urgent)

    async def publish(self, topic: str, data: Buffer, timeout: Optional[float] = None, *,
                      urgent: bool = False) -> None:
        return await self._sending(timeout, self._c.publish, topic, data, urgent=urgent)

    async def reply(self, request: gridwire.Message, data: Buffer,
                    timeout: Optional[float] = None) -> None:
        return await self._sending(timeout, self._c.reply, request, data)

    async def reply_error(self, request: gridwire.Message, reason: Union[str, Buffer],
                          timeout: Optional[float] = None) -> None:
        return await self._sending(timeout, self._c.reply_error, request, reason)

    # --- calls -----------------------------------------------------------

    async def call(self, node: int, service: str, data: Buffer, timeout: float = 5.0, *,
                   urgent: bool = False) -> bytes:
        """Call a service: its reply's bytes, or the call's Error raised. Thousands
        may be in flight at once (up to gridwire.CALLS_MAX)."""
        self._check()
        if self._error is not None:
            raise self._error
        if self._paused:  # its reply would wait behind the queue: receive first
            raise gridwire.Overflow(errno.EOVERFLOW, gridwire.strerror(errno.EOVERFLOW))
        deadline = _deadline(self._loop, timeout)
        while True:
            try:
                call_id = self._c.call_start(node, service, data, timeout, urgent=urgent,
                                             wait=False)
                break
            except gridwire.WouldBlock:
                await self._room(deadline)
        fut = self._loop.create_future()
        self._calls[call_id] = fut
        if self._timer is None:  # the pump keeps it going while calls are in flight
            self._schedule()
        try:
            m = await fut
        except asyncio.CancelledError:
            if self._calls.pop(call_id, None) is not None and not self._c.closed:
                try:
                    self._c.call_cancel(call_id)
                except gridwire.Error:
                    pass  # it had ended: its REPLY is dropped above
            raise
        return m.result()

    async def serve(self, name: str,
                    handler: Callable[[gridwire.Message], Union[Buffer, None, Awaitable[Any]]],
                    *, other: Optional[Callable[[gridwire.Message], Any]] = None) -> None:
        """Offer service name and answer its requests until cancelled.

        handler(message) returns the reply's data (bytes-like), or an awaitable
        of it; an exception it raises goes back as RemoteError(str(exception)).
        Casts are handled the same, with nothing to answer. Every message this
        client receives goes through here: those not for the service go to
        other(message) if given, else they are logged (never dropped silently).
        """
        loop = self._loop
        await loop.run_in_executor(None, self._c.service, name)
        ep = gridwire.endpoint_id(name)
        while True:
            m = await self.recv()
            if m.kind in (Kind.REQUEST, Kind.CAST) and m.endpoint == ep:
                try:
                    r = handler(m)
                    if asyncio.iscoroutine(r) or isinstance(r, asyncio.Future):
                        r = await r
                except Exception as e:  # the caller is told, the service goes on
                    if m.kind == Kind.REQUEST:
                        await self.reply_error(m, str(e) or type(e).__name__)
                    else:
                        log.warning("gridwire: cast to %s failed: %r", name, e)
                    continue
                if m.kind == Kind.REQUEST:
                    await self.reply(m, b"" if r is None else r)
            elif other is not None:
                r = other(m)
                if asyncio.iscoroutine(r):
                    await r
            else:
                log.warning("gridwire: %s: a message not for the service: %r", name, m)

    # --- the rest --------------------------------------------------------

    async def _blocking(self, fn, *args):
        self._check()
        return await self._loop.run_in_executor(None, fn, *args)

    async def register(self, endpoint: str) -> None:
        return await self._blocking(self._c.register, endpoint)

    async def unregister(self, endpoint: str) -> None:
        return await self._blocking(self._c.unregister, endpoint)

    async def service(self, name: str) -> None:
        return await self._blocking(self._c.service, name)

    async def subscribe(self, topic: str, policy: int = gridwire.SUB_HOLD) -> None:
        return await self._blocking(self._c.subscribe, topic, policy)

    async def unsubscribe(self, topic: str) -> None:
        return await self._blocking(self._c.unsubscribe, topic)

    async def flush(self, timeout: Optional[float] = None) -> None:
        return await self._blocking(self._c.flush, timeout)

    def close(self) -> None:
        """Disconnect (as gridwire.Client.close); waiting calls and sends raise."""
        if self._c.closed:
            return
        if self._error is None:
            self._unwatch()
        self._fail_waiters(ValueError("the client is closed"), self._receivers)
        self._c.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.close()
