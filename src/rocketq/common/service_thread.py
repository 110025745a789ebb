"""The one base of every background loop: heartbeat, route refresh, flush, rebalance, ...

Mirrors ``org.apache.rocketmq.common.ServiceThread``: a named thread that loops until
:meth:`ServiceThread.shutdown`, sleeping between rounds in
:meth:`ServiceThread.wait_for_running`, which :meth:`ServiceThread.wakeup` cuts short.
The client, the broker and the store all use this class (and :class:`PeriodicService`);
one-off delayed tasks go to :class:`rocketq.common.scheduler.ScheduledExecutor`.

Two loop shapes share one contract:

* ``interval_s`` > 0 (the default, 1 s): :meth:`ServiceThread.run_once` is called every
  ``interval_s`` seconds or earlier after a wakeup;
* ``interval_s=None``: ``run_once`` does its own waiting (the store's flush services, which
  wait with :meth:`ServiceThread.wait_for_running` or
  :meth:`ServiceThread.sleep_unless_stopped`); it is called again at once.

Invariants:

* ``start()`` is idempotent; ``shutdown()`` sets :attr:`ServiceThread.stopped`, wakes the
  thread and joins it (unless called from the thread itself), so no thread outlives its
  owner's shutdown.
* A wakeup that arrives while the thread is busy is not lost: the next
  ``wait_for_running`` returns at once (Java's ``hasNotified`` flag).
* An exception raised by :meth:`ServiceThread.run_once` is logged with its traceback and
  the loop goes on (after ``interval_s``, or 100 ms for a self-waiting loop), as Java's
  service loops catch and log ``Exception``; nothing is swallowed silently.
* :meth:`ServiceThread.on_shutdown` runs once on the thread after the last round (the
  store's final flush), whatever the loop shape.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["PeriodicService", "ServiceThread"]

log = logging.getLogger(__name__)

#: the pause after a failed round of a self-waiting loop (``interval_s=None``)
_ERROR_BACKOFF_S = 0.1


class ServiceThread:
    """A stoppable background loop (``org.apache.rocketmq.common.ServiceThread``).

    Subclasses override :meth:`run_once` (called every ``interval_s`` seconds, default
    1.0, or earlier after :meth:`wakeup`; with ``interval_s=None`` it waits itself and is
    called again at once) and optionally :meth:`on_shutdown`. ``join_timeout_s`` bounds
    :meth:`shutdown`'s join (5 s; the store uses 30 s to let its final flush finish).
    """

    def __init__(
        self,
        name: str,
        *,
        daemon: bool = True,
        interval_s: float | None = 1.0,
        join_timeout_s: float = 5.0,
    ) -> None:
        if interval_s is not None and interval_s < 0:
            raise ValueError(f"interval_s must be >= 0, got {interval_s}")
        self.name = name
        self.daemon = daemon
        self.interval_s = interval_s
        self.join_timeout_s = join_timeout_s
        self._stopped = False
        self._started = False
        self._notified = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ state
    @property
    def stopped(self) -> bool:
        """True once :meth:`shutdown` was called (Java ``isStopped()``)."""
        return self._stopped

    @property
    def is_alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the thread (named :attr:`name`); a second call does nothing."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self._stopped = False
            self._thread = threading.Thread(target=self._main, name=self.name, daemon=self.daemon)
            self._thread.start()

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Stop the loop, wake it and join it for at most ``timeout_s`` seconds
        (default ``join_timeout_s``).

        Java ``shutdown()``; a thread that does not finish in time is reported in the log.
        """
        if timeout_s is None:
            timeout_s = self.join_timeout_s
        with self._lock:
            self._stopped = True
            thread = self._thread
        self.wakeup()
        if thread is None or thread is threading.current_thread():
            return
        thread.join(timeout_s)
        if thread.is_alive():
            log.warning("service thread %s did not stop within %.1f s", self.name, timeout_s)

    def wakeup(self) -> None:
        """End the current (or the next) :meth:`wait_for_running` early."""
        self._notified.set()

    def wait_for_running(self, interval_s: float) -> None:
        """Sleep up to ``interval_s`` seconds; returns early on :meth:`wakeup` or shutdown.

        Java ``waitForRunning``: a pending wakeup makes it return at once; in every case
        :meth:`on_wait_end` runs before it returns.
        """
        if not self._stopped:
            self._notified.wait(interval_s)
        self._notified.clear()
        self.on_wait_end()

    def sleep_unless_stopped(self, interval_s: float) -> None:
        """Sleep ``interval_s``, returning early only on shutdown (wakeups are ignored)."""
        deadline = time.monotonic() + interval_s
        while not self._stopped:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.wait_for_running(remaining)

    # ------------------------------------------------------------------ overridables
    def on_wait_end(self) -> None:
        """Hook run at the end of every :meth:`wait_for_running` (Java ``onWaitEnd``)."""

    def run_once(self) -> None:
        """One round of work; the default :meth:`run` calls it every ``interval_s``."""

    def on_shutdown(self) -> None:
        """Called once on the thread after the loop ends (Java services' final step)."""

    def run(self) -> None:
        """The loop: ``run_once`` then ``wait_for_running(interval_s)`` until stopped,
        then :meth:`on_shutdown`."""
        while not self._stopped:
            failed = False
            try:
                self.run_once()
            except Exception:
                failed = True
                log.exception("service thread %s: run_once failed", self.name)
            if self.stopped:
                break
            if self.interval_s is not None:
                self.wait_for_running(self.interval_s)
            elif failed:
                self.wait_for_running(_ERROR_BACKOFF_S)
        try:
            self.on_shutdown()
        except Exception:
            log.exception("service thread %s: shutdown step failed", self.name)

    def _main(self) -> None:
        log.debug("service thread %s started", self.name)
        try:
            self.run()
        except Exception:
            log.exception("service thread %s died", self.name)
            raise
        finally:
            log.debug("service thread %s ended", self.name)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} stopped={self._stopped} alive={self.is_alive}>"


class PeriodicService(ServiceThread):
    """Runs ``task()`` after ``initial_s`` and then every ``interval_s`` (a scheduled executor).

    A failing run is logged and the schedule goes on; :meth:`wakeup` runs it early.
    """

    def __init__(
        self, name: str, interval_s: float, task: Callable[[], object], *, initial_s: float | None = None
    ) -> None:
        super().__init__(name, interval_s=interval_s)
        self._task = task
        self._initial_s = interval_s if initial_s is None else initial_s

    def run_once(self) -> None:
        self._task()

    def run(self) -> None:
        """The first run after ``initial_s``, then :meth:`ServiceThread.run`'s schedule."""
        self.wait_for_running(self._initial_s)
        super().run()
