"""rocketq.client.trace: message trace, as Java's ``org.apache.rocketmq.client.trace`` (4.9.7).

Turn it on with ``Producer(..., enable_msg_trace=True)`` or
``PushConsumer(..., enable_msg_trace=True)`` (and ``custom_trace_topic=`` for a topic other
than ``RMQ_SYS_TRACE_TOPIC``). Hooks (:mod:`~rocketq.client.trace.hooks`) record each send
(Pub) and each listener call (SubBefore/SubAfter); an
:class:`~rocketq.client.trace.async_trace_dispatcher.AsyncTraceDispatcher` batches the
records in :mod:`~rocketq.client.trace.trace_data_encoder`'s text format and sends them to
the trace topic, keyed by message id, so ``rocketq message trace -i <msgId>`` (Java's
``mqadmin queryMsgTraceById``) finds them with QUERY_MESSAGE.
"""

from __future__ import annotations

from rocketq.client.trace.async_trace_dispatcher import AsyncTraceDispatcher
from rocketq.client.trace.trace_context import (
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
)
from rocketq.client.trace.trace_data_encoder import decode_trace_data, encode_trace_context

__all__ = [
    "AsyncTraceDispatcher",
    "MessageType",
    "TraceBean",
    "TraceContext",
    "TraceType",
    "decode_trace_data",
    "encode_trace_context",
]
