"""The lite pull consumer: ``subscribe``/``assign`` + ``poll`` + ``seek`` + ``commit``.

Mirrors ``org.apache.rocketmq.client.consumer.DefaultLitePullConsumer``,
``org.apache.rocketmq.client.impl.consumer.DefaultLitePullConsumerImpl``,
``AssignedMessageQueue`` and ``RebalanceLitePullImpl`` (4.9.7): the API Kafka users expect.

How it works:

* ``subscribe(topic, expr)`` lets the group rebalance the topic's queues (CLUSTERING: a
  share per client; BROADCASTING: all); ``assign(queues)`` takes exactly those queues.
* One pull task per owned queue runs on a few worker threads (``<group>-lite-pull-N``):
  it checks flow control (``pull_threshold_for_all`` waiting messages,
  ``pull_threshold_for_queue``/``..._size_..._mib`` cached, ``consume_max_span``), then issues
  an *asynchronous* long-polling pull (sysFlag SUSPEND|SUBSCRIPTION|LITE_PULL = 0x16), so no
  thread blocks on the network; results are decoded on the client's callback pool and
  queued for :meth:`LitePullConsumer.poll`.
* ``poll`` returns the next batch (at most ``pull_batch_size`` messages of one queue) and
  advances that queue's consumed offset; with ``auto_commit`` the consumed offsets are
  committed every ``auto_commit_interval_ms`` (checked in ``poll``) and persisted by the
  client instance every 5 s and at shutdown.
* ``seek`` drops what is cached for the queue and restarts its task at the new offset.
* The start offset of a queue without a committed offset follows ``consume_from_where``.
* A subscribed topic with no route yet is looked up again on a short backoff (1 s doubling
  to 8 s, :class:`~rocketq.client.consumer.route_backoff.RouteBackoff`, shared with the push
  consumer) until it exists, then rebalanced at once (rocketq only; Java waits for the
  30 s route poll).

``commit_sync`` is stronger than Java's 4.9.7 ``commitSync`` (which only updates memory):
it also writes the offsets to the broker with acknowledged UPDATE_CONSUMER_OFFSET
requests (CLUSTERING) or to the local offsets file (BROADCASTING) before returning.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from rocketq.client.api_results import PullResult, PullStatus
from rocketq.client.config import (
    ClientConfig,
    LitePullConsumerConfig,
    SubscriptionType,
    validate_topic,
    with_overrides,
)
from rocketq.client.consumer.allocate import AllocateMessageQueueStrategy
from rocketq.client.consumer.consumer_start import register_and_start, start_consumer_instance
from rocketq.client.consumer.offset_store import (
    OffsetStore,
    ReadOffsetType,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.rebalance import RebalanceImpl, compute_pull_from_where
from rocketq.client.consumer.route_backoff import RouteBackoff
from rocketq.client.impl.mq_admin_impl import MQAdminImpl
from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper, build_pull_sys_flag
from rocketq.client.impl.topic_route import topic_route_to_subscribe_info
from rocketq.client.instance import DEFAULT_MANAGER, MQClientInstance, MQClientManager, request_not_supported
from rocketq.client.message_selector import MessageSelector, build_subscription, check_client_in_broker
from rocketq.common.scheduler import ScheduledExecutor
from rocketq.common.service_state import ServiceLifecycle, ServiceState
from rocketq.errors import ClientError, IllegalArgumentError, RocketqError
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

__all__ = [
    "DELAY_WHEN_FLOW_CONTROL_MS",
    "DELAY_WHEN_PAUSE_MS",
    "LiteConsumeRequest",
    "LitePullConsumer",
    "MessageQueueState",
    "flow_controlled",
]

log = logging.getLogger(__name__)

#: ``DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_PAUSE``
DELAY_WHEN_PAUSE_MS = 1000
#: ``PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL``
DELAY_WHEN_FLOW_CONTROL_MS = 50
#: worker threads: pulls are asynchronous, so a few run every task
_MAX_WORKERS = 4


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def flow_controlled(cfg: LitePullConsumerConfig, cached_requests: int, pq: ProcessQueue) -> bool:
    """``pullTaskImpl``'s flow control: too much waiting for ``poll`` overall
    (``pull_threshold_for_all``), or in this queue's ProcessQueue (count, MiB, offset span).
    Shared by the blocking and the asyncio lite pull consumers."""
    return (
        cached_requests * cfg.pull_batch_size > cfg.pull_threshold_for_all
        or pq.msg_count > cfg.pull_threshold_for_queue
        or pq.msg_size / (1024 * 1024) > cfg.pull_threshold_size_for_queue_mib
        or pq.max_span() > cfg.consume_max_span
    )


@dataclasses.dataclass(slots=True)
class MessageQueueState:
    """``AssignedMessageQueue.MessageQueueState``."""

    process_queue: ProcessQueue
    paused: bool = False
    pull_offset: int = -1
    consume_offset: int = -1
    seek_offset: int = -1


@dataclasses.dataclass(slots=True)
class LiteConsumeRequest:
    messages: list[MessageExt]
    mq: MessageQueue
    process_queue: ProcessQueue


class _RequestCache:
    """``consumeRequestCache``: a blocking FIFO that can drop one queue's requests."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: collections.deque[LiteConsumeRequest] = collections.deque()

    def put(self, req: LiteConsumeRequest) -> None:
        with self._cond:
            self._items.append(req)
            self._cond.notify()

    def get(self, timeout_s: float) -> LiteConsumeRequest | None:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not self._items:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return self._items.popleft()

    def remove_queue(self, mq: MessageQueue) -> None:
        with self._cond:
            self._items = collections.deque(r for r in self._items if r.mq != mq)

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)


