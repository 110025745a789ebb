"""rocketq.client: the public client API (producer, pull consumers, selectors, configs).

Everything an application needs is importable from here (and from :mod:`rocketq`):
:class:`Producer`, :class:`PushConsumer`, :class:`PullConsumer`, :class:`LitePullConsumer`,
:class:`MQPullConsumerScheduleService`, the message types, the selectors, the configs and
the enums. Mirrors the public classes of ``org.apache.rocketmq.client`` (4.9.7).
"""

from __future__ import annotations

from rocketq.client.api_results import PullResult, PullStatus, SendResult, SendStatus
from rocketq.client.config import (
    ClientConfig,
    LitePullConsumerConfig,
    ProducerConfig,
    PullConsumerConfig,
)
from rocketq.client.consumer.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
)
from rocketq.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
)
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.pull import PullConsumer
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.consumer.schedule import MQPullConsumerScheduleService, PullTaskCallback, PullTaskContext
from rocketq.client.instance import DEFAULT_MANAGER, MQClientInstance, MQClientManager
from rocketq.client.message_selector import MessageSelector
from rocketq.client.producer import Producer, SendCallback
from rocketq.client.producer_transaction import TransactionProducer
from rocketq.client.request_response import RequestCallback, create_reply_message
from rocketq.client.selectors import (
    MessageQueueSelector,
    SelectMessageQueueByHash,
    SelectMessageQueueByRandom,
    SelectMessageQueueByRoundRobin,
)
from rocketq.client.transaction import LocalTransactionState, TransactionListener, TransactionSendResult
from rocketq.protocol.heartbeat import ConsumeFromWhere, MessageModel
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "DEFAULT_MANAGER",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "ClientConfig",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "LitePullConsumer",
    "LitePullConsumerConfig",
    "LocalTransactionState",
    "MQClientInstance",
    "MQClientManager",
    "MQPullConsumerScheduleService",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageSelector",
    "Producer",
    "ProducerConfig",
    "PullConsumer",
    "PullConsumerConfig",
    "PullResult",
    "PullStatus",
    "PullTaskCallback",
    "PullTaskContext",
    "PushConsumer",
    "PushConsumerConfig",
    "RequestCallback",
    "SelectMessageQueueByHash",
    "SelectMessageQueueByRandom",
    "SelectMessageQueueByRoundRobin",
    "SendCallback",
    "SendResult",
    "SendStatus",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "create_reply_message",
]
