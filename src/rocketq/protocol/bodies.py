"""Broker and client JSON bodies other than routes and heartbeats.

Mirrors the 4.9.7 classes in ``org.apache.rocketmq.common.protocol.body``
(``LockBatchRequestBody``, ``LockBatchResponseBody``, ``UnlockBatchRequestBody``,
``ConsumerRunningInfo``, ``ProcessQueueInfo``, ``ConsumeStatus``, ``ResetOffsetBody``,
``GroupList``, ``ConsumerConnection``, ``Connection``, ``ProducerConnection``,
``SubscriptionGroupWrapper``, ``ConsumerOffsetSerializeWrapper``,
``ConsumeMessageDirectlyResult``, ``CMResult``, ``QueryCorrectionOffsetBody``,
``GetConsumerStatusBody``, ``CheckClientRequestBody``, ``BrokerStatsData``,
``BrokerStatsItem``), ``protocol.header.GetConsumerListByGroupResponseBody``,
``admin.{ConsumeStats, OffsetWrapper, TopicStatsTable, TopicOffset}``,
``subscription.SubscriptionGroupConfig``, ``protocol.topic.OffsetMovedEvent`` and the
store's ``DelayOffsetSerializeWrapper`` (protocol reference sections 2.4, 2.5 and 9).

Quirks kept on purpose (each names its Java source below): ``clientId`` (lowercase d)
in the lock bodies, ``lockOKMQSet``, ``droped`` (sic) and ``cachedMsgSizeInMiB`` in
``ProcessQueueInfo``, ``pullRT``/``consumeOKTPS`` in ``ConsumeStatus``,
``spentTimeMills`` (sic). ``Map<MessageQueue, ...>`` tables are ``dict[MessageQueue, ...]``
and are written with bare object keys; Java ``Set`` properties are lists (wire order kept);
``TreeMap``/``TreeSet`` properties are written sorted, as Java does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from rocketq.protocol.codes import LanguageCode
from rocketq.protocol.fastjson import JsonBean, java_prop
from rocketq.protocol.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import DataVersion

__all__ = [
    "BrokerStatsData",
    "BrokerStatsItem",
    "CMResult",
    "CheckClientRequestBody",
    "Connection",
    "ConsumeMessageDirectlyResult",
    "ConsumeStats",
    "ConsumeStatus",
    "ConsumerConnection",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DelayOffsetSerializeWrapper",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "GroupList",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "OffsetMovedEvent",
    "OffsetWrapper",
    "ProcessQueueInfo",
    "ProducerConnection",
    "QueryCorrectionOffsetBody",
    "ResetOffsetBody",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicOffset",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
]


# --- queue locks (LOCK_BATCH_MQ 41 / UNLOCK_BATCH_MQ 42) --------------------------------


@dataclass(kw_only=True)
class LockBatchRequestBody(JsonBean):
    """LOCK_BATCH_MQ request body. Note lowercase ``clientId`` (``LockBatchRequestBody.java``)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.LockBatchRequestBody"

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: list[MessageQueue] = field(default_factory=list)


@dataclass(kw_only=True)
class LockBatchResponseBody(JsonBean):
    """LOCK_BATCH_MQ response body: the queues now locked by the caller."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.LockBatchResponseBody"

    # getLockOKMQSet() -> "lockOKMQSet"
    lock_ok_mq_set: list[MessageQueue] = field(default_factory=list, metadata=java_prop("lockOKMQSet"))


@dataclass(kw_only=True)
class UnlockBatchRequestBody(JsonBean):
    """UNLOCK_BATCH_MQ request body (same shape as the lock request)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.UnlockBatchRequestBody"

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: list[MessageQueue] = field(default_factory=list)


