"""rocketq.broker.store: the broker's message store (RocketMQ ``org.apache.rocketmq.store``).

Commit log, consume queues, index, checkpoint and the ``MessageStore`` facade that the
broker calls; see ``message_store`` for the threading model and recovery.
"""

from rocketq.broker.store.config import ASYNC_FLUSH, SYNC_FLUSH, MessageStoreConfig
from rocketq.broker.store.message_ext_broker_inner import MessageExtBatch, MessageExtBrokerInner
from rocketq.broker.store.message_store import ArrivalListener, MessageStore
from rocketq.broker.store.status import (
    AppendResult,
    GetMessageResult,
    GetMessageStatus,
    MessageFilter,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    RecordFilter,
    StoreStats,
)

__all__ = [
    "ASYNC_FLUSH",
    "SYNC_FLUSH",
    "AppendResult",
    "ArrivalListener",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageExtBatch",
    "MessageExtBrokerInner",
    "MessageFilter",
    "MessageStore",
    "MessageStoreConfig",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "RecordFilter",
    "StoreStats",
]
