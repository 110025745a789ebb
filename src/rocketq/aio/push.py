"""AsyncPushConsumer: ``DefaultMQPushConsumer`` semantics with coroutine listeners.

The asyncio counterpart of :class:`rocketq.client.consumer.push.PushConsumer`. The pipeline,
all on the caller's loop::

    rebalance task (AsyncRebalance)   -> one pull task per owned queue
    pull task                         -> flow control, long-polling PULL_MESSAGE, ProcessQueue.put_messages
    consume service (aio.consume)     -> coroutine listener, send-back / DLQ, offset from the ProcessQueue
    offset store                      -> persisted every persist interval and at shutdown

Invariants (as the blocking consumer):

* Flow control before every pull: more than ``pull_threshold_for_queue`` cached messages, more
  than ``pull_threshold_size_for_queue_mib`` cached MiB, or (concurrent mode) an offset span
  over ``consume_concurrently_max_span`` waits 50 ms (counted in ``queue_flow_control_times``
  and reported to ``client_config.metrics``); an orderly queue is pulled only while its broker
  lock is held. ``suspend()`` stops pulling and rebalancing until ``resume()``.
* The committed offset is never past an unconsumed message (ProcessQueue rule), so a crash
  re-delivers and never loses.
* CLUSTERING consumers also subscribe ``%RETRY%<group>``, where CONSUMER_SEND_MSG_BACK puts
  failed messages after their delay level; past ``max_reconsume_times`` the broker moves them
  to ``%DLQ%<group>``.
* Broker requests are answered on the loop: NOTIFY_CONSUMER_IDS_CHANGED (rebalance now),
  GET_CONSUMER_RUNNING_INFO, GET_CONSUMER_STATUS_FROM_CLIENT, CONSUME_MESSAGE_DIRECTLY
  (concurrent listeners) and RESET_CONSUMER_CLIENT_OFFSET.
* ``shutdown()`` (or leaving ``async with``, or cancellation of the task that awaits it)
  cancels every pull task, lets running listeners finish (``await_termination_millis_when_shutdown``,
  10 s when 0, as the blocking consumer; then they are cancelled), persists offsets, releases
  orderly queue locks and unregisters: no task is left behind.
* A subscribed topic with no route yet is looked up again after 1 s doubling to 8 s until it
  exists (as the blocking consumer; Java waits for the 30 s route poll).
* Observability as the blocking consumer: consume hooks, message trace
  (``enable_msg_trace``; :class:`~rocketq.aio.trace.AsyncioTraceDispatcher`, a task of the loop)
  and client metrics (``client_config.metrics``: the consume hook, cached messages and bytes,
  flow control, rebalance changes).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import operator
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence

from rocketq.aio.consume import (
    AsyncConcurrentListener,
    AsyncOrderlyListener,
    ConcurrentConsumeService,
    OrderlyConsumeService,
)
from rocketq.aio.instance import AsyncClientInstance
from rocketq.aio.lite_pull import open_consumer
from rocketq.aio.offset_store import AsyncOffsetStore
from rocketq.aio.producer import AsyncProducer
from rocketq.aio.rebalance import AsyncPullAPIWrapper, AsyncRebalance, compute_pull_from_where
from rocketq.aio.remoting import RequestHook, wait_event
from rocketq.aio.trace import AsyncioTraceDispatcher
from rocketq.client.api_results import PullStatus
from rocketq.client.config import (
    CLIENT_INNER_PRODUCER_GROUP,
    ClientConfig,
    PushConsumerConfig,
    validate_topic,
    with_overrides,
)
from rocketq.client.consumer.allocate import AllocateMessageQueueStrategy
from rocketq.client.consumer.listener import (
    DEFAULT_SHUTDOWN_WAIT_MS,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeMessageHook,
)
from rocketq.client.consumer.offset_store import ReadOffsetType
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.push import queue_thresholds
from rocketq.client.consumer.retry import SEND_BACK_TIMEOUT_MS, concurrent_max_reconsume_times, retry_message
from rocketq.client.consumer.stats import ConsumerStatsManager
from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.client.instance import request_not_supported
from rocketq.client.message_selector import MessageSelector, build_subscription
from rocketq.client.metrics import safely
from rocketq.client.trace.hooks import ConsumeMessageTraceHookImpl
from rocketq.common.service_state import ServiceState
from rocketq.errors import BrokerError, ClientError, RocketqError
from rocketq.protocol.bodies import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    GetConsumerStatusBody,
    ResetOffsetBody,
)
from rocketq.protocol.codes import CURRENT_VERSION, RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import GetConsumerStatusRequestHeader, ResetOffsetRequestHeader
from rocketq.protocol.heartbeat import (
    ConsumerData,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.message import MessageConst, MessageExt, decode_record
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import RETRY_GROUP_TOPIC_PREFIX, retry_topic
from rocketq.remoting.helper import host_addr_to_string

__all__ = ["AsyncPushConsumer"]

log = logging.getLogger(__name__)

_FLOW_CONTROL_DELAY_S = 0.05
#: PULL_TIME_DELAY_MILLS_WHEN_SUSPEND: a suspended consumer's pull task looks again after 1 s
#: (or at once on resume)
_SUSPEND_DELAY_S = 1.0
_BROKER_FLOW_CONTROL_DELAY_S = 0.02
_BROKER_SUSPEND_MAX_TIME_MS = 15_000
_CONSUMER_TIMEOUT_WHEN_SUSPEND_MS = 30_000
_MIB = 1024 * 1024
#: how long a rebalance waits for an orderly batch before it leaves the queue for the next round
_QUIESCE_TIMEOUT_S = 1.0


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class AsyncPushConsumer:
    """A push consumer on the running loop: ``subscribe``, register a coroutine listener, ``start``.

    ``consume_concurrency`` (default ``consume_thread_max``, 20) bounds the listener tasks of
    concurrent mode.
    """

    def __init__(
        self,
        consumer_group: str | None = None,
        *,
        namesrv_addr: str | None = None,
        message_model: MessageModel | None = None,
        config: PushConsumerConfig | None = None,
        client_config: ClientConfig | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        consume_concurrency: int | None = None,
        request_hooks: Sequence[RequestHook] = (),
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        cfg = with_overrides(
            config or PushConsumerConfig(), consumer_group=consumer_group, message_model=message_model
        )
        ccfg = with_overrides(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self.config = cfg
        self.client_config = ccfg
        self.consumer_group = cfg.consumer_group
        self.consume_concurrency = consume_concurrency or cfg.consume_thread_max
        if self.consume_concurrency < 1:
            raise ClientError("consume_concurrency must be >= 1")
        self.stats = ConsumerStatsManager()
        self.hooks: list[ConsumeMessageHook] = []
        #: message trace (``enableMsgTrace``/``customizedTraceTopic``): None when off
        self.trace_dispatcher: AsyncioTraceDispatcher | None = None
        if enable_msg_trace:
            self.trace_dispatcher = AsyncioTraceDispatcher(cfg.consumer_group, "CONSUME", custom_trace_topic)
            self.hooks.append(ConsumeMessageTraceHookImpl(self.trace_dispatcher))
        #: pulls paused because a process queue was over a threshold (``queueFlowControlTimes``)
        self.queue_flow_control_times = 0
        self._paused = False
        self._resumed = asyncio.Event()
        self._strategy = allocate_strategy
        self._hooks = tuple(request_hooks)
        self._clock_ms = clock_ms
        self._state = ServiceState.CREATE_JUST
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._listener: AsyncConcurrentListener | None = None
        self._orderly_listener: AsyncOrderlyListener | None = None
        self._instance: AsyncClientInstance | None = None
        self._store: AsyncOffsetStore | None = None
        self._wrapper: AsyncPullAPIWrapper | None = None
        self._rebalance: AsyncRebalance | None = None
        self._concurrent: ConcurrentConsumeService | None = None
        self._orderly: OrderlyConsumeService | None = None
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._inner_producer: AsyncProducer | None = None
        self._start_timestamp = 0
        #: per-queue (count, MiB) flow-control limits (topic limits split over the owned queues)
        self._queue_limits = (cfg.pull_threshold_for_queue, cfg.pull_threshold_size_for_queue_mib)

    # ================================================================== configuration
    @property
    def state(self) -> ServiceState:
        return self._state

    @property
    def client_id(self) -> str:
        return self._running()[0].client_id

    @property
    def consume_orderly(self) -> bool:
        return self._orderly_listener is not None

    @property
    def orderly_dlq_count(self) -> int:
        return self._orderly.dlq_count if self._orderly is not None else 0

    def subscribe(self, topic: str, expression: str | MessageSelector | None = "*") -> None:
        """A tag expression (``"*"``, ``"TagA || TagB"``) or a :class:`MessageSelector`
        (``MessageSelector.by_sql(...)``, filtered on the broker), as ``PushConsumer.subscribe``."""
        validate_topic(topic)
        self._subscriptions[topic] = build_subscription(topic, expression)
        if self._rebalance is not None:
            self._rebalance.subscription_inner[topic] = self._subscriptions[topic]

    def register_message_listener(self, listener: AsyncConcurrentListener) -> None:
        """A coroutine ``async def on_messages(msgs, ctx) -> ConsumeConcurrentlyStatus``."""
        self._listener, self._orderly_listener = listener, None

    def register_message_listener_orderly(self, listener: AsyncOrderlyListener) -> None:
        """A coroutine ``async def on_messages(msgs, ctx) -> ConsumeOrderlyStatus``."""
        self._orderly_listener, self._listener = listener, None

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        """Before/after callbacks around every listener call (``ConsumeMessageHook``, e.g. tracing)."""
        self.hooks.append(hook)

    def assigned_queues(self, topic: str | None = None) -> set[MessageQueue]:
        reb = self._rebalance
        table = reb.process_queue_table if reb is not None else {}
        return {mq for mq in table if topic is None or mq.topic == topic}

    # ================================================================== lifecycle
    async def start(self) -> None:
        self._state.check_startable("PushConsumer")
        if self._listener is None and self._orderly_listener is None:
            raise ClientError("messageListener is null: register a listener before start()")
        if not self._subscriptions:
            raise ClientError("no subscription: call subscribe() before start()")
        self._state = ServiceState.START_FAILED
        cfg = self.config
        self.client_config, instance, self._store, self._wrapper = open_consumer(
            self.client_config, cfg.consumer_group, cfg.message_model, cfg.offset_store_dir, self._hooks
        )
        reb = AsyncRebalance(
            instance,
            cfg.consumer_group,
            cfg.message_model,
            self._strategy,
            passive=True,
            start_offset=self._start_offset,
            remove_queue=self._remove_queue,
            added=self._queue_added,
            queues_changed=self._queues_changed,
            clock_ms=self._clock_ms,
            lock_max_live_time_ms=cfg.lock_max_live_time_ms,
        )
        reb.subscription_inner.update(self._subscriptions)
        metrics = self.client_config.metrics
        if metrics is not None:
            self.hooks.append(metrics.consume_hook(cfg.consumer_group))
            metrics.watch_cache(cfg.consumer_group, instance.client_id, self._cached_by_topic)
        if cfg.message_model is MessageModel.CLUSTERING:
            retry = retry_topic(cfg.consumer_group)
            reb.subscription_inner[retry] = build_subscription_data(retry, "*")
        self._rebalance = reb
        timeout_ms = cfg.consume_timeout_minutes * 60_000
        if self._orderly_listener is not None:
            self._orderly = OrderlyConsumeService(
                self,
                self._orderly_listener,
                batch_size=cfg.consume_message_batch_max_size,
                consume_timeout_ms=timeout_ms,
                suspend_ms=cfg.suspend_current_queue_time_millis,
                max_reconsume_times=cfg.max_reconsume_times,
            )
        else:
            assert self._listener is not None
            self._concurrent = ConcurrentConsumeService(
                self,
                self._listener,
                concurrency=self.consume_concurrency,
                batch_size=cfg.consume_message_batch_max_size,
                consume_timeout_ms=timeout_ms,
            )
            self._concurrent.start()
        instance.consumer = (cfg.consumer_group, self)
        self._instance = instance
        await instance.start()
        self._start_timestamp = int(time.time() * 1000)
        self._state = ServiceState.RUNNING
        if self.trace_dispatcher is not None:
            try:
                await self.trace_dispatcher.start(self.client_config)
            except RocketqError:
                log.exception("message trace of %s could not start", cfg.consumer_group)
        for topic in list(reb.subscription_inner):
            with contextlib.suppress(RocketqError):
                await instance.update_route(topic)
        await instance.send_heartbeat_to_all_brokers()
        instance.rebalance_immediately()
        if self._orderly is not None and cfg.message_model is MessageModel.CLUSTERING:
            self._every(cfg.lock_interval_ms, reb.lock_all)
        elif self._concurrent is not None:
            concurrent = self._concurrent
            self._every(timeout_ms, lambda: concurrent.clean_expired(list(reb.process_queue_table.items())))
        for topic in list(reb.subscription_inner):
            if topic not in reb.topic_subscribe_info_table:
                known = functools.partial(operator.contains, reb.topic_subscribe_info_table, topic)
                self.spawn(instance.await_route(topic, known))

    def spawn(self, coro: Awaitable[None]) -> None:
        """Run ``coro`` as a task of this consumer (cancelled at shutdown)."""

        async def run() -> None:
            await coro

        def finished(task: asyncio.Task[None]) -> None:
            self._side_tasks.discard(task)
            if isinstance(coro, Coroutine):  # cancelled before it started: no "never awaited"
                coro.close()

        task = asyncio.get_running_loop().create_task(run())
        self._side_tasks.add(task)
        task.add_done_callback(finished)

    def _every(self, period_ms: int, fn: Callable[[], Awaitable[None]]) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(period_ms / 1000.0)
                try:
                    await fn()
                except Exception:
                    log.exception("%s: periodic task failed", self.consumer_group)

        self.spawn(loop())

    async def shutdown(self) -> None:
        """Stop pulling and consuming, persist offsets, release orderly locks, unregister."""
        was_running = self._state is ServiceState.RUNNING
        self._state = ServiceState.SHUTDOWN_ALREADY
        if not was_running:
            return
        try:
            if self._instance is not None:
                await self._instance.stop_rebalance()
            tasks = [*self._pull_tasks.values(), *self._side_tasks]
            self._pull_tasks.clear()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            configured = self.config.await_termination_millis_when_shutdown
            wait_ms = configured if configured > 0 else DEFAULT_SHUTDOWN_WAIT_MS
            if self._concurrent is not None:
                await self._concurrent.shutdown(wait_ms)
            if self._orderly is not None:
                await self._orderly.shutdown(wait_ms)
            await self._persist_all()
            reb = self._rebalance
            if reb is not None:
                if self._orderly is not None and self.config.message_model is MessageModel.CLUSTERING:
                    for mq in list(reb.process_queue_table):
                        await reb.unlock(mq, False)
                for pq in reb.process_queue_table.values():
                    pq.dropped = True
                reb.process_queue_table.clear()
        finally:
            metrics, instance = self.client_config.metrics, self._instance
            if metrics is not None and instance is not None:
                safely(lambda: metrics.unwatch_cache(self.consumer_group, instance.client_id))
            if self.trace_dispatcher is not None:
                await self.trace_dispatcher.shutdown()
            if self._inner_producer is not None:
                await self._inner_producer.shutdown()
            if self._instance is not None:
                await self._instance.close()

    def suspend(self) -> None:
        """Pause pulling (``suspend``): the pull tasks wait until :meth:`resume` (what was
        already pulled is still consumed) and rebalancing stops meanwhile."""
        self._paused = True
        self._resumed.clear()

    def resume(self) -> None:
        """Resume pulling and rebalance at once (``resume``)."""
        self._paused = False
        self._resumed.set()
        if self._instance is not None:
            self._instance.rebalance_immediately()

    @property
    def paused(self) -> bool:
        """Whether :meth:`suspend` paused the consumer."""
        return self._paused

    def _cached_by_topic(self) -> list[tuple[str, int, int]]:
        """(topic, cached messages, cached bytes) of each process queue (client metrics)."""
        reb = self._rebalance
        if reb is None:
            return []
        return [(mq.topic, pq.msg_count, pq.msg_size) for mq, pq in list(reb.process_queue_table.items())]

    def _flow_control(self, mq: MessageQueue, what: str, value: float) -> None:
        """A pull of ``mq`` postponed by flow control (``what`` = count, size or span)."""
        metrics = self.client_config.metrics
        if metrics is not None:
            safely(lambda: metrics.on_flow_control(self.consumer_group, what))
        self.queue_flow_control_times += 1
        if self.queue_flow_control_times % 1000 == 1:
            log.warning("flow control (%s=%s) on %s, pull again in 50 ms", what, value, mq)

    async def __aenter__(self) -> AsyncPushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def _running(self) -> tuple[AsyncClientInstance, AsyncOffsetStore, AsyncPullAPIWrapper, AsyncRebalance]:
        inst, store, wrapper, reb = self._instance, self._store, self._wrapper, self._rebalance
        if (
            self._state is not ServiceState.RUNNING
            or inst is None
            or store is None
            or wrapper is None
            or reb is None
        ):
            raise ClientError(f"The consumer service state not OK, {self._state.name}")
        return inst, store, wrapper, reb

    # ================================================================== rebalance hooks
    async def _start_offset(self, mq: MessageQueue) -> int:
        inst, store, _, _ = self._running()
        store.remove_offset(mq)  # removeDirtyOffset
        return await compute_pull_from_where(
            inst, store, mq, self.config.consume_from_where, self.config.consume_timestamp
        )

    def _queue_added(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        if self._state is ServiceState.RUNNING:
            old = self._pull_tasks.pop(mq, None)
            if old is not None:
                old.cancel()
            self._pull_tasks[mq] = asyncio.get_running_loop().create_task(
                self._pull_loop(mq, pq, offset), name=f"{self.consumer_group}-pull-{mq}"
            )

    async def _remove_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        store = self._store
        orderly = self._orderly is not None and self.config.message_model is MessageModel.CLUSTERING
        if orderly and self._orderly is not None and not await self._orderly.quiesce(mq, _QUIESCE_TIMEOUT_S):
            pq.try_unlock_times += 1
            log.warning("%s is still being consumed; it will be released at the next rebalance", mq)
            return False
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()
        if store is not None:
            await store.persist(mq)
            store.remove_offset(mq)
        if orderly and self._rebalance is not None:
            await self._rebalance.unlock(mq, True)
        return True

    def _queues_changed(self, topic: str, mq_all: set[MessageQueue], owned: set[MessageQueue]) -> None:
        self._queue_limits = queue_thresholds(self.config, len(owned), self._queue_limits)
        metrics = self.client_config.metrics
        if metrics is not None:
            safely(lambda: metrics.on_rebalance(self.consumer_group, topic, len(owned)))
        sub = self._rebalance.subscription_inner.get(topic) if self._rebalance is not None else None
        if sub is not None:
            sub.sub_version = int(time.time() * 1000)
        if self._instance is not None:
            self.spawn(self._heartbeat())

    async def _heartbeat(self) -> None:
        if self._instance is not None:
            await self._instance.send_heartbeat_to_all_brokers()

    # ================================================================== consume host
    def message_model(self) -> MessageModel:
        return self.config.message_model

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        if self._store is not None:
            self._store.update_offset(mq, offset, increase_only)

    def reset_retry_topic(self, msgs: Sequence[MessageExt]) -> None:
        """Messages of ``%RETRY%<group>`` are shown under their original topic."""
        group_topic = retry_topic(self.consumer_group)
        for msg in msgs:
            if msg.topic == group_topic:
                original = msg.properties.get(MessageConst.RETRY_TOPIC)
                if original:
                    msg.topic = original

    async def lock(self, mq: MessageQueue) -> bool:
        reb = self._rebalance
        return await reb.lock(mq) if reb is not None else False

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> None:
        """CONSUMER_SEND_MSG_BACK; if the broker cannot be asked, a copy via the inner producer."""
        inst = self._running()[0]
        addr = inst.find_broker_address_in_publish(broker_name) if broker_name else None
        if addr is None:
            addr = host_addr_to_string(msg.store_host)
        max_times = concurrent_max_reconsume_times(self.config.max_reconsume_times)
        try:
            await inst.api.consumer_send_message_back(
                addr, msg, self.consumer_group, delay_level, SEND_BACK_TIMEOUT_MS, max_times
            )
        except RocketqError as exc:
            log.warning(
                "CONSUMER_SEND_MSG_BACK of %s failed (%s); re-sending via the producer", msg.msg_id, exc
            )
            await self._send_via_producer(msg, msg.reconsume_times + 1, max_times)

    async def send_to_dlq(self, msg: MessageExt, max_reconsume_times: int) -> None:
        """Orderly: over the max, the broker routes the copy to the DLQ."""
        await self._send_via_producer(msg, msg.reconsume_times, max_reconsume_times)

    async def _send_via_producer(self, msg: MessageExt, reconsume_time: int, max_times: int) -> None:
        if self._inner_producer is None:
            producer = AsyncProducer(CLIENT_INNER_PRODUCER_GROUP, client_config=self.client_config)
            await producer.start()
            self._inner_producer = producer
        await self._inner_producer.send(retry_message(msg, self.consumer_group, reconsume_time, max_times))

    # ================================================================== pulling
    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        """``pullMessage`` + ``PullCallback`` for one queue, until it is dropped."""
        cfg = self.config
        error_delay_s = self.client_config.pull_time_delay_mills_when_exception_ms / 1000.0
        orderly_clustering = self._orderly is not None and cfg.message_model is MessageModel.CLUSTERING
        previously_locked = False
        while not pq.is_dropped() and self._state is ServiceState.RUNNING:
            pq.last_pull_timestamp = self._clock_ms()
            if self._paused:
                await wait_event(self._resumed, _SUSPEND_DELAY_S)
                continue
            max_count, max_mib = self._queue_limits
            if pq.msg_count > max_count:
                self._flow_control(mq, "count", pq.msg_count)
                await asyncio.sleep(_FLOW_CONTROL_DELAY_S)
                continue
            if pq.msg_size / _MIB > max_mib:
                self._flow_control(mq, "size", pq.msg_size)
                await asyncio.sleep(_FLOW_CONTROL_DELAY_S)
                continue
            if self._orderly is None and pq.max_span() > cfg.consume_concurrently_max_span:
                self._flow_control(mq, "span", pq.max_span())
                await asyncio.sleep(_FLOW_CONTROL_DELAY_S)
                continue
            if orderly_clustering:
                if not pq.locked:
                    await asyncio.sleep(error_delay_s)
                    continue
                if not previously_locked:
                    fresh = await self._start_offset(mq)
                    if fresh < 0:
                        await asyncio.sleep(error_delay_s)
                        continue
                    previously_locked, offset = True, fresh
            inst, store, wrapper, reb = self._running()
            sd = reb.subscription_inner.get(mq.topic)
            if sd is None:
                await asyncio.sleep(error_delay_s)
                continue
            commit_offset = 0
            if cfg.message_model is MessageModel.CLUSTERING:
                commit_offset = await store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY)
            sys_flag = build_pull_sys_flag(commit_offset=commit_offset > 0, suspend=True, subscription=True)
            try:
                result = await wrapper.pull(
                    mq,
                    sd,
                    offset,
                    cfg.pull_batch_size,
                    sys_flag,
                    max(commit_offset, 0),
                    _BROKER_SUSPEND_MAX_TIME_MS,
                    _CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
                )
            except RocketqError as exc:
                if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    log.warning("pull of %s failed: %s", mq, exc)
                flow = isinstance(exc, BrokerError) and exc.code == ResponseCode.FLOW_CONTROL
                await asyncio.sleep(_BROKER_FLOW_CONTROL_DELAY_S if flow else error_delay_s)
                continue
            except Exception:  # a bug must not end this queue's pulls (the queue would stall)
                log.exception("pull of %s failed, pulling again later", mq)
                await asyncio.sleep(error_delay_s)
                continue
            if pq.is_dropped():
                return
            status = result.pull_status
            if status is PullStatus.FOUND:
                msgs = result.msg_found_list
                if msgs:
                    try:
                        self.stats.inc_pull_tps(self.consumer_group, mq.topic, len(msgs))
                        dispatch = pq.put_messages(msgs)
                        if self._concurrent is not None:
                            self._concurrent.submit(msgs, pq, mq)
                        elif self._orderly is not None:
                            self._orderly.submit(pq, mq, dispatch)
                    except Exception:  # pull the batch again (the cache ignores offsets it holds)
                        log.exception("caching the pull of %s failed, pulling it again later", mq)
                        await asyncio.sleep(error_delay_s)
                        continue
                    offset = result.next_begin_offset
                    if cfg.pull_interval_ms > 0:
                        await asyncio.sleep(cfg.pull_interval_ms / 1000.0)
                else:
                    offset = result.next_begin_offset
                continue
            offset = result.next_begin_offset
            if status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
                if pq.msg_count == 0:  # correctTagsOffset
                    self.update_offset(mq, offset, increase_only=True)
            else:  # OFFSET_ILLEGAL: store the corrected offset, drop the queue, rebalance again
                log.warning("the pull request offset illegal, %s next offset %d", mq, offset)
                pq.dropped = True
                store.update_offset(mq, offset, False)
                await store.persist(mq)
                if reb.process_queue_table.get(mq) is pq:
                    del reb.process_queue_table[mq]
                inst.rebalance_immediately()
                return

    # ================================================================== AsyncConsumerInner
    def consumer_data(self) -> ConsumerData:
        reb = self._rebalance
        subs = (
            list(reb.subscription_inner.values()) if reb is not None else list(self._subscriptions.values())
        )
        return ConsumerData(
            group_name=self.consumer_group,
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=self.config.message_model,
            consume_from_where=self.config.consume_from_where,
            subscription_data_set=subs,
        )

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None:
        if self._rebalance is not None:
            self._rebalance.set_subscribe_info(topic, info)

    async def do_rebalance(self) -> None:
        if self._rebalance is not None and self._state is ServiceState.RUNNING and not self._paused:
            await self._rebalance.do_rebalance(self.consume_orderly)

    async def persist_consumer_offset(self) -> None:
        await self._persist_all()

    async def _persist_all(self) -> None:
        store, reb = self._store, self._rebalance
        if store is not None and reb is not None:
            await store.persist_all(set(reb.process_queue_table))

    # ================================================================== broker requests
    async def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """``ClientRemotingProcessor`` for this group."""
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            info = await self.running_info()
            return request.make_response(
                ResponseCode.SUCCESS, "not set any response code", body=info.to_json()
            )
        if request.code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
            status = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
            table = self._store.clone_offset_table(status.topic) if self._store is not None else {}
            return request.make_response(
                ResponseCode.SUCCESS, body=GetConsumerStatusBody(message_queue_table=table).to_json()
            )
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            return await self._consume_message_directly(request)
        if request.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
            if request.body:
                await self.reset_offset(
                    str(header.topic), ResetOffsetBody.from_json(request.body).offset_table
                )
            return None
        return request_not_supported(request)

    async def running_info(self) -> ConsumerRunningInfo:
        """``consumerRunningInfo``: what mqadmin consumerStatus shows."""
        cfg = self.config
        props = {k: str(v.name if hasattr(v, "name") else v) for k, v in dataclasses.asdict(cfg).items()}
        props[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] = self.client_config.namesrv_addr or ""
        props[ConsumerRunningInfo.PROP_CONSUME_TYPE] = ConsumeType.CONSUME_PASSIVELY.name
        props[ConsumerRunningInfo.PROP_CONSUME_ORDERLY] = str(self.consume_orderly).lower()
        props[ConsumerRunningInfo.PROP_THREADPOOL_CORE_SIZE] = str(self.consume_concurrency)
        props[ConsumerRunningInfo.PROP_CONSUMER_START_TIMESTAMP] = str(self._start_timestamp)
        props[ConsumerRunningInfo.PROP_CLIENT_VERSION] = str(CURRENT_VERSION)
        store, reb = self._store, self._rebalance
        mq_table = {}
        for mq, pq in list(reb.process_queue_table.items()) if reb is not None else []:
            commit = await store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY) if store is not None else 0
            mq_table[mq] = pq.info(commit)
        subs = self.consumer_data().subscription_data_set
        status = {
            sd.topic: self.stats.consume_status(cfg.consumer_group, sd.topic) for sd in subs if sd.topic
        }
        return ConsumerRunningInfo(
            properties=props, subscription_set=subs, mq_table=mq_table, status_table=status
        )

    async def _consume_message_directly(self, request: RemotingCommand) -> RemotingCommand:
        if not request.body:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "the message body is empty")
        service = self._concurrent
        if service is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                "consuming a message directly is supported for concurrent listeners only",
            )
        msg = decode_record(request.body)
        mq = MessageQueue(msg.topic, request.ext("brokerName") or "", msg.queue_id)
        self.reset_retry_topic([msg])
        begin = time.monotonic()
        status, raised = await service.call_listener([msg], ConsumeConcurrentlyContext(message_queue=mq))
        spent = int((time.monotonic() - begin) * 1000)
        if raised:
            name = "CR_THROW_EXCEPTION"
        elif status == ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            name = "CR_SUCCESS"
        elif status == ConsumeConcurrentlyStatus.RECONSUME_LATER:
            name = "CR_LATER"
        else:
            name = "CR_RETURN_NULL"
        result = ConsumeMessageDirectlyResult(
            order=False, auto_commit=True, consume_result=CMResult[name], spent_time_mills=spent
        )
        return request.make_response(ResponseCode.SUCCESS, body=result.to_json())

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop the topic's queues, store the offsets, rebalance."""
        inst, store, _, reb = self._running()
        for mq, pq in list(reb.process_queue_table.items()):
            if mq.topic == topic:
                pq.dropped = True
                pq.clear()
                task = self._pull_tasks.pop(mq, None)
                if task is not None:
                    task.cancel()
                del reb.process_queue_table[mq]
        for mq, offset in offsets.items():
            if mq.topic == topic:
                store.update_offset(mq, offset, False)
                await store.persist(mq)
        inst.rebalance_immediately()
