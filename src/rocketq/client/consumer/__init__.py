"""rocketq.client.consumer: pull consumers, the schedule service, rebalancing and offset stores.

The push consumer's modules live here too; this package re-exports the pull-side API.
"""

from __future__ import annotations

from rocketq.client.api_results import PullResult, PullStatus
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from rocketq.client.consumer.pull import PullConsumer
from rocketq.client.consumer.rebalance import MessageQueueListener
from rocketq.client.consumer.schedule import MQPullConsumerScheduleService, PullTaskCallback, PullTaskContext

__all__ = [
    "LitePullConsumer",
    "LocalFileOffsetStore",
    "MQPullConsumerScheduleService",
    "MessageQueueListener",
    "OffsetStore",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "PullTaskCallback",
    "PullTaskContext",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
]
