"""Broker statistics: message counts and rates for GET_BROKER_RUNTIME_INFO and admin tools.

Mirrors the parts of ``org.apache.rocketmq.store.stats.BrokerStats`` (``msgPutTotal*`` /
``msgGetTotal*``) and ``BrokerStatsManager`` (per-topic put and per-group get counters,
``TOPIC_PUT_NUMS``/``GROUP_GET_NUMS``...) that rocketq reports. Rates are computed like
``StoreStatsService``: samples of the cumulative counters, and ``(now - then) / seconds``
over the last 10 s, 1 min and 10 min windows.

Per-key figures for VIEW_BROKER_STATS_DATA (``StatsItem.getStatsDataInMinute/Hour/Day``):
:meth:`BrokerStats.sample` also snapshots the per-topic put and per-``topic@group`` get
counters into three tiers (every 10 s x 7, every 10 min x 7, every hour x 25, as
``StatsItem``'s ``csListMinute/Hour/Day``); :meth:`BrokerStats.stats_item` measures from the
oldest snapshot of a tier to the live counters, so figures are available at once.

Latencies (:class:`~rocketq.common.histogram.Histogram`, milliseconds): ``send_latency``
and ``pull_latency`` time each SEND/PULL request's processing on the broker; with
``long_poll_holds`` (pulls parked by long polling) they are read at scrape time by
:mod:`rocketq.broker.metrics` (RocketMQ 5's ``rocketmq_rpc_latency``), recorded whether or
not metrics are served: one bisect and two additions per request.

Invariants: counters only grow; :meth:`BrokerStats.sample` is called about once a second
by the broker (any cadence works, windows use the samples' own timestamps);
:meth:`BrokerStats.record_day` (Java ``record()``, daily at midnight) moves
"today morning" to "yesterday morning". Thread-safe; the clock is injected.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.common.histogram import Histogram

__all__ = [
    "GROUP_GET_NUMS",
    "GROUP_GET_SIZE",
    "TOPIC_PUT_NUMS",
    "TOPIC_PUT_SIZE",
    "BrokerStats",
    "StatsItem",
    "StatsSnapshot",
]

#: ``BrokerStatsManager`` stats names (VIEW_BROKER_STATS_DATA ``statsName``); the key is
#: the topic for TOPIC_*, ``topic@group`` for GROUP_*.
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"

#: ``StatsItem`` sampling tiers: name -> (period ms, snapshots kept).
_TIERS: dict[str, tuple[int, int]] = {
    "minute": (10_000, 7),
    "hour": (600_000, 7),
    "day": (3_600_000, 25),
}


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass
class StatsItem:
    """Cumulative counters of one key (a topic, or ``topic@group``)."""

    msgs: int = 0
    size: int = 0
    times: int = 0


@dataclass(frozen=True)
class StatsSnapshot:
    """``StatsSnapshot``: the counter's growth over a window, its rate and average per call."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


#: one per-key snapshot: (ms, {(stats name, key): (value, times)})
_KeySample = tuple[int, dict[tuple[str, str], tuple[int, int]]]


