"""rocketq: Apache RocketMQ rebuilt in pure Python, wire-compatible with the real thing.

The client API is re-exported here: ``from rocketq import Producer, PushConsumer, Message``.
"""

from __future__ import annotations

from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageModel,
    MessageQueue,
    Producer,
    PullConsumer,
    PushConsumer,
    SelectMessageQueueByHash,
    SendResult,
    SendStatus,
)

__all__ = [
    "ClientConfig",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "LitePullConsumer",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "Producer",
    "PullConsumer",
    "PushConsumer",
    "SelectMessageQueueByHash",
    "SendResult",
    "SendStatus",
    "__version__",
]

__version__ = "0.1.0"
