"""The asyncio remoting client: connections on the caller's event loop, opaque -> future.

The asyncio twin of :class:`rocketq.remoting.client.RemotingClient` (Java's
``NettyRemotingClient``), built on the same sans-IO :class:`~rocketq.protocol.frame.FrameDecoder`.

Threading model: none of its own. Every connection is an :class:`asyncio.Protocol` on the loop
that first used the client; frames are decoded in ``data_received`` and each response completes
its caller's :class:`asyncio.Future` directly (no thread hop). Requests a server sends to the
client (NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO, ...) run as tasks on the same
loop through the coroutine ``request_handler``. Addresses must be numeric (``ip:port``) for the
no-thread guarantee: a host name is resolved by the loop's default executor.

Invariants:

* One connection per ``"host:port"``, made on first use (one connect in flight per address)
  and made again on the next call after it was lost; no background reconnect.
* Opaques come from one counter per client, wrapping within int32 like Java's
  ``RemotingCommand.requestId``.
* Whoever pops an entry from a connection's pending table completes its future, exactly once:
  the response, the timeout, the caller's cancellation or the loss of the connection.
* Every hook in ``request_hooks`` sees each outgoing request before it is encoded: the place
  for request signing (ACL's ``RPCHook.doBeforeRequest``); ``ssl_context`` makes every
  connection TLS. Responses the
  client writes to server requests do not pass through the hooks.
* Frames are written in call order. With no call in flight on the connection a frame is
  written at once; otherwise those written within one loop iteration leave in one transport
  write (a burst of sends is one syscall, as the blocking client's flat combining).
* A response whose opaque is unknown is dropped (``processResponseCommand``); a malformed frame
  closes the connection and fails its pending calls with :class:`~rocketq.errors.ConnectError`.

Timeout contract: a call that raised :class:`~rocketq.errors.RequestTimeoutError` may still
have been executed by the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import ssl
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar, cast

from rocketq.errors import ClientError, ConnectError, ProtocolError, RequestTimeoutError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frame import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    MAX_FRAME_LENGTH,
    FrameDecoder,
    RemotingCommand,
)
from rocketq.remoting.helper import RequestIdCounter, answer_frame, machinery_response, parse_addr

__all__ = ["AsyncRemotingClient", "AsyncRequestHandler", "RequestHook", "wait_event", "wait_for"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")


async def _wait_for_scope(aw: Awaitable[_T], timeout_s: float) -> _T:
    """:func:`wait_for` on Python >= 3.11: ``asyncio.timeout`` runs ``aw`` in the calling
    task (no task of its own) and tells its own timeout from a cancel by the task's cancel
    count, so an outside cancel always propagates."""
    async with asyncio.timeout(max(timeout_s, 0.0)):  # type: ignore[attr-defined,unused-ignore]
        return await aw


async def _wait_for_task(aw: Awaitable[_T], timeout_s: float) -> _T:
    """:func:`wait_for` on Python 3.10: ``aw`` runs as a task watched by ``asyncio.wait``,
    which never swallows the caller's cancel (the task is then cancelled too)."""
    task = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait((task,), timeout=max(timeout_s, 0.0))
    except BaseException:
        task.cancel()
        raise
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise asyncio.TimeoutError
    return task.result()


