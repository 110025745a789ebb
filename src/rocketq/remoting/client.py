"""The client side of the remoting layer: connections, the opaque table, timeouts.

Mirrors ``org.apache.rocketmq.remoting.netty.NettyRemotingClient`` (and the client half of
``NettyRemotingAbstract``) behind a blocking, thread-safe API.

Threading model (STYLE habit 6):

* Reading a connection is a *role* that one thread holds at a time (leader/follower, per
  connection). A thread blocked in :meth:`RemotingClient.invoke_sync` takes the role when it
  is free and reads and decodes the socket itself: its own response costs no thread hop.
  Every other response it reads completes its caller's call (waking that caller); when its
  own response has arrived it hands the role to another thread waiting in ``invoke_sync`` on
  that connection (a *follower*), or, when none is left, back to the I/O thread.
* One I/O thread per process, ``rocketq-remoting-io`` (:class:`_Reactor`), shared by every
  started client, waits on a :class:`~rocketq.remoting.poller.Poller` (epoll) that watches
  the connections of all of them. It reads the connections no sync caller is reading
  (answers to async calls and long polls, requests the server sends), finishes writes the
  kernel did not take at once and fires async timeouts. The first client's ``start()``
  starts it, the last one's ``close()`` stops it; closing one client closes only its own
  connections. So several clients in one process (a push consumer per
  ``MQClientInstance``, as Java makes them) have their answers read in one wake-up. The poller watches a connection for reading only while the role
  is free: a caller that takes the role drops the read interest (under the connection's
  lock) and gives it back when it hands the role back, so the I/O thread never reads a
  socket a caller reads.
* A sync caller that lets go of the role with no follower and no async call pending *parks*
  it instead (``Connection.reader`` = ``PARKED``): the poller is left as it is, so a stream
  of sync calls costs no poller change per call. The I/O thread hands a connection parked
  for ``_PARK_S`` (20 ms) back to the poller, and an async call on a parked connection does
  at once; so a request the server sends meanwhile waits at most ~2 x 20 ms to be read (the
  I/O thread wakes every ``_PARK_S`` while sync calls go on: a longer period costs less CPU,
  a shorter one answers such requests sooner).
* Writes use flat combining: a caller appends its encoded frame to the connection's queue
  and, if no other thread is writing, sends *everything* queued in one ``send``; frames
  queued meanwhile by other threads ride along. A caller therefore never waits for a
  thread hop to get its request on the wire, and a burst of calls becomes one syscall.
  What the kernel does not take at once stays buffered and the I/O thread finishes it
  when the socket is writable. Write order is the queue order.
* Connecting (name lookup + TCP handshake, ``connect_timeout_ms``) happens in the calling
  thread under a per-address lock, so a slow DNS answer never stalls the I/O thread.
* Requests sent by the server to the client run on a small pool, ``<name>-handler``, so a
  slow handler never stalls I/O (whoever read them, the I/O thread or a sync caller).
* ``concurrent.futures`` done-callbacks of :meth:`RemotingClient.invoke_async`, and the
  callbacks of :meth:`RemotingClient.invoke_async_callback`, run on the I/O thread, also
  when a sync caller read the response (it passes the completion on): keep them short (the
  thread serves every client of the process); :meth:`RemotingClient.invoke_sync` from there raises
  :class:`~rocketq.errors.ClientError` instead of deadlocking.

Invariants:

* One connection per ``"host:port"``, made on first use and made again on the next call
  after it failed (no background reconnect loop).
* Opaques come from one counter per client, wrapping within int32 like Java's
  ``AtomicInteger`` (``RemotingCommand.requestId``). The client writes the opaque into the
  request object it is given: do not send one command object from two threads at once. A
  caller that encodes its own frame (:meth:`RemotingClient.invoke_sync_frame`) takes its
  opaque from :meth:`RemotingClient.next_opaque`.
* Whoever removes an entry from a connection's opaque table completes its call, exactly
  once: the response, a timeout or the loss of the connection.
* At most one thread reads a connection (and feeds its decoder) at a time: the holder of
  its read role, which changes hands only under the connection's lock.
* A lost connection fails all its pending calls with :class:`~rocketq.errors.ConnectError`
  at once; a response whose opaque is unknown is dropped (``processResponseCommand``).
  While a sync caller reads, closing the connection only shuts the socket down (which wakes
  the reader); the reader closes it when it lets go, so its descriptor is never reused
  under it.

Security (optional, both off by default at the cost of one attribute test per call): an
``rpc_hook`` sees every outgoing request before it is encoded (``RPCHook``; the ACL signer),
and an ``ssl_context`` makes every connection TLS. A TLS connection reads under its write
lock (an SSL object must not be used by two threads at once), whichever thread holds its
read role, and does not read straight into large frames' buffers.

Timeout contract: a call that raised :class:`~rocketq.errors.RequestTimeoutError` may still
have been executed by the server. A sync caller waits at most its timeout, whether it reads
the socket itself or waits for another reader.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
import heapq
import itertools
import logging
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Final

from rocketq.errors import (
    ClientError,
    ConnectError,
    IllegalArgumentError,
    RequestTimeoutError,
)
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frame import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    MAX_FRAME_LENGTH,
    RemotingCommand,
)
from rocketq.remoting.connection import (
    BLOCKED,
    IO_READER,
    PARKED,
    Answered,
    AsyncCall,
    AsyncCallback,
    AsyncWaiter,
    Connection,
    SyncWaiter,
    Waiter,
)
from rocketq.remoting.helper import RequestIdCounter, answer_frame, machinery_response, parse_addr
from rocketq.remoting.poller import EVENT_READ, EVENT_WRITE, Poller, new_poller

__all__ = ["IO_THREAD_NAME", "RemotingClient", "RequestHandler", "RpcHook", "run_allowing_hand_off"]

log = logging.getLogger(__name__)

#: ``(request, server address) -> response or None``: requests a server sends to the client.
RequestHandler = Callable[[RemotingCommand, str], RemotingCommand | None]
#: Called with every outgoing request before it is encoded (``RPCHook.doBeforeRequest``),
#: e.g. :class:`rocketq.acl.signing.AclClientRPCHook`, which signs it.
RpcHook = Callable[[RemotingCommand], None]

_HANDLER_THREADS: Final = 4
_HAVE_POLL: Final = hasattr(select, "poll")
_MAX_POLL_MS: Final = 3_600_000  # poll() takes an int of milliseconds; longer waits loop
#: How long a parked read role stays unwatched before the I/O thread watches it again.
_PARK_S: Final = 0.02
_NEVER: Final = float("inf")
#: The name of the process's one remoting I/O thread (:class:`_Reactor`).
IO_THREAD_NAME: Final = "rocketq-remoting-io"
#: A callback run with :func:`run_allowing_hand_off` that holds the I/O thread for one to two
#: of these is stalling every connection of the process: the watchdog hands the loop off.
_STALL_S: Final = 0.01
#: Looks without a watched callback after which the watchdog ends (the next one starts it).
_WATCH_IDLE_LOOKS: Final = 100

#: Per thread: whether a sync call made here on the I/O thread hands the I/O loop to a new
#: thread (:func:`run_allowing_hand_off`) instead of failing.
_io_local = threading.local()


def run_allowing_hand_off(fn: Callable[..., object], /, *args: object) -> None:
    """Run ``fn(*args)`` here; should it make a sync call while this is the remoting I/O
    thread (a push consumer's listener run on the thread that read its pull's answer), a new
    thread takes over the I/O loop first and this one leaves it once ``fn`` returns, instead
    of the call raising :class:`ClientError` (it would wait for an answer only the I/O loop
    reads). Should ``fn`` hold the I/O thread longer than ``_STALL_S`` to twice that
    (it sleeps, waits for a future, computes), the reactor's watchdog hands the loop off the
    same way, so the process's other connections wait no longer than that."""
    local = _io_local
    before = getattr(local, "hand_off", False)
    local.hand_off = True
    reactor = _reactor
    me = threading.get_ident()
    watched = reactor is not None and reactor.ident == me and reactor.hold(me)
    try:
        fn(*args)
    finally:
        local.hand_off = before
        if watched:
            assert reactor is not None
            reactor.unhold(me)


