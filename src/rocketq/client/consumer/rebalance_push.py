"""``RebalancePushImpl``: rebalancing for the push consumer.

Mirrors ``org.apache.rocketmq.client.impl.consumer.RebalancePushImpl`` (reference 6.4, 6.5,
10.2). On top of :class:`~rocketq.client.consumer.rebalance.RebalanceImpl`:

* new queues start pulling at once (their PullRequest goes to the PullMessageService);
* when the owned set of a topic changes, the topic's subscription version becomes "now",
  per-queue flow-control limits are recomputed from the topic-level ones, and a heartbeat
  goes out at once, so the broker's subVersion check admits the new pulls;
* pulls carry the new version only once that heartbeat has been sent
  (:meth:`RebalancePushImpl.pull_sub_version`). Java sets the version first and heartbeats
  after, so a pull of a queue it keeps, sent in between, carries a version the broker has
  not seen yet: SUBSCRIPTION_NOT_LATEST, and that queue waits
  ``pull_time_delay_mills_when_exception_ms`` (1 s by default) for nothing. Measured: one
  drain in seven with four consumers joining one by one lost a queue for 1 s this way. The
  heartbeat and the pulls are Java's; only the moment the pulls take up the new number moves;
* a queue taken away persists its offset and forgets it; for an orderly consumer in
  CLUSTERING mode it is only released once no listener is mid-batch: the consume lock is
  taken (waiting at most 1 s, else retried at the next round), the offset persisted, and
  the broker lock released — at once, or 20 s later while messages are still cached, as
  Java does (``unlockDelay``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from rocketq.client.consumer.allocate import AllocateMessageQueueStrategy
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_message_service import PullRequest
from rocketq.client.consumer.rebalance import (
    OffsetAdmin,
    RebalanceHost,
    RebalanceImpl,
    compute_pull_from_where,
)
from rocketq.protocol.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.message_queue import MessageQueue

__all__ = ["PushRebalanceOwner", "RebalancePushImpl"]

log = logging.getLogger(__name__)

#: ``rocketmq.client.unlockDelayTimeMills``
UNLOCK_DELAY_TIME_MS = 20_000
_CONSUME_LOCK_WAIT_S = 1.0


class PushRebalanceOwner(Protocol):
    """The push consumer, as seen by its rebalance."""

    @property
    def consume_orderly(self) -> bool: ...

    @property
    def consume_timestamp(self) -> str | None: ...

    @property
    def lock_max_live_time_ms(self) -> int: ...

    def consume_from_where(self) -> ConsumeFromWhere: ...

    def dispatch(self, requests: list[PullRequest]) -> None: ...

    def schedule(self, task: Callable[[], None], delay_ms: int) -> None: ...

    def on_queues_changed(self, topic: str, owned: set[MessageQueue]) -> None: ...


class RebalancePushImpl(RebalanceImpl):
    """Rebalance of a push consumer."""

    def __init__(
        self,
        host: RebalanceHost,
        consumer_group: str,
        message_model: MessageModel,
        offset_store: OffsetStore,
        admin: OffsetAdmin,
        owner: PushRebalanceOwner,
        strategy: AllocateMessageQueueStrategy | None = None,
        *,
        clock_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
    ) -> None:
        super().__init__(host, consumer_group, message_model, strategy, clock_ms=clock_ms)
        self.offset_store = offset_store
        self.admin = admin
        self.owner = owner
        self._pending: list[PullRequest] = []
        #: topic -> the version pulls keep carrying while the heartbeat with a newer one is
        #: on its way to the brokers (read without the lock, on every pull)
        self._pull_versions: dict[str, int] = {}

    def consume_type(self) -> ConsumeType:
        return ConsumeType.CONSUME_PASSIVELY

    def rebalance_by_topic(self, topic: str, is_order: bool) -> bool:
        try:
            return super().rebalance_by_topic(topic, is_order)
        finally:
            self._flush_pending()

    def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        with self._lock:
            sub = self.subscription_inner.get(topic)
            if sub is not None:
                # the pulls keep the version the brokers know until the heartbeat is out
                self._pull_versions.setdefault(topic, sub.sub_version or 0)
                sub.sub_version = int(time.time() * 1000)
        # the heartbeat carrying the new subVersion goes out before any pull carries it (the
        # first pulls of the new queues included), so the broker's SUBSCRIPTION_NOT_LATEST
        # check never trips on them
        try:
            self.owner.on_queues_changed(topic, mq_divided)
        finally:
            with self._lock:
                self._pull_versions.pop(topic, None)
        self._flush_pending()

    def pull_sub_version(self, sd: SubscriptionData) -> int:
        """The subVersion a pull of ``sd``'s topic carries now: the subscription's, or while
        the heartbeat announcing a newer one is being sent, the one before it."""
        held = self._pull_versions.get(sd.topic or "")
        return held if held is not None else (sd.sub_version or 0)

    def _flush_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        if pending:
            self.owner.dispatch(pending)

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        if not (self.owner.consume_orderly and self.message_model == MessageModel.CLUSTERING):
            self.offset_store.persist(mq)
            self.offset_store.remove_offset(mq)
            return True
        # orderly: no listener may be mid-batch when the offset is persisted and the lock released
        if not pq.consume_lock.acquire(timeout=_CONSUME_LOCK_WAIT_S):
            pq.try_unlock_times += 1
            log.warning("%s is still being consumed; it will be released at the next rebalance", mq)
            return False
        try:
            self.offset_store.persist(mq)
            self.offset_store.remove_offset(mq)
            if pq.has_temp_message():
                self.owner.schedule(lambda: self.unlock(mq, True), UNLOCK_DELAY_TIME_MS)
            else:
                self.unlock(mq, True)
            return True
        finally:
            pq.consume_lock.release()

    def new_process_queue(self) -> ProcessQueue:
        return ProcessQueue(clock_ms=self._clock_ms, lock_max_live_time_ms=self.owner.lock_max_live_time_ms)

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.offset_store.remove_offset(mq)

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return compute_pull_from_where(
            self.offset_store,
            self.admin,
            mq,
            self.owner.consume_from_where(),
            self.owner.consume_timestamp,
        )

    def dispatch_pull_request(self, requests: list[PullRequest]) -> None:
        with self._lock:
            self._pending.extend(requests)
