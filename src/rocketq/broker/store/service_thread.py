"""``ServiceThread``: the base of the store's background loops (flush, clean).

Mirrors ``org.apache.rocketmq.common.ServiceThread``: a named daemon thread running
``run()`` until ``shutdown()``; ``wakeup()`` cuts the current ``wait_for_running`` short.
Invariants: ``shutdown()`` joins the thread (no thread outlives its store); an exception
escaping one loop iteration is logged with its traceback and the loop goes on (Java's
services catch and log the same way) -- never swallowed silently.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["PeriodicService", "ServiceThread"]

_log = logging.getLogger("rocketq.broker.store")


class ServiceThread:
    """A background loop: subclasses implement ``do_work()`` (one iteration) and may override
    ``on_shutdown()`` (runs on the thread after the last iteration)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stopped = threading.Event()
        self._wakeup = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def wakeup(self) -> None:
        """Cut the current wait short (``ServiceThread.wakeup``)."""
        self._wakeup.set()

    def wait_for_running(self, interval_s: float) -> None:
        """Sleep up to ``interval_s`` or until woken up or stopped."""
        self._wakeup.wait(interval_s)
        self._wakeup.clear()

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop the loop, wake it and join the thread."""
        self._stopped.set()
        self._wakeup.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        self._thread = None

    def do_work(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_shutdown(self) -> None:
        """Called once on the thread after the loop ends."""

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.do_work()
            except Exception:
                _log.exception("%s: iteration failed", self.name)
                self.wait_for_running(0.1)
        try:
            self.on_shutdown()
        except Exception:
            _log.exception("%s: shutdown step failed", self.name)


class PeriodicService(ServiceThread):
    """Runs ``task()`` every ``interval_s`` (the store's scheduled executors)."""

    def __init__(self, name: str, interval_s: float, task: Callable[[], object]) -> None:
        super().__init__(name)
        self._interval_s = interval_s
        self._task = task

    def do_work(self) -> None:
        self.wait_for_running(self._interval_s)
        if not self.stopped:
            self._task()
