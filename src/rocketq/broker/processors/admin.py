"""Topic, group and offset administration; the broker's default processor.

Mirrors ``org.apache.rocketmq.broker.processor.AdminBrokerProcessor`` (4.9.7; reference 2.4
"Other admin/console operations" and the offset operations 29-32).

Invariants:

* Unknown codes answer REQUEST_CODE_NOT_SUPPORTED with remark ``" request type N not
  supported"`` (``getUnknownCmdResponse``): this processor is registered as the default.
* UPDATE_AND_CREATE_TOPIC validates the name (``^[%|a-zA-Z0-9_-]+$``, <= 127 chars), refuses
  system topics, stores and persists the config, then registers the new topic with every
  name server (``registerIncrementBrokerData``, synchronous) *before* answering, so the
  route exists once the caller has the response. The answer keeps Java's remark
  ``"not set any response code"`` (golden admin.jsonl).
* DELETE_TOPIC_IN_BROKER drops the config, the consume queues and (like 5.x) the topic's
  consumer offsets, then re-registers.
* Every response has Java's shape: ``extFields`` present (``{}``) exactly where Java builds
  the response from a header class; tests compare with the golden frames.
* UPDATE_BROKER_CONFIG (25): the body is ``key=value`` lines (``MixAll.string2Properties``);
  an unknown key, a bad value or a key that cannot change while running answers SYSTEM_ERROR
  with a remark naming it and changes nothing; success is a plain SUCCESS
  (``createResponseCommand(null)``), after the name servers have the new permission.
* Calls to a client (``callConsumer``: GET_CONSUMER_RUNNING_INFO 307 and
  CONSUME_MESSAGE_DIRECTLY 309) go over the client's own channel and relay its answer;
  INVOKE_BROKER_TO_RESET_OFFSET (222) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) are
  served by :class:`~rocketq.broker.broker2client.Broker2Client`, as in Java.
* GET_CONSUME_STATS reports ``consumeTps`` = the group's pulled messages/s over the last
  minute per topic (``BrokerStatsManager.tpsGroupGetNums``); VIEW_BROKER_STATS_DATA (315)
  serves the per-topic put / per-``topic@group`` get counters of
  :class:`~rocketq.broker.stats.BrokerStats`.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rocketq.broker.processors import (
    NOT_SET_REMARK,
    decode_request_header,
    header_response,
    plain_response,
)
from rocketq.broker.topics import validate_topic
from rocketq.errors import IllegalArgumentError, RemotingError, RequestTimeoutError, RocketqError
from rocketq.protocol.bodies import (
    BrokerStatsData,
    BrokerStatsItem,
    Connection,
    ConsumerConnection,
    ConsumeStats,
    GroupList,
    OffsetWrapper,
    ProducerConnection,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicStatsTable,
)
from rocketq.protocol.codes import CURRENT_VERSION, LanguageCode, RequestCode, ResponseCode, Version
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    CommandHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.java_properties import format_properties, parse_properties
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import RMQ_SYS_SCHEDULE_TOPIC
from rocketq.protocol.route import KVTable, TopicConfig, TopicFilterType
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["AdminBrokerProcessor", "runtime_info"]

log = logging.getLogger(__name__)

#: Broker2Client.callClient timeout
_CALL_CLIENT_TIMEOUT_MS = 10_000


def _version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``."""
    try:
        return Version(version).name
    except ValueError:
        return f"V{version}"


def _human_bytes(n: int) -> str:
    """``MixAll.humanReadableByteCount(bytes, si=false)``."""
    if n < 1024:
        return f"{n} B"
    exp = 0
    value = float(n)
    while value >= 1024 and exp < 6:
        value /= 1024
        exp += 1
    return f"{value:.1f} {'KMGTPE'[exp - 1]}iB"


def _tps_text(rates: list[float]) -> str:
    # StoreStatsService.getPutTps etc.: each window's rate followed by a space
    return "".join(f"{r} " for r in rates)


