"""AsyncLitePullConsumer: ``subscribe``/``assign`` + ``await poll()`` / ``async for`` + ``seek`` + ``commit``.

The asyncio counterpart of :class:`rocketq.client.consumer.lite_pull.LitePullConsumer` (Java's
``DefaultLitePullConsumerImpl``, ``AssignedMessageQueue``, ``RebalanceLitePullImpl``).

How it works: one pull task per owned queue runs on the caller's loop. It applies the same
flow control as the blocking consumer (``pull_threshold_for_all`` cached messages,
``pull_threshold_for_queue`` / ``pull_threshold_size_for_queue_mib`` / ``consume_max_span`` per
queue, checked on the shared :class:`~rocketq.client.consumer.process_queue.ProcessQueue`), then
awaits a long-polling pull (sysFlag SUSPEND|SUBSCRIPTION|LITE_PULL) and queues the batch for
:meth:`AsyncLitePullConsumer.poll`. ``poll`` returns one queue's batch and advances that queue's
consumed offset; with ``auto_commit`` consumed offsets go to the offset store every
``auto_commit_interval_ms`` (checked in ``poll``), are persisted by the instance's persist task
and at shutdown. ``seek`` drops what is cached for the queue and restarts its task.

``commit`` writes through (acknowledged UPDATE_CONSUMER_OFFSET per queue, or the local file for
BROADCASTING), like the blocking consumer's ``commit_sync``. Shutdown is cancellation-safe: the
pull tasks are cancelled and awaited, offsets committed and persisted, the client unregistered.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence

from rocketq.aio.instance import AsyncClientInstance
from rocketq.aio.offset_store import AsyncLocalOffsetStore, AsyncOffsetStore, AsyncRemoteOffsetStore
from rocketq.aio.rebalance import AsyncPullAPIWrapper, AsyncRebalance, compute_pull_from_where
from rocketq.aio.remoting import RequestHook, wait_event
from rocketq.client.api_results import PullStatus
from rocketq.client.config import (
    ClientConfig,
    LitePullConsumerConfig,
    SubscriptionType,
    change_instance_name_to_pid,
    validate_topic,
    with_overrides,
)
from rocketq.client.consumer.allocate import AllocateMessageQueueStrategy
from rocketq.client.consumer.lite_pull import (
    DELAY_WHEN_FLOW_CONTROL_MS,
    DELAY_WHEN_PAUSE_MS,
    LiteConsumeRequest,
    MessageQueueState,
    flow_controlled,
)
from rocketq.client.consumer.offset_store import LocalFileOffsetStore, ReadOffsetType
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.impl.pull_api_wrapper import build_pull_sys_flag
from rocketq.client.impl.topic_route import topic_route_to_subscribe_info
from rocketq.client.instance import request_not_supported
from rocketq.client.message_selector import MessageSelector, build_subscription
from rocketq.common.service_state import ServiceState
from rocketq.errors import ClientError, IllegalArgumentError, RocketqError
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import (
    ConsumerData,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue

__all__ = ["AsyncLitePullConsumer"]

log = logging.getLogger(__name__)

_DELAY_WHEN_PAUSE_S = DELAY_WHEN_PAUSE_MS / 1000.0
_DELAY_WHEN_FLOW_CONTROL_S = DELAY_WHEN_FLOW_CONTROL_MS / 1000.0


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def open_consumer(
    client_config: ClientConfig,
    group: str,
    model: MessageModel,
    store_dir: str | None,
    request_hooks: Sequence[RequestHook],
) -> tuple[ClientConfig, AsyncClientInstance, AsyncOffsetStore, AsyncPullAPIWrapper]:
    """What every asyncio consumer starts with: its client config (CLUSTERING consumers replace
    the ``DEFAULT`` instance name with ``<pid>#<ns>``, as Java 4.9), its client instance (not
    started), its offset store (the broker for CLUSTERING, a local file for BROADCASTING) and
    its pull wrapper."""
    if model is MessageModel.CLUSTERING:
        client_config = dataclasses.replace(
            client_config, instance_name=change_instance_name_to_pid(client_config.instance_name)
        )
    instance = AsyncClientInstance(
        client_config, client_config.build_client_id(), request_hooks=request_hooks
    )
    store: AsyncOffsetStore
    if model is MessageModel.BROADCASTING:
        store = AsyncLocalOffsetStore(LocalFileOffsetStore(instance.client_id, group, store_dir=store_dir))
    else:
        store = AsyncRemoteOffsetStore(instance, group)
    return client_config, instance, store, AsyncPullAPIWrapper(instance, group)


class AsyncLitePullConsumer:
    """A lite pull consumer on the running loop; ``poll`` from one task at a time.

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
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        request_hooks: Sequence[RequestHook] = (),
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        cfg = with_overrides(
            config or LitePullConsumerConfig(), consumer_group=consumer_group, message_model=message_model
        )
        ccfg = with_overrides(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self.config = cfg
        self.client_config = ccfg
        self.allocate_strategy = allocate_strategy
        self._hooks = tuple(request_hooks)
        self._clock_ms = clock_ms
        self._state = ServiceState.CREATE_JUST
        self._subscription_type = SubscriptionType.NONE
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._assigned: dict[MessageQueue, MessageQueueState] = {}
        self._tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._cache: collections.deque[LiteConsumeRequest] = collections.deque()
        self._cache_event: asyncio.Event | None = None
        self._iter_buffer: collections.deque[MessageExt] = collections.deque()
        self._instance: AsyncClientInstance | None = None
        self._store: AsyncOffsetStore | None = None
        self._wrapper: AsyncPullAPIWrapper | None = None
        self._rebalance: AsyncRebalance | None = None
        self._next_auto_commit_ms = 0

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

    async def start(self) -> None:
        self._state.check_startable("consumer")
        self._state = ServiceState.START_FAILED
        cfg = self.config
        self.client_config, instance, self._store, self._wrapper = open_consumer(
            self.client_config, cfg.consumer_group, cfg.message_model, cfg.offset_store_dir, self._hooks
        )
        self._rebalance = AsyncRebalance(
            instance,
            cfg.consumer_group,
            cfg.message_model,
            self.allocate_strategy,
            passive=False,
            start_offset=self._compute_pull_from_where,
            remove_queue=self._remove_queue,
            added=lambda mq, pq, offset: None,
            queues_changed=self._update_assigned_queues,
            clock_ms=self._clock_ms,
        )
        self._rebalance.subscription_inner.update(self._subscriptions)
        self._cache_event = asyncio.Event()
        instance.consumer = (cfg.consumer_group, self)
        await instance.start()
        self._instance = instance
        self._next_auto_commit_ms = self._clock_ms() + cfg.auto_commit_interval_ms
        self._state = ServiceState.RUNNING
        for topic in list(self._subscriptions):
            await self._subscribed(topic)
        self._start_pull_tasks(list(self._assigned))

    async def shutdown(self) -> None:
        """Cancel the pull tasks, commit (auto-commit) and persist offsets, unregister, close."""
        was_running = self._state is ServiceState.RUNNING
        self._state = ServiceState.SHUTDOWN_ALREADY
        if not was_running:
            return
        if self._instance is not None:
            await self._instance.stop_rebalance()
        tasks = [*self._tasks.values(), *self._side_tasks]
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            if self.config.auto_commit:
                self._commit_all()
            await self.persist_consumer_offset()
        finally:
            if self._instance is not None:
                await self._instance.close()

    async def __aenter__(self) -> AsyncLitePullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def _running(self) -> tuple[AsyncClientInstance, AsyncOffsetStore, AsyncPullAPIWrapper]:
        inst, store, wrapper = self._instance, self._store, self._wrapper
        if self._state is not ServiceState.RUNNING or inst is None or store is None or wrapper is None:
            raise ClientError(f"The consumer service state not OK, {self._state.name}")
        return inst, store, wrapper

    # ================================================================== subscribe / assign
    def subscribe(
        self,
        topic: str,
        sub_expression: str | MessageSelector | None = "*",
        *,
        expression_type: str = "TAG",
    ) -> None:
        """Consume ``topic`` with the group's rebalancing (``subscribe``): a tag expression or a
        :class:`MessageSelector`, as ``LitePullConsumer.subscribe``."""
        validate_topic(topic)
        if isinstance(sub_expression, str) and expression_type != "TAG":
            sub_expression = MessageSelector(expression_type, sub_expression)
        if self._subscription_type is SubscriptionType.ASSIGN:
            raise ClientError("Subscribe and assign are mutually exclusive.")
        self._subscription_type = SubscriptionType.SUBSCRIBE
        sd = build_subscription(topic, sub_expression, sub_version=0)
        self._subscriptions[topic] = sd
        if self._rebalance is not None:
            self._rebalance.subscription_inner[topic] = sd
        if self._state is ServiceState.RUNNING:
            self._side_task(self._subscribed(topic))

    async def _subscribed(self, topic: str) -> None:
        inst = self._running()[0]
        try:
            await inst.update_route(topic)
        except RocketqError as exc:
            log.warning("route of %s not available yet: %s", topic, exc)
        await inst.send_heartbeat_to_all_brokers()
        inst.rebalance_immediately()
        reb = self._rebalance
        if reb is not None and topic not in reb.topic_subscribe_info_table:
            # subscribed before the topic exists: look again on the shared backoff
            self._side_task(inst.await_route(topic, lambda: topic in reb.topic_subscribe_info_table))

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        if self._rebalance is not None:
            self._rebalance.subscription_inner.pop(topic, None)
            self._rebalance.topic_subscribe_info_table.pop(topic, None)
        self._update_assigned_queues(topic, set(), set())

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues, without rebalancing (``assign``)."""
        queues = set(mqs)
        if not queues:
            raise IllegalArgumentError("Message queues can not be null or empty.")
        if self._subscription_type is SubscriptionType.SUBSCRIBE:
            raise ClientError("Subscribe and assign are mutually exclusive.")
        self._subscription_type = SubscriptionType.ASSIGN
        for mq in list(self._assigned):
            if mq not in queues:
                self._drop_queue(mq)
        for mq in queues:
            if mq not in self._assigned:
                self._assigned[mq] = MessageQueueState(ProcessQueue(clock_ms=self._clock_ms))
        if self._state is ServiceState.RUNNING:
            self._start_pull_tasks(queues)

    def assignment(self) -> set[MessageQueue]:
        """The queues currently owned (assigned or allocated by rebalance)."""
        return set(self._assigned)

    async def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """Every readable queue of ``topic`` (``fetchMessageQueues``)."""
        inst = self._running()[0]
        route = await inst.api.get_topic_route(topic, self.client_config.mq_client_api_timeout_ms)
        if route is None:
            raise ClientError(f"Can not find Message Queue for this topic, {topic}")
        return topic_route_to_subscribe_info(topic, route)

    # ------------------------------------------------------------------ rebalance hooks
    def _update_assigned_queues(
        self, topic: str, mq_all: set[MessageQueue], owned: set[MessageQueue]
    ) -> None:
        """``updateAssignQueueAndStartPullTask``: sync the assigned table and the tasks."""
        if self.config.message_model is MessageModel.BROADCASTING:
            owned = mq_all
        for mq in [m for m in self._assigned if m.topic == topic and m not in owned]:
            self._drop_queue(mq)
        added = []
        table = self._rebalance.process_queue_table if self._rebalance is not None else {}
        for mq in owned:
            if mq not in self._assigned:
                pq = table.get(mq) or ProcessQueue(clock_ms=self._clock_ms)
                self._assigned[mq] = MessageQueueState(pq)
                added.append(mq)
        if self._state is ServiceState.RUNNING:
            self._start_pull_tasks(added)

    async def _remove_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Before a rebalance takes ``mq`` away: commit what was consumed, persist, forget."""
        store = self._store
        if store is None:
            return True
        state = self._assigned.get(mq)
        if self.config.auto_commit and state is not None and state.consume_offset >= 0:
            store.update_offset(mq, state.consume_offset, False)
        await store.persist(mq)
        store.remove_offset(mq)
        return True

    async def _compute_pull_from_where(self, mq: MessageQueue) -> int:
        inst, store, _ = self._running()
        return await compute_pull_from_where(
            inst, store, mq, self.config.consume_from_where, self.config.consume_timestamp
        )

    def _drop_queue(self, mq: MessageQueue) -> None:
        state = self._assigned.pop(mq, None)
        if state is not None:
            state.process_queue.dropped = True
        task = self._tasks.pop(mq, None)
        if task is not None:
            task.cancel()
        self._remove_cached(mq)

    def _remove_cached(self, mq: MessageQueue) -> None:
        self._cache = collections.deque(r for r in self._cache if r.mq != mq)

    # ================================================================== pull tasks
    def _side_task(self, coro: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _start_pull_tasks(self, mqs: Iterable[MessageQueue]) -> None:
        loop = asyncio.get_running_loop()
        for mq in mqs:
            if mq in self._assigned and mq not in self._tasks:
                self._tasks[mq] = loop.create_task(
                    self._pull_loop(mq), name=f"{self.consumer_group}-pull-{mq}"
                )

    def _subscription_for(self, topic: str) -> SubscriptionData:
        sd = self._subscriptions.get(topic)
        return sd if sd is not None else build_subscription_data(topic, "*", sub_version=0)

    async def _next_pull_offset(self, mq: MessageQueue, state: MessageQueueState) -> int:
        """``nextPullOffset``: a pending seek wins, else the last pull's next offset, else the store."""
        if state.seek_offset != -1:
            offset = state.seek_offset
            state.consume_offset = offset
            state.seek_offset = -1
            return offset
        offset = state.pull_offset
        if offset == -1:
            offset = await self._compute_pull_from_where(mq)
            if offset < 0:
                raise ClientError(f"Failed to fetch consume offset, queue = {mq}")
        return offset

    async def _pull_loop(self, mq: MessageQueue) -> None:
        cfg = self.config
        sys_flag = build_pull_sys_flag(commit_offset=False, suspend=True, subscription=True, lite_pull=True)
        error_delay_s = self.client_config.pull_time_delay_mills_when_exception_ms / 1000.0
        while self._state is ServiceState.RUNNING:
            state = self._assigned.get(mq)
            if state is None or state.process_queue.dropped:
                return
            pq = state.process_queue
            if state.paused:
                await asyncio.sleep(_DELAY_WHEN_PAUSE_S)
                continue
            if flow_controlled(cfg, len(self._cache), pq):
                await asyncio.sleep(_DELAY_WHEN_FLOW_CONTROL_S)
                continue
            try:
                _, _, wrapper = self._running()
                offset = await self._next_pull_offset(mq, state)
                result = await wrapper.pull(
                    mq,
                    self._subscription_for(mq.topic),
                    offset,
                    cfg.pull_batch_size,
                    sys_flag,
                    0,
                    cfg.broker_suspend_max_time_ms,
                    cfg.consumer_timeout_millis_when_suspend_ms,
                )
            except RocketqError as exc:
                log.warning("pull of %s failed: %s", mq, exc)
                await asyncio.sleep(error_delay_s)
                continue
            if pq.dropped or state.seek_offset != -1:
                continue  # a seek or a rebalance happened meanwhile: this answer is stale
            if result.pull_status is PullStatus.FOUND and result.msg_found_list:
                pq.put_messages(result.msg_found_list)
                self._cache.append(LiteConsumeRequest(result.msg_found_list, mq, pq))
                if self._cache_event is not None:
                    self._cache_event.set()
            elif result.pull_status is PullStatus.OFFSET_ILLEGAL:
                log.warning("the pull request offset of %s is illegal: %s", mq, result)
            state.pull_offset = result.next_begin_offset

    # ================================================================== poll / seek / commit
    async def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """The next batch of messages of one queue, or ``[]`` after ``timeout_ms`` (default 5 s)."""
        self._running()
        if self._subscription_type is SubscriptionType.NONE:
            raise ClientError("The consumer not subscribe any topic yet")
        if self.config.auto_commit:
            self._maybe_auto_commit()
        timeout = self.config.poll_timeout_ms if timeout_ms is None else timeout_ms
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout / 1000.0
        event = self._cache_event
        assert event is not None
        while True:
            while self._cache:
                req = self._cache.popleft()
                state = self._assigned.get(req.mq)
                if req.process_queue.dropped or state is None or state.process_queue is not req.process_queue:
                    continue
                offset = req.process_queue.remove_messages(req.messages)
                if offset >= 0:
                    state.consume_offset = offset
                return req.messages
            event.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            await wait_event(event, remaining)

    def __aiter__(self) -> AsyncIterator[MessageExt]:
        return self

    async def __anext__(self) -> MessageExt:
        """``async for msg in consumer``: one message at a time, until the consumer shuts down."""
        while not self._iter_buffer:
            if self._state is not ServiceState.RUNNING:
                raise StopAsyncIteration
            self._iter_buffer.extend(await self.poll())
        return self._iter_buffer.popleft()

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue ``mq`` at ``offset`` (between its min and max offset)."""
        inst = self._running()[0]
        if mq not in self._assigned:
            raise IllegalArgumentError(
                f"The message queue is not in assigned list, may be rebalancing, message queue: {mq}"
            )
        addr = await inst.master_of(mq)
        timeout = self.client_config.mq_client_api_timeout_ms
        lo = await inst.api.get_min_offset(addr, mq, timeout)
        hi = await inst.api.get_max_offset(addr, mq, timeout)
        if not lo <= offset <= hi:
            raise IllegalArgumentError(
                f"Seek offset illegal, seek offset = {offset}, min offset = {lo}, max offset = {hi}"
            )
        state = self._assigned.get(mq)
        if state is None:
            raise IllegalArgumentError(f"The message queue is not in assigned list: {mq}")
        state.process_queue.clear()
        self._remove_cached(mq)
        self._iter_buffer = collections.deque(
            m for m in self._iter_buffer if m.queue_id != mq.queue_id or m.topic != mq.topic
        )
        state.seek_offset = offset
        old = self._tasks.pop(mq, None)
        if old is not None:
            old.cancel()
        self._start_pull_tasks([mq])

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in mqs:
            state = self._assigned.get(mq)
            if state is not None:
                state.paused = True

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in mqs:
            state = self._assigned.get(mq)
            if state is not None:
                state.paused = False

    async def committed(self, mq: MessageQueue) -> int:
        """The offset stored for ``mq`` (broker or file); -1 when there is none."""
        return await self._running()[1].read_offset(mq, ReadOffsetType.READ_FROM_STORE)

    def _maybe_auto_commit(self) -> None:
        now = self._clock_ms()
        if now >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now + self.config.auto_commit_interval_ms
            self._commit_all()

    def _commit_all(self) -> dict[MessageQueue, int]:
        """``commitAll``: consumed offsets -> the offset store's memory."""
        store = self._store
        if store is None:
            return {}
        offsets = {
            mq: st.consume_offset
            for mq, st in self._assigned.items()
            if st.consume_offset != -1 and not st.process_queue.dropped
        }
        for mq, offset in offsets.items():
            store.update_offset(mq, offset, False)
        return offsets

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit consumed offsets (or ``offsets``) and write them through before returning.

        CLUSTERING: acknowledged UPDATE_CONSUMER_OFFSET per queue to its master (raises the
        first failure after trying every queue); BROADCASTING: the local offsets file.
        """
        _, store, _ = self._running()
        written = self._commit_all()
        if offsets is not None:
            for mq, offset in offsets.items():
                if offset < 0:
                    raise IllegalArgumentError(f"offset < 0 for {mq}")
                store.update_offset(mq, offset, False)
                state = self._assigned.get(mq)
                if state is not None:
                    state.consume_offset = offset
                written[mq] = offset
        if self.config.message_model is MessageModel.BROADCASTING:
            await store.persist_all(written)
            return
        first: RocketqError | None = None
        for mq, offset in written.items():
            try:
                await store.update_consume_offset_to_broker(mq, offset, False)
            except RocketqError as exc:
                first = first or exc
        if first is not None:
            raise first

    # ================================================================== AsyncConsumerInner
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.config.consumer_group,
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            message_model=self.config.message_model,
            consume_from_where=self.config.consume_from_where,
            subscription_data_set=list(self._subscriptions.values()),
        )

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None:
        if self._rebalance is not None:
            self._rebalance.set_subscribe_info(topic, info)

    async def do_rebalance(self) -> None:
        if (
            self._rebalance is not None
            and self._state is ServiceState.RUNNING
            and self._subscription_type is SubscriptionType.SUBSCRIBE
        ):
            await self._rebalance.do_rebalance(False)

    async def persist_consumer_offset(self) -> None:
        if self._store is not None:
            await self._store.persist_all(set(self._assigned))

    async def process_broker_request(self, request: RemotingCommand, addr: str) -> RemotingCommand | None:
        """The lite pull consumer answers no broker request (as the blocking one)."""
        return request_not_supported(request)
