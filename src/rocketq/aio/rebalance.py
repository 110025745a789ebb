"""Rebalancing and pulling for the asyncio consumers.

:class:`AsyncRebalance` mirrors ``RebalanceImpl`` on the event loop. The decisions are the
blocking client's: allocation by :func:`rocketq.client.consumer.allocate.allocate` (the same
strategies), the drop/add diff by :func:`rocketq.client.consumer.rebalance.rebalance_diff`, the
start offset of a queue without a stored offset by
:func:`rocketq.client.consumer.rebalance.start_without_offset`, process queues are
:class:`~rocketq.client.consumer.process_queue.ProcessQueue`. Only the I/O between them
(consumer id list, offsets, LOCK_BATCH_MQ/UNLOCK_BATCH_MQ) is awaited here.

:class:`AsyncPullAPIWrapper` mirrors ``PullAPIWrapper``: the broker to ask per queue (the
suggested broker id of the last answer), the PULL_MESSAGE header, decoding and the client-side
tag re-filter (:func:`rocketq.client.impl.pull_api_wrapper.build_pull_header` and
:func:`~rocketq.client.impl.pull_api_wrapper.decode_pull_result`, shared with ``PullAPIWrapper``).

Invariants: as ``RebalanceImpl`` — ``process_queue_table`` holds exactly the owned queues;
the owner's ``queues_changed`` hook runs only when a topic's owned set changed; orderly
consumers take a new queue only after LOCK_BATCH_MQ granted it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from rocketq.aio.instance import AsyncClientInstance
from rocketq.aio.offset_store import AsyncOffsetStore
from rocketq.client.api_results import PullResult
from rocketq.client.consumer.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueStrategy,
    allocate,
)
from rocketq.client.consumer.offset_store import ReadOffsetType
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.rebalance import (
    START_MAX,
    START_SEARCH,
    rebalance_diff,
    start_without_offset,
)
from rocketq.client.impl.pull_api_wrapper import build_pull_header, decode_pull_result
from rocketq.errors import ClientError, RocketqError
from rocketq.protocol.codes import PullSysFlag
from rocketq.protocol.heartbeat import ConsumeFromWhere, MessageModel, SubscriptionData
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import MASTER_ID, RETRY_GROUP_TOPIC_PREFIX

__all__ = ["AsyncPullAPIWrapper", "AsyncRebalance", "compute_pull_from_where"]

log = logging.getLogger(__name__)

#: ``RebalanceImpl`` lock/unlock RPC timeout.
_LOCK_TIMEOUT_MS = 1000


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


async def compute_pull_from_where(
    instance: AsyncClientInstance,
    store: AsyncOffsetStore,
    mq: MessageQueue,
    consume_from_where: ConsumeFromWhere,
    consume_timestamp: str | None,
) -> int:
    """``computePullFromWhere`` (4.9.7); -1 = not now. A stored offset always wins."""
    last = await store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
    if last >= 0:
        return last
    if last != -1:
        return -1
    kind, value = start_without_offset(mq, consume_from_where, consume_timestamp)
    if kind not in (START_MAX, START_SEARCH):
        return value
    try:
        addr = await instance.master_of(mq)
        timeout = instance.config.mq_client_api_timeout_ms
        if kind == START_MAX:
            return await instance.api.get_max_offset(addr, mq, timeout)
        return await instance.api.search_offset(addr, mq, value, timeout)
    except RocketqError as exc:
        log.warning("compute pull offset of %s failed: %s", mq, exc)
        return -1


class AsyncRebalance:
    """``RebalanceImpl`` on the loop. The owner supplies the hooks as callables:

    ``queues_changed(topic, mq_all, owned)`` after the owned set of a topic changed;
    ``remove_queue(mq, pq) -> bool`` before a queue is forgotten (commit, persist, unlock);
    ``start_offset(mq) -> int`` for a newly owned queue (negative: skip it this round);
    ``added(mq, pq, offset)`` once a new queue is in the table.
    """

    def __init__(
        self,
        instance: AsyncClientInstance,
        consumer_group: str,
        message_model: MessageModel,
        strategy: AllocateMessageQueueStrategy | None,
        *,
        passive: bool,
        start_offset: Callable[[MessageQueue], Awaitable[int]],
        remove_queue: Callable[[MessageQueue, ProcessQueue], Awaitable[bool]],
        added: Callable[[MessageQueue, ProcessQueue, int], None],
        queues_changed: Callable[[str, set[MessageQueue], set[MessageQueue]], None] | None = None,
        clock_ms: Callable[[], int] = _now_ms,
        lock_max_live_time_ms: int = 30_000,
    ) -> None:
        self.instance = instance
        self.consumer_group = consumer_group
        self.message_model = message_model
        self.strategy = strategy or AllocateMessageQueueAveragely()
        self.passive = passive
        self._start_offset = start_offset
        self._remove_queue = remove_queue
        self._added = added
        self._queues_changed = queues_changed
        self._clock_ms = clock_ms
        self._lock_max_live_time_ms = lock_max_live_time_ms
        self.subscription_inner: dict[str, SubscriptionData] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.topic_subscribe_info_table: dict[str, set[MessageQueue]] = {}

    def subscriptions(self) -> list[SubscriptionData]:
        return list(self.subscription_inner.values())

    def set_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        if topic in self.subscription_inner:
            self.topic_subscribe_info_table[topic] = set(mqs)

    def new_process_queue(self) -> ProcessQueue:
        return ProcessQueue(clock_ms=self._clock_ms, lock_max_live_time_ms=self._lock_max_live_time_ms)

    # ------------------------------------------------------------------ rebalance
    async def do_rebalance(self, is_order: bool = False) -> None:
        for sd in self.subscriptions():
            topic = sd.topic
            if topic is None:
                continue
            try:
                await self.rebalance_by_topic(topic, is_order)
            except RocketqError as exc:
                if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    log.warning("rebalance of %s/%s failed: %s", self.consumer_group, topic, exc)
        for mq in list(self.process_queue_table):
            if mq.topic not in self.subscription_inner:
                self.process_queue_table.pop(mq).dropped = True

    async def rebalance_by_topic(self, topic: str, is_order: bool) -> bool:
        info = self.topic_subscribe_info_table.get(topic)
        if info is None:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("doRebalance, %s, but the topic[%s] not exist.", self.consumer_group, topic)
            return False
        mq_set = set(info)
        if self.message_model is MessageModel.BROADCASTING:
            divided = mq_set
        else:
            cid_all = await self.instance.find_consumer_id_list(topic, self.consumer_group)
            if not cid_all:
                log.warning("doRebalance, %s %s, get consumer id list failed", self.consumer_group, topic)
                return False
            divided = set(
                allocate(self.strategy, self.consumer_group, self.instance.client_id, mq_set, cid_all)
            )
        changed = await self._update_table(topic, divided, is_order)
        if changed and self._queues_changed is not None:
            self._queues_changed(topic, mq_set, divided)
        return changed

    async def _update_table(self, topic: str, mq_set: set[MessageQueue], is_order: bool) -> bool:
        """``updateProcessQueueTableInRebalance`` with the shared :func:`rebalance_diff`."""
        changed = False
        to_drop, to_add = rebalance_diff(self.process_queue_table, topic, mq_set, passive=self.passive)
        for mq, pq in to_drop:
            pq.dropped = True
            if await self._remove_queue(mq, pq):
                if self.process_queue_table.get(mq) is pq:
                    del self.process_queue_table[mq]
                changed = True
        for mq in to_add:
            if mq in self.process_queue_table:
                continue
            if is_order and not await self.lock(mq):
                log.warning("doRebalance, %s, add a new mq failed, %s, lock failed", self.consumer_group, mq)
                continue
            pq = self.new_process_queue()
            if is_order:
                pq.locked = True
                pq.last_lock_timestamp = self._clock_ms()
            offset = await self._start_offset(mq)
            if offset < 0 or mq in self.process_queue_table:
                continue
            self.process_queue_table[mq] = pq
            self._added(mq, pq, offset)
            changed = True
        return changed

    async def destroy(self) -> None:
        """Drop every queue (consumer shutdown), through the owner's ``remove_queue``."""
        table, self.process_queue_table = self.process_queue_table, {}
        for mq, pq in table.items():
            pq.dropped = True
            await self._remove_queue(mq, pq)

    # ------------------------------------------------------------------ orderly locks
    def _master(self, broker_name: str) -> str | None:
        found = self.instance.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        return found.broker_addr if found is not None else None

    async def lock(self, mq: MessageQueue) -> bool:
        """LOCK_BATCH_MQ for one queue; True when this client holds it now."""
        addr = self._master(mq.broker_name)
        if addr is None:
            return False
        inst = self.instance
        try:
            locked = await inst.api.lock_batch_mq(
                addr, self.consumer_group, inst.client_id, [mq], _LOCK_TIMEOUT_MS
            )
        except RocketqError as exc:
            log.warning("lock %s failed: %s", mq, exc)
            return False
        now = self._clock_ms()
        for lmq in locked:
            pq = self.process_queue_table.get(lmq)
            if pq is not None:
                pq.locked = True
                pq.last_lock_timestamp = now
        return mq in locked

    def _by_broker(self) -> dict[str, set[MessageQueue]]:
        out: dict[str, set[MessageQueue]] = {}
        for mq in self.process_queue_table:
            out.setdefault(mq.broker_name, set()).add(mq)
        return out

    async def lock_all(self) -> None:
        """``lockAll``: renew every owned queue's lock, broker by broker."""
        inst = self.instance
        for broker_name, mqs in self._by_broker().items():
            addr = self._master(broker_name)
            if addr is None:
                continue
            try:
                locked = await inst.api.lock_batch_mq(
                    addr, self.consumer_group, inst.client_id, sorted(mqs), _LOCK_TIMEOUT_MS
                )
            except RocketqError as exc:
                log.warning("lockAll on %s failed: %s", broker_name, exc)
                continue
            now = self._clock_ms()
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is not None:
                    pq.locked = mq in locked
                    if pq.locked:
                        pq.last_lock_timestamp = now

    async def unlock(self, mq: MessageQueue, oneway: bool) -> None:
        addr = self._master(mq.broker_name)
        if addr is None:
            return
        inst = self.instance
        try:
            await inst.api.unlock_batch_mq(
                addr, self.consumer_group, inst.client_id, [mq], _LOCK_TIMEOUT_MS, oneway=oneway
            )
        except RocketqError as exc:
            log.warning("unlock %s failed: %s", mq, exc)


