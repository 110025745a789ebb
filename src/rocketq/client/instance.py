"""MQClientInstance: the connection, route and heartbeat hub shared per client id.

Mirrors ``org.apache.rocketmq.client.impl.factory.MQClientInstance``,
``org.apache.rocketmq.client.impl.MQClientManager`` and
``org.apache.rocketmq.client.impl.ClientRemotingProcessor`` (reference 7.1, 8.1, 10.1).

Threading model (STYLE habit 6), per instance:

* the :class:`RemotingClient`'s share of the process's one remoting I/O thread
  (``rocketq-remoting-io``, serving every client of the process), plus its small handler pool
  for broker->client requests (a thread in a sync call reads its own answer on its own
  thread; the I/O thread serves async calls and idle connections);
* :class:`~rocketq.common.service_thread.PeriodicService` loops: route refresh (every
  ``poll_name_server_interval_ms``, first after 10 ms) and heartbeat + offline-broker cleanup
  (every ``heartbeat_broker_interval_ms``, first after 1 s) from :meth:`MQClientInstance.start`;
  consumer-offset persist (every ``persist_consumer_offset_interval_ms``, first after 10 s) and
  rebalance (every ``rebalance_interval_ms`` or at once after
  :meth:`MQClientInstance.rebalance_immediately`) only once a consumer is registered, so a
  producer-only instance runs two loops, not four;
* a lazily created callback pool (``<client id>-callback``) where user callbacks and
  async-send retries run, never on the I/O thread.

:meth:`MQClientInstance.shutdown` stops and joins all of them: no thread survives it.

Invariants:

* One instance per client id (``ip@instanceName``), handed out by an explicit
  :class:`MQClientManager`; :data:`DEFAULT_MANAGER` is the one documented process-wide
  default. An instance shuts down when its last producer and consumer unregister.
* The route table maps each topic to its last :class:`TopicRouteData`; the broker address
  table (broker name -> broker id -> ``ip:port``) is the union over all routes and is
  pruned of brokers no route mentions (``cleanOfflineBroker``).
* Route -> queue lists and the broker-address choice are those of
  :mod:`rocketq.client.impl.topic_route`, shared with the thread-free core.
"""

from __future__ import annotations

import concurrent.futures
import logging
import random
import threading
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from rocketq.acl.client_security import client_security_of
from rocketq.client.api_results import FindBrokerResult
from rocketq.client.config import ClientConfig
from rocketq.client.impl.mq_admin_impl import MQAdminImpl
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.impl.topic_route import (
    prune_offline_brokers,
    select_subscribe_addr,
    topic_route_to_publish_info,
    topic_route_to_subscribe_info,
)
from rocketq.client.latency import TopicPublishInfo
from rocketq.client.request_response import RequestFutureHolder, receive_reply_message
from rocketq.client.transaction import check_transaction_state
from rocketq.common.service_thread import PeriodicService, ServiceThread
from rocketq.errors import ClientError, RocketqError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
)
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import MASTER_ID
from rocketq.protocol.route import BrokerData, QueueData, TopicRouteData
from rocketq.remoting.client import RemotingClient

__all__ = [
    "DEFAULT_MANAGER",
    "MQClientInstance",
    "MQClientManager",
    "MQConsumerInner",
    "MQProducerInner",
    "request_not_supported",
]

log = logging.getLogger(__name__)

#: ``MQClientInstance.LOCK_TIMEOUT_MILLIS``
_LOCK_TIMEOUT_S = 3.0
_CALLBACK_THREADS = 4


@runtime_checkable
class MQProducerInner(Protocol):
    """What the instance needs from a producer (``MQProducerInner``)."""

    def publish_topics(self) -> set[str]: ...

    def is_publish_topic_need_update(self, topic: str) -> bool: ...

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None: ...


