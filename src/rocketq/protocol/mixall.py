"""Names and ids shared by clients, brokers, the name server and the tools: spelled once, here.

Mirrors ``org.apache.rocketmq.common.MixAll`` and
``org.apache.rocketmq.common.topic.TopicValidator`` (4.9.7): the master broker id, the
system topics, the groups the tools and the client use internally, and the retry and
dead-letter topics of a consumer group (``%RETRY%<group>``, reference 5.1; ``%DLQ%<group>``,
one queue), the request/reply names (``<cluster>_REPLY_TOPIC``, the ``MSG_TYPE`` value of a
reply) and the transaction check's group. Invariant: every module of rocketq takes these names from here; a test
(``tests/unit/test_layering.py``) fails when one is defined again elsewhere.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AUTO_CREATE_TOPIC_KEY_TOPIC",
    "CID_RMQ_SYS_PREFIX",
    "CID_SYS_RMQ_TRANS",
    "CLIENT_INNER_PRODUCER_GROUP",
    "DEFAULT_CONSUMER_GROUP",
    "DEFAULT_PRODUCER_GROUP",
    "DLQ_GROUP_TOPIC_PREFIX",
    "MASTER_ID",
    "NOT_ALLOWED_SEND_TOPICS",
    "REPLY_MESSAGE_FLAG",
    "REPLY_TOPIC_POSTFIX",
    "RETRY_GROUP_TOPIC_PREFIX",
    "RMQ_SYS_BENCHMARK_TOPIC",
    "RMQ_SYS_OFFSET_MOVED_EVENT",
    "RMQ_SYS_SCHEDULE_TOPIC",
    "RMQ_SYS_SELF_TEST_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "SCHEDULE_CONSUMER_GROUP",
    "SYSTEM_TOPICS",
    "SYSTEM_TOPIC_PREFIX",
    "TOOLS_CONSUMER_GROUP",
    "TOPIC_MAX_LENGTH",
    "TRANSACTION_TOPICS",
    "dlq_topic",
    "reply_topic",
    "retry_topic",
]

#: ``MixAll.MASTER_ID``: the broker id of a master (slaves have ids > 0).
MASTER_ID: Final = 0

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
#: ``MixAll.DLQ_GROUP_TOPIC_PREFIX``
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
#: ``MixAll.REPLY_TOPIC_POSTFIX``: replies travel in ``<cluster>_REPLY_TOPIC``
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"
#: ``MixAll.REPLY_MESSAGE_FLAG``: the ``MSG_TYPE`` property of a reply message
REPLY_MESSAGE_FLAG: Final = "reply"
#: ``MixAll.CID_RMQ_SYS_PREFIX``: groups of the broker's own system consumers.
CID_RMQ_SYS_PREFIX: Final = "CID_RMQ_SYS_"
#: ``MixAll.CID_SYS_RMQ_TRANS``: the group under which the broker's transaction check
#: stores its progress through the half and op queues (consumerOffset.json)
CID_SYS_RMQ_TRANS: Final = CID_RMQ_SYS_PREFIX + "TRANS"

#: ``MixAll.DEFAULT_PRODUCER_GROUP``
DEFAULT_PRODUCER_GROUP: Final = "DEFAULT_PRODUCER"
#: ``MixAll.DEFAULT_CONSUMER_GROUP``
DEFAULT_CONSUMER_GROUP: Final = "DEFAULT_CONSUMER"
#: ``MixAll.CLIENT_INNER_PRODUCER_GROUP``: the producer consumers re-send messages with.
CLIENT_INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
#: ``MixAll.TOOLS_CONSUMER_GROUP``: the group of mqadmin's reads.
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"
#: ``ScheduleMessageService``'s consumer group on its own store reads.
SCHEDULE_CONSUMER_GROUP: Final = "SCHEDULE_SERVICE"

# TopicValidator (4.9.7)
#: ``TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC``: the template of auto-created topics.
AUTO_CREATE_TOPIC_KEY_TOPIC: Final = "TBW102"
#: ``TopicValidator.RMQ_SYS_SCHEDULE_TOPIC``: where delayed messages wait.
RMQ_SYS_SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC: Final = "BenchmarkTest"
#: ``TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC``: where half (prepared) messages wait.
RMQ_SYS_TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
#: ``TopicValidator.RMQ_SYS_TRANS_OP_HALF_TOPIC``: one op record per committed/rolled-back half.
RMQ_SYS_TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
#: ``TopicValidator.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC``: halves checked too often end here.
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
#: ``TopicValidator.RMQ_SYS_OFFSET_MOVED_EVENT``: the broker's offset-moved notices.
RMQ_SYS_OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
#: ``TopicValidator.SYSTEM_TOPIC_PREFIX``
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
#: ``TopicValidator.TOPIC_MAX_LENGTH``
TOPIC_MAX_LENGTH: Final = 127
#: ``TopicValidator.SYSTEM_TOPIC_SET`` (4.9.7)
SYSTEM_TOPICS: Final = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_BENCHMARK_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRACE_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)
#: ``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`` (4.9.7): system topics a producer may not use.
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)

#: The transactional system topics (``TopicValidator``'s system topic set holds all three).
TRANSACTION_TOPICS: Final = frozenset(
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