class AsyncPullAPIWrapper:
    """``PullAPIWrapper`` on the loop: broker choice per queue, PULL_MESSAGE, decoding."""

    def __init__(self, instance: AsyncClientInstance, consumer_group: str) -> None:
        self._instance = instance
        self.consumer_group = consumer_group
        self._pull_from_which_node: dict[MessageQueue, int] = {}

    async def pull(
        self,
        mq: MessageQueue,
        subscription: SubscriptionData,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        suspend_ms: int,
        timeout_ms: int,
    ) -> PullResult:
        """One PULL_MESSAGE, decoded and re-filtered by tag (``pullKernelImpl`` + ``processPullResult``)."""
        inst = self._instance
        bid = self._pull_from_which_node.get(mq, MASTER_ID)
        found = inst.find_broker_address_in_subscribe(mq.broker_name, bid, False)
        if found is None:
            await inst.update_route(mq.topic)
            found = inst.find_broker_address_in_subscribe(mq.broker_name, bid, False)
        if found is None:
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        flag = sys_flag & ~PullSysFlag.COMMIT_OFFSET if found.slave else sys_flag  # only masters commit
        header = build_pull_header(
            self.consumer_group,
            mq,
            offset,
            max_nums,
            sys_flag=int(flag),
            commit_offset=commit_offset,
            suspend_timeout_millis=suspend_ms,
            subscription=subscription.sub_string,
            sub_version=subscription.sub_version or 0,
            expression_type=subscription.expression_type,
        )
        result = await inst.api.pull_message(found.broker_addr, header, timeout_ms)
        self._pull_from_which_node[mq] = result.suggest_which_broker_id
        return decode_pull_result(mq, result, subscription)
