"""The store's background loops (flush, clean) on the project's one ``ServiceThread``.

Mirrors ``org.apache.rocketmq.common.ServiceThread`` through
:class:`rocketq.remoting.service_thread.ServiceThread`: store services implement
``do_work()`` (one iteration, which waits as it needs) and may override ``on_shutdown()``
(runs on the thread after the last iteration, e.g. a final flush). An exception escaping one
iteration is logged with its traceback and the loop goes on after 100 ms.
"""

from __future__ import annotations

import logging
import time

from rocketq.remoting.service_thread import PeriodicService
from rocketq.remoting.service_thread import ServiceThread as _BaseServiceThread

__all__ = ["PeriodicService", "ServiceThread"]

_log = logging.getLogger("rocketq.broker.store")


class ServiceThread(_BaseServiceThread):
    """A store loop: ``do_work()`` until shutdown, then ``on_shutdown()`` on the thread."""

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Stop the loop, wake it and join the thread (the store waits for its final flush)."""
        super().shutdown(timeout_s)

    def sleep_unless_stopped(self, interval_s: float) -> None:
        """Sleep ``interval_s``, returning early only on shutdown (wakeups are ignored)."""
        deadline = time.monotonic() + interval_s
        while not self.stopped:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.wait_for_running(remaining)

    def do_work(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_shutdown(self) -> None:
        """Called once on the thread after the loop ends."""

    def run(self) -> None:
        while not self.stopped:
            try:
                self.do_work()
            except Exception:
                _log.exception("%s: iteration failed", self.name)
                self.wait_for_running(0.1)
        try:
            self.on_shutdown()
        except Exception:
            _log.exception("%s: shutdown step failed", self.name)
