"""Headers of the name server API and of the admin/console operations.

Mirrors ``org.apache.rocketmq.common.protocol.header.namesrv.*`` (broker registration,
routes, KV config, write permissions), the admin headers of
``org.apache.rocketmq.common.protocol.header`` (topics, groups, stats, ACL, filter
servers) and ``...header.filtersrv.*`` of Apache RocketMQ 4.9.7 (protocol reference 2.4
"REGISTER_BROKER" and "Other admin/console operations"). Same conventions as
:mod:`rocketq.protocol.headers_client`: snake_case attributes, Java field names on the
wire, ``required`` = ``@CFNotNull``, Java primitives always sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rocketq.protocol.headers_base import JAVA_HEADER_PACKAGE, CommandHeader, jbool, jint, jlong, jstring

__all__ = [
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "CloneGroupOffsetRequestHeader",
    "CreateAccessConfigRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteAccessConfigRequestHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "DeleteTopicRequestHeader",
    "GetAllProducerInfoRequestHeader",
    "GetAllTopicConfigResponseHeader",
    "GetBrokerAclConfigResponseHeader",
    "GetBrokerConfigResponseHeader",
    "GetConsumeStatsInBrokerHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "QueryCorrectionOffsetHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "RegisterFilterServerRequestHeader",
    "RegisterFilterServerResponseHeader",
    "RegisterMessageFilterClassRequestHeader",
    "ResumeCheckHalfMessageRequestHeader",
    "UnRegisterBrokerRequestHeader",
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
]

_P = JAVA_HEADER_PACKAGE
_N = JAVA_HEADER_PACKAGE + "namesrv."
_F = JAVA_HEADER_PACKAGE + "filtersrv."


# --------------------------------------------------------------------------- name server
@dataclass(slots=True, kw_only=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """``namesrv.RegisterBrokerRequestHeader``: REGISTER_BROKER (103)."""

    JAVA_CLASS: ClassVar[str] = _N + "RegisterBrokerRequestHeader"

    broker_name: str | None = jstring("brokerName", required=True)
    #: ``ip:port``
    broker_addr: str | None = jstring("brokerAddr", required=True)
    cluster_name: str | None = jstring("clusterName", required=True)
    #: ``ip:haPort``
    ha_server_addr: str | None = jstring("haServerAddr", required=True)
    #: 0 = master
    broker_id: int | None = jlong("brokerId", required=True)
    compressed: bool = jbool("compressed", default=False)
    #: CRC32 & 0x7FFFFFFF of the body; 0 = unchecked
    body_crc32: int | None = jint("bodyCrc32", default=0)


@dataclass(slots=True, kw_only=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """``namesrv.RegisterBrokerResponseHeader`` (both fields set only for slaves)."""

    JAVA_CLASS: ClassVar[str] = _N + "RegisterBrokerResponseHeader"

    ha_server_addr: str | None = jstring("haServerAddr")
    master_addr: str | None = jstring("masterAddr")


@dataclass(slots=True, kw_only=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    """``namesrv.UnRegisterBrokerRequestHeader``: UNREGISTER_BROKER (104)."""

    JAVA_CLASS: ClassVar[str] = _N + "UnRegisterBrokerRequestHeader"

    broker_name: str | None = jstring("brokerName", required=True)
    broker_addr: str | None = jstring("brokerAddr", required=True)
    cluster_name: str | None = jstring("clusterName", required=True)
    broker_id: int | None = jlong("brokerId", required=True)


@dataclass(slots=True, kw_only=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """``namesrv.QueryDataVersionRequestHeader``: QUERY_DATA_VERSION (322)."""

    JAVA_CLASS: ClassVar[str] = _N + "QueryDataVersionRequestHeader"

    broker_name: str | None = jstring("brokerName", required=True)
    broker_addr: str | None = jstring("brokerAddr", required=True)
    cluster_name: str | None = jstring("clusterName", required=True)
    broker_id: int | None = jlong("brokerId", required=True)


@dataclass(slots=True, kw_only=True)
class QueryDataVersionResponseHeader(CommandHeader):
    """``namesrv.QueryDataVersionResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _N + "QueryDataVersionResponseHeader"

    changed: bool | None = jbool("changed", required=True)


@dataclass(slots=True, kw_only=True)
class GetRouteInfoRequestHeader(CommandHeader):
    """``namesrv.GetRouteInfoRequestHeader``: GET_ROUTEINFO_BY_TOPIC (105)."""

    JAVA_CLASS: ClassVar[str] = _N + "GetRouteInfoRequestHeader"

    topic: str | None = jstring("topic", required=True)
    #: 4.9.4+: ask for standard JSON (quoted brokerAddrs keys) regardless of version
    accept_standard_json_only: bool | None = jbool("acceptStandardJsonOnly")