def runtime_info(broker: BrokerController) -> dict[str, str]:
    """``AdminBrokerProcessor.prepareRuntimeInfo`` + ``DefaultMessageStore.getRuntimeInfo``.

    Every key of the golden 4.9.7 answer (the keys ``mqadmin clusterList`` and
    ``brokerStatus`` print), with rocketq's values; thread-pool figures are 0 (rocketq
    processes requests on its event loop, there is no queue).
    """
    cfg = broker.config
    stats = broker.stats
    store = broker.store
    root = cfg.store_path_root_dir
    try:
        usage = shutil.disk_usage(root)
        ratio = f"{(usage.total - usage.free) / usage.total:.2f}" if usage.total else "0.0"
        capacity = f"Total : {_human_bytes(usage.total)}, Free : {_human_bytes(usage.free)}."
    except OSError:
        ratio, capacity = "0.0", "Total : 0 B, Free : 0 B."
    put_total = stats.msg_put_total
    info = {
        "brokerVersionDesc": _version_desc(CURRENT_VERSION),
        "brokerVersion": str(CURRENT_VERSION),
        "msgPutTotalYesterdayMorning": str(stats.msg_put_total_yesterday_morning),
        "msgPutTotalTodayMorning": str(stats.msg_put_total_today_morning),
        "msgPutTotalTodayNow": str(put_total),
        "msgGetTotalYesterdayMorning": str(stats.msg_get_total_yesterday_morning),
        "msgGetTotalTodayMorning": str(stats.msg_get_total_today_morning),
        "msgGetTotalTodayNow": str(stats.msg_get_total),
        "sendThreadPoolQueueSize": "0",
        "sendThreadPoolQueueCapacity": str(cfg.send_thread_pool_queue_capacity),
        "pullThreadPoolQueueSize": "0",
        "pullThreadPoolQueueCapacity": str(cfg.pull_thread_pool_queue_capacity),
        "queryThreadPoolQueueSize": "0",
        "queryThreadPoolQueueCapacity": str(cfg.query_thread_pool_queue_capacity),
        "EndTransactionQueueSize": "0",
        "EndTransactionThreadPoolQueueCapacity": str(cfg.end_transaction_pool_queue_capacity),
        "dispatchBehindBytes": "0",
        "pageCacheLockTimeMills": "0",
        "sendThreadPoolQueueHeadWaitTimeMills": "0",
        "pullThreadPoolQueueHeadWaitTimeMills": "0",
        "queryThreadPoolQueueHeadWaitTimeMills": "0",
        "earliestMessageTimeStamp": str(broker.earliest_message_time()),
        "startAcceptSendRequestTimeStamp": "0",
        "remainTransientStoreBufferNumbs": str(2**31 - 1),
        "remainHowManyDataToFlush": "0 B",
        "commitLogDirCapacity": capacity,
        # DefaultMessageStore.getRuntimeInfo / StoreStatsService.getRuntimeInfo
        "bootTimestamp": str(broker.boot_timestamp_ms),
        "runtime": stats.runtime_text(),
        "putMessageTimesTotal": str(put_total),
        "putMessageSizeTotal": str(stats.put_size_total),
        "putMessageAverageSize": str(stats.put_size_total / put_total if put_total else 0.0),
        "putMessageFailedTimes": str(stats.put_failed_times),
        "putTps": _tps_text(stats.put_tps()[:2]),
        "getTransferedTps": _tps_text(stats.get_transferred_tps()[:2]),
        "getFoundTps": _tps_text(stats.rates(3)[:2]),
        "getMissTps": _tps_text(stats.rates(4)[:2]),
        "getTotalTps": " ".join(str(a + b) for a, b in zip(stats.rates(3), stats.rates(4), strict=False)),
        "putMessageEntireTimeMax": "0",
        "getMessageEntireTimeMax": "0",
        "putMessageDistributeTime": "",
        "putLatency99": "0.0",
        "putLatency999": "0.0",
        "dispatchMaxBuffer": "0",
        "commitLogMinOffset": str(store.get_min_phy_offset()),
        "commitLogMaxOffset": str(store.get_max_phy_offset()),
        "commitLogDiskRatio": ratio,
        f"commitLogDiskRatio_{os.path.join(root, 'commitlog')}": ratio,
        "consumeQueueDiskRatio": ratio,
    }
    # prepareRuntimeInfo starts from DefaultMessageStore.getRuntimeInfo: the store's own
    # figures (put counts, commit-log offsets, disk ratios) replace the estimates above.
    try:
        info.update(store.runtime_info())
    except Exception:
        log.exception("store runtime info failed")
    schedule = broker.schedule_service
    if schedule is not None:
        # DefaultMessageStore.getRuntimeInfo: "scheduleMessageOffset_<level>" = "delivered,max"
        for level, delivered in sorted(schedule.offset_table.items()):
            max_offset = store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1)
            info[f"scheduleMessageOffset_{level}"] = f"{delivered},{max_offset}"
    # KVTable.table is a HashMap: fastjson writes it in HashMap iteration order.
    return {k: info[k] for k in hashmap_order(info)}