#: ``await wait_for(aw, timeout_s)``: ``aw``'s result, or ``asyncio.TimeoutError`` after
#: ``timeout_s`` (``aw`` then cancelled). Not ``asyncio.wait_for``: before Python 3.12 it
#: returns the inner result instead of raising ``CancelledError`` when the caller is
#: cancelled in the loop step ``aw`` completes (CPython gh-86296), so a cancelled loop keeps
#: running. ``asyncio.timeout`` (3.11+) is free of that race and costs no task.
wait_for: Callable[[Awaitable[_T], float], Awaitable[_T]] = (
    _wait_for_scope if sys.version_info >= (3, 11) else _wait_for_task
)


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``event``; True when it is set. A cancellation always
    propagates.

    Not ``asyncio.wait_for(event.wait(), t)``: before Python 3.12, ``wait_for`` returns the
    inner result instead of raising ``CancelledError`` when the task is cancelled in the same
    loop step as the event is set (CPython gh-86296), so a ``while True`` loop around it
    outlives ``task.cancel()`` and whoever awaits the task hangs.
    """
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((waiter,), timeout=max(timeout_s, 0.0))
    finally:
        waiter.cancel()
    return event.is_set()


#: ``(request, server address) -> response or None``: requests a server sends to the client.
AsyncRequestHandler = Callable[[RemotingCommand, str], Awaitable[RemotingCommand | None]]
#: Runs with every outgoing request before it is encoded (``RPCHook.doBeforeRequest``): the
#: blocking client's ``RpcHook`` shape, so :class:`rocketq.acl.signing.AclClientRPCHook` fits.
RequestHook = Callable[[RemotingCommand], None]


class _Connection(asyncio.Protocol):
    """One connection: its decoder, its pending table and its write flow control."""

    def __init__(self, client: AsyncRemotingClient, addr: str, max_frame_length: int) -> None:
        self.client = client
        self.addr = addr
        self.decoder = FrameDecoder(max_frame_length)
        self.pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._paused: asyncio.Future[None] | None = None
        #: (deadline, opaque, future, timeout ms, code) of the calls made, answered or not:
        #: one loop timer, armed at the earliest deadline, serves them all (a timer per call
        #: cost more than the rest of the call's bookkeeping); answered entries are skipped
        #: when they come up and pruned when they outnumber the pending calls
        self._deadlines: list[tuple[float, int, asyncio.Future[RemotingCommand], int, int]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        # Frames written during one loop iteration leave in one transport write (one syscall).
        self._out: list[bytes] = []

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            commands = self.decoder.feed(data)
        except ProtocolError as exc:
            # NettyDecoder: a bad frame closes the channel (NettyRemotingClient.closeChannel).
            log.warning("%s: malformed frame from %s, closing: %s", self.client.name, self.addr, exc)
            self.close(f"malformed frame: {exc}", exc)
            return
        pending = self.pending
        for cmd in commands:
            if cmd.flag & FLAG_RESPONSE:
                fut = pending.pop(cmd.opaque, None)
                if fut is None:
                    # unknown opaque: timed out already, or an answer to a oneway request
                    log.debug("%s: response with unknown opaque %d", self.client.name, cmd.opaque)
                elif not fut.done():
                    fut.set_result(cmd)
            else:
                self.client._spawn_handler(self, cmd)

    def connection_lost(self, exc: Exception | None) -> None:
        self.close("connection closed by the server" if exc is None else f"connection lost: {exc}", exc)

    def pause_writing(self) -> None:
        if self._paused is None:
            self._paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        paused, self._paused = self._paused, None
        if paused is not None and not paused.done():
            paused.set_result(None)

    # ------------------------------------------------------------------ own
    @property
    def paused(self) -> bool:
        """Whether the transport's write buffer is over its high-water mark."""
        return self._paused is not None

    async def drained(self) -> None:
        """Wait while the transport's write buffer is over its high-water mark."""
        paused = self._paused
        if paused is not None:
            await asyncio.shield(paused)

    def write(self, frame: bytes) -> None:
        """Write ``frame``: at once when nothing is queued and no call is in flight on this
        connection (one request per round trip pays no loop callback); otherwise queued and
        flushed once the current loop iteration's callbacks ran (a burst is one write)."""
        transport = self.transport
        if self.closed or transport is None:
            raise ConnectError("connection closed before the request was written", addr=self.addr)
        out = self._out
        if not out and not self.pending:
            transport.write(frame)
            return
        out.append(frame)
        if len(out) == 1:
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        out, self._out = self._out, []
        transport = self.transport
        if out and transport is not None and not self.closed:
            transport.write(out[0] if len(out) == 1 else b"".join(out))

    def watch(
        self,
        loop: asyncio.AbstractEventLoop,
        deadline: float,
        opaque: int,
        fut: asyncio.Future[RemotingCommand],
        timeout_ms: int,
        code: int,
    ) -> None:
        """Fail ``fut`` with RequestTimeoutError at ``deadline`` unless it was answered."""
        heap = self._deadlines
        if len(heap) > 64 and len(heap) > 4 * len(self.pending):
            pending = self.pending
            heap[:] = [e for e in heap if pending.get(e[1]) is e[2]]
            heapq.heapify(heap)
        heapq.heappush(heap, (deadline, opaque, fut, timeout_ms, code))
        if self._timer is None or deadline < self._timer_at:
            self._arm(loop, deadline)

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = loop.call_at(when, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        heap, pending = self._deadlines, self.pending
        # a loop timer may fire up to a clock tick early
        limit = loop.time() + 0.001
        while heap and heap[0][0] <= limit:
            _, opaque, fut, timeout_ms, code = heapq.heappop(heap)
            if pending.get(opaque) is fut:
                del pending[opaque]
                if not fut.done():
                    fut.set_exception(
                        RequestTimeoutError(
                            f"wait response timeout {timeout_ms}ms, code {code}, opaque {opaque}",
                            addr=self.addr,
                        )
                    )
        if heap and not self.closed:
            self._arm(loop, heap[0][0])

    def close(self, reason: str, cause: BaseException | None = None) -> None:
        if not self.closed:
            self.closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._deadlines = []
            if self.transport is not None:
                self.transport.close()
            self.client._forget(self)
            self.resume_writing()
        pending, self.pending = self.pending, {}
        if pending:
            log.debug("%s: %s; failing %d pending calls", self.client.name, reason, len(pending))
        for fut in pending.values():
            if not fut.done():
                err = ConnectError(reason, addr=self.addr)
                err.__cause__ = cause
                fut.set_exception(err)


class AsyncRemotingClient:
    """Remoting client on the running event loop (``NettyRemotingClient``, asyncio flavour).

    ``connect_timeout_ms`` defaults to 3000 (``NettyClientConfig.connectTimeoutMillis``);
    ``max_frame_length`` to 16 MiB. Without ``request_handler`` non-oneway server requests are
    answered REQUEST_CODE_NOT_SUPPORTED. The client binds to the loop of its first call and
    must only be used from that loop.
    """

    def __init__(
        self,
        *,
        name: str = "rocketq-aio",
        connect_timeout_ms: int = 3000,
        request_handler: AsyncRequestHandler | None = None,
        request_hooks: Sequence[RequestHook] = (),
        ssl_context: ssl.SSLContext | None = None,
        max_frame_length: int = MAX_FRAME_LENGTH,
    ) -> None:
        if connect_timeout_ms <= 0:
            raise ClientError(f"connect_timeout_ms must be > 0, got {connect_timeout_ms}")
        self.name = name
        self._connect_timeout_s = connect_timeout_ms / 1000.0
        self.request_handler = request_handler
        self._hooks: list[RequestHook] = list(request_hooks)
        self._ssl = ssl_context
        self._max_frame_length = max_frame_length
        self._conns: dict[str, _Connection] = {}
        self._connecting: dict[str, asyncio.Future[_Connection]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._opaques = RequestIdCounter()
        self._closed = False

    # ================================================================== lifecycle
    def add_request_hook(self, hook: RequestHook) -> None:
        """Run ``hook(request)`` on every later outgoing request, before it is encoded."""
        self._hooks.append(hook)

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        """Close every connection (pending calls fail with ConnectError) and cancel the
        handler tasks; idempotent."""
        if self._closed:
            return
        self._closed = True
        for fut in list(self._connecting.values()):
            fut.cancel()
        for conn in list(self._conns.values()):
            conn.close("remoting client closed")
        tasks = [t for t in self._handlers if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        # let the transports run their close callbacks (connection_lost) on this loop
        await asyncio.sleep(0)

    async def __aenter__(self) -> AsyncRemotingClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ================================================================== public API
    async def invoke(self, addr: str, request: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        """Send ``request`` and await its response (any code).

        :class:`ConnectError` when the connection cannot be made or is lost,
        :class:`RequestTimeoutError` after ``timeout_ms`` (connect time included). Cancelling
        the caller forgets the call (a late response is dropped).
        """
        return await self._invoke(addr, request, None, 0, request.code, timeout_ms)

    @property
    def signs_requests(self) -> bool:
        """Whether rpc hooks see every request: then requests must be sent as
        :class:`RemotingCommand` objects (:meth:`invoke`), not as frames."""
        return bool(self._hooks)

    def next_opaque(self) -> int:
        """A fresh opaque for a frame the caller encodes itself (:meth:`invoke_frame`)."""
        return self._opaques.next()

    async def invoke_frame(
        self, addr: str, frame: bytes, opaque: int, code: int, timeout_ms: int
    ) -> RemotingCommand:
        """:meth:`invoke` of a request the caller encoded already (``frame``, sent with
        ``opaque`` from :meth:`next_opaque`; ``code`` only names it in a timeout error): the
        rpc hooks do not see it, so callers use it only when :attr:`signs_requests` is
        False. Same errors as :meth:`invoke`."""
        return await self._invoke(addr, None, frame, opaque, code, timeout_ms)

    async def _invoke(
        self,
        addr: str,
        request: RemotingCommand | None,
        frame: bytes | None,
        opaque: int,
        code: int,
        timeout_ms: int,
    ) -> RemotingCommand:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000.0
        conn = self._conns.get(addr)
        if conn is None or conn.closed:
            conn = await self._connection(addr, timeout_ms / 1000.0)
        if request is not None:
            opaque = self._prepare(addr, request)
            frame = request.encode()
        assert frame is not None
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        conn.write(frame)  # before the call is pending: written at once when it is the only one
        pending = conn.pending
        pending[opaque] = fut
        conn.watch(loop, deadline, opaque, fut, timeout_ms, code)
        try:
            if conn.paused:  # backpressure: the kernel is not taking our writes
                await conn.drained()
            return await fut
        finally:
            if not fut.done():  # the caller was cancelled
                pending.pop(opaque, None)

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        """Send ``request`` with the ONEWAY flag (``markOnewayRPC``); waits only while the
        connection's write buffer is full."""
        conn = self._conns.get(addr)
        if conn is None or conn.closed:
            conn = await self._connection(addr, self._connect_timeout_s)
        request.flag |= FLAG_ONEWAY
        self._prepare(addr, request)
        conn.write(request.encode())
        await conn.drained()

    def is_connected(self, addr: str) -> bool:
        conn = self._conns.get(addr)
        return conn is not None and not conn.closed

    def close_connection(self, addr: str) -> None:
        """Close the connection to ``addr`` (if any); its pending calls fail with ConnectError."""
        conn = self._conns.get(addr)
        if conn is not None:
            conn.close("connection closed by the client")

    # ================================================================== internals
    def _prepare(self, addr: str, request: RemotingCommand) -> int:
        for hook in self._hooks:
            hook(request)
        opaque = self._opaques.next()
        request.opaque = opaque
        return opaque

    async def _connection(self, addr: str, timeout_s: float) -> _Connection:
        if self._closed:
            raise ClientError(f"remoting client {self.name} is closed")
        pending = self._connecting.get(addr)
        if pending is None:
            pending = asyncio.get_running_loop().create_future()
            self._connecting[addr] = pending
            try:
                conn = await self._connect(addr)
            except BaseException as exc:
                if not pending.done():
                    if isinstance(exc, Exception):
                        pending.set_exception(exc)
                        pending.exception()  # marked retrieved: only other waiters see it
                    else:
                        pending.cancel()
                raise
            finally:
                self._connecting.pop(addr, None)
            pending.set_result(conn)
            return conn
        try:
            return await wait_for(asyncio.shield(pending), max(timeout_s, 0.001))
        except asyncio.TimeoutError:
            raise RequestTimeoutError(f"connect to {addr} still in progress", addr=addr) from None

    async def _connect(self, addr: str) -> _Connection:
        host, port = parse_addr(addr)
        loop = asyncio.get_running_loop()
        try:
            _, conn = await wait_for(
                loop.create_connection(lambda: _Connection(self, addr, self._max_frame_length), host, port),
                self._connect_timeout_s,
            )
        except asyncio.TimeoutError:
            raise ConnectError(
                f"connect timeout {int(self._connect_timeout_s * 1000)}ms", addr=addr
            ) from None
        except OSError as exc:
            raise ConnectError(f"connect failed: {exc}", addr=addr) from exc
        if self._closed:
            conn.close("remoting client closed")
            raise ClientError(f"remoting client {self.name} is closed")
        self._conns[addr] = conn
        log.debug("%s: connected to %s", self.name, addr)
        return conn

    def _forget(self, conn: _Connection) -> None:
        if self._conns.get(conn.addr) is conn:
            del self._conns[conn.addr]

    def _spawn_handler(self, conn: _Connection, cmd: RemotingCommand) -> None:
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._handle_request(conn, cmd))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def _handle_request(self, conn: _Connection, cmd: RemotingCommand) -> None:
        """Answer one request the server sent (``NettyRemotingAbstract.processRequestCommand``)."""
        handler = self.request_handler
        outcome: RemotingCommand | Exception | None
        if handler is None:
            if cmd.flag & FLAG_ONEWAY:
                return
            frame = machinery_response(
                cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported"
            ).encode()
        else:
            try:
                outcome = await handler(cmd, conn.addr)
            except Exception as exc:
                log.exception("%s: request handler failed on code %d", self.name, cmd.code)
                outcome = exc
            answer = answer_frame(cmd, outcome)
            if answer is None:
                return
            frame = answer
        if not conn.closed and conn.transport is not None:
            conn.write(frame)
