"""``ConsumeMessageConcurrentlyService``: listeners on a thread pool, results into offsets.

Mirrors ``org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService``
(reference 5.4, 6.4, 7.2). Invariants:

* Pulled messages are cut into ConsumeRequests of ``consume_message_batch_max_size`` and
  run on the consumer's lane of the process's shared consume threads
  (``listener.ConsumePool``): at most ``consume_thread_max`` at once, on threads named
  ``ConsumeMessageThread_<group>_<n>``; a rejected submit is retried 5 s later. The push
  consumer may hand a pull's answer to a free pool thread
  (:meth:`ConsumeMessageConcurrentlyService.execute_if_free`), which then keeps the first
  ConsumeRequest and runs it itself (:meth:`~ConsumeMessageConcurrentlyService.submit_keeping_first`,
  :meth:`~ConsumeMessageConcurrentlyService.consume_here`): the same request on a pool
  thread, without the queue hop.
* A listener that raises or returns ``None`` counts as RECONSUME_LATER; nothing it does
  can kill a consume thread. Hooks run before and after every call.
* CONSUME_SUCCESS acknowledges messages ``0..ack_index``; the rest, and every message of a
  RECONSUME_LATER batch, is sent back to the broker (CLUSTERING) or dropped with a
  warning (BROADCASTING). A message whose send-back fails is consumed again locally 5 s
  later and keeps its place in the ProcessQueue, so the committed offset cannot pass it.
* After the result is processed the messages leave the ProcessQueue and the offset store
  gets ``remove_messages``' answer (the smallest offset still cached), increase-only.
* A dropped ProcessQueue (rebalanced away) skips result processing entirely.
* Every ``consume_timeout`` the oldest cached messages whose listener started longer ago
  than ``consume_timeout`` are sent back (delay level 3) and removed (``cleanExpiredMsg``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from rocketq.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeMessageHook,
    ConsumePool,
    MessageListenerConcurrently,
    classify_consume_result,
    run_after_hooks,
    run_before_hooks,
    shutdown_consume_pool,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.retry import split_concurrent_result
from rocketq.client.consumer.stats import ConsumerStatsManager
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import MessageConst, MessageExt, put_properties_lazily_each
from rocketq.protocol.message_queue import MessageQueue

__all__ = ["ConsumeMessageConcurrentlyService", "ConsumeServiceHost"]

log = logging.getLogger(__name__)

#: ``submitConsumeRequestLater`` / local re-consumption after a failed send-back.
RESUBMIT_DELAY_MS = 5000
#: delay level used when an expired (timed-out) message is sent back
_EXPIRED_DELAY_LEVEL = 3


def _wall_ms() -> int:
    return int(time.time() * 1000)


class ConsumeServiceHost(Protocol):
    """What the consume services need from the push consumer (``DefaultMQPushConsumerImpl``)."""

    @property
    def consumer_group(self) -> str: ...

    @property
    def stats(self) -> ConsumerStatsManager: ...

    @property
    def hooks(self) -> list[ConsumeMessageHook]: ...

    def message_model(self) -> MessageModel: ...

    def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> None:
        """CONSUMER_SEND_MSG_BACK (with the producer fallback); raises when both fail."""

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None: ...

    def reset_retry_and_namespace(self, msgs: Sequence[MessageExt]) -> None: ...

    def schedule(self, task: Callable[[], None], delay_ms: int) -> None:
        """Run ``task`` later on the consumer's scheduler thread."""

    def process_queues(self) -> list[tuple[MessageQueue, ProcessQueue]]: ...