@dataclass(kw_only=True)
class GetConsumerListByGroupResponseBody(JsonBean):
    """GET_CONSUMER_LIST_BY_GROUP (38) answer: the group's live client ids."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupResponseBody"

    consumer_id_list: list[str] = field(default_factory=list)


# --- admin statistics ----------------------------------------------------------------------


@dataclass(kw_only=True)
class OffsetWrapper(JsonBean):
    """``OffsetWrapper``: broker max offset, committed consumer offset and its store time."""

    JAVA_CLASS = "org.apache.rocketmq.common.admin.OffsetWrapper"

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0


@dataclass(kw_only=True)
class ConsumeStats(JsonBean):
    """GET_CONSUME_STATS (208) answer; ``offsetTable`` has bare MessageQueue keys."""

    JAVA_CLASS = "org.apache.rocketmq.common.admin.ConsumeStats"

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def compute_total_diff(self) -> int:
        """``ConsumeStats.computeTotalDiff``: sum of brokerOffset - consumerOffset."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


@dataclass(kw_only=True)
class TopicOffset(JsonBean):
    """``TopicOffset``: min/max offset of one queue and the store time of its last message."""

    JAVA_CLASS = "org.apache.rocketmq.common.admin.TopicOffset"

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(kw_only=True)
class TopicStatsTable(JsonBean):
    """GET_TOPIC_STATS_INFO (202) answer; ``offsetTable`` has bare MessageQueue keys."""

    JAVA_CLASS = "org.apache.rocketmq.common.admin.TopicStatsTable"

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)


# --- consumer running info (GET_CONSUMER_RUNNING_INFO 307) ---------------------------------


@dataclass(kw_only=True)
class ProcessQueueInfo(JsonBean):
    """``ProcessQueueInfo``: a consumer's view of one queue. Note ``droped`` (sic)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ProcessQueueInfo"

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    # getCachedMsgSizeInMiB() -> "cachedMsgSizeInMiB"
    cached_msg_size_in_mib: int = field(default=0, metadata=java_prop("cachedMsgSizeInMiB"))
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    # isDroped() -> "droped": misspelled in ProcessQueueInfo.java, kept on the wire.
    dropped: bool = field(default=False, metadata=java_prop("droped"))
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


@dataclass(kw_only=True)
class ConsumeStatus(JsonBean):
    """``ConsumeStatus``: per-topic pull/consume rates of a consumer."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ConsumeStatus"

    # getPullRT(), getPullTPS(), getConsumeRT(), getConsumeOKTPS(), getConsumeFailedTPS()
    pull_rt: float = field(default=0.0, metadata=java_prop("pullRT"))
    pull_tps: float = field(default=0.0, metadata=java_prop("pullTPS"))
    consume_rt: float = field(default=0.0, metadata=java_prop("consumeRT"))
    consume_ok_tps: float = field(default=0.0, metadata=java_prop("consumeOKTPS"))
    consume_failed_tps: float = field(default=0.0, metadata=java_prop("consumeFailedTPS"))
    consume_failed_msgs: int = 0


@dataclass(kw_only=True)
class ConsumerRunningInfo(JsonBean):
    """``ConsumerRunningInfo``: the client's answer to GET_CONSUMER_RUNNING_INFO (307).

    ``properties`` is a Java ``Properties`` (its order is kept as given); ``subscriptionSet``,
    ``mqTable`` and ``statusTable`` are ``TreeSet``/``TreeMap`` in Java and are written
    sorted. ``jstack`` only when requested.
    """

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo"

    PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
    PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
    PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
    PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
    PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
    PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list, metadata=java_prop(tree=True))
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(
        default_factory=dict, metadata=java_prop(tree=True)
    )
    status_table: dict[str, ConsumeStatus] = field(default_factory=dict, metadata=java_prop(tree=True))
    jstack: str | None = None


# --- offsets -----------------------------------------------------------------------------


@dataclass(kw_only=True)
class ResetOffsetBody(JsonBean):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) answer and RESET_CONSUMER_CLIENT_OFFSET (220) body."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ResetOffsetBody"

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


