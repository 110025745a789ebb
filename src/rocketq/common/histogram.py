"""Histogram: a fixed-bucket latency distribution cheap enough for a hot path.

The broker records send, pull and flush latencies on every request whether or not anyone
scrapes metrics, so recording must cost little and need no third-party package: a scan of
a short tuple of upper bounds (native float compares when compiled; no ``bisect`` call) and
two additions under a lock. Readers
(the Prometheus collector in :mod:`rocketq.broker.metrics`, at scrape time) take a
:meth:`Histogram.snapshot` of cumulative bucket counts, the sum and the count.

Plays the part of the OpenTelemetry ``LongHistogram`` instruments of RocketMQ 5's
``BrokerMetricsManager`` (``rocketmq_rpc_latency``), whose explicit bucket bounds in
milliseconds are the default here.

Invariants: counts only grow; ``snapshot().buckets`` is cumulative (Prometheus ``le``
semantics) and its last entry, for ``+Inf``, equals ``count``. Thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["RPC_LATENCY_BOUNDS_MS", "Histogram", "HistogramSnapshot"]

#: RocketMQ 5 ``rocketmq_rpc_latency`` bucket bounds, milliseconds (1, 3, 5, 10, 100 ms, 1 s, 3 s).
RPC_LATENCY_BOUNDS_MS: tuple[float, ...] = (1.0, 3.0, 5.0, 10.0, 100.0, 1000.0, 3000.0)


@dataclass(frozen=True)
class HistogramSnapshot:
    """Cumulative counts per upper bound (the last one is ``+Inf``), their sum and count."""

    bounds: tuple[float, ...]
    buckets: tuple[int, ...]
    sum: float
    count: int


class Histogram:
    """Observations counted into buckets with upper bounds ``bounds`` (sorted, ascending)."""

    __slots__ = ("_counts", "_lock", "_sum", "bounds")

    def __init__(self, bounds: tuple[float, ...] = RPC_LATENCY_BOUNDS_MS) -> None:
        if not bounds or list(bounds) != sorted(bounds):
            raise ValueError(f"bounds must be a non-empty ascending tuple, got {bounds!r}")
        self.bounds = bounds
        self._counts = [0] * (len(bounds) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        """Count one observation (a value equal to a bound falls in that bound's bucket)."""
        i = 0
        for bound in self.bounds:  # bisect_left over a handful of bounds, without a call
            if value <= bound:
                break
            i += 1
        with self._lock:
            self._counts[i] += 1
            self._sum += value

    def snapshot(self) -> HistogramSnapshot:
        with self._lock:
            counts = list(self._counts)
            total = self._sum
        cumulative: list[int] = []
        running = 0
        for c in counts:
            running += c
            cumulative.append(running)
        return HistogramSnapshot(self.bounds, tuple(cumulative), total, running)
