"""The server side of the remoting layer: accept, decode, dispatch by request code, answer.

Mirrors ``org.apache.rocketmq.remoting.netty.NettyRemotingServer`` with the request half of
``NettyRemotingAbstract`` and ``NettyRequestProcessor``, on :mod:`asyncio`.

Invariants:

* Everything but :meth:`Channel.write`, :meth:`Channel.invoke_oneway` and
  :meth:`Channel.close` runs on the server's event loop; those three are thread-safe so a
  processor may answer later from any thread (held long-poll pulls).
* Each request runs in its own task: responses leave in completion order, matched by the
  peer through ``opaque``. The server copies opaque, response flag and the request's
  serialize type onto whatever a processor returns (the 4.9.x processor callback).
* Frames written in one loop iteration leave in one ``send`` per connection.
* A malformed frame (any header the decoder cannot take: bad JSON, 1e999, deep nesting,
  values outside Java's types), an over-long length prefix, an idle period of
  ``idle_timeout_s`` or a frame that does not complete within ``frame_read_timeout_s`` of
  its first byte closes *that* connection only, with one rate-limited WARNING line and no
  traceback; a processor exception becomes a SYSTEM_ERROR answer and the connection stays
  up (a typed :class:`~rocketq.errors.RocketqError` is logged as a WARNING without
  traceback, anything else is a bug and logged with one).
* Memory held for unfinished frames is bounded: a frame of at least
  :data:`~rocketq.protocol.frame.LARGE_FRAME` bytes reserves its announced length from
  one server-wide budget of ``max_pending_frame_bytes`` when its length prefix arrives;
  a frame that does not fit is refused by closing its connection. Smaller frames are held
  at most one per connection. So the heap held for unfinished frames stays under
  ``max_pending_frame_bytes + connections x (LARGE_FRAME + 256 KiB read chunk)``
  (256 MiB + 384 KiB per connection by default).
* With a request validator installed (:meth:`RemotingServer.set_request_validator`, the
  broker's and name server's ACL), every request that has a processor is checked first
  (Java's server RPC hook ``doBeforeRequest``); a refusal is answered (unless oneway) and the
  processor never runs. Without one, dispatch pays a single attribute test.
* TLS (:meth:`RemotingServer.enable_tls`): in permissive and enforcing modes each accepted
  connection is held, unread, until its first byte can be peeked (``HandshakeHandler``):
  0x16 starts a TLS handshake, anything else is served plain (permissive) or disconnected
  (enforcing). Bytes are never consumed by the peek, so both paths see the whole stream.
* Oneway requests never get the processor's response. As in Java 4.9.x, the answers the
  server machinery writes itself (request code not supported, [REJECTREQUEST]) go out even
  for oneway requests and use the default serialize type, JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable, Coroutine, Generator, Sequence
from typing import Any, Final, Protocol, TypeVar, cast

from rocketq.common.log_limiter import LogLimiter
from rocketq.errors import ConnectError, ProtocolError, RequestTimeoutError, RocketqError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frame import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    LARGE_FRAME,
    MAX_FRAME_LENGTH,
    FrameDecoder,
    RemotingCommand,
)
from rocketq.remoting.helper import RequestIdCounter, exception_desc, machinery_response
from rocketq.remoting.tls import TLS_HANDSHAKE_BYTE, TlsMode

__all__ = [
    "DEFAULT_FRAME_READ_TIMEOUT_S",
    "DEFAULT_MAX_PENDING_FRAME_BYTES",
    "Channel",
    "ChannelListener",
    "DeferredResponse",
    "ImmediateHandler",
    "LoopThread",
    "RemotingServer",
    "RequestProcessor",
    "RequestValidator",
    "ServerThread",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: A frame must be complete this long after its first byte arrived (no Java counterpart:
#: Netty holds a partial frame until the channel goes idle, which a trickle never does).
DEFAULT_FRAME_READ_TIMEOUT_S: Final = 30.0
#: Server-wide budget for the announced lengths of unfinished large frames.
DEFAULT_MAX_PENDING_FRAME_BYTES: Final = 256 * 1024 * 1024

#: Called with the channel that connected or closed (``ChannelEventListener``).
ChannelListener = Callable[["Channel"], None]
#: ``(remote "ip:port", request) -> None`` to go on, or the refusal to answer with
#: (the server RPC hook of the ACL: ``PlainAccessValidator``).
RequestValidator = Callable[[str, RemotingCommand], RemotingCommand | None]

#: ``(channel, request) ->`` the answer now (a response, or None for none), a
#: :class:`DeferredResponse` that a callback on the loop completes later, or a coroutine for an
#: answer that must wait otherwise (run as :meth:`RequestProcessor.process`'s would be): a
#: processor's request path without a coroutine per request when it needs none
#: (``RemotingServer.register_processor(..., immediate=...)``).
ImmediateHandler = Callable[
    ["Channel", RemotingCommand],
    "RemotingCommand | DeferredResponse | Coroutine[Any, Any, RemotingCommand | None] | None",
]


class DeferredResponse:
    """An immediate handler's answer given later, on the loop thread, by whatever completes
    it: no future, no task and no loop iteration of its own. The handler returns it, the
    server binds it to the request, and :meth:`answer` (a response, or None for none) or
    :meth:`fail` (answered as the handler's exception would be) writes the answer at once.
    Completed before the server bound it, it answers at the binding; the first completion
    wins, later ones are ignored. Never completed (the server shut down meanwhile), it
    answers nothing."""

    __slots__ = ("_channel", "_cmd", "_outcome", "_server", "_waiter")

    def __init__(self) -> None:
        self._server: RemotingServer | None = None
        self._channel: Channel | None = None
        self._cmd: RemotingCommand | None = None
        self._outcome: tuple[RemotingCommand | None, Exception | None] | None = None
        self._waiter: asyncio.Future[RemotingCommand | None] | None = None

    def answer(self, response: RemotingCommand | None) -> None:
        """Complete with ``response`` (loop thread)."""
        self._complete(response, None)

    def fail(self, exc: Exception) -> None:
        """Complete with the error ``exc`` (loop thread)."""
        self._complete(None, exc)

    def _complete(self, response: RemotingCommand | None, exc: Exception | None) -> None:
        if self._outcome is not None:
            return
        self._outcome = (response, exc)
        server = self._server
        if server is not None:
            server._answer_deferred(self)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            if exc is not None:
                waiter.set_exception(exc)
            else:
                waiter.set_result(response)

    def bind(self, server: RemotingServer, channel: Channel, cmd: RemotingCommand) -> None:
        """The server's: the request this answers (answered now if completed already)."""
        self._server = server
        self._channel = channel
        self._cmd = cmd
        if self._outcome is not None:
            server._answer_deferred(self)

    async def wait(self) -> RemotingCommand | None:
        """The answer, awaited (a caller of ``process`` rather than the server); raises the
        error :meth:`fail` gave."""
        outcome = self._outcome
        if outcome is None:
            waiter = self._waiter
            if waiter is None:
                waiter = self._waiter = asyncio.get_running_loop().create_future()
            return await waiter
        response, exc = outcome
        if exc is not None:
            raise exc
        return response


class RequestProcessor(Protocol):
    """Handles the requests of one or more codes (``NettyRequestProcessor``).

    ``process`` returns the response, or None for no response now (oneway requests, or a
    processor that answers later with :meth:`Channel.write`, e.g. a held long-poll pull).
    It runs on the event loop, so whatever it does inline holds every connection of the
    server. The broker's processors run store work inline on purpose: a put copies into the
    mapped commit log and a pull slices it (microseconds, no disk wait; SYNC_FLUSH waits are
    awaited, not blocked on). The bound is the page cache: a page fault on a mapped file under
    memory pressure or a new commit-log segment stalls the loop for as long as it takes.
    Work that waits on the network or the disk by design (name-server registration, file
    persistence) is offloaded by the processor to an executor. Java's send and pull thread
    pools were measured as an alternative and cost throughput (``benchmarks/README.md``,
    "The broker's event loop"). A processor may also
    define ``reject_request() -> bool`` (``NettyRequestProcessor.rejectRequest``): True makes
    the server answer SYSTEM_BUSY without calling ``process``.
    """

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None: ...


#: Writes of at least this many bytes are not joined with their neighbours (Channel._flush).
_COALESCE_MAX = 64 * 1024


class Channel:
    """One accepted connection (Netty's ``Channel`` as RocketMQ's processors see it).

    ``attributes`` is a free slot for the broker (client id, ...).
    """

    def __init__(self, server: RemotingServer, transport: asyncio.Transport) -> None:
        self._server = server
        self._transport = transport
        self._loop = server.loop
        self.remote_addr = _format_addr(transport.get_extra_info("peername"))
        self.local_addr = _format_addr(transport.get_extra_info("sockname"))
        self.attributes: dict[str, object] = {}
        self.closed = False
        self._out: list[bytes | memoryview] = []
        self._batching = False
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self.last_active = self._loop.time()
        #: Loop time the unfinished frame being read started at; -1.0 when none is.
        self.frame_started = -1.0
        #: Bytes of the server's pending-frame budget this channel holds (its large frame).
        self.reserved = 0

    def __repr__(self) -> str:
        return f"<Channel {self.remote_addr} -> {self.local_addr} closed={self.closed}>"

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The server's event loop, which reads and writes this channel."""
        return self._loop

    # ------------------------------------------------------------------ writing
    def write(self, cmd: RemotingCommand) -> None:
        """Write one command as is (thread-safe). Dropped if the channel is closed.

        Used for late responses: the caller sets opaque, flag and serialize type.
        """
        self._send(*cmd.encode_parts())

    def write_with_body(self, cmd: RemotingCommand, body: Sequence[bytes | memoryview]) -> None:
        """Write ``cmd`` with the concatenation of ``body`` as its body, without joining the
        parts (thread-safe; Netty's ``FileRegion``, e.g. ``ManyMessageTransfer`` of stored
        records). ``cmd.body`` is ignored. The parts must stay unchanged until written."""
        self._send(cmd.encode_head(sum(len(part) for part in body)), *body)

    def _send(self, head: bytes, *body: bytes | memoryview) -> None:
        """Queue an encoded frame from any thread (on the loop thread: at once)."""
        if threading.get_ident() == self._server._loop_ident:
            self._write_parts(head, *body)
        elif not self.closed:
            try:
                self._loop.call_soon_threadsafe(self._write_parts, head, *body)
            except RuntimeError:
                log.debug("%s: loop closed, frame dropped", self)

    def _write_parts(self, head: bytes, *body: bytes | memoryview) -> None:
        self._write_bytes(head)
        for part in body:
            if part:
                self._write_bytes(part)

    def _write_bytes(self, data: bytes | memoryview) -> None:
        if self.closed:
            log.debug("%s: closed, frame of %d bytes dropped", self, len(data))
            return
        out = self._out
        if not out and not self._batching:
            self._loop.call_soon(self._flush)
        out.append(data)

    def _flush(self) -> None:
        out = self._out
        if not out or self.closed:
            out.clear()
            return
        self.last_active = self._loop.time()
        write = self._transport.write
        if len(out) == 1:
            write(out[0])
        elif sum(map(len, out)) < _COALESCE_MAX:
            write(b"".join(out))
        else:
            # Large parts (pull bodies) go to the socket as they are: joining them would copy
            # megabytes once more. Small neighbours are still coalesced into one write.
            small: list[bytes | memoryview] = []
            for part in out:
                if len(part) < _COALESCE_MAX:
                    small.append(part)
                    continue
                if small:
                    write(small[0] if len(small) == 1 else b"".join(small))
                    small = []
                write(part)
            if small:
                write(small[0] if len(small) == 1 else b"".join(small))
        out.clear()

    # ------------------------------------------------------------------ server -> client
    async def invoke(self, request: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        """Send a request to the peer and await its response (on the server's loop).

        Raises :class:`RequestTimeoutError` or :class:`ConnectError` (channel closed).
        """
        if self.closed:
            raise ConnectError("channel closed", addr=self.remote_addr)
        opaque = self._server._next_opaque()
        request.opaque = opaque
        data = request.encode()
        fut: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self._pending[opaque] = fut
        try:
            self._write_bytes(data)
            return await asyncio.wait_for(fut, timeout_ms / 1000.0)
        except asyncio.TimeoutError:
            raise RequestTimeoutError(
                f"wait response timeout {timeout_ms}ms, code {request.code}, opaque {opaque}",
                addr=self.remote_addr,
            ) from None
        finally:
            self._pending.pop(opaque, None)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send a oneway request to the peer (thread-safe; ``markOnewayRPC``)."""
        request.flag |= FLAG_ONEWAY
        request.opaque = self._server._next_opaque()
        self.write(request)

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Close the connection (thread-safe); listeners hear of it on the loop."""
        if threading.get_ident() == self._server._loop_ident:
            self._close_now()
        else:
            # A closed loop means a closed transport already.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._close_now)

    def _close_now(self) -> None:
        if not self._transport.is_closing():
            self._flush()
            self._transport.close()

    def _on_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        self._out.clear()
        while self._pending:
            _, fut = self._pending.popitem()
            if not fut.done():
                err = ConnectError("channel closed", addr=self.remote_addr)
                err.__cause__ = exc
                fut.set_exception(err)
        if not self._lost.done():
            self._lost.set_result(None)

    # ------------------------------------------------------------------ reading (the protocol's calls)
    def received(self) -> None:
        """Bytes arrived: the channel is active now (its idle clock restarts)."""
        self.last_active = self._loop.time()

    def hold_writes(self) -> None:
        """Queue what is written until :meth:`release_writes` (one chunk's answers, one send)."""
        self._batching = True

    def release_writes(self) -> None:
        """End :meth:`hold_writes`: send what was queued meanwhile."""
        self._batching = False
        if self._out:
            self._flush()

    def abort(self) -> None:
        """Close at once and refuse further writes (a peer that sent a malformed frame)."""
        self._close_now()
        self.closed = True

    def on_lost(self, exc: BaseException | None) -> None:
        """The connection is gone: pending invokes fail with ConnectError, writes are dropped."""
        self._on_lost(exc)

    def on_response(self, cmd: RemotingCommand) -> None:
        """A response from the peer to one of this channel's :meth:`invoke` calls."""
        self._on_response(cmd)

    def _on_response(self, cmd: RemotingCommand) -> None:
        fut = self._pending.pop(cmd.opaque, None)
        if fut is None:
            # NettyRemotingAbstract.processResponseCommand: unknown opaque -> dropped.
            log.debug("%s: response with unknown opaque %d", self, cmd.opaque)
        elif not fut.done():
            fut.set_result(cmd)


def _format_addr(sockaddr: object) -> str:
    # RemotingHelper.parseChannelRemoteAddr: "ip:port".
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        return f"{sockaddr[0]}:{sockaddr[1]}"
    return str(sockaddr)


class _ServerProtocol(asyncio.Protocol):
    __slots__ = ("_channel", "_decoder", "_early", "_server")

    def __init__(self, server: RemotingServer) -> None:
        self._server = server
        self._decoder = FrameDecoder(server.max_frame_length)
        self._channel: Channel | None = None
        # Bytes the TLS layer delivered before connection_made (start_tls hands over the
        # connection only after the handshake, and a request may already be decrypted).
        self._early: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass it
        channel = self._channel = Channel(self._server, transport)
        self._server._on_connect(channel)
        early, self._early = self._early, []
        for data in early:
            self.data_received(data)

    def data_received(self, data: bytes) -> None:
        channel = self._channel
        if channel is None:
            self._early.append(bytes(data))
            return
        if channel.closed:
            return
        channel.received()
        now = channel.last_active
        decoder = self._decoder
        server = self._server
        try:
            commands = decoder.feed(data)
        except Exception as exc:
            # NettyDecoder: a frame it cannot decode closes the channel
            # (RemotingUtil.closeChannel); other connections are untouched. Whatever a
            # hostile header provokes ends here: one WARNING line, no traceback.
            server._refuse(channel, "malformed frame", exc)
            return
        if commands:
            dispatch = server._dispatch
            # Responses produced while this chunk is handled leave together, in one send.
            channel.hold_writes()
            server._in_chunk = True
            try:
                for cmd in commands:
                    if cmd.flag & FLAG_RESPONSE:
                        channel.on_response(cmd)
                    else:
                        dispatch(channel, cmd)
            finally:
                channel.release_writes()
                server._in_chunk = False
                if server._after_chunk:
                    server._run_after_chunk()
        if decoder.buffered:
            # an unfinished frame: its clock starts, and a large one takes from the budget
            if commands or channel.frame_started < 0:
                channel.frame_started = now
            length = decoder.pending_length
            if length != channel.reserved and (length >= LARGE_FRAME or channel.reserved):
                server._reserve(channel, length if length >= LARGE_FRAME else 0)
        elif channel.frame_started >= 0:
            channel.frame_started = -1.0
            if channel.reserved:
                server._reserve(channel, 0)

    def connection_lost(self, exc: Exception | None) -> None:
        channel = self._channel
        if channel is not None:
            channel.on_lost(exc)
            if channel.reserved:
                self._server._reserve(channel, 0)
            self._server._on_close(channel)


class _PeekProtocol(asyncio.Protocol):
    """Holds a new connection until its first byte shows whether it speaks TLS.

    Java's ``HandshakeHandler``: 0x16 (a TLS handshake record) -> TLS; otherwise plain in
    permissive mode, disconnected in enforcing mode. The transport's reading is paused in
    ``connection_made`` (before it ever reads: asyncio adds its reader only after that
    callback, and not while paused) and the byte is peeked (``MSG_PEEK``) through a
    duplicate of the socket's descriptor that the loop watches instead, so nothing is
    consumed before the real protocol (or the TLS layer) takes over. A peer silent for
    ``idle_timeout_s`` is closed.
    """

    def __init__(self, server: RemotingServer) -> None:
        self._server = server
        self._transport: asyncio.Transport | None = None
        self._peeker: socket.socket | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass it
        self._transport = transport
        server = self._server
        server._peeking.add(transport)
        transport.pause_reading()
        fd = transport.get_extra_info("socket").fileno()
        peeker = self._peeker = socket.socket(fileno=os.dup(fd))
        loop = server.loop
        loop.add_reader(peeker.fileno(), self._peek)
        self._timer = loop.call_later(server.idle_timeout_s, self._give_up)

    def _give_up(self) -> None:
        transport = self._transport
        if transport is not None and self._peeker is not None:
            log.info(
                "%s: peer sent nothing for %.1f s, closing it", self._server.name, self._server.idle_timeout_s
            )
            self._finish()
            transport.close()

    def _finish(self) -> None:
        server = self._server
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        peeker, self._peeker = self._peeker, None
        if peeker is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                server.loop.remove_reader(peeker.fileno())
            peeker.close()
        if self._transport is not None:
            server._peeking.discard(self._transport)

    def _peek(self) -> None:
        transport, peeker = self._transport, self._peeker
        if transport is None or peeker is None:
            return
        try:
            first = peeker.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            first = b""
        self._finish()
        server = self._server
        if not first:
            transport.close()
            return
        if first[0] == TLS_HANDSHAKE_BYTE:
            task = server.loop.create_task(self._start_tls(transport))
            server._tasks.add(task)
            task.add_done_callback(server._tasks.discard)
            return
        if server._tls_mode is TlsMode.ENFORCING:
            log.warning(
                "%s: a client from %s intends to connect without TLS while the server enforces it; closing",
                server.name,
                _format_addr(transport.get_extra_info("peername")),
            )
            transport.close()
            return
        protocol = _ServerProtocol(server)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        transport.resume_reading()

    async def _start_tls(self, transport: asyncio.Transport) -> None:
        server = self._server
        assert server._ssl_context is not None
        protocol = _ServerProtocol(server)
        try:
            tls_transport = await server.loop.start_tls(
                transport, protocol, server._ssl_context, server_side=True
            )
        except (OSError, ssl.SSLError, ConnectionError, asyncio.TimeoutError) as exc:
            log.warning("%s: TLS handshake failed: %s", server.name, exc)
            transport.close()
            return
        if tls_transport is None:
            transport.close()
            return
        protocol.connection_made(tls_transport)

    def data_received(self, data: bytes) -> None:  # pragma: no cover - reading is paused
        log.debug("%s: data before the peek decided, %d bytes", self._server.name, len(data))

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish()


class _Route:
    """How one request code is served: its processor, the processor's ``reject_request``
    (None when it defines none) and its :data:`ImmediateHandler` (None: ``process``)."""

    __slots__ = ("immediate", "processor", "reject")

    def __init__(self, processor: RequestProcessor, immediate: ImmediateHandler | None) -> None:
        self.processor = processor
        self.immediate = immediate
        self.reject: Callable[[], bool] | None = getattr(processor, "reject_request", None)


class _Resumed:
    """Awaitable that carries on a processor coroutine which was started by hand.

    ``RemotingServer._dispatch`` runs ``process`` eagerly; when it suspends, this hands the
    future it is waiting on to a task and relays every later send/throw into the coroutine
    (what ``yield from`` does, minus the first ``send``). asyncio 3.12's eager tasks do the
    same; rocketq supports 3.10.
    """

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, RemotingCommand | None], first: object) -> None:
        self._coro = coro
        self._first = first

    def __await__(self) -> Generator[Any, Any, RemotingCommand | None]:
        coro = self._coro
        to_yield = self._first
        while True:
            try:
                sent = yield to_yield
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    to_yield = coro.throw(exc)
                except StopIteration as stop:
                    result: RemotingCommand | None = stop.value
                    return result
            else:
                try:
                    to_yield = coro.send(sent)
                except StopIteration as stop:
                    result = stop.value
                    return result


