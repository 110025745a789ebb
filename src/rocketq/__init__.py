"""rocketq: Apache RocketMQ rebuilt in pure Python, wire-compatible with the real thing.

The client API is re-exported here: ``from rocketq import Producer, PushConsumer, Message``.
The first thing the package does is decide which build runs (``rocketq._build``: the mypyc-compiled
hot set, or pure Python), before any hot module is imported.
"""

from __future__ import annotations

from rocketq import _build

_build.activate()

from rocketq.client import (  # noqa: E402 - after the build decision, which must precede any hot import
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
