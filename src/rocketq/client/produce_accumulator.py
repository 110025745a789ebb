"""Opportunistic batching of asynchronous sends (the producer's ``auto_batch`` option).

Mirrors the purpose of RocketMQ 5.x's ``ProduceAccumulator`` (``DefaultMQProducer.
setAutoBatch``): many small asynchronous sends to one topic leave as SEND_BATCH_MESSAGE
requests. Instead of a linger timer, batching is *opportunistic* (Nagle without the delay):

* while fewer than ``max_in_flight`` batches of a topic are in flight, a message is sent at
  once (alone, if nothing is queued) — an idle producer adds no latency;
* while ``max_in_flight`` are in flight, later messages of the topic queue up; when one
  completes, the queue leaves as one batch (at most ``max_messages`` and ``max_bytes``;
  the rest waits for the next completion).

So under load, batches grow to what a round trip takes to fill. With two in flight the
producer prepares one batch while the broker stores the other (on 2 cores, 1,000 sends in
flight: 42,400 msgs/s with one batch in flight, 56,700-60,100 with two, 51,200-52,000 with
four; ``benchmarks`` workload 3). Each message's future
still gets its own SendResult: its own UNIQ_KEY msg id, the i-th offset msg id of the batch
and queue offset ``first + i`` (the broker stores a batch with consecutive offsets in one
queue). A failed batch fails every message in it (after the producer's usual retries).
Eligible: single messages with no delay level, an ordinary topic, no explicit queue or
selector; everything else is sent as before.

The accumulator is generic over its futures: :class:`concurrent.futures.Future` for the
blocking producer, :class:`asyncio.Future` (made by the running loop) for
:class:`rocketq.aio.AsyncProducer`, so both producers batch by the same rules. A message whose
future was cancelled meanwhile (an asyncio caller gave up) still leaves with its batch.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rocketq.client.api_results import SendResult
from rocketq.protocol.message import Message
from rocketq.protocol.mixall import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

__all__ = ["ProduceAccumulator"]

#: the future type of one accumulator: thread futures or asyncio futures
_F = TypeVar("_F", concurrent.futures.Future[SendResult], asyncio.Future[SendResult])


@dataclass(slots=True)
class _Pending(Generic[_F]):
    msg: Message
    size: int
    future: _F


class _TopicBatcher(Generic[_F]):
    __slots__ = ("in_flight", "queue", "queued_bytes")

    def __init__(self) -> None:
        #: batches of this topic sent and not answered yet
        self.in_flight = 0
        self.queue: collections.deque[_Pending[_F]] = collections.deque()
        self.queued_bytes = 0


class ProduceAccumulator(Generic[_F]):
    """Per-topic queues of asynchronous sends waiting for the topic's batch in flight.

    ``send_batch(msgs)`` sends one message or batch and returns its future; ``new_future``
    makes the per-message futures (default :class:`concurrent.futures.Future`).
    """

    def __init__(
        self,
        send_batch: Callable[[list[Message]], _F],
        *,
        new_future: Callable[[], _F],
        max_messages: int = 256,
        max_bytes: int = 1024 * 1024,
        max_in_flight: int = 2,
    ) -> None:
        if max_messages < 1 or max_bytes < 1 or max_in_flight < 1:
            raise ValueError("max_messages, max_bytes and max_in_flight must be >= 1")
        self._send_batch: Callable[[list[Message]], _F] = send_batch
        self._new_future: Callable[[], _F] = new_future
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        #: batches of one topic allowed in flight at once
        self.max_in_flight = max_in_flight
        self._lock = threading.Lock()
        self._topics: dict[str, _TopicBatcher[_F]] = {}
        #: batches sent so far (for tests and stats)
        self.batches_sent = 0

    @staticmethod
    def eligible(msg: object) -> bool:
        """Only plain single messages: no delay, no retry topic (batches refuse both)."""
        return (
            isinstance(msg, Message)
            and msg.delay_time_level <= 0
            and not msg.topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
        )

    def add(self, msg: Message) -> _F:
        """Queue ``msg``; its future completes with its own SendResult."""
        pending = _Pending(msg, len(msg.body) + 64, self._new_future())
        with self._lock:
            batcher = self._topics.get(msg.topic)
            if batcher is None:
                batcher = self._topics[msg.topic] = _TopicBatcher[_F]()
            batcher.queue.append(pending)
            batcher.queued_bytes += pending.size
            if batcher.in_flight >= self.max_in_flight:
                return pending.future
            batcher.in_flight += 1
            batch = self._take(batcher)
        self._launch(msg.topic, batch)
        return pending.future

    def _take(self, batcher: _TopicBatcher[_F]) -> Sequence[_Pending[_F]]:
        """Up to max_messages / max_bytes from the front of the queue (lock held)."""
        queue = batcher.queue
        if len(queue) <= self.max_messages and batcher.queued_bytes <= self.max_bytes:
            # the whole queue fits (the usual case): swap it out, no per-message work under
            # the lock that every send_async takes
            batcher.queue = collections.deque()
            batcher.queued_bytes = 0
            return queue
        taken: list[_Pending[_F]] = []
        size = 0
        while queue and len(taken) < self.max_messages:
            if taken and size + queue[0].size > self.max_bytes:
                break
            head = queue.popleft()
            taken.append(head)
            size += head.size
        batcher.queued_bytes -= size
        return taken

    def _launch(self, topic: str, batch: Sequence[_Pending[_F]]) -> None:
        self.batches_sent += 1
        try:
            fut = self._send_batch([p.msg for p in batch])
        except BaseException as exc:
            self._complete(topic, batch, None, exc)
            return
        fut.add_done_callback(lambda f: self._complete(topic, batch, f, None))

    def _complete(
        self,
        topic: str,
        batch: Sequence[_Pending[_F]],
        fut: _F | None,
        error: BaseException | None,
    ) -> None:
        exc = error if fut is None else fut.exception()
        if exc is not None:
            for p in batch:
                if not p.future.done():
                    p.future.set_exception(exc)
        else:
            assert fut is not None
            result = fut.result()
            if len(batch) == 1:
                if not batch[0].future.done():
                    batch[0].future.set_result(result)
            else:
                offset_ids = result.offset_msg_id.split(",")
                msg_ids = result.msg_id.split(",")
                status, mq, first = result.status, result.message_queue, result.queue_offset
                tx, region, trace = result.transaction_id, result.region_id, result.trace_on
                for i, p in enumerate(batch):
                    if p.future.done():  # cancelled by its (asyncio) caller
                        continue
                    # one SendResult per message (a direct construction: dataclasses.replace
                    # costs twice as much, and this runs per message)
                    p.future.set_result(
                        SendResult(
                            status=status,
                            msg_id=msg_ids[i] if i < len(msg_ids) else result.msg_id,
                            offset_msg_id=offset_ids[i] if i < len(offset_ids) else result.offset_msg_id,
                            message_queue=mq,
                            queue_offset=first + i,
                            transaction_id=tx,
                            region_id=region,
                            trace_on=trace,
                        )
                    )
        with self._lock:
            batcher = self._topics[topic]
            if not batcher.queue:
                batcher.in_flight -= 1
                return
            nxt = self._take(batcher)
        self._launch(topic, nxt)
