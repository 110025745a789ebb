"""One connection of :class:`~rocketq.remoting.client.RemotingClient`: socket, opaque table,
outbound queue, read role; and the one-shot slot a sync call waits on.

Mirrors the per-channel state of ``org.apache.rocketmq.remoting.netty.NettyRemotingClient``
(``ChannelWrapper``, the ``responseTable`` of ``NettyRemotingAbstract``) and
``ResponseFuture``'s countdown for sync calls.

Invariants (the client keeps them; these classes only hold the state):

* ``Connection.pending`` maps an opaque to the call waiting for it; whoever pops an entry
  completes that call, exactly once.
* ``Connection.reader`` is the holder of the read role: ``None`` (free: the I/O thread's
  poller watches the socket), :data:`IO_READER` (the I/O thread is reading) or the
  :class:`SyncWaiter` of the sync caller reading; it changes only under ``Connection.lock``,
  and only its holder moves it away from itself. ``followers`` are the sync callers waiting
  for it. Only the holder touches ``decoder``, ``rbuf`` and ``poller``.
* ``Connection.write_lock`` is held by whoever sends on, closes, or (TLS) reads the socket;
  ``lock`` may be taken inside it, never the other way round.
"""

from __future__ import annotations

import collections
import concurrent.futures
import select
import socket
import threading
from typing import Final

from rocketq.protocol.frame import FrameDecoder, RemotingCommand

__all__ = ["IO_READER", "Answered", "Connection", "IoReader", "SyncWaiter", "Waiter"]


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


#: what the pending table holds: the Future of an async call or the waiter of a sync one
Waiter = concurrent.futures.Future[RemotingCommand] | SyncWaiter


#: async calls answered by one read, to complete on the I/O thread
Answered = list[tuple[concurrent.futures.Future[RemotingCommand], RemotingCommand]]


class IoReader:
    """``Connection.reader`` while the I/O thread reads the connection."""


IO_READER: Final = IoReader()


class Connection:
    """One socket to one address; its opaque table, its outbound queue, its read role."""

    __slots__ = (
        "addr",
        "closed",
        "decoder",
        "events",
        "fd",
        "followers",
        "lock",
        "out_buf",
        "out_queue",
        "pending",
        "poller",
        "rbuf",
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
        # thread is reading, a SyncWaiter = that sync caller reads.
        self.reader: SyncWaiter | IoReader | None = None
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

    def __repr__(self) -> str:
        return f"<Connection {self.addr} closed={self.closed} pending={len(self.pending)}>"
