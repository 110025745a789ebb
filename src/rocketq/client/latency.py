"""Latency-aware broker avoidance for the producer.

Mirrors ``org.apache.rocketmq.client.latency.MQFaultStrategy`` and
``LatencyFaultToleranceImpl`` (4.9.x defaults, reference 7.3 and 12):

* after each send the producer reports the broker's latency; a slow or failed broker
  becomes "not available" for a duration looked up in two parallel tables
  (latency >= 550 ms -> 30 s, ... >= 15 s -> 10 min; a failure counts as 30 s latency);
* queue choice skips brokers that are not available, and falls back to the "least bad"
  broker, then to plain round robin.

Disabled by default (``sendLatencyFaultEnable=false``): then only the retry rule "not the
broker that just failed" applies (``TopicPublishInfo.selectOneMessageQueue``). The clock
is injected (milliseconds, monotonic by default) so isolation is testable without sleeping.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "LATENCY_MAX_MS",
    "NOT_AVAILABLE_DURATION_MS",
    "FaultItem",
    "LatencyFaultTolerance",
    "MQFaultStrategy",
    "TopicPublishInfo",
    "now_ms",
]

#: ``MQFaultStrategy.latencyMax`` (4.9.x)
LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
#: ``MQFaultStrategy.notAvailableDuration`` (4.9.x)
NOT_AVAILABLE_DURATION_MS: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
#: ``updateFaultItem(..., isolation=true)`` counts as this latency.
_ISOLATION_LATENCY_MS = 30_000


def now_ms() -> int:
    """The monotonic clock in ms: the default clock of the fault strategy and the producers."""
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class FaultItem:
    """``LatencyFaultToleranceImpl.FaultItem``: a broker and when it becomes usable again."""

    name: str
    current_latency_ms: int
    start_timestamp_ms: int

    def is_available(self, now_ms: int) -> bool:
        return now_ms - self.start_timestamp_ms >= 0


class LatencyFaultTolerance:
    """``LatencyFaultToleranceImpl``: a thread-safe table of :class:`FaultItem` by broker name."""

    def __init__(self, *, clock_ms: Callable[[], int] = now_ms, rng: random.Random | None = None) -> None:
        self._clock_ms = clock_ms
        self._items: dict[str, FaultItem] = {}
        self._lock = threading.Lock()
        self._rng = rng or random.Random()
        self._which = 0

    def update_fault_item(self, name: str, current_latency_ms: int, not_available_duration_ms: int) -> None:
        start = self._clock_ms() + not_available_duration_ms
        with self._lock:
            self._items[name] = FaultItem(name, current_latency_ms, start)

    def is_available(self, name: str) -> bool:
        with self._lock:
            item = self._items.get(name)
        return item is None or item.is_available(self._clock_ms())

    def remove(self, name: str) -> None:
        with self._lock:
            self._items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """``pickOneAtLeast``: among the better half of the known brokers, one in turn."""
        now = self._clock_ms()
        with self._lock:
            items = list(self._items.values())
            if not items:
                return None
            self._rng.shuffle(items)
            # FaultItem.compareTo: available first, then lower latency, then earlier start
            items.sort(key=lambda i: (not i.is_available(now), i.current_latency_ms, i.start_timestamp_ms))
            half = len(items) // 2
            if half <= 0:
                return items[0].name
            self._which += 1
            return items[self._which % half].name


class TopicPublishInfo:
    """``TopicPublishInfo``: a topic's publish queue list and its round-robin counter."""

    def __init__(
        self,
        message_queues: Sequence[MessageQueue],
        *,
        order_topic: bool = False,
        have_topic_router_info: bool = True,
        start: int | None = None,
    ) -> None:
        self.message_queue_list: list[MessageQueue] = list(message_queues)
        self.order_topic = order_topic
        self.have_topic_router_info = have_topic_router_info
        # ThreadLocalIndex starts at a random value
        self._index = random.randrange(1 << 16) if start is None else start
        self._lock = threading.Lock()

    def ok(self) -> bool:
        return bool(self.message_queue_list)

    def next_index(self) -> int:
        with self._lock:
            i = self._index
            self._index = (i + 1) & 0x7FFFFFFF
            return i

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue:
        """Round robin; on a retry, skip the queues of ``last_broker_name`` when possible."""
        mqs = self.message_queue_list
        if not mqs:
            raise IndexError("no message queue")
        if last_broker_name is None:
            return mqs[self.next_index() % len(mqs)]
        for _ in range(len(mqs)):
            mq = mqs[self.next_index() % len(mqs)]
            if mq.broker_name != last_broker_name:
                return mq
        return mqs[self.next_index() % len(mqs)]


class MQFaultStrategy:
    """``MQFaultStrategy``: queue selection with optional latency-based broker avoidance."""

    def __init__(
        self,
        *,
        enabled: bool = False,
        clock_ms: Callable[[], int] = now_ms,
        latency_max_ms: Sequence[int] = LATENCY_MAX_MS,
        not_available_duration_ms: Sequence[int] = NOT_AVAILABLE_DURATION_MS,
    ) -> None:
        if len(latency_max_ms) != len(not_available_duration_ms):
            raise ValueError("latency_max_ms and not_available_duration_ms must have the same length")
        self.enabled = enabled
        self.latency_max_ms = tuple(latency_max_ms)
        self.not_available_duration_ms = tuple(not_available_duration_ms)
        self.fault_tolerance = LatencyFaultTolerance(clock_ms=clock_ms)

    def select_one_message_queue(self, tpi: TopicPublishInfo, last_broker_name: str | None) -> MessageQueue:
        if not self.enabled:
            return tpi.select_one_message_queue(last_broker_name)
        mqs = tpi.message_queue_list
        for _ in range(len(mqs)):
            mq = mqs[tpi.next_index() % len(mqs)]
            if self.fault_tolerance.is_available(mq.broker_name):
                return mq
        # every broker is isolated: take the least bad one if it still has queues
        not_best = self.fault_tolerance.pick_one_at_least()
        if not_best is not None:
            candidates = [mq for mq in mqs if mq.broker_name == not_best]
            if candidates:
                return candidates[tpi.next_index() % len(candidates)]
            self.fault_tolerance.remove(not_best)
        return tpi.select_one_message_queue(last_broker_name)

    def compute_not_available_duration(self, current_latency_ms: int) -> int:
        for i in range(len(self.latency_max_ms) - 1, -1, -1):
            if current_latency_ms >= self.latency_max_ms[i]:
                return self.not_available_duration_ms[i]
        return 0

    def update_fault_item(self, broker_name: str, current_latency_ms: int, isolation: bool) -> None:
        """Report one send: its latency, or ``isolation=True`` for a failure."""
        if not self.enabled:
            return
        latency = _ISOLATION_LATENCY_MS if isolation else current_latency_ms
        duration = self.compute_not_available_duration(latency)
        self.fault_tolerance.update_fault_item(broker_name, current_latency_ms, duration)
