"""Message trace of the asyncio client: ``AsyncTraceDispatcher`` as a task of the loop.

The asyncio counterpart of :class:`rocketq.client.trace.async_trace_dispatcher.AsyncTraceDispatcher`
(Java's ``AsyncTraceDispatcher``). The trace hooks
(:class:`~rocketq.client.trace.hooks.SendMessageTraceHookImpl`,
:class:`~rocketq.client.trace.hooks.ConsumeMessageTraceHookImpl`), the record encoding, the
batching (:class:`~rocketq.client.trace.async_trace_dispatcher.TraceBuffer`), the trace message
and the trace producer's configuration are the blocking client's own; only the worker differs:
a task of the owner's loop instead of a thread (rocketq.aio starts no thread), sending through
an :class:`~rocketq.aio.producer.AsyncProducer`.

Invariants: :meth:`AsyncioTraceDispatcher.append` never blocks nor awaits (the hooks run on the
loop inside a send or a listener call): a context goes into a buffer of at most 1,024 or is
dropped and counted. The task drains the buffer in 100 ms windows; a segment leaves as one trace
message when full or 500 ms old, sent as its own task (a failed send is logged, rate-limited,
and counted; its records are lost, as in Java). :meth:`AsyncioTraceDispatcher.shutdown`
flushes, waits at most 500 ms for the sends in flight and stops the trace producer.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable

from rocketq.aio.producer import AsyncProducer
from rocketq.client.config import ClientConfig
from rocketq.client.trace.async_trace_dispatcher import (
    POLLING_MS,
    QUEUE_SIZE,
    WAIT_THRESHOLD_MS,
    TraceBuffer,
    trace_message,
    trace_producer_configs,
    trace_topic_of,
)
from rocketq.client.trace.trace_context import TraceContext
from rocketq.client.trace.trace_data_encoder import TraceTransferBean
from rocketq.common.log_limiter import LogLimiter

__all__ = ["AsyncioTraceDispatcher"]

log = logging.getLogger(__name__)


class AsyncioTraceDispatcher:
    """Collects the trace contexts of one asyncio producer or consumer and sends them in
    batches from a task of its loop. ``kind`` as the blocking dispatcher's."""

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
        self._pending: collections.deque[TraceContext] = collections.deque()
        self._buffer = TraceBuffer(self.trace_topic)
        self._limiter = LogLimiter(log)
        self._producer: AsyncProducer | None = None
        self._worker: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()
        self.dropped = 0
        self.sent = 0
        self.send_failures = 0

    async def start(self, client_config: ClientConfig) -> None:
        """Start the trace producer (on the host's name servers) and the worker task."""
        if self._worker is not None:
            return
        pcfg, ccfg = trace_producer_configs(self.group, self.kind, client_config)
        producer = AsyncProducer(config=pcfg, client_config=ccfg)
        await producer.start()
        self._producer = producer
        self._worker = asyncio.get_running_loop().create_task(
            self._run(), name=f"MQ-AsyncTraceDispatcher-{self.group}-{self.kind}"
        )

    async def shutdown(self) -> None:
        """Flush, wait at most 500 ms for the sends in flight, stop the trace producer."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._drain()
        for topic, beans in self._buffer.due(self._clock_ms(), all_=True):
            self._send(topic, beans)
        if self._sends:
            await asyncio.wait(set(self._sends), timeout=WAIT_THRESHOLD_MS / 1000.0)
        for task in list(self._sends):
            task.cancel()
        if self._sends:
            await asyncio.gather(*self._sends, return_exceptions=True)
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.shutdown()

    def append(self, ctx: TraceContext) -> bool:
        """Buffer ``ctx`` without blocking; False (and counted) when the buffer is full."""
        if len(self._pending) >= QUEUE_SIZE:
            self.dropped += 1
            self._limiter.info("full", "trace buffer full, %d contexts dropped so far", self.dropped)
            return False
        self._pending.append(ctx)
        return True

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(POLLING_MS / 1000.0)
            self._drain()
            for topic, beans in self._buffer.due(self._clock_ms()):
                self._send(topic, beans)

    def _drain(self) -> None:
        pending = self._pending
        while pending:
            full = self._buffer.add(pending.popleft(), self._clock_ms())
            if full is not None:
                self._send(self.trace_topic, full)

    def _send(self, topic: str, beans: list[TraceTransferBean]) -> None:
        """``AsyncDataSendTask``: one trace message of ``beans``, sent as a task."""
        producer = self._producer
        if producer is None or not beans:
            return
        task = asyncio.get_running_loop().create_task(self._send_one(producer, topic, beans))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _send_one(self, producer: AsyncProducer, topic: str, beans: list[TraceTransferBean]) -> None:
        try:
            await producer.send(trace_message(topic, beans))
        except Exception as exc:
            self.send_failures += 1
            self._limiter.warning("send", "sending trace data to %s failed: %s", topic, exc)
            return
        self.sent += 1