class _LiteRebalance(RebalanceImpl):
    """``RebalanceLitePullImpl``: the start offset follows consume_from_where."""

    def __init__(self, consumer: LitePullConsumer, instance: MQClientInstance, store: OffsetStore) -> None:
        cfg = consumer.config
        super().__init__(instance, cfg.consumer_group, cfg.message_model, consumer.allocate_strategy)
        self._consumer = consumer
        self._store = store

    def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        owned = mq_all if self.message_model is MessageModel.BROADCASTING else mq_divided
        self._consumer.update_assigned_queues(topic, owned)

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        self._consumer.commit_queue_before_removal(mq)
        self._store.persist(mq)
        self._store.remove_offset(mq)
        return True

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return self._consumer.compute_pull_from_where(mq)


class _PullTask:
    """``PullTaskImpl``: flow control, an async pull, then reschedule."""

    def __init__(self, consumer: LitePullConsumer, mq: MessageQueue) -> None:
        self.consumer = consumer
        self.mq = mq
        self.cancelled = False

    def run(self) -> None:
        if not self.cancelled:
            self.consumer._run_pull_task(self)

    def schedule(self, delay_ms: int) -> None:
        if not self.cancelled:
            scheduler = self.consumer._scheduler
            if scheduler is not None:
                scheduler.schedule(self.run, delay_ms)


