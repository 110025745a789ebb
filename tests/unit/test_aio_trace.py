"""The asyncio trace dispatcher's buffer (no broker): bounded, never blocking, batched by the
blocking dispatcher's TraceBuffer rules (a segment is due 500 ms after its first record)."""

from __future__ import annotations

from rocketq.aio.trace import AsyncioTraceDispatcher
from rocketq.client.trace.async_trace_dispatcher import QUEUE_SIZE, WAIT_THRESHOLD_MS, TraceBuffer
from rocketq.protocol.mixall import RMQ_SYS_TRACE_TOPIC
from tests.unit.client.test_trace_format import _pub


def test_append_is_bounded_and_counts_what_it_drops() -> None:
    dispatcher = AsyncioTraceDispatcher("pg", "PRODUCE", "  ")
    assert dispatcher.trace_topic == RMQ_SYS_TRACE_TOPIC  # a blank custom topic falls back
    assert all(dispatcher.append(_pub()) for _ in range(QUEUE_SIZE))
    assert dispatcher.append(_pub()) is False
    assert dispatcher.dropped == 1


def test_trace_buffer_is_due_after_the_wait_threshold_or_when_flushed() -> None:
    buffer = TraceBuffer("T")
    assert buffer.add(_pub(), now_ms=1_000) is None
    assert buffer.add(_pub(), now_ms=1_200) is None
    assert buffer.due(1_000 + WAIT_THRESHOLD_MS - 1) == []
    ((topic, beans),) = buffer.due(1_000 + WAIT_THRESHOLD_MS)
    assert topic == "T" and len(beans) == 2
    assert buffer.due(10_000, all_=True) == []  # taken
    buffer.add(_pub(), now_ms=2_000)
    assert [len(b) for _, b in buffer.due(2_001, all_=True)] == [1]