@runtime_checkable
class MQConsumerInner(Protocol):
    """What the instance needs from a consumer (``MQConsumerInner``)."""

    def group_name(self) -> str: ...

    def message_model(self) -> MessageModel: ...

    def consume_type(self) -> ConsumeType: ...

    def consume_from_where(self) -> ConsumeFromWhere: ...

    def subscriptions(self) -> list[SubscriptionData]: ...

    def do_rebalance(self) -> None: ...

    def persist_consumer_offset(self) -> None: ...

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None: ...

    def is_subscribe_topic_need_update(self, topic: str) -> bool: ...

    def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """A broker's request for this group (``ClientRemotingProcessor``: running info,
        consume directly, reset offset): the response, or ``None`` when none is sent;
        :func:`request_not_supported` for codes the consumer does not serve."""
        ...


def _sorted_route(route: TopicRouteData) -> tuple[object, ...]:
    qds = sorted(
        ((q.broker_name or "", q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag))
        for q in route.queue_datas
    )
    bds = sorted(
        (b.broker_name or "", b.cluster or "", tuple(sorted(b.broker_addrs.items())))
        for b in route.broker_datas
    )
    return (route.order_topic_conf, tuple(qds), tuple(bds))


def request_not_supported(request: RemotingCommand) -> RemotingCommand:
    """REQUEST_CODE_NOT_SUPPORTED for a broker request nobody here serves (Java's remark)."""
    return request.make_response(
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
    )


def _periodic(name: str, fn: Callable[[], None], initial_ms: int, period_ms: int) -> PeriodicService:
    """``fn`` after ``initial_ms``, then every ``period_ms`` (``MQClientInstance.startScheduledTask``)."""
    return PeriodicService(name, period_ms / 1000.0, fn, initial_s=initial_ms / 1000.0)


