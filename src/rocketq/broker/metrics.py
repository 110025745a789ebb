"""Broker metrics for Prometheus: a collector that reads the broker's state at scrape time.

Nothing here runs per message. The hot path only updates what the broker keeps anyway
(:class:`~rocketq.broker.stats.BrokerStats` counters and latency histograms, the store's
flush histogram); :class:`BrokerCollector` turns those, the offset table, the store, the
client tables and the lock table into Prometheus metric families when ``/metrics`` is
scraped. ``prometheus_client`` is an optional extra (``rocketq[metrics]``): this module
imports it lazily, so the broker imports and runs without it, and
:func:`start_metrics_server` raises :class:`MetricsUnavailableError` (a clear message
naming the extra) when it is missing.

Names follow RocketMQ 5's broker metrics (``BrokerMetricsConstant``: ``rocketmq_messages_in_total``,
``rocketmq_consumer_lag_messages``, ``rocketmq_rpc_latency``, ``rocketmq_storage_*``...) where
one fits, else rocketmq-exporter's (``rocketmq_brokeruntime_commitlog_disk_ratio``,
``rocketmq_producer_offset``, ``rocketmq_consumer_offset``, ``rocketmq_broker_tps``...), else a
``rocketmq_`` name in the same style; :data:`METRIC_ORIGINS` says which and
``docs/metrics.md`` lists them. Every sample carries ``cluster``, ``node_type="broker"`` and
``node_id`` (the broker name), as RocketMQ 5's do.

Threading: ``prometheus_client``'s HTTP server answers on its own daemon thread; the
collector reads tables by copying them (each copy is one C-level call under the GIL, or
taken under the owning lock), never mutating anything. Mirrors the Prometheus half of
``org.apache.rocketmq.broker.metrics.BrokerMetricsManager``.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rocketq.common.histogram import HistogramSnapshot
from rocketq.errors import RocketqError
from rocketq.protocol.mixall import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = [
    "METRIC_ORIGINS",
    "BrokerCollector",
    "MetricsServer",
    "MetricsUnavailableError",
    "start_metrics_server",
]

#: metric name -> where the name comes from ("rocketmq5", "exporter" or "rocketq").
METRIC_ORIGINS: dict[str, str] = {
    "rocketmq_messages_in_total": "rocketmq5",
    "rocketmq_throughput_in_total": "rocketmq5",
    "rocketmq_messages_out_total": "rocketmq5",
    "rocketmq_throughput_out_total": "rocketmq5",
    "rocketmq_consumer_lag_messages": "rocketmq5",
    "rocketmq_consumer_connections": "rocketmq5",
    "rocketmq_producer_connections": "rocketmq5",
    "rocketmq_send_to_dlq_messages_total": "rocketmq5",
    "rocketmq_rpc_latency": "rocketmq5",
    "rocketmq_storage_size": "rocketmq5",
    "rocketmq_storage_flush_behind_bytes": "rocketmq5",
    "rocketmq_storage_dispatch_behind_bytes": "rocketmq5",
    "rocketmq_storage_message_reserve_time": "rocketmq5",
    "rocketmq_topic_number": "rocketmq5",
    "rocketmq_consumer_group_number": "rocketmq5",
    "rocketmq_brokeruntime_commitlog_disk_ratio": "exporter",
    "rocketmq_producer_offset": "exporter",
    "rocketmq_consumer_offset": "exporter",
    "rocketmq_broker_tps": "exporter",
    "rocketmq_broker_qps": "exporter",
    "rocketmq_send_to_retry_messages_total": "rocketq",
    "rocketmq_pull_long_polling_holds_total": "rocketq",
    "rocketmq_pull_long_polling_held": "rocketq",
    "rocketmq_queue_locks_held": "rocketq",
    "rocketmq_storage_flush_latency": "rocketq",
}


class MetricsUnavailableError(RocketqError):
    """``--metrics-port`` was asked for but ``prometheus_client`` is not installed."""


def _require_prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:  # pragma: no cover - exercised where the extra is absent
        raise MetricsUnavailableError(
            "broker metrics need prometheus_client: pip install 'rocketq[metrics]'"
        ) from exc
    return prometheus_client


def _dir_size(root: str) -> int:
    """Bytes of the files under ``root`` (``du``-like; mapped files count at full size)."""
    total = 0
    stack = [root]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


class BrokerCollector:
    """A ``prometheus_client`` custom collector over one :class:`BrokerController`."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        cfg = broker.config
        self._labels = {"cluster": cfg.broker_cluster_name, "node_type": "broker", "node_id": cfg.broker_name}

    # prometheus_client calls describe() when registering; None means "call collect()".
    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        broker = self.broker
        base = self._labels
        base_keys = list(base)
        base_vals = list(base.values())
        stats = broker.stats
        store = broker.store

        def counter(name: str, doc: str, keys: list[str]) -> Any:
            return CounterMetricFamily(name.removesuffix("_total"), doc, labels=base_keys + keys)

        def gauge(name: str, doc: str, keys: list[str]) -> Any:
            return GaugeMetricFamily(name, doc, labels=base_keys + keys)

        # ---- messages and bytes in/out (BrokerStatsManager counters)
        puts, gets, holds = stats.counters()
        m_in = counter("rocketmq_messages_in_total", "Messages stored, per topic.", ["topic"])
        b_in = counter("rocketmq_throughput_in_total", "Message body bytes stored, per topic.", ["topic"])
        dlq = counter(
            "rocketmq_send_to_dlq_messages_total", "Messages moved to a group's DLQ.", ["consumer_group"]
        )
        retry = counter(
            "rocketmq_send_to_retry_messages_total",
            "Messages sent back into a group's retry topic.",
            ["consumer_group"],
        )
        for topic, (msgs, size) in sorted(puts.items()):
            m_in.add_metric([*base_vals, topic], msgs)
            b_in.add_metric([*base_vals, topic], size)
            if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
                dlq.add_metric([*base_vals, topic[len(DLQ_GROUP_TOPIC_PREFIX) :]], msgs)
            elif topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                retry.add_metric([*base_vals, topic[len(RETRY_GROUP_TOPIC_PREFIX) :]], msgs)
        m_out = counter(
            "rocketmq_messages_out_total",
            "Messages pulled, per topic and group.",
            ["topic", "consumer_group"],
        )
        b_out = counter(
            "rocketmq_throughput_out_total",
            "Message bytes pulled, per topic and group.",
            ["topic", "consumer_group"],
        )
        for key, (msgs, size) in sorted(gets.items()):
            topic, _, group = key.rpartition("@")
            m_out.add_metric([*base_vals, topic, group], msgs)
            b_out.add_metric([*base_vals, topic, group], size)
        yield from (m_in, b_in, m_out, b_out, dlq, retry)

        # ---- offsets and lag (ConsumerOffsetManager vs the consume queues)
        lag = gauge(
            "rocketmq_consumer_lag_messages",
            "Broker max offset minus committed offset, summed over the queues.",
            ["topic", "consumer_group"],
        )
        cons = gauge(
            "rocketmq_consumer_offset",
            "Committed offsets summed over the queues.",
            ["topic", "consumer_group"],
        )
        max_cache: dict[tuple[str, int], int] = {}

        def max_offset(topic: str, qid: int) -> int:
            key = (topic, qid)
            if key not in max_cache:
                max_cache[key] = max(0, store.get_max_offset_in_queue(topic, qid))
            return max_cache[key]

        for key, queues in sorted(broker.consumer_offset_manager.snapshot().items()):
            topic, _, group = key.partition("@")
            total_lag = 0
            total_off = 0
            for qid, committed in queues.items():
                total_lag += max(0, max_offset(topic, qid) - max(0, committed))
                total_off += max(0, committed)
            lag.add_metric([*base_vals, topic, group], total_lag)
            cons.add_metric([*base_vals, topic, group], total_off)
        prod = gauge("rocketmq_producer_offset", "Max offsets summed over a topic's queues.", ["topic"])
        topics = dict(broker.topic_config_manager.topic_config_table)
        for topic, tc in sorted(topics.items()):
            prod.add_metric(
                [*base_vals, topic], sum(max_offset(topic, q) for q in range(max(tc.write_queue_nums, 0)))
            )
        yield from (lag, cons, prod)
        n_topics = gauge("rocketmq_topic_number", "Topics configured on the broker.", [])
        n_topics.add_metric(base_vals, len(topics))
        n_groups = gauge("rocketmq_consumer_group_number", "Subscription groups on the broker.", [])
        n_groups.add_metric(base_vals, len(broker.subscription_group_manager.subscription_group_table))
        yield from (n_topics, n_groups)

        # ---- clients and locks
        conn = gauge(
            "rocketmq_consumer_connections", "Consumer client channels, per group.", ["consumer_group"]
        )
        for group, info in sorted(dict(broker.consumer_manager.consumer_table).items()):
            conn.add_metric([*base_vals, group], len(info.get_all_channels()))
        pconn = gauge(
            "rocketmq_producer_connections", "Producer client channels, per group.", ["producer_group"]
        )
        for group, chans in sorted(dict(broker.producer_manager.group_channel_table).items()):
            pconn.add_metric([*base_vals, group], len(chans))
        locks = gauge(
            "rocketmq_queue_locks_held", "Live queue locks (orderly consumers).", ["consumer_group"]
        )
        for group, n in sorted(broker.rebalance_lock_manager.live_lock_counts().items()):
            locks.add_metric([*base_vals, group], n)
        yield from (conn, pconn, locks)

        # ---- latencies and long polling
        rpc = HistogramMetricFamily(
            "rocketmq_rpc_latency",
            "Broker processing time of requests, milliseconds.",
            labels=[*base_keys, "protocol_type", "request_code"],
        )
        for code, snap in (("send_message", stats.send_latency), ("pull_message", stats.pull_latency)):
            _add_histogram(rpc, [*base_vals, "remoting", code], snap.snapshot())
        yield rpc
        flush = HistogramMetricFamily(
            "rocketmq_storage_flush_latency",
            "SYNC_FLUSH group-commit flush time, milliseconds.",
            labels=base_keys,
        )
        _add_histogram(flush, base_vals, store.flush_latency.snapshot())
        yield flush
        held_total = counter("rocketmq_pull_long_polling_holds_total", "Pulls parked by long polling.", [])
        held_total.add_metric(base_vals, holds)
        held = gauge("rocketmq_pull_long_polling_held", "Pulls parked right now.", [])
        processor = getattr(broker, "pull_processor", None)
        held.add_metric(
            base_vals, _read(lambda: processor.hold_service.held_count) if processor is not None else 0
        )
        yield from (held_total, held)

        # ---- store
        put_tps = stats.put_tps()
        get_tps = stats.get_transferred_tps()
        tps = gauge("rocketmq_broker_tps", "Messages stored per second (10 s window).", [])
        tps.add_metric(base_vals, put_tps[0])
        qps = gauge("rocketmq_broker_qps", "Messages pulled per second (10 s window).", [])
        qps.add_metric(base_vals, get_tps[0])
        root = store.config.store_path_root_dir
        size = gauge("rocketmq_storage_size", "Bytes of the store's files.", [])
        size.add_metric(base_vals, _dir_size(root))
        ratio = gauge("rocketmq_brokeruntime_commitlog_disk_ratio", "Used fraction of the store's disk.", [])
        try:
            usage = shutil.disk_usage(root)
            ratio.add_metric(base_vals, (usage.total - usage.free) / usage.total if usage.total else 0.0)
        except OSError:
            ratio.add_metric(base_vals, 0.0)
        max_phy = store.get_max_phy_offset()
        flush_behind = gauge(
            "rocketmq_storage_flush_behind_bytes", "Commit-log bytes written but not yet flushed.", []
        )
        flush_behind.add_metric(base_vals, max(0, max_phy - store.commit_log.flushed_where))
        dispatch = gauge(
            "rocketmq_storage_dispatch_behind_bytes",
            "Commit-log bytes not yet dispatched to consume queues (0: rocketq dispatches on put).",
            [],
        )
        dispatch.add_metric(base_vals, 0)
        reserve = gauge(
            "rocketmq_storage_message_reserve_time", "Age of the oldest stored message, milliseconds.", []
        )
        earliest = broker.earliest_message_time()
        reserve.add_metric(base_vals, max(0, int(time.time() * 1000) - earliest) if earliest > 0 else 0)
        yield from (tps, qps, size, ratio, flush_behind, dispatch, reserve)


