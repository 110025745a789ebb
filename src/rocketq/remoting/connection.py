"""One connection of :class:`~rocketq.remoting.client.RemotingClient`: socket, opaque table,
outbound queue, read role, and the two socket operations (drain the queue, read and decode
frames); and the one-shot slot a sync call waits on.

Mirrors the per-channel state of ``org.apache.rocketmq.remoting.netty.NettyRemotingClient``
(``ChannelWrapper``, the ``responseTable`` of ``NettyRemotingAbstract``) and
``ResponseFuture``'s countdown for sync calls.

Invariants (the client keeps them; these classes only hold the state):

* ``Connection.pending`` maps an opaque to the call waiting for it; whoever pops an entry
  completes that call, exactly once.
* ``Connection.reader`` is the holder of the read role: ``None`` (free: the I/O thread's
  poller watches the socket), :data:`IO_READER` (the I/O thread is reading), the
  :class:`SyncWaiter` of the sync caller reading, or :data:`PARKED` (free, but the poller
  does not watch the socket yet: the last sync caller left it so, and the next one takes it
  without touching the poller; the I/O thread gives it back to the poller after a short
  idle time, and an async call made on it does at once). It changes only under
  ``Connection.lock``, and only its holder moves it away from itself (the I/O thread or an
  async caller moves it away from PARKED). ``followers`` are the sync callers waiting for
  it. Only the holder touches ``decoder``, ``rbuf`` and ``poller``.
* ``Connection.write_lock`` is held by whoever sends on, closes, or (TLS) reads the socket;
  ``lock`` may be taken inside it, never the other way round.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import select
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Final

from rocketq.errors import ProtocolError
from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.remoting import gil_io

__all__ = [
    "BLOCKED",
    "IO_READER",
    "PARKED",
    "Answered",
    "AsyncCall",
    "AsyncCallback",
    "AsyncWaiter",
    "Blocked",
    "Connection",
    "IoReader",
    "Parked",
    "SyncWaiter",
    "Waiter",
]

log = logging.getLogger(__name__)

_RECV_SIZE: Final = 256 * 1024


class Blocked:
    """:meth:`Connection.drain_locked` result: the kernel took only part of the data."""


BLOCKED: Final = Blocked()


class SyncWaiter:
    """A one-shot result slot for :meth:`RemotingClient.invoke_sync`.

    Cheaper than a ``concurrent.futures.Future`` on the hottest path (no Condition, no
    callback list). Its lock is a binary semaphore that another thread releases to say
    "look again": the call is done (result or error set first), or the connection's read
    role was handed to this caller. Completed at most once — whoever pops the pending entry
    completes it.
    """

    __slots__ = ("_error", "_lock", "_result", "done")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._result: RemotingCommand | None = None
        self._error: BaseException | None = None
        self.done = False

    def signal(self) -> None:
        """Wake the caller (once per wait: a second signal before it woke is absorbed)."""
        try:  # noqa: SIM105 - the hot path: cheaper than contextlib.suppress
            self._lock.release()
        except RuntimeError:
            pass  # signalled already and not consumed yet: one wake-up serves both

    def set_result(self, result: RemotingCommand) -> None:
        self._result = result
        self.done = True
        self.signal()

    def set_exception(self, exc: BaseException) -> None:
        self._error = exc
        self.done = True
        self.signal()

    def wait(self, timeout_s: float | None) -> bool:
        """Wait for the next signal (``None``: forever); False on timeout."""
        if timeout_s is None:
            return self._lock.acquire()
        return self._lock.acquire(timeout=max(timeout_s, 0.0))

    def wait_done(self) -> None:
        """Wait until done (a signal consumed earlier, e.g. the read role handed over, may
        have left the lock released: loop until the result or error is really set)."""
        while not self.done:
            self._lock.acquire()

    def result(self) -> RemotingCommand:
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


#: ``(response, None)`` or ``(None, error)``: how an :class:`AsyncCall` completes
AsyncCallback = Callable[[RemotingCommand | None, BaseException | None], None]


class AsyncCall:
    """The pending entry of :meth:`RemotingClient.invoke_async_callback`: a plain callback
    where :meth:`RemotingClient.invoke_async` has a ``concurrent.futures.Future`` (no
    Condition, no callback list: the push consumer's pull sends one per answer).

    Same completion interface as the Future (``set_result`` / ``set_exception``), so the
    answer, a timeout and the loss of the connection complete it as they complete a Future:
    whoever pops the pending entry, exactly once. The callback's own exception is logged,
    never raised into the thread that completed it (as a Future's done-callback).
    """

    __slots__ = ("callback",)

    def __init__(self, callback: AsyncCallback) -> None:
        self.callback = callback

    def set_result(self, result: RemotingCommand) -> None:
        try:
            self.callback(result, None)
        except Exception:
            log.exception("async call callback failed (opaque %d)", result.opaque)

    def set_exception(self, exc: BaseException) -> None:
        try:
            self.callback(None, exc)
        except Exception:
            log.exception("async call callback failed on %r", exc)


#: an async call's pending entry: a Future, or a plain callback
AsyncWaiter = concurrent.futures.Future[RemotingCommand] | AsyncCall

#: what the pending table holds: an async call's entry or the waiter of a sync one
Waiter = concurrent.futures.Future[RemotingCommand] | AsyncCall | SyncWaiter


#: async calls answered by one read, to complete on the I/O thread
Answered = list[tuple[AsyncWaiter, RemotingCommand]]


class IoReader:
    """``Connection.reader`` while the I/O thread reads the connection."""


IO_READER: Final = IoReader()


class Parked:
    """``Connection.reader`` while nobody reads the connection and the poller does not
    watch it either: left so by a sync caller, for the next one (no poller change per call)."""


PARKED: Final = Parked()


class Connection:
    """One socket to one address; its opaque table, its outbound queue, its read role."""

    __slots__ = (
        "addr",
        "closed",
        "decoder",
        "events",
        "fd",
        "followers",
        "hold_gil",
        "lock",
        "out_buf",
        "out_queue",
        "parked_at",
        "pending",
        "poller",
        "rbuf",
        "rbuf_c",
        "reader",
        "sock",
        "tls",
        "write_lock",
    )

    def __init__(self, addr: str, sock: socket.socket, max_frame_length: int, *, tls: bool = False) -> None:
        self.addr = addr
        self.sock = sock
        self.fd = sock.fileno()  # what the poller knows it by (fileno() is -1 once closed)
        # TLS: records are decrypted by the SSL object, so no direct reads into frame buffers.
        self.decoder = FrameDecoder(max_frame_length, direct_large=not tls)
        self.tls = tls
        self.pending: dict[int, Waiter] = {}
        self.out_queue: collections.deque[bytes] = collections.deque()
        # Bytes the kernel did not take yet; only touched under write_lock.
        self.out_buf: memoryview | None = None
        # Held by whoever sends on (or closes) the socket: no send races a close.
        self.write_lock = threading.Lock()
        self.closed = False
        # Guards the read role (reader, followers) and the poller registration (events).
        # Taken inside write_lock, never the other way round.
        self.lock = threading.Lock()
        # The read role: None = free (the poller watches the socket), IO_READER = the I/O
        # thread is reading, a SyncWaiter = that sync caller reads, PARKED = free, unwatched.
        self.reader: SyncWaiter | IoReader | Parked | None = None
        # When the read role was last parked (time.monotonic()).
        self.parked_at = 0.0
        # Sync callers waiting for the role (done ones are skipped when it is handed on).
        self.followers: collections.deque[SyncWaiter] = collections.deque()
        # The poller events registered for the socket (0: not registered).
        self.events = 0
        # Lets a reading caller block until the socket is readable (made on first use).
        self.poller: select.poll | None = None
        # What a read lands in, reused (a fresh 256 KiB bytes per recv costs an mmap, an
        # mremap and a munmap); only the holder of the read role touches it; the decoder
        # copies what it keeps.
        self.rbuf: memoryview | None = None
        # rbuf as libc's recv takes it, when the socket calls keep the GIL
        self.rbuf_c: gil_io.RecvBuffer | None = None
        # The socket's sends and reads keep the GIL (rocketq.remoting.gil_io, opt-in): they
        # never wait, and releasing the GIL around them hands it to another thread the
        # caller must then wait for. Not for TLS (the SSL object makes the calls).
        self.hold_gil = gil_io.ENABLED and not tls

    def __repr__(self) -> str:
        return f"<Connection {self.addr} closed={self.closed} pending={len(self.pending)}>"

    # ------------------------------------------------------------------ socket I/O
    def drain_locked(self) -> OSError | Blocked | None:
        """Send the buffered rest, then all queued frames; the caller holds ``write_lock``.

        Returns None when everything was sent, :data:`BLOCKED` when the kernel buffer filled
        up (the rest is in ``out_buf``), or the ``OSError`` that broke the connection.
        """
        if self.closed:
            self.out_queue.clear()
            self.out_buf = None
            return None
        queue = self.out_queue
        sock = self.sock
        hold_gil = self.hold_gil
        while True:
            buf = self.out_buf
            if buf is None:
                if not queue:
                    return None
                n = len(queue)
                data = queue.popleft() if n == 1 else b"".join([queue.popleft() for _ in range(n)])
                buf = memoryview(data)
            else:
                data = None  # the rest of an earlier frame: through the socket
            try:
                # fileno() read with the GIL held through the call: no close slips between
                sent = gil_io.send(sock.fileno(), data) if hold_gil and data is not None else sock.send(buf)
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                # (TLS: the SSL object wants the very same buffer again, which out_buf keeps.)
                sent = 0
            except OSError as exc:
                self.out_buf = None
                return exc
            if sent < len(buf):
                self.out_buf = buf[sent:]
                return BLOCKED
            self.out_buf = None

    def read(self) -> tuple[list[RemotingCommand], str | None, ProtocolError | None]:
        """One read and its frames decoded (the caller holds the read role): the frames,
        and why the connection must close (with the decoding error behind it), if it must."""
        if self.tls:
            return self._read_tls()
        decoder = self.decoder
        large = decoder.pending_large()  # the rest of a large frame: straight into its buffer
        rbuf = self.rbuf
        if rbuf is None:
            if self.hold_gil:
                self.rbuf_c = gil_io.RecvBuffer(_RECV_SIZE)
                rbuf = self.rbuf = self.rbuf_c.view
            else:
                rbuf = self.rbuf = memoryview(bytearray(_RECV_SIZE))
        rbuf_c = self.rbuf_c
        try:
            if large is None and rbuf_c is not None and self.hold_gil:
                received = gil_io.recv_into(self.sock.fileno(), rbuf_c)
            else:
                received = self.sock.recv_into(rbuf if large is None else large)
        except (BlockingIOError, InterruptedError):
            return [], None, None
        except OSError as exc:
            return [], f"read failed: {exc}", None
        finally:
            if large is not None:
                large.release()
        if not received:
            return [], "connection closed by the server", None
        try:
            return (
                (decoder.filled(received) if large is not None else decoder.feed(rbuf[:received])),
                None,
                None,
            )
        except ProtocolError as exc:
            return [], f"malformed frame: {exc}", exc

    def _read_tls(self) -> tuple[list[RemotingCommand], str | None, ProtocolError | None]:
        """:meth:`read` for TLS: every decrypted byte available, read under the write lock
        (an SSL object is not thread-safe), decoded outside it."""
        chunks: list[bytes] = []
        failure: str | None = None
        with self.write_lock:
            if self.closed:
                return [], None, None
            sock = self.sock
            assert isinstance(sock, ssl.SSLSocket)
            try:
                while True:
                    data = sock.recv(_RECV_SIZE)
                    if not data:
                        failure = "connection closed by the server"
                        break
                    chunks.append(data)
                    if not sock.pending():
                        # Nothing decrypted is left (OpenSSL reads no further ahead than the
                        # record): the rest, if any, is in the kernel, where poll sees it.
                        # Saves the recv that would only raise SSLWantReadError.
                        break
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            except OSError as exc:
                failure = f"read failed: {exc}"
        if not chunks:
            return [], failure, None
        try:
            return self.decoder.feed(b"".join(chunks)), failure, None
        except ProtocolError as exc:
            return [], f"malformed frame: {exc}", exc
