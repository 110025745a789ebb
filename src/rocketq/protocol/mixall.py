"""Names shared by clients and brokers (``org.apache.rocketmq.common.MixAll``).

The retry and dead-letter topics of a consumer group: ``%RETRY%<group>`` (reference 5.1)
and ``%DLQ%<group>`` (one queue); the request/reply names (``<cluster>_REPLY_TOPIC``, the
``MSG_TYPE`` value of a reply); and the transactional system topics and group of
``org.apache.rocketmq.common.topic.TopicValidator`` / ``MixAll.CID_SYS_RMQ_TRANS``. Defined
once here for the client, the broker and the admin tools.
"""

from __future__ import annotations

__all__ = [
    "CID_SYS_RMQ_TRANS",
    "DLQ_GROUP_TOPIC_PREFIX",
    "REPLY_MESSAGE_FLAG",
    "REPLY_TOPIC_POSTFIX",
    "RETRY_GROUP_TOPIC_PREFIX",
    "RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANSACTION_TOPICS",
    "dlq_topic",
    "reply_topic",
    "retry_topic",
]

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
#: ``MixAll.DLQ_GROUP_TOPIC_PREFIX``
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
#: ``MixAll.REPLY_TOPIC_POSTFIX``: replies travel in ``<cluster>_REPLY_TOPIC``
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
#: ``MixAll.REPLY_MESSAGE_FLAG``: the ``MSG_TYPE`` property of a reply message
REPLY_MESSAGE_FLAG = "reply"
#: ``MixAll.CID_SYS_RMQ_TRANS``: the group under which the broker's transaction check
#: stores its progress through the half and op queues (consumerOffset.json)
CID_SYS_RMQ_TRANS = "CID_RMQ_SYS_TRANS"
#: ``TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC``: where half (prepared) messages wait
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
#: ``TopicValidator.RMQ_SYS_TRANS_OP_HALF_TOPIC``: one op record per committed/rolled-back half
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
#: ``TopicValidator.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC``: halves checked too often end here
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
#: The transactional system topics (``TopicValidator``'s system topic set holds all three).
TRANSACTION_TOPICS = frozenset(
    {RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC}
)


def retry_topic(group: str) -> str:
    """``MixAll.getRetryTopic``."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``MixAll.getDLQTopic``."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def reply_topic(cluster: str) -> str:
    """``MixAll.getReplyTopic``: ``<cluster>_REPLY_TOPIC``."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"