class LitePullConsumer(ServiceLifecycle):
    """A lite pull consumer (``DefaultLitePullConsumer``); ``poll`` from one thread at a time.

    ``consumer_group``/``namesrv_addr``/``message_model`` override the config fields.
    """

    def __init__(
        self,
        consumer_group: str | None = None,
        *,
        namesrv_addr: str | None = None,
        message_model: MessageModel | None = None,
        config: LitePullConsumerConfig | None = None,
        client_config: ClientConfig | None = None,
        manager: MQClientManager | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        cfg = with_overrides(
            config or LitePullConsumerConfig(), consumer_group=consumer_group, message_model=message_model
        )
        ccfg = with_overrides(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self.config = cfg
        self.client_config = ccfg
        self.allocate_strategy = allocate_strategy
        self._manager = manager or DEFAULT_MANAGER
        self._clock_ms = clock_ms
        self._lock = threading.RLock()
        self._state = ServiceState.CREATE_JUST
        self._subscription_type = SubscriptionType.NONE
        self._pending_subscriptions: dict[str, SubscriptionData] = {}
        self._assigned: dict[MessageQueue, MessageQueueState] = {}
        self._tasks: dict[MessageQueue, _PullTask] = {}
        self._cache = _RequestCache()
        self._instance: MQClientInstance | None = None
        self._store: OffsetStore | None = None
        self._wrapper: PullAPIWrapper | None = None
        self._admin: MQAdminImpl | None = None
        self._rebalance: _LiteRebalance | None = None
        self._scheduler: ScheduledExecutor | None = None
        self._next_auto_commit_ms = 0
        self._route_backoff = RouteBackoff(
            schedule=self._schedule,
            is_missing=self.is_subscribe_topic_need_update,
            refresh=self._refresh_subscribe_info,
            instance=lambda: self._instance,
            running=lambda: self._state is ServiceState.RUNNING,
            group=self.config.consumer_group,
        )

    # ================================================================== lifecycle
    @property
    def consumer_group(self) -> str:
        return self.config.consumer_group

    @property
    def state(self) -> ServiceState:
        return self._state

    def start(self) -> None:
        with self._lock:
            self._state.check_startable("consumer")
            self._state = ServiceState.START_FAILED
            cfg = self.config
            self.client_config, instance, store = start_consumer_instance(
                self._manager, self.client_config, cfg.consumer_group, cfg.message_model, cfg.offset_store_dir
            )
            self._store = store
            self._wrapper = PullAPIWrapper(instance, cfg.consumer_group)
            self._admin = instance.mq_admin_impl
            self._rebalance = _LiteRebalance(self, instance, store)
            for sd in self._pending_subscriptions.values():
                self._rebalance.add_subscription(sd)
            self._scheduler = ScheduledExecutor(
                f"{cfg.consumer_group}-lite-pull",
                threads=min(cfg.pull_thread_nums, _MAX_WORKERS),
                join_timeout_s=60.0,
            )
            register_and_start(instance, cfg.consumer_group, self)
            self._instance = instance
            self._scheduler.start()
            self._next_auto_commit_ms = self._clock_ms() + cfg.auto_commit_interval_ms
            self._state = ServiceState.RUNNING
            subscribed = list(self._pending_subscriptions)
            assigned = list(self._assigned)
        for topic in subscribed:
            self._refresh_subscribe_info(topic)
        try:
            check_client_in_broker(instance, cfg.consumer_group, list(self._pending_subscriptions.values()))
        except ClientError:
            self.shutdown()
            raise
        if subscribed:
            instance.send_heartbeat_to_all_broker_with_lock()
            instance.rebalance_immediately()
        for topic in subscribed:
            self._route_backoff.watch(topic)
        if assigned:
            self._start_pull_tasks(assigned)

    def shutdown(self) -> None:
        """Commit (auto-commit), persist offsets, unregister, and stop every thread."""
        with self._lock:
            was_running = self._state is ServiceState.RUNNING
            self._state = ServiceState.SHUTDOWN_ALREADY
            if not was_running:
                return
            tasks = list(self._tasks.values())
            self._tasks.clear()
            instance, scheduler = self._instance, self._scheduler
        for task in tasks:
            task.cancelled = True
        try:
            if self.config.auto_commit:
                self._commit_all()
            self.persist_consumer_offset()
        finally:
            if self._rebalance is not None:
                self._rebalance.destroy()
            if instance is not None:
                instance.unregister_consumer(self.config.consumer_group)
                instance.shutdown()
            if scheduler is not None:
                scheduler.shutdown()

    def _check_running(self) -> tuple[MQClientInstance, OffsetStore, PullAPIWrapper, MQAdminImpl]:
        inst, store, wrapper, admin = self._instance, self._store, self._wrapper, self._admin
        if (
            self._state is not ServiceState.RUNNING
            or inst is None
            or store is None
            or wrapper is None
            or admin is None
        ):
            raise ClientError(f"The consumer service state not OK, {self._state.name}")
        return inst, store, wrapper, admin

    # ================================================================== subscribe / assign
    def subscribe(
        self,
        topic: str,
        sub_expression: str | MessageSelector | None = "*",
        *,
        expression_type: str = "TAG",
    ) -> None:
        """Consume ``topic`` with the group's rebalancing (``subscribe``): a tag expression
        (checked as :meth:`PushConsumer.subscribe` does, ``check_tag_expression``) or a
        :class:`MessageSelector` (``MessageSelector.by_sql(...)``, broker-filtered)."""
        validate_topic(topic)
        if isinstance(sub_expression, str) and expression_type != "TAG":
            sub_expression = MessageSelector(expression_type, sub_expression)
        with self._lock:
            if self._subscription_type is SubscriptionType.ASSIGN:
                raise ClientError("Subscribe and assign are mutually exclusive.")
            self._subscription_type = SubscriptionType.SUBSCRIBE
            sd = build_subscription(topic, sub_expression, sub_version=0)
            self._pending_subscriptions[topic] = sd
            rebalance = self._rebalance
            running = self._state is ServiceState.RUNNING
        if rebalance is not None:
            rebalance.add_subscription(sd)
        if running and self._instance is not None:
            self._refresh_subscribe_info(topic)
            self._instance.send_heartbeat_to_all_broker_with_lock()
            self._instance.rebalance_immediately()
            self._route_backoff.watch(topic)

    def unsubscribe(self, topic: str) -> None:
        with self._lock:
            self._pending_subscriptions.pop(topic, None)
            rebalance = self._rebalance
        if rebalance is not None:
            rebalance.remove_subscription(topic)
        self.update_assigned_queues(topic, set())

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues, without rebalancing (``assign``)."""
        queues = set(mqs)
        if not queues:
            raise IllegalArgumentError("Message queues can not be null or empty.")
        with self._lock:
            if self._subscription_type is SubscriptionType.SUBSCRIBE:
                raise ClientError("Subscribe and assign are mutually exclusive.")
            self._subscription_type = SubscriptionType.ASSIGN
            for mq in list(self._assigned):
                if mq not in queues:
                    self._drop_queue(mq)
            for mq in queues:
                if mq not in self._assigned:
                    self._assigned[mq] = MessageQueueState(ProcessQueue(clock_ms=self._clock_ms))
            running = self._state is ServiceState.RUNNING
        if running:
            self._start_pull_tasks(queues)

    def assignment(self) -> set[MessageQueue]:
        """The queues currently owned (assigned or allocated by rebalance)."""
        with self._lock:
            return set(self._assigned)

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """Every readable queue of ``topic`` (``fetchMessageQueues``)."""
        return self._check_running()[3].fetch_subscribe_message_queues(topic)

    def _schedule(self, task: Callable[[], None], delay_ms: int) -> None:
        scheduler = self._scheduler
        if scheduler is not None:
            scheduler.schedule(task, delay_ms)

    def _refresh_subscribe_info(self, topic: str) -> None:
        inst, rebalance = self._instance, self._rebalance
        if inst is None or rebalance is None:
            return
        try:
            inst.update_topic_route_info_from_name_server(topic)
        except RocketqError as exc:
            log.warning("route of %s not available yet: %s", topic, exc)
        route = inst.topic_route_data(topic)
        if route is not None:
            rebalance.set_subscribe_info(topic, topic_route_to_subscribe_info(topic, route))

    # ------------------------------------------------------------------ rebalance callbacks
    def update_assigned_queues(self, topic: str, owned: set[MessageQueue]) -> None:
        """``updateAssignQueueAndStartPullTask``: sync the assigned table and the tasks."""
        rebalance = self._rebalance
        added: list[MessageQueue] = []
        with self._lock:
            for mq in [m for m in self._assigned if m.topic == topic and m not in owned]:
                self._drop_queue(mq)
            for mq in owned:
                if mq not in self._assigned:
                    pq = None
                    if rebalance is not None:
                        pq = rebalance.process_queue(mq)
                    self._assigned[mq] = MessageQueueState(pq or ProcessQueue(clock_ms=self._clock_ms))
                    added.append(mq)
            running = self._state is ServiceState.RUNNING
        if running and added:
            self._start_pull_tasks(added)

    def _drop_queue(self, mq: MessageQueue) -> None:
        state = self._assigned.pop(mq, None)
        if state is not None:
            state.process_queue.dropped = True
        task = self._tasks.pop(mq, None)
        if task is not None:
            task.cancelled = True
        self._cache.remove_queue(mq)

    def commit_queue_before_removal(self, mq: MessageQueue) -> None:
        """Before a rebalance takes ``mq`` away: commit what was consumed (auto-commit)."""
        if not self.config.auto_commit or self._store is None:
            return
        with self._lock:
            state = self._assigned.get(mq)
            offset = state.consume_offset if state is not None else -1
        if offset >= 0:
            self._store.update_offset(mq, offset, False)

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        store, admin = self._store, self._admin
        if store is None or admin is None:
            return -1
        return compute_pull_from_where(
            store, admin, mq, self.config.consume_from_where, self.config.consume_timestamp
        )

    # ================================================================== pull tasks
    def _start_pull_tasks(self, mqs: Iterable[MessageQueue]) -> None:
        started = []
        with self._lock:
            for mq in mqs:
                if mq in self._assigned and mq not in self._tasks:
                    task = _PullTask(self, mq)
                    self._tasks[mq] = task
                    started.append(task)
        for task in started:
            task.schedule(0)

    def _subscription_for(self, topic: str) -> SubscriptionData:
        with self._lock:
            sd = self._pending_subscriptions.get(topic)
        return sd if sd is not None else build_subscription_data(topic, "*", sub_version=0)

    def _next_pull_offset(self, mq: MessageQueue, state: MessageQueueState) -> int:
        """``nextPullOffset``: a pending seek wins, else the last pull's next offset, else the store."""
        with self._lock:
            if state.seek_offset != -1:
                offset = state.seek_offset
                state.consume_offset = offset
                state.seek_offset = -1
                return offset
            offset = state.pull_offset
        if offset == -1:
            offset = self.compute_pull_from_where(mq)
            if offset < 0:
                raise ClientError(f"Failed to fetch consume offset, queue = {mq}")
        return offset

    def _run_pull_task(self, task: _PullTask) -> None:
        cfg = self.config
        mq = task.mq
        if self._state is not ServiceState.RUNNING:
            return
        with self._lock:
            state = self._assigned.get(mq)
        if state is None:
            return
        if state.paused:
            task.schedule(DELAY_WHEN_PAUSE_MS)
            return
        pq = state.process_queue
        if pq.dropped:
            return
        if flow_controlled(cfg, len(self._cache), pq):
            task.schedule(DELAY_WHEN_FLOW_CONTROL_MS)
            return
        try:
            inst, _, wrapper, _ = self._check_running()
            offset = self._next_pull_offset(mq, state)
            sd = self._subscription_for(mq.topic)
            sys_flag = build_pull_sys_flag(
                commit_offset=False, suspend=True, subscription=True, lite_pull=True
            )
            fut = wrapper.pull_kernel_impl_async(
                mq,
                sd.sub_string,
                sd.expression_type,
                0,
                offset,
                cfg.pull_batch_size,
                sys_flag,
                0,
                cfg.broker_suspend_max_time_ms,
                cfg.consumer_timeout_millis_when_suspend_ms,
            )
        except RocketqError as exc:
            log.warning("pull of %s failed: %s", mq, exc)
            task.schedule(self.client_config.pull_time_delay_mills_when_exception_ms)
            return

        def on_io(f: concurrent.futures.Future[PullResult]) -> None:
            with contextlib.suppress(RuntimeError, ClientError):  # shutting down
                inst.callback_executor().submit(self._on_pull_result, task, state, sd, f)

        fut.add_done_callback(on_io)

    def _on_pull_result(
        self,
        task: _PullTask,
        state: MessageQueueState,
        sd: SubscriptionData,
        fut: concurrent.futures.Future[PullResult],
    ) -> None:
        if task.cancelled or self._state is not ServiceState.RUNNING:
            return
        mq = task.mq
        wrapper = self._wrapper
        exc = fut.exception()
        if exc is not None or wrapper is None:
            log.warning("pull of %s failed: %s", mq, exc)
            task.schedule(self.client_config.pull_time_delay_mills_when_exception_ms)
            return
        try:
            result = wrapper.process_pull_result(mq, fut.result(), sd)
        except RocketqError as err:
            log.warning("pull result of %s unreadable: %s", mq, err)
            task.schedule(self.client_config.pull_time_delay_mills_when_exception_ms)
            return
        with self._lock:
            if task.cancelled or state.process_queue.dropped or state.seek_offset != -1:
                # a seek or a rebalance happened meanwhile: this answer is stale
                task.schedule(0)
                return
            if result.pull_status is PullStatus.FOUND and result.msg_found_list:
                state.process_queue.put_messages(result.msg_found_list)
                self._cache.put(LiteConsumeRequest(result.msg_found_list, mq, state.process_queue))
            elif result.pull_status is PullStatus.OFFSET_ILLEGAL:
                log.warning("the pull request offset of %s is illegal: %s", mq, result)
            state.pull_offset = result.next_begin_offset
        task.schedule(0)

    # ================================================================== poll / seek / commit
    def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """The next batch of messages of one queue, or ``[]`` after ``timeout_ms`` (default 5 s)."""
        self._check_running()
        with self._lock:
            if self._subscription_type is SubscriptionType.NONE:
                raise ClientError("The consumer not subscribe any topic yet")
        if self.config.auto_commit:
            self._maybe_auto_commit()
        timeout = self.config.poll_timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + timeout / 1000.0
        while True:
            remaining = deadline - time.monotonic()
            req = self._cache.get(max(remaining, 0.0))
            if req is None:
                return []
            if req.process_queue.dropped:
                continue
            with self._lock:
                state = self._assigned.get(req.mq)
                if state is None or state.process_queue is not req.process_queue:
                    continue
                offset = req.process_queue.remove_messages(req.messages)
                if offset >= 0:
                    state.consume_offset = offset
            return req.messages

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue ``mq`` at ``offset`` (between its min and max offset)."""
        _, _, _, admin = self._check_running()
        with self._lock:
            if mq not in self._assigned:
                raise IllegalArgumentError(
                    f"The message queue is not in assigned list, may be rebalancing, message queue: {mq}"
                )
        lo, hi = admin.min_offset(mq), admin.max_offset(mq)
        if not lo <= offset <= hi:
            raise IllegalArgumentError(
                f"Seek offset illegal, seek offset = {offset}, min offset = {lo}, max offset = {hi}"
            )
        with self._lock:
            state = self._assigned.get(mq)
            if state is None:
                raise IllegalArgumentError(f"The message queue is not in assigned list: {mq}")
            state.process_queue.clear()
            self._cache.remove_queue(mq)
            state.seek_offset = offset
            old = self._tasks.pop(mq, None)
            if old is not None:
                old.cancelled = True
        self._start_pull_tasks([mq])

    def seek_to_begin(self, mq: MessageQueue) -> None:
        self.seek(mq, self._check_running()[3].min_offset(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        self.seek(mq, self._check_running()[3].max_offset(mq))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self._check_running()[3].search_offset(mq, timestamp_ms)

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        with self._lock:
            for mq in mqs:
                state = self._assigned.get(mq)
                if state is not None:
                    state.paused = True

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        with self._lock:
            for mq in mqs:
                state = self._assigned.get(mq)
                if state is not None:
                    state.paused = False

    def committed(self, mq: MessageQueue) -> int:
        """The offset stored for ``mq`` (broker or file); -1 when there is none."""
        return self._check_running()[1].read_offset(mq, ReadOffsetType.READ_FROM_STORE)

    def _maybe_auto_commit(self) -> None:
        now = self._clock_ms()
        if now >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now + self.config.auto_commit_interval_ms
            self._commit_all()

    def _commit_all(self) -> dict[MessageQueue, int]:
        """``commitAll``: consumed offsets -> the offset store's memory (BROADCASTING: the file)."""
        store = self._store
        if store is None:
            return {}
        with self._lock:
            offsets = {
                mq: st.consume_offset
                for mq, st in self._assigned.items()
                if st.consume_offset != -1 and not st.process_queue.dropped
            }
        for mq, offset in offsets.items():
            store.update_offset(mq, offset, False)
        if self.config.message_model is MessageModel.BROADCASTING and offsets:
            store.persist_all(offsets)
        return offsets

    def commit_sync(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit consumed offsets (or ``offsets``) and write them through before returning.

        CLUSTERING: acknowledged UPDATE_CONSUMER_OFFSET per queue to its master (raises the
        first failure after trying every queue); BROADCASTING: the local offsets file.
        """
        _, store, _, _ = self._check_running()
        if offsets is not None:
            with self._lock:
                for mq, offset in offsets.items():
                    if offset < 0:
                        raise IllegalArgumentError(f"offset < 0 for {mq}")
                    store.update_offset(mq, offset, False)
                    state = self._assigned.get(mq)
                    if state is not None:
                        state.consume_offset = offset
            written = dict(offsets)
            written.update(self._commit_all())
        else:
            written = self._commit_all()
        if self.config.message_model is MessageModel.BROADCASTING:
            store.persist_all(written)
            return
        first: RocketqError | None = None
        for mq, offset in written.items():
            try:
                store.update_consume_offset_to_broker(mq, offset, False)
            except RocketqError as exc:
                first = first or exc
        if first is not None:
            raise first

    # ================================================================== MQConsumerInner
    def group_name(self) -> str:
        return self.config.consumer_group

    def message_model(self) -> MessageModel:
        return self.config.message_model

    def consume_type(self) -> ConsumeType:
        return ConsumeType.CONSUME_ACTIVELY

    def consume_from_where(self) -> ConsumeFromWhere:
        return self.config.consume_from_where

    def subscriptions(self) -> list[SubscriptionData]:
        rebalance = self._rebalance
        return rebalance.subscriptions() if rebalance is not None else []

    def do_rebalance(self) -> None:
        rebalance = self._rebalance
        if rebalance is not None and self._state is ServiceState.RUNNING:
            rebalance.do_rebalance(False)

    def persist_consumer_offset(self) -> None:
        store = self._store
        if store is None:
            return
        with self._lock:
            mqs = set(self._assigned)
        store.persist_all(mqs)

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None:
        rebalance = self._rebalance
        if rebalance is not None:
            rebalance.set_subscribe_info(topic, info)

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        rebalance = self._rebalance
        return rebalance is not None and rebalance.is_subscribe_info_missing(topic)

    def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """A lite pull consumer serves no broker request (answered "not supported")."""
        return request_not_supported(request)
