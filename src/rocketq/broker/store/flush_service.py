"""Commit-log flushing: periodic (ASYNC_FLUSH) and group commit (SYNC_FLUSH).

Mirrors ``CommitLog.FlushRealTimeService`` and ``CommitLog.GroupCommitService`` (4.9.7).

* ``FlushRealTimeService`` flushes every ``flush_interval_commit_log_ms`` once at least
  ``flush_commit_log_least_pages`` pages are dirty, and everything at least every
  ``flush_commit_log_thorough_interval_ms``; on shutdown it flushes all.
* ``GroupCommitService`` keeps the futures of puts waiting for the disk. Each pass takes
  every pending request, makes *everything appended so far* durable with one fdatasync and
  resolves all requests now covered with ``True`` -- a group commit, so N concurrent
  writers cost one sync, not N. A request still not covered after
  ``sync_flush_timeout_ms`` resolves ``False`` (FLUSH_DISK_TIMEOUT; the bytes stay
  stored). The timeout is checked by the flush thread between syncs, so a sync that hangs
  in the kernel delays the ``False`` too: callers that must not wait longer use
  ``future.result(timeout)``.
* :class:`LoopGroupCommit` serves the SYNC_FLUSH sends a broker answers on its event loop
  without a thread hop: every put of one loop iteration waits on one loop future, and one
  callback at the end of the iteration syncs once (on the loop thread, as Redis does under
  ``appendfsync always``) and resolves them all. The ack is written only after the sync
  returned, so an acknowledged message is on disk. The sync blocks the loop for its
  duration; a loop that is busy meanwhile only queues more requests, which share the next
  sync. Puts from other threads keep :class:`GroupCommitService`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import Future

from rocketq.broker.store.commit_log import CommitLog
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.common.histogram import Histogram
from rocketq.common.service_thread import ServiceThread

__all__ = ["FlushRealTimeService", "GroupCommitService", "LoopGroupCommit"]

log = logging.getLogger(__name__)

# FlushRealTimeService.RETRY_TIMES_OVER: flush attempts on shutdown.
_RETRY_TIMES_OVER = 10


class FlushRealTimeService(ServiceThread):
    """ASYNC_FLUSH: the periodic flush thread."""

    def __init__(self, commit_log: CommitLog, config: MessageStoreConfig) -> None:
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


class GroupCommitService(ServiceThread):
    """SYNC_FLUSH: group commit of waiting puts."""

    def __init__(
        self, commit_log: CommitLog, config: MessageStoreConfig, flush_latency: Histogram | None = None
    ) -> None:
        super().__init__("GroupCommitService", interval_s=None, join_timeout_s=30.0)
        self._commit_log = commit_log
        #: milliseconds of each flush that had waiting puts (rocketq.broker.metrics reads it)
        self.flush_latency = flush_latency
        self._timeout_s = config.sync_flush_timeout_ms / 1000
        self._lock = threading.Lock()
        self._requests: list[tuple[int, float, Future[bool]]] = []
        self._closed = False

    def submit(self, next_offset: int) -> Future[bool]:
        """``GroupCommitRequest``: a future resolved once ``next_offset`` is durable."""
        fut: Future[bool] = Future()
        with self._lock:
            if not self._closed:
                self._requests.append((next_offset, time.monotonic() + self._timeout_s, fut))
                self.wakeup()
                return fut
        # a put that raced with shutdown: the store's final flush is not confirmed here
        fut.set_result(self._commit_log.flushed_where >= next_offset)
        return fut

    def run_once(self) -> None:
        self.wait_for_running(0.01)
        self._do_commit()

    def _do_commit(self) -> None:
        with self._lock:
            pending, self._requests = self._requests, []
        if not pending:
            # GroupCommitService: also flush when nobody waits (WAIT=false puts)
            self._commit_log.flush(0)
            return
        started = time.perf_counter()
        self._commit_log.flush(0)
        if self.flush_latency is not None:
            self.flush_latency.observe((time.perf_counter() - started) * 1000.0)
        flushed = self._commit_log.flushed_where
        now = time.monotonic()
        keep = []
        for request in pending:
            next_offset, deadline, fut = request
            if flushed >= next_offset:
                fut.set_result(True)
            elif now >= deadline:
                fut.set_result(False)
            else:
                keep.append(request)
        if keep:
            with self._lock:
                self._requests[:0] = keep
            self.wakeup()

    def on_shutdown(self) -> None:
        for _ in range(_RETRY_TIMES_OVER):
            self._do_commit()
            with self._lock:
                if not self._requests:
                    break
        with self._lock:
            self._closed = True
            pending, self._requests = self._requests, []
        for _next, _deadline, fut in pending:
            fut.set_result(False)


class LoopGroupCommit:
    """SYNC_FLUSH group commit on one event loop: one sync per loop iteration with waiters.

    :meth:`wait_durable` is called on the loop thread by a put that must be durable before
    it is acknowledged; the future it returns resolves ``True`` once a sync that started
    after the put covered it, ``False`` if that sync failed (the broker answers
    FLUSH_DISK_TIMEOUT; the bytes stay stored and the flush thread retries).
    """

    __slots__ = ("_commit_log", "_flush_latency", "_loop", "_scheduled", "_waiting")

    def __init__(
        self,
        commit_log: CommitLog,
        loop: asyncio.AbstractEventLoop,
        flush_latency: Histogram | None = None,
    ) -> None:
        self._commit_log = commit_log
        self._loop = loop
        self._flush_latency = flush_latency
        self._waiting: list[tuple[int, asyncio.Future[bool]]] = []
        self._scheduled = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def wait_durable(self, next_offset: int) -> asyncio.Future[bool]:
        """A loop future resolved once the commit log is durable up to ``next_offset``."""
        fut: asyncio.Future[bool] = self._loop.create_future()
        self._waiting.append((next_offset, fut))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._commit)
        return fut

    def _commit(self) -> None:
        self._scheduled = False
        waiting, self._waiting = self._waiting, []
        started = time.perf_counter()
        try:
            self._commit_log.flush(0)
        except OSError as exc:
            log.error("SYNC_FLUSH: syncing the commit log failed: %s", exc)
        except Exception:  # a store closed meanwhile, a bug: the waiters still get their answer
            log.exception("SYNC_FLUSH: syncing the commit log failed")
        if self._flush_latency is not None:
            self._flush_latency.observe((time.perf_counter() - started) * 1000.0)
        flushed = self._commit_log.flushed_where
        for next_offset, fut in waiting:
            if not fut.done():
                fut.set_result(flushed >= next_offset)
