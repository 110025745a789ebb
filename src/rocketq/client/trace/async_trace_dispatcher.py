"""Batching and sending trace records: ``AsyncTraceDispatcher``.

Mirrors ``org.apache.rocketmq.client.trace.AsyncTraceDispatcher`` (4.9.7):

* :meth:`AsyncTraceDispatcher.append` never blocks: a context goes into a bounded queue
  (1,024, as Java's ``traceContextQueue``) or is dropped and counted (:attr:`dropped`) —
  a trace problem never fails or slows a send or a consume beyond that offer.
* one worker thread drains the queue in 100 ms windows, encodes each context
  (:mod:`~rocketq.client.trace.trace_data_encoder`) and appends it to its topic's
  segment; a segment is sent as one trace message once it holds 118,000 characters
  (``maxMsgSize - 10 * 1000``) or its first record is 500 ms old.
* a trace message goes to the trace topic (``RMQ_SYS_TRACE_TOPIC`` or the custom one)
  through the dispatcher's own producer (group ``_INNER_TRACE_PRODUCER-<group>-<type>-<n>``,
  instance ``PID_CLIENT_INNER_TRACE_PRODUCER_<namesrv>``, 5 s send timeout), sent
  asynchronously, with every record's msgId and keys as its KEYS. A failed send is logged
  (rate-limited) and counted (:attr:`send_failures`); the records are lost, as in Java.
* :meth:`shutdown` flushes what is queued (for at most 500 ms) and stops the producer.

The batching (:class:`TraceBuffer`), the trace message (:func:`trace_message`) and the trace
producer's configuration (:func:`trace_producer_configs`) are pure and shared with the asyncio
dispatcher (:class:`rocketq.aio.trace.AsyncioTraceDispatcher`); the hooks need only
:class:`TraceDispatcher`.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from rocketq.client.trace.trace_context import (
    TRACE_GROUP_NAME_PREFIX,
    TRACE_INSTANCE_NAME,
    TraceContext,
)
from rocketq.client.trace.trace_data_encoder import TraceTransferBean, encode_trace_context
from rocketq.common.log_limiter import LogLimiter
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.message import Message
from rocketq.protocol.mixall import RMQ_SYS_TRACE_TOPIC

if TYPE_CHECKING:
    import concurrent.futures

    from rocketq.client.api_results import SendResult
    from rocketq.client.config import ClientConfig, ProducerConfig
    from rocketq.client.producer import Producer

__all__ = [
    "AsyncTraceDispatcher",
    "TraceBuffer",
    "TraceDispatcher",
    "trace_message",
    "trace_producer_configs",
    "trace_topic_of",
]

log = logging.getLogger(__name__)

#: ``traceContextQueue = new ArrayBlockingQueue<>(1024)``
QUEUE_SIZE = 1024
#: ``maxMsgSize``: the trace producer's maximum message size
MAX_MSG_SIZE = 128_000
#: ``pollingTimeMil``
POLLING_MS = 100
#: ``waitTimeThresholdMil``
WAIT_THRESHOLD_MS = 500
#: the trace producer's ``sendMsgTimeout``
SEND_TIMEOUT_MS = 5_000
_COUNTER = itertools.count(1)


class TraceDispatcher(Protocol):
    """What the trace hooks need: the trace topic and a non-blocking ``append``."""

    @property
    def trace_topic(self) -> str: ...

    def append(self, ctx: TraceContext) -> bool: ...


def trace_topic_of(trace_topic: str | None) -> str:
    """``customizedTraceTopic`` stripped, ``RMQ_SYS_TRACE_TOPIC`` when unset or blank."""
    return trace_topic.strip() if trace_topic and trace_topic.strip() else RMQ_SYS_TRACE_TOPIC


def trace_producer_configs(
    group: str, kind: str, client_config: ClientConfig
) -> tuple[ProducerConfig, ClientConfig]:
    """The trace producer's configs: group ``_INNER_TRACE_PRODUCER-<group>-<kind>-<n>``,
    instance ``PID_CLIENT_INNER_TRACE_PRODUCER_<namesrv>``, 5 s timeout, 128,000-byte limit."""
    import dataclasses

    from rocketq.client.config import ProducerConfig

    name = f"{TRACE_GROUP_NAME_PREFIX}-{group}-{kind}-{next(_COUNTER)}"
    ccfg = dataclasses.replace(
        client_config, instance_name=f"{TRACE_INSTANCE_NAME}_{client_config.namesrv_addr}"
    )
    pcfg = ProducerConfig(
        producer_group=name, send_msg_timeout_ms=SEND_TIMEOUT_MS, max_message_size=MAX_MSG_SIZE
    )
    return pcfg, ccfg


def trace_message(topic: str, beans: list[TraceTransferBean]) -> Message:
    """``AsyncDataSendTask``'s message: the records' data, KEYS = their msgIds and keys."""
    keys: set[str] = set()
    for bean in beans:
        keys.update(bean.trans_key)
    data = "".join(b.trans_data for b in beans)
    msg = Message(topic, data.encode("utf-8"))
    # Message.setKeys(Collection): joined by spaces in HashSet order
    msg.keys = " ".join(k for k in hashmap_order(sorted(keys)) if k)
    return msg


class _Segment:
    """``TraceDataSegment``: the records waiting to go to one trace topic."""

    def __init__(self) -> None:
        self.first_add_ms = 0
        self.size = 0
        self.beans: list[TraceTransferBean] = []

    def add(self, bean: TraceTransferBean, now_ms: int) -> None:
        if not self.beans:
            self.first_add_ms = now_ms
        self.beans.append(bean)
        self.size += len(bean.trans_data)

    def take(self) -> list[TraceTransferBean]:
        beans, self.beans, self.size, self.first_add_ms = self.beans, [], 0, 0
        return beans


class TraceBuffer:
    """The per-topic segments of encoded records: what is due to be sent, and when."""

    def __init__(self, trace_topic: str) -> None:
        self.trace_topic = trace_topic
        self._segments: dict[str, _Segment] = {}

    def add(self, ctx: TraceContext, now_ms: int) -> list[TraceTransferBean] | None:
        """Encode ``ctx`` into its segment; the segment's records once it is full."""
        if not ctx.trace_beans:
            return None
        try:
            bean = encode_trace_context(ctx)
        except Exception:
            log.exception("encoding a trace context failed: %s", ctx)
            return None
        segment = self._segments.setdefault(self.trace_topic, _Segment())
        segment.add(bean, now_ms)
        if segment.size >= MAX_MSG_SIZE - 10_000:
            return segment.take()
        return None

    def due(self, now_ms: int, *, all_: bool = False) -> list[tuple[str, list[TraceTransferBean]]]:
        """The segments whose first record waited ``waitTimeThresholdMil`` (every non-empty
        one with ``all_``), taken."""
        return [
            (topic, segment.take())
            for topic, segment in self._segments.items()
            if segment.beans and (all_ or now_ms - segment.first_add_ms >= WAIT_THRESHOLD_MS)
        ]


