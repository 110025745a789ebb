"""The pull consumer: the application chooses queues and offsets itself.

Mirrors ``org.apache.rocketmq.client.consumer.DefaultMQPullConsumer`` and
``org.apache.rocketmq.client.impl.consumer.DefaultMQPullConsumerImpl`` (reference 2.4,
4.2-4.4). The pulls go through :class:`~rocketq.client.impl.pull_api_wrapper.PullAPIWrapper`,
the offset and time lookups through :class:`~rocketq.client.impl.mq_admin_impl.MQAdminImpl`
(``rocketq.client.impl``); this module holds only the pull consumer.

Invariants:

* A pull sends PULL_MESSAGE with sysFlag SUBSCRIPTION (+ SUSPEND when blocking), the
  expression in ``subscription`` and ``subVersion`` 0, to the broker id the previous answer
  for that queue suggested (``suggestWhichBrokerId``, master by default); COMMIT_OFFSET is
  never set on a pull that lands on a slave.
* Results map 0/19/20/21 to FOUND/NO_NEW_MSG/NO_MATCHED_MSG/OFFSET_ILLEGAL; FOUND records are
  decoded (bodies decompressed) and re-filtered by tag on the client (the broker compares
  only hash codes); each message gets MIN_OFFSET/MAX_OFFSET properties and its broker name.
* ``update_consume_offset`` only changes memory; offsets are persisted every
  ``persist_consumer_offset_interval_ms`` and at shutdown: to the broker (CLUSTERING, oneway
  UPDATE_CONSUMER_OFFSET) or to a local file (BROADCASTING).
* Every pulled topic is subscribed automatically with ``*`` so heartbeats announce the group
  (``subscriptionAutomatically``); ``register_topics`` / a MessageQueueListener make the
  rebalance allocate queues among the group (used by the schedule service).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

from rocketq.client.api_results import PullResult, PullStatus
from rocketq.client.config import ClientConfig, PullConsumerConfig, with_overrides
from rocketq.client.consumer.allocate import AllocateMessageQueueStrategy
from rocketq.client.consumer.consumer_start import register_and_start, start_consumer_instance
from rocketq.client.consumer.offset_store import OffsetStore, ReadOffsetType
from rocketq.client.consumer.rebalance import MessageQueueListener, RebalancePullImpl
from rocketq.client.impl.mq_admin_impl import MQAdminImpl
from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper, build_pull_sys_flag
from rocketq.client.impl.topic_route import topic_route_to_subscribe_info
from rocketq.client.instance import DEFAULT_MANAGER, MQClientInstance, MQClientManager, request_not_supported
from rocketq.common.service_state import ServiceLifecycle, ServiceState
from rocketq.errors import ClientError, IllegalArgumentError
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.remoting.helper import host_addr_to_string

__all__ = ["PullConsumer", "PullResult", "PullStatus"]

log = logging.getLogger(__name__)


#: The arguments of ``PullAPIWrapper.pull_kernel_impl[_async]``: mq, subscription expression and
#: type, sub version, offset, max nums, sys flag, commit offset, suspend time, timeout (ms).
_KernelArgs = tuple[MessageQueue, "str | None", "str | None", int, int, int, int, int, int, int]


class PullConsumer(ServiceLifecycle):
    """A pull consumer (``DefaultMQPullConsumer``). Thread-safe; use as a context manager.

    ``consumer_group``/``namesrv_addr``/``message_model`` override the config fields.
    ``allocate_strategy`` is used when topics are rebalanced (register_topics or a
    MessageQueueListener); default AllocateMessageQueueAveragely.
    """

    def __init__(
        self,
        consumer_group: str | None = None,
        *,
        namesrv_addr: str | None = None,
        message_model: MessageModel | None = None,
        config: PullConsumerConfig | None = None,
        client_config: ClientConfig | None = None,
        manager: MQClientManager | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
    ) -> None:
        cfg = with_overrides(
            config or PullConsumerConfig(), consumer_group=consumer_group, message_model=message_model
        )
        ccfg = with_overrides(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self.config = cfg
        self.client_config = ccfg
        self._manager = manager or DEFAULT_MANAGER
        self._strategy = allocate_strategy
        self._listener: MessageQueueListener | None = None
        self._register_topics: set[str] = set(cfg.register_topics)
        self._state = ServiceState.CREATE_JUST
        self._state_lock = threading.Lock()
        self._instance: MQClientInstance | None = None
        self._wrapper: PullAPIWrapper | None = None
        self._admin: MQAdminImpl | None = None
        self._offset_store: OffsetStore | None = None
        self._rebalance: RebalancePullImpl | None = None

    # ================================================================== lifecycle
    @property
    def consumer_group(self) -> str:
        return self.config.consumer_group

    @property
    def state(self) -> ServiceState:
        return self._state

    @property
    def client_id(self) -> str:
        return self._running()[0].client_id

    @property
    def offset_store(self) -> OffsetStore:
        store = self._offset_store
        if store is None:
            raise ClientError("the consumer has not been started")
        return store

    def register_message_queue_listener(self, topic: str, listener: MessageQueueListener | None) -> None:
        """Rebalance ``topic`` among the group and tell ``listener`` of every change."""
        self._register_topics.add(topic)
        if listener is not None:
            self._listener = listener
        rebalance = self._rebalance
        if rebalance is not None:
            rebalance.listener = self._listener
            self._subscribe_topic(topic)
            instance = self._instance
            if instance is not None and self._state is ServiceState.RUNNING:
                self._refresh_subscribe_info(topic)
                instance.send_heartbeat_to_all_broker_with_lock()
                instance.rebalance_immediately()

    def start(self) -> None:
        with self._state_lock:
            self._state.check_startable("consumer")
            self._state = ServiceState.START_FAILED
            cfg = self.config
            self.client_config, instance, store = start_consumer_instance(
                self._manager, self.client_config, cfg.consumer_group, cfg.message_model, cfg.offset_store_dir
            )
            self._offset_store = store
            self._wrapper = PullAPIWrapper(instance, cfg.consumer_group)
            self._admin = instance.mq_admin_impl
            self._rebalance = RebalancePullImpl(
                instance,
                cfg.consumer_group,
                cfg.message_model,
                store,
                self._strategy,
                listener=self._listener,
            )
            for topic in self._register_topics:
                self._rebalance.add_subscription(build_subscription_data(topic, "*", sub_version=0))
            register_and_start(instance, cfg.consumer_group, self)
            self._instance = instance
            self._state = ServiceState.RUNNING
        if self._register_topics:
            for topic in self._register_topics:
                self._refresh_subscribe_info(topic)
            instance.send_heartbeat_to_all_broker_with_lock()
            instance.rebalance_immediately()

    def shutdown(self) -> None:
        """Persist offsets, UNREGISTER_CLIENT, and stop the instance if this was its last user."""
        with self._state_lock:
            was_running = self._state is ServiceState.RUNNING
            self._state = ServiceState.SHUTDOWN_ALREADY
            if not was_running:
                return
            instance = self._instance
        try:
            self.persist_consumer_offset()
        finally:
            if self._rebalance is not None:
                self._rebalance.destroy()
            if instance is not None:
                instance.unregister_consumer(self.config.consumer_group)
                instance.shutdown()

    def _running(
        self,
    ) -> tuple[MQClientInstance, PullAPIWrapper, MQAdminImpl, OffsetStore, RebalancePullImpl]:
        inst, wrapper, admin, store, reb = (
            self._instance,
            self._wrapper,
            self._admin,
            self._offset_store,
            self._rebalance,
        )
        if (
            self._state is not ServiceState.RUNNING
            or inst is None
            or wrapper is None
            or admin is None
            or store is None
            or reb is None
        ):
            raise ClientError(f"The consumer service state not OK, {self._state.name}")
        return inst, wrapper, admin, store, reb

    # ================================================================== MQConsumerInner
    def group_name(self) -> str:
        return self.config.consumer_group

    def message_model(self) -> MessageModel:
        return self.config.message_model

    def consume_type(self) -> ConsumeType:
        return ConsumeType.CONSUME_ACTIVELY

    def consume_from_where(self) -> ConsumeFromWhere:
        return ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET

    def subscriptions(self) -> list[SubscriptionData]:
        reb = self._rebalance
        return reb.subscriptions() if reb is not None else []

    def do_rebalance(self) -> None:
        reb = self._rebalance
        if reb is not None and self._state is ServiceState.RUNNING:
            reb.do_rebalance(False)

    def persist_consumer_offset(self) -> None:
        """Persist every offset this consumer knows (owned queues and hand-updated ones)."""
        store, reb = self._offset_store, self._rebalance
        if store is None or reb is None:
            return
        store.persist_all(reb.owned_queues() | set(store.clone_offset_table()))

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None:
        reb = self._rebalance
        if reb is not None:
            reb.set_subscribe_info(topic, info)

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        reb = self._rebalance
        return reb is not None and reb.is_subscribe_info_missing(topic)

    def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """A pull consumer serves no broker request (Java's processor answers "not supported")."""
        return request_not_supported(request)

    # ================================================================== subscriptions
    def _subscribe_topic(self, topic: str) -> None:
        reb = self._rebalance
        if reb is not None:
            # subscriptionAutomatically: "*" with subVersion 0, as the 4.9.7 pull consumer sends
            reb.add_subscription(build_subscription_data(topic, "*", sub_version=0), replace=False)

    def _refresh_subscribe_info(self, topic: str) -> None:
        inst = self._instance
        if inst is None:
            return
        inst.update_topic_route_info_from_name_server(topic)
        route = inst.topic_route_data(topic)
        if route is not None:
            self.update_topic_subscribe_info(topic, topic_route_to_subscribe_info(topic, route))

    # ================================================================== pulls
    def fetch_subscribe_message_queues(self, topic: str) -> set[MessageQueue]:
        """Every readable queue of ``topic`` (from the name server)."""
        _, _, admin, _, _ = self._running()
        return admin.fetch_subscribe_message_queues(topic)

    def fetch_message_queues_in_balance(self, topic: str) -> set[MessageQueue]:
        """The queues the rebalance currently assigns to this client."""
        reb = self._running()[4]
        return reb.owned_queues(topic)

    def _prepare_pull(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        offset: int,
        max_nums: int,
        block: bool,
        timeout_ms: int | None,
        expression_type: str,
    ) -> tuple[MQClientInstance, PullAPIWrapper, SubscriptionData, _KernelArgs]:
        """Validate and subscribe the topic; the arguments of one PULL_MESSAGE."""
        inst, wrapper, _, _, _ = self._running()
        if not isinstance(mq, MessageQueue):
            raise IllegalArgumentError("mq is null")
        if offset < 0:
            raise IllegalArgumentError("offset < 0")
        if max_nums <= 0:
            raise IllegalArgumentError("maxNums <= 0")
        self._subscribe_topic(mq.topic)
        sd = build_subscription_data(mq.topic, sub_expression, sub_version=0, expression_type=expression_type)
        cfg = self.config
        timeout = (
            cfg.consumer_timeout_millis_when_suspend_ms
            if block
            else (timeout_ms or cfg.consumer_pull_timeout_ms)
        )
        sys_flag = build_pull_sys_flag(commit_offset=False, suspend=block, subscription=True)
        args = (mq, sd.sub_string, sd.expression_type, 0, offset, max_nums, sys_flag, 0)
        return inst, wrapper, sd, (*args, cfg.broker_suspend_max_time_ms, timeout)

    def _pull_sync(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        offset: int,
        max_nums: int,
        block: bool,
        timeout_ms: int | None,
        expression_type: str,
    ) -> PullResult:
        _, wrapper, sd, args = self._prepare_pull(
            mq, sub_expression, offset, max_nums, block, timeout_ms, expression_type
        )
        return wrapper.process_pull_result(mq, wrapper.pull_kernel_impl(*args), sd)

    def pull(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        offset: int,
        max_nums: int,
        *,
        timeout_ms: int | None = None,
        expression_type: str = "TAG",
    ) -> PullResult:
        """Pull up to ``max_nums`` messages from ``offset``; returns at once if there is none."""
        return self._pull_sync(mq, sub_expression, offset, max_nums, False, timeout_ms, expression_type)

    def pull_block_if_not_found(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        offset: int,
        max_nums: int,
        *,
        expression_type: str = "TAG",
    ) -> PullResult:
        """Like :meth:`pull`, but the broker holds the request (long polling, up to
        ``broker_suspend_max_time_ms``) until a message arrives."""
        return self._pull_sync(mq, sub_expression, offset, max_nums, True, None, expression_type)

    def pull_async(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        offset: int,
        max_nums: int,
        *,
        block: bool = False,
        timeout_ms: int | None = None,
        callback: Callable[[concurrent.futures.Future[PullResult]], object] | None = None,
        expression_type: str = "TAG",
    ) -> concurrent.futures.Future[PullResult]:
        """Pull without blocking the caller; records are decoded on the client's callback pool."""
        inst, wrapper, sd, args = self._prepare_pull(
            mq, sub_expression, offset, max_nums, block, timeout_ms, expression_type
        )
        raw = wrapper.pull_kernel_impl_async(*args)
        out: concurrent.futures.Future[PullResult] = concurrent.futures.Future()
        if callback is not None:
            out.add_done_callback(callback)

        def finish(f: concurrent.futures.Future[PullResult]) -> None:
            exc = f.exception()
            if exc is not None:
                out.set_exception(exc)
                return
            try:
                out.set_result(wrapper.process_pull_result(mq, f.result(), sd))
            except BaseException as err:
                out.set_exception(err)

        # decoding is CPU work: keep it off the I/O thread
        raw.add_done_callback(lambda f: inst.run_on_callback_pool(lambda: finish(f)))
        return out

    # ================================================================== offsets
    def fetch_consume_offset(self, mq: MessageQueue, from_store: bool = False) -> int:
        """The group's offset of ``mq``: memory first, or the store (broker/file); -1 if none."""
        store = self._running()[3]
        read = ReadOffsetType.READ_FROM_STORE if from_store else ReadOffsetType.MEMORY_FIRST_THEN_STORE
        return store.read_offset(mq, read)

    def update_consume_offset(self, mq: MessageQueue, offset: int) -> None:
        """Set the group's next offset of ``mq`` in memory (persisted periodically and at shutdown)."""
        if offset < 0:
            raise IllegalArgumentError("offset < 0")
        self._running()[3].update_offset(mq, offset, False)

    def min_offset(self, mq: MessageQueue) -> int:
        return self._running()[2].min_offset(mq)

    def max_offset(self, mq: MessageQueue) -> int:
        return self._running()[2].max_offset(mq)

    def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        return self._running()[2].earliest_msg_store_time(mq)

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the message stored nearest to ``timestamp_ms`` (epoch ms)."""
        return self._running()[2].search_offset(mq, timestamp_ms)

    def view_message(self, offset_msg_id: str) -> MessageExt:
        return self._running()[2].view_message(offset_msg_id)

    def send_message_back(
        self,
        msg: MessageExt,
        delay_level: int,
        broker_name: str | None = None,
        max_reconsume_times: int | None = None,
    ) -> None:
        """CONSUMER_SEND_MSG_BACK: hand a message back for a delayed redelivery via the retry topic."""
        inst = self._running()[0]
        name = broker_name or msg.broker_name
        addr = inst.find_broker_address_in_publish(name) if name else None
        if addr is None:
            addr = host_addr_to_string(msg.store_host)
        inst.api.consumer_send_message_back(
            addr,
            msg,
            self.config.consumer_group,
            delay_level,
            5000,
            self.config.max_reconsume_times if max_reconsume_times is None else max_reconsume_times,
            bname=name or None,
        )
