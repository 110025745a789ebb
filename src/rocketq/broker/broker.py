"""The broker process: managers, store, remoting server, name-server registration.

Mirrors ``org.apache.rocketmq.broker.BrokerController`` (4.9.7) and the channel half of
``ClientHousekeepingService``.

Lifecycle and threading:

* ``__init__`` builds everything without I/O (unit tests drive processors directly).
* :meth:`BrokerController.start` (a coroutine, on the loop that will serve requests):
  the exclusive lock on ``<store>/lock`` first (``FileLockedError`` when another process
  runs a broker there: nothing of that store is read or written); with ``aclEnable`` load
  plain_acl.yml and check every request against it (``initialAcl``; the file is watched and
  reloaded), set the TLS mode (``tls.server.mode``); ``store.load()`` (recovery after an
  unclean stop) and ``store.start()``, load
  topics.json / subscriptionGroup.json / consumerOffset.json, start the transaction check
  service (masters; it resumes from the progress in consumerOffset.json), register every
  processor (client/consumer management, admin as the default, send, pull, query,
  END_TRANSACTION and the reply processor), start the delay-level service (masters),
  start the server, start the pull
  hold service, register with every name
  server (synchronously, like Java) and start the periodic tasks: registration every
  ``register_name_server_period`` (clamped to 10..60 s, first after 10 s), consumer-offset
  persistence every ``flush_consumer_offset_interval`` (first after 10 s), the inactive
  channel scan every 10 s, and a stats sample every second.
* Registrations run on one worker thread ("BrokerOuterAPI"): they never block the loop,
  and they are serialized like Java's ``synchronized registerBrokerAll``.
  :meth:`register_broker_all_async` may be called from any thread.
* :meth:`BrokerController.shutdown`: cancel the periodic tasks, stop the pull hold service,
  unregister from every name server, stop the server (so nothing changes after the final
  persist), stop the transaction check service, persist topics, groups and offsets, stop the delay-level service (it persists
  delayOffset.json), ``store.shutdown()``, stop the outer client.
* :meth:`BrokerController.update_config` (UPDATE_BROKER_CONFIG, ``Configuration.update``):
  validate, persist to ``<store>/config/broker.properties``, then swap in the new frozen
  config (the store and the managers read it from then on) and bump the configuration's
  data version; a ``brokerPermission`` change bumps the topic data version and registers
  with every name server before returning. See ``rocketq.broker.config`` for the keys.
* A closed channel is removed from the consumer and producer tables at once (consumer
  groups are notified).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable

from rocketq.acl.client_security import client_security
from rocketq.acl.plain_access_validator import broker_rule
from rocketq.acl.plain_permission_manager import PlainPermissionManager
from rocketq.acl.security import install_server_security
from rocketq.broker.broker2client import Broker2Client
from rocketq.broker.clients import ConsumerGroupEvent, ConsumerManager, ProducerManager
from rocketq.broker.config import BrokerConfig, java_key, persist_updated_keys
from rocketq.broker.config_persist_service import ConfigPersistService
from rocketq.broker.filter import ConsumerFilterManager
from rocketq.broker.locks import RebalanceLockManager
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.outer_api import BrokerOuterAPI
from rocketq.broker.processors.admin import AdminBrokerProcessor
from rocketq.broker.processors.client_manage import ClientManageProcessor
from rocketq.broker.processors.consumer_manage import ConsumerManageProcessor
from rocketq.broker.processors.end_transaction import EndTransactionProcessor
from rocketq.broker.processors.lock import LockBatchProcessor
from rocketq.broker.processors.pull import PullMessageProcessor
from rocketq.broker.processors.query import QueryMessageProcessor
from rocketq.broker.processors.reply import ReplyMessageProcessor
from rocketq.broker.processors.send import SendMessageProcessor
from rocketq.broker.schedule import ScheduleMessageService
from rocketq.broker.stats import BrokerStats
from rocketq.broker.store.message_store import MessageStore
from rocketq.broker.subscriptions import SubscriptionGroupManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.broker.transaction import (
    DefaultTransactionalMessageCheckListener,
    TransactionalMessageBridge,
    TransactionalMessageCheckService,
    TransactionalMessageService,
)
from rocketq.common.file_lock import FileLock
from rocketq.protocol.codes import PermName, RequestCode
from rocketq.protocol.message import HostAddr
from rocketq.protocol.route import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketq.remoting.server import Channel, RemotingServer

__all__ = ["BrokerController"]

log = logging.getLogger(__name__)

#: BrokerController.start: first periodic registration / offset persist after 10 s
_INITIAL_DELAY_MS = 10_000
_STATS_SAMPLE_INTERVAL_MS = 1000


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerController:
    """One broker (``BrokerController``); see the module docstring for the lifecycle."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock_ms: Callable[[], int] = _monotonic_ms,
        wall_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        self.config = config
        self._clock_ms = clock_ms
        self._wall_ms = wall_ms
        self.boot_timestamp_ms = wall_ms()
        self.store = MessageStore(config.message_store)
        root = config.store_path_root_dir
        #: StorePathConfigHelper.getLockFile: <storePathRootDir>/lock, held from start to shutdown
        self._store_lock = FileLock(os.path.join(root, "lock"), f"store {root}")
        self.stats = BrokerStats(clock_ms=clock_ms)
        self.topic_config_manager = TopicConfigManager(
            config, wall_ms=wall_ms, register_hook=lambda: self.register_broker_all_async(oneway=True)
        )
        self.subscription_group_manager = SubscriptionGroupManager(config, wall_ms=wall_ms)
        self.consumer_offset_manager = ConsumerOffsetManager(config)
        self.broker2client = Broker2Client()
        self.consumer_manager = ConsumerManager(
            self._on_consumer_ids_changed,
            clock_ms=clock_ms,
            channel_expired_timeout_ms=config.channel_expired_timeout_ms,
        )
        #: SQL92 subscriptions per topic and group, from heartbeats (ConsumerFilterManager)
        self.consumer_filter_manager = ConsumerFilterManager(wall_ms=wall_ms)
        self.producer_manager = ProducerManager(
            clock_ms=clock_ms, channel_expired_timeout_ms=config.channel_expired_timeout_ms
        )
        self.rebalance_lock_manager = RebalanceLockManager(
            lock_max_live_time_ms=config.rebalance_lock_max_live_time_ms, clock_ms=clock_ms
        )
        rpc_hook, ssl_context = client_security(
            access_key=config.access_key, secret_key=config.secret_key, tls=config.tls
        )
        self.outer_api = BrokerOuterAPI(config.namesrv_addr_list, rpc_hook=rpc_hook, ssl_context=ssl_context)
        #: plain_acl.yml and its watch, with aclEnable (created in start()).
        self.acl: PlainPermissionManager | None = None
        #: Configuration.getDataVersionJson (GET_BROKER_CONFIG's ``version``)
        self.configuration_version = DataVersion(timestamp=wall_ms(), counter=0)
        self.server = RemotingServer(
            config.listen_host, config.listen_port, name=f"broker-{config.broker_name}"
        )
        self.client_manage_processor = ClientManageProcessor(self)
        self.consumer_manage_processor = ConsumerManageProcessor(self)
        self.admin_processor = AdminBrokerProcessor(self)
        # The data-path processors (rocketq.broker.processors.send/pull/query) are created in
        # start(): they may hook into the store, which must be loaded first.
        self.send_processor: SendMessageProcessor | None = None
        self.pull_processor: PullMessageProcessor | None = None
        self.query_processor: QueryMessageProcessor | None = None
        #: Delay-level delivery (ScheduleMessageService); masters only, created in start().
        self.schedule_service: ScheduleMessageService | None = None
        #: Transactional messages (rocketq.broker.transaction): half/op store access, the
        #: END_TRANSACTION lookups and the check scan; the check thread runs on masters only.
        self.transactional_message_bridge = TransactionalMessageBridge(self)
        self.transactional_message_service = TransactionalMessageService(
            self.transactional_message_bridge,
            file_reserved_time_ms=config.message_store.file_reserved_time_hours * 3_600_000,
            wall_ms=wall_ms,
        )
        self.transactional_message_check_listener = DefaultTransactionalMessageCheckListener(self)
        self.transactional_message_check_service: TransactionalMessageCheckService | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        #: Config files written off the loop, coalesced (auto-creates from floods).
        self.config_persist_service = ConfigPersistService()
        for manager in (self.topic_config_manager, self.subscription_group_manager):
            manager.persister = self.config_persist_service.request
        #: A full registration is queued and not started yet: later requests ride on it.
        self._register_queued = False
        self._register_lock = threading.Lock()
        self._outer_started = False
        self._started = False
        self._shut_down = False

    # ------------------------------------------------------------------ identity
    @property
    def port(self) -> int:
        """The bound port (the configured one before :meth:`start`)."""
        return self.server.port

    @property
    def broker_addr(self) -> str:
        """``getBrokerAddr``: ``brokerIP1:listenPort``."""
        return f"{self.config.broker_ip1}:{self.port}"

    @property
    def store_host(self) -> HostAddr:
        """The store host written into every record (``getStoreHost``)."""
        return (self.config.broker_ip1, self.port)

    @property
    def ha_server_addr(self) -> str:
        """``getHAServerAddr``: ``brokerIP2:(listenPort + 1)``."""
        return f"{self.config.broker_ip2 or self.config.broker_ip1}:{self.port + 1}"

    def earliest_message_time(self) -> int:
        """``MessageStore.getEarliestMessageTime()``: store time of the oldest record, -1 if none."""
        try:
            min_phy = self.store.get_min_phy_offset()
            if min_phy >= self.store.get_max_phy_offset():
                return -1
            msg = self.store.look_message_by_offset(min_phy)
        except Exception:
            return -1
        return -1 if msg is None else msg.store_timestamp

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Load, listen, register and schedule; see the module docstring."""
        if self._started:
            return
        # DefaultMessageStore.start: "Lock failed, MQ already started" before touching a file,
        # so a refused second broker neither reads nor rewrites the live one's store
        self._store_lock.acquire()
        self._started = True
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="BrokerOuterAPI")
        if not self.store.load():
            raise RuntimeError(f"message store at {self.config.store_path_root_dir} failed to load")
        self.store.start()
        if self.config.broker_role != "SLAVE":
            # BrokerController.start -> startProcessorByHa: the master delivers delayed messages
            self.schedule_service = ScheduleMessageService(
                self.store, self.config.message_store.message_delay_level, self.config.config_dir
            )
            self.schedule_service.start()
        for manager in (
            self.topic_config_manager,
            self.subscription_group_manager,
            self.consumer_offset_manager,
        ):
            if not manager.load():
                raise RuntimeError(f"cannot load {manager.config_file_path()}")
        self.config_persist_service.start()
        if self.config.broker_role != "SLAVE":
            # BrokerController.start: the transaction check runs where halves are written,
            # from the progress consumerOffset.json holds (so after it was loaded)
            self.transactional_message_check_service = TransactionalMessageCheckService(
                self, self.transactional_message_service, self.transactional_message_check_listener
            )
            self.transactional_message_check_service.start()
        self._register_processors()
        self.acl = install_server_security(
            self.server,
            role=f"broker {self.config.broker_name}",
            acl_enable=self.config.acl_enable,
            acl_plain_file=self.config.acl_plain_file,
            tls=self.config.tls,
            rule=broker_rule,
        )
        self.server.add_channel_listener(self._on_channel_close)
        await self.server.start()
        self.outer_api.start()
        self._outer_started = True
        if self.pull_processor is not None:
            await self.pull_processor.start()
        await loop.run_in_executor(self._executor, self._register_broker_all, False)
        period = max(10_000, min(self.config.register_name_server_period, 60_000))
        self._schedule("register", _INITIAL_DELAY_MS, period, self._periodic_register)
        self._schedule(
            "persist-offsets",
            _INITIAL_DELAY_MS,
            self.config.flush_consumer_offset_interval,
            self._persist_offsets,
        )
        hk = self.config.client_housekeeping_interval_ms
        self._schedule("client-housekeeping", hk, hk, self._scan_channels)
        self._schedule("stats", _STATS_SAMPLE_INTERVAL_MS, _STATS_SAMPLE_INTERVAL_MS, self._sample_stats)
        log.info(
            "broker %s (%s) started at %s, name servers %s",
            self.config.broker_name,
            self.config.broker_cluster_name,
            self.broker_addr,
            self.outer_api.namesrv_addrs,
        )

    def _register_processors(self) -> None:
        server = self.server
        send = SendMessageProcessor(self)
        pull = PullMessageProcessor(self)
        query = QueryMessageProcessor(self)
        self.send_processor, self.pull_processor, self.query_processor = send, pull, query
        for code in (
            RequestCode.SEND_MESSAGE,
            RequestCode.SEND_MESSAGE_V2,
            RequestCode.SEND_BATCH_MESSAGE,
            RequestCode.CONSUMER_SEND_MSG_BACK,
        ):
            server.register_processor(code, send, immediate=send.process_now)
        server.register_processor(RequestCode.PULL_MESSAGE, pull, immediate=pull.process_now)
        server.register_processor(RequestCode.END_TRANSACTION, EndTransactionProcessor(self))
        reply = ReplyMessageProcessor(self)
        server.register_processor(RequestCode.SEND_REPLY_MESSAGE, reply)
        server.register_processor(RequestCode.SEND_REPLY_MESSAGE_V2, reply)
        server.register_processor(RequestCode.QUERY_MESSAGE, query)
        server.register_processor(RequestCode.VIEW_MESSAGE_BY_ID, query)
        lock = LockBatchProcessor(self.rebalance_lock_manager)
        server.register_processor(RequestCode.LOCK_BATCH_MQ, lock)
        server.register_processor(RequestCode.UNLOCK_BATCH_MQ, lock)
        for code in ClientManageProcessor.CODES:
            server.register_processor(code, self.client_manage_processor)
        for code in ConsumerManageProcessor.CODES:
            server.register_processor(code, self.consumer_manage_processor)
        for code in AdminBrokerProcessor.CODES:
            server.register_processor(code, self.admin_processor)
        server.register_default_processor(self.admin_processor)

    async def shutdown(self) -> None:
        """Stop serving, unregister, persist and close the store; see the module docstring."""
        if not self._started or self._shut_down:
            return
        self._shut_down = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.pull_processor is not None:
            try:
                await self.pull_processor.stop()
            except Exception:
                log.exception("pull processor did not stop cleanly")
        loop = asyncio.get_running_loop()
        executor = self._executor
        if executor is not None and self._outer_started:  # a start that failed earlier registered nothing
            try:
                await loop.run_in_executor(executor, self._unregister_broker_all)
            except Exception:
                log.exception("unregister from name servers failed")
        await self.server.stop()
        if self.transactional_message_check_service is not None:
            self.transactional_message_check_service.shutdown()  # before the final persist
        self.config_persist_service.shutdown()
        self.topic_config_manager.persist()
        self.subscription_group_manager.persist()
        self.consumer_offset_manager.persist()
        if self.schedule_service is not None:
            self.schedule_service.shutdown()  # persists delayOffset.json
        self.store.shutdown()
        if executor is not None:
            executor.shutdown(wait=True)
        self.outer_api.shutdown()
        self._store_lock.release()
        if self.acl is not None:
            self.acl.shutdown()
        log.info("broker %s shut down", self.config.broker_name)

    async def update_config(self, props: dict[str, str]) -> dict[str, str]:
        """``updateBrokerConfig``: apply ``broker.conf`` keys to the running broker.

        Returns the accepted keys (Java key -> value). Raises ``IllegalArgumentError`` (unknown
        key, bad value, a key that cannot change while running: nothing is applied) or
        ``OSError`` (the change could not be persisted: nothing is applied either).
        """
        new, accepted = self.config.with_updates(props)
        if not accepted:
            return accepted
        # Configuration.update persists; rocketq persists first, so an applied change is durable
        persist_updated_keys(self.config.store_path_root_dir, accepted)
        self.config = new
        self.store.update_config(new.message_store)
        self.topic_config_manager.update_config(new)
        self.subscription_group_manager.update_config(new)
        self.configuration_version.next_version(self._wall_ms())
        log.info("broker config updated: %s", accepted)
        if java_key("broker_permission") in accepted:
            # AdminBrokerProcessor.updateBrokerConfig: nextVersion, then registerBrokerAll at once
            self.topic_config_manager.bump_data_version()
            executor = self._executor
            if executor is not None and not self._shut_down:
                await asyncio.get_running_loop().run_in_executor(executor, self._register_broker_all, False)
        return accepted

    # ------------------------------------------------------------------ periodic tasks
    def _schedule(
        self, name: str, initial_ms: int, period_ms: int, fn: Callable[[], Awaitable[None]]
    ) -> None:
        async def runner() -> None:
            await asyncio.sleep(initial_ms / 1000.0)
            while True:
                try:
                    await fn()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("periodic task %s failed", name)
                await asyncio.sleep(period_ms / 1000.0)

        assert self._loop is not None
        self._tasks.append(self._loop.create_task(runner(), name=f"broker-{name}"))

    async def _periodic_register(self) -> None:
        if self._executor is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._register_broker_all, False)

    async def _persist_offsets(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.consumer_offset_manager.persist)

    async def _scan_channels(self) -> None:
        self.producer_manager.scan_not_active_channel()
        self.consumer_manager.scan_not_active_channel()

    async def _sample_stats(self) -> None:
        self.stats.sample()

    # ------------------------------------------------------------------ registration
    def register_broker_all_async(self, *, oneway: bool = False) -> None:
        """Schedule a full registration with every name server (thread-safe, non-blocking).

        ``oneway=True`` is what a topic auto-creation triggers (``registerBrokerAll(false,
        true, true)``: no answers awaited, as the golden capture shows).
        """
        executor = self._executor
        if executor is None or self._shut_down:
            return
        with self._register_lock:
            if self._register_queued:
                return  # the queued one has not read the topic table yet: it covers this
            self._register_queued = True
        try:
            executor.submit(self._register_queued_all, oneway)
        except RuntimeError:  # executor shut down concurrently
            log.debug("registration after shutdown ignored")

    def _register_queued_all(self, oneway: bool) -> None:
        with self._register_lock:
            self._register_queued = False
        self._register_broker_all(oneway)

    async def register_increment_broker_data(self, tc: TopicConfig) -> None:
        """``registerIncrementBrokerData``: register one topic (synchronously, with answers)."""
        executor = self._executor
        if executor is None:
            return
        await asyncio.get_running_loop().run_in_executor(executor, self._register_increment, tc)

    def _publish_table(self, table: dict[str, TopicConfig]) -> dict[str, TopicConfig]:
        perm = self.config.broker_permission
        if perm & PermName.PERM_WRITE and perm & PermName.PERM_READ:
            return table
        # BrokerController.registerBrokerAll: a read-only / write-only broker publishes every
        # topic with the broker's permission.
        return {
            name: TopicConfig(
                topic_name=tc.topic_name,
                read_queue_nums=tc.read_queue_nums,
                write_queue_nums=tc.write_queue_nums,
                perm=perm,
            )
            for name, tc in table.items()
        }

    def _register_increment(self, tc: TopicConfig) -> None:
        name = tc.topic_name or ""
        table = self._publish_table({name: tc})
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table=table, data_version=self.topic_config_manager.data_version
        )
        self._do_register(wrapper, oneway=False)

    def _register_broker_all(self, oneway: bool) -> None:
        wrapper = self.topic_config_manager.build_serialize_wrapper()
        wrapper.topic_config_table = self._publish_table(wrapper.topic_config_table)
        self._do_register(wrapper, oneway=oneway)

    def _do_register(self, wrapper: TopicConfigSerializeWrapper, *, oneway: bool) -> None:
        cfg = self.config
        results = self.outer_api.register_broker_all(
            cluster_name=cfg.broker_cluster_name,
            broker_addr=self.broker_addr,
            broker_name=cfg.broker_name,
            broker_id=cfg.broker_id,
            ha_server_addr=self.ha_server_addr,
            wrapper=wrapper,
            oneway=oneway,
            timeout_ms=cfg.register_broker_timeout_mills,
            compressed=cfg.compressed_register,
        )
        if results and results[0].kv_table is not None:
            # doRegisterBrokerAll(checkOrderConfig=true): the name server's ORDER_TOPIC_CONFIG
            self.topic_config_manager.update_order_topic_config(set(results[0].kv_table.table))

    def _unregister_broker_all(self) -> None:
        cfg = self.config
        self.outer_api.unregister_broker_all(
            cluster_name=cfg.broker_cluster_name,
            broker_addr=self.broker_addr,
            broker_name=cfg.broker_name,
            broker_id=cfg.broker_id,
        )

    # ------------------------------------------------------------------ clients
    def _on_channel_close(self, channel: Channel) -> None:
        # ClientHousekeepingService.onChannelClose
        self.producer_manager.do_channel_close_event(channel.remote_addr, channel)
        self.consumer_manager.do_channel_close_event(channel.remote_addr, channel)

    def _on_consumer_ids_changed(
        self, event: ConsumerGroupEvent, group: str, channels: list[Channel]
    ) -> None:
        # DefaultConsumerIdsChangeListener.handle (REGISTER's filter registration is done by
        # the heartbeat, which holds the subscription list)
        if event is ConsumerGroupEvent.UNREGISTER:
            self.consumer_filter_manager.unregister(group)
        if event is ConsumerGroupEvent.CHANGE and self.config.notify_consumer_ids_changed_enable:
            for channel in channels:
                self.broker2client.notify_consumer_ids_changed(channel, group)