class _Reactor:
    """The I/O thread shared by every started :class:`RemotingClient` of the process.

    Owns the poller (epoll) and the socket pair that wakes it, the task queue run on the
    thread, the async timeouts of every client's calls, and the set of parked read roles it
    looks at every ``_PARK_S``. The poller's entries are ``(client, connection)``: a ready
    connection is read by its own client's code (its handler pool, its close), so clients
    share the thread and nothing else. One reactor serves at a time (:func:`_acquire_reactor`):
    made and started by the first client's ``start()``, stopped and joined by the last one's
    ``close()``; a client started after that gets a fresh one. With four clients in one
    process (four push consumers' instances), four connections' answers are read in one
    wake-up of one thread instead of four threads' wake-ups.
    """

    def __init__(self) -> None:
        self.poller: Poller[tuple[RemotingClient, Connection] | None] = new_poller()
        self.shared = self.poller.shared
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.poller.set(self.wake_r.fileno(), 0, EVENT_READ, None)
        self.wake_pending = False
        self.tasks: collections.deque[Callable[[], None]] = collections.deque()
        # Async timeouts: (deadline, seq, connection, opaque); stale entries are skipped.
        self.timers: list[tuple[float, int, Connection, int]] = []
        self.timer_lock = threading.Lock()
        self.timer_seq = itertools.count()
        self.sleep_until = _NEVER
        self.finished = False
        # Connections whose read role is parked or held by a sync caller since it was
        # parked, with their client; looked at every _PARK_S while any is left (both under
        # timer_lock).
        self.parked: dict[Connection, RemotingClient] = {}
        self.park_check_at = _NEVER
        self.users = 0  # started clients not closed yet (under _reactor_lock)
        self.stopping = False
        #: the thread running the I/O loop now (None for a moment after a hand-off)
        self.ident: int | None = None
        self.thread = threading.Thread(target=self._main, name=IO_THREAD_NAME, daemon=True)
        #: how often the loop moved to a new thread (:meth:`hand_off`)
        self.hand_offs = 0
        #: answers read and not completed yet by the I/O thread's current callbacks
        #: (``RemotingClient._complete_all``): a hand-off passes them on
        self.carry: list[tuple[RemotingClient, collections.deque[tuple[AsyncWaiter, RemotingCommand]]]] = []
        #: the watchdog (:meth:`hold`, running while watched callbacks come): the I/O
        #: thread running one (its ident), how many began, and how often the watchdog
        #: handed the loop off
        self.held_by: int | None = None
        self.held_seq = 0
        self.watch_cond = threading.Condition(threading.Lock())
        self.watchdog: threading.Thread | None = None
        self.stalls = 0

    # ------------------------------------------------------------------ tasks, wake-ups
    def wakeup(self) -> None:
        if not self.wake_pending:
            self.wake_pending = True
            try:
                self.wake_w.send(b"\0")
            except (BlockingIOError, InterruptedError):
                pass  # the pipe is full: the I/O thread is going to wake anyway
            except OSError:
                pass  # closed during shutdown

    def on_io(self, task: Callable[[], None]) -> None:
        """Run ``task`` on the I/O thread (now, if this is the I/O thread; here, if the I/O
        thread has ended: whoever pops a task runs it, so each runs exactly once)."""
        if threading.get_ident() == self.ident:
            task()
            return
        self.tasks.append(task)
        self.wakeup()
        if self.finished:
            self.run_tasks()

    def run_tasks(self, owner: int | None = None) -> None:
        """Run the queued tasks; with ``owner`` (the I/O thread's ident) only while that is
        still the I/O thread: once a task hands the loop off, the rest are the new thread's
        (I/O callbacks run one at a time, on the I/O thread)."""
        tasks = self.tasks
        while owner is None or self.ident == owner:
            try:
                task = tasks.popleft()
            except IndexError:
                return
            try:
                task()
            except Exception:
                log.exception("remoting I/O task failed")

    def add_timer(self, deadline: float, conn: Connection, opaque: int) -> None:
        """Fail the call ``opaque`` on ``conn`` with a timeout at ``deadline`` unless it is
        answered first."""
        with self.timer_lock:
            heapq.heappush(self.timers, (deadline, next(self.timer_seq), conn, opaque))
            wake = deadline < self.sleep_until
            if wake:
                self.sleep_until = deadline
        if wake:
            self.wakeup()

    def park(self, client: RemotingClient, conn: Connection) -> None:
        """Make sure the I/O thread looks at ``conn`` within ``_PARK_S`` (the caller holds
        ``conn.lock`` and has just parked its read role)."""
        with self.timer_lock:
            self.parked[conn] = client
            if self.park_check_at != _NEVER:
                return  # the I/O thread looks at the parked connections every _PARK_S already
            self.park_check_at = check_at = conn.parked_at + _PARK_S
            wake = check_at < self.sleep_until
            if wake:
                self.sleep_until = check_at
        if wake:
            self.wakeup()

    def forget(self, conns: list[Connection]) -> None:
        """Drop the timers and parked entries of ``conns`` (their client closed them)."""
        gone = set(conns)
        with self.timer_lock:
            for conn in conns:
                self.parked.pop(conn, None)
            kept = [t for t in self.timers if t[2] not in gone]
            if len(kept) != len(self.timers):
                heapq.heapify(kept)
                self.timers = kept

    def hand_off(self, owner: int | None = None) -> bool:
        """On the I/O thread, about to block (a sync call of a callback run with
        :func:`run_allowing_hand_off`), or from the watchdog for the I/O thread ``owner``
        held by such a callback: a new thread takes over the loop at once, and the old one
        leaves it as soon as its current callback returns (the poller is level-triggered, so
        what it had not looked at yet is reported to the new thread). True also when the
        thread is not (or no longer) the I/O thread: it may block. False when the reactor is
        stopping."""
        me = threading.get_ident() if owner is None else owner
        with _reactor_lock:  # against _release_reactor: it joins the thread it finds here
            if me != self.ident:
                return True
            if self.stopping:
                return False
            old = self.thread
            thread = threading.Thread(target=self._main, name=IO_THREAD_NAME, daemon=True)
            self.ident = None  # nobody's until the new thread runs: on_io queues and wakes
            self.thread = thread
            self.hand_offs += 1
            # the answers this thread read and has not completed are the new thread's first
            # tasks (the tasks queued already stay queued for it; the events it had not
            # looked at, the level-triggered poller reports again)
            for client, rest in self.carry:
                if rest:
                    self.tasks.appendleft(functools.partial(client._complete_all, list(rest)))
                    rest.clear()
            self.carry = []
            # renamed before the new thread can complete what the old one waits for
            old.name = f"{IO_THREAD_NAME}-handed-off"
            thread.start()
        return True

    # ------------------------------------------------------------------ the watchdog
    def hold(self, me: int) -> bool:
        """The I/O thread ``me`` starts a callback run with :func:`run_allowing_hand_off`:
        the watchdog looks at it (started here if it is not running). False when ``me``
        holds it already (a nested call: the outer one is watched); a holder that is not
        ``me`` was handed off and is no longer the I/O thread."""
        with self.watch_cond:
            if self.held_by == me:
                return False
            self.held_by = me
            self.held_seq += 1
            if self.watchdog is None and not self.stopping:
                self.watchdog = threading.Thread(
                    target=self._watch, name="rocketq-remoting-watchdog", daemon=True
                )
                self.watchdog.start()
        return True

    def unhold(self, me: int) -> None:
        """The callback :meth:`hold` announced returned (after any hand-off: under the
        lock the watchdog hands off with, so it never does once this returned)."""
        with self.watch_cond:
            if self.held_by == me:
                self.held_by = None

    def _watch(self) -> None:
        """Every ``_STALL_S``: a watched callback seen at the previous look too still holds
        the I/O thread, which is handed off (:meth:`hand_off`, for that thread). Ends after
        ``_WATCH_IDLE_LOOKS`` looks without one (the next :meth:`hold` starts another)."""
        cond = self.watch_cond
        seen = -1
        idle = 0
        with cond:
            try:
                while not self.stopping and idle < _WATCH_IDLE_LOOKS:
                    cond.wait(_STALL_S)
                    owner, seq = self.held_by, self.held_seq
                    if owner is None:
                        idle = idle + 1 if seq == seen else 0
                    elif seq == seen:
                        # the same callback at two looks (hand_off leaves a thread that is no
                        # longer the I/O thread, and a stopping reactor, alone)
                        before = self.hand_offs
                        self.hand_off(owner)
                        if self.hand_offs != before:
                            self.stalls += 1
                            log.debug(
                                "a callback held the remoting I/O thread %.0f ms: handed it off",
                                _STALL_S * 1000,
                            )
                        seq = -1
                    else:
                        idle = 0
                    seen = seq
            finally:
                self.watchdog = None

    def stop_watching(self) -> None:
        """Wake the watchdog to end (the reactor is stopping)."""
        with self.watch_cond:
            self.watch_cond.notify_all()

    # ------------------------------------------------------------------ the thread
    def _main(self) -> None:
        me = threading.get_ident()
        self.ident = me
        try:
            self._loop(me)
        except BaseException:
            log.exception("remoting I/O thread crashed")
            raise
        finally:
            if self._runs_on(me):  # not handed off: the reactor stops
                self._shutdown()

    def _runs_on(self, me: int) -> bool:
        """Whether the loop still runs on thread ``me``. A method of its own: in :meth:`_main`,
        after ``self.ident = me``, mypy narrows ``self.ident`` to ``int`` for the rest of the
        function, and the compiled build then reads it as one, raising TypeError when a
        hand-off has just set it to None (seen in a handed-off thread's ``finally``)."""
        return self.ident == me

    def _loop(self, me: int) -> None:
        wait = self.poller.wait
        tasks = self.tasks
        while not self.stopping:
            timeout = self._timer_timeout()
            events = wait(timeout)
            for entry, mask in events:
                if entry is None:
                    self._drain_wakeup()
                    continue
                client, conn = entry
                try:
                    if mask & EVENT_READ:
                        client._on_readable(conn)
                    if mask & EVENT_WRITE and not conn.closed:
                        client._on_writable(conn)
                except Exception as exc:
                    log.exception("%s: error on connection %s", client.name, conn.addr)
                    client._close_connection_now(conn, f"internal error: {exc!r}")
                if self.ident != me:
                    return  # handed off (the new thread reads the rest)
            if tasks:
                self.run_tasks(me)
                if self.ident != me:
                    return
            if self.timers:
                try:
                    self._expire_timers()
                except Exception:
                    log.exception("expiring remoting timers failed")
            if self.park_check_at <= time.monotonic():
                try:
                    self._check_parked()
                except Exception:
                    log.exception("checking parked connections failed")

    def _drain_wakeup(self) -> None:
        try:
            while self.wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        # Clear the flag only after draining, and before the task queue runs: a caller that
        # still saw it set had queued its task already (so it runs now); one that sees it
        # clear sends a fresh byte. Clearing first would let a byte sent meanwhile be drained
        # while the flag stays set, and the next caller would never wake this thread.
        self.wake_pending = False

    def _shutdown(self) -> None:
        with self.timer_lock:
            self.timers.clear()
            self.parked.clear()
        self.poller.close()
        self.wake_r.close()
        self.wake_w.close()
        # Completions passed on by sync readers still run (here, or by whoever queues one
        # from now on): no answered async call is left without its result.
        self.finished = True
        self.run_tasks()

    # ------------------------------------------------------------------ timers
    def _timer_timeout(self) -> float | None:
        with self.timer_lock:
            deadline = self.timers[0][0] if self.timers else _NEVER
            deadline = min(deadline, self.park_check_at)
            self.sleep_until = deadline
        if deadline == _NEVER:
            return None
        return max(0.0, deadline - time.monotonic())

    def _expire_timers(self) -> None:
        now = time.monotonic()
        expired: list[tuple[Connection, int]] = []
        with self.timer_lock:
            timers = self.timers
            while timers and timers[0][0] <= now:
                _, _, conn, opaque = heapq.heappop(timers)
                expired.append((conn, opaque))
            # Entries of calls answered long ago stay until their deadline; compact when
            # they dominate so a fast stream of short calls keeps the heap small.
            if len(timers) > 4096:
                live = [t for t in timers if t[3] in t[2].pending]
                if len(live) * 2 < len(timers):
                    heapq.heapify(live)
                    self.timers = live
        for conn, opaque in expired:
            fut = conn.pending.pop(opaque, None)
            if fut is not None:
                with contextlib.suppress(concurrent.futures.InvalidStateError):
                    fut.set_exception(
                        RequestTimeoutError(f"wait response timeout, opaque {opaque}", addr=conn.addr)
                    )

    def _check_parked(self) -> None:
        """Give back to the poller every connection parked for ``_PARK_S``; keep looking
        every ``_PARK_S`` while any connection is parked or read by a caller."""
        now = time.monotonic()
        with self.timer_lock:
            parked = list(self.parked.items())
        for conn, client in parked:
            client._unpark_if_idle(conn, now)
        with self.timer_lock:
            self.park_check_at = now + _PARK_S if self.parked else _NEVER


