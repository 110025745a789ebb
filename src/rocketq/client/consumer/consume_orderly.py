"""``ConsumeMessageOrderlyService``: one thread per queue at a time, in offset order, under lock.

Mirrors ``org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService`` (reference
5.4, 6.5). Invariants:

* A ConsumeRequest is submitted only when putting messages into the ProcessQueue returned
  ``dispatch_to_consume`` (no task was running for it); it carries no messages and takes
  them from the ProcessQueue itself, smallest offsets first.
* A task first takes the per-MessageQueue lock (so at most one thread per queue in this
  process), then in CLUSTERING mode requires the broker-side lock to be held and not
  expired; otherwise it schedules a lock attempt and re-consumes later.
* The listener runs under the ProcessQueue's ``consume_lock``: a rebalance that takes a
  queue away waits for that lock before persisting the offset and unlocking on the broker,
  so two consumers never work on one queue at once.
* SUCCESS commits (offset = largest consumed + 1, overwriting); SUSPEND (or an exception or
  ``None``) puts the same messages back and retries them after the suspend time without
  moving the offset. A message that failed ``max_reconsume_times`` times is sent to the
  retry topic with RECONSUME_TIME = max (the broker routes it to the DLQ) and consumption
  moves on — which breaks the order for that key, so it is logged loudly and counted.
* One task consumes continuously for at most 60 s, then yields and resubmits itself.
* Tasks run on the consumer's lane of the process's shared consume threads
  (``listener.ConsumePool``), like the concurrent service's: at most ``consume_thread_max``
  at once, however long a listener blocks or a task waits for a queue lock, since the
  shared set grows to the sum of every consumer's bound; another consumer's calls never
  wait behind them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from rocketq.client.consumer.listener import (
    ConsumeMessageHook,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumePool,
    MessageListenerOrderly,
    classify_consume_result,
    run_after_hooks,
    run_before_hooks,
    shutdown_consume_pool,
)
from rocketq.client.consumer.process_queue import REBALANCE_LOCK_INTERVAL_MS, ProcessQueue
from rocketq.client.consumer.retry import OrderlyAction, orderly_action, orderly_max_reconsume_times
from rocketq.client.consumer.stats import ConsumerStatsManager
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue

__all__ = ["MAX_TIME_CONSUME_CONTINUOUSLY_MS", "ConsumeMessageOrderlyService", "OrderlyServiceHost"]

log = logging.getLogger(__name__)

#: ``rocketmq.client.maxTimeConsumeContinuously``
MAX_TIME_CONSUME_CONTINUOUSLY_MS = 60_000
_SUSPEND_MIN_MS = 10
_SUSPEND_MAX_MS = 30_000


class OrderlyServiceHost(Protocol):
    """What the orderly service needs from the push consumer."""

    @property
    def consumer_group(self) -> str: ...

    @property
    def stats(self) -> ConsumerStatsManager: ...

    @property
    def hooks(self) -> list[ConsumeMessageHook]: ...

    @property
    def suspend_current_queue_time_millis(self) -> int: ...

    @property
    def max_reconsume_times(self) -> int:
        """-1 means unlimited for orderly consumption (Integer.MAX_VALUE)."""

    def message_model(self) -> MessageModel: ...

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None: ...

    def reset_retry_and_namespace(self, msgs: Sequence[MessageExt]) -> None: ...

    def schedule(self, task: Callable[[], None], delay_ms: int) -> None: ...

    def lock_one(self, mq: MessageQueue) -> bool:
        """LOCK_BATCH_MQ for one queue; True when this client holds it now."""

    def lock_all(self) -> None: ...

    def unlock_all(self, *, oneway: bool) -> None: ...

    def send_to_retry_topic(self, msg: MessageExt, max_reconsume_times: int) -> None:
        """Re-send through the producer to %RETRY%<group> (the broker routes it to the DLQ)."""


class ConsumeMessageOrderlyService:
    """Runs an orderly listener over locked queues."""

    def __init__(
        self,
        host: OrderlyServiceHost,
        listener: MessageListenerOrderly,
        *,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        consume_timeout_ms: int = 15 * 60_000,
        max_time_consume_continuously_ms: int = MAX_TIME_CONSUME_CONTINUOUSLY_MS,
        lock_interval_ms: int = REBALANCE_LOCK_INTERVAL_MS,
    ) -> None:
        if consume_thread_max < 1 or consume_message_batch_max_size < 1:
            raise ValueError("consume_thread_max and consume_message_batch_max_size must be >= 1")
        self.host = host
        self.listener = listener
        self.consume_thread_max = consume_thread_max
        self.batch_size = consume_message_batch_max_size
        self.consume_timeout_ms = consume_timeout_ms
        self.max_time_consume_continuously_ms = max_time_consume_continuously_ms
        self.lock_interval_ms = lock_interval_ms
        self._executor = ConsumePool(consume_thread_max, f"ConsumeMessageThread_{host.consumer_group}")
        self._mq_locks: dict[MessageQueue, threading.Lock] = {}
        self._mq_locks_guard = threading.Lock()
        self._stopped = False
        #: messages sent to the DLQ after max reconsume times (each one an order break for its key)
        self.dlq_count = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self.host.message_model() == MessageModel.CLUSTERING:
            self.host.schedule(self._lock_periodically, 1000)

    def _lock_periodically(self) -> None:
        if self._stopped:
            return
        try:
            self.host.lock_all()
        except Exception:
            log.exception("renewing queue locks failed")
        finally:
            self.host.schedule(self._lock_periodically, self.lock_interval_ms)

    def shutdown(self, await_termination_ms: int = 0) -> None:
        self._stopped = True
        shutdown_consume_pool(self._executor, await_termination_ms)

    @property
    def core_pool_size(self) -> int:
        return self.consume_thread_max

    def _mq_lock(self, mq: MessageQueue) -> threading.Lock:
        """``MessageQueueLock.fetchLockObject``."""
        lock = self._mq_locks.get(mq)
        if lock is None:
            with self._mq_locks_guard:
                lock = self._mq_locks.setdefault(mq, threading.Lock())
        return lock

    # ------------------------------------------------------------------ submit
    def submit_consume_request(
        self,
        msgs: Sequence[MessageExt],
        process_queue: ProcessQueue,
        message_queue: MessageQueue,
        dispatch_to_consume: bool = True,
    ) -> None:
        if dispatch_to_consume:
            self._submit(process_queue, message_queue)

    def _submit(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        if self._stopped:
            return
        try:
            self._executor.submit(self._consume, pq, mq)
        except RuntimeError:
            self.submit_consume_request_later(pq, mq, 1000)

    def submit_consume_request_later(self, pq: ProcessQueue, mq: MessageQueue, suspend_ms: int) -> None:
        delay = self.host.suspend_current_queue_time_millis if suspend_ms == -1 else suspend_ms
        delay = min(max(delay, _SUSPEND_MIN_MS), _SUSPEND_MAX_MS)
        if not self._stopped:
            self.host.schedule(lambda: self._submit(pq, mq), delay)

    def try_lock_later_and_reconsume(self, mq: MessageQueue, pq: ProcessQueue, delay_ms: int) -> None:
        def attempt() -> None:
            if self._stopped:
                return
            locked = self.host.lock_one(mq)
            self.submit_consume_request_later(pq, mq, 10 if locked else 3000)

        self.host.schedule(attempt, delay_ms)

    # ------------------------------------------------------------------ run
    def _consume(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        host = self.host
        if pq.is_dropped():
            return
        clustering = host.message_model() == MessageModel.CLUSTERING
        with self._mq_lock(mq):
            if clustering and not (pq.locked and not pq.is_lock_expired()):
                if not pq.is_dropped():
                    self.try_lock_later_and_reconsume(mq, pq, 100)
                return
            begin = time.monotonic()
            while True:
                if pq.is_dropped() or self._stopped:
                    return
                if clustering and (not pq.locked or pq.is_lock_expired()):
                    self.try_lock_later_and_reconsume(mq, pq, 10)
                    return
                if (time.monotonic() - begin) * 1000 > self.max_time_consume_continuously_ms:
                    self.submit_consume_request_later(pq, mq, 10)
                    return
                msgs = pq.take_messages(self.batch_size)
                if not msgs:
                    return
                host.reset_retry_and_namespace(msgs)
                if not self._consume_batch(msgs, pq, mq):
                    return

    def _consume_batch(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> bool:
        """One listener call and its result; False stops the task's loop."""
        host = self.host
        context = ConsumeOrderlyContext(message_queue=mq)
        hook_ctx = run_before_hooks(host.hooks, host.consumer_group, mq, msgs)
        status: ConsumeOrderlyStatus | None = None
        has_exception = False
        begin = time.monotonic()
        with pq.consume_lock:
            if pq.is_dropped():
                log.warning("the message queue was dropped while consuming orderly: %s", mq)
                pq.rollback()
                return False
            try:
                result = self.listener(list(msgs), context)
                status = result if isinstance(result, ConsumeOrderlyStatus) else None
            except Exception:
                has_exception = True
                log.exception("orderly consume exception: group=%s %s", host.consumer_group, mq)
        consume_rt_ms = int((time.monotonic() - begin) * 1000)
        status, return_type = classify_consume_result(
            status,
            ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
            has_exception=has_exception,
            consume_rt_ms=consume_rt_ms,
            consume_timeout_ms=self.consume_timeout_ms,
        )
        if status in (ConsumeOrderlyStatus.ROLLBACK, ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT):
            log.warning(
                "consumeMessage orderly returned %s: group=%s %s", status.value, host.consumer_group, mq
            )
        success = status in (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT)
        run_after_hooks(host.hooks, hook_ctx, return_type, status, success)
        host.stats.inc_consume_rt(host.consumer_group, mq.topic, consume_rt_ms)
        return self.process_consume_result(msgs, status, context, pq, mq)

    # ------------------------------------------------------------------ results
    def process_consume_result(
        self,
        msgs: list[MessageExt],
        status: ConsumeOrderlyStatus,
        context: ConsumeOrderlyContext,
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> bool:
        """``processConsumeResult``: True to keep consuming this queue."""
        host = self.host
        group, topic = host.consumer_group, mq.topic
        commit_offset = -1
        keep_going = True
        action = orderly_action(status, context.auto_commit)
        if action is OrderlyAction.COMMIT:
            if status != ConsumeOrderlyStatus.SUCCESS:
                log.warning("COMMIT/ROLLBACK are for auto_commit=False only; treated as SUCCESS: %s", mq)
            commit_offset = pq.commit()
            host.stats.inc_consume_ok_tps(group, topic, len(msgs))
        elif action is OrderlyAction.KEEP:
            host.stats.inc_consume_ok_tps(group, topic, len(msgs))
        elif action is OrderlyAction.COMMIT_ONLY:
            commit_offset = pq.commit()
        elif action is OrderlyAction.ROLLBACK:
            pq.rollback()
            self.submit_consume_request_later(pq, mq, context.suspend_current_queue_time_millis)
            keep_going = False
        elif self._suspend(msgs, context, pq, mq):
            keep_going = False
        elif context.auto_commit:
            commit_offset = pq.commit()
        if commit_offset >= 0 and not pq.is_dropped():
            host.update_offset(mq, commit_offset, increase_only=False)
        return keep_going

    def _suspend(
        self, msgs: list[MessageExt], context: ConsumeOrderlyContext, pq: ProcessQueue, mq: MessageQueue
    ) -> bool:
        """SUSPEND_CURRENT_QUEUE_A_MOMENT: count the failure; True when the batch is retried later.

        False means every message went to the DLQ (``checkReconsumeTimes``) and the queue
        moves on.
        """
        self.host.stats.inc_consume_failed_tps(self.host.consumer_group, mq.topic, len(msgs))
        if not self._check_reconsume_times(msgs):
            return False
        pq.make_message_to_consume_again(msgs)
        self.submit_consume_request_later(pq, mq, context.suspend_current_queue_time_millis)
        return True

    def _max_reconsume_times(self) -> int:
        return orderly_max_reconsume_times(self.host.max_reconsume_times)

    def _check_reconsume_times(self, msgs: list[MessageExt]) -> bool:
        """``checkReconsumeTimes``: True to suspend and retry; messages over the max go to the DLQ."""
        suspend = False
        max_times = self._max_reconsume_times()
        for msg in msgs:
            if msg.reconsume_times >= max_times:
                try:
                    self.host.send_to_retry_topic(msg, max_times)
                except Exception:
                    log.exception("sending an orderly message to the DLQ failed; retrying it")
                    suspend = True
                    msg.reconsume_times += 1
                    continue
                self.dlq_count += 1
                log.error(
                    "ORDER BROKEN: message %s of %s failed %d times and went to %%DLQ%%%s; "
                    "its key's later messages are consumed without it",
                    msg.msg_id,
                    msg.topic,
                    msg.reconsume_times,
                    self.host.consumer_group,
                )
            else:
                suspend = True
                msg.reconsume_times += 1
        return suspend