@dataclass(slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    """``GetTopicsByClusterRequestHeader``: GET_TOPICS_BY_CLUSTER (224)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetTopicsByClusterRequestHeader"

    cluster: str | None = jstring("cluster", required=True)


@dataclass(slots=True, kw_only=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """``namesrv.DeleteTopicFromNamesrvRequestHeader``: DELETE_TOPIC_IN_NAMESRV (216)."""

    JAVA_CLASS: ClassVar[str] = _N + "DeleteTopicFromNamesrvRequestHeader"

    topic: str | None = jstring("topic", required=True)
    cluster_name: str | None = jstring("clusterName")


@dataclass(slots=True, kw_only=True)
class GetKVConfigRequestHeader(CommandHeader):
    """``namesrv.GetKVConfigRequestHeader``: GET_KV_CONFIG (101)."""

    JAVA_CLASS: ClassVar[str] = _N + "GetKVConfigRequestHeader"

    namespace: str | None = jstring("namespace", required=True)
    key: str | None = jstring("key", required=True)


@dataclass(slots=True, kw_only=True)
class GetKVConfigResponseHeader(CommandHeader):
    """``namesrv.GetKVConfigResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _N + "GetKVConfigResponseHeader"

    value: str | None = jstring("value")


@dataclass(slots=True, kw_only=True)
class PutKVConfigRequestHeader(CommandHeader):
    """``namesrv.PutKVConfigRequestHeader``: PUT_KV_CONFIG (100)."""

    JAVA_CLASS: ClassVar[str] = _N + "PutKVConfigRequestHeader"

    namespace: str | None = jstring("namespace", required=True)
    key: str | None = jstring("key", required=True)
    value: str | None = jstring("value", required=True)


@dataclass(slots=True, kw_only=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    """``namesrv.DeleteKVConfigRequestHeader``: DELETE_KV_CONFIG (102)."""

    JAVA_CLASS: ClassVar[str] = _N + "DeleteKVConfigRequestHeader"

    namespace: str | None = jstring("namespace", required=True)
    key: str | None = jstring("key", required=True)


@dataclass(slots=True, kw_only=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    """``namesrv.GetKVListByNamespaceRequestHeader``: GET_KVLIST_BY_NAMESPACE (219)."""

    JAVA_CLASS: ClassVar[str] = _N + "GetKVListByNamespaceRequestHeader"

    namespace: str | None = jstring("namespace", required=True)


@dataclass(slots=True, kw_only=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """``namesrv.WipeWritePermOfBrokerRequestHeader``: WIPE_WRITE_PERM_OF_BROKER (205)."""

    JAVA_CLASS: ClassVar[str] = _N + "WipeWritePermOfBrokerRequestHeader"

    broker_name: str | None = jstring("brokerName", required=True)


@dataclass(slots=True, kw_only=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    """``namesrv.WipeWritePermOfBrokerResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _N + "WipeWritePermOfBrokerResponseHeader"

    wipe_topic_count: int | None = jint("wipeTopicCount", required=True)


@dataclass(slots=True, kw_only=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    """``namesrv.AddWritePermOfBrokerRequestHeader``: ADD_WRITE_PERM_OF_BROKER (327)."""

    JAVA_CLASS: ClassVar[str] = _N + "AddWritePermOfBrokerRequestHeader"

    broker_name: str | None = jstring("brokerName", required=True)


@dataclass(slots=True, kw_only=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    """``namesrv.AddWritePermOfBrokerResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _N + "AddWritePermOfBrokerResponseHeader"

    add_topic_count: int | None = jint("addTopicCount", required=True)


# --------------------------------------------------------------------------- topics
@dataclass(slots=True, kw_only=True)
class CreateTopicRequestHeader(CommandHeader):
    """``CreateTopicRequestHeader``: UPDATE_AND_CREATE_TOPIC (17)."""

    JAVA_CLASS: ClassVar[str] = _P + "CreateTopicRequestHeader"

    topic: str | None = jstring("topic", required=True)
    default_topic: str | None = jstring("defaultTopic", required=True)
    read_queue_nums: int | None = jint("readQueueNums", required=True)
    write_queue_nums: int | None = jint("writeQueueNums", required=True)
    #: PermName bits
    perm: int | None = jint("perm", required=True)
    #: ``SINGLE_TAG`` or ``MULTI_TAG`` (a String in Java, kept as text)
    topic_filter_type: str | None = jstring("topicFilterType", required=True)
    topic_sys_flag: int | None = jint("topicSysFlag")
    order: bool | None = jbool("order", required=True, default=False)


@dataclass(slots=True, kw_only=True)
class DeleteTopicRequestHeader(CommandHeader):
    """``DeleteTopicRequestHeader``: DELETE_TOPIC_IN_BROKER (215)."""

    JAVA_CLASS: ClassVar[str] = _P + "DeleteTopicRequestHeader"

    topic: str | None = jstring("topic", required=True)


@dataclass(slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    """``GetTopicStatsInfoRequestHeader``: GET_TOPIC_STATS_INFO (202)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetTopicStatsInfoRequestHeader"

    topic: str | None = jstring("topic", required=True)


@dataclass(slots=True, kw_only=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    """``QueryTopicConsumeByWhoRequestHeader``: QUERY_TOPIC_CONSUME_BY_WHO (300)."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryTopicConsumeByWhoRequestHeader"

    topic: str | None = jstring("topic", required=True)


@dataclass(slots=True, kw_only=True)
class GetAllTopicConfigResponseHeader(CommandHeader):
    """``GetAllTopicConfigResponseHeader``: GET_ALL_TOPIC_CONFIG (21) response (no fields)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetAllTopicConfigResponseHeader"


# --------------------------------------------------------------------------- groups and stats
@dataclass(slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    """``GetConsumeStatsRequestHeader``: GET_CONSUME_STATS (208); blank topic = all topics."""

    JAVA_CLASS: ClassVar[str] = _P + "GetConsumeStatsRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)
    topic: str | None = jstring("topic")


@dataclass(slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    """``GetConsumerConnectionListRequestHeader``: GET_CONSUMER_CONNECTION_LIST (203)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetConsumerConnectionListRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)


@dataclass(slots=True, kw_only=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    """``GetProducerConnectionListRequestHeader``: GET_PRODUCER_CONNECTION_LIST (204)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetProducerConnectionListRequestHeader"

    producer_group: str | None = jstring("producerGroup", required=True)


@dataclass(slots=True, kw_only=True)
class GetAllProducerInfoRequestHeader(CommandHeader):
    """``GetAllProducerInfoRequestHeader``: GET_ALL_PRODUCER_INFO (328) (no fields)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetAllProducerInfoRequestHeader"


@dataclass(slots=True, kw_only=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """``DeleteSubscriptionGroupRequestHeader``: DELETE_SUBSCRIPTIONGROUP (207)."""

    JAVA_CLASS: ClassVar[str] = _P + "DeleteSubscriptionGroupRequestHeader"

    group_name: str | None = jstring("groupName", required=True)
    remove_offset: bool = jbool("removeOffset", default=False)


@dataclass(slots=True, kw_only=True)
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    """``QueryConsumeTimeSpanRequestHeader``: QUERY_CONSUME_TIME_SPAN (303)."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryConsumeTimeSpanRequestHeader"

    topic: str | None = jstring("topic", required=True)
    group: str | None = jstring("group", required=True)


@dataclass(slots=True, kw_only=True)
class QueryCorrectionOffsetHeader(CommandHeader):
    """``QueryCorrectionOffsetHeader``: QUERY_CORRECTION_OFFSET (308)."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryCorrectionOffsetHeader"

    #: comma-separated groups
    filter_groups: str | None = jstring("filterGroups")
    compare_group: str | None = jstring("compareGroup", required=True)
    topic: str | None = jstring("topic", required=True)


@dataclass(slots=True, kw_only=True)
class CloneGroupOffsetRequestHeader(CommandHeader):
    """``CloneGroupOffsetRequestHeader``: CLONE_GROUP_OFFSET (314)."""

    JAVA_CLASS: ClassVar[str] = _P + "CloneGroupOffsetRequestHeader"

    src_group: str | None = jstring("srcGroup", required=True)
    dest_group: str | None = jstring("destGroup", required=True)
    topic: str | None = jstring("topic")
    offline: bool = jbool("offline", default=False)


@dataclass(slots=True, kw_only=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """``ViewBrokerStatsDataRequestHeader``: VIEW_BROKER_STATS_DATA (315)."""

    JAVA_CLASS: ClassVar[str] = _P + "ViewBrokerStatsDataRequestHeader"

    stats_name: str | None = jstring("statsName", required=True)
    stats_key: str | None = jstring("statsKey", required=True)


@dataclass(slots=True, kw_only=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """``GetConsumeStatsInBrokerHeader``: GET_BROKER_CONSUME_STATS (317)."""

    JAVA_CLASS: ClassVar[str] = _P + "GetConsumeStatsInBrokerHeader"

    is_order: bool = jbool("isOrder", required=True, default=False)


@dataclass(slots=True, kw_only=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    """``QueryConsumeQueueRequestHeader``: QUERY_CONSUME_QUEUE (321); primitives always sent."""

    JAVA_CLASS: ClassVar[str] = _P + "QueryConsumeQueueRequestHeader"

    topic: str | None = jstring("topic")
    queue_id: int = jint("queueId", default=0)
    index: int = jlong("index", default=0)
    count: int = jint("count", default=0)
    consumer_group: str | None = jstring("consumerGroup")


@dataclass(slots=True, kw_only=True)
class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """``ResumeCheckHalfMessageRequestHeader``: RESUME_CHECK_HALF_MESSAGE (323)."""

    JAVA_CLASS: ClassVar[str] = _P + "ResumeCheckHalfMessageRequestHeader"

    msg_id: str | None = jstring("msgId")


@dataclass(slots=True, kw_only=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """``GetBrokerConfigResponseHeader``: GET_BROKER_CONFIG (26) response."""

    JAVA_CLASS: ClassVar[str] = _P + "GetBrokerConfigResponseHeader"

    #: the broker's DataVersion as JSON text
    version: str | None = jstring("version", required=True)


# --------------------------------------------------------------------------- ACL
@dataclass(slots=True, kw_only=True)
class CreateAccessConfigRequestHeader(CommandHeader):
    """``CreateAccessConfigRequestHeader``: UPDATE_AND_CREATE_ACL_CONFIG (50)."""

    JAVA_CLASS: ClassVar[str] = _P + "CreateAccessConfigRequestHeader"

    access_key: str | None = jstring("accessKey", required=True)
    secret_key: str | None = jstring("secretKey")
    white_remote_address: str | None = jstring("whiteRemoteAddress")
    admin: bool = jbool("admin", default=False)
    default_topic_perm: str | None = jstring("defaultTopicPerm")
    default_group_perm: str | None = jstring("defaultGroupPerm")
    topic_perms: str | None = jstring("topicPerms")
    group_perms: str | None = jstring("groupPerms")


@dataclass(slots=True, kw_only=True)
class DeleteAccessConfigRequestHeader(CommandHeader):
    """``DeleteAccessConfigRequestHeader``: DELETE_ACL_CONFIG (51)."""

    JAVA_CLASS: ClassVar[str] = _P + "DeleteAccessConfigRequestHeader"

    access_key: str | None = jstring("accessKey", required=True)


@dataclass(slots=True, kw_only=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """``UpdateGlobalWhiteAddrsConfigRequestHeader``: UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53)."""

    JAVA_CLASS: ClassVar[str] = _P + "UpdateGlobalWhiteAddrsConfigRequestHeader"

    global_white_addrs: str | None = jstring("globalWhiteAddrs", required=True)
    acl_file_full_path: str | None = jstring("aclFileFullPath", required=True)


@dataclass(slots=True, kw_only=True)
class GetBrokerAclConfigResponseHeader(CommandHeader):
    """``GetBrokerAclConfigResponseHeader``: GET_BROKER_CLUSTER_ACL_INFO (52) response."""

    JAVA_CLASS: ClassVar[str] = _P + "GetBrokerAclConfigResponseHeader"

    version: str | None = jstring("version", required=True)
    all_acl_file_version: str | None = jstring("allAclFileVersion")
    broker_name: str | None = jstring("brokerName", required=True)
    broker_addr: str | None = jstring("brokerAddr", required=True)
    cluster_name: str | None = jstring("clusterName", required=True)


# --------------------------------------------------------------------------- filter servers
@dataclass(slots=True, kw_only=True)
class RegisterFilterServerRequestHeader(CommandHeader):
    """``filtersrv.RegisterFilterServerRequestHeader``: REGISTER_FILTER_SERVER (301)."""

    JAVA_CLASS: ClassVar[str] = _F + "RegisterFilterServerRequestHeader"

    filter_server_addr: str | None = jstring("filterServerAddr", required=True)


@dataclass(slots=True, kw_only=True)
class RegisterFilterServerResponseHeader(CommandHeader):
    """``filtersrv.RegisterFilterServerResponseHeader``."""

    JAVA_CLASS: ClassVar[str] = _F + "RegisterFilterServerResponseHeader"

    broker_name: str | None = jstring("brokerName", required=True)
    broker_id: int = jlong("brokerId", required=True, default=0)


@dataclass(slots=True, kw_only=True)
class RegisterMessageFilterClassRequestHeader(CommandHeader):
    """``filtersrv.RegisterMessageFilterClassRequestHeader``: REGISTER_MESSAGE_FILTER_CLASS (302)."""

    JAVA_CLASS: ClassVar[str] = _F + "RegisterMessageFilterClassRequestHeader"

    consumer_group: str | None = jstring("consumerGroup", required=True)
    topic: str | None = jstring("topic", required=True)
    class_name: str | None = jstring("className", required=True)
    class_crc: int | None = jint("classCRC", required=True)
