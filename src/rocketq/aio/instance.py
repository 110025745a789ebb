"""AsyncClientInstance: routes, heartbeats and background tasks of one asyncio client.

The asyncio counterpart of :class:`rocketq.client.instance.MQClientInstance` (Java's
``MQClientInstance`` and ``ClientRemotingProcessor``). Each asyncio producer or consumer owns
one instance (its own client id, ``ip@<pid>#<nanos>`` unless ``instance_name`` is set).

Tasks model: everything runs on the loop that called :meth:`AsyncClientInstance.start`:
route refresh (every ``poll_name_server_interval_ms``), heartbeat + offline-broker cleanup
(every ``heartbeat_broker_interval_ms``), consumer-offset persist (every
``persist_consumer_offset_interval_ms``) and rebalance (every ``rebalance_interval_ms`` or at
once after :meth:`AsyncClientInstance.rebalance_immediately`, e.g. on
NOTIFY_CONSUMER_IDS_CHANGED). :meth:`AsyncClientInstance.close` cancels and awaits every task
and closes the connections: no task and no thread survives it.

Invariants: the publish and subscribe queue lists come from the sync client's own
:func:`~rocketq.client.impl.topic_route.topic_route_to_publish_info` and
:func:`~rocketq.client.impl.topic_route.topic_route_to_subscribe_info`; the broker address table is the
union over all routes, pruned of brokers no route mentions (``cleanOfflineBroker``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from rocketq.acl.client_security import client_security_of
from rocketq.aio.api import AsyncMQClientAPI
from rocketq.aio.remoting import AsyncRemotingClient, RequestHook, wait_event
from rocketq.aio.request_response import AsyncRequestFutureHolder
from rocketq.client.api_results import FindBrokerResult
from rocketq.client.config import ClientConfig
from rocketq.client.consumer.route_backoff import ROUTE_RETRY_FIRST_MS, ROUTE_RETRY_MAX_MS
from rocketq.client.impl.topic_route import (
    prune_offline_brokers,
    select_subscribe_addr,
    topic_route_to_publish_info,
    topic_route_to_subscribe_info,
)
from rocketq.client.instance import request_not_supported
from rocketq.client.latency import TopicPublishInfo
from rocketq.client.transaction import decode_check_request
from rocketq.errors import ClientError, RocketqError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import ConsumerData, HeartbeatData, ProducerData
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import MASTER_ID
from rocketq.protocol.route import TopicRouteData

__all__ = ["AsyncClientInstance", "AsyncConsumerInner", "AsyncProducerInner"]

log = logging.getLogger(__name__)


class AsyncProducerInner(Protocol):
    """What the instance needs from an asyncio producer (``MQProducerInner``)."""

    def publish_topics(self) -> set[str]: ...

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None: ...


class AsyncConsumerInner(Protocol):
    """What the instance needs from an asyncio consumer (``MQConsumerInner``)."""

    def consumer_data(self) -> ConsumerData: ...

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None: ...

    async def do_rebalance(self) -> None: ...

    async def persist_consumer_offset(self) -> None: ...

    async def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None: ...


class AsyncClientInstance:
    """One asyncio client's hub (``MQClientInstance``): start it inside a running loop."""

    def __init__(
        self, config: ClientConfig, client_id: str, *, request_hooks: Sequence[RequestHook] = ()
    ) -> None:
        self.config = config
        self.client_id = client_id
        namesrv_addrs = config.namesrv_addr_list()  # fails (ClientError) before any resource exists
        # ClientConfig's access/secret keys and TLS, as MQClientInstance applies them
        rpc_hook, ssl_context = client_security_of(config)
        self.remoting = AsyncRemotingClient(
            name=f"rocketq-aio[{client_id}]",
            connect_timeout_ms=config.connect_timeout_ms,
            request_handler=self._process_request,
            request_hooks=[*([rpc_hook] if rpc_hook is not None else []), *request_hooks],
            ssl_context=ssl_context,
        )
        self.api = AsyncMQClientAPI(
            self.remoting, namesrv_addrs, language=config.language, serialize_type=config.serialize_type
        )
        #: pending request/reply requests of this client (PUSH_REPLY_MESSAGE_TO_CLIENT)
        self.requests = AsyncRequestFutureHolder()
        self.producer: tuple[str, AsyncProducerInner] | None = None
        self.consumer: tuple[str, AsyncConsumerInner] | None = None
        self._routes: dict[str, TopicRouteData] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}
        self._broker_versions: dict[str, dict[str, int]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._rebalance_wakeup: asyncio.Event | None = None
        self._rebalance_task: asyncio.Task[None] | None = None
        self._route_lock: asyncio.Lock | None = None
        self._started = False
        self._closed = False

    # ================================================================== lifecycle
    async def start(self) -> None:
        """Start the background tasks on the running loop; a second call does nothing."""
        if self._closed:
            raise ClientError(f"client instance {self.client_id} has been shut down")
        if self._started:
            return
        self._started = True
        cfg = self.config
        self._rebalance_wakeup = asyncio.Event()
        self._route_lock = asyncio.Lock()
        self._tasks = [
            self._periodic("route", self.update_all_routes, 0.01, cfg.poll_name_server_interval_ms),
            self._periodic("heartbeat", self._heartbeat_round, 1.0, cfg.heartbeat_broker_interval_ms),
            self._periodic("persist", self._persist, 10.0, cfg.persist_consumer_offset_interval_ms),
            asyncio.get_running_loop().create_task(
                self._rebalance_loop(), name=f"{self.client_id}-rebalance"
            ),
        ]
        self._rebalance_task = self._tasks[-1]

    def _periodic(
        self, name: str, fn: Callable[[], Awaitable[object]], initial_s: float, period_ms: int
    ) -> asyncio.Task[None]:
        async def run() -> None:
            await asyncio.sleep(initial_s)
            while True:
                try:
                    await fn()
                except Exception:
                    log.exception("%s: %s task failed", self.client_id, name)
                await asyncio.sleep(period_ms / 1000.0)

        return asyncio.get_running_loop().create_task(run(), name=f"{self.client_id}-{name}")

    async def close(self) -> None:
        """Cancel and await every task, UNREGISTER_CLIENT everywhere, close the connections."""
        if self._closed:
            return
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.requests.close()
        await self._unregister()
        await self.remoting.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # ================================================================== routes
    async def update_all_routes(self) -> None:
        """The route task: refresh every topic the producer publishes to or the consumer reads."""
        topics: set[str] = set()
        if self.producer is not None:
            topics |= self.producer[1].publish_topics()
        if self.consumer is not None:
            topics.update(s.topic for s in self.consumer[1].consumer_data().subscription_data_set if s.topic)
        for topic in topics:
            try:
                await self.update_route(topic)
            except RocketqError as exc:
                log.warning("route refresh of %s failed: %s", topic, exc)

    async def update_route(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool:
        """Fetch ``topic``'s route and hand it to the producer and consumer; False when none.

        With ``default_topic`` the template topic's route is used, each QueueData capped at
        ``default_queue_nums`` (``updateTopicRouteInfoFromNameServer(topic, true, producer)``).
        """
        timeout = self.config.mq_client_api_timeout_ms
        lock = self._route_lock or asyncio.Lock()
        async with lock:
            if default_topic is not None:
                route = await self.api.get_topic_route(default_topic, timeout)
                if route is not None:
                    for qd in route.queue_datas:
                        nums = min(default_queue_nums, qd.read_queue_nums)
                        qd.read_queue_nums = nums
                        qd.write_queue_nums = nums
            else:
                route = await self.api.get_topic_route(topic, timeout)
            if route is None:
                return False
            for bd in route.broker_datas:
                if bd.broker_name:
                    self._broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
            self._routes[topic] = route
            if self.producer is not None:
                self.producer[1].update_topic_publish_info(topic, topic_route_to_publish_info(topic, route))
            if self.consumer is not None:
                self.consumer[1].update_topic_subscribe_info(
                    topic, topic_route_to_subscribe_info(topic, route)
                )
            return True

    async def await_route(self, topic: str, known: Callable[[], bool]) -> None:
        """A subscribed topic without a route yet (or ``%RETRY%<group>``, which the first
        heartbeat creates) is looked up again after 1 s doubling to 8 s until ``known()``,
        then heartbeats go out (its broker may be new) and a rebalance runs at once: the
        blocking consumers' :class:`~rocketq.client.consumer.route_backoff.RouteBackoff` rule
        as a task of this loop."""
        delay_ms = ROUTE_RETRY_FIRST_MS
        while not self._closed and not known():
            await asyncio.sleep(delay_ms / 1000.0)
            delay_ms = min(delay_ms * 2, ROUTE_RETRY_MAX_MS)
            with contextlib.suppress(RocketqError):
                if await self.update_route(topic):
                    await self.send_heartbeat_to_all_brokers()
                    self.rebalance_immediately()

    def topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The last route fetched for ``topic`` (None before the first)."""
        return self._routes.get(topic)

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        """The master address of ``broker_name`` (``findBrokerAddressInPublish``)."""
        addrs = self._broker_addrs.get(broker_name)
        return addrs.get(MASTER_ID) if addrs else None

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None:
        """``findBrokerAddressInSubscribe`` by the shared :func:`select_subscribe_addr` rule."""
        found = select_subscribe_addr(self._broker_addrs.get(broker_name, {}), broker_id, only_this_broker)
        if found is None:
            return None
        addr, slave = found
        return FindBrokerResult(addr, slave, self._broker_versions.get(broker_name, {}).get(addr, 0))

    async def master_of(self, mq: MessageQueue) -> str:
        """The master address of ``mq``'s broker, fetching the route once if it is unknown."""
        addr = self.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            await self.update_route(mq.topic)
            addr = self.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        """GET_CONSUMER_LIST_BY_GROUP on one broker of ``topic`` (``findConsumerIdList``)."""
        route = self._routes.get(topic)
        if route is None:
            await self.update_route(topic)
            route = self._routes.get(topic)
        if route is None or not route.broker_datas:
            return None
        bd = random.choice(route.broker_datas)
        addr = bd.broker_addrs.get(MASTER_ID) or next(iter(bd.broker_addrs.values()), None)
        if addr is None:
            return None
        try:
            return await self.api.get_consumer_id_list(addr, group, self.config.mq_client_api_timeout_ms)
        except RocketqError as exc:
            log.warning("get consumer id list of %s from %s failed: %s", group, addr, exc)
            return None

    # ================================================================== heartbeat
    def _clean_offline_brokers(self) -> None:
        for name in prune_offline_brokers(self._broker_addrs, self._routes.values()):
            self._broker_versions.pop(name, None)

    def heartbeat_data(self) -> HeartbeatData:
        """``prepareHeartbeatData``: the producer group and the consumer with its subscriptions."""
        data = HeartbeatData(client_id=self.client_id)
        if self.producer is not None:
            data.producer_data_set = [ProducerData(group_name=self.producer[0])]
        if self.consumer is not None:
            cd = self.consumer[1].consumer_data()
            cd.unit_mode = self.config.unit_mode
            data.consumer_data_set = [cd]
        return data

    async def _heartbeat_round(self) -> None:
        self._clean_offline_brokers()
        await self.send_heartbeat_to_all_brokers()

    async def send_heartbeat_to_all_brokers(self) -> bool:
        """HEART_BEAT to every known broker (only masters when there is no consumer)."""
        data = self.heartbeat_data()
        if not data.producer_data_set and not data.consumer_data_set:
            return False
        producer_only = not data.consumer_data_set
        sent = False
        for name, addrs in list(self._broker_addrs.items()):
            for bid, addr in list(addrs.items()):
                if producer_only and bid != MASTER_ID:
                    continue
                try:
                    version = await self.api.send_heartbeat(addr, data, self.config.mq_client_api_timeout_ms)
                except RocketqError as exc:
                    log.warning("heartbeat to %s (%s) failed: %s", name, addr, exc)
                    continue
                sent = True
                self._broker_versions.setdefault(name, {})[addr] = version
        return sent

    async def _unregister(self) -> None:
        producer_group = self.producer[0] if self.producer is not None else None
        consumer_group = self.consumer[0] if self.consumer is not None else None
        if producer_group is None and consumer_group is None:
            return
        timeout = self.config.mq_client_api_timeout_ms
        for addrs in list(self._broker_addrs.values()):
            for addr in list(addrs.values()):
                with contextlib.suppress(RocketqError):
                    await self.api.unregister_client(
                        addr,
                        self.client_id,
                        timeout,
                        producer_group=producer_group,
                        consumer_group=consumer_group,
                    )

    # ================================================================== consumers
    async def stop_rebalance(self) -> None:
        """Cancel and await the rebalance task (a consumer's shutdown starts with it, so no
        rebalance round runs against a consumer that is shutting down)."""
        task, self._rebalance_task = self._rebalance_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def rebalance_immediately(self) -> None:
        """Wake the rebalance task (``rebalanceImmediately``)."""
        if self._rebalance_wakeup is not None:
            self._rebalance_wakeup.set()

    async def _rebalance_loop(self) -> None:
        wakeup = self._rebalance_wakeup
        assert wakeup is not None
        while True:
            # not asyncio.wait_for: it can swallow close()'s cancel (see wait_event)
            await wait_event(wakeup, self.config.rebalance_interval_ms / 1000.0)
            wakeup.clear()
            if self.consumer is not None:
                try:
                    await self.consumer[1].do_rebalance()
                except Exception:
                    log.exception("rebalance of %s failed", self.consumer[0])

    async def _persist(self) -> None:
        if self.consumer is not None:
            await self.consumer[1].persist_consumer_offset()

    # ================================================================== broker -> client
    def _check_transaction_state(self, request: RemotingCommand, addr: str) -> None:
        """``ClientRemotingProcessor.checkTransactionState``: hand the check to this client's
        producer when the half's ``PGROUP`` is its group (the request is oneway)."""
        decoded = decode_check_request(request)
        if decoded is None:
            return
        group, msg, header = decoded
        producer = self.producer
        handler = getattr(producer[1], "check_transaction_state", None) if producer is not None else None
        if producer is None or producer[0] != group or handler is None:
            log.debug("checkTransactionState, pick producer by group[%s] failed", group)
            return
        handler(addr, msg, header)

    async def _process_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """``ClientRemotingProcessor``: requests brokers send on our connections."""
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            log.info("consumer ids of %s changed (notified by %s)", request.ext("consumerGroup"), addr)
            self.rebalance_immediately()
            return None
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            return self.requests.receive_reply_message(request)
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            self._check_transaction_state(request, addr)
            return None
        group = request.ext("consumerGroup") or request.ext("group")
        if self.consumer is not None and group == self.consumer[0]:
            return await self.consumer[1].process_broker_request(request, addr)
        if group is not None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
            )
        return request_not_supported(request)
