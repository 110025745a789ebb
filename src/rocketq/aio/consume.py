"""Consume services of the asyncio push consumer: coroutine listeners on the caller's loop.

Mirror ``ConsumeMessageConcurrentlyService`` and ``ConsumeMessageOrderlyService`` with tasks
instead of threads. The decisions are the blocking services' own: the result classification
(:func:`~rocketq.client.consumer.listener.classify_consume_result`), the retry split and the
reconsume limits (:mod:`rocketq.client.consumer.retry`), and every offset comes from the shared
:class:`~rocketq.client.consumer.process_queue.ProcessQueue` (``remove_messages`` — the smallest
offset still cached — for concurrent mode, ``commit`` for orderly).

Concurrent: ``consume_concurrency`` worker tasks take batches of
``consume_message_batch_max_size`` from one queue; a listener that raises or returns ``None``
counts as RECONSUME_LATER; failed messages go back through CONSUMER_SEND_MSG_BACK (the host
falls back to a copy sent to ``%RETRY%<group>``); a message whose send-back failed is consumed
again locally 5 s later and keeps its place, so the committed offset cannot pass it. A listener
running longer than ``consume_timeout`` is cancelled and counts as RECONSUME_LATER (SUSPEND in
orderly mode); hooks see TIME_OUT, as for a Java listener that answered late. Consume hooks
(:class:`~rocketq.client.consumer.listener.ConsumeMessageHook`) run around every listener call.

Orderly: one consume task per queue at a time (the ProcessQueue's dispatch flag), only while
the broker-side lock is held and fresh (CLUSTERING); SUCCESS commits; SUSPEND retries the same
messages after the suspend time; a message over ``max_reconsume_times`` goes to the DLQ (via
``%RETRY%`` with RECONSUME_TIME = max) and the queue moves on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from rocketq.aio.remoting import wait_for
from rocketq.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeMessageHook,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    classify_consume_result,
    run_after_hooks,
    run_before_hooks,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.retry import (
    OrderlyAction,
    orderly_action,
    orderly_max_reconsume_times,
    split_concurrent_result,
)
from rocketq.client.consumer.stats import ConsumerStatsManager
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import MessageConst, MessageExt, put_properties_lazily_each
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "AsyncConcurrentListener",
    "AsyncConsumeHost",
    "AsyncOrderlyListener",
    "ConcurrentConsumeService",
    "OrderlyConsumeService",
]

log = logging.getLogger(__name__)

#: ``(msgs, context) -> status``: an asyncio concurrent listener.
AsyncConcurrentListener = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext], Awaitable["ConsumeConcurrentlyStatus | None"]
]
#: ``(msgs, context) -> status``: an asyncio orderly listener.
AsyncOrderlyListener = Callable[
    [list[MessageExt], ConsumeOrderlyContext], Awaitable["ConsumeOrderlyStatus | None"]
]

#: local re-consumption after a failed send-back (``submitConsumeRequestLater``)
RESUBMIT_DELAY_S = 5.0
#: delay level of an expired (timed-out) message sent back
_EXPIRED_DELAY_LEVEL = 3
_SUSPEND_MIN_MS = 10
_SUSPEND_MAX_MS = 30_000
#: ``MAX_TIME_CONSUME_CONTINUOUSLY``
_MAX_TIME_CONSUME_CONTINUOUSLY_S = 60.0


class AsyncConsumeHost(Protocol):
    """What the consume services need from the asyncio push consumer."""

    consumer_group: str
    stats: ConsumerStatsManager
    hooks: list[ConsumeMessageHook]

    def message_model(self) -> MessageModel: ...

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> None: ...

    async def send_to_dlq(self, msg: MessageExt, max_reconsume_times: int) -> None: ...

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None: ...

    def reset_retry_topic(self, msgs: Sequence[MessageExt]) -> None: ...

    async def lock(self, mq: MessageQueue) -> bool: ...

    def spawn(self, coro: Awaitable[None]) -> None: ...


class ConcurrentConsumeService:
    """``ConsumeMessageConcurrentlyService`` with worker tasks."""

    def __init__(
        self,
        host: AsyncConsumeHost,
        listener: AsyncConcurrentListener,
        *,
        concurrency: int,
        batch_size: int,
        consume_timeout_ms: int,
    ) -> None:
        self.host = host
        self.listener = listener
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.consume_timeout_ms = consume_timeout_ms
        self._queue: asyncio.Queue[tuple[list[MessageExt], ProcessQueue, MessageQueue]] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        #: workers waiting for a batch (the others are inside a listener call)
        self._idle: set[asyncio.Task[None] | None] = set()
        self._stopping = False

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._workers = [
            loop.create_task(self._worker(), name=f"{self.host.consumer_group}-consume-{i}")
            for i in range(self.concurrency)
        ]

    async def shutdown(self, wait_ms: int) -> None:
        """Queued batches are dropped; running listeners get ``wait_ms`` to finish, then are
        cancelled (``shutdown_consume_pool``'s bounded wait). Every worker is awaited."""
        self._stopping = True
        workers, self._workers = self._workers, []
        for task in workers:
            if task in self._idle:
                task.cancel()
        busy = [t for t in workers if not t.done() and t not in self._idle]
        if busy:
            _, late = await asyncio.wait(busy, timeout=wait_ms / 1000.0)
            for task in late:
                log.warning(
                    "a listener of %s still ran after shutdown's %d ms wait",
                    self.host.consumer_group,
                    wait_ms,
                )
                task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)

    def submit(self, msgs: Sequence[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        for start in range(0, len(msgs), self.batch_size):
            self._queue.put_nowait((list(msgs[start : start + self.batch_size]), pq, mq))

    async def _worker(self) -> None:
        me = asyncio.current_task()
        while not self._stopping:
            self._idle.add(me)
            try:
                msgs, pq, mq = await self._queue.get()
            finally:
                self._idle.discard(me)
            try:
                await self._consume(msgs, pq, mq)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("consume of %s failed", mq)

    async def call_listener(
        self, msgs: list[MessageExt], context: ConsumeConcurrentlyContext
    ) -> tuple[ConsumeConcurrentlyStatus | None, bool]:
        """The listener with the consume timeout: (status or None, whether it raised or
        timed out)."""
        status, raised, timed_out = await self._call_listener(msgs, context)
        return status, raised or timed_out

    async def _call_listener(
        self, msgs: list[MessageExt], context: ConsumeConcurrentlyContext
    ) -> tuple[ConsumeConcurrentlyStatus | None, bool, bool]:
        """(status or None, whether it raised, whether it was cancelled at the timeout)."""
        try:
            result: object = await wait_for(
                self.listener(list(msgs), context), self.consume_timeout_ms / 1000.0
            )
        except asyncio.TimeoutError:
            log.warning(
                "listener of %s timed out after %d ms", context.message_queue, self.consume_timeout_ms
            )
            return None, False, True
        except Exception:
            log.exception(
                "consume message exception: group=%s %s", self.host.consumer_group, context.message_queue
            )
            return None, True, False
        status = result if isinstance(result, ConsumeConcurrentlyStatus) else None
        if result is not None and status is None:  # an untyped listener may return anything
            log.warning("listener returned %r, which is not a ConsumeConcurrentlyStatus", result)
        return status, False, False

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        host = self.host
        if pq.is_dropped():
            return
        context = ConsumeConcurrentlyContext(message_queue=mq)
        host.reset_retry_topic(msgs)
        hook_ctx = run_before_hooks(host.hooks, host.consumer_group, mq, msgs)
        # ConsumeRequest.run: after the before-hooks, every message of the batch gets the
        # batch's start time (encoded once, as the blocking service does)
        put_properties_lazily_each(msgs, {MessageConst.CONSUME_START_TIME: str(int(time.time() * 1000))})
        begin = time.monotonic()
        raw, has_exception, timed_out = await self._call_listener(msgs, context)
        consume_rt_ms = int((time.monotonic() - begin) * 1000)
        if timed_out:
            # cancelled at the timeout: RECONSUME_LATER, which the hooks see as TIME_OUT (as
            # a listener answering late); the timer may fire a fraction of a ms early
            raw = ConsumeConcurrentlyStatus.RECONSUME_LATER
            consume_rt_ms = max(consume_rt_ms, self.consume_timeout_ms)
        status, return_type = classify_consume_result(
            raw,
            ConsumeConcurrentlyStatus.RECONSUME_LATER,
            has_exception=has_exception,
            consume_rt_ms=consume_rt_ms,
            consume_timeout_ms=self.consume_timeout_ms,
        )
        run_after_hooks(
            host.hooks, hook_ctx, return_type, status, status == ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        )
        host.stats.inc_consume_rt(host.consumer_group, mq.topic, consume_rt_ms)
        if pq.is_dropped():
            return
        await self.process_consume_result(status, context, msgs, pq, mq)

    async def process_consume_result(
        self,
        status: ConsumeConcurrentlyStatus,
        context: ConsumeConcurrentlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> None:
        host = self.host
        ok, failed = split_concurrent_result(status, context, msgs)
        if ok:
            host.stats.inc_consume_ok_tps(host.consumer_group, mq.topic, ok)
        host.stats.inc_consume_failed_tps(host.consumer_group, mq.topic, len(msgs) - ok)
        done = msgs
        if failed and host.message_model() is MessageModel.BROADCASTING:
            for msg in failed:
                log.warning("BROADCASTING, the message consume failed, drop it: %s", msg.msg_id)
        elif failed:
            back_failed = []
            for msg in failed:
                try:
                    await host.send_message_back(msg, context.delay_level_when_next_consume, mq.broker_name)
                except Exception:
                    log.exception("sending a failed message back failed; consuming it again locally later")
                    msg.reconsume_times += 1
                    back_failed.append(msg)
            if back_failed:
                done = [m for m in msgs if all(m is not f for f in back_failed)]
                host.spawn(self._submit_later(back_failed, pq, mq))
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.is_dropped():
            host.update_offset(mq, offset, increase_only=True)

    async def _submit_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        await asyncio.sleep(RESUBMIT_DELAY_S)
        self.submit(msgs, pq, mq)

    async def clean_expired(self, tables: Sequence[tuple[MessageQueue, ProcessQueue]]) -> None:
        """``cleanExpireMsg``: send back messages whose listener has run past consume_timeout."""
        for mq, pq in tables:
            for msg in pq.expired_messages(self.consume_timeout_ms):
                try:
                    await self.host.send_message_back(msg, _EXPIRED_DELAY_LEVEL, mq.broker_name)
                except Exception:
                    log.exception("sending back an expired message failed")
                    continue
                offset = pq.remove_if_first(msg)
                if offset >= 0 and not pq.is_dropped():
                    self.host.update_offset(mq, offset, increase_only=True)


class OrderlyConsumeService:
    """``ConsumeMessageOrderlyService`` with one task per queue at a time."""

    def __init__(
        self,
        host: AsyncConsumeHost,
        listener: AsyncOrderlyListener,
        *,
        batch_size: int,
        consume_timeout_ms: int,
        suspend_ms: int,
        max_reconsume_times: int,
    ) -> None:
        self.host = host
        self.listener = listener
        self.batch_size = batch_size
        self.consume_timeout_ms = consume_timeout_ms
        self.suspend_ms = suspend_ms
        self.max_reconsume_times = orderly_max_reconsume_times(max_reconsume_times)
        self.dlq_count = 0
        self._running: dict[MessageQueue, asyncio.Task[None]] = {}
        self._stopped = False

    def start(self) -> None:
        """Nothing runs until messages arrive."""

    async def shutdown(self, wait_ms: int) -> None:
        """Let each running batch finish its listener call within ``wait_ms``, then cancel."""
        self._stopped = True
        tasks = [t for t in self._running.values() if not t.done()]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=wait_ms / 1000.0)
            for task in late:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def quiesce(self, mq: MessageQueue, timeout_s: float) -> bool:
        """Wait (bounded) until no batch of ``mq`` is inside the listener; False on timeout.

        The queue's ProcessQueue is dropped first, so its task stops after the current batch."""
        task = self._running.get(mq)
        if task is None or task.done():
            return True
        done, _ = await asyncio.wait([task], timeout=timeout_s)
        return bool(done)

    def submit(self, pq: ProcessQueue, mq: MessageQueue, dispatch: bool) -> None:
        if dispatch:
            self._start(pq, mq, 0)

    def _start(self, pq: ProcessQueue, mq: MessageQueue, delay_ms: int) -> None:
        if self._stopped:
            return
        task = asyncio.get_running_loop().create_task(self._run(pq, mq, delay_ms))
        self._running[mq] = task
        task.add_done_callback(lambda t: self._running.pop(mq, None) if self._running.get(mq) is t else None)

    def _later(self, pq: ProcessQueue, mq: MessageQueue, suspend_ms: int) -> None:
        delay = self.suspend_ms if suspend_ms == -1 else suspend_ms
        self._start(pq, mq, min(max(delay, _SUSPEND_MIN_MS), _SUSPEND_MAX_MS))

    async def _run(self, pq: ProcessQueue, mq: MessageQueue, delay_ms: int) -> None:
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000.0)
        host = self.host
        clustering = host.message_model() is MessageModel.CLUSTERING
        begin = time.monotonic()
        while not (pq.is_dropped() or self._stopped):
            if clustering and (not pq.locked or pq.is_lock_expired()):
                locked = await host.lock(mq)
                self._later(pq, mq, 10 if locked else 3000)
                return
            if time.monotonic() - begin > _MAX_TIME_CONSUME_CONTINUOUSLY_S:
                self._later(pq, mq, 10)
                return
            msgs = pq.take_messages(self.batch_size)
            if not msgs:
                return
            host.reset_retry_topic(msgs)
            if not await self._consume_batch(msgs, pq, mq):
                return

    async def _consume_batch(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> bool:
        host = self.host
        context = ConsumeOrderlyContext(message_queue=mq)
        raw: ConsumeOrderlyStatus | None = None
        has_exception = timed_out = False
        hook_ctx = run_before_hooks(host.hooks, host.consumer_group, mq, msgs)
        begin = time.monotonic()
        try:
            result = await wait_for(self.listener(list(msgs), context), self.consume_timeout_ms / 1000.0)
            raw = result if isinstance(result, ConsumeOrderlyStatus) else None
        except asyncio.TimeoutError:
            # cancelled at the timeout: SUSPEND, which the hooks see as TIME_OUT
            log.warning("orderly listener of %s timed out after %d ms", mq, self.consume_timeout_ms)
            raw, timed_out = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, True
        except Exception:
            has_exception = True
            log.exception("orderly consume exception: group=%s %s", host.consumer_group, mq)
        consume_rt_ms = int((time.monotonic() - begin) * 1000)
        if timed_out:  # the timer may fire a fraction of a ms early
            consume_rt_ms = max(consume_rt_ms, self.consume_timeout_ms)
        status, return_type = classify_consume_result(
            raw,
            ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
            has_exception=has_exception,
            consume_rt_ms=consume_rt_ms,
            consume_timeout_ms=self.consume_timeout_ms,
        )
        success = status in (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT)
        run_after_hooks(host.hooks, hook_ctx, return_type, status, success)
        host.stats.inc_consume_rt(host.consumer_group, mq.topic, consume_rt_ms)
        if pq.is_dropped():
            pq.rollback()
            return False
        # ConsumeMessageOrderlyService.processConsumeResult, by the shared orderly_action rule
        commit_offset = -1
        keep_going = True
        action = orderly_action(status, context.auto_commit)
        if action in (OrderlyAction.COMMIT, OrderlyAction.COMMIT_ONLY):
            commit_offset = pq.commit()
        if action in (OrderlyAction.COMMIT, OrderlyAction.KEEP):
            host.stats.inc_consume_ok_tps(host.consumer_group, mq.topic, len(msgs))
        elif action is OrderlyAction.ROLLBACK:
            pq.rollback()
            self._later(pq, mq, context.suspend_current_queue_time_millis)
            keep_going = False
        elif action is OrderlyAction.SUSPEND:
            host.stats.inc_consume_failed_tps(host.consumer_group, mq.topic, len(msgs))
            if await self._check_reconsume_times(msgs):
                pq.make_message_to_consume_again(msgs)
                self._later(pq, mq, context.suspend_current_queue_time_millis)
                return False
            if context.auto_commit:
                commit_offset = pq.commit()
        if commit_offset >= 0 and not pq.is_dropped():
            host.update_offset(mq, commit_offset, increase_only=False)
        return keep_going

    async def _check_reconsume_times(self, msgs: list[MessageExt]) -> bool:
        """``checkReconsumeTimes``: True to suspend and retry; messages over the max go to the DLQ."""
        suspend = False
        for msg in msgs:
            if msg.reconsume_times >= self.max_reconsume_times:
                try:
                    await self.host.send_to_dlq(msg, self.max_reconsume_times)
                except Exception:
                    log.exception("sending an orderly message to the DLQ failed; retrying it")
                    suspend = True
                    msg.reconsume_times += 1
                    continue
                self.dlq_count += 1
                log.error(
                    "ORDER BROKEN: message %s went to the DLQ after %d tries", msg.msg_id, msg.reconsume_times
                )
            else:
                suspend = True
                msg.reconsume_times += 1
        return suspend
