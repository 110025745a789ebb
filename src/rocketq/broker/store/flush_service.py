"""Commit-log flushing: periodic (ASYNC_FLUSH) and group commit (SYNC_FLUSH).

Mirrors ``CommitLog.FlushRealTimeService`` and ``CommitLog.GroupCommitService`` (4.9.7).

* ``FlushRealTimeService`` flushes every ``flush_interval_commit_log_ms`` once at least
  ``flush_commit_log_least_pages`` pages are dirty, and everything at least every
  ``flush_commit_log_thorough_interval_ms``; on shutdown it flushes all.
* ``GroupCommitService`` (a thread) keeps the requests of puts waiting for the disk. Each
  pass takes every queued request, makes *everything appended so far* durable with one
  fdatasync and answers all requests now covered with ``True`` -- a group commit, so N
  concurrent writers cost one sync, not N. A request still not covered after
  ``sync_flush_timeout_ms`` is answered ``False`` (FLUSH_DISK_TIMEOUT; the bytes stay
  stored). It sleeps on its request queue (Java ``waitForRunning(10)``): a request wakes it
  at once, an idle pass runs every 10 ms.
* :class:`LoopGroupCommit` serves the SYNC_FLUSH sends a broker answers on its event loop:
  every put of one loop iteration waits with a callback (called from the sync's completion
  itself), and one callback at the end of the iteration covers them all, with a loop timer
  for ``sync_flush_timeout_ms`` so a sync hanging in the kernel still yields
  FLUSH_DISK_TIMEOUT on time. By default
  (``sync_flush_aio``) the loop submits that sync itself through Linux native AIO and the
  completion wakes it (:mod:`~rocketq.broker.store.aio_sync`: no thread hand-off); a put
  that finds no sync in flight starts one as soon as its bytes are written, before its
  consume-queue and index dispatch, and the puts that sync covers join it;
  without native AIO it hands ``GroupCommitService`` one request for the whole iteration
  and gets the answers back in one ``call_soon_threadsafe`` (no
  ``concurrent.futures.Future``, no thread wake-up per put). With ``sync_flush_on_loop``
  it syncs on the loop thread itself (as Redis does under ``appendfsync always``),
  blocking the loop for the sync; with ``sync_flush_adaptive`` (and native AIO) it does so
  only while the puts come one per sync and the disk is quick.
  Either way the ack is written only after a sync that started after the put's bytes were
  written, so an acknowledged message is on disk. Puts from other threads use
  :meth:`GroupCommitService.submit` (a ``concurrent.futures.Future``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Protocol

from rocketq.broker.store.aio_sync import AioSync
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.common.histogram import Histogram
from rocketq.common.log_limiter import LogLimiter
from rocketq.common.service_thread import ServiceThread

__all__ = ["CommitRequests", "FlushRealTimeService", "GroupCommitService", "LoopGroupCommit", "SyncedLog"]

log = logging.getLogger(__name__)

_flush_errors = LogLimiter(log)

# FlushRealTimeService.RETRY_TIMES_OVER: flush attempts on shutdown.
_RETRY_TIMES_OVER = 10


class SyncedLog(Protocol):
    """What the flush services use of the commit log
    (:class:`~rocketq.broker.store.commit_log.CommitLog`). A protocol rather than the class:
    this module is compiled, and its tests drive the services with a stand-in log."""

    @property
    def flushed_where(self) -> int: ...

    def flush(self, least_pages: int = 0) -> bool: ...

    def flush_unclaimed(self) -> bool: ...

    def sync_targets(self) -> tuple[list[int], int, int] | None: ...

    def sync_started(self, target: int) -> None: ...

    def mark_synced(self, target: int, ts: int) -> None: ...


class CommitRequests(Protocol):
    """What :class:`LoopGroupCommit` uses of the flush thread (:class:`GroupCommitService`)."""

    @property
    def timeout_s(self) -> float: ...

    def request(self, next_offset: int, done: Callable[[bool], None]) -> bool: ...


class FlushRealTimeService(ServiceThread):
    """ASYNC_FLUSH: the periodic flush thread."""

    def __init__(self, commit_log: SyncedLog, config: MessageStoreConfig) -> None:
        super().__init__("FlushRealTimeService", interval_s=None, join_timeout_s=30.0)
        self._commit_log = commit_log
        self._interval_s = config.flush_interval_commit_log_ms / 1000
        self._least_pages = config.flush_commit_log_least_pages
        self._thorough_s = config.flush_commit_log_thorough_interval_ms / 1000
        self._last_thorough = time.monotonic()

    def run_once(self) -> None:
        # flushCommitLogTimed (default true): sleep the full interval, wakeups ignored
        self.sleep_unless_stopped(self._interval_s)
        if self.stopped:
            return
        least = self._least_pages
        now = time.monotonic()
        if now - self._last_thorough >= self._thorough_s:
            self._last_thorough = now
            least = 0
        self._commit_log.flush(least)

    def on_shutdown(self) -> None:
        for _ in range(_RETRY_TIMES_OVER):
            if not self._commit_log.flush(0):
                break


#: ``GroupCommitService.waitForRunning(10)``: the idle pass period, seconds.
_GROUP_COMMIT_WAIT_S = 0.01

#: ``sync_flush_adaptive``: AIO syncs in a row that each answered one put with nothing
#: queued behind it before the loop syncs inline; the longest sync (seconds) that keeps it
#: inline (the longest the loop is made to wait for a quick disk); inline syncs between two
#: AIO probes.
_CALM_FLIGHTS = 8
_INLINE_SYNC_MAX_S = 0.002
_PROBE_EVERY = 32

#: One waiting request: (commit-log offset that must be durable, monotonic deadline, the
#: callback told ``True`` once durable or ``False`` at the deadline; runs on the flush thread).
_Request = tuple[int, float, Callable[[bool], None]]


class GroupCommitService(ServiceThread):
    """SYNC_FLUSH: group commit of waiting puts.

    Requests arrive in a :class:`queue.SimpleQueue`, which is also what the thread sleeps
    on: queueing a request is one C call that wakes the thread (no ``Event`` condition, no
    ``concurrent.futures.Future`` per put for the loop's puts). A pass takes everything
    queued, syncs once and calls back every request now covered.
    """

    def __init__(
        self, commit_log: SyncedLog, config: MessageStoreConfig, flush_latency: Histogram | None = None
    ) -> None:
        super().__init__("GroupCommitService", interval_s=None, join_timeout_s=30.0)
        self._commit_log = commit_log
        #: milliseconds of each flush that had waiting puts (rocketq.broker.metrics reads it)
        self.flush_latency = flush_latency
        self._timeout_s = config.sync_flush_timeout_ms / 1000
        #: requests and wake-ups (``None``) for the thread, from any thread
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        #: the thread's own: requests taken from the queue and not answered yet
        self._waiting: list[_Request] = []
        #: ``_closed`` and the final drain of :meth:`on_shutdown` against a racing :meth:`request`
        self._lock = threading.Lock()
        self._closed = False

    @property
    def timeout_s(self) -> float:
        """``syncFlushTimeout`` in seconds: how long a put waits before FLUSH_DISK_TIMEOUT."""
        return self._timeout_s

    def request(self, next_offset: int, done: Callable[[bool], None]) -> bool:
        """Queue a ``GroupCommitRequest``: ``done(True)`` is called on the flush thread once
        ``next_offset`` is durable, ``done(False)`` once ``sync_flush_timeout_ms`` passed
        first. False (``done`` never called) if the service has shut down."""
        with self._lock:
            if self._closed:
                return False
            self._queue.put((next_offset, time.monotonic() + self._timeout_s, done))
        return True

    def submit(self, next_offset: int) -> Future[bool]:
        """``GroupCommitRequest`` for a put made off the loop: a future resolved once
        ``next_offset`` is durable (``False`` after ``sync_flush_timeout_ms``). The deadline
        is checked by the thread between syncs, so a sync that hangs in the kernel delays
        the ``False`` too: callers that must not wait longer use ``future.result(timeout)``
        (the loop's puts have :class:`LoopGroupCommit`'s timer)."""
        fut: Future[bool] = Future()
        if not self.request(next_offset, fut.set_result):
            # a put that raced with shutdown: the store's final flush is not confirmed here
            fut.set_result(self._commit_log.flushed_where >= next_offset)
        return fut

    def wakeup(self) -> None:
        """Make the thread flush now (a WAIT=false put, shutdown)."""
        super().wakeup()
        self._queue.put(None)

    def run_once(self) -> None:
        # Java waitForRunning(10): a request or a wakeup ends the wait at once
        try:
            item = self._queue.get(timeout=_GROUP_COMMIT_WAIT_S)
        except queue.Empty:  # an idle pass
            item = None
        self._take(item)
        self._do_commit()

    def _take(self, item: _Request | None) -> None:
        """Add ``item`` and everything queued behind it to the waiting requests (this thread
        is the queue's only consumer, so ``empty()`` is exact: no ``queue.Empty`` raised per
        pass)."""
        waiting, q = self._waiting, self._queue
        if item is not None:
            waiting.append(item)
        while not q.empty():
            item = q.get_nowait()
            if item is not None:
                waiting.append(item)

    def _do_commit(self) -> None:
        """One sync for everything appended so far; answer the requests it covered, and
        those past their deadline with ``False`` (the bytes stay stored)."""
        waiting = self._waiting
        if not waiting:
            # GroupCommitService: also flush when nobody waits (WAIT=false puts), but not
            # what the loop's native AIO sync in flight covers
            self._commit_log.flush_unclaimed()
            return
        started = time.perf_counter()
        try:
            self._commit_log.flush(0)
        except Exception as exc:  # the waiters still get their answer at their deadline
            _flush_errors.log(logging.ERROR, "sync", "SYNC_FLUSH: syncing the commit log failed: %s", exc)
        if self.flush_latency is not None:
            self.flush_latency.observe((time.perf_counter() - started) * 1000.0)
        flushed = self._commit_log.flushed_where
        now = time.monotonic()
        keep: list[_Request] = []
        answers: list[tuple[Callable[[bool], None], bool]] = []
        for request in waiting:
            next_offset, deadline, done = request
            if flushed >= next_offset:
                answers.append((done, True))
            elif now >= deadline:
                answers.append((done, False))
            else:
                keep.append(request)
        self._waiting = keep
        # last: an answer wakes its waiter, which then needs the GIL this thread holds
        for done, durable in answers:
            _answer(done, durable)

    def on_shutdown(self) -> None:
        """Final passes; then refuse new requests and answer every one left (a flush that
        fails here still lets each waiter hear whether its bytes are durable)."""
        try:
            for _ in range(_RETRY_TIMES_OVER):
                self._take(None)
                self._do_commit()
                if not self._waiting:
                    break
        finally:
            with self._lock:
                self._closed = True
            self._take(None)  # queued before _closed was set
            if self._waiting:
                self._do_commit()  # (with waiters it logs a failed flush instead of raising)
            flushed = self._commit_log.flushed_where
            for next_offset, _deadline, done in self._waiting:
                _answer(done, flushed >= next_offset)
            self._waiting = []


def _answer(done: Callable[[bool], None], durable: bool) -> None:
    """Call one request's callback; a failing callback must not cost the others theirs."""
    try:
        done(durable)
    except Exception:
        log.exception("SYNC_FLUSH: answering a group commit request failed")


class LoopGroupCommit:
    """SYNC_FLUSH group commit for the puts made on one event loop: one request per loop
    iteration with waiters.

    :meth:`on_durable` is called on the loop thread by a put that must be durable before
    it is acknowledged; the callback it takes is called (on the loop thread, once) with
    ``True`` once a sync that started after the put's bytes were written covered it,
    ``False`` if it did not within ``sync_flush_timeout_ms`` (the broker answers
    FLUSH_DISK_TIMEOUT; the bytes stay stored): from the sync's completion itself, so the
    ack needs no loop iteration of its own.
    The first waiter of an iteration that no sync in flight covers schedules one callback
    at its end, which covers every such waiter of the iteration:

    * with ``thread`` (Java's ``GroupCommitService``, the default): it hands the thread
      *one* request for all of them, due within ``sync_flush_timeout_ms``; the thread's
      answer comes back in one ``call_soon_threadsafe`` for every request it answered
      meanwhile. The loop never blocks on the disk, and one loop timer for every batch
      answers ``False`` on time even while a sync hangs in the kernel (Java's waiter-side
      timeout);
    * with ``aio`` as well (``sync_flush_aio``, the default where Linux native AIO works):
      the loop submits the sync itself (:class:`~rocketq.broker.store.aio_sync.AioSync`)
      and the completion wakes it through an ``eventfd``; iterations that end while a sync
      runs queue their batches for the next one (one sync in flight, as the thread runs
      one at a time). Each batch has the same deadline. A put that finds no sync in flight
      starts one from under the append lock (:meth:`sync_early`, Java's put waking
      ``GroupCommitService`` at once), and the waiters it covers join it rather than wait
      for the end of the iteration. Should the kernel refuse a submission, this and every
      later batch go to the thread;
    * without (``sync_flush_on_loop``): it syncs on the loop thread itself (as Redis does
      under ``appendfsync always``), blocking the loop for the sync's duration; a sync
      that failed answers ``False`` at once.
    * ``adaptive`` (``sync_flush_adaptive``, with native AIO): while the durable puts come one
      per sync and the disk is quick, the loop syncs them itself as ``sync_flush_on_loop``
      does, and native AIO takes over as soon as they overlap or a sync is slow. Native AIO
      costs one put a kernel worker's sync, its context switch and the ``eventfd`` wake-up,
      worth it only when the loop has something to do meanwhile. It goes inline after
      :data:`_CALM_FLIGHTS` AIO syncs in a row that each answered one put, had nothing
      queued behind them and took at most :data:`_INLINE_SYNC_MAX_S`; it leaves at once when
      an inline sync answers more than one put or takes longer than that, and every
      :data:`_PROBE_EVERY` inline syncs it sends one through native AIO, which finds out
      whether puts arrive while a sync runs (the loop cannot see them while it syncs). A
      disk that stalls during an inline sync stalls the loop with it, for that one sync.
    """

    __slots__ = (
        "_adaptive",
        "_aio",
        "_answered",
        "_answering",
        "_calm",
        "_commit_log",
        "_deadlines",
        "_flight",
        "_flush_latency",
        "_loop",
        "_on_loop",
        "_on_loop_syncs",
        "_queued",
        "_scheduled",
        "_service",
        "_sweeper",
        "_waiting",
    )

    def __init__(
        self,
        commit_log: SyncedLog,
        loop: asyncio.AbstractEventLoop,
        flush_latency: Histogram | None = None,
        thread: CommitRequests | None = None,
        aio: AioSync | None = None,
        adaptive: bool = False,
    ) -> None:
        self._commit_log = commit_log
        self._loop = loop
        self._flush_latency = flush_latency
        #: the GroupCommitService (not ``_thread``: mypyc would name the C field ``__thread``,
        #: a C keyword)
        self._service = thread
        self._waiting: list[tuple[int, Callable[[bool], None]]] = []
        self._scheduled = False
        #: the batches, oldest first, until answered and at the head (a deadline is never
        #: earlier than the one before it: one timeout for all), and the one timer that
        #: answers ``False`` to those past their deadline
        self._deadlines: collections.deque[_Batch] = collections.deque()
        self._sweeper: asyncio.TimerHandle | None = None
        #: batches the thread answered, for the loop to resolve (appended by the thread)
        self._answered: collections.deque[tuple[_Batch, bool]] = collections.deque()
        self._answering = False  # a call_soon_threadsafe to resolve them is under way
        #: native AIO syncs (only with a thread to fall back to): the sync in flight and
        #: the batches waiting for the next one
        self._aio: AioSync | None = None
        self._flight: _Flight | None = None
        self._queued: list[_Batch] = []
        #: adaptive (native AIO only): syncing on the loop now (not ``_inline``: mypyc would
        #: name the C field ``__inline``, a C keyword), AIO syncs in a row that found the
        #: puts one per sync, inline syncs since the last AIO probe
        self._adaptive = adaptive
        self._on_loop = False
        self._calm = 0
        self._on_loop_syncs = 0
        if aio is not None:
            if thread is None:
                aio.close()
            else:
                loop.add_reader(aio.fd, self._on_synced)
                self._aio = aio

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def on_durable(self, next_offset: int, done: Callable[[bool], None]) -> None:
        """Call ``done`` (loop thread, once) once the commit log is durable up to
        ``next_offset``: from the AIO sync in flight if it covers the offset
        (:meth:`sync_early` started it after the put's bytes were written), else from one
        started at the end of the iteration. ``done`` should not raise (what it raises is
        logged)."""
        flight = self._flight
        if flight is not None and next_offset <= flight.upto:
            joining = flight.joining
            if joining is None:
                joining = flight.joining = self._new_batch([])
                flight.batches.append(joining)
            joining.waiting.append((next_offset, done))
            return
        self._waiting.append((next_offset, done))
        if not self._scheduled:
            self._scheduled = True
            if self._service is None:
                self._loop.call_soon(self._commit)
            elif self._on_loop and self._aio is not None:
                # the GroupCommitService's idle pass leaves these bytes to the inline sync
                self._commit_log.sync_started(next_offset)
                self._loop.call_soon(self._commit_inline)
            elif self._aio is not None:
                self._loop.call_soon(self._submit)
            else:
                self._loop.call_soon(self._hand_over)

    # ------------------------------------------------------------------ GroupCommitService
    def _hand_over(self) -> None:
        """End of the iteration: one request to the flush thread for all its waiters."""
        self._to_thread([self._take_batch()])

    def _take_batch(self) -> _Batch:
        """End of the iteration: its waiters as one batch, its deadline set (first:
        a request to the thread wakes it, and the thread then needs the GIL this thread
        holds until the loop goes back to waiting, so the less done after, the better)."""
        self._scheduled = False
        waiting, self._waiting = self._waiting, []
        return self._new_batch(waiting)

    def _new_batch(self, waiting: list[tuple[int, Callable[[bool], None]]]) -> _Batch:
        """A batch of ``waiting``, answered ``False`` (FLUSH_DISK_TIMEOUT) unless answered
        within ``sync_flush_timeout_ms``: one timer serves every batch (not one per batch, as
        there is a batch per put when puts come one at a time)."""
        thread = self._service
        assert thread is not None
        batch = _Batch(waiting, self, self._loop.time() + thread.timeout_s)
        self._deadlines.append(batch)
        if self._sweeper is None:
            self._sweeper = self._loop.call_at(batch.deadline, self._sweep)
        return batch

    def _retire(self) -> None:
        """Drop the answered batches at the head of :attr:`_deadlines` (batches are answered
        in about the order they were made, so this is usually the one just answered). Every
        answer calls it, so the head is never an answered batch."""
        deadlines = self._deadlines
        while deadlines and deadlines[0].answered:
            deadlines.popleft()

    def _sweep(self) -> None:
        """The timer: answer ``False`` to every batch past its deadline (each answer retires
        it from the head); re-arm for the oldest one left."""
        self._sweeper = None
        deadlines = self._deadlines
        now = self._loop.time()
        while deadlines and deadlines[0].deadline <= now:
            _resolve(deadlines[0], False)
        if deadlines:
            self._sweeper = self._loop.call_at(deadlines[0].deadline, self._sweep)

    # ------------------------------------------------------------------ native AIO
    def sync_early(self) -> None:
        """A put whose ack waits for the disk has written its bytes (called on this loop's
        thread, under the append lock, before the dispatch): with native AIO and no sync in
        flight, start one now; the put's :meth:`on_durable` then joins it."""
        if self._aio is None or self._flight is not None or self._on_loop:
            return
        self._start_sync()

    def _submit(self) -> None:
        """End of the iteration: its waiters become one batch, answered by the sync in
        flight if that covers them all (:meth:`sync_early` started it after they were
        written), else by the next sync, started now unless one is in flight."""
        batch = self._take_batch()
        flight = self._flight
        if flight is None:
            self._queued.append(batch)
            self._start_sync()
        elif batch.upto() <= flight.upto:
            flight.batches.append(batch)
        else:
            self._queued.append(batch)
            # the next sync covers its bytes: the GroupCommitService's idle pass leaves them
            # to it (flush_unclaimed) rather than sync them a second time meanwhile
            self._commit_log.sync_started(batch.upto())

    def _start_sync(self) -> None:
        """Submit one sync for every queued batch (all of them were stored already)."""
        batches, self._queued = self._queued, []
        aio = self._aio
        if aio is None:  # closed meanwhile, or fell back: the thread takes them
            self._to_thread(batches)
            return
        try:
            targets = self._commit_log.sync_targets()
            if targets is None:  # durable already: another sync covered them
                for batch in batches:
                    _resolve(batch, True)
                return
            fds, upto, ts = targets
            taken = aio.submit(fds)
        except ValueError:  # more segments than one submission takes: this once, the thread
            self._to_thread(batches)
            return
        except OSError as exc:
            log.warning(
                "SYNC_FLUSH: native AIO refused a sync (%s); syncing on the GroupCommitService thread", exc
            )
            self._drop_aio()
            self._to_thread(batches)
            return
        self._flight = _Flight(batches, upto, ts, taken, taken == len(fds))
        self._commit_log.sync_started(upto)

    def _on_synced(self) -> None:
        """The eventfd is readable: count the completed syncs; once the flight's are all
        in, answer its batches and start the next sync."""
        aio = self._aio
        if aio is None:
            return
        try:
            results = aio.reap()
        except OSError as exc:  # the context is unusable: the thread takes over
            log.error("SYNC_FLUSH: reading native AIO completions failed: %s", exc)
            self._drop_aio()
            self._settle(None)
            return
        self._settle(results)

    def _settle(self, results: list[int] | None) -> None:
        """Count ``results`` (None: the completions are lost) against the flight; once it
        is complete, answer its batches and start the next sync."""
        flight = self._flight
        if flight is None:
            return
        if results is None:
            flight.pending = 0
            flight.ok = False
        else:
            for res in results:
                flight.pending -= 1
                if res < 0:
                    flight.ok = False
                    _flush_errors.log(
                        logging.ERROR,
                        "sync",
                        "SYNC_FLUSH: syncing the commit log failed: %s",
                        os.strerror(-res),
                    )
        if flight.pending > 0:
            return
        self._flight = None
        took = time.perf_counter() - flight.started
        if self._flush_latency is not None:
            self._flush_latency.observe(took * 1000.0)
        if self._adaptive:
            self._judge_flight(flight, took)
        if flight.ok:
            self._commit_log.mark_synced(flight.upto, flight.ts)
        if self._queued:
            # the next sync first: the disk works on it while the answers are written
            self._start_sync()
        for batch in flight.batches:
            _resolve(batch, flight.ok)

    # ------------------------------------------------------------------ adaptive
    def _judge_flight(self, flight: _Flight, took: float) -> None:
        """An AIO sync completed: one more calm one (one put, nothing queued behind it, a
        quick disk) or the count starts over; enough in a row and the loop syncs inline."""
        waiters = 0
        for batch in flight.batches:
            waiters += len(batch.waiting)
        if waiters == 1 and not self._queued and flight.ok and took <= _INLINE_SYNC_MAX_S:
            self._calm += 1
            if self._calm >= _CALM_FLIGHTS:
                self._calm = 0
                self._on_loop = True
                self._on_loop_syncs = 0
        else:
            self._calm = 0

    def _commit_inline(self) -> None:
        """End of the iteration, adaptive and inline: :meth:`_commit`, then back to native
        AIO if it answered more than one put, the disk was slow or the sync failed, or for
        one probe."""
        puts = len(self._waiting)
        upto = max((offset for offset, _ in self._waiting), default=0)
        took = self._commit()
        if not self._on_loop:  # left meanwhile (the AIO context dropped)
            return
        self._on_loop_syncs += 1
        if puts > 1 or took > _INLINE_SYNC_MAX_S or self._commit_log.flushed_where < upto:
            self._on_loop = False
            self._calm = 0
        elif self._on_loop_syncs >= _PROBE_EVERY:
            # one AIO sync: if it stays calm the loop comes straight back
            self._on_loop = False
            self._calm = _CALM_FLIGHTS - 1

    @property
    def syncs_on_loop(self) -> bool:
        """Adaptive: whether the loop syncs the next put itself."""
        return self._on_loop

    def _to_thread(self, batches: list[_Batch]) -> None:
        """One request to the flush thread per batch, for the highest of its offsets."""
        thread = self._service
        assert thread is not None
        for batch in batches:
            upto = batch.upto()
            if not thread.request(upto, batch):
                # the service shut down: only what is durable already counts
                _resolve(batch, self._commit_log.flushed_where >= upto)

    def _drop_aio(self) -> None:
        self._on_loop = False
        aio, self._aio = self._aio, None
        if aio is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(aio.fd)
            aio.close()

    def close(self) -> None:
        """Release the AIO context (the store shuts down, or a put from another loop took
        over). On the loop thread, or with the loop closed: at once, after the sync in
        flight when the loop still runs; from another thread: on the loop."""
        if self._aio is None:
            return
        loop = self._loop
        if loop.is_closed():
            self._finish_close()
        elif asyncio._get_running_loop() is loop:  # None off any loop
            self._close_on_loop()
        else:
            try:
                loop.call_soon_threadsafe(self._close_on_loop)
            except RuntimeError:  # closed meanwhile
                self._finish_close()

    def _close_on_loop(self) -> None:
        """Wait for the sync in flight (blocking: the store is going away), answer its
        batches, then release the context; batches queued behind it go to the thread (or,
        shut down, are answered from the flushed position)."""
        aio = self._aio
        flight = self._flight
        if aio is not None and flight is not None:
            try:
                results = aio.reap(wait=flight.pending)
            except OSError:
                results = None
            queued, self._queued = self._queued, []
            self._settle(results)
            self._queued = queued
        self._finish_close()

    def _finish_close(self) -> None:
        """Release the context (the kernel waits for a sync still running) and hand what
        is left to the thread, which answers from the flushed position once shut down."""
        self._drop_aio()
        left, self._queued = self._queued, []
        flight, self._flight = self._flight, None
        if flight is not None:
            left = flight.batches + left
        if left and not self._loop.is_closed():
            self._to_thread(left)

    def on_answer(self, batch: _Batch, durable: bool) -> None:
        """Flush thread: queue ``batch``'s answer; one wake-up of the loop carries every
        answer queued until the loop takes them."""
        self._answered.append((batch, durable))
        if not self._answering:
            self._answering = True
            try:
                self._loop.call_soon_threadsafe(self._resolve_answered)
            except RuntimeError:  # the loop closed: nobody waits for these any more
                self._answered.clear()

    def _resolve_answered(self) -> None:
        self._answering = False  # before taking: an answer queued from now on wakes again
        answered = self._answered
        while answered:
            batch, durable = answered.popleft()
            _resolve(batch, durable)

    # ------------------------------------------------------------------ on the loop
    def _commit(self) -> float:
        """End of the iteration, on the loop: one sync, then the answers; returns the
        sync's seconds."""
        self._scheduled = False
        waiting, self._waiting = self._waiting, []
        started = time.perf_counter()
        try:
            self._commit_log.flush(0)
        except OSError as exc:
            log.error("SYNC_FLUSH: syncing the commit log failed: %s", exc)
        except Exception:  # a store closed meanwhile, a bug: the waiters still get their answer
            log.exception("SYNC_FLUSH: syncing the commit log failed")
        took = time.perf_counter() - started
        if self._flush_latency is not None:
            self._flush_latency.observe(took * 1000.0)
        flushed = self._commit_log.flushed_where
        for next_offset, done in waiting:
            _answer(done, flushed >= next_offset)
        return took


class _Batch:
    """The waiters of one loop iteration, handed to :class:`GroupCommitService` as one
    request (for the highest of their offsets), and the loop time by which they are answered."""

    __slots__ = ("answered", "commit", "deadline", "waiting")

    def __init__(
        self, waiting: list[tuple[int, Callable[[bool], None]]], commit: LoopGroupCommit, deadline: float
    ) -> None:
        self.waiting = waiting
        self.commit = commit
        self.deadline = deadline
        self.answered = False

    def upto(self) -> int:
        """The highest offset its waiters need durable."""
        return max(offset for offset, _ in self.waiting)

    def __call__(self, durable: bool) -> None:
        """The request's ``done``, called on the flush thread."""
        self.commit.on_answer(self, durable)


class _Flight:
    """The native AIO sync in flight: the batches it answers, the offset and store time it
    makes durable, the completions still due and whether all so far succeeded; and the
    batch of the waiters that joined it after it started (their puts lie below ``upto``)."""

    __slots__ = ("batches", "joining", "ok", "pending", "started", "ts", "upto")

    def __init__(self, batches: list[_Batch], upto: int, ts: int, pending: int, ok: bool) -> None:
        self.batches = batches
        self.upto = upto
        self.ts = ts
        self.pending = pending
        self.ok = ok
        self.started = time.perf_counter()
        self.joining: _Batch | None = None


def _resolve(batch: _Batch, durable: bool) -> None:
    """Loop: answer ``batch``'s waiters (the first answer wins: the sync's, the thread's or
    the deadline's)."""
    if batch.answered:
        return
    batch.answered = True
    for _offset, done in batch.waiting:
        _answer(done, durable)
    batch.commit._retire()
