"""Topic routes on the client: route -> queues, broker addresses, and a thread-free route cache.

Mirrors the route half of ``org.apache.rocketmq.client.impl.factory.MQClientInstance``
(``topicRouteData2TopicPublishInfo``, ``topicRouteData2TopicSubscribeInfo``,
``findBrokerAddressInPublish``, ``findBrokerAddressInSubscribe``). The one place that
decides which broker address serves a queue: :class:`~rocketq.client.instance.MQClientInstance`
(with its route-refresh thread) and :class:`TopicRouteCache` (no thread: the admin API and the
Spark connector) both answer through :func:`select_subscribe_addr` and
:data:`~rocketq.protocol.mixall.MASTER_ID`.

Invariants:

* Publish queue lists follow Java: QueueData sorted by broker name, writable ones whose
  broker has a master, ids ``0..writeQueueNums-1`` (or the ``orderTopicConf`` layout);
  subscribe sets hold every readable queue.
* ``findBrokerAddressInSubscribe``: the exact broker id, else (for a slave id) id+1, else,
  unless ``only_this_broker``, the lowest id known (the master when there is one).
* :class:`TopicRouteCache` fetches a topic's route on first use and again only when asked
  (:meth:`TopicRouteCache.update_topic_route_info_from_name_server`); it is thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from rocketq.client.api_results import FindBrokerResult
from rocketq.client.latency import TopicPublishInfo
from rocketq.protocol.codes import PermName
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import MASTER_ID
from rocketq.protocol.route import TopicRouteData

if TYPE_CHECKING:
    from rocketq.client.impl.mq_client_api import MQClientAPI

__all__ = [
    "RouteTable",
    "TopicRouteCache",
    "prune_offline_brokers",
    "select_subscribe_addr",
    "topic_route_to_publish_info",
    "topic_route_to_subscribe_info",
]


class RouteTable(Protocol):
    """What the thread-free core needs to find a queue's broker (``MQClientInstance``'s
    route methods); :class:`~rocketq.client.instance.MQClientInstance` and
    :class:`TopicRouteCache` provide it."""

    def find_broker_address_in_publish(self, broker_name: str) -> str | None: ...

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None: ...

    def update_topic_route_info_from_name_server(self, topic: str) -> bool: ...


def topic_route_to_publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """``MQClientInstance.topicRouteData2TopicPublishInfo``."""
    mqs: list[MessageQueue] = []
    order = False
    if route.order_topic_conf:
        # "brokerName:queueNums;brokerName:queueNums" from the name server's KV config
        for part in route.order_topic_conf.split(";"):
            name, _, nums = part.partition(":")
            if name and nums.isdigit():
                mqs.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
        order = True
    else:
        masters = {b.broker_name: b for b in route.broker_datas}
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name or ""):
            if not qd.perm & PermName.PERM_WRITE:
                continue
            bd = masters.get(qd.broker_name)
            if bd is None or MASTER_ID not in bd.broker_addrs:
                continue
            mqs.extend(MessageQueue(topic, qd.broker_name or "", i) for i in range(qd.write_queue_nums))
    return TopicPublishInfo(mqs, order_topic=order, have_topic_router_info=True)


def topic_route_to_subscribe_info(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """``MQClientInstance.topicRouteData2TopicSubscribeInfo``: every readable queue."""
    out: set[MessageQueue] = set()
    for qd in route.queue_datas:
        if qd.perm & PermName.PERM_READ:
            out.update(MessageQueue(topic, qd.broker_name or "", i) for i in range(qd.read_queue_nums))
    return out


def select_subscribe_addr(
    addrs: dict[int, str], broker_id: int, only_this_broker: bool
) -> tuple[str, bool] | None:
    """``findBrokerAddressInSubscribe`` over one broker name's addresses: (address, slave)."""
    if not addrs:
        return None
    addr = addrs.get(broker_id)
    slave = broker_id != MASTER_ID
    if addr is None and slave:
        addr = addrs.get(broker_id + 1)
    if addr is None and not only_this_broker:
        bid, addr = min(addrs.items())
        slave = bid != MASTER_ID
    if addr is None:
        return None
    return addr, slave


def prune_offline_brokers(
    broker_addrs: dict[str, dict[int, str]], routes: Iterable[TopicRouteData]
) -> list[str]:
    """``cleanOfflineBroker``: drop from ``broker_addrs`` (in place) every address no route
    mentions any more; returns the broker names left with no address (removed)."""
    live: dict[str, set[str]] = {}
    for route in routes:
        for bd in route.broker_datas:
            live.setdefault(bd.broker_name or "", set()).update(bd.broker_addrs.values())
    gone = []
    for name in list(broker_addrs):
        kept = {bid: a for bid, a in broker_addrs[name].items() if a in live.get(name, set())}
        if kept:
            broker_addrs[name] = kept
        else:
            del broker_addrs[name]
            gone.append(name)
    return gone


class TopicRouteCache:
    """Routes fetched on demand from the name server, with the broker addresses they name.

    Thread-free and thread-safe: the route table of clients that run no route-refresh loop.
    ``timeout_ms`` bounds each GET_ROUTEINFO_BY_TOPIC.
    """

    def __init__(self, api: MQClientAPI, timeout_ms: int) -> None:
        self._api = api
        self._timeout_ms = timeout_ms
        self._lock = threading.Lock()
        self._routes: dict[str, TopicRouteData] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}

    def route(self, topic: str, *, refresh: bool = False) -> TopicRouteData | None:
        """The topic's route (cached unless ``refresh``); ``None`` when the topic has none."""
        if not refresh:
            with self._lock:
                cached = self._routes.get(topic)
            if cached is not None:
                return cached
        route = self._api.get_topic_route_info_from_name_server(topic, self._timeout_ms)
        if route is None:
            return None
        with self._lock:
            self._routes[topic] = route
            for bd in route.broker_datas:
                if bd.broker_name:
                    self._broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
        return route

    def update_topic_route_info_from_name_server(self, topic: str) -> bool:
        """Fetch ``topic``'s route again; True when the name server has one."""
        return self.route(topic, refresh=True) is not None

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        """The master address of ``broker_name`` from the routes fetched so far."""
        with self._lock:
            addrs = self._broker_addrs.get(broker_name)
            return addrs.get(MASTER_ID) if addrs else None

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None:
        """See :func:`select_subscribe_addr` (broker versions are unknown here: 0)."""
        with self._lock:
            found = select_subscribe_addr(
                self._broker_addrs.get(broker_name, {}), broker_id, only_this_broker
            )
        return FindBrokerResult(found[0], found[1]) if found is not None else None
