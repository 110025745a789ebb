"""Consumer statistics: pull RT/TPS, consume RT, OK and FAILED TPS per topic and group.

Mirrors ``org.apache.rocketmq.client.stat.ConsumerStatsManager`` and the ``StatsItemSet``
it builds on: every item accumulates (sum, times) into one-second buckets; "in minute"
figures cover the last 60 seconds and "in hour" the last 60 minutes. ``avgpt`` is
sum / times (an average response time), ``tps`` is sum per second over the window.
The clock is injected so tests never sleep.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.protocol.bodies import ConsumeStatus

__all__ = ["ConsumerStatsManager", "StatsItem", "StatsSnapshot"]

_MINUTE_S = 60
_HOUR_S = 3600


def _now_s() -> float:
    return time.monotonic()


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """``StatsSnapshot``: a window's sum, per-second rate and average per sample."""

    sum: int
    tps: float
    avgpt: float


class StatsItem:
    """One key's counters in per-second buckets for the last hour (``StatsItem``)."""

    __slots__ = ("_buckets", "_clock", "_lock", "total_sum", "total_times")

    def __init__(self, clock: Callable[[], float] = _now_s) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        # second -> [sum, times]; pruned to the last hour
        self._buckets: dict[int, list[int]] = {}
        self.total_sum = 0
        self.total_times = 0

    def add(self, value: int, times: int = 1) -> None:
        sec = int(self._clock())
        with self._lock:
            bucket = self._buckets.get(sec)
            if bucket is None:
                bucket = self._buckets[sec] = [0, 0]
                if len(self._buckets) > _HOUR_S + 60:
                    cutoff = sec - _HOUR_S
                    for key in [k for k in self._buckets if k < cutoff]:
                        del self._buckets[key]
            bucket[0] += value
            bucket[1] += times
            self.total_sum += value
            self.total_times += times

    def snapshot(self, window_s: int) -> StatsSnapshot:
        """Totals of the last ``window_s`` complete and current seconds."""
        now = int(self._clock())
        start = now - window_s
        total = times = 0
        with self._lock:
            for sec, (value, count) in self._buckets.items():
                if sec > start:
                    total += value
                    times += count
        return StatsSnapshot(sum=total, tps=total / window_s, avgpt=(total / times) if times else 0.0)

    def in_minute(self) -> StatsSnapshot:
        return self.snapshot(_MINUTE_S)

    def in_hour(self) -> StatsSnapshot:
        return self.snapshot(_HOUR_S)


class _StatsItemSet:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._items: dict[str, StatsItem] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> StatsItem:
        item = self._items.get(key)
        if item is None:
            with self._lock:
                item = self._items.setdefault(key, StatsItem(self._clock))
        return item

    def find(self, key: str) -> StatsItem | None:
        return self._items.get(key)


class ConsumerStatsManager:
    """The five consumer stats of the Java client, keyed ``topic@group``."""

    def __init__(self, clock: Callable[[], float] = _now_s) -> None:
        self.consume_ok_tps = _StatsItemSet(clock)
        self.consume_rt = _StatsItemSet(clock)
        self.consume_failed_tps = _StatsItemSet(clock)
        self.pull_tps = _StatsItemSet(clock)
        self.pull_rt = _StatsItemSet(clock)

    @staticmethod
    def _key(group: str, topic: str) -> str:
        return f"{topic}@{group}"

    def inc_pull_rt(self, group: str, topic: str, rt_ms: int) -> None:
        self.pull_rt.get(self._key(group, topic)).add(rt_ms)

    def inc_pull_tps(self, group: str, topic: str, msgs: int) -> None:
        self.pull_tps.get(self._key(group, topic)).add(msgs)

    def inc_consume_rt(self, group: str, topic: str, rt_ms: int) -> None:
        self.consume_rt.get(self._key(group, topic)).add(rt_ms)

    def inc_consume_ok_tps(self, group: str, topic: str, msgs: int) -> None:
        self.consume_ok_tps.get(self._key(group, topic)).add(msgs)

    def inc_consume_failed_tps(self, group: str, topic: str, msgs: int) -> None:
        self.consume_failed_tps.get(self._key(group, topic)).add(msgs)

    def consume_status(self, group: str, topic: str) -> ConsumeStatus:
        """``consumeStatus``: minute averages and rates, failed messages of the last hour."""
        key = self._key(group, topic)

        def minute(items: _StatsItemSet) -> StatsSnapshot:
            item = items.find(key)
            return item.in_minute() if item else StatsSnapshot(0, 0.0, 0.0)

        failed = self.consume_failed_tps.find(key)
        return ConsumeStatus(
            pull_rt=minute(self.pull_rt).avgpt,
            pull_tps=minute(self.pull_tps).tps,
            consume_rt=minute(self.consume_rt).avgpt,
            consume_ok_tps=minute(self.consume_ok_tps).tps,
            consume_failed_tps=minute(self.consume_failed_tps).tps,
            consume_failed_msgs=failed.in_hour().sum if failed else 0,
        )