@dataclass(kw_only=True)
class QueryCorrectionOffsetBody(JsonBean):
    """QUERY_CORRECTION_OFFSET (308) answer: queueId -> offset, bare Integer keys."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.QueryCorrectionOffsetBody"

    correction_offsets: dict[int, int] = field(default_factory=dict)


@dataclass(kw_only=True)
class GetConsumerStatusBody(JsonBean):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) / INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.GetConsumerStatusBody"

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)


@dataclass(kw_only=True)
class ConsumerOffsetSerializeWrapper(JsonBean):
    """``topic@group`` -> {queueId: offset}: GET_ALL_CONSUMER_OFFSET (43), ``consumerOffset.json``."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ConsumerOffsetSerializeWrapper"

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass(kw_only=True)
class DelayOffsetSerializeWrapper(JsonBean):
    """delay level -> offset: GET_ALL_DELAY_OFFSET (45) and ``delayOffset.json``."""

    JAVA_CLASS = "org.apache.rocketmq.store.schedule.DelayOffsetSerializeWrapper"

    offset_table: dict[int, int] = field(default_factory=dict)


@dataclass(kw_only=True)
class OffsetMovedEvent(JsonBean):
    """``OffsetMovedEvent``: body of the broker's messages in topic ``OFFSET_MOVED_EVENT``."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.topic.OffsetMovedEvent"

    consumer_group: str | None = None
    message_queue: MessageQueue | None = None
    offset_request: int = 0
    offset_new: int = 0


# --- groups and connections ---------------------------------------------------------------


@dataclass(kw_only=True)
class GroupList(JsonBean):
    """QUERY_TOPIC_CONSUME_BY_WHO (300) answer."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.GroupList"

    group_list: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Connection(JsonBean):
    """``Connection``: one client channel as the broker sees it (``clientId``, lowercase d)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.Connection"

    client_id: str | None = None
    client_addr: str | None = None
    language: LanguageCode | None = None
    version: int = 0


@dataclass(kw_only=True)
class ConsumerConnection(JsonBean):
    """GET_CONSUMER_CONNECTION_LIST (203) answer."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ConsumerConnection"

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None


@dataclass(kw_only=True)
class ProducerConnection(JsonBean):
    """GET_PRODUCER_CONNECTION_LIST (204) answer."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ProducerConnection"

    connection_set: list[Connection] = field(default_factory=list)


@dataclass(kw_only=True)
class SubscriptionGroupConfig(JsonBean):
    """``SubscriptionGroupConfig`` with the Java defaults (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body)."""

    JAVA_CLASS = "org.apache.rocketmq.common.subscription.SubscriptionGroupConfig"

    group_name: str | None = None
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0  # MixAll.MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True


@dataclass(kw_only=True)
class SubscriptionGroupWrapper(JsonBean):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) answer; also the shape of ``subscriptionGroup.json``."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper"

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(kw_only=True)
class CheckClientRequestBody(JsonBean):
    """CHECK_CLIENT_CONFIG (46) request body (``clientId``, lowercase d)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.CheckClientRequestBody"

    client_id: str | None = None
    group: str | None = None
    subscription_data: SubscriptionData | None = None


# --- CONSUME_MESSAGE_DIRECTLY (309) --------------------------------------------------------


class CMResult(enum.Enum):
    """``CMResult``: outcome of CONSUME_MESSAGE_DIRECTLY; value = Java ordinal."""

    CR_SUCCESS = 0
    CR_LATER = 1
    CR_ROLLBACK = 2
    CR_COMMIT = 3
    CR_THROW_EXCEPTION = 4
    CR_RETURN_NULL = 5


@dataclass(kw_only=True)
class ConsumeMessageDirectlyResult(JsonBean):
    """The client's answer to CONSUME_MESSAGE_DIRECTLY. Note ``spentTimeMills`` (sic)."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.ConsumeMessageDirectlyResult"

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0


# --- VIEW_BROKER_STATS_DATA (315) ------------------------------------------------------------


@dataclass(kw_only=True)
class BrokerStatsItem(JsonBean):
    """``BrokerStatsItem``: sum, tps and average per time unit."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.BrokerStatsItem"

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(kw_only=True)
class BrokerStatsData(JsonBean):
    """VIEW_BROKER_STATS_DATA answer: per-minute/hour/day stats of one item."""

    JAVA_CLASS = "org.apache.rocketmq.common.protocol.body.BrokerStatsData"

    stats_minute: BrokerStatsItem | None = None
    stats_hour: BrokerStatsItem | None = None
    stats_day: BrokerStatsItem | None = None
