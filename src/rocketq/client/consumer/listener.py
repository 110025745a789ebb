"""Listener statuses, consume contexts and consume hooks of the push consumer.

Mirrors ``org.apache.rocketmq.client.consumer.listener`` (``ConsumeConcurrentlyStatus``,
``ConsumeOrderlyStatus``, ``ConsumeConcurrentlyContext``, ``ConsumeOrderlyContext``,
``ConsumeReturnType``) and ``org.apache.rocketmq.client.hook`` (``ConsumeMessageHook``,
``ConsumeMessageContext``). A listener is any callable ``(msgs, context) -> status``;
returning ``None`` or raising counts as a failure (RECONSUME_LATER for concurrent,
SUSPEND_CURRENT_QUEUE_A_MOMENT for orderly), exactly as Java treats a null status.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeReturnType",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
]

_INT_MAX = 2**31 - 1


class ConsumeConcurrentlyStatus(enum.Enum):
    """What a concurrent listener returns."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener returns (COMMIT/ROLLBACK only matter with auto_commit off)."""

    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class ConsumeReturnType(enum.Enum):
    """How a listener call ended, reported to hooks (``ConsumeReturnType``)."""

    SUCCESS = "SUCCESS"
    TIME_OUT = "TIME_OUT"
    EXCEPTION = "EXCEPTION"
    RETURNNULL = "RETURNNULL"
    FAILED = "FAILED"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """Per-call context of a concurrent listener.

    ``delay_level_when_next_consume``: 0 lets the broker choose (3 + reconsume times), < 0
    sends the failed messages straight to the DLQ, > 0 picks a level. ``ack_index``: with
    CONSUME_SUCCESS, messages ``0..ack_index`` succeeded and the rest are retried.
    """

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = _INT_MAX


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """Per-call context of an orderly listener.

    ``suspend_current_queue_time_millis``: -1 uses the consumer's setting (1000 ms).
    """

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1


@dataclass(slots=True)
class ConsumeMessageContext:
    """What consume hooks see before and after a listener call."""

    consumer_group: str
    message_queue: MessageQueue
    msg_list: list[MessageExt]
    success: bool = False
    status: str = ""
    props: dict[str, str] = field(default_factory=dict)


class ConsumeMessageHook(Protocol):
    """Before/after callbacks around every listener call (``ConsumeMessageHook``)."""

    def hook_name(self) -> str: ...

    def consume_message_before(self, context: ConsumeMessageContext) -> None: ...

    def consume_message_after(self, context: ConsumeMessageContext) -> None: ...


MessageListenerConcurrently = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext], "ConsumeConcurrentlyStatus | None"
]
MessageListenerOrderly = Callable[[list[MessageExt], ConsumeOrderlyContext], "ConsumeOrderlyStatus | None"]