class RemotingServer:
    """An asyncio remoting server (``NettyRemotingServer``).

    Defaults: ``host`` 127.0.0.1, ``port`` 0 (OS-assigned; see :attr:`port` after
    :meth:`start`), ``max_frame_length`` 16 MiB (``NettyDecoder``), ``idle_timeout_s`` 120
    (``NettyServerConfig.serverChannelMaxIdleTimeSeconds``), ``frame_read_timeout_s``
    :data:`DEFAULT_FRAME_READ_TIMEOUT_S` and ``max_pending_frame_bytes``
    :data:`DEFAULT_MAX_PENDING_FRAME_BYTES` (see the module docstring for both).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        name: str = "server",
        max_frame_length: int = MAX_FRAME_LENGTH,
        idle_timeout_s: float = 120.0,
        frame_read_timeout_s: float = DEFAULT_FRAME_READ_TIMEOUT_S,
        max_pending_frame_bytes: int = DEFAULT_MAX_PENDING_FRAME_BYTES,
    ) -> None:
        if idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0, got {idle_timeout_s}")
        if frame_read_timeout_s <= 0:
            raise ValueError(f"frame_read_timeout_s must be > 0, got {frame_read_timeout_s}")
        if max_pending_frame_bytes < max_frame_length:
            raise ValueError(
                f"max_pending_frame_bytes ({max_pending_frame_bytes}) must hold one frame of {max_frame_length}"
            )
        self.host = host
        self._port = port
        self.name = name
        self.max_frame_length = max_frame_length
        self.idle_timeout_s = idle_timeout_s
        self.frame_read_timeout_s = frame_read_timeout_s
        self.max_pending_frame_bytes = max_pending_frame_bytes
        #: Bytes of the pending-frame budget held right now (read it on the loop).
        self.pending_frame_bytes = 0
        #: Repeated warnings (bad frames, slow peers, unknown codes): one line per kind and
        #: peer host every 10 s, with a count of those left out.
        self.log_limiter = LogLimiter(log)
        #: code -> how it is served, worked out at registration (no attribute probing per request)
        self._routes: dict[int, _Route] = {}
        self._default_route: _Route | None = None
        self._connect_listeners: list[ChannelListener] = []
        self._close_listeners: list[ChannelListener] = []
        self._channels: set[Channel] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._opaques = RequestIdCounter()
        self._server: asyncio.Server | None = None
        self._idle_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_ident: int | None = None
        self._request_validator: RequestValidator | None = None
        self._tls_mode = TlsMode.DISABLED
        self._ssl_context: ssl.SSLContext | None = None
        self._peeking: set[asyncio.Transport] = set()
        #: True while a chunk of requests read from one connection is being handled
        self._in_chunk = False
        #: run once that chunk has written its answers (:meth:`call_after_chunk`)
        self._after_chunk: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ configuration
    def register_processor(
        self, code: int, processor: RequestProcessor, *, immediate: ImmediateHandler | None = None
    ) -> None:
        """Route requests with ``code`` to ``processor`` (``registerProcessor``).

        ``immediate``: the processor's handler that answers without a coroutine when it can
        (:data:`ImmediateHandler`); the server then calls it instead of ``process``."""
        self._routes[int(code)] = _Route(processor, immediate)

    def register_default_processor(self, processor: RequestProcessor) -> None:
        """Route every code without its own processor here (``registerDefaultProcessor``)."""
        self._default_route = _Route(processor, None)

    def call_after_chunk(self, callback: Callable[[], None]) -> bool:
        """Run ``callback`` on the loop as soon as the chunk of requests being handled now has
        written its answers, in the same loop iteration (e.g. a held pull woken by a send in
        that chunk, answered right after the send's ack). Returns False, and keeps nothing,
        when no chunk is being handled (the caller is not inside a request): the caller
        schedules the callback itself. Loop thread only."""
        if not self._in_chunk:
            return False
        self._after_chunk.append(callback)
        return True

    def _run_after_chunk(self) -> None:
        callbacks, self._after_chunk = self._after_chunk, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("%s: a callback after a request chunk failed", self.name)

    def set_request_validator(self, validator: RequestValidator | None) -> None:
        """Check every request with ``validator`` before its processor runs (the ACL hook)."""
        self._request_validator = validator

    def enable_tls(self, mode: TlsMode, ssl_context: ssl.SSLContext | None) -> None:
        """Serve TLS as ``mode`` says (``tls.server.mode``); call before :meth:`start`."""
        if mode is not TlsMode.DISABLED and ssl_context is None:
            raise ValueError(f"TLS mode {mode.value} needs an SSL context")
        self._tls_mode = mode
        self._ssl_context = ssl_context

    def add_channel_listener(
        self, on_close: ChannelListener | None = None, *, on_connect: ChannelListener | None = None
    ) -> None:
        """Be told (on the loop) when a channel connects or closes (``ChannelEventListener``).

        ``on_close`` fires once per channel whatever closed it: the peer, an error, idleness
        or :meth:`stop`.
        """
        if on_close is not None:
            self._close_listeners.append(on_close)
        if on_connect is not None:
            self._connect_listeners.append(on_connect)

    # ------------------------------------------------------------------ state
    @property
    def registered_codes(self) -> frozenset[int]:
        """The request codes with a processor of their own (the default one not counted)."""
        return frozenset(self._routes)

    @property
    def port(self) -> int:
        """The bound port (the requested one before :meth:`start`)."""
        return self._port

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the server runs on; available after :meth:`start`."""
        if self._loop is None:
            raise RuntimeError(f"server {self.name} is not started")
        return self._loop

    @property
    def channels(self) -> frozenset[Channel]:
        """The open channels right now (read it on the loop)."""
        return frozenset(self._channels)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Bind and listen; returns once connections are accepted."""
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._loop_ident = threading.get_ident()
        factory: Callable[[], asyncio.Protocol] = lambda: _ServerProtocol(self)  # noqa: E731
        if self._tls_mode is not TlsMode.DISABLED:
            factory = lambda: _PeekProtocol(self)  # noqa: E731
        self._server = await loop.create_server(factory, self.host, self._port, reuse_address=True)
        # uvloop's Server.sockets is a list where typeshed says tuple: read it untyped (mypyc compat)
        listening: Any = self._server
        self._port = listening.sockets[0].getsockname()[1]
        self._idle_task = loop.create_task(self._idle_scan(), name=f"{self.name}-idle")
        log.info("%s: listening on %s:%d", self.name, self.host, self._port)

    async def stop(self) -> None:
        """Stop listening, close every channel, cancel running processors and wait for them."""
        server = self._server
        if server is None:
            return
        self._server = None
        server.close()
        if self._idle_task is not None:
            self._idle_task.cancel()
        for transport in list(self._peeking):
            transport.close()
        self._peeking.clear()
        channels = list(self._channels)
        for channel in channels:
            channel._close_now()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        pending: list[asyncio.Future[Any]] = [*tasks, *(c._lost for c in channels)]
        if self._idle_task is not None:
            pending.append(self._idle_task)
        if pending:
            await asyncio.wait(pending, timeout=5.0)
        # After the channels: from 3.12 on, wait_closed() also waits for every connection.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 5.0)
        self._idle_task = None
        log.info("%s: stopped", self.name)

    # ------------------------------------------------------------------ internals
    def _next_opaque(self) -> int:
        return self._opaques.next()

    def _on_connect(self, channel: Channel) -> None:
        self._channels.add(channel)
        log.debug("%s: connected %s", self.name, channel.remote_addr)
        for listener in self._connect_listeners:
            try:
                listener(channel)
            except Exception:
                log.exception("%s: on_connect listener failed", self.name)

    def _on_close(self, channel: Channel) -> None:
        self._channels.discard(channel)
        log.debug("%s: closed %s", self.name, channel.remote_addr)
        for listener in self._close_listeners:
            try:
                listener(channel)
            except Exception:
                log.exception("%s: on_close listener failed", self.name)

    def _refuse(self, channel: Channel, what: str, detail: object) -> None:
        """Close ``channel`` for ``what`` with one rate-limited WARNING line (no traceback)."""
        host = channel.remote_addr.rpartition(":")[0]
        self.log_limiter.warning(
            (what, host), "%s: %s from %s, closing it: %s", self.name, what, channel.remote_addr, detail
        )
        channel.abort()

    def _reserve(self, channel: Channel, length: int) -> bool:
        """Make ``channel`` hold ``length`` bytes of the pending-frame budget (0 releases);
        False (and the channel refused) when the budget cannot cover it."""
        held = channel.reserved
        total = self.pending_frame_bytes - held + length
        if length > held and total > self.max_pending_frame_bytes:
            self.pending_frame_bytes -= held
            channel.reserved = 0
            self._refuse(
                channel,
                "frame over the pending-frame budget",
                f"{length} bytes announced, {self.pending_frame_bytes} of "
                f"{self.max_pending_frame_bytes} held by unfinished frames",
            )
            return False
        self.pending_frame_bytes = total
        channel.reserved = length
        return True

    def _dispatch(self, channel: Channel, cmd: RemotingCommand) -> None:
        try:
            self._dispatch_one(channel, cmd)
        except Exception as exc:  # a bug in the machinery; the connection stays up
            self._respond_error(channel, cmd, exc)

    def _dispatch_one(self, channel: Channel, cmd: RemotingCommand) -> None:
        route = self._routes.get(cmd.code)
        if route is None:
            route = self._default_route
        if route is None:
            # NettyRemotingAbstract.processRequestCommand: no processor and no default ->
            # REQUEST_CODE_NOT_SUPPORTED, remark with a leading space, written even for oneway.
            remark = f" request type {cmd.code} not supported"
            self.log_limiter.log(
                logging.ERROR, ("unsupported", cmd.code), "%s%s", channel.remote_addr, remark
            )
            channel._write_bytes(
                machinery_response(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark).encode()
            )
            return
        validator = self._request_validator
        if validator is not None:
            try:
                refusal = validator(channel.remote_addr, cmd)
            except Exception as exc:
                self._respond_error(channel, cmd, exc)
                return
            if refusal is not None:
                if not cmd.flag & FLAG_ONEWAY:
                    channel._write_bytes(refusal.encode())
                return
        reject = route.reject
        if reject is not None and reject():
            # NettyRemotingAbstract.processRequestCommand: rejectRequest() -> SYSTEM_BUSY.
            channel._write_bytes(
                machinery_response(
                    cmd,
                    ResponseCode.SYSTEM_BUSY,
                    "[REJECTREQUEST]system busy, start flow control for a while",
                ).encode()
            )
            return
        coro: Coroutine[Any, Any, RemotingCommand | None]
        immediate = route.immediate
        if immediate is not None:
            try:
                outcome = immediate(channel, cmd)
            except Exception as exc:
                self._respond_error(channel, cmd, exc)
                return
            if outcome is None or isinstance(outcome, RemotingCommand):
                self._respond(channel, cmd, outcome)
                return
            if isinstance(outcome, DeferredResponse):
                outcome.bind(self, channel, cmd)
                return
            coro = outcome
        else:
            # Run the processor eagerly: most answer without suspending, and then the
            # response leaves in this very loop iteration with no task created at all.
            coro = route.processor.process(channel, cmd)
        try:
            yielded = coro.send(None)
        except StopIteration as stop:
            self._respond(channel, cmd, stop.value)
            return
        except asyncio.CancelledError:
            log.debug("%s: processor cancelled itself on code %d", self.name, cmd.code)
            return
        except Exception as exc:
            self._respond_error(channel, cmd, exc)
            return
        task = self.loop.create_task(self._finish(channel, cmd, _Resumed(coro, yielded)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish(self, channel: Channel, cmd: RemotingCommand, resumed: _Resumed) -> None:
        try:
            response = await resumed
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._respond_error(channel, cmd, exc)
            return
        self._respond(channel, cmd, response)

    def _answer_deferred(self, deferred: DeferredResponse) -> None:
        """A bound :class:`DeferredResponse` completed: write its answer (or error)."""
        channel, cmd, outcome = deferred._channel, deferred._cmd, deferred._outcome
        if channel is None or cmd is None or outcome is None:
            return
        response, exc = outcome
        if exc is not None:
            self._respond_error(channel, cmd, exc)
        else:
            self._respond(channel, cmd, response)

    def _respond(self, channel: Channel, cmd: RemotingCommand, response: RemotingCommand | None) -> None:
        if response is None or cmd.flag & FLAG_ONEWAY:
            return
        # The processor callback: setOpaque, markResponseType, setSerializeTypeCurrentRPC.
        response.opaque = cmd.opaque
        response.flag |= FLAG_RESPONSE
        response.serialize_type = cmd.serialize_type
        try:
            head, body = response.encode_parts()
        except ProtocolError as exc:
            self._respond_error(channel, cmd, exc)
            return
        channel._write_parts(head, body)

    def _respond_error(self, channel: Channel, cmd: RemotingCommand, exc: Exception) -> None:
        if isinstance(exc, RocketqError):
            # a typed error about the request (bad input): expected, no traceback
            self.log_limiter.warning(
                ("request failed", cmd.code, type(exc)),
                "%s: request code %d from %s refused: %s",
                self.name,
                cmd.code,
                channel.remote_addr,
                exception_desc(exc),
            )
        else:
            log.error(
                "%s: processing request code %d from %s failed",
                self.name,
                cmd.code,
                channel.remote_addr,
                exc_info=exc,
            )
        if not cmd.flag & FLAG_ONEWAY:
            # NettyRemotingAbstract: SYSTEM_ERROR with RemotingHelper.exceptionSimpleDesc(e).
            response = machinery_response(cmd, ResponseCode.SYSTEM_ERROR, exception_desc(exc))
            channel._write_bytes(response.encode())

    async def _idle_scan(self) -> None:
        # IdleStateHandler(0, 0, serverChannelMaxIdleTimeSeconds) + NettyConnectManageHandler:
        # an ALL_IDLE event closes the channel.
        # A frame not complete within frame_read_timeout_s closes the channel too.
        idle = self.idle_timeout_s
        read_timeout = self.frame_read_timeout_s
        period = min(max(min(idle, read_timeout) / 4.0, 0.01), 5.0)
        loop = self.loop
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            limit = now - idle
            frame_limit = now - read_timeout
            for channel in list(self._channels):
                if channel.closed:
                    continue
                if channel.last_active < limit:
                    self.log_limiter.info(
                        ("idle", channel.remote_addr.rpartition(":")[0]),
                        "%s: channel %s idle for %.1f s, closing it",
                        self.name,
                        channel.remote_addr,
                        idle,
                    )
                    channel._close_now()
                elif 0 <= channel.frame_started < frame_limit:
                    self._refuse(
                        channel,
                        "frame not completed in time",
                        f"{read_timeout:.1f} s after its first byte",
                    )


_L = TypeVar("_L", bound="LoopThread")


class LoopThread:
    """Runs an async service on its own event loop in a named thread.

    For tests and for embedding in synchronous programs: :meth:`start` returns once
    ``start_fn()`` completed (re-raising its error, e.g. a bind error), :meth:`stop` awaits
    ``stop_fn()`` and joins the thread; :meth:`run` / :meth:`call` execute on the loop.
    """

    def __init__(
        self,
        start_fn: Callable[[], Coroutine[Any, Any, object]],
        stop_fn: Callable[[], Coroutine[Any, Any, object]],
        *,
        name: str,
    ) -> None:
        self._start_fn = start_fn
        self._stop_fn = stop_fn
        self.name = name
        self._runner: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError(f"{self.name} is not started")
        return self._loop

    def start(self, timeout_s: float = 10.0) -> None:
        """Start the thread and return once the service started (re-raises its error)."""
        if self._runner is not None:
            return
        self._runner = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._runner.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"{self.name} did not start within {timeout_s} s")
        if self._error is not None:
            self._runner.join(timeout_s)
            self._runner = None
            raise self._error

    def run(self, coro: Coroutine[Any, Any, _T], timeout_s: float | None = 10.0) -> _T:
        """Run ``coro`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def call(self, fn: Callable[[], _T], timeout_s: float | None = 10.0) -> _T:
        """Call ``fn`` on the loop and wait for its result."""

        async def _call() -> _T:
            return fn()

        return self.run(_call(), timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the service, end the loop and join the thread."""
        thread, loop = self._runner, self._loop
        if thread is None or loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._stop_fn(), loop).result(timeout_s)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout_s)
            self._runner = None

    def __enter__(self: _L) -> _L:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_fn())
            except BaseException as exc:
                self._error = exc
                return
            finally:
                self._ready.set()
            loop.run_forever()
            # stop() stopped the service first; this covers a loop stopped some other way.
            loop.run_until_complete(self._stop_fn())
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()


class ServerThread(LoopThread):
    """Runs a :class:`RemotingServer` on its own event loop in a named thread."""

    def __init__(self, server: RemotingServer, *, name: str | None = None) -> None:
        super().__init__(server.start, server.stop, name=name or f"{server.name}-loop")
        self.server = server

    @property
    def port(self) -> int:
        return self.server.port