class AsyncTraceDispatcher:
    """Collects trace contexts of one producer or consumer and sends them in batches.

    ``group`` and ``kind`` (``"PRODUCER"``/``"CONSUMER"``, Java's ``Type``) name the trace
    producer's group; ``trace_topic`` defaults to ``RMQ_SYS_TRACE_TOPIC``.
    """

    def __init__(
        self,
        group: str,
        kind: str,
        trace_topic: str | None = None,
        *,
        clock_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
    ) -> None:
        self.group = group
        self.kind = kind
        self.trace_topic = trace_topic_of(trace_topic)
        self._clock_ms = clock_ms
        self._queue: queue.Queue[TraceContext] = queue.Queue(QUEUE_SIZE)
        self._buffer = TraceBuffer(self.trace_topic)
        self._stopped = threading.Event()
        self._worker: threading.Thread | None = None
        self._producer: Producer | None = None
        self._limiter = LogLimiter(log)
        self._lock = threading.Lock()
        self._dropped = 0
        self._sent = 0
        self._send_failures = 0
        self._in_flight = 0

    # ------------------------------------------------------------------ counters
    @property
    def dropped(self) -> int:
        """Contexts refused because the queue was full (Java's ``discardCount``)."""
        return self._dropped

    @property
    def sent(self) -> int:
        """Trace messages the broker accepted."""
        return self._sent

    @property
    def send_failures(self) -> int:
        """Trace messages whose send failed (their records are lost)."""
        return self._send_failures

    # ------------------------------------------------------------------ lifecycle
    def start(self, client_config: ClientConfig) -> None:
        """Start the trace producer (on the host's name servers) and the worker thread."""
        from rocketq.client.producer import Producer

        if self._worker is not None:
            return
        pcfg, ccfg = trace_producer_configs(self.group, self.kind, client_config)
        producer = Producer(config=pcfg, client_config=ccfg)
        producer.start()
        self._producer = producer
        self._worker = threading.Thread(
            target=self._run, name=f"MQ-AsyncTraceDispatcher-{self.group}-{self.kind}", daemon=True
        )
        self._worker.start()

    def shutdown(self) -> None:
        """Flush (at most 500 ms), stop the worker, shut the trace producer down."""
        self._stopped.set()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.join()
        self._drain_queue()
        self._flush_all()
        deadline = time.monotonic() + WAIT_THRESHOLD_MS / 1000.0
        while self._in_flight and time.monotonic() < deadline:
            time.sleep(0.005)
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.shutdown()

    # ------------------------------------------------------------------ the hooks' side
    def append(self, ctx: TraceContext) -> bool:
        """Queue ``ctx`` without blocking; False (and counted) when the queue is full."""
        try:
            self._queue.put_nowait(ctx)
        except queue.Full:
            with self._lock:
                self._dropped += 1
                dropped = self._dropped
            self._limiter.info("full", "trace buffer full, %d contexts dropped so far", dropped)
            return False
        return True

    # ------------------------------------------------------------------ the worker
    def _run(self) -> None:
        while not self._stopped.is_set():
            end = self._clock_ms() + POLLING_MS
            while (left := end - self._clock_ms()) > 0 and not self._stopped.is_set():
                try:
                    ctx = self._queue.get(timeout=left / 1000.0)
                except queue.Empty:
                    break
                self._add(ctx)
            for topic, beans in self._buffer.due(self._clock_ms()):
                self._send(topic, beans)

    def _add(self, ctx: TraceContext) -> None:
        full = self._buffer.add(ctx, self._clock_ms())
        if full is not None:
            self._send(self.trace_topic, full)

    def _drain_queue(self) -> None:
        while True:
            try:
                self._add(self._queue.get_nowait())
            except queue.Empty:
                return

    def _flush_all(self) -> None:
        for topic, beans in self._buffer.due(self._clock_ms(), all_=True):
            self._send(topic, beans)

    def _send(self, topic: str, beans: list[TraceTransferBean]) -> None:
        """``AsyncDataSendTask``: one trace message of ``beans``."""
        producer = self._producer
        if producer is None or not beans:
            return
        msg = trace_message(topic, beans)
        with self._lock:
            self._in_flight += 1
        try:
            future = producer.send_async(msg)
        except Exception as exc:
            self._on_sent(None, exc)
            return
        future.add_done_callback(self._on_future)

    def _on_future(self, future: concurrent.futures.Future[SendResult]) -> None:
        exc = future.exception()
        self._on_sent(None if exc is not None else future.result(), exc)

    def _on_sent(self, _result: SendResult | None, exc: BaseException | None) -> None:
        with self._lock:
            self._in_flight -= 1
            if exc is None:
                self._sent += 1
            else:
                self._send_failures += 1
        if exc is not None:
            self._limiter.warning("send", "sending trace data to %s failed: %s", self.trace_topic, exc)