class MQClientInstance:
    """The per-client-id hub (``MQClientInstance``); obtain it from :class:`MQClientManager`."""

    def __init__(
        self, config: ClientConfig, client_id: str, *, manager: MQClientManager | None = None
    ) -> None:
        self.config = config
        self.client_id = client_id
        self._manager = manager
        namesrv_addrs = config.namesrv_addr_list()  # fails (ClientError) before any resource exists
        rpc_hook, ssl_context = client_security_of(config)
        self.remoting = RemotingClient(
            name=f"rocketq[{client_id}]",
            connect_timeout_ms=config.connect_timeout_ms,
            request_handler=self._process_request,
            rpc_hook=rpc_hook,
            ssl_context=ssl_context,
        )
        self.api = MQClientAPI(
            self.remoting,
            namesrv_addrs,
            language=config.language,
            serialize_type=config.serialize_type,
        )
        #: ``MQClientInstance.getMQAdminImpl()``: queue-level lookups over this instance's routes.
        self.mq_admin_impl = MQAdminImpl(self.api, timeout_ms=config.mq_client_api_timeout_ms, routes=self)
        self._lock = threading.RLock()
        self._namesrv_lock = threading.Lock()
        self._heartbeat_lock = threading.Lock()
        self._producers: dict[str, MQProducerInner] = {}
        self._consumers: dict[str, MQConsumerInner] = {}
        self._topic_routes: dict[str, TopicRouteData] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}
        self._broker_versions: dict[str, dict[str, int]] = {}
        self._threads: list[ServiceThread] = []
        self._rebalance: PeriodicService | None = None
        self._callback_pool: concurrent.futures.ThreadPoolExecutor | None = None
        #: pending Producer.request calls by correlation id (RequestFutureHolder)
        self.request_future_holder = RequestFutureHolder(f"{client_id}-request-housekeeping")
        self._started = False
        self._shutdown = False

    # ================================================================== lifecycle
    def start(self) -> None:
        """Start the I/O thread and the background loops; later calls do nothing."""
        with self._lock:
            if self._shutdown:
                raise ClientError(f"client instance {self.client_id} has been shut down")
            if self._started:
                return
            self._started = True
            self.remoting.start()
            cfg = self.config
            cid = self.client_id
            self._threads = [
                _periodic(
                    f"{cid}-route",
                    self.update_topic_route_info_from_name_server_all,
                    10,
                    cfg.poll_name_server_interval_ms,
                ),
                _periodic(f"{cid}-heartbeat", self._heartbeat_round, 1000, cfg.heartbeat_broker_interval_ms),
            ]
            for thread in self._threads:
                thread.start()
            if self._consumers:
                self._start_consumer_loops()

    def _start_consumer_loops(self) -> None:
        """The offset-persist and rebalance loops, once the instance has a consumer (under
        ``_lock``): a producer-only instance runs neither."""
        if self._rebalance is not None or not self._started or self._shutdown:
            return
        cfg = self.config
        cid = self.client_id
        # RebalanceService waits first: consumers call rebalance_immediately() on start.
        self._rebalance = _periodic(
            f"{cid}-rebalance", self.do_rebalance, cfg.rebalance_interval_ms, cfg.rebalance_interval_ms
        )
        loops = [
            _periodic(
                f"{cid}-persist",
                self.persist_all_consumer_offset,
                10_000,
                cfg.persist_consumer_offset_interval_ms,
            ),
            self._rebalance,
        ]
        self._threads.extend(loops)
        for thread in loops:
            thread.start()

    def shutdown(self) -> None:
        """Stop every loop and the remoting client (joined); unregistered from the manager.

        Does nothing while a producer or consumer is still registered (``MQClientInstance.shutdown``).
        """
        with self._lock:
            if self._shutdown or self._producers or self._consumers:
                return
            self._shutdown = True
            threads, self._threads = self._threads, []
            pool, self._callback_pool = self._callback_pool, None
        for thread in threads:
            thread.shutdown()
        self.request_future_holder.shutdown()
        self.remoting.close()
        if pool is not None:
            current = threading.current_thread().name
            pool.shutdown(wait=not current.startswith(f"{self.client_id}-callback"))
        if self._manager is not None:
            self._manager.remove_instance(self.client_id, self)

    @property
    def is_shutdown(self) -> bool:
        return self._shutdown

    def callback_executor(self) -> concurrent.futures.Executor:
        """The pool for user callbacks and async retries (never the I/O thread)."""
        with self._lock:
            if self._shutdown:
                raise ClientError(f"client instance {self.client_id} has been shut down")
            if self._callback_pool is None:
                self._callback_pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=_CALLBACK_THREADS, thread_name_prefix=f"{self.client_id}-callback"
                )
            return self._callback_pool

    def run_on_callback_pool(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the callback pool; inline when the pool is gone (shutting down).

        Keeps callbacks and decoding off the remoting I/O thread while the instance lives,
        and never loses a completion once it is shutting down.
        """
        try:
            self.callback_executor().submit(fn)
        except (RuntimeError, ClientError):
            fn()

    # ================================================================== registration
    def register_producer(self, group: str, producer: MQProducerInner) -> bool:
        with self._lock:
            if group in self._producers:
                return False
            self._producers[group] = producer
            return True

    def unregister_producer(self, group: str) -> None:
        """Forget the group and send UNREGISTER_CLIENT for it to every broker."""
        with self._lock:
            self._producers.pop(group, None)
        self._unregister_client(producer_group=group)

    def register_consumer(self, group: str, consumer: MQConsumerInner) -> bool:
        with self._lock:
            if group in self._consumers:
                return False
            self._consumers[group] = consumer
            self._start_consumer_loops()
            return True

    def unregister_consumer(self, group: str) -> None:
        with self._lock:
            self._consumers.pop(group, None)
        self._unregister_client(consumer_group=group)

    def select_producer(self, group: str) -> MQProducerInner | None:
        with self._lock:
            return self._producers.get(group)

    def select_consumer(self, group: str) -> MQConsumerInner | None:
        with self._lock:
            return self._consumers.get(group)

    def _unregister_client(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        timeout = self.config.mq_client_api_timeout_ms
        with self._heartbeat_lock:
            for addrs in self._broker_addr_snapshot().values():
                for addr in addrs.values():
                    try:
                        self.api.unregister_client(
                            addr,
                            self.client_id,
                            timeout,
                            producer_group=producer_group,
                            consumer_group=consumer_group,
                        )
                    except RocketqError as exc:
                        log.warning("unregister client %s from %s failed: %s", self.client_id, addr, exc)

    # ================================================================== routes
    def _broker_addr_snapshot(self) -> dict[str, dict[int, str]]:
        with self._lock:
            return {name: dict(addrs) for name, addrs in self._broker_addrs.items()}

    def topic_route_data(self, topic: str) -> TopicRouteData | None:
        with self._lock:
            return self._topic_routes.get(topic)

    def update_topic_route_info_from_name_server_all(self) -> None:
        """The route loop: refresh every topic a producer publishes to or a consumer reads."""
        topics: set[str] = set()
        with self._lock:
            for producer in self._producers.values():
                topics |= producer.publish_topics()
            for consumer in self._consumers.values():
                topics.update(s.topic for s in consumer.subscriptions() if s.topic)
        for topic in topics:
            try:
                self.update_topic_route_info_from_name_server(topic)
            except RocketqError as exc:
                log.warning("route refresh of %s failed: %s", topic, exc)

    def update_topic_route_info_from_name_server(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool:
        """Fetch ``topic``'s route and propagate it; True when something was updated.

        With ``default_topic`` (the producer's ``createTopicKey``) the route of that template
        topic is used instead, every QueueData capped at ``default_queue_nums`` queues, and
        stored under ``topic`` (``updateTopicRouteInfoFromNameServer(topic, true, producer)``).
        """
        if not self._namesrv_lock.acquire(timeout=_LOCK_TIMEOUT_S):
            log.warning("route update of %s: name server lock busy", topic)
            return False
        try:
            timeout = self.config.mq_client_api_timeout_ms
            if default_topic is not None:
                route = self.api.get_topic_route_info_from_name_server(default_topic, timeout)
                if route is not None:
                    for qd in route.queue_datas:
                        nums = min(default_queue_nums, qd.read_queue_nums)
                        qd.read_queue_nums = nums
                        qd.write_queue_nums = nums
            else:
                route = self.api.get_topic_route_info_from_name_server(topic, timeout)
            if route is None:
                if default_topic is None:
                    log.debug("no route for topic %s", topic)
                return False
            with self._lock:
                old = self._topic_routes.get(topic)
                changed = old is None or _sorted_route(old) != _sorted_route(route)
                if not changed:
                    changed = any(
                        p.is_publish_topic_need_update(topic) for p in self._producers.values()
                    ) or any(c.is_subscribe_topic_need_update(topic) for c in self._consumers.values())
                if not changed:
                    return False
                for bd in route.broker_datas:
                    if bd.broker_name:
                        self._broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
                self._topic_routes[topic] = route
                producers = list(self._producers.values())
                consumers = list(self._consumers.values())
            publish = topic_route_to_publish_info(topic, route)
            for producer in producers:
                producer.update_topic_publish_info(topic, publish)
            subscribe = topic_route_to_subscribe_info(topic, route)
            for consumer in consumers:
                consumer.update_topic_subscribe_info(topic, subscribe)
            log.info("topic route of %s updated: %s", topic, route.to_json().decode())
            return True
        finally:
            self._namesrv_lock.release()

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        """The master address of ``broker_name`` (``findBrokerAddressInPublish``)."""
        with self._lock:
            addrs = self._broker_addrs.get(broker_name)
            return addrs.get(MASTER_ID) if addrs else None

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None:
        """``findBrokerAddressInSubscribe``: exact id, else (slaves) id+1, else any address."""
        with self._lock:
            found = select_subscribe_addr(
                self._broker_addrs.get(broker_name, {}), broker_id, only_this_broker
            )
            if found is None:
                return None
            addr, slave = found
            version = self._broker_versions.get(broker_name, {}).get(addr, 0)
            return FindBrokerResult(addr, slave, version)

    def find_broker_addr_by_topic(self, topic: str) -> str | None:
        """A random broker of the topic's route, master preferred (``findBrokerAddrByTopic``)."""
        route = self.topic_route_data(topic)
        if route is None or not route.broker_datas:
            return None
        bd: BrokerData = random.choice(route.broker_datas)
        if not bd.broker_addrs:
            return None
        return bd.broker_addrs.get(MASTER_ID) or next(iter(bd.broker_addrs.values()))

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        """GET_CONSUMER_LIST_BY_GROUP on one broker of ``topic`` (``findConsumerIdList``)."""
        addr = self.find_broker_addr_by_topic(topic)
        if addr is None:
            self.update_topic_route_info_from_name_server(topic)
            addr = self.find_broker_addr_by_topic(topic)
        if addr is None:
            return None
        try:
            return self.api.get_consumer_id_list_by_group(addr, group, self.config.mq_client_api_timeout_ms)
        except RocketqError as exc:
            log.warning("get consumer id list of %s from %s failed: %s", group, addr, exc)
            return None

    # ------------------------------------------------------------------ OffsetBrokerHost
    def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        """QUERY_CONSUMER_OFFSET for one queue (BrokerError when the broker has none)."""
        return self.api.query_consumer_offset(
            addr, group, mq.topic, mq.queue_id, self.config.mq_client_api_timeout_ms, bname=mq.broker_name
        )

    def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> None:
        """UPDATE_CONSUMER_OFFSET for one queue, oneway or acknowledged."""
        if oneway:
            self.api.update_consumer_offset_oneway(
                addr, group, mq.topic, mq.queue_id, offset, bname=mq.broker_name
            )
        else:
            self.api.update_consumer_offset(
                addr,
                group,
                mq.topic,
                mq.queue_id,
                offset,
                self.config.mq_client_api_timeout_ms,
                bname=mq.broker_name,
            )

    # ------------------------------------------------------------------ RebalanceHost
    def lock_batch_mq(
        self, addr: str, group: str, mqs: Iterable[MessageQueue], timeout_ms: int
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ on one broker for this client id."""
        return self.api.lock_batch_mq(addr, group, self.client_id, mqs, timeout_ms)

    def unlock_batch_mq(
        self, addr: str, group: str, mqs: Iterable[MessageQueue], timeout_ms: int, oneway: bool
    ) -> None:
        """UNLOCK_BATCH_MQ on one broker for this client id."""
        self.api.unlock_batch_mq(addr, group, self.client_id, mqs, timeout_ms, oneway=oneway)

    def queue_datas(self, topic: str) -> list[QueueData]:
        route = self.topic_route_data(topic)
        return list(route.queue_datas) if route is not None else []

    # ================================================================== heartbeat
    def _heartbeat_round(self) -> None:
        self.clean_offline_broker()
        self.send_heartbeat_to_all_broker_with_lock()

    def clean_offline_broker(self) -> None:
        """Drop broker addresses that no topic route mentions any more (``cleanOfflineBroker``)."""
        with self._lock:
            for name in prune_offline_brokers(self._broker_addrs, self._topic_routes.values()):
                self._broker_versions.pop(name, None)

    def prepare_heartbeat_data(self) -> HeartbeatData:
        """``prepareHeartbeatData``: every producer group and every consumer with its subscriptions."""
        with self._lock:
            producers = list(self._producers)
            consumers = list(self._consumers.values())
        data = HeartbeatData(client_id=self.client_id)
        data.producer_data_set = [ProducerData(group_name=g) for g in producers]
        for consumer in consumers:
            data.consumer_data_set.append(
                ConsumerData(
                    group_name=consumer.group_name(),
                    consume_type=consumer.consume_type(),
                    message_model=consumer.message_model(),
                    consume_from_where=consumer.consume_from_where(),
                    subscription_data_set=list(consumer.subscriptions()),
                    unit_mode=self.config.unit_mode,
                )
            )
        return data

    def send_heartbeat_to_all_broker_with_lock(self) -> bool:
        """HEART_BEAT to every known broker (only masters when there is no consumer)."""
        if not self._heartbeat_lock.acquire(timeout=_LOCK_TIMEOUT_S):
            log.warning("heartbeat lock busy")
            return False
        try:
            data = self.prepare_heartbeat_data()
            if not data.producer_data_set and not data.consumer_data_set:
                return False
            producer_only = not data.consumer_data_set
            sent = False
            for name, addrs in self._broker_addr_snapshot().items():
                for bid, addr in addrs.items():
                    if producer_only and bid != MASTER_ID:
                        continue
                    try:
                        version = self.api.send_heartbeat(addr, data, self.config.mq_client_api_timeout_ms)
                    except RocketqError as exc:
                        log.warning("heartbeat to %s (%s) failed: %s", name, addr, exc)
                        continue
                    sent = True
                    with self._lock:
                        self._broker_versions.setdefault(name, {})[addr] = version
            return sent
        finally:
            self._heartbeat_lock.release()

    def broker_version(self, broker_name: str, addr: str) -> int:
        with self._lock:
            return self._broker_versions.get(broker_name, {}).get(addr, 0)

    # ================================================================== consumers
    def rebalance_immediately(self) -> None:
        """Wake the rebalance loop (``rebalanceImmediately``)."""
        rebalance = self._rebalance
        if rebalance is not None:
            rebalance.wakeup()

    def do_rebalance(self) -> None:
        with self._lock:
            consumers = list(self._consumers.values())
        for consumer in consumers:
            try:
                consumer.do_rebalance()
            except Exception:
                log.exception("rebalance of %s failed", consumer.group_name())

    def persist_all_consumer_offset(self) -> None:
        with self._lock:
            consumers = list(self._consumers.values())
        for consumer in consumers:
            try:
                consumer.persist_consumer_offset()
            except Exception:
                log.exception("persisting the offsets of %s failed", consumer.group_name())

    # ================================================================== broker -> client
    def _process_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """``ClientRemotingProcessor``: requests brokers send on our connections."""
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            log.info(
                "consumer ids of %s changed (notified by %s): rebalance now",
                request.ext("consumerGroup"),
                addr,
            )
            self.rebalance_immediately()
            return None
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            check_transaction_state(self, request, addr)
            return None
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            return receive_reply_message(self.request_future_holder, request)
        group = request.ext("consumerGroup") or request.ext("group")
        consumer = self.select_consumer(group) if group else None
        if consumer is not None:
            return consumer.process_broker_request(request, addr)
        if group is not None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
            )
        return request_not_supported(request)


class MQClientManager:
    """``MQClientManager``: hands out one :class:`MQClientInstance` per client id (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._instances: dict[str, MQClientInstance] = {}

    def get_or_create_instance(self, config: ClientConfig) -> MQClientInstance:
        """The instance for ``config.build_client_id()``, created (not started) if needed.

        The first config for a client id wins, as in Java; later ones only share it.
        """
        client_id = config.build_client_id()
        with self._lock:
            inst = self._instances.get(client_id)
            if inst is None or inst.is_shutdown:
                inst = MQClientInstance(config, client_id, manager=self)
                self._instances[client_id] = inst
            return inst

    def remove_instance(self, client_id: str, instance: MQClientInstance | None = None) -> None:
        with self._lock:
            current = self._instances.get(client_id)
            if current is not None and (instance is None or current is instance):
                del self._instances[client_id]

    def instances(self) -> list[MQClientInstance]:
        with self._lock:
            return list(self._instances.values())


#: The one documented process-wide default manager (``MQClientManager.getInstance()``).
DEFAULT_MANAGER = MQClientManager()
