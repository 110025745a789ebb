"""MQAdminImpl: queue-level lookups every client role shares, without a thread of its own.

Mirrors ``org.apache.rocketmq.client.impl.MQAdminImpl`` (reference 7.2): a topic's readable
queues, the master of a queue's broker, GET_MIN/MAX_OFFSET, GET_EARLIEST_MSG_STORETIME,
SEARCH_OFFSET_BY_TIMESTAMP and VIEW_MESSAGE_BY_ID. The consumers reach it as
``MQClientInstance.mq_admin_impl`` (routes from the instance's route table, kept fresh by its
route thread); the admin API and the Spark connector create one over a standalone
:class:`~rocketq.client.impl.mq_client_api.MQClientAPI` with a
:class:`~rocketq.client.impl.topic_route.TopicRouteCache`.

Invariants: offset and time lookups go to the broker master of the queue
(``findBrokerAddressInPublish``); when the broker name is unknown the topic's route is
fetched once more before :class:`~rocketq.errors.ClientError` is raised. Every call blocks
only its caller, for at most ``timeout_ms`` per RPC.
"""

from __future__ import annotations

from rocketq.client.api_results import FindBrokerResult
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.impl.topic_route import RouteTable, TopicRouteCache, topic_route_to_subscribe_info
from rocketq.errors import ClientError
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import TopicRouteData
from rocketq.remoting.helper import host_addr_to_string

__all__ = ["MQAdminImpl"]


class MQAdminImpl:
    """Queue lookups over ``api``; ``routes`` is the route table to use (an
    :class:`~rocketq.client.instance.MQClientInstance`; default: a :class:`TopicRouteCache`
    of its own). ``timeout_ms`` bounds each RPC."""

    def __init__(self, api: MQClientAPI, *, timeout_ms: int, routes: RouteTable | None = None) -> None:
        self.api = api
        self.timeout_ms = timeout_ms
        self._cache = TopicRouteCache(api, timeout_ms) if routes is None else None
        self.routes: RouteTable = routes if routes is not None else self._own_cache()

    def _own_cache(self) -> TopicRouteCache:
        cache = self._cache
        if cache is None:
            raise ClientError("this MQAdminImpl uses its client instance's routes")
        return cache

    # ------------------------------------------------------------------ routes (RouteTable)
    def route(self, topic: str, *, refresh: bool = False) -> TopicRouteData | None:
        """The topic's route from the cache (fetched when missing or ``refresh``); ``None``
        when the name server has none. Only for an MQAdminImpl with its own cache."""
        return self._own_cache().route(topic, refresh=refresh)

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        return self.routes.find_broker_address_in_publish(broker_name)

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None:
        return self.routes.find_broker_address_in_subscribe(broker_name, broker_id, only_this_broker)

    def update_topic_route_info_from_name_server(self, topic: str) -> bool:
        return self.routes.update_topic_route_info_from_name_server(topic)

    def fetch_subscribe_message_queues(self, topic: str) -> set[MessageQueue]:
        """``fetchSubscribeMessageQueues``: the readable queues of ``topic``, fresh from the
        name server; ClientError when the topic has no route or no readable queue."""
        route = self.api.get_topic_route_info_from_name_server(topic, self.timeout_ms)
        if route is None:
            raise ClientError(f"Can not find Message Queue for this topic, {topic}: no route info")
        mqs = topic_route_to_subscribe_info(topic, route)
        if not mqs:
            raise ClientError(f"Can not find Message Queue for this topic, {topic}: Namesrv return empty")
        return mqs

    def master_addr(self, mq: MessageQueue) -> str:
        """The master address of the queue's broker (the route fetched again once if unknown)."""
        addr = self.routes.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            self.routes.update_topic_route_info_from_name_server(mq.topic)
            addr = self.routes.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    # ------------------------------------------------------------------ offsets and time
    def max_offset(self, mq: MessageQueue) -> int:
        """GET_MAX_OFFSET: the offset the next message of ``mq`` will get."""
        return self.api.get_max_offset(
            self.master_addr(mq), mq.topic, mq.queue_id, self.timeout_ms, bname=mq.broker_name
        )

    def min_offset(self, mq: MessageQueue) -> int:
        """GET_MIN_OFFSET: the smallest offset of ``mq`` still stored."""
        return self.api.get_min_offset(
            self.master_addr(mq), mq.topic, mq.queue_id, self.timeout_ms, bname=mq.broker_name
        )

    def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        """GET_EARLIEST_MSG_STORETIME of ``mq`` (epoch ms)."""
        return self.api.get_earliest_msg_storetime(
            self.master_addr(mq), mq.topic, mq.queue_id, self.timeout_ms, bname=mq.broker_name
        )

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the offset stored nearest to ``timestamp_ms``."""
        return self.api.search_offset(
            self.master_addr(mq), mq.topic, mq.queue_id, timestamp_ms, self.timeout_ms, bname=mq.broker_name
        )

    def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID on the store host the offsetMsgId names."""
        host, offset = decode_offset_msg_id(offset_msg_id)
        return self.api.view_message(host_addr_to_string(host), offset, self.timeout_ms)