def _read(fn: Callable[[], int]) -> int:
    """``fn()``, retried when the event loop resized the table being summed (RuntimeError)."""
    for _ in range(5):
        try:
            return fn()
        except RuntimeError:
            continue
    return fn()


def _add_histogram(family: Any, labels: list[str], snap: HistogramSnapshot) -> None:
    buckets = [(_le(b), c) for b, c in zip(snap.bounds, snap.buckets, strict=False)]
    buckets.append(("+Inf", snap.buckets[-1]))
    family.add_metric(labels, buckets, snap.sum)


def _le(bound: float) -> str:
    return repr(float(bound))


class MetricsServer:
    """A running ``/metrics`` endpoint; :meth:`close` stops it (idempotent)."""

    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.host: str = server.server_address[0]
        self.port: int = int(server.server_port)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    def close(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        server.shutdown()
        server.server_close()
        self._thread.join(timeout=5)


def start_metrics_server(broker: BrokerController, port: int, host: str = "0.0.0.0") -> MetricsServer:
    """Serve ``broker``'s metrics at ``http://host:port/metrics`` (port 0 = OS-assigned).

    Uses a registry of its own (only this broker's families, no process collectors).
    Raises :class:`MetricsUnavailableError` without ``prometheus_client``.
    """
    pc = _require_prometheus()
    registry = pc.CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    server, thread = pc.start_http_server(port, addr=host, registry=registry)
    return MetricsServer(server, thread)