class ConsumeMessageConcurrentlyService:
    """Runs a concurrent listener over pulled messages."""

    def __init__(
        self,
        host: ConsumeServiceHost,
        listener: MessageListenerConcurrently,
        *,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        consume_timeout_ms: int = 15 * 60_000,
        clock_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        if consume_thread_max < 1:
            raise ValueError("consume_thread_max must be >= 1")
        if consume_message_batch_max_size < 1:
            raise ValueError("consume_message_batch_max_size must be >= 1")
        self.host = host
        self.listener = listener
        self.consume_thread_max = consume_thread_max
        self.batch_size = consume_message_batch_max_size
        self.consume_timeout_ms = consume_timeout_ms
        self._clock_ms = clock_ms
        self._executor = ConsumePool(consume_thread_max, f"ConsumeMessageThread_{host.consumer_group}")
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.host.schedule(self._clean_expired_messages, self.consume_timeout_ms)

    def shutdown(self, await_termination_ms: int = 0) -> None:
        """Stop accepting work; wait up to ``await_termination_ms`` for running listeners."""
        self._stopped = True
        shutdown_consume_pool(self._executor, await_termination_ms)

    @property
    def core_pool_size(self) -> int:
        return self.consume_thread_max

    # ------------------------------------------------------------------ submit
    def submit_consume_request(
        self,
        msgs: Sequence[MessageExt],
        process_queue: ProcessQueue,
        message_queue: MessageQueue,
        dispatch_to_consume: bool = True,
    ) -> None:
        """Cut ``msgs`` into batches and queue each on the pool."""
        for start in range(0, len(msgs), self.batch_size):
            batch = list(msgs[start : start + self.batch_size])
            self._submit(batch, process_queue, message_queue)

    def submit_keeping_first(
        self, msgs: Sequence[MessageExt], process_queue: ProcessQueue, message_queue: MessageQueue
    ) -> list[MessageExt]:
        """Like :meth:`submit_consume_request`, but the first batch is not queued: it is
        returned for the calling consume thread to run with :meth:`consume_here` (the
        batches after it are queued first, so they run in parallel with it)."""
        size = self.batch_size
        for start in range(size, len(msgs), size):
            self._submit(list(msgs[start : start + size]), process_queue, message_queue)
        return list(msgs[:size])

    def execute_if_free(self, fn: Callable[..., object], /, *args: object) -> bool:
        """Run ``fn(*args)`` on a consume thread if one is free now (the push consumer's
        ``PullCallback``); False when every thread is busy or the service is stopped."""
        return not self._stopped and self._executor.submit_if_free(fn, *args)

    def consume_here(self, batch: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """Run one ConsumeRequest on the calling consume thread (unless the service stopped:
        shutdown drops the requests not started yet)."""
        if not self._stopped:
            self._consume(batch, pq, mq)

    def consume_here_if_free(self, batch: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> bool:
        """:meth:`consume_here` on a thread that is not a consume thread (the I/O thread, with
        ``consume_on_io_thread``): run as one of the ``consume_thread_max`` calls it may have
        at once if one is free (True), else queued for the consume threads (False)."""
        if self._stopped:
            return False
        if self._executor.run_here(self._consume, batch, pq, mq):
            return True
        self._submit(batch, pq, mq)
        return False

    def _submit(self, batch: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if self._stopped:
            return
        try:
            self._executor.submit(self._consume, batch, pq, mq)
        except RuntimeError:
            # pool shut down or rejecting: try again later, as Java does on RejectedExecution
            self._submit_later(batch, pq, mq)

    def _submit_later(self, batch: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if not self._stopped:
            self.host.schedule(lambda: self._submit(batch, pq, mq), RESUBMIT_DELAY_MS)

    # ------------------------------------------------------------------ run
    def _listener(self) -> Callable[[list[MessageExt], ConsumeConcurrentlyContext], object]:
        """The listener typed as what it may really return: compiled, a call through its
        declared type would check the answer and turn a wrong one (Java: not a status, so
        RETURNNULL) into a TypeError (EXCEPTION)."""
        return self.listener

    def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        host = self.host
        if pq.is_dropped():
            log.info("the message queue was dropped, stop consuming: group=%s %s", host.consumer_group, mq)
            return
        context = ConsumeConcurrentlyContext(message_queue=mq)
        host.reset_retry_and_namespace(msgs)
        hook_ctx = run_before_hooks(host.hooks, host.consumer_group, mq, msgs)
        begin = time.monotonic()
        status: ConsumeConcurrentlyStatus | None = None
        has_exception = False
        try:
            put_properties_lazily_each(msgs, {MessageConst.CONSUME_START_TIME: str(self._clock_ms())})
            result = self._listener()(list(msgs), context)
            status = result if isinstance(result, ConsumeConcurrentlyStatus) else None
            if result is not None and status is None:
                log.warning("listener returned %r, which is not a ConsumeConcurrentlyStatus", result)
        except Exception:
            has_exception = True
            log.exception("consume message exception: group=%s %s", host.consumer_group, mq)
        consume_rt_ms = int((time.monotonic() - begin) * 1000)
        status, return_type = classify_consume_result(
            status,
            ConsumeConcurrentlyStatus.RECONSUME_LATER,
            has_exception=has_exception,
            consume_rt_ms=consume_rt_ms,
            consume_timeout_ms=self.consume_timeout_ms,
        )
        success = status == ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        run_after_hooks(host.hooks, hook_ctx, return_type, status, success)
        host.stats.inc_consume_rt(host.consumer_group, mq.topic, consume_rt_ms)
        if pq.is_dropped():
            log.warning("the message queue was dropped while consuming: group=%s %s", host.consumer_group, mq)
            return
        self.process_consume_result(status, context, msgs, pq, mq)

    # ------------------------------------------------------------------ results
    def process_consume_result(
        self,
        status: ConsumeConcurrentlyStatus,
        context: ConsumeConcurrentlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> None:
        """``processConsumeResult``: stats, send-back of the failed part, offset update."""
        host = self.host
        if not msgs:
            return
        failed: list[MessageExt]
        if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS and context.ack_index >= len(msgs) - 1:
            # every message acknowledged, the common case: split_concurrent_result's answer, no slice
            ok, failed = len(msgs), []
        else:
            ok, failed = split_concurrent_result(status, context, msgs)
        if ok:
            host.stats.inc_consume_ok_tps(host.consumer_group, mq.topic, ok)
        if ok < len(msgs):  # Java adds a 0 too; no figure it reports (sums, rates) sees the difference
            host.stats.inc_consume_failed_tps(host.consumer_group, mq.topic, len(msgs) - ok)
        done = msgs
        if failed and host.message_model() == MessageModel.BROADCASTING:
            for msg in failed:
                log.warning("BROADCASTING, the message consume failed, drop it: %s", msg.msg_id)
        elif failed:
            back_failed = []
            for msg in failed:
                try:
                    host.send_message_back(msg, context.delay_level_when_next_consume, mq.broker_name)
                except Exception:
                    log.exception("sending a failed message back failed; consuming it again locally later")
                    msg.reconsume_times += 1
                    back_failed.append(msg)
            if back_failed:
                done = [m for m in msgs if all(m is not f for f in back_failed)]
                self._submit_later(back_failed, pq, mq)
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.is_dropped():
            host.update_offset(mq, offset, increase_only=True)

    # ------------------------------------------------------------------ expiry
    def _clean_expired_messages(self) -> None:
        """``cleanExpireMsg``: send back messages whose listener has run past consume_timeout."""
        if self._stopped:
            return
        try:
            for mq, pq in self.host.process_queues():
                for msg in pq.expired_messages(self.consume_timeout_ms, self._clock_ms()):
                    try:
                        self.host.send_message_back(msg, _EXPIRED_DELAY_LEVEL, mq.broker_name)
                    except Exception:
                        log.exception("sending back an expired message failed")
                        continue
                    offset = pq.remove_if_first(msg)
                    if offset >= 0 and not pq.is_dropped():
                        self.host.update_offset(mq, offset, increase_only=True)
        finally:
            self.host.schedule(self._clean_expired_messages, self.consume_timeout_ms)

    # ------------------------------------------------------------------ admin
    def consume_message_directly(self, msg: MessageExt, broker_name: str) -> tuple[str, int, str | None]:
        """CONSUME_MESSAGE_DIRECTLY: run the listener once; (CMResult name, spent ms, remark)."""
        mq = MessageQueue(msg.topic, broker_name, msg.queue_id)
        context = ConsumeConcurrentlyContext(message_queue=mq)
        self.host.reset_retry_and_namespace([msg])
        begin = time.monotonic()
        try:
            status = self._listener()([msg], context)
        except Exception as exc:
            return "CR_THROW_EXCEPTION", int((time.monotonic() - begin) * 1000), repr(exc)
        spent = int((time.monotonic() - begin) * 1000)
        if status == ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            return "CR_SUCCESS", spent, None
        if status == ConsumeConcurrentlyStatus.RECONSUME_LATER:
            return "CR_LATER", spent, None
        return "CR_RETURN_NULL", spent, None
