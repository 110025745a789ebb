"""Headers of the client <-> broker data path: send, pull, offsets, consumers, transactions.

Mirrors the classes of ``org.apache.rocketmq.common.protocol.header`` in Apache RocketMQ
4.9.7 that producers and consumers exchange with brokers (protocol reference 2.4, 5.3).
Attributes are the snake_case of the Java field; the wire key is the Java field name,
declared once per field (``jstring("consumerGroup", required=True)`` = ``@CFNotNull
String consumerGroup``). Java primitives carry their Java default and are always sent.
Classes that extend ``RpcRequestHeader`` in 4.9.7 inherit ``bname``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from rocketq.protocol.codes import SerializeType
from rocketq.protocol.headers_base import (
    JAVA_HEADER_PACKAGE,
    CommandHeader,
    RpcRequestHeader,
    jbool,
    jint,
    jlong,
    jstring,
)

__all__ = [
    "CheckTransactionStateRequestHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "EndTransactionRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerListByGroupResponseHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "UnregisterClientRequestHeader",
    "UnregisterClientResponseHeader",
    "UpdateConsumerOffsetRequestHeader",
    "UpdateConsumerOffsetResponseHeader",
    "ViewMessageRequestHeader",
]

_P = JAVA_HEADER_PACKAGE


# --------------------------------------------------------------------------- send
@dataclass(slots=True, kw_only=True)
class SendMessageRequestHeader(RpcRequestHeader):
    """``SendMessageRequestHeader``: SEND_MESSAGE (10), SEND_REPLY_MESSAGE (324); V1 names."""

    JAVA_CLASS: ClassVar[str] = _P + "SendMessageRequestHeader"

    producer_group: str | None = jstring("producerGroup", required=True)
    topic: str | None = jstring("topic", required=True)
    #: template topic for auto-creation, normally ``TBW102``
    default_topic: str | None = jstring("defaultTopic", required=True)
    default_topic_queue_nums: int | None = jint("defaultTopicQueueNums", required=True)
    #: negative: the broker picks a queue
    queue_id: int | None = jint("queueId", required=True)
    sys_flag: int | None = jint("sysFlag", required=True)
    born_timestamp: int | None = jlong("bornTimestamp", required=True)
    flag: int | None = jint("flag", required=True)
    properties: str | None = jstring("properties")
    reconsume_times: int | None = jint("reconsumeTimes")
    unit_mode: bool = jbool("unitMode", default=False)
    #: the broker takes the batch path from this flag, not from the request code
    #: (SendMessageProcessor.asyncProcessRequest)
    batch: bool = jbool("batch", default=False)
    max_reconsume_times: int | None = jint("maxReconsumeTimes")


#: V1 attribute -> V2 one-letter wire name (SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2)
_V2_NAMES = {
    "producer_group": "a",
    "topic": "b",
    "default_topic": "c",
    "default_topic_queue_nums": "d",
    "queue_id": "e",
    "sys_flag": "f",
    "born_timestamp": "g",
    "flag": "h",
    "properties": "i",
    "reconsume_times": "j",
    "unit_mode": "k",
    "max_reconsume_times": "l",
    "batch": "m",
    "bname": "n",
}


@dataclass(slots=True, kw_only=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """``SendMessageRequestHeaderV2``: SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320),
    SEND_REPLY_MESSAGE_V2 (325). Same attributes as V1, one-letter wire names ``a``..``n``.

    Java's V2 also inherits ``RpcRequestHeader.bname``, but the client puts the broker
    name in ``n`` and the broker's V2->V1 mapping reads only ``n``
    (``createSendMessageRequestHeaderV1``), so the inherited key is not modelled here.
    Java ``k`` (unitMode) and ``m`` (batch) are primitives: always sent.
    """

    JAVA_CLASS: ClassVar[str] = _P + "SendMessageRequestHeaderV2"
    FAST_CODES_ORDER: ClassVar[tuple[str, ...]] = tuple(_V2_NAMES)

    producer_group: str | None = jstring("a", required=True)
    topic: str | None = jstring("b", required=True)
    default_topic: str | None = jstring("c", required=True)
    default_topic_queue_nums: int | None = jint("d", required=True)
    queue_id: int | None = jint("e", required=True)
    sys_flag: int | None = jint("f", required=True)
    born_timestamp: int | None = jlong("g", required=True)
    flag: int | None = jint("h", required=True)
    properties: str | None = jstring("i")
    reconsume_times: int | None = jint("j")
    unit_mode: bool = jbool("k", default=False)
    max_reconsume_times: int | None = jint("l")
    batch: bool = jbool("m", default=False)
    bname: str | None = jstring("n")

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        """``createSendMessageRequestHeaderV2``: copy every V1 field."""
        return cls(**{name: getattr(v1, name) for name in _V2_NAMES})

    @classmethod
    def ext_fields_from_v1(
        cls, v1: SendMessageRequestHeader, *, serialize_type: int = SerializeType.JSON
    ) -> dict[str, str]:
        """``from_v1(v1).to_ext_fields(serialize_type=...)`` without the V2 header: the
        V2 codec reads V1's attributes, which have the same names (the client's send path)."""
        return cls._ext_fields_of(v1, serialize_type)

    def to_v1(self) -> SendMessageRequestHeader:
        """``createSendMessageRequestHeaderV1``: what the broker works with."""
        return SendMessageRequestHeader(**{name: getattr(self, name) for name in _V2_NAMES})


if {f.name for f in fields(SendMessageRequestHeader)} != set(_V2_NAMES):  # pragma: no cover
    raise TypeError("SendMessageRequestHeader and the V2 name table disagree")


@dataclass(slots=True, kw_only=True)
class SendMessageResponseHeader(CommandHeader):
    """``SendMessageResponseHeader`` (FastCodesHeader). The broker also adds ``MSG_REGION``
    and ``TRACE_ON`` to every send response (``NON_HEADER_EXT_FIELDS``)."""

    JAVA_CLASS: ClassVar[str] = _P + "SendMessageResponseHeader"
    FAST_CODES_ORDER: ClassVar[tuple[str, ...]] = ("msg_id", "queue_id", "queue_offset", "transaction_id")

    #: offsetMsgId; for a batch the offsetMsgIds joined with ","
    msg_id: str | None = jstring("msgId", required=True)
    queue_id: int | None = jint("queueId", required=True)
    queue_offset: int | None = jlong("queueOffset", required=True)
    transaction_id: str | None = jstring("transactionId")


@dataclass(slots=True, kw_only=True)
class ReplyMessageRequestHeader(CommandHeader):
    """``ReplyMessageRequestHeader``: PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker -> client."""

    JAVA_CLASS: ClassVar[str] = _P + "ReplyMessageRequestHeader"

    producer_group: str | None = jstring("producerGroup", required=True)
    topic: str | None = jstring("topic", required=True)
    default_topic: str | None = jstring("defaultTopic", required=True)
    default_topic_queue_nums: int | None = jint("defaultTopicQueueNums", required=True)
    queue_id: int | None = jint("queueId", required=True)
    sys_flag: int | None = jint("sysFlag", required=True)
    born_timestamp: int | None = jlong("bornTimestamp", required=True)
    flag: int | None = jint("flag", required=True)
    properties: str | None = jstring("properties")
    reconsume_times: int | None = jint("reconsumeTimes")
    unit_mode: bool = jbool("unitMode", default=False)
    born_host: str | None = jstring("bornHost", required=True)
    store_host: str | None = jstring("storeHost", required=True)
    store_timestamp: int = jlong("storeTimestamp", required=True, default=0)


# --------------------------------------------------------------------------- pull
@dataclass(slots=True, kw_only=True)
class PullMessageRequestHeader(RpcRequestHeader):
    """``PullMessageRequestHeader``: PULL_MESSAGE (11) (FastCodesHeader)."""

    JAVA_CLASS: ClassVar[str] = _P + "PullMessageRequestHeader"
    FAST_CODES_ORDER: ClassVar[tuple[str, ...]] = (
        "consumer_group",
        "topic",
        "queue_id",
        "queue_offset",
        "max_msg_nums",
        "sys_flag",
        "commit_offset",
        "suspend_timeout_millis",
        "subscription",
        "sub_version",
        "expression_type",
        "bname",
    )

    consumer_group: str | None = jstring("consumerGroup", required=True)
    topic: str | None = jstring("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    queue_offset: int | None = jlong("queueOffset", required=True)
    max_msg_nums: int | None = jint("maxMsgNums", required=True)
    #: PullSysFlag bits
    sys_flag: int | None = jint("sysFlag", required=True)
    commit_offset: int | None = jlong("commitOffset", required=True)
    #: long-poll hold time (push consumer 15000, pull consumer 20000)
    suspend_timeout_millis: int | None = jlong("suspendTimeoutMillis", required=True)
    subscription: str | None = jstring("subscription")
    sub_version: int | None = jlong("subVersion", required=True)
    #: ``TAG`` or ``SQL92``
    expression_type: str | None = jstring("expressionType")


@dataclass(slots=True, kw_only=True)
class PullMessageResponseHeader(CommandHeader):
    """``PullMessageResponseHeader`` (FastCodesHeader)."""

    JAVA_CLASS: ClassVar[str] = _P + "PullMessageResponseHeader"
    FAST_CODES_ORDER: ClassVar[tuple[str, ...]] = (
        "suggest_which_broker_id",
        "next_begin_offset",
        "min_offset",
        "max_offset",
    )

    suggest_which_broker_id: int | None = jlong("suggestWhichBrokerId", required=True)
    next_begin_offset: int | None = jlong("nextBeginOffset", required=True)
    min_offset: int | None = jlong("minOffset", required=True)
    max_offset: int | None = jlong("maxOffset", required=True)


# --------------------------------------------------------------------------- offsets
@dataclass(slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(RpcRequestHeader):
    """``QueryConsumerOffsetRequestHeader``: QUERY_CONSUMER_OFFSET (14)."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryConsumerOffsetRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)
    topic: str | None = jstring("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)


@dataclass(slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    """``QueryConsumerOffsetResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryConsumerOffsetResponseHeader"

    offset: int | None = jlong("offset", required=True)


@dataclass(slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(RpcRequestHeader):
    """``UpdateConsumerOffsetRequestHeader``: UPDATE_CONSUMER_OFFSET (15)."""

    JAVA_CLASS: ClassVar[str] = _P + "UpdateConsumerOffsetRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)
    topic: str | None = jstring("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    #: next offset to consume
    commit_offset: int | None = jlong("commitOffset", required=True)


@dataclass(slots=True, kw_only=True)
class UpdateConsumerOffsetResponseHeader(CommandHeader):
    """``UpdateConsumerOffsetResponseHeader`` (no fields: the response has ``extFields {}``)."""

    JAVA_CLASS: ClassVar[str] = _P + "UpdateConsumerOffsetResponseHeader"


@dataclass(slots=True, kw_only=True)
class GetMaxOffsetRequestHeader(RpcRequestHeader):
    """``GetMaxOffsetRequestHeader``: GET_MAX_OFFSET (30)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetMaxOffsetRequestHeader"

    topic: str | None = jstring("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)


@dataclass(slots=True, kw_only=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    """``GetMaxOffsetResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _P + "GetMaxOffsetResponseHeader"

    offset: int | None = jlong("offset", required=True)


@dataclass(slots=True, kw_only=True)
class GetMinOffsetRequestHeader(RpcRequestHeader):
    """``GetMinOffsetRequestHeader``: GET_MIN_OFFSET (31)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetMinOffsetRequestHeader"

    topic: str | None = jstring("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)


@dataclass(slots=True, kw_only=True)
class GetMinOffsetResponseHeader(CommandHeader):
    """``GetMinOffsetResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _P + "GetMinOffsetResponseHeader"

    offset: int | None = jlong("offset", required=True)


@dataclass(slots=True, kw_only=True)
class GetEarliestMsgStoretimeRequestHeader(RpcRequestHeader):
    """``GetEarliestMsgStoretimeRequestHeader``: GET_EARLIEST_MSG_STORETIME (32)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetEarliestMsgStoretimeRequestHeader"

    topic: str | None = jstring("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)


@dataclass(slots=True, kw_only=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """``GetEarliestMsgStoretimeResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _P + "GetEarliestMsgStoretimeResponseHeader"

    timestamp: int | None = jlong("timestamp", required=True)


@dataclass(slots=True, kw_only=True)
class SearchOffsetRequestHeader(RpcRequestHeader):
    """``SearchOffsetRequestHeader``: SEARCH_OFFSET_BY_TIMESTAMP (29)."""

    JAVA_CLASS: ClassVar[str] = _P + "SearchOffsetRequestHeader"

    topic: str | None = jstring("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    #: milliseconds since the epoch
    timestamp: int | None = jlong("timestamp", required=True)


@dataclass(slots=True, kw_only=True)
class SearchOffsetResponseHeader(CommandHeader):
    """``SearchOffsetResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _P + "SearchOffsetResponseHeader"

    offset: int | None = jlong("offset", required=True)


# --------------------------------------------------------------------------- messages
@dataclass(slots=True, kw_only=True)
class ViewMessageRequestHeader(CommandHeader):
    """``ViewMessageRequestHeader``: VIEW_MESSAGE_BY_ID (33)."""

    JAVA_CLASS: ClassVar[str] = _P + "ViewMessageRequestHeader"

    #: commit-log physical offset (from an offsetMsgId)
    offset: int | None = jlong("offset", required=True)


@dataclass(slots=True, kw_only=True)
class QueryMessageRequestHeader(CommandHeader):
    """``QueryMessageRequestHeader``: QUERY_MESSAGE (12). The client adds the non-header
    key ``_UNIQUE_KEY_QUERY`` (``NON_HEADER_EXT_FIELDS``)."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryMessageRequestHeader"

    topic: str | None = jstring("topic", required=True)
    key: str | None = jstring("key", required=True)
    max_num: int | None = jint("maxNum", required=True)
    begin_timestamp: int | None = jlong("beginTimestamp", required=True)
    end_timestamp: int | None = jlong("endTimestamp", required=True)


@dataclass(slots=True, kw_only=True)
class QueryMessageResponseHeader(CommandHeader):
    """``QueryMessageResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryMessageResponseHeader"

    index_last_update_timestamp: int | None = jlong("indexLastUpdateTimestamp", required=True)
    index_last_update_phyoffset: int | None = jlong("indexLastUpdatePhyoffset", required=True)


@dataclass(slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(RpcRequestHeader):
    """``ConsumerSendMsgBackRequestHeader``: CONSUMER_SEND_MSG_BACK (36)."""

    JAVA_CLASS: ClassVar[str] = _P + "ConsumerSendMsgBackRequestHeader"

    #: commit-log physical offset of the failed message
    offset: int | None = jlong("offset", required=True)
    group: str | None = jstring("group", required=True)
    #: 0 = broker decides (3 + reconsumeTimes); < 0 = straight to the DLQ
    delay_level: int | None = jint("delayLevel", required=True)
    origin_msg_id: str | None = jstring("originMsgId")
    origin_topic: str | None = jstring("originTopic")
    unit_mode: bool = jbool("unitMode", default=False)
    #: honoured by the broker only when the request version >= V3_4_9 (121)
    max_reconsume_times: int | None = jint("maxReconsumeTimes")


# --------------------------------------------------------------------------- clients / consumers
@dataclass(slots=True, kw_only=True)
class UnregisterClientRequestHeader(CommandHeader):
    """``UnregisterClientRequestHeader``: UNREGISTER_CLIENT (35); note the wire key ``clientID``."""

    JAVA_CLASS: ClassVar[str] = _P + "UnregisterClientRequestHeader"

    client_id: str | None = jstring("clientID", required=True)
    producer_group: str | None = jstring("producerGroup")
    consumer_group: str | None = jstring("consumerGroup")


@dataclass(slots=True, kw_only=True)
class UnregisterClientResponseHeader(CommandHeader):
    """``UnregisterClientResponseHeader`` (no fields)."""

    JAVA_CLASS: ClassVar[str] = _P + "UnregisterClientResponseHeader"


@dataclass(slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    """``GetConsumerListByGroupRequestHeader``: GET_CONSUMER_LIST_BY_GROUP (38)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetConsumerListByGroupRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)


@dataclass(slots=True, kw_only=True)
class GetConsumerListByGroupResponseHeader(CommandHeader):
    """``GetConsumerListByGroupResponseHeader`` (no fields; the ids are in the body)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetConsumerListByGroupResponseHeader"


@dataclass(slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """``NotifyConsumerIdsChangedRequestHeader``: NOTIFY_CONSUMER_IDS_CHANGED (40), broker -> client."""

    JAVA_CLASS: ClassVar[str] = _P + "NotifyConsumerIdsChangedRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)


@dataclass(slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """``GetConsumerRunningInfoRequestHeader``: GET_CONSUMER_RUNNING_INFO (307)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetConsumerRunningInfoRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)
    client_id: str | None = jstring("clientId", required=True)
    jstack_enable: bool = jbool("jstackEnable", default=False)


@dataclass(slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """``ConsumeMessageDirectlyResultRequestHeader``: CONSUME_MESSAGE_DIRECTLY (309)."""

    JAVA_CLASS: ClassVar[str] = _P + "ConsumeMessageDirectlyResultRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)
    client_id: str | None = jstring("clientId")
    msg_id: str | None = jstring("msgId")
    broker_name: str | None = jstring("brokerName")


@dataclass(slots=True, kw_only=True)
class ResetOffsetRequestHeader(CommandHeader):
    """``ResetOffsetRequestHeader``: INVOKE_BROKER_TO_RESET_OFFSET (222) and the broker's
    RESET_CONSUMER_CLIENT_OFFSET (220) to each consumer."""

    JAVA_CLASS: ClassVar[str] = _P + "ResetOffsetRequestHeader"

    topic: str | None = jstring("topic", required=True)
    group: str | None = jstring("group", required=True)
    #: -1 = reset to the max offset
    timestamp: int = jlong("timestamp", required=True, default=0)
    is_force: bool = jbool("isForce", required=True, default=False)


@dataclass(slots=True, kw_only=True)
class GetConsumerStatusRequestHeader(CommandHeader):
    """``GetConsumerStatusRequestHeader``: INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and
    GET_CONSUMER_STATUS_FROM_CLIENT (221)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetConsumerStatusRequestHeader"

    topic: str | None = jstring("topic", required=True)
    group: str | None = jstring("group", required=True)
    client_addr: str | None = jstring("clientAddr")


# --------------------------------------------------------------------------- transactions
@dataclass(slots=True, kw_only=True)
class EndTransactionRequestHeader(RpcRequestHeader):
    """``EndTransactionRequestHeader``: END_TRANSACTION (37), oneway."""

    JAVA_CLASS: ClassVar[str] = _P + "EndTransactionRequestHeader"

    producer_group: str | None = jstring("producerGroup", required=True)
    #: the half message's queue offset
    tran_state_table_offset: int | None = jlong("tranStateTableOffset", required=True)
    commit_log_offset: int | None = jlong("commitLogOffset", required=True)
    #: MessageSysFlag TRANSACTION_NOT_TYPE 0 / COMMIT 8 / ROLLBACK 12
    commit_or_rollback: int | None = jint("commitOrRollback", required=True)
    from_transaction_check: bool | None = jbool("fromTransactionCheck", default=False)
    msg_id: str | None = jstring("msgId", required=True)
    transaction_id: str | None = jstring("transactionId")


@dataclass(slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(RpcRequestHeader):
    """``CheckTransactionStateRequestHeader``: CHECK_TRANSACTION_STATE (39), broker -> client, oneway."""

    JAVA_CLASS: ClassVar[str] = _P + "CheckTransactionStateRequestHeader"

    tran_state_table_offset: int | None = jlong("tranStateTableOffset", required=True)
    commit_log_offset: int | None = jlong("commitLogOffset", required=True)
    msg_id: str | None = jstring("msgId")
    transaction_id: str | None = jstring("transactionId")
    offset_msg_id: str | None = jstring("offsetMsgId")
