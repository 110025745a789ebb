"""AdminAPI: the admin RPCs ``MQClientAPI`` does not have, one typed method each.

Mirrors the admin half of ``org.apache.rocketmq.client.impl.MQClientAPIImpl`` (the calls
``DefaultMQAdminExtImpl`` makes: ``getTopicStatsInfo``, ``getConsumeStats``,
``getConsumerConnectionList``, ``getProducerConnectionList``, ``getConsumerRunningInfo``,
``queryTopicConsumeByWho``, ``getBrokerRuntimeInfo``, ``deleteTopicInBroker``,
``deleteTopicInNameServer``, ``invokeBrokerToResetOffset``,
``invokeBrokerToGetConsumerStatus``, ``consumeMessageDirectly``, ``viewBrokerStatsData``,
``getTopicsByCluster``, ``putKVConfigValue``, ``deleteKVConfigValue``). It wraps an
:class:`~rocketq.client.impl.mq_client_api.MQClientAPI` and reuses its request stamping and name-server
fail-over; the data-path and offset RPCs stay on the wrapped object (``self.client``).

Invariants (as in ``MQClientAPI``): requests carry the declarative header classes; a
non-SUCCESS answer raises :class:`~rocketq.errors.BrokerError` with the code, remark and
address; transport failures raise :class:`~rocketq.errors.RemotingError`. mqadmin's ACL
signing fields (``AccessKey``/``Signature``, golden caveat 5) are not sent: rocketq has no
ACL and a broker without ACL ignores them.
"""

from __future__ import annotations

from rocketq.client.impl.mq_client_api import MQClientAPI, check_response
from rocketq.protocol.bodies import (
    BrokerStatsData,
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GetConsumerStatusBody,
    GroupList,
    ProducerConnection,
    ResetOffsetBody,
    TopicStatsTable,
)
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    CommandHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicsByClusterRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PutKVConfigRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import KVTable, TopicList

__all__ = ["AdminAPI"]


