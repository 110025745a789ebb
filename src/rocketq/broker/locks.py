"""Broker-side queue locks for orderly consumption (``RebalanceLockManager``).

Mirrors ``org.apache.rocketmq.broker.client.rebalance.RebalanceLockManager`` (reference
6.5). Per consumer group, each MessageQueue maps to (client id, last update). A lock
request grants a queue when it is free, already held by the same client (the lease is
renewed), or held by a client whose lease expired (``lock_max_live_time_ms``, 60 s by
default); otherwise it stays with its holder. Unlock removes only the requester's own
entries. Locks are not released when a connection closes — only by unlock or expiry —
so a crashed consumer's queues move once their lease runs out. The clock is injected.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rocketq.protocol.message_queue import MessageQueue

__all__ = ["REBALANCE_LOCK_MAX_LIVE_TIME_MS", "RebalanceLockManager"]

#: ``rocketmq.broker.rebalance.lockMaxLiveTime``
REBALANCE_LOCK_MAX_LIVE_TIME_MS = 60_000


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class _LockEntry:
    client_id: str
    last_update_ms: int


class RebalanceLockManager:
    """Who holds which queue of which group."""

    def __init__(
        self,
        *,
        lock_max_live_time_ms: int = REBALANCE_LOCK_MAX_LIVE_TIME_MS,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.lock_max_live_time_ms = lock_max_live_time_ms
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._table: dict[str, dict[MessageQueue, _LockEntry]] = {}

    def _expired(self, entry: _LockEntry, now: int) -> bool:
        return now - entry.last_update_ms > self.lock_max_live_time_ms

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """LOCK_BATCH_MQ: the subset of ``mqs`` that ``client_id`` holds after this call."""
        now = self._clock_ms()
        granted: set[MessageQueue] = set()
        with self._lock:
            table = self._table.setdefault(group, {})
            for mq in mqs:
                entry = table.get(mq)
                if entry is None or entry.client_id == client_id or self._expired(entry, now):
                    table[mq] = _LockEntry(client_id, now)
                    granted.add(mq)
        return granted

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """UNLOCK_BATCH_MQ: release the queues that ``client_id`` holds."""
        with self._lock:
            table = self._table.get(group)
            if not table:
                return
            for mq in mqs:
                entry = table.get(mq)
                if entry is not None and entry.client_id == client_id:
                    del table[mq]

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        """Whether ``client_id`` holds ``mq`` with a live lease."""
        now = self._clock_ms()
        with self._lock:
            entry = self._table.get(group, {}).get(mq)
            return entry is not None and entry.client_id == client_id and not self._expired(entry, now)

    def live_lock_counts(self) -> dict[str, int]:
        """Live leases per group (groups holding none are left out); for metrics."""
        now = self._clock_ms()
        with self._lock:
            counts = {
                group: sum(1 for entry in table.values() if not self._expired(entry, now))
                for group, table in self._table.items()
            }
        return {group: n for group, n in counts.items() if n}

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        """The client holding a live lease on ``mq``, if any (for admin views)."""
        now = self._clock_ms()
        with self._lock:
            entry = self._table.get(group, {}).get(mq)
            if entry is None or self._expired(entry, now):
                return None
            return entry.client_id
