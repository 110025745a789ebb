"""Names shared by clients and brokers (``org.apache.rocketmq.common.MixAll``).

The retry and dead-letter topics of a consumer group: ``%RETRY%<group>`` (reference 5.1)
and ``%DLQ%<group>`` (one queue). Defined once here for the client, the broker and the
admin tools.
"""

from __future__ import annotations

__all__ = ["DLQ_GROUP_TOPIC_PREFIX", "RETRY_GROUP_TOPIC_PREFIX", "dlq_topic", "retry_topic"]

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
#: ``MixAll.DLQ_GROUP_TOPIC_PREFIX``
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"


def retry_topic(group: str) -> str:
    """``MixAll.getRetryTopic``."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``MixAll.getDLQTopic``."""
    return DLQ_GROUP_TOPIC_PREFIX + group