class AdminAPI:
    """Typed admin RPCs over an :class:`MQClientAPI` (``client``)."""

    def __init__(self, client: MQClientAPI) -> None:
        self.client = client

    # ------------------------------------------------------------------ plumbing
    def _broker(
        self, addr: str, code: int, header: CommandHeader | None, timeout_ms: int, body: bytes = b""
    ) -> RemotingCommand:
        return self.client.invoke_checked(addr, code, header, timeout_ms, body)

    def _each_namesrv(self, code: int, header: CommandHeader, timeout_ms: int) -> None:
        """Send to every name server (``deleteTopicInNameServer`` / ``putKVConfigValue`` loop)."""
        for addr in self.client.namesrv_addrs:
            self.client.invoke_checked(addr, code, header, timeout_ms)

    # ------------------------------------------------------------------ name server
    def get_topics_by_cluster(self, cluster: str, timeout_ms: int) -> list[str]:
        """GET_TOPICS_BY_CLUSTER (224)."""
        request = self.client.request(
            RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster=cluster)
        )
        response = check_response(self.client.invoke_namesrv(request, timeout_ms), None)
        return list(TopicList.from_json(response.body).topic_list) if response.body else []

    def delete_topic_in_namesrv(self, topic: str, timeout_ms: int) -> None:
        """DELETE_TOPIC_IN_NAMESRV (216) on every name server (4.9.7: header ``topic`` only)."""
        self._each_namesrv(
            RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic=topic), timeout_ms
        )

    def put_kv_config(self, namespace: str, key: str, value: str, timeout_ms: int) -> None:
        """PUT_KV_CONFIG (100) on every name server (``createOrUpdateOrderConf``)."""
        header = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
        self._each_namesrv(RequestCode.PUT_KV_CONFIG, header, timeout_ms)

    def delete_kv_config(self, namespace: str, key: str, timeout_ms: int) -> None:
        """DELETE_KV_CONFIG (102) on every name server."""
        header = DeleteKVConfigRequestHeader(namespace=namespace, key=key)
        self._each_namesrv(RequestCode.DELETE_KV_CONFIG, header, timeout_ms)

    # ------------------------------------------------------------------ topics
    def get_topic_stats_info(self, addr: str, topic: str, timeout_ms: int) -> TopicStatsTable:
        """GET_TOPIC_STATS_INFO (202): min/max offset and last store time per queue."""
        header = GetTopicStatsInfoRequestHeader(topic=topic)
        response = self._broker(addr, RequestCode.GET_TOPIC_STATS_INFO, header, timeout_ms)
        return TopicStatsTable.from_json(response.body)

    def delete_topic_in_broker(self, addr: str, topic: str, timeout_ms: int) -> None:
        """DELETE_TOPIC_IN_BROKER (215)."""
        self._broker(
            addr, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic), timeout_ms
        )

    def query_topic_consume_by_who(self, addr: str, topic: str, timeout_ms: int) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO (300): the groups that consume (or consumed) ``topic``."""
        header = QueryTopicConsumeByWhoRequestHeader(topic=topic)
        response = self._broker(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header, timeout_ms)
        return list(GroupList.from_json(response.body).group_list) if response.body else []

    # ------------------------------------------------------------------ broker
    def get_broker_runtime_info(self, addr: str, timeout_ms: int) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): the KVTable mqadmin clusterList/brokerStatus print."""
        response = self._broker(addr, RequestCode.GET_BROKER_RUNTIME_INFO, None, timeout_ms)
        return dict(KVTable.from_json(response.body).table)

    def view_broker_stats_data(
        self, addr: str, stats_name: str, stats_key: str, timeout_ms: int
    ) -> BrokerStatsData:
        """VIEW_BROKER_STATS_DATA (315); BrokerError SYSTEM_ERROR when the item does not exist."""
        header = ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key)
        response = self._broker(addr, RequestCode.VIEW_BROKER_STATS_DATA, header, timeout_ms)
        return BrokerStatsData.from_json(response.body)

    # ------------------------------------------------------------------ groups
    def get_consume_stats(self, addr: str, group: str, topic: str | None, timeout_ms: int) -> ConsumeStats:
        """GET_CONSUME_STATS (208); ``topic`` None = every topic the group has offsets for."""
        header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
        response = self._broker(addr, RequestCode.GET_CONSUME_STATS, header, timeout_ms)
        return ConsumeStats.from_json(response.body)

    def get_consumer_connection_list(self, addr: str, group: str, timeout_ms: int) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST (203); BrokerError 206 CONSUMER_NOT_ONLINE when none."""
        header = GetConsumerConnectionListRequestHeader(consumer_group=group)
        response = self._broker(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, header, timeout_ms)
        return ConsumerConnection.from_json(response.body)

    def get_producer_connection_list(self, addr: str, group: str, timeout_ms: int) -> ProducerConnection:
        """GET_PRODUCER_CONNECTION_LIST (204); BrokerError SYSTEM_ERROR for an unknown group."""
        header = GetProducerConnectionListRequestHeader(producer_group=group)
        response = self._broker(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, header, timeout_ms)
        return ProducerConnection.from_json(response.body)

    def get_consumer_running_info(
        self, addr: str, group: str, client_id: str, jstack: bool, timeout_ms: int
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO (307), relayed by the broker to the client."""
        header = GetConsumerRunningInfoRequestHeader(
            consumer_group=group, client_id=client_id, jstack_enable=jstack
        )
        response = self._broker(addr, RequestCode.GET_CONSUMER_RUNNING_INFO, header, timeout_ms)
        return ConsumerRunningInfo.from_json(response.body)

    def consume_message_directly(
        self, addr: str, group: str, client_id: str | None, offset_msg_id: str, timeout_ms: int
    ) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY (309) through the broker that stores the message."""
        header = ConsumeMessageDirectlyResultRequestHeader(
            consumer_group=group, client_id=client_id, msg_id=offset_msg_id
        )
        response = self._broker(addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, header, timeout_ms)
        return ConsumeMessageDirectlyResult.from_json(response.body)

    # ------------------------------------------------------------------ offsets through the broker
    def invoke_broker_to_reset_offset(
        self, addr: str, topic: str, group: str, timestamp_ms: int, is_force: bool, timeout_ms: int
    ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET (222): the offsets pushed to the live clients.

        BrokerError CONSUMER_NOT_ONLINE (206) when the group has no live client there.
        """
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=is_force)
        response = self._broker(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header, timeout_ms)
        if not response.body:
            return {}
        return dict(ResetOffsetBody.from_json(response.body).offset_table)

    def invoke_broker_to_get_consumer_status(
        self, addr: str, topic: str, group: str, client_addr: str | None, timeout_ms: int
    ) -> dict[str, dict[MessageQueue, int]]:
        """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): client id -> its offsets of ``topic``."""
        header = GetConsumerStatusRequestHeader(topic=topic, group=group, client_addr=client_addr)
        response = self._broker(addr, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header, timeout_ms)
        if not response.body:
            return {}
        return {k: dict(v) for k, v in GetConsumerStatusBody.from_json(response.body).consumer_table.items()}