class AdminBrokerProcessor:
    """The admin codes of ``AdminBrokerProcessor`` that rocketq serves; default processor."""

    CODES = (
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.GET_ALL_TOPIC_CONFIG,
        RequestCode.GET_BROKER_CONFIG,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        RequestCode.GET_MAX_OFFSET,
        RequestCode.GET_MIN_OFFSET,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.GET_BROKER_RUNTIME_INFO,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        RequestCode.CLONE_GROUP_OFFSET,
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        RequestCode.GET_PRODUCER_CONNECTION_LIST,
        RequestCode.GET_CONSUME_STATS,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        RequestCode.CONSUME_MESSAGE_DIRECTLY,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
        RequestCode.VIEW_BROKER_STATS_DATA,
    )

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def reject_request(self) -> bool:
        return False

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        code = request.code
        if code == RequestCode.UPDATE_AND_CREATE_TOPIC:
            return await self.update_and_create_topic(channel, request)
        if code == RequestCode.DELETE_TOPIC_IN_BROKER:
            return self.delete_topic(channel, request)
        if code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            return await self.get_consumer_running_info(channel, request)
        if code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            return await self.consume_message_directly(channel, request)
        if code == RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS:
            return await self.get_consumer_status(channel, request)
        if code == RequestCode.UPDATE_BROKER_CONFIG:
            return await self.update_broker_config(channel, request)
        handler = self._SYNC.get(code)
        if handler is None:
            # AdminBrokerProcessor.getUnknownCmdResponse
            return plain_response(
                request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {code} not supported"
            )
        return handler(self, channel, request)

    # ------------------------------------------------------------------ topics
    async def update_and_create_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, CreateTopicRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        broker = self.broker
        topic = header.topic or ""
        log.info("updateAndCreateTopic %s called by %s", topic, channel.remote_addr)
        error = validate_topic(topic)
        if error is None and broker.topic_config_manager.is_system_topic(topic):
            error = f"The topic[{topic}] is conflict with system topic."
        if error is not None:
            return plain_response(request, ResponseCode.SYSTEM_ERROR, error)
        try:
            filter_type = TopicFilterType[header.topic_filter_type or "SINGLE_TAG"]
        except KeyError:
            filter_type = TopicFilterType.SINGLE_TAG
        assert header.read_queue_nums is not None
        assert header.write_queue_nums is not None
        assert header.perm is not None
        tc = TopicConfig(
            topic_name=topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=filter_type,
            topic_sys_flag=header.topic_sys_flag or 0,
        )
        broker.topic_config_manager.update_topic_config(tc)
        await broker.register_increment_broker_data(tc)
        # Java sets the code without clearing createResponseCommand's remark (golden).
        return plain_response(request, ResponseCode.SUCCESS, NOT_SET_REMARK)

    def delete_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, DeleteTopicRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        broker = self.broker
        topic = header.topic or ""
        log.info("deleteTopic %s called by %s", topic, channel.remote_addr)
        error = validate_topic(topic)
        if error is None and broker.topic_config_manager.is_system_topic(topic):
            error = f"The topic[{topic}] is conflict with system topic."
        if error is not None:
            return plain_response(request, ResponseCode.SYSTEM_ERROR, error)
        broker.topic_config_manager.delete_topic_config(topic)
        broker.store.delete_topics({topic})
        broker.consumer_offset_manager.clean_offset_by_topic(topic)
        broker.stats.on_topic_deleted(topic)
        broker.register_broker_all_async()
        return plain_response(request, ResponseCode.SUCCESS)

    def get_all_topic_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        content = self.broker.topic_config_manager.encode()
        # createResponseCommand(GetAllTopicConfigResponseHeader.class)
        return header_response(request, body=content.encode("utf-8"))

    # ------------------------------------------------------------------ broker config
    def get_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        props = self.broker.config.to_properties()
        props["listenPort"] = str(self.broker.port)
        content = format_properties(dict(sorted(props.items())))
        version = self.broker.configuration_version.to_json().decode("utf-8")
        return header_response(
            request, GetBrokerConfigResponseHeader(version=version), body=content.encode("utf-8")
        )

    async def update_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``AdminBrokerProcessor.updateBrokerConfig``; an empty body changes nothing (Java too)."""
        if request.body:
            try:
                props = parse_properties(request.body.decode("utf-8"))
            except UnicodeDecodeError:
                return plain_response(request, ResponseCode.SYSTEM_ERROR, "string2Properties error")
            log.info("updateBrokerConfig, new config: %s client: %s", props, channel.remote_addr)
            try:
                await self.broker.update_config(props)
            except IllegalArgumentError as exc:
                return plain_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
            except OSError as exc:
                return plain_response(
                    request, ResponseCode.SYSTEM_ERROR, f"cannot persist the broker config: {exc}"
                )
        return plain_response(request, ResponseCode.SUCCESS)

    def get_broker_runtime_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = KVTable(table=runtime_info(self.broker)).to_json()
        return plain_response(request, ResponseCode.SUCCESS, body=body)

    # ------------------------------------------------------------------ offsets
    def search_offset_by_timestamp(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, SearchOffsetRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        assert header.topic is not None
        assert header.queue_id is not None
        assert header.timestamp is not None
        offset = self.broker.store.get_offset_in_queue_by_time(
            header.topic, header.queue_id, header.timestamp
        )
        return header_response(request, SearchOffsetResponseHeader(offset=offset))

    def _per_queue(
        self,
        request: RemotingCommand,
        cls: type[
            GetMaxOffsetRequestHeader | GetMinOffsetRequestHeader | GetEarliestMsgStoretimeRequestHeader
        ],
        answer: Callable[[str, int], CommandHeader],
    ) -> RemotingCommand:
        """GET_MAX_OFFSET / GET_MIN_OFFSET / GET_EARLIEST_MSG_STORETIME: one store lookup per queue."""
        header = decode_request_header(request, cls)
        if isinstance(header, RemotingCommand):
            return header
        assert header.topic is not None
        assert header.queue_id is not None
        return header_response(request, answer(header.topic, header.queue_id))

    def get_max_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        store = self.broker.store
        return self._per_queue(
            request,
            GetMaxOffsetRequestHeader,
            lambda topic, qid: GetMaxOffsetResponseHeader(offset=store.get_max_offset_in_queue(topic, qid)),
        )

    def get_min_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        store = self.broker.store
        return self._per_queue(
            request,
            GetMinOffsetRequestHeader,
            lambda topic, qid: GetMinOffsetResponseHeader(offset=store.get_min_offset_in_queue(topic, qid)),
        )

    def get_earliest_msg_storetime(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        store = self.broker.store
        return self._per_queue(
            request,
            GetEarliestMsgStoretimeRequestHeader,
            lambda topic, qid: GetEarliestMsgStoretimeResponseHeader(
                timestamp=store.get_earliest_message_time(topic, qid)
            ),
        )

    # ------------------------------------------------------------------ subscription groups
    def update_and_create_subscription_group(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        log.info("updateAndCreateSubscriptionGroup called by %s", channel.remote_addr)
        if request.body:
            try:
                sgc = SubscriptionGroupConfig.from_json(request.body)
            except RocketqError as exc:
                return plain_response(request, ResponseCode.SYSTEM_ERROR, f"bad body: {exc}")
            if sgc.group_name:
                self.broker.subscription_group_manager.update_subscription_group_config(sgc)
        return plain_response(request, ResponseCode.SUCCESS)

    def get_all_subscription_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        content = self.broker.subscription_group_manager.encode()
        return plain_response(request, ResponseCode.SUCCESS, body=content.encode("utf-8"))

    def delete_subscription_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, DeleteSubscriptionGroupRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        group = header.group_name or ""
        log.info("deleteSubscriptionGroup %s called by %s", group, channel.remote_addr)
        self.broker.subscription_group_manager.delete_subscription_group_config(group)
        if header.remove_offset:
            self.broker.consumer_offset_manager.remove_offset(group)
        self.broker.stats.on_group_deleted(group)
        return plain_response(request, ResponseCode.SUCCESS)

    def clone_group_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """CLONE_GROUP_OFFSET (``AdminBrokerProcessor.cloneGroupOffset``): copy ``srcGroup``'s
        offsets of ``topic`` (or of every topic it has offsets of) to ``destGroup``.

        A topic this broker does not have is skipped; unless ``offline``, so is a topic the
        live source group has subscriptions but not this one among them. Always SUCCESS.
        """
        header = decode_request_header(request, CloneGroupOffsetRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        broker = self.broker
        src, dest = header.src_group or "", header.dest_group or ""
        offsets = broker.consumer_offset_manager
        topic = (header.topic or "").strip()
        topics = {topic} if topic else offsets.which_topic_by_consumer(src)
        group_info = broker.consumer_manager.get_consumer_group_info(src)
        for t in sorted(topics):
            if broker.topic_config_manager.select_topic_config(t) is None:
                log.warning("[cloneGroupOffset], topic config not exist, %s", t)
                continue
            if (
                not header.offline
                and group_info is not None
                and group_info.subscription_table
                and group_info.find_subscription_data(t) is None
            ):
                log.warning("[cloneGroupOffset], the consumer group[%s], topic[%s] not exist", src, t)
                continue
            offsets.clone_offset(src, dest, t)
        log.info("cloneGroupOffset %s -> %s (%s) called by %s", src, dest, topic or "*", channel.remote_addr)
        return plain_response(request, ResponseCode.SUCCESS)

    # ------------------------------------------------------------------ stats and connections
    def get_topic_stats_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, GetTopicStatsInfoRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        broker = self.broker
        topic = header.topic or ""
        tc = broker.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return plain_response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = broker.store
        table = TopicStatsTable()
        for qid in range(tc.write_queue_nums):
            mq = MessageQueue(topic, broker.config.broker_name, qid)
            lo = max(0, store.get_min_offset_in_queue(topic, qid))
            hi = max(0, store.get_max_offset_in_queue(topic, qid))
            ts = store.get_message_store_timestamp(topic, qid, hi - 1) if hi > 0 else 0
            table.offset_table[mq] = TopicOffset(min_offset=lo, max_offset=hi, last_update_timestamp=ts)
        return plain_response(request, ResponseCode.SUCCESS, body=table.to_json())

    def get_consumer_connection_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, GetConsumerConnectionListRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        group = header.consumer_group or ""
        info = self.broker.consumer_manager.get_consumer_group_info(group)
        if info is None:
            return plain_response(
                request, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online"
            )
        body = ConsumerConnection(
            consume_from_where=info.consume_from_where,
            consume_type=info.consume_type,
            message_model=info.message_model,
            subscription_table=dict(info.subscription_table),
            connection_set=[
                _connection(cci.client_id, cci.channel, cci.language, cci.version)
                for cci in list(info.channels.values())
            ],
        )
        return plain_response(request, ResponseCode.SUCCESS, body=body.to_json())

    def get_producer_connection_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, GetProducerConnectionListRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        group = header.producer_group or ""
        if group not in self.broker.producer_manager.group_channel_table:
            return plain_response(
                request, ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist"
            )
        body = ProducerConnection(
            connection_set=[
                _connection(cci.client_id, cci.channel, cci.language, cci.version)
                for cci in self.broker.producer_manager.get_group_channels(group)
            ]
        )
        return plain_response(request, ResponseCode.SUCCESS, body=body.to_json())

    def get_consume_stats(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, GetConsumeStatsRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        broker = self.broker
        group = header.consumer_group or ""
        topics = (
            {header.topic}
            if header.topic and header.topic.strip()
            else broker.consumer_offset_manager.which_topic_by_consumer(group)
        )
        info = broker.consumer_manager.get_consumer_group_info(group)
        stats = ConsumeStats()
        store = broker.store
        for topic in sorted(topics):
            tc = broker.topic_config_manager.select_topic_config(topic)
            if tc is None:
                continue
            # skip topics the group does not subscribe while it has live subscriptions
            if info is not None and info.subscription_table and topic not in info.subscription_table:
                continue
            for qid in range(tc.read_queue_nums):
                mq = MessageQueue(topic, broker.config.broker_name, qid)
                broker_offset = max(0, store.get_max_offset_in_queue(topic, qid))
                consumer_offset = max(0, broker.consumer_offset_manager.query_offset(group, topic, qid))
                last = 0
                if consumer_offset - 1 >= 0:
                    ts = store.get_message_store_timestamp(topic, qid, consumer_offset - 1)
                    last = ts if ts > 0 else 0
                stats.offset_table[mq] = OffsetWrapper(
                    broker_offset=broker_offset, consumer_offset=consumer_offset, last_timestamp=last
                )
            # getConsumeStats: consumeTps += brokerStatsManager.tpsGroupGetNums(group, topic)
            stats.consume_tps += broker.stats.tps_group_get_nums(group, topic)
        return plain_response(request, ResponseCode.SUCCESS, body=stats.to_json())

    def query_topic_consume_by_who(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_request_header(request, QueryTopicConsumeByWhoRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        topic = header.topic or ""
        groups = self.broker.consumer_manager.query_topic_consume_by_who(topic)
        groups |= self.broker.consumer_offset_manager.which_group_by_topic(topic)
        return plain_response(
            request, ResponseCode.SUCCESS, body=GroupList(group_list=sorted(groups)).to_json()
        )

    async def get_consumer_running_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``getConsumerRunningInfo``: relay the request to the client (``callConsumer``)."""
        header = decode_request_header(request, GetConsumerRunningInfoRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        return await self._call_consumer(request, header.consumer_group or "", header.client_id or "")

    async def consume_message_directly(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``consumeMessageDirectly``: hand one stored message to one client of the group.

        ``msgId`` is an offsetMsgId; the broker adds ``brokerName`` to the extFields and the
        raw record as the body, then relays (``callConsumer``). The client runs its listener
        on it and answers a ConsumeMessageDirectlyResult.
        """
        header = decode_request_header(request, ConsumeMessageDirectlyResultRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        ext = dict(request.ext_fields or {})
        ext["brokerName"] = self.broker.config.broker_name
        body = request.body
        try:
            _, offset = decode_offset_msg_id(header.msg_id or "")
            raw = self.broker.store.select_one_message_by_offset(offset)
            if raw is not None:
                body = bytes(raw)
        except (RocketqError, ValueError) as exc:
            # Java swallows the UnknownHostException of decodeMessageId and forwards as is
            log.warning("consumeMessageDirectly: bad msgId %r: %s", header.msg_id, exc)
        forward = RemotingCommand(
            code=request.code, ext_fields=ext, body=body, serialize_type=request.serialize_type
        )
        return await self._call_consumer(
            forward, header.consumer_group or "", header.client_id or "", answer_to=request
        )

    async def _call_consumer(
        self,
        request: RemotingCommand,
        group: str,
        client_id: str,
        *,
        answer_to: RemotingCommand | None = None,
    ) -> RemotingCommand:
        """``AdminBrokerProcessor.callConsumer``: forward to the client, relay its answer."""
        origin = answer_to if answer_to is not None else request
        cci = self.broker.consumer_manager.find_channel(group, client_id)
        if cci is None:
            return plain_response(
                origin, ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online"
            )
        if cci.version < Version.V3_1_8_SNAPSHOT:
            return plain_response(
                origin,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{_version_desc(cci.version)}> too low to finish, "
                "please upgrade it to V3_1_8_SNAPSHOT",
            )
        # a new request with the same code, extFields and body (createRequestCommand(code, null))
        forward = RemotingCommand.request(request.code, dict(request.ext_fields or {}), request.body)
        try:
            answer = await self.broker.broker2client.call_client(
                cci.channel, forward, _CALL_CLIENT_TIMEOUT_MS
            )
        except RequestTimeoutError as exc:
            return plain_response(
                origin, ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {exc}"
            )
        except RemotingError as exc:
            return plain_response(
                origin,
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {exc}",
            )
        # relay the client's answer as the response to the admin's request
        return origin.make_response(answer.code, answer.remark, answer.ext_fields, answer.body)

    # ------------------------------------------------------------------ offsets pushed to clients
    def reset_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """INVOKE_BROKER_TO_RESET_OFFSET (222): ``Broker2Client.resetOffset``."""
        header = decode_request_header(request, ResetOffsetRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        log.info(
            "[reset-offset] reset offset started by %s. topic=%s, group=%s, timestamp=%s, isForce=%s",
            channel.remote_addr,
            header.topic,
            header.group,
            header.timestamp,
            header.is_force,
        )
        # isC (LanguageCode.CPP -> ResetOffsetBodyForC list form) is not supported: C++ clients
        # get the map form like every other language.
        return self.broker.broker2client.reset_offset(
            self.broker, request, header.topic or "", header.group or "", header.timestamp, header.is_force
        )

    async def get_consumer_status(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): ``Broker2Client.getConsumeStatus``."""
        header = decode_request_header(request, GetConsumerStatusRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        log.info(
            "[get-consumer-status] get consumer status by %s. topic=%s, group=%s",
            channel.remote_addr,
            header.topic,
            header.group,
        )
        return await self.broker.broker2client.get_consume_status(
            self.broker, request, header.topic or "", header.group or "", header.client_addr
        )

    # ------------------------------------------------------------------ statistics
    def view_broker_stats_data(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """VIEW_BROKER_STATS_DATA (315): minute/hour/day figures of one stats item."""
        header = decode_request_header(request, ViewBrokerStatsDataRequestHeader)
        if isinstance(header, RemotingCommand):
            return header
        name, key = header.stats_name or "", header.stats_key or ""
        item = self.broker.stats.stats_item(name, key)
        if item is None:
            return plain_response(request, ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")

        def conv(tier: str) -> BrokerStatsItem:
            snap = item[tier]
            return BrokerStatsItem(sum=snap.sum, tps=snap.tps, avgpt=snap.avgpt)

        data = BrokerStatsData(stats_minute=conv("minute"), stats_hour=conv("hour"), stats_day=conv("day"))
        return plain_response(request, ResponseCode.SUCCESS, body=data.to_json())

    _SYNC: ClassVar[
        dict[int, Callable[[AdminBrokerProcessor, Channel, RemotingCommand], RemotingCommand]]
    ] = {
        RequestCode.GET_ALL_TOPIC_CONFIG: get_all_topic_config,
        RequestCode.GET_BROKER_CONFIG: get_broker_config,
        RequestCode.GET_BROKER_RUNTIME_INFO: get_broker_runtime_info,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: search_offset_by_timestamp,
        RequestCode.GET_MAX_OFFSET: get_max_offset,
        RequestCode.GET_MIN_OFFSET: get_min_offset,
        RequestCode.GET_EARLIEST_MSG_STORETIME: get_earliest_msg_storetime,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: update_and_create_subscription_group,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: get_all_subscription_group,
        RequestCode.DELETE_SUBSCRIPTIONGROUP: delete_subscription_group,
        RequestCode.CLONE_GROUP_OFFSET: clone_group_offset,
        RequestCode.GET_TOPIC_STATS_INFO: get_topic_stats_info,
        RequestCode.GET_CONSUMER_CONNECTION_LIST: get_consumer_connection_list,
        RequestCode.GET_PRODUCER_CONNECTION_LIST: get_producer_connection_list,
        RequestCode.GET_CONSUME_STATS: get_consume_stats,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: query_topic_consume_by_who,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: reset_offset,
        RequestCode.VIEW_BROKER_STATS_DATA: view_broker_stats_data,
    }


def _connection(client_id: str, channel: Channel, language: int, version: int) -> Connection:
    try:
        lang: LanguageCode | None = LanguageCode(language)
    except ValueError:
        lang = LanguageCode.OTHER
    return Connection(client_id=client_id, client_addr=channel.remote_addr, language=lang, version=version)
