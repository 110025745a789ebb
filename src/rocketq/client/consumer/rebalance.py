"""Rebalancing: which queues of each subscribed topic this consumer owns.

Mirrors ``org.apache.rocketmq.client.impl.consumer.RebalanceImpl`` and its pull-side
subclasses ``RebalancePullImpl`` / ``RebalanceLitePullImpl`` (4.9.7), plus
``MessageQueueListener`` and ``PullRequest`` (reference 6.4, 6.5 and 7.4). The push consumer
subclasses :class:`RebalanceImpl` the same way.

Bookkeeping invariants:

* ``process_queue_table`` holds exactly the queues this client owns after the last round:
  queues no longer allocated are marked dropped and removed once
  :meth:`RebalanceImpl.remove_unnecessary_message_queue` agrees; new ones get a fresh
  :class:`ProcessQueue` and a :class:`PullRequest` at :meth:`RebalanceImpl.compute_pull_from_where`
  (a negative answer skips the queue until the next round).
* CLUSTERING allocates ``topic_subscribe_info_table[topic]`` among the group's client ids
  with the strategy (inputs sorted, :func:`rocketq.client.consumer.allocate.allocate`);
  BROADCASTING owns every queue.
* :meth:`RebalanceImpl.message_queue_changed` runs only when the owned set of a topic changed.
* Everything external (consumer id list, broker lookup, locks) goes through a
  :class:`RebalanceHost`, so the logic is unit-tested with a fake one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from rocketq.client.api_results import FindBrokerResult
from rocketq.client.consumer.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueStrategy,
    allocate,
)
from rocketq.client.consumer.offset_store import OffsetStore, ReadOffsetType
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_message_service import PullRequest
from rocketq.client.metrics import ClientMetrics, safely
from rocketq.errors import RocketqError
from rocketq.protocol.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import MASTER_ID, RETRY_GROUP_TOPIC_PREFIX

__all__ = [
    "START_AT",
    "START_MAX",
    "START_SEARCH",
    "MessageQueueListener",
    "OffsetAdmin",
    "PullRequest",
    "RebalanceHost",
    "RebalanceImpl",
    "RebalancePullImpl",
    "compute_pull_from_where",
    "parse_consume_timestamp",
    "rebalance_diff",
    "start_without_offset",
]

log = logging.getLogger(__name__)

#: ``RebalanceImpl.lock`` / ``lockAll`` RPC timeout.
_LOCK_TIMEOUT_MS = 1000


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class MessageQueueListener(Protocol):
    """``MessageQueueListener``: told the full and the owned queue sets after a change."""

    def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None: ...


class RebalanceHost(Protocol):
    """What rebalancing needs from the client instance (``MQClientInstance``)."""

    @property
    def client_id(self) -> str: ...

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None: ...

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None: ...

    def lock_batch_mq(
        self, addr: str, group: str, mqs: Iterable[MessageQueue], timeout_ms: int
    ) -> set[MessageQueue]: ...

    def unlock_batch_mq(
        self, addr: str, group: str, mqs: Iterable[MessageQueue], timeout_ms: int, oneway: bool
    ) -> None: ...


class OffsetAdmin(Protocol):
    """Queue offset lookups used to pick a start offset (``MQAdminImpl``)."""

    def max_offset(self, mq: MessageQueue) -> int: ...

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int: ...


def parse_consume_timestamp(text: str) -> int:
    """``UtilAll.parseDate(yyyyMMddHHmmss)`` in local time -> epoch ms."""
    tm = time.strptime(text, "%Y%m%d%H%M%S")
    return int(time.mktime(tm) * 1000)


#: :func:`start_without_offset` answers: start at this offset, at the queue's max offset, or at
#: the offset SEARCH_OFFSET_BY_TIMESTAMP finds for this time (ms).
START_AT = "at"
START_MAX = "max"
START_SEARCH = "search"


def start_without_offset(
    mq: MessageQueue, consume_from_where: ConsumeFromWhere, consume_timestamp: str | None
) -> tuple[str, int]:
    """Where a queue without a stored offset starts (the pure half of ``computePullFromWhere``):
    ``(START_AT, offset)``, ``(START_MAX, 0)`` or ``(START_SEARCH, timestamp_ms)``.

    LAST_OFFSET (and the deprecated variants) -> the queue's max offset (0 for a retry topic);
    FIRST_OFFSET -> 0; TIMESTAMP -> SEARCH_OFFSET_BY_TIMESTAMP (the max offset for a retry topic).
    Shared by the blocking and the asyncio consumers.
    """
    retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    if consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return START_AT, 0
    if consume_from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        if retry:
            return START_MAX, 0
        stamp = consume_timestamp or time.strftime("%Y%m%d%H%M%S", time.localtime(time.time() - 1800))
        return START_SEARCH, parse_consume_timestamp(stamp)
    return (START_AT, 0) if retry else (START_MAX, 0)


def compute_pull_from_where(
    offset_store: OffsetStore,
    admin: OffsetAdmin,
    mq: MessageQueue,
    consume_from_where: ConsumeFromWhere,
    consume_timestamp: str | None,
) -> int:
    """``RebalancePushImpl/RebalanceLitePullImpl.computePullFromWhere`` (4.9.7); -1 = not now.

    A stored offset always wins; without one (``-1``) :func:`start_without_offset` decides.
    """
    last = offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
    if last >= 0:
        return last
    if last != -1:
        return -1
    kind, value = start_without_offset(mq, consume_from_where, consume_timestamp)
    try:
        if kind == START_MAX:
            return admin.max_offset(mq)
        if kind == START_SEARCH:
            return admin.search_offset(mq, value)
        return value
    except RocketqError as exc:
        log.warning("compute pull offset of %s failed: %s", mq, exc)
        return -1


def rebalance_diff(
    table: Mapping[MessageQueue, ProcessQueue], topic: str, mq_set: set[MessageQueue], *, passive: bool
) -> tuple[list[tuple[MessageQueue, ProcessQueue]], list[MessageQueue]]:
    """The pure half of ``updateProcessQueueTableInRebalance``: which owned queues of ``topic``
    to drop (no longer allocated, or, for a push consumer, not pulled for too long) and which
    allocated queues to add, in sorted order (a dropped one still allocated is added again once
    it has been removed). Shared by the blocking and the asyncio consumers."""
    drop = [
        (mq, pq)
        for mq, pq in table.items()
        if mq.topic == topic and (mq not in mq_set or (passive and pq.is_pull_expired()))
    ]
    dropped = {mq for mq, _ in drop}
    # a dropped queue that is still allocated is taken again fresh once it is removed
    add = [mq for mq in sorted(mq_set) if mq not in table or mq in dropped]
    return drop, add


class RebalanceImpl:
    """``RebalanceImpl``: the shared rebalance bookkeeping; subclasses provide the hooks."""

    def __init__(
        self,
        host: RebalanceHost,
        consumer_group: str,
        message_model: MessageModel,
        strategy: AllocateMessageQueueStrategy | None = None,
        *,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.host = host
        self.consumer_group = consumer_group
        self.message_model = message_model
        self.strategy: AllocateMessageQueueStrategy = strategy or AllocateMessageQueueAveragely()
        self._clock_ms = clock_ms
        self._lock = threading.RLock()
        self.subscription_inner: dict[str, SubscriptionData] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.topic_subscribe_info_table: dict[str, set[MessageQueue]] = {}
        #: opt-in client metrics (rebalance changes, failed lock renewals); set by the consumer
        self.metrics: ClientMetrics | None = None

    # ------------------------------------------------------------------ hooks
    def consume_type(self) -> ConsumeType:
        return ConsumeType.CONSUME_ACTIVELY

    def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        """Called after the owned set of ``topic`` changed."""

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """May the dropped queue be forgotten now? (push orderly: only once unlocked)."""
        return True

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        """Forget a stale in-memory offset before a queue is taken (again)."""

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """The first offset to pull from a newly owned queue; negative = skip for now."""
        return 0

    def new_process_queue(self) -> ProcessQueue:
        """A fresh ProcessQueue for a newly owned queue."""
        return ProcessQueue(clock_ms=self._clock_ms)

    def dispatch_pull_request(self, requests: list[PullRequest]) -> None:
        """Start pulling the newly owned queues (push consumer)."""

    # ------------------------------------------------------------------ snapshots
    def subscriptions(self) -> list[SubscriptionData]:
        with self._lock:
            return list(self.subscription_inner.values())

    def owned_queues(self, topic: str | None = None) -> set[MessageQueue]:
        with self._lock:
            return {mq for mq in self.process_queue_table if topic is None or mq.topic == topic}

    def subscription(self, topic: str) -> SubscriptionData | None:
        """The subscription of ``topic`` (``getSubscriptionInner().get(topic)``)."""
        with self._lock:
            return self.subscription_inner.get(topic)

    def process_queues(self) -> list[tuple[MessageQueue, ProcessQueue]]:
        """A snapshot of the process queue table."""
        with self._lock:
            return list(self.process_queue_table.items())

    def process_queue(self, mq: MessageQueue) -> ProcessQueue | None:
        with self._lock:
            return self.process_queue_table.get(mq)

    def forget_process_queue(self, mq: MessageQueue) -> ProcessQueue | None:
        """Take ``mq`` out of the table without dropping it or unlocking it (``resetOffset``:
        the next rebalance builds a fresh queue from the new offset)."""
        with self._lock:
            return self.process_queue_table.pop(mq, None)

    def add_subscription(self, sd: SubscriptionData, *, replace: bool = True) -> bool:
        """Subscribe ``sd.topic``; False when it was already subscribed and ``replace`` is off."""
        topic = sd.topic or ""
        with self._lock:
            if not replace and topic in self.subscription_inner:
                return False
            self.subscription_inner[topic] = sd
            return True

    def remove_subscription(self, topic: str, *, forget_queues: bool = True) -> None:
        """Unsubscribe ``topic``; with ``forget_queues`` also forget its known queues (the push
        consumer's ``unsubscribe`` keeps them, as Java's does)."""
        with self._lock:
            self.subscription_inner.pop(topic, None)
            if forget_queues:
                self.topic_subscribe_info_table.pop(topic, None)

    def is_subscribe_info_missing(self, topic: str) -> bool:
        """Subscribed, but the topic's queues are not known yet."""
        with self._lock:
            return topic in self.subscription_inner and topic not in self.topic_subscribe_info_table

    def set_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None:
        with self._lock:
            if topic in self.subscription_inner:
                self.topic_subscribe_info_table[topic] = set(mqs)

    # ------------------------------------------------------------------ rebalance
    def do_rebalance(self, is_order: bool = False) -> None:
        """One round over every subscribed topic, then drop queues of unsubscribed topics."""
        for topic in list(self.subscriptions()):
            if topic.topic is None:
                continue
            try:
                if self.rebalance_by_topic(topic.topic, is_order) and self.metrics is not None:
                    self._report_rebalance(self.metrics, topic.topic)
            except RocketqError as exc:
                if not topic.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    log.warning("rebalance of %s/%s failed: %s", self.consumer_group, topic.topic, exc)
        self.truncate_message_queue_not_my_topic()

    def _report_rebalance(self, metrics: ClientMetrics, topic: str) -> None:
        with self._lock:
            owned = sum(1 for mq in self.process_queue_table if mq.topic == topic)
        safely(lambda: metrics.on_rebalance(self.consumer_group, topic, owned))

    def _report_lock_failures(self, metrics: ClientMetrics, missed: int) -> None:
        safely(lambda: metrics.on_lock_renew_failed(self.consumer_group, missed))

    def rebalance_by_topic(self, topic: str, is_order: bool) -> bool:
        """``rebalanceByTopic``; True when the owned set of ``topic`` changed."""
        with self._lock:
            info = self.topic_subscribe_info_table.get(topic)
            mq_set = set(info) if info is not None else None
        if mq_set is None:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("doRebalance, %s, but the topic[%s] not exist.", self.consumer_group, topic)
            return False
        if self.message_model is MessageModel.BROADCASTING:
            changed = self.update_process_queue_table_in_rebalance(topic, mq_set, is_order)
            if changed:
                self.message_queue_changed(topic, mq_set, mq_set)
            return changed
        cid_all = self.host.find_consumer_id_list(topic, self.consumer_group)
        if not cid_all:
            log.warning("doRebalance, %s %s, get consumer id list failed", self.consumer_group, topic)
            return False
        try:
            divided = set(allocate(self.strategy, self.consumer_group, self.host.client_id, mq_set, cid_all))
        except Exception:
            log.exception("allocate message queue exception, strategy %s", self.strategy.name)
            return False
        changed = self.update_process_queue_table_in_rebalance(topic, divided, is_order)
        if changed:
            log.info(
                "rebalanced %s/%s: client %s owns %d of %d queues (%d consumers)",
                self.consumer_group,
                topic,
                self.host.client_id,
                len(divided),
                len(mq_set),
                len(cid_all),
            )
            self.message_queue_changed(topic, mq_set, divided)
        return changed

    def update_process_queue_table_in_rebalance(
        self, topic: str, mq_set: set[MessageQueue], is_order: bool
    ) -> bool:
        """``updateProcessQueueTableInRebalance``: drop, keep and add queues of ``topic``."""
        changed = False
        with self._lock:
            table = dict(self.process_queue_table)
        to_drop, to_add = rebalance_diff(
            table, topic, mq_set, passive=self.consume_type() is ConsumeType.CONSUME_PASSIVELY
        )
        for mq, pq in to_drop:
            pq.dropped = True
            if self.remove_unnecessary_message_queue(mq, pq):
                with self._lock:
                    self.process_queue_table.pop(mq, None)
                changed = True
        requests: list[PullRequest] = []
        for mq in to_add:
            with self._lock:
                if mq in self.process_queue_table:
                    continue
            if is_order and not self.lock(mq):
                log.warning(
                    "doRebalance, %s, add a new mq failed, %s, because lock failed", self.consumer_group, mq
                )
                continue
            self.remove_dirty_offset(mq)
            pq = self.new_process_queue()
            if is_order:
                # the lock was just granted for this very queue (lock() could not mark the
                # ProcessQueue: it was not in the table yet)
                pq.locked = True
                pq.last_lock_timestamp = self._clock_ms()
            next_offset = self.compute_pull_from_where(mq)
            if next_offset < 0:
                log.warning("doRebalance, %s, add new mq failed, %s", self.consumer_group, mq)
                continue
            with self._lock:
                if mq in self.process_queue_table:
                    continue
                self.process_queue_table[mq] = pq
            # previously_locked stays False (Java's default): the first pull of an orderly
            # queue re-reads its offset (DefaultMQPushConsumerImpl.pullMessage)
            requests.append(PullRequest(self.consumer_group, mq, pq, next_offset))
            changed = True
        self.dispatch_pull_request(requests)
        return changed

    def truncate_message_queue_not_my_topic(self) -> None:
        with self._lock:
            for mq in list(self.process_queue_table):
                if mq.topic not in self.subscription_inner:
                    pq = self.process_queue_table.pop(mq)
                    pq.dropped = True
                    log.info(
                        "doRebalance, %s, truncateMessageQueueNotMyTopic remove %s", self.consumer_group, mq
                    )

    def remove_process_queue(self, mq: MessageQueue) -> None:
        """``removeProcessQueue``: drop one queue at once (e.g. after OFFSET_MOVED)."""
        with self._lock:
            pq = self.process_queue_table.pop(mq, None)
        if pq is not None:
            pq.dropped = True
            self.remove_unnecessary_message_queue(mq, pq)

    def destroy(self) -> None:
        """Drop every queue (consumer shutdown)."""
        with self._lock:
            for pq in self.process_queue_table.values():
                pq.dropped = True
            self.process_queue_table.clear()

    # ------------------------------------------------------------------ orderly locks
    def _master(self, broker_name: str) -> str | None:
        found = self.host.find_broker_address_in_subscribe(broker_name, MASTER_ID, True)
        return found.broker_addr if found is not None else None

    def lock(self, mq: MessageQueue) -> bool:
        """LOCK_BATCH_MQ for one queue on its master; True when this client holds it."""
        addr = self._master(mq.broker_name)
        if addr is None:
            return False
        try:
            locked = self.host.lock_batch_mq(addr, self.consumer_group, [mq], _LOCK_TIMEOUT_MS)
        except RocketqError as exc:
            log.warning("lock %s failed: %s", mq, exc)
            return False
        now = self._clock_ms()
        with self._lock:
            for lmq in locked:
                pq = self.process_queue_table.get(lmq)
                if pq is not None:
                    pq.locked = True
                    pq.last_lock_timestamp = now
        return mq in locked

    def _owned_queues_by_broker(self) -> dict[str, set[MessageQueue]]:
        """``buildProcessQueueTableByBrokerName``: the owned queues grouped by broker name."""
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in self.owned_queues():
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        return by_broker

    def lock_all(self) -> None:
        """``lockAll``: renew every owned queue's lock, broker by broker."""
        for broker_name, mqs in self._owned_queues_by_broker().items():
            addr = self._master(broker_name)
            if addr is None:
                continue
            try:
                locked = self.host.lock_batch_mq(addr, self.consumer_group, sorted(mqs), _LOCK_TIMEOUT_MS)
            except RocketqError as exc:
                log.warning("lockAll on %s failed: %s", broker_name, exc)
                if self.metrics is not None:
                    self._report_lock_failures(self.metrics, len(mqs))
                continue
            if self.metrics is not None and len(locked) < len(mqs):
                self._report_lock_failures(self.metrics, len(mqs) - len(locked))
            now = self._clock_ms()
            with self._lock:
                for mq in mqs:
                    pq = self.process_queue_table.get(mq)
                    if pq is None:
                        continue
                    if mq in locked:
                        pq.locked = True
                        pq.last_lock_timestamp = now
                    else:
                        pq.locked = False

    def unlock(self, mq: MessageQueue, oneway: bool) -> None:
        addr = self._master(mq.broker_name)
        if addr is None:
            return
        try:
            self.host.unlock_batch_mq(addr, self.consumer_group, [mq], _LOCK_TIMEOUT_MS, oneway)
        except RocketqError as exc:
            log.warning("unlock %s failed: %s", mq, exc)

    def unlock_all(self, oneway: bool) -> None:
        for broker_name, mqs in self._owned_queues_by_broker().items():
            addr = self._master(broker_name)
            if addr is None:
                continue
            try:
                self.host.unlock_batch_mq(addr, self.consumer_group, sorted(mqs), _LOCK_TIMEOUT_MS, oneway)
            except RocketqError as exc:
                log.warning("unlockAll on %s failed: %s", broker_name, exc)
                continue
            with self._lock:
                for mq in mqs:
                    pq = self.process_queue_table.get(mq)
                    if pq is not None:
                        pq.locked = False


class RebalancePullImpl(RebalanceImpl):
    """``RebalancePullImpl``: pull consumers; start offset 0, a listener is told of changes.

    Removing a queue persists then forgets its offset; no pulls are dispatched (the
    application or the schedule service pulls).
    """

    def __init__(
        self,
        host: RebalanceHost,
        consumer_group: str,
        message_model: MessageModel,
        offset_store: OffsetStore,
        strategy: AllocateMessageQueueStrategy | None = None,
        *,
        listener: MessageQueueListener | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        super().__init__(host, consumer_group, message_model, strategy, clock_ms=clock_ms)
        self.offset_store = offset_store
        self.listener = listener

    def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        listener = self.listener
        if listener is not None:
            try:
                listener.message_queue_changed(topic, mq_all, mq_divided)
            except Exception:
                log.exception("messageQueueChanged exception")

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        return True

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return 0
