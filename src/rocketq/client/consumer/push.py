"""The push consumer: RocketMQ's consumption pipeline, faithfully.

Mirrors ``org.apache.rocketmq.client.consumer.DefaultMQPushConsumer`` and
``org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl`` (reference 5.4,
6.4, 7.2, 10.2). The pipeline:

    rebalance (RebalancePushImpl)  -> PullRequest per owned queue
    PullMessageService (1 thread)  -> flow control, then an async PULL_MESSAGE (long polling)
    pull callback                  -> ProcessQueue.put_messages, submit to the consume service,
                                      re-queue the PullRequest with the next offset
    consume service (thread pool)  -> listener, send-back of failures, ProcessQueue.remove_messages
    offset store                   -> the smallest unconsumed offset, persisted every 5 s

Where the pull callback runs (Java: ``NettyRemotingClient``'s callback executor, a pool
that is neither the I/O thread nor the consume pool). With a concurrent listener and a
consume thread free at that moment, it runs on that consume thread, which then does what
the two hand-offs after it would do, without them: it runs ``pullMessage`` for the next
pull itself (flow control first, as on the pull thread) instead of queueing the request on
the PullMessageService, queues the batches after the first on the consume pool, and runs
the first batch's ConsumeRequest itself, after the next pull has left. When the answer
shows the queue caught up (the next pull would only be held by the broker) the next pull
goes through the pull thread instead, so the batch runs at once (its latency) and the
pull never waits for the listener, as in Java. When every consume thread is busy
(or the listener is orderly) the callback runs on the PullMessageService thread as before,
so a stuck listener never stops the pulls that fill the cache up to its flow-control limits.
Either way it is one ConsumeRequest's work with the same meaning (hooks, consume timeout
stamp, result processing, the min-offset commit); only the thread differs.

Invariants:

* Flow control before every pull: more than ``pull_threshold_for_queue`` cached messages,
  more than ``pull_threshold_size_for_queue_mib`` cached MiB, or (concurrent mode) an offset
  span over ``consume_concurrently_max_span`` re-queues the request after 50 ms; a
  suspended consumer re-queues after 1 s; an error after ``pull_time_delay_mills_when_exception``
  (20 ms for broker FLOW_CONTROL).
* Pull results are processed on a consume thread or the PullMessageService thread, never
  on the I/O thread; a PullRequest is in exactly one place at a time (whichever thread
  handles its answer hands it to the next pull, directly or through the pull thread).
* The committed offset is never past an unconsumed message (ProcessQueue rule), so a crash
  re-delivers and never loses.
* A subscribed topic with no route yet is looked up again on a short backoff (1 s doubling
  to 8 s, :class:`~rocketq.client.consumer.route_backoff.RouteBackoff`) until it exists,
  then rebalanced at once (rocketq only).
* ``shutdown()`` stops pulling, waits (bounded) for running listeners, persists offsets,
  unlocks orderly queues, sends UNREGISTER_CLIENT and leaves no thread behind.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Final

from rocketq.client.api_results import PullResult, PullStatus
from rocketq.client.config import ClientConfig, PushConsumerConfig, validate_topic, with_overrides
from rocketq.client.consumer.allocate import AllocateMessageQueueStrategy
from rocketq.client.consumer.consume_concurrently import ConsumeMessageConcurrentlyService
from rocketq.client.consumer.consume_orderly import ConsumeMessageOrderlyService
from rocketq.client.consumer.consumer_start import register_and_start, start_consumer_instance
from rocketq.client.consumer.listener import (
    ConsumeMessageHook,
    MessageListenerConcurrently,
    MessageListenerOrderly,
)
from rocketq.client.consumer.offset_store import (
    OffsetStore,
    ReadOffsetType,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_message_service import PullMessageService, PullRequest
from rocketq.client.consumer.rebalance_push import RebalancePushImpl
from rocketq.client.consumer.retry import (
    SEND_BACK_TIMEOUT_MS,
    concurrent_max_reconsume_times,
    retry_message,
)
from rocketq.client.consumer.route_backoff import RouteBackoff
from rocketq.client.consumer.stats import ConsumerStatsManager
from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper, build_pull_sys_flag
from rocketq.client.instance import DEFAULT_MANAGER, MQClientInstance, MQClientManager, request_not_supported
from rocketq.client.message_selector import MessageSelector, build_subscription, check_client_in_broker
from rocketq.client.metrics import safely
from rocketq.client.producer import Producer
from rocketq.client.trace.async_trace_dispatcher import AsyncTraceDispatcher
from rocketq.client.trace.hooks import ConsumeMessageTraceHookImpl
from rocketq.common.log_limiter import LogLimiter
from rocketq.common.scheduler import ScheduledExecutor
from rocketq.common.service_state import ServiceLifecycle, ServiceState
from rocketq.errors import BrokerError, ClientError
from rocketq.protocol.bodies import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    GetConsumerStatusBody,
    ResetOffsetBody,
)
from rocketq.protocol.codes import CURRENT_VERSION, RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.message import MessageConst, MessageExt, decode_record
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import (
    CLIENT_INNER_PRODUCER_GROUP,
    DEFAULT_CONSUMER_GROUP,
    RETRY_GROUP_TOPIC_PREFIX,
    retry_topic,
)
from rocketq.remoting.client import run_allowing_hand_off
from rocketq.remoting.connection import AsyncCallback
from rocketq.remoting.helper import host_addr_to_string

__all__ = ["PushConsumer", "PushConsumerConfig", "queue_thresholds"]

log = logging.getLogger(__name__)
#: Repeated pull failures (a broker restarting fails every queue's pull every second): one
#: line per broker per 10 s, with the count of the lines left out.
_log_limiter = LogLimiter(log)

#: DefaultMQPushConsumerImpl constants
PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL = 50
PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL = 20
PULL_TIME_DELAY_MILLS_WHEN_SUSPEND = 1000
BROKER_SUSPEND_MAX_TIME_MILLIS = 15_000
CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND = 30_000
#: OFFSET_ILLEGAL: the corrected offset is stored and the queue rebuilt 10 s later
_OFFSET_MOVED_REBUILD_DELAY_MS = 10_000
#: ``consume_on_io_thread``: a batch run on the I/O thread that waited (its time less its
#: thread's CPU time: sleeps, I/O, locks) longer than this, or one still running this long
#: after it began when the next answer arrives, sends the consumer's batches to its consume
#: threads for a pause: from the first to the second, four times longer each time the batch
#: tried after a pause waits too (each try of a listener that blocks costs the process's I/O
#: one watchdog stall, so few tries: 0.1, 0.4, 1.6, 6.4, 25.6 s, then every minute)
_INLINE_WAITED_S: Final = 0.001
_INLINE_OVERDUE_S: Final = 0.01
_INLINE_PAUSE_MIN_S: Final = 0.1
_INLINE_PAUSE_MAX_S: Final = 60.0
_INLINE_PAUSE_GROWTH: Final = 4.0
_MIB = 1024 * 1024


def queue_thresholds(cfg: PushConsumerConfig, owned: int, current: tuple[int, int]) -> tuple[int, int]:
    """``messageQueueChanged``: the per-queue (count, MiB) flow-control limits once a topic's owned
    queue count changed; ``pull_threshold_for_topic`` / ``..._size_for_topic_mib`` (when not -1)
    are split evenly over the owned queues, at least 1 each. Shared with the asyncio consumer."""
    count, mib = current
    if owned:
        if cfg.pull_threshold_for_topic != -1:
            count = max(1, cfg.pull_threshold_for_topic // owned)
        if cfg.pull_threshold_size_for_topic_mib != -1:
            mib = max(1, cfg.pull_threshold_size_for_topic_mib // owned)
    return count, mib


class PushConsumer(ServiceLifecycle):
    """``DefaultMQPushConsumer``: subscribe, register a listener, start.

    >>> consumer = PushConsumer("my-group", namesrv_addr="127.0.0.1:9876")  # doctest: +SKIP
    >>> consumer.subscribe("TopicTest", "TagA || TagB")                    # doctest: +SKIP
    >>> consumer.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    >>> consumer.start()                                                    # doctest: +SKIP
    """

    def __init__(
        self,
        consumer_group: str | None = None,
        *,
        namesrv_addr: str | None = None,
        config: PushConsumerConfig | None = None,
        client_config: ClientConfig | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        manager: MQClientManager | None = None,
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
    ) -> None:
        cfg = with_overrides(
            config or PushConsumerConfig(consumer_group=consumer_group or DEFAULT_CONSUMER_GROUP),
            consumer_group=consumer_group,
        )
        ccfg = with_overrides(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self.config = cfg
        self.client_config = ccfg
        self._strategy = allocate_strategy
        self._manager = manager or DEFAULT_MANAGER
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._listener: MessageListenerConcurrently | None = None
        self._orderly_listener: MessageListenerOrderly | None = None
        self.hooks: list[ConsumeMessageHook] = []
        #: message trace (``enableMsgTrace``/``customizedTraceTopic``): None when off
        self.trace_dispatcher: AsyncTraceDispatcher | None = None
        if enable_msg_trace:
            self.trace_dispatcher = AsyncTraceDispatcher(cfg.consumer_group, "CONSUME", custom_trace_topic)
            self.hooks.append(ConsumeMessageTraceHookImpl(self.trace_dispatcher))
        self.stats = ConsumerStatsManager()
        self._state = ServiceState.CREATE_JUST
        self._state_lock = threading.Lock()
        self._paused = False
        self._instance: MQClientInstance | None = None
        self._rebalance: RebalancePushImpl | None = None
        self._wrapper: PullAPIWrapper | None = None
        self._offset_store: OffsetStore | None = None
        self._pull_service: PullMessageService | None = None
        self._scheduler: ScheduledExecutor | None = None
        #: a topic subscribed before it exists: its route is looked up again on a backoff
        self._route_backoff = RouteBackoff(
            schedule=self.schedule,
            is_missing=self._subscribe_info_missing,
            refresh=self._refresh_subscribe_info,
            instance=lambda: self._instance,
            running=lambda: self._state is ServiceState.RUNNING,
            group=self.config.consumer_group,
        )
        self._consume_service: ConsumeMessageConcurrentlyService | ConsumeMessageOrderlyService | None = None
        self._inner_producer: Producer | None = None
        self._inner_producer_lock = threading.Lock()
        self._start_timestamp = 0
        self._queue_flow_control_times = 0
        #: consume_on_io_thread: batches go to the consume threads until then (monotonic),
        #: the pause that set it, how many pauses there were (:meth:`_inline_waited`)
        self._inline_paused_until = 0.0
        self._inline_pause_s = 0.0
        self._inline_since = 0.0  # when the batch running there began (0: none)
        self._inline_pauses = 0
        self._pull_threshold_for_queue = cfg.pull_threshold_for_queue
        self._pull_threshold_size_for_queue_mib = cfg.pull_threshold_size_for_queue_mib

    # ================================================================== configuration
    @property
    def consumer_group(self) -> str:
        return self.config.consumer_group

    def message_model(self) -> MessageModel:
        return self.config.message_model

    @property
    def consume_orderly(self) -> bool:
        return self._orderly_listener is not None

    def consume_from_where(self) -> ConsumeFromWhere:
        return self.config.consume_from_where

    @property
    def consume_timestamp(self) -> str | None:
        return self.config.consume_timestamp

    @property
    def suspend_current_queue_time_millis(self) -> int:
        return self.config.suspend_current_queue_time_millis

    @property
    def max_reconsume_times(self) -> int:
        return self.config.max_reconsume_times

    @property
    def lock_max_live_time_ms(self) -> int:
        return self.config.lock_max_live_time_ms

    @property
    def state(self) -> ServiceState:
        return self._state

    @property
    def client_id(self) -> str:
        instance = self._instance
        return instance.client_id if instance is not None else ""

    @property
    def orderly_dlq_count(self) -> int:
        """Orderly only: messages sent to the DLQ after max reconsume times (each an order break)."""
        service = self._consume_service
        return service.dlq_count if isinstance(service, ConsumeMessageOrderlyService) else 0

    def assigned_queues(self, topic: str | None = None) -> set[MessageQueue]:
        """The queues this consumer owns after its last rebalance (all topics, or one)."""
        reb = self._rebalance
        return reb.owned_queues(topic) if reb is not None else set()

    def subscribe(self, topic: str, expression: str | MessageSelector | None = "*") -> None:
        """Subscribe ``topic`` with a tag expression (``"*"``, ``"TagA || TagB"``) or a
        :class:`MessageSelector` (``MessageSelector.by_sql("a > 1")``: filtered on the
        broker, which needs ``enablePropertyFilter``).

        ``"TagA | TagB"`` or ``"TagA && TagB"`` raise ``IllegalArgumentError`` (``||`` is the
        only operator); a tag with a space or ``,`` is logged as a likely mistake
        (:func:`~rocketq.protocol.heartbeat.check_tag_expression`).
        """
        validate_topic(topic)
        sd = build_subscription(topic, expression)
        self._subscriptions[topic] = sd
        reb = self._rebalance
        if reb is not None:
            reb.add_subscription(sd)
            self._refresh_subscribe_info(topic)
            self._route_backoff.watch(topic)
            instance = self._instance
            if instance is not None:
                instance.send_heartbeat_to_all_broker_with_lock()

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        reb = self._rebalance
        if reb is not None:
            reb.remove_subscription(topic, forget_queues=False)

    def register_message_listener(self, listener: MessageListenerConcurrently) -> None:
        """A concurrent listener: ``fn(msgs, context) -> ConsumeConcurrentlyStatus``."""
        self._listener = listener
        self._orderly_listener = None

    def register_message_listener_orderly(self, listener: MessageListenerOrderly) -> None:
        """An orderly listener: ``fn(msgs, context) -> ConsumeOrderlyStatus``."""
        self._orderly_listener = listener
        self._listener = None

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        self.hooks.append(hook)

    # ================================================================== lifecycle
    def start(self) -> None:
        with self._state_lock:
            self._state.check_startable("PushConsumer")
            if self._listener is None and self._orderly_listener is None:
                raise ClientError("messageListener is null: register a listener before start()")
            if not self._subscriptions:
                raise ClientError("no subscription: call subscribe() before start()")
            self._state = ServiceState.START_FAILED
            cfg = self.config
            self.client_config, instance, store = start_consumer_instance(
                self._manager, self.client_config, cfg.consumer_group, cfg.message_model, cfg.offset_store_dir
            )
            self._offset_store = store
            self._wrapper = PullAPIWrapper(instance, cfg.consumer_group)
            reb = RebalancePushImpl(
                instance,
                cfg.consumer_group,
                cfg.message_model,
                store,
                instance.mq_admin_impl,
                self,
                self._strategy,
            )
            for sd in self._subscriptions.values():
                reb.add_subscription(sd)
            if cfg.message_model is MessageModel.CLUSTERING:
                reb.add_subscription(build_subscription_data(retry_topic(cfg.consumer_group), "*"))
            self._rebalance = reb
            self._scheduler = ScheduledExecutor(f"ConsumeScheduled-{cfg.consumer_group}")
            self._pull_service = PullMessageService(
                self._pull_message, name=f"PullMessageService-{cfg.consumer_group}"
            )
            if self._orderly_listener is not None:
                self._consume_service = ConsumeMessageOrderlyService(
                    self,
                    self._orderly_listener,
                    consume_thread_max=cfg.consume_thread_max,
                    consume_message_batch_max_size=cfg.consume_message_batch_max_size,
                    consume_timeout_ms=cfg.consume_timeout_minutes * 60_000,
                    lock_interval_ms=cfg.lock_interval_ms,
                )
            else:
                assert self._listener is not None
                self._consume_service = ConsumeMessageConcurrentlyService(
                    self,
                    self._listener,
                    consume_thread_max=cfg.consume_thread_max,
                    consume_message_batch_max_size=cfg.consume_message_batch_max_size,
                    consume_timeout_ms=cfg.consume_timeout_minutes * 60_000,
                )
            metrics = self.client_config.metrics
            if metrics is not None:
                self.hooks.append(metrics.consume_hook(cfg.consumer_group))
                reb.metrics = metrics
                metrics.watch_cache(cfg.consumer_group, instance.client_id, self._cached_by_topic)
            try:
                register_and_start(instance, cfg.consumer_group, self)
            except BaseException:
                self._consume_service.shutdown()
                raise
            self._scheduler.start()
            self._pull_service.start()
            self._consume_service.start()
            self._instance = instance
            self._start_timestamp = int(time.time() * 1000)
            self._state = ServiceState.RUNNING
        for topic in [*self._subscriptions, retry_topic(cfg.consumer_group)]:
            self._refresh_subscribe_info(topic)
        try:
            check_client_in_broker(instance, cfg.consumer_group, self._subscriptions.values())
        except ClientError:
            self.shutdown()
            raise
        if self.trace_dispatcher is not None:
            try:
                self.trace_dispatcher.start(self.client_config)
            except Exception:
                log.exception("message trace of %s could not start", cfg.consumer_group)
        for topic in self._subscriptions:
            self._route_backoff.watch(topic)
        instance.send_heartbeat_to_all_broker_with_lock()
        instance.rebalance_immediately()
        if cfg.message_model is MessageModel.CLUSTERING:
            # The first heartbeat makes the broker create %RETRY%<group>; Java only sees it at
            # the next 20 s rebalance (golden caveat 10). Look again shortly instead.
            for delay_ms in (500, 2000, 5000):
                self.schedule(self._pick_up_retry_topic, delay_ms)

    def _subscribe_info_missing(self, topic: str) -> bool:
        reb = self._rebalance
        return reb is not None and reb.is_subscribe_info_missing(topic)

    def _pick_up_retry_topic(self) -> None:
        reb, instance = self._rebalance, self._instance
        retry = retry_topic(self.config.consumer_group)
        if reb is None or instance is None or self._state is not ServiceState.RUNNING:
            return
        if reb.is_subscribe_info_missing(retry):
            self._refresh_subscribe_info(retry)
            if not reb.is_subscribe_info_missing(retry):
                instance.rebalance_immediately()

    def shutdown(self, await_termination_ms: int | None = None) -> None:
        """Stop pulling, let running listeners finish (bounded), persist, unlock, unregister."""
        with self._state_lock:
            was_running = self._state is ServiceState.RUNNING
            self._state = ServiceState.SHUTDOWN_ALREADY
            if not was_running:
                return
        wait_ms = (
            self.config.await_termination_millis_when_shutdown
            if await_termination_ms is None
            else await_termination_ms
        )
        instance, reb = self._instance, self._rebalance
        if self._pull_service is not None:
            self._pull_service.shutdown()
        if self._consume_service is not None:
            self._consume_service.shutdown(wait_ms)
        try:
            self.persist_consumer_offset()
            if reb is not None and self.consume_orderly and self.message_model() is MessageModel.CLUSTERING:
                reb.unlock_all(False)
        finally:
            if reb is not None:
                reb.destroy()
            if self._scheduler is not None:
                self._scheduler.shutdown()
            producer = self._inner_producer
            if producer is not None:
                producer.shutdown()
            if instance is not None:
                metrics = self.client_config.metrics
                if metrics is not None:
                    metrics.unwatch_cache(self.config.consumer_group, instance.client_id)
                instance.unregister_consumer(self.config.consumer_group)
                instance.shutdown()
            if self.trace_dispatcher is not None:
                self.trace_dispatcher.shutdown()

    def suspend(self) -> None:
        """Pause pulling (``suspend``): pulls are re-tried every second until :meth:`resume`."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        instance = self._instance
        if instance is not None:
            instance.rebalance_immediately()

    # ================================================================== MQConsumerInner
    def group_name(self) -> str:
        return self.config.consumer_group

    def consume_type(self) -> ConsumeType:
        return ConsumeType.CONSUME_PASSIVELY

    def subscriptions(self) -> list[SubscriptionData]:
        reb = self._rebalance
        return reb.subscriptions() if reb is not None else list(self._subscriptions.values())

    def do_rebalance(self) -> None:
        reb = self._rebalance
        if reb is not None and self._state is ServiceState.RUNNING and not self._paused:
            reb.do_rebalance(self.consume_orderly)

    def persist_consumer_offset(self) -> None:
        store, reb = self._offset_store, self._rebalance
        if store is None or reb is None:
            return
        store.persist_all(reb.owned_queues())

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None:
        reb = self._rebalance
        if reb is not None:
            reb.set_subscribe_info(topic, info)

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        reb = self._rebalance
        return reb is not None and reb.is_subscribe_info_missing(topic)

    def _refresh_subscribe_info(self, topic: str) -> None:
        instance = self._instance
        if instance is None:
            return
        try:
            instance.update_topic_route_info_from_name_server(topic)
        except Exception as exc:  # a retry topic that does not exist yet is normal
            log.debug("route of %s not available yet: %s", topic, exc)

    # ================================================================== rebalance owner
    def dispatch(self, requests: list[PullRequest]) -> None:
        service = self._pull_service
        if service is not None:
            for request in requests:
                service.execute_pull_request_immediately(request)

    def schedule(self, task: Callable[[], None], delay_ms: int) -> None:
        scheduler = self._scheduler
        if scheduler is not None:
            scheduler.schedule(task, delay_ms)

    def on_queues_changed(self, topic: str, owned: set[MessageQueue]) -> None:
        """``messageQueueChanged``: topic-level flow-control limits per queue, heartbeat now."""
        self._pull_threshold_for_queue, self._pull_threshold_size_for_queue_mib = queue_thresholds(
            self.config, len(owned), (self._pull_threshold_for_queue, self._pull_threshold_size_for_queue_mib)
        )
        instance = self._instance
        if instance is not None:
            instance.send_heartbeat_to_all_broker_with_lock()

    # ================================================================== consume service host
    def process_queues(self) -> list[tuple[MessageQueue, ProcessQueue]]:
        reb = self._rebalance
        if reb is None:
            return []
        return reb.process_queues()

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        store = self._offset_store
        if store is not None:
            store.update_offset(mq, offset, increase_only)

    def reset_retry_and_namespace(self, msgs: Sequence[MessageExt]) -> None:
        """Messages of ``%RETRY%<group>`` are shown under their original topic."""
        group_topic = retry_topic(self.config.consumer_group)
        for msg in msgs:
            if msg.topic == group_topic:  # only then is it worth parsing the properties
                original = msg.properties.get(MessageConst.RETRY_TOPIC)
                if original:
                    msg.topic = original

    def lock_one(self, mq: MessageQueue) -> bool:
        reb = self._rebalance
        return reb.lock(mq) if reb is not None else False

    def lock_all(self) -> None:
        reb = self._rebalance
        if reb is not None:
            reb.lock_all()

    def unlock_all(self, *, oneway: bool) -> None:
        reb = self._rebalance
        if reb is not None:
            reb.unlock_all(oneway)

    def _max_reconsume_times_concurrent(self) -> int:
        return concurrent_max_reconsume_times(self.config.max_reconsume_times)

    def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> None:
        """CONSUMER_SEND_MSG_BACK; if the broker cannot be asked, re-send via the inner producer."""
        instance = self._instance
        if instance is None:
            raise ClientError("the consumer is not running")
        addr = instance.find_broker_address_in_publish(broker_name) if broker_name else None
        if addr is None:
            addr = host_addr_to_string(msg.store_host)
        try:
            instance.api.consumer_send_message_back(
                addr,
                msg,
                self.config.consumer_group,
                delay_level,
                SEND_BACK_TIMEOUT_MS,
                self._max_reconsume_times_concurrent(),
                bname=broker_name,
            )
        except Exception as exc:
            log.warning(
                "CONSUMER_SEND_MSG_BACK of %s failed (%s); re-sending via the producer", msg.msg_id, exc
            )
            self._send_via_producer(msg, msg.reconsume_times + 1, self._max_reconsume_times_concurrent())

    def send_to_retry_topic(self, msg: MessageExt, max_reconsume_times: int) -> None:
        """Orderly: over the max, hand the message to the broker, which routes it to the DLQ."""
        self._send_via_producer(msg, msg.reconsume_times, max_reconsume_times)

    def _send_via_producer(self, msg: MessageExt, reconsume_time: int, max_reconsume_times: int) -> None:
        """``sendMessageBack`` fallback: a copy to ``%RETRY%<group>`` through the inner producer."""
        self._producer().send(
            retry_message(msg, self.config.consumer_group, reconsume_time, max_reconsume_times)
        )

    def _producer(self) -> Producer:
        """The consumer's ``CLIENT_INNER_PRODUCER``, started on first use."""
        with self._inner_producer_lock:
            if self._inner_producer is None:
                producer = Producer(
                    CLIENT_INNER_PRODUCER_GROUP, client_config=self.client_config, manager=self._manager
                )
                producer.start()
                self._inner_producer = producer
            return self._inner_producer

    # ================================================================== pulling
    def _pull_message(self, pr: PullRequest) -> None:
        """``DefaultMQPushConsumerImpl.pullMessage``: flow control, then one async pull."""
        pq = pr.process_queue
        if pq.is_dropped():
            return
        pq.last_pull_timestamp = int(time.monotonic_ns() // 1_000_000)
        service = self._pull_service
        if self._state is not ServiceState.RUNNING or service is None:
            return
        exception_delay = self.client_config.pull_time_delay_mills_when_exception_ms
        if self._paused:
            service.execute_pull_request_later(pr, PULL_TIME_DELAY_MILLS_WHEN_SUSPEND)
            return
        cfg = self.config
        if pq.msg_count > self._pull_threshold_for_queue:
            self._flow_control(pr, "count", pq.msg_count)
            return
        if pq.msg_size / _MIB > self._pull_threshold_size_for_queue_mib:
            self._flow_control(pr, "size", pq.msg_size)
            return
        if not self.consume_orderly:
            if pq.max_span() > cfg.consume_concurrently_max_span:
                self._flow_control(pr, "span", pq.max_span())
                return
        elif self.message_model() is MessageModel.CLUSTERING:
            if not pq.locked:
                service.execute_pull_request_later(pr, exception_delay)
                return
            if not pr.previously_locked:
                reb = self._rebalance
                offset = reb.compute_pull_from_where(pr.message_queue) if reb is not None else -1
                if offset < 0:
                    service.execute_pull_request_later(pr, exception_delay)
                    return
                pr.previously_locked = True
                pr.next_offset = offset
        reb = self._rebalance
        wrapper = self._wrapper
        store = self._offset_store
        if reb is None or wrapper is None or store is None:
            return
        sd = reb.subscription(pr.message_queue.topic)
        if sd is None:
            service.execute_pull_request_later(pr, exception_delay)
            return
        commit_offset = 0
        commit = False
        if self.message_model() is MessageModel.CLUSTERING:
            commit_offset = store.read_offset(pr.message_queue, ReadOffsetType.READ_FROM_MEMORY)
            commit = commit_offset > 0
        sub_expression = (
            sd.sub_string if cfg.post_subscription_when_pull and not sd.class_filter_mode else None
        )
        sys_flag = build_pull_sys_flag(
            commit_offset=commit, suspend=True, subscription=sub_expression is not None
        )
        begin = time.monotonic()
        try:
            mq = pr.message_queue
            addr, flag = wrapper.pull_target(mq, sd.expression_type, sys_flag)
            # the raw answer: decoded by whichever thread handles it, not on the I/O thread;
            # a plain callback, no Future per pull (called once: answer, timeout or loss)
            wrapper.send_pull(
                addr,
                mq,
                sub_expression,
                sd.expression_type,
                reb.pull_sub_version(sd),
                pr.next_offset,
                cfg.pull_batch_size,
                flag,
                max(commit_offset, 0),
                BROKER_SUSPEND_MAX_TIME_MILLIS,
                CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND,
                self._pull_callback(pr, sd, addr, begin, service),
            )
        except Exception as exc:
            _log_limiter.warning(
                ("pullMessage", pr.message_queue.broker_name),
                "pullMessage of %s failed: %s",
                pr.message_queue,
                exc,
            )
            service.execute_pull_request_later(pr, exception_delay)

    def _cached_by_topic(self) -> list[tuple[str, int, int]]:
        """(topic, cached messages, cached bytes) of each process queue (client metrics)."""
        reb = self._rebalance
        if reb is None:
            return []
        return [(mq.topic, pq.msg_count, pq.msg_size) for mq, pq in list(reb.process_queue_table.items())]

    def _flow_control(self, pr: PullRequest, what: str, value: int) -> None:
        metrics = self.client_config.metrics
        if metrics is not None:
            safely(lambda: metrics.on_flow_control(self.consumer_group, what))
        self._queue_flow_control_times += 1
        if self._queue_flow_control_times % 1000 == 1:
            log.warning("flow control (%s=%d) on %s, pull again in 50 ms", what, value, pr.message_queue)
        service = self._pull_service
        if service is not None:
            service.execute_pull_request_later(pr, PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL)

    def _pull_callback(
        self, pr: PullRequest, sd: SubscriptionData, addr: str, begin: float, service: PullMessageService
    ) -> AsyncCallback:
        """The completion callback of one pull (runs on the I/O thread, exactly once)."""
        consume = self._consume_service
        inline = self.config.consume_on_io_thread and isinstance(consume, ConsumeMessageConcurrentlyService)

        def done(response: RemotingCommand | None, error: BaseException | None) -> None:
            if inline and self._inline_now():
                # consume_on_io_thread: this thread issues the next pull and runs the first
                # batch; a sync call of the listener, or a listener that holds the thread
                # too long, hands the I/O loop to a new thread
                run_allowing_hand_off(self._on_pull_done, pr, sd, response, error, addr, begin, True, True)
                return
            # hop off the I/O thread: onto a free consume thread (concurrent listener), which
            # then issues the next pull and runs the first batch itself; else the pull thread
            if not (
                isinstance(consume, ConsumeMessageConcurrentlyService)
                and consume.execute_if_free(self._on_pull_done, pr, sd, response, error, addr, begin, True)
            ):
                service.execute_task_later(
                    lambda: self._on_pull_done(pr, sd, response, error, addr, begin, False), 0
                )

        return done

    def _on_pull_done(
        self,
        pr: PullRequest,
        sd: SubscriptionData,
        response: RemotingCommand | None,
        error: BaseException | None,
        addr: str,
        begin: float,
        on_consume_thread: bool,
        inline: bool = False,
    ) -> None:
        """``PullCallback``: on the pull thread, or (``on_consume_thread``) on a consume thread
        of a concurrent listener, which also issues the next pull and runs the first batch
        (``inline``: the I/O thread that read the answer does, ``consume_on_io_thread``).
        ``response`` is the broker's answer, else ``error`` why there is none."""
        service, wrapper, consume = self._pull_service, self._wrapper, self._consume_service
        if service is None or wrapper is None or consume is None or self._state is not ServiceState.RUNNING:
            return
        mq = pr.message_queue
        try:
            if error is not None:
                raise error
            assert response is not None
            result = wrapper.process_pull_answer(mq, addr, response, sd)
        except Exception as exc:
            if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                _log_limiter.warning(("pull", mq.broker_name), "pull of %s failed: %s", mq, exc)
            delay = self.client_config.pull_time_delay_mills_when_exception_ms
            if isinstance(exc, BrokerError) and exc.code == ResponseCode.FLOW_CONTROL:
                delay = PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL
            service.execute_pull_request_later(pr, delay)
            return
        mine: list[MessageExt] | None = None
        try:
            mine, pull_here = self._on_pull_result(pr, result, begin, service, consume, on_consume_thread)
            if pull_here and mine and result.next_begin_offset >= result.max_offset:
                # caught up: the next pull will only be held by the broker, so the pull
                # thread sends it while this thread runs the batch at once (its latency)
                service.execute_pull_request_immediately(pr)
            elif pull_here:
                # a backlog: executePullRequestImmediately without waking the pull thread;
                # this thread sends the next pull first (the request is still in one place
                # only), so the broker reads the next batch while the listener runs
                self._pull_message(pr)
        except Exception:
            # MQClientAPIImpl hands an exception of PullCallback.onSuccess to onException, which
            # pulls again later: a bug here must not leave the queue without a pull request
            log.exception("handling the pull result of %s failed, pulling again later", mq)
            service.execute_pull_request_later(pr, self.client_config.pull_time_delay_mills_when_exception_ms)
        if mine:
            # cached already: it is consumed whatever happened to the pull
            if inline:
                started = self._inline_since = time.monotonic()
                cpu = time.thread_time()
                ran = isinstance(consume, ConsumeMessageConcurrentlyService) and consume.consume_here_if_free(
                    mine, pr.process_queue, pr.message_queue
                )
                self._inline_since = 0.0
                # judged unless queued for a consume thread (no free slot) or judged while it ran
                if ran and self._inline_paused_until <= started:
                    self._inline_waited(time.monotonic() - started - (time.thread_time() - cpu))
            else:
                self._consume_here(consume, mine, pr)

    def _inline_now(self) -> bool:
        """``consume_on_io_thread``: whether a pull answer read now is consumed on the I/O
        thread: not during a pause, nor while a batch run there has been running for
        ``_INLINE_OVERDUE_S`` (that starts a pause at once: its I/O loop was handed off, and
        the batches after it should not wait for its end to go to the consume threads)."""
        now = time.monotonic()
        if now < self._inline_paused_until:
            return False
        since = self._inline_since
        if since and now - since > _INLINE_OVERDUE_S:
            self._inline_waited(now - since)
            return False
        return True

    def _inline_waited(self, seconds: float) -> None:
        """``consume_on_io_thread``: a batch the I/O thread ran waited ``seconds`` (not
        running on the CPU: the listener slept, did I/O, waited for a lock). Over
        ``_INLINE_WAITED_S`` the batches go to the consume threads for a while (they wait in
        parallel there, and the process's connections are read meanwhile), from
        ``_INLINE_PAUSE_MIN_S`` growing ``_INLINE_PAUSE_GROWTH`` times up to
        ``_INLINE_PAUSE_MAX_S`` while each batch tried after a pause waits too; one that does
        not ends the growth. (A listener that only computes stays: on other threads it would
        wait for the GIL, and one that holds the I/O thread over the remoting watchdog's
        ``_STALL_S`` has the loop handed off.)"""
        if seconds <= _INLINE_WAITED_S:
            self._inline_pause_s = 0.0
            return
        pause = min(
            max(self._inline_pause_s * _INLINE_PAUSE_GROWTH, _INLINE_PAUSE_MIN_S), _INLINE_PAUSE_MAX_S
        )
        self._inline_pause_s = pause
        self._inline_paused_until = time.monotonic() + pause
        self._inline_pauses += 1
        log.debug(
            "%s: a batch run on the remoting I/O thread waited %.1f ms: consume threads for %.1f s",
            self.consumer_group,
            seconds * 1000,
            pause,
        )

    @staticmethod
    def _consume_here(
        consume: ConsumeMessageConcurrentlyService | ConsumeMessageOrderlyService,
        batch: list[MessageExt],
        pr: PullRequest,
    ) -> None:
        if isinstance(consume, ConsumeMessageConcurrentlyService):
            consume.consume_here(batch, pr.process_queue, pr.message_queue)

    def _on_pull_result(
        self,
        pr: PullRequest,
        result: PullResult,
        begin: float,
        service: PullMessageService,
        consume: ConsumeMessageConcurrentlyService | ConsumeMessageOrderlyService,
        on_consume_thread: bool = False,
    ) -> tuple[list[MessageExt] | None, bool]:
        """``PullCallback.onSuccess``: queue the messages, schedule the next pull.

        Returns (the batch the caller consumes itself, whether the caller pulls again at
        once). Both only ``on_consume_thread`` (a concurrent listener's consume thread runs
        this): the first batch is not queued but returned, and the next pull is issued by
        the caller rather than through the pull thread's queue."""
        mq, pq = pr.message_queue, pr.process_queue
        group = self.config.consumer_group
        status = result.pull_status
        if status is PullStatus.FOUND:
            self.stats.inc_pull_rt(group, mq.topic, int((time.monotonic() - begin) * 1000))
            msgs = result.msg_found_list
            if not msgs:
                pr.next_offset = result.next_begin_offset
                return None, self._pull_again(pr, service, on_consume_thread)
            self.stats.inc_pull_tps(group, mq.topic, len(msgs))
            dispatch = pq.put_messages(msgs)
            mine = None
            if on_consume_thread and isinstance(consume, ConsumeMessageConcurrentlyService):
                mine = consume.submit_keeping_first(msgs, pq, mq)
            else:
                consume.submit_consume_request(msgs, pq, mq, dispatch)
            # Java moves nextOffset before caching the batch, so a failure in between skips it;
            # here the batch is pulled again (the cache ignores offsets it holds already)
            pr.next_offset = result.next_begin_offset
            if self.config.pull_interval_ms > 0:
                service.execute_pull_request_later(pr, self.config.pull_interval_ms)
                return mine, False
            return mine, self._pull_again(pr, service, on_consume_thread)
        elif status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            pr.next_offset = result.next_begin_offset
            if pq.msg_count == 0:  # correctTagsOffset
                self.update_offset(mq, pr.next_offset, increase_only=True)
            return None, self._pull_again(pr, service, on_consume_thread)
        else:  # OFFSET_ILLEGAL
            log.warning("the pull request offset illegal, %s next offset %d", mq, result.next_begin_offset)
            pr.next_offset = result.next_begin_offset
            pq.dropped = True

            def rebuild() -> None:
                store, reb = self._offset_store, self._rebalance
                if store is None or reb is None:
                    return
                store.update_offset(mq, pr.next_offset, False)
                store.persist(mq)
                reb.remove_process_queue(mq)
                log.warning("fixed the offset of %s to %d and dropped its queue", mq, pr.next_offset)

            service.execute_task_later(rebuild, _OFFSET_MOVED_REBUILD_DELAY_MS)
        return None, False

    @staticmethod
    def _pull_again(pr: PullRequest, service: PullMessageService, here: bool) -> bool:
        """``executePullRequestImmediately``, or True: the caller (``here``, a consume thread)
        runs ``pullMessage`` itself instead of waking the pull thread for it."""
        if not here:
            service.execute_pull_request_immediately(pr)
        return here

    # ================================================================== broker requests
    def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """``ClientRemotingProcessor`` for this group: running info, direct consume, reset offset."""
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            info = self.running_info(jstack=request.ext("jstackEnable") == "true")
            # Java's client leaves the response's default remark in place (golden admin.jsonl)
            return request.make_response(
                ResponseCode.SUCCESS, "not set any response code", body=info.to_json()
            )
        if request.code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
            status = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
            store = self._offset_store
            table = store.clone_offset_table(status.topic) if store is not None else {}
            answer = GetConsumerStatusBody(message_queue_table=table)
            return request.make_response(ResponseCode.SUCCESS, body=answer.to_json())
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            return self._consume_message_directly(request)
        if request.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
            if request.body:
                body = ResetOffsetBody.from_json(request.body)
                self.reset_offset(str(header.topic), body.offset_table)
            return None
        return request_not_supported(request)

    def running_info(self, *, jstack: bool = False) -> ConsumerRunningInfo:
        """``consumerRunningInfo``: what mqadmin consumerStatus and the dashboard show."""
        cfg = self.config
        props = {k: str(v.name if hasattr(v, "name") else v) for k, v in dataclasses.asdict(cfg).items()}
        props[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] = self.client_config.namesrv_addr or ""
        props[ConsumerRunningInfo.PROP_CONSUME_TYPE] = ConsumeType.CONSUME_PASSIVELY.name
        props[ConsumerRunningInfo.PROP_CONSUME_ORDERLY] = str(self.consume_orderly).lower()
        props[ConsumerRunningInfo.PROP_THREADPOOL_CORE_SIZE] = str(cfg.consume_thread_max)
        props[ConsumerRunningInfo.PROP_CONSUMER_START_TIMESTAMP] = str(self._start_timestamp)
        props[ConsumerRunningInfo.PROP_CLIENT_VERSION] = str(CURRENT_VERSION)
        store = self._offset_store
        mq_table = {}
        for mq, pq in self.process_queues():
            commit = store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY) if store is not None else 0
            mq_table[mq] = pq.info(commit)
        subs = self.subscriptions()
        status = {
            sd.topic: self.stats.consume_status(cfg.consumer_group, sd.topic)
            for sd in subs
            if sd.topic is not None
        }
        stack = None
        if jstack:
            frames = sys._current_frames()
            names = {t.ident: t.name for t in threading.enumerate()}
            stack = "\n".join(
                f'"{names.get(ident, ident)}"\n' + "".join(traceback.format_stack(frame))
                for ident, frame in frames.items()
            )
        return ConsumerRunningInfo(
            properties=props, subscription_set=subs, mq_table=mq_table, status_table=status, jstack=stack
        )

    def _consume_message_directly(self, request: RemotingCommand) -> RemotingCommand:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        consume = self._consume_service
        if not request.body:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "the message body is empty")
        msg = decode_record(request.body)
        if isinstance(consume, ConsumeMessageConcurrentlyService):
            name, spent, remark = consume.consume_message_directly(msg, header.broker_name or "")
            result = ConsumeMessageDirectlyResult(
                order=False,
                auto_commit=True,
                consume_result=CMResult[name],
                remark=remark,
                spent_time_mills=spent,
            )
            return request.make_response(ResponseCode.SUCCESS, body=result.to_json())
        return request.make_response(
            ResponseCode.SYSTEM_ERROR,
            "consuming a message directly is supported for concurrent listeners only",
        )

    def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop the topic's queues, store the offsets, rebuild."""
        reb, store, instance = self._rebalance, self._offset_store, self._instance
        if reb is None or store is None or instance is None:
            return
        self._paused = True
        try:
            for mq, pq in self.process_queues():
                if mq.topic == topic:
                    pq.dropped = True
                    pq.clear()
            for mq, offset in offsets.items():
                if mq.topic == topic:
                    store.update_offset(mq, offset, False)
                    store.persist(mq)
            for mq, _ in self.process_queues():
                if mq.topic == topic:
                    reb.forget_process_queue(mq)
        finally:
            self._paused = False
        instance.rebalance_immediately()
