"""Client metrics: an opt-in hook interface and its Prometheus implementation.

Producers and push consumers call a :class:`ClientMetrics` when one is set in
``ClientConfig.metrics`` (default None: no metrics, no cost beyond one attribute check).
The hook points are few and small: a sync send's latency and result
(``Producer.send``/``send_async``), each listener call (a ``ConsumeMessageHook`` the push
consumer registers, so the consume services are untouched), flow-control pauses, rebalance
changes and failed lock renewals (``RebalanceImpl``), and a source of the process queues'
cached messages and bytes read at scrape time.

:class:`PrometheusClientMetrics` implements it with ``prometheus_client`` (the optional
extra ``rocketq[metrics]``, imported only when it is built), naming the metrics as RocketMQ
5's clients do (``rocketmq_send_cost_time``, ``rocketmq_process_time``,
``rocketmq_consumer_cached_messages``, ``rocketmq_consumer_cached_bytes``) plus three
rocketq counters in the same style; ``docs/metrics.md`` lists them. Mirrors the role of
``org.apache.rocketmq.client.java.metrics.ClientMeterManager`` (RocketMQ 5 Java client).

Threading: hooks run on the caller's thread (sends), consume threads (listener calls), the
pull thread (flow control) and the rebalance thread; implementations must be thread-safe
and must not block. An exception raised by a hook is logged and dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from rocketq.client.consumer.listener import ConsumeMessageContext
from rocketq.protocol.message import Message

__all__ = ["METRIC_NAMES", "CachedSource", "ClientMetrics", "PrometheusClientMetrics", "safely", "topic_of"]

log = logging.getLogger(__name__)

#: ``() -> [(topic, cached messages, cached bytes), ...]`` of one consumer, read at scrape time.
CachedSource = Callable[[], Iterable[tuple[str, int, int]]]

#: RocketMQ 5 client buckets, milliseconds: send cost and process time.
SEND_BUCKETS_MS = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
PROCESS_BUCKETS_MS = (1.0, 5.0, 10.0, 100.0, 10_000.0, 60_000.0)

_T0 = "__rocketq_metrics_t0"

#: every family :class:`PrometheusClientMetrics` exports (counters with their ``_total``).
METRIC_NAMES: tuple[str, ...] = (
    "rocketmq_send_cost_time",
    "rocketmq_process_time",
    "rocketmq_consumer_messages_total",
    "rocketmq_consumer_flow_control_total",
    "rocketmq_consumer_rebalance_total",
    "rocketmq_consumer_lock_renew_failed_total",
    "rocketmq_consumer_cached_messages",
    "rocketmq_consumer_cached_bytes",
)


class ClientMetrics:
    """The hook interface; every method does nothing here (override what you record)."""

    def on_send(self, topic: str, latency_ms: float, ok: bool) -> None:
        """A send finished (``ok`` False: it raised or the status was not SEND_OK)."""

    def on_consume(self, group: str, topic: str, latency_ms: float, msgs: int, ok: bool) -> None:
        """A listener call over ``msgs`` messages finished (``ok``: it returned success)."""

    def on_flow_control(self, group: str, reason: str) -> None:
        """A pull was postponed by flow control (``reason``: count, size or span)."""

    def on_rebalance(self, group: str, topic: str, queues: int) -> None:
        """The queues a consumer owns of ``topic`` changed; it now owns ``queues``."""

    def on_lock_renew_failed(self, group: str, queues: int) -> None:
        """A lock renewal (``lockAll``) did not renew ``queues`` owned queues."""

    def watch_cache(self, group: str, client_id: str, source: CachedSource) -> None:
        """Read ``source`` when metrics are collected (until :meth:`unwatch_cache`)."""

    def unwatch_cache(self, group: str, client_id: str) -> None:
        """Stop reading the source registered for ``(group, client_id)``."""

    def consume_hook(self, group: str) -> _ConsumeHook:
        """A ``ConsumeMessageHook`` that times listener calls into :meth:`on_consume`."""
        return _ConsumeHook(self, group)


def topic_of(msg: Message | Sequence[Message]) -> str:
    """The topic of a message or of a batch's first message (the send metrics' label)."""
    first = msg if isinstance(msg, Message) else next(iter(msg), None)
    return first.topic if first is not None else ""


def safely(call: Callable[[], None]) -> None:
    """Run one hook call; an exception is logged, never propagated into the client."""
    try:
        call()
    except Exception:
        log.exception("client metrics hook failed")


class _ConsumeHook:
    """Times each listener call (before/after) and reports it to :meth:`ClientMetrics.on_consume`."""

    def __init__(self, metrics: ClientMetrics, group: str) -> None:
        self._metrics = metrics
        self._group = group

    def hook_name(self) -> str:
        return "rocketq-client-metrics"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        context.props[_T0] = repr(time.perf_counter())

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        started = float(context.props.get(_T0, repr(time.perf_counter())))
        latency = (time.perf_counter() - started) * 1000.0
        self._metrics.on_consume(
            self._group, context.message_queue.topic, latency, len(context.msg_list), context.success
        )


class PrometheusClientMetrics(ClientMetrics):
    """:class:`ClientMetrics` into ``prometheus_client`` metrics on ``registry``.

    ``registry`` None = a new ``CollectorRegistry`` of its own (``self.registry``); pass
    ``prometheus_client.REGISTRY`` to join the process-wide one. :meth:`serve` starts an
    HTTP endpoint for it. ImportError (naming ``rocketq[metrics]``) without the package.
    """

    def __init__(self, registry: Any = None) -> None:
        try:
            import prometheus_client as pc
        except ImportError as exc:  # pragma: no cover - exercised where the extra is absent
            raise ImportError(
                "client metrics need prometheus_client: pip install 'rocketq[metrics]'"
            ) from exc
        self.registry = registry if registry is not None else pc.CollectorRegistry(auto_describe=False)
        self._pc = pc
        r = self.registry
        self.send_cost = pc.Histogram(
            "rocketmq_send_cost_time",
            "Send latency, milliseconds.",
            ["topic", "invocation_status"],
            buckets=SEND_BUCKETS_MS,
            registry=r,
        )
        self.process_time = pc.Histogram(
            "rocketmq_process_time",
            "Listener time per call, milliseconds.",
            ["topic", "consumer_group", "invocation_status"],
            buckets=PROCESS_BUCKETS_MS,
            registry=r,
        )
        self.consumed = pc.Counter(
            "rocketmq_consumer_messages",
            "Messages handed to listeners.",
            ["topic", "consumer_group", "invocation_status"],
            registry=r,
        )
        self.flow_control = pc.Counter(
            "rocketmq_consumer_flow_control",
            "Pulls postponed by flow control.",
            ["consumer_group", "reason"],
            registry=r,
        )
        self.rebalances = pc.Counter(
            "rocketmq_consumer_rebalance",
            "Changes of the owned queue set.",
            ["consumer_group", "topic"],
            registry=r,
        )
        self.lock_failures = pc.Counter(
            "rocketmq_consumer_lock_renew_failed",
            "Owned queues whose lock renewal failed.",
            ["consumer_group"],
            registry=r,
        )
        self._sources: dict[tuple[str, str], CachedSource] = {}
        self._lock = threading.Lock()
        r.register(_CacheCollector(self))

    def on_send(self, topic: str, latency_ms: float, ok: bool) -> None:
        self.send_cost.labels(topic, "success" if ok else "failure").observe(latency_ms)

    def on_consume(self, group: str, topic: str, latency_ms: float, msgs: int, ok: bool) -> None:
        status = "success" if ok else "failure"
        self.process_time.labels(topic, group, status).observe(latency_ms)
        self.consumed.labels(topic, group, status).inc(msgs)

    def on_flow_control(self, group: str, reason: str) -> None:
        self.flow_control.labels(group, reason).inc()

    def on_rebalance(self, group: str, topic: str, queues: int) -> None:
        self.rebalances.labels(group, topic).inc()

    def on_lock_renew_failed(self, group: str, queues: int) -> None:
        self.lock_failures.labels(group).inc(queues)

    def watch_cache(self, group: str, client_id: str, source: CachedSource) -> None:
        with self._lock:
            self._sources[(group, client_id)] = source

    def unwatch_cache(self, group: str, client_id: str) -> None:
        with self._lock:
            self._sources.pop((group, client_id), None)

    def cache_sources(self) -> list[tuple[str, str, CachedSource]]:
        with self._lock:
            return [(g, c, s) for (g, c), s in self._sources.items()]

    def serve(self, port: int, addr: str = "127.0.0.1") -> Any:
        """Serve ``/metrics`` of this registry on ``addr:port``; returns ``(server, thread)``."""
        return self._pc.start_http_server(port, addr=addr, registry=self.registry)


class _CacheCollector:
    """``rocketmq_consumer_cached_messages/bytes`` from the watched consumers, at scrape time."""

    def __init__(self, owner: PrometheusClientMetrics) -> None:
        self._owner = owner

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        labels = ["topic", "consumer_group", "client_id"]
        msgs = GaugeMetricFamily(
            "rocketmq_consumer_cached_messages", "Messages in process queues.", labels=labels
        )
        size = GaugeMetricFamily("rocketmq_consumer_cached_bytes", "Bytes in process queues.", labels=labels)
        for group, client_id, source in self._owner.cache_sources():
            per_topic: dict[str, list[int]] = {}
            try:
                for topic, count, nbytes in source():
                    acc = per_topic.setdefault(topic, [0, 0])
                    acc[0] += count
                    acc[1] += nbytes
            except Exception:
                log.exception("reading the process queues of %s failed", group)
                continue
            for topic, (count, nbytes) in sorted(per_topic.items()):
                msgs.add_metric([topic, group, client_id], count)
                size.add_metric([topic, group, client_id], nbytes)
        yield msgs
        yield size
