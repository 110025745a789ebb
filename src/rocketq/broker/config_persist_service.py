"""``ConfigPersistService``: the broker's JSON config files written off the event loop,
coalesced.

Java persists ``topics.json`` / ``subscriptionGroup.json`` synchronously on every change
(``ConfigManager.persist``), which a flood of heartbeats naming new groups turns into one
re-serialisation and fsync per group on the request path. Here a change only marks its
manager dirty (:meth:`ConfigPersistService.request`); this thread writes each dirty
manager at most once every ``interval_ms`` (default 100 ms), and :meth:`shutdown` writes
whatever is still dirty.

Invariants: a change requested before :meth:`shutdown` returns is on disk when it returns;
a crash loses at most the changes of the last ``interval_ms`` (auto-created groups and
topics, which the next heartbeat or send creates again). Admin updates keep Java's
synchronous persist.
"""

from __future__ import annotations

import threading

from rocketq.broker.config import ConfigManager
from rocketq.common.service_thread import ServiceThread

__all__ = ["ConfigPersistService"]


class ConfigPersistService(ServiceThread):
    """Writes dirty config managers every ``interval_ms`` and at shutdown."""

    def __init__(self, interval_ms: int = 100) -> None:
        super().__init__("ConfigPersistService", interval_s=interval_ms / 1000.0)
        self._dirty_lock = threading.Lock()
        self._dirty: dict[int, ConfigManager] = {}

    def request(self, manager: ConfigManager) -> None:
        """Mark ``manager`` for the next write (thread-safe, never blocks on I/O)."""
        with self._dirty_lock:
            self._dirty[id(manager)] = manager

    def run_once(self) -> None:
        self.flush()

    def flush(self) -> None:
        """Write every dirty manager now (``ConfigManager.persist`` logs its own errors)."""
        with self._dirty_lock:
            dirty, self._dirty = self._dirty, {}
        for manager in dirty.values():
            manager.persist()

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Stop the thread, then write what is still dirty."""
        super().shutdown(timeout_s)
        self.flush()