class BrokerStats:
    """Counters for one broker; see the module docstring."""

    #: Windows of the rate strings, seconds (StoreStatsService: 10 s, 60 s, 600 s).
    WINDOWS_S: tuple[int, ...] = (10, 60, 600)

    def __init__(self, *, clock_ms: Callable[[], int] = _monotonic_ms) -> None:
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self.boot_ms = clock_ms()
        self.msg_put_total = 0
        self.msg_get_total = 0
        self.put_size_total = 0
        self.put_failed_times = 0
        self.get_found_times = 0
        self.get_miss_times = 0
        self.msg_put_total_today_morning = 0
        self.msg_put_total_yesterday_morning = 0
        self.msg_get_total_today_morning = 0
        self.msg_get_total_yesterday_morning = 0
        self.long_poll_holds = 0
        self.send_latency = Histogram()
        self.pull_latency = Histogram()
        self.topic_put: dict[str, StatsItem] = {}
        self.group_get: dict[str, StatsItem] = {}
        # (ms, put msgs, got msgs, found times, miss times)
        self._samples: collections.deque[tuple[int, int, int, int, int]] = collections.deque(maxlen=700)
        self._key_samples: dict[str, collections.deque[_KeySample]] = {
            tier: collections.deque(maxlen=kept) for tier, (_, kept) in _TIERS.items()
        }

    # ------------------------------------------------------------------ counting
    def inc_topic_put(self, topic: str, msgs: int, size: int) -> None:
        """A put of ``msgs`` messages (``size`` bytes) into ``topic`` succeeded."""
        with self._lock:
            item = self.topic_put.get(topic)  # not setdefault: no StatsItem built per put
            if item is None:
                item = self.topic_put[topic] = StatsItem()
            item.msgs += msgs
            item.size += size
            item.times += 1
            self.msg_put_total += msgs
            self.put_size_total += size

    def inc_put_failed(self) -> None:
        with self._lock:
            self.put_failed_times += 1

    def inc_group_get(self, group: str, topic: str, msgs: int, size: int) -> None:
        """A pull by ``group`` returned ``msgs`` messages of ``topic`` (0 = a miss)."""
        with self._lock:
            key = f"{topic}@{group}"
            item = self.group_get.get(key)
            if item is None:
                item = self.group_get[key] = StatsItem()
            item.msgs += msgs
            item.size += size
            item.times += 1
            self.msg_get_total += msgs
            if msgs:
                self.get_found_times += 1
            else:
                self.get_miss_times += 1

    def inc_long_poll_hold(self) -> None:
        """A pull found nothing and was parked by long polling (``PullRequestHoldService``)."""
        with self._lock:
            self.long_poll_holds += 1

    def counters(self) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], int]:
        """A consistent copy for metrics: per-topic put and per-``topic@group`` get
        ``(msgs, bytes)``, and the long-poll hold count."""
        with self._lock:
            puts = {t: (i.msgs, i.size) for t, i in self.topic_put.items()}
            gets = {k: (i.msgs, i.size) for k, i in self.group_get.items()}
            return puts, gets, self.long_poll_holds

    def topic_put_nums(self, topic: str) -> int:
        item = self.topic_put.get(topic)
        return 0 if item is None else item.msgs

    def group_get_nums(self, group: str, topic: str) -> int:
        item = self.group_get.get(f"{topic}@{group}")
        return 0 if item is None else item.msgs

    def on_topic_deleted(self, topic: str) -> None:
        with self._lock:
            self.topic_put.pop(topic, None)
            for key in [k for k in self.group_get if k.startswith(topic + "@")]:
                del self.group_get[key]

    def on_group_deleted(self, group: str) -> None:
        with self._lock:
            for key in [k for k in self.group_get if k.endswith("@" + group)]:
                del self.group_get[key]

    # ------------------------------------------------------------------ sampling
    def sample(self) -> None:
        """Take one sample of the cumulative counters (StoreStatsService sampling)."""
        with self._lock:
            self._samples.append(
                (
                    self._clock_ms(),
                    self.msg_put_total,
                    self.msg_get_total,
                    self.get_found_times,
                    self.get_miss_times,
                )
            )
        self._sample_keys()

    def _key_values(self) -> dict[tuple[str, str], tuple[int, int]]:
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for topic, item in self.topic_put.items():
            out[(TOPIC_PUT_NUMS, topic)] = (item.msgs, item.times)
            out[(TOPIC_PUT_SIZE, topic)] = (item.size, item.times)
        for key, item in self.group_get.items():
            out[(GROUP_GET_NUMS, key)] = (item.msgs, item.times)
            out[(GROUP_GET_SIZE, key)] = (item.size, item.times)
        return out

    def _sample_keys(self) -> None:
        now = self._clock_ms()
        with self._lock:
            values: dict[tuple[str, str], tuple[int, int]] | None = None
            for tier, (period, _) in _TIERS.items():
                samples = self._key_samples[tier]
                if samples and now - samples[-1][0] < period:
                    continue
                if values is None:
                    values = self._key_values()
                samples.append((now, values))

    def stats_item(self, stats_name: str, stats_key: str) -> dict[str, StatsSnapshot] | None:
        """``BrokerStatsManager.getStatsItem`` + ``getStatsDataInMinute/Hour/Day``.

        ``{"minute": ..., "hour": ..., "day": ...}`` for a counter that exists, else None.
        Each window runs from the tier's oldest snapshot (or the broker's boot, with zero
        counters) to now.
        """
        now = self._clock_ms()
        with self._lock:
            current = self._key_values().get((stats_name, stats_key))
            if current is None:
                return None
            out: dict[str, StatsSnapshot] = {}
            for tier, samples in self._key_samples.items():
                if samples:
                    then_ms, values = samples[0]
                    then = values.get((stats_name, stats_key), (0, 0))
                else:
                    then_ms, then = self.boot_ms, (0, 0)
                total = current[0] - then[0]
                times = current[1] - then[1]
                span = now - then_ms
                out[tier] = StatsSnapshot(
                    sum=total,
                    tps=total * 1000.0 / span if span > 0 else 0.0,
                    avgpt=total / times if times > 0 else 0.0,
                )
            return out

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        """``BrokerStatsManager.tpsGroupGetNums``: the group's pulled messages/s over the last minute."""
        item = self.stats_item(GROUP_GET_NUMS, f"{topic}@{group}")
        return item["minute"].tps if item is not None else 0.0

    def record_day(self) -> None:
        """``BrokerStats.record``: the daily roll-over of the morning totals."""
        with self._lock:
            self.msg_put_total_yesterday_morning = self.msg_put_total_today_morning
            self.msg_get_total_yesterday_morning = self.msg_get_total_today_morning
            self.msg_put_total_today_morning = self.msg_put_total
            self.msg_get_total_today_morning = self.msg_get_total

    def _rate(self, index: int, window_s: int) -> float:
        samples = list(self._samples)
        if len(samples) < 2:
            return 0.0
        last = samples[-1]
        first = samples[0]
        for s in reversed(samples):
            if last[0] - s[0] >= window_s * 1000:
                first = s
                break
        span_ms = last[0] - first[0]
        if span_ms <= 0:
            return 0.0
        return (last[index] - first[index]) * 1000.0 / span_ms

    def rates(self, index: int) -> list[float]:
        """Rates of sample column ``index`` (1 put, 2 get, 3 found, 4 miss) over each window."""
        with self._lock:
            return [self._rate(index, w) for w in self.WINDOWS_S]

    def put_tps(self) -> list[float]:
        return self.rates(1)

    def get_transferred_tps(self) -> list[float]:
        return self.rates(2)

    def runtime_text(self) -> str:
        """``StoreStatsService.getFormatRuntime``: ``[ D days, H hours, M minutes, S seconds ]``."""
        secs = max(0, (self._clock_ms() - self.boot_ms) // 1000)
        days, rem = divmod(secs, 86400)
        hours, rem = divmod(rem, 3600)
        minutes, seconds = divmod(rem, 60)
        return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"