_reactor_lock = threading.Lock()
_reactor: _Reactor | None = None


def _forget_reactor_in_child() -> None:
    """A forked child has no I/O thread (only the forking thread survives a fork), and its
    epoll descriptor is the parent's kernel object: clients the child starts get a reactor
    of their own. (Clients started before the fork do not work in the child.)"""
    global _reactor, _reactor_lock
    _reactor = None
    _reactor_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_reactor_in_child)


def _acquire_reactor() -> _Reactor:
    """The running reactor, made and started if there is none; counts one more user."""
    global _reactor
    with _reactor_lock:
        reactor = _reactor
        if reactor is None:
            reactor = _reactor = _Reactor()
            reactor.thread.start()
        reactor.users += 1
        return reactor


def _release_reactor(reactor: _Reactor) -> None:
    """One user less; the last one stops the reactor and joins its thread (unless it is
    that thread, which then ends on its own right after)."""
    global _reactor
    with _reactor_lock:
        reactor.users -= 1
        if reactor.users > 0:
            return
        if _reactor is reactor:
            _reactor = None
        reactor.stopping = True
    reactor.wakeup()
    reactor.stop_watching()
    if threading.get_ident() != reactor.ident:
        reactor.thread.join()


class RemotingClient:
    """Blocking, thread-safe remoting client on the process's I/O thread (``NettyRemotingClient``).

    ``connect_timeout_ms`` defaults to 3000 (``NettyClientConfig.connectTimeoutMillis``);
    ``max_frame_length`` to 16 MiB (``NettyDecoder``). ``request_handler`` answers the
    requests servers send on the client's connections (NOTIFY_CONSUMER_IDS_CHANGED,
    GET_CONSUMER_RUNNING_INFO, ...); without one, non-oneway requests are answered
    REQUEST_CODE_NOT_SUPPORTED. ``rpc_hook`` sees every outgoing request first (sync, async
    and oneway; ``RPCHook.doBeforeRequest``), e.g. to sign it. ``ssl_context`` makes every
    connection TLS (the handshake runs in the connecting thread, within the connect timeout);
    an SSL object is never used by two threads at once: reads take the connection's write
    lock too.
    """

    def __init__(
        self,
        *,
        name: str = "rocketq",
        connect_timeout_ms: int = 3000,
        request_handler: RequestHandler | None = None,
        max_frame_length: int = MAX_FRAME_LENGTH,
        rpc_hook: RpcHook | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if connect_timeout_ms <= 0:
            raise IllegalArgumentError(f"connect_timeout_ms must be > 0, got {connect_timeout_ms}")
        self.name = name
        self._connect_timeout_s = connect_timeout_ms / 1000.0
        self._request_handler = request_handler
        self._max_frame_length = max_frame_length
        self._rpc_hook = rpc_hook
        self._ssl_context = ssl_context

        self._lock = threading.Lock()
        self._conns: dict[str, Connection] = {}
        # Every connection not closed yet, mapped or not: the shutdown sweep closes them all.
        self._live: set[Connection] = set()
        self._connect_locks: dict[str, threading.Lock] = {}
        self._opaques = RequestIdCounter()

        # The process's I/O thread and its poller, taken by start() and let go by close().
        self._reactor: _Reactor | None = None
        self._handler_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._started = False
        self._closed = False
        self._stopping = False

    # ================================================================== lifecycle
    def start(self) -> None:
        """Join the process's I/O thread (``rocketq-remoting-io``, started by the first
        client) and start the handler pool; a second call does nothing."""
        with self._lock:
            if self._closed:
                raise ClientError(f"remoting client {self.name} is closed")
            if self._started:
                return
            self._started = True
            self._handler_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=_HANDLER_THREADS, thread_name_prefix=f"{self.name}-handler"
            )
            self._reactor = _acquire_reactor()

    def close(self) -> None:
        """Close every connection, fail every pending call with ConnectError, let go of the
        I/O thread (the last client stops and joins it) and join the handler pool.

        Idempotent; the process's other clients are not disturbed. Called from the I/O
        thread or a handler thread it cannot join that very thread, which then ends on its
        own right after.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            started = self._started
        reactor = self._reactor
        if not started or reactor is None:
            return
        self._stopping = True
        swept = threading.Event()

        def sweep() -> None:
            # On the I/O thread: no read of these connections runs meanwhile. New ones are
            # not made any more (_closed is set under the same lock _connection adds under).
            try:
                with self._lock:
                    live = list(self._live)
                for conn in live:
                    self._close_connection_now(conn, "remoting client closed")
                reactor.forget(live)
            finally:
                swept.set()

        reactor.on_io(sweep)
        if threading.get_ident() != reactor.ident:
            swept.wait()
        _release_reactor(reactor)
        pool = self._handler_pool
        if pool is not None:
            in_pool = threading.current_thread().name.startswith(f"{self.name}-handler")
            pool.shutdown(wait=not in_pool, cancel_futures=True)

    def __enter__(self) -> RemotingClient:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ================================================================== public API
    def invoke_sync(self, addr: str, request: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        """Send ``request`` and wait for its response (any response code).

        Raises :class:`ConnectError` (cannot connect, or the connection was lost),
        :class:`RequestTimeoutError` after ``timeout_ms`` (connect time included, as
        ``NettyRemotingClient.invokeSync`` counts it), :class:`ClientError` when called on
        the I/O thread or on a closed client.
        """
        frame = self._stamp(request)
        return self.invoke_sync_frame(addr, frame, request.opaque, request.code, timeout_ms)

    @property
    def signs_requests(self) -> bool:
        """Whether an ``rpc_hook`` sees every request: then requests must be sent as
        :class:`RemotingCommand` objects (:meth:`invoke_sync`), not as frames."""
        return self._rpc_hook is not None

    def next_opaque(self) -> int:
        """A fresh opaque for a frame the caller encodes itself (:meth:`invoke_sync_frame`)."""
        return self._opaques.next()

    def invoke_sync_frame(
        self, addr: str, frame: bytes, opaque: int, code: int, timeout_ms: int
    ) -> RemotingCommand:
        """:meth:`invoke_sync` of a request the caller encoded already (``frame``, sent with
        ``opaque`` from :meth:`next_opaque`; ``code`` only names it in a timeout error): the
        ``rpc_hook`` does not see it, so callers use it only when :attr:`signs_requests` is
        False. Same errors and timeout contract as :meth:`invoke_sync`."""
        reactor = self._reactor
        if (
            reactor is not None
            and threading.get_ident() == reactor.ident
            and not (getattr(_io_local, "hand_off", False) and reactor.hand_off())
        ):
            raise ClientError(
                "invoke_sync called on the remoting I/O thread (e.g. from an invoke_async "
                "callback): it would deadlock; use invoke_async or another thread"
            )
        deadline = time.monotonic() + timeout_ms / 1000.0
        conn = self._connection(addr)
        waiter = SyncWaiter()
        # Claimed before the request is written, so its answer never reaches the poller.
        lead = self._claim_read_role(conn, waiter)
        try:
            self._send_frame(conn, frame, opaque, waiter)
            self._await_response(conn, waiter, deadline, lead=lead)
        finally:
            self._leave_read_role(conn, waiter)
        if waiter.done:
            return waiter.result()
        if conn.pending.pop(opaque, None) is None:
            # Completed by a reader at this very moment: it sets the result next.
            waiter.wait_done()
            return waiter.result()
        raise RequestTimeoutError(
            f"wait response timeout {timeout_ms}ms, code {code}, opaque {opaque}",
            addr=addr,
        )

    def invoke_async(
        self, addr: str, request: RemotingCommand, timeout_ms: int
    ) -> concurrent.futures.Future[RemotingCommand]:
        """Send ``request``; the future gets its response (any code).

        Failures before the request is written (connect, closed client, encoding) raise
        here, as Java's ``invokeAsync`` throws; later ones fail the future with
        :class:`RequestTimeoutError` or :class:`ConnectError`. Done-callbacks run on the I/O
        thread: keep them short and never block in them (calling ``invoke_async`` from one
        is fine, but if it has to open a new connection, the connect blocks I/O meanwhile).
        """
        fut: concurrent.futures.Future[RemotingCommand] = concurrent.futures.Future()
        self._invoke_async(addr, request, timeout_ms, fut)
        return fut

    def invoke_async_callback(
        self, addr: str, request: RemotingCommand, timeout_ms: int, callback: AsyncCallback
    ) -> None:
        """:meth:`invoke_async` without a Future: ``callback(response, None)`` or
        ``callback(None, error)`` runs exactly once, on the I/O thread (the answer, a
        :class:`RequestTimeoutError`, a :class:`ConnectError`), as a Future's done-callback
        would; an exception it raises is logged. Failures before the request is written
        raise here, and the callback is then never called. Java's ``invokeAsync`` with its
        ``InvokeCallback``."""
        self._invoke_async(addr, request, timeout_ms, AsyncCall(callback))

    def invoke_async_callback_frame(
        self, addr: str, frame: bytes, opaque: int, timeout_ms: int, callback: AsyncCallback
    ) -> None:
        """:meth:`invoke_async_callback` of a request the caller encoded already (``frame``,
        sent with ``opaque`` from :meth:`next_opaque`): the ``rpc_hook`` does not see it, so
        callers use it only when :attr:`signs_requests` is False. Same contract otherwise."""
        self._invoke_async(addr, None, timeout_ms, AsyncCall(callback), frame, opaque)

    def _invoke_async(
        self,
        addr: str,
        request: RemotingCommand | None,
        timeout_ms: int,
        fut: AsyncWaiter,
        frame: bytes = b"",
        opaque: int = 0,
    ) -> None:
        """Send ``request`` (or, when None, ``frame`` encoded with ``opaque``) and have
        ``fut`` completed by its answer, a timeout or the loss of the connection."""
        self._check_open()
        reactor = self._reactor
        assert reactor is not None  # started
        conn = self._connection(addr)
        deadline = time.monotonic() + timeout_ms / 1000.0
        if request is not None:
            opaque = self._send_request(conn, request, fut)
        else:
            self._send_frame(conn, frame, opaque, fut)
        reader = conn.reader
        if reader is not None and reader is not IO_READER:
            # A sync caller reads, or parked the role: it must be watched for this answer
            # (a caller leaving the role sees this call pending and does not park it).
            with conn.lock:
                if conn.reader is PARKED:
                    conn.reader = None
                    self._apply_interest(conn)
        reactor.add_timer(deadline, conn, opaque)

    def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        """Send ``request`` with the ONEWAY flag (``markOnewayRPC``); nothing is awaited."""
        self._check_open()
        conn = self._connection(addr)
        request.flag |= FLAG_ONEWAY
        frame = self._stamp(request)
        if conn.closed:
            raise ConnectError("connection closed before the oneway request was written", addr=addr)
        self._write(conn, frame)

    def close_connection(self, addr: str) -> None:
        """Close the connection to ``addr`` (if any); its pending calls fail with ConnectError."""
        with self._lock:
            conn = self._conns.pop(addr, None)
        if conn is not None:
            self._on_io(
                functools.partial(self._close_connection_now, conn, "connection closed by the client")
            )

    def is_connected(self, addr: str) -> bool:
        """Whether a live connection to ``addr`` exists right now."""
        conn = self._conns.get(addr)
        return conn is not None and not conn.closed

    # ================================================================== calls
    def _check_open(self) -> None:
        if self._closed or self._stopping:
            raise ClientError(f"remoting client {self.name} is closed")
        if not self._started:
            raise ClientError(f"remoting client {self.name} is not started")

    def _stamp(self, request: RemotingCommand) -> bytes:
        """Give ``request`` a fresh opaque, let the ``rpc_hook`` see it, and encode it."""
        request.opaque = self.next_opaque()
        if self._rpc_hook is not None:
            self._rpc_hook(request)
        return request.encode()

    def _send_request(self, conn: Connection, request: RemotingCommand, fut: Waiter) -> int:
        frame = self._stamp(request)
        self._send_frame(conn, frame, request.opaque, fut)
        return request.opaque

    def _send_frame(self, conn: Connection, frame: bytes, opaque: int, fut: Waiter) -> None:
        """Register ``fut`` for ``opaque``, then write ``frame``."""
        pending = conn.pending
        pending[opaque] = fut
        if conn.closed and pending.pop(opaque, None) is not None:
            # Lost between lookup and registration; the I/O thread's sweep missed this one.
            raise ConnectError("connection closed before the request was written", addr=conn.addr)
        self._write(conn, frame)

    def _connection(self, addr: str) -> Connection:
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        self._check_open()
        with self._lock:
            lock = self._connect_locks.get(addr)
            if lock is None:
                lock = self._connect_locks[addr] = threading.Lock()
        if not lock.acquire(timeout=self._connect_timeout_s):
            raise ConnectError(f"connect timeout {int(self._connect_timeout_s * 1000)}ms", addr=addr)
        try:
            conn = self._conns.get(addr)
            if conn is not None and not conn.closed:
                return conn
            host, port = parse_addr(addr)
            try:
                sock = socket.create_connection((host, port), timeout=self._connect_timeout_s)
            except OSError as exc:
                raise ConnectError(f"connect failed: {exc}", addr=addr) from exc
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = self._ssl_context is not None
            if tls:
                sock = self._tls_handshake(sock, addr)
            sock.setblocking(False)
            conn = Connection(addr, sock, self._max_frame_length, tls=tls)
            with self._lock:
                if self._closed:
                    sock.close()
                    raise ClientError(f"remoting client {self.name} is closed")
                self._conns[addr] = conn
                self._live.add(conn)
            with conn.lock:
                self._apply_interest(conn)
            reactor = self._reactor
            if reactor is not None and not reactor.shared:
                reactor.wakeup()
            log.debug("%s: connected to %s", self.name, addr)
            return conn
        finally:
            lock.release()

    def _tls_handshake(self, sock: socket.socket, addr: str) -> socket.socket:
        """Wrap ``sock`` in TLS and shake hands (blocking, within the connect timeout)."""
        assert self._ssl_context is not None
        try:
            return self._ssl_context.wrap_socket(sock)
        except (OSError, ssl.SSLError) as exc:
            sock.close()
            raise ConnectError(f"TLS handshake failed: {exc}", addr=addr) from exc

    # ================================================================== writing
    def _write(self, conn: Connection, frame: bytes) -> None:
        """Queue one frame and flush the queue unless another thread is flushing it."""
        queue = conn.out_queue
        queue.append(frame)
        lock = conn.write_lock
        # Flat combining: whoever holds the lock sends everything queued. The loop re-checks
        # after release so a frame queued while another thread held the lock is not stranded.
        while queue and conn.out_buf is None and lock.acquire(blocking=False):
            try:
                result = conn.drain_locked()
            finally:
                lock.release()
            if result is BLOCKED:
                # The kernel buffer is full: the I/O thread finishes when writable.
                self._on_io(functools.partial(self._update_interest, conn))
                return
            if result is not None:
                self._on_io(functools.partial(self._close_connection_now, conn, f"write failed: {result}"))
                return

    # ================================================================== read role
    def _claim_read_role(self, conn: Connection, waiter: SyncWaiter) -> bool:
        """Take the connection's read role if it is free (True), else queue as a follower."""
        with conn.lock:
            if conn.closed:
                return False  # the request is refused with ConnectError next
            reader = conn.reader
            if reader is None:
                conn.reader = waiter
                self._apply_interest(conn)  # the poller stops watching this socket for reading
                return True
            if reader is PARKED:
                conn.reader = waiter  # the poller does not watch it already
                return True
            conn.followers.append(waiter)
            return False

    def _await_response(self, conn: Connection, waiter: SyncWaiter, deadline: float, *, lead: bool) -> None:
        """Wait for ``waiter``'s response until ``deadline``, reading the socket whenever
        this thread holds the connection's read role (leader/follower)."""
        if lead:
            self._read_until_done(conn, waiter, deadline)
            return
        while not waiter.done:
            if conn.reader is waiter:  # the role was handed to this caller
                self._read_until_done(conn, waiter, deadline)
                return
            if not waiter.wait(deadline - time.monotonic()):
                return  # timed out

    def _leave_read_role(self, conn: Connection, waiter: SyncWaiter) -> None:
        """Whatever ended the wait: stop following, and hand the role on if this caller
        holds it (only its holder moves it away from itself, so reading ``reader`` unlocked
        is safe)."""
        if conn.reader is not waiter and not waiter.done:
            with conn.lock:
                if conn.reader is not waiter:
                    with contextlib.suppress(ValueError):
                        conn.followers.remove(waiter)
        if conn.reader is waiter:
            with conn.lock:
                self._pass_read_role(conn)

    def _read_until_done(self, conn: Connection, waiter: SyncWaiter, deadline: float) -> None:
        """Read and deliver frames as the holder of the read role until ``waiter`` is done,
        the connection is lost or ``deadline`` passes."""
        poller = conn.poller
        if poller is None and _HAVE_POLL:
            poller = conn.poller = select.poll()
            poller.register(conn.sock, select.POLLIN)
        while not waiter.done and not conn.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if poller is not None:
                ready = bool(poller.poll(min(int(remaining * 1000) + 1, _MAX_POLL_MS)))
            else:  # pragma: no cover - platforms without poll()
                ready = bool(select.select([conn.sock], [], [], remaining)[0])
            if ready:
                try:
                    answered = self._read_once(conn)
                    if answered is not None:
                        # Async done-callbacks run on the I/O thread (the documented contract).
                        self._on_io(functools.partial(self._complete_all, answered))
                except Exception as exc:
                    log.exception("%s: error reading connection %s", self.name, conn.addr)
                    self._close_connection_now(conn, f"internal error: {exc!r}")

    def _pass_read_role(self, conn: Connection) -> None:
        """Hand the read role on (caller holds ``conn.lock`` and the role): to the first
        follower not done yet; else a sync caller parks it when no async call is pending;
        else back to the I/O thread's poller."""
        if conn.closed:
            if conn.reader is not None and conn.reader is not IO_READER:
                conn.sock.close()  # the close left it to the reading caller (shutdown only)
            conn.reader = None
            return
        followers = conn.followers
        while followers:
            nxt = followers.popleft()
            if not nxt.done:
                conn.reader = nxt
                self._apply_interest(conn)
                nxt.signal()
                return
        if conn.reader is not IO_READER and not conn.pending:
            # A sync caller lets go and no async call waits: park the role for the next one.
            conn.reader = PARKED
            conn.parked_at = time.monotonic()
            reactor = self._reactor
            if reactor is not None:
                reactor.park(self, conn)
            return
        conn.reader = None
        self._apply_interest(conn)
        reactor = self._reactor
        if reactor is not None and not reactor.shared and threading.get_ident() != reactor.ident:
            reactor.wakeup()

    def _unpark_if_idle(self, conn: Connection, now: float) -> None:
        """Hand ``conn``'s role back to the poller if parked for ``_PARK_S``, and stop looking
        at it unless it stays parked or read by a sync caller (who parks it again)."""
        with conn.lock:
            reader = conn.reader
            if reader is PARKED:
                if now - conn.parked_at < _PARK_S:
                    return
                conn.reader = None
                self._apply_interest(conn)
            elif isinstance(reader, SyncWaiter) and not conn.closed:
                return
            # (under conn.lock: a caller parking it again adds it back after this)
            reactor = self._reactor
            if reactor is not None:
                with reactor.timer_lock:
                    reactor.parked.pop(conn, None)

    def _apply_interest(self, conn: Connection) -> None:
        """Make the poller watch what ``conn`` needs now (caller holds ``conn.lock``): read
        while the role is free or the I/O thread's, write while bytes wait to be sent."""
        if conn.closed:
            want = 0
        else:
            reader = conn.reader
            want = EVENT_READ if reader is None or reader is IO_READER else 0
            if conn.out_buf is not None or conn.out_queue:
                want |= EVENT_WRITE
        have = conn.events
        if want == have:
            return
        conn.events = want
        reactor = self._reactor
        if reactor is None:
            return
        try:
            reactor.poller.set(conn.fd, have, want, (self, conn))
        except (KeyError, ValueError, OSError, RuntimeError) as exc:
            # The poller or the socket is closed: the connection is going away.
            log.debug("%s: poller update for %s failed: %r", self.name, conn.addr, exc)

    # ================================================================== I/O thread
    def _on_io(self, task: Callable[[], None]) -> None:
        """Run ``task`` on the I/O thread (see :meth:`_Reactor.on_io`)."""
        reactor = self._reactor
        if reactor is None:
            task()  # never started: nothing runs on an I/O thread
        else:
            reactor.on_io(task)

    def _update_interest(self, conn: Connection) -> None:
        with conn.lock:
            self._apply_interest(conn)

    def _on_writable(self, conn: Connection) -> None:
        with conn.write_lock:
            result = conn.drain_locked()
        if result is not None and result is not BLOCKED:
            self._close_connection_now(conn, f"write failed: {result}")
        else:
            self._update_interest(conn)

    def _on_readable(self, conn: Connection) -> None:
        with conn.lock:
            if conn.reader is not None or conn.closed:
                return  # a sync caller took the role after the poller saw the socket
            conn.reader = IO_READER
        try:
            answered = self._read_once(conn)
        finally:
            with conn.lock:
                self._pass_read_role(conn)
        # Done-callbacks run after the role is passed on: one that blocks (it should not)
        # cannot keep the sync callers of this connection from reading.
        if answered is not None:
            self._complete_all(answered)

    def _read_once(self, conn: Connection) -> Answered | None:
        """One read, its sync calls completed and its server requests dispatched (the
        caller holds the read role); returns the answered async calls to complete."""
        commands, failure, cause = conn.read()
        if conn.tls and conn.out_queue:
            # A writer that found the lock held by this read left its frame queued: the
            # poller's write interest makes _on_writable send it (as after any held lock).
            self._on_io(functools.partial(self._update_interest, conn))
        answered = self._deliver(conn, commands) if commands else None
        if failure is not None:
            if cause is not None:
                # NettyDecoder: a bad frame closes the channel (NettyRemotingClient.closeChannel).
                log.warning("%s: malformed frame from %s, closing: %s", self.name, conn.addr, cause)
            self._close_connection_now(conn, failure, cause=cause)
        return answered

    def _deliver(self, conn: Connection, commands: list[RemotingCommand]) -> Answered | None:
        """Complete the sync calls answered by ``commands`` and dispatch the server's
        requests; return the answered async calls, which the caller completes on the I/O
        thread (where their done-callbacks are documented to run)."""
        pending = conn.pending
        answered: Answered | None = None
        for cmd in commands:
            if cmd.flag & FLAG_RESPONSE:
                fut = pending.pop(cmd.opaque, None)
                if fut is None:
                    # NettyRemotingAbstract.processResponseCommand: unknown opaque -> dropped
                    # (timed out already, or an answer to a oneway request).
                    log.debug("%s: response with unknown opaque %d from %s", self.name, cmd.opaque, conn.addr)
                elif isinstance(fut, SyncWaiter):
                    fut.set_result(cmd)
                elif answered is None:
                    answered = [(fut, cmd)]
                else:
                    answered.append((fut, cmd))
            else:
                self._dispatch_request(conn, cmd)
        return answered

    def _complete(self, fut: AsyncWaiter, cmd: RemotingCommand) -> None:
        try:
            fut.set_result(cmd)
        except concurrent.futures.InvalidStateError:
            log.debug("%s: response to cancelled call %d dropped", self.name, cmd.opaque)

    def _complete_all(self, answered: Answered) -> None:
        reactor = self._reactor
        me = threading.get_ident()
        if len(answered) == 1 or reactor is None or reactor.ident != me:
            # one answer (nothing left to pass on), or not on the I/O thread (it has ended)
            for fut, cmd in answered:
                self._complete(fut, cmd)
            return
        # the answers not completed yet, where a callback's hand-off finds them and passes
        # them on to the new I/O thread (it would otherwise run them only once it returns)
        rest = collections.deque(answered)
        reactor.carry.append((self, rest))
        try:
            while rest:
                fut, cmd = rest.popleft()
                self._complete(fut, cmd)
        finally:
            if reactor.ident == me:
                reactor.carry.pop()

    def _dispatch_request(self, conn: Connection, cmd: RemotingCommand) -> None:
        pool = self._handler_pool
        if pool is None:
            return
        try:
            pool.submit(self._handle_request, conn, cmd)
        except RuntimeError:
            log.debug("%s: handler pool shut down, request %d dropped", self.name, cmd.code)

    def _close_connection_now(
        self, conn: Connection, reason: str, cause: BaseException | None = None
    ) -> None:
        """Close the socket and fail its pending calls (I/O thread, or after it ended)."""
        with conn.write_lock, conn.lock:
            conn.closed = True
            conn.out_queue.clear()
            conn.out_buf = None
            self._apply_interest(conn)  # unregisters
            reader = conn.reader
            if reader is None or reader is IO_READER or reader is PARKED:
                conn.reader = None if reader is PARKED else reader
                conn.sock.close()
            else:
                # A sync caller is reading (or about to): wake it with EOF and let it close
                # the socket when it lets go, so the descriptor is not reused under it.
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._live.discard(conn)
            if self._conns.get(conn.addr) is conn:
                del self._conns[conn.addr]
        pending = conn.pending
        if pending:
            log.debug("%s: %s; failing %d pending calls", self.name, reason, len(pending))
        while True:
            try:
                _, fut = pending.popitem()
            except KeyError:
                break
            exc = ConnectError(reason, addr=conn.addr)
            exc.__cause__ = cause
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                fut.set_exception(exc)

    # ================================================================== server -> client
    def _handle_request(self, conn: Connection, cmd: RemotingCommand) -> None:
        """Answer one request the server sent (runs on the handler pool)."""
        handler = self._request_handler
        outcome: RemotingCommand | Exception | None
        if handler is None:
            if cmd.flag & FLAG_ONEWAY:
                return
            log.warning("%s: request code %d from %s not supported", self.name, cmd.code, conn.addr)
            # NettyRemotingAbstract.processRequestCommand: no processor for the code.
            frame = machinery_response(
                cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported"
            ).encode()
        else:
            try:
                outcome = handler(cmd, conn.addr)
            except Exception as exc:
                log.exception("%s: request handler failed on code %d from %s", self.name, cmd.code, conn.addr)
                outcome = exc
            answer = answer_frame(cmd, outcome)
            if answer is None:
                return
            frame = answer
        if not conn.closed:
            self._write(conn, frame)
