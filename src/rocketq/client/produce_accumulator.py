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
Eligible: single messages with no delay level, an ordinary topic, a body under
``max_body`` (not compressed), no explicit queue or selector; everything else is sent as
before. The producer checks a message (``check_message``) before :meth:`ProduceAccumulator.add`;
:meth:`ProduceAccumulator.offer` is its per-message fast path for a key added before: what
the check looks at beyond the topic (the body) it checks itself, and it declines anything
else, which then takes the producer's general path.

Messages of one topic with different ``WAIT`` (``wait_store_msg_ok``) values queue apart (a
batch carries one WAIT value, as the key of RocketMQ 5.x's ``ProduceAccumulator`` includes it).

The accumulator is generic over its per-message futures through a :class:`BatchFutures` kind:
:class:`ThreadFutures` (:class:`rocketq.client.batch_future.SendFuture`, one shared condition
per queue of a topic and one completion pass per batch) for the blocking producer,
:class:`AsyncioFutures` (futures of the running loop) for :class:`rocketq.aio.AsyncProducer`,
so both producers batch by the same rules. A message whose future was cancelled meanwhile (a
caller gave up) still leaves with its batch.

Invariant: every future of one queue was made with that queue's group (the kind's
``new_group``); a queue sent whole is replaced by a new queue with a new group, and a queue
sent in part keeps its group, so the futures of any batch share one group.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from rocketq.client.api_results import SendResult
from rocketq.client.batch_future import BatchOutcome, SendFuture, complete_batch, new_batch_group
from rocketq.errors import ClientError
from rocketq.protocol.message import Message, MessageConst
from rocketq.protocol.mixall import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

log = logging.getLogger(__name__)

__all__ = ["AsyncioFutures", "BatchDone", "BatchFutures", "ProduceAccumulator", "ThreadFutures"]

#: the per-message future type of one accumulator
_F = TypeVar("_F")
#: ``done(result, error)``: the producer's report that a batch was answered (exactly once)
BatchDone = Callable[[SendResult | None, BaseException | None], None]
#: a queue's key: the topic, or (topic, WAIT value) for a WAIT other than "true"
_Key = str | tuple[str, str]
_WAIT = MessageConst.PROPERTY_WAIT_STORE_MSG_OK
_DELAY = MessageConst.PROPERTY_DELAY_TIME_LEVEL


class BatchFutures(Generic[_F]):
    """How one kind of per-message future is made and completed (see the module docstring)."""

    def new_group(self) -> Callable[[], _F]:
        """The maker of the futures of one new queue (what they share, it binds)."""
        raise NotImplementedError

    def complete(self, futures: list[_F], outcome: BatchOutcome | None, error: BaseException | None) -> None:
        """Message ``i``'s future gets ``outcome.nth(i)``, or every future ``error``; futures
        already done (cancelled) are left alone."""
        raise NotImplementedError


class ThreadFutures(BatchFutures[SendFuture]):
    """:class:`SendFuture`\\ s sharing one condition per queue, completed in one pass."""

    def new_group(self) -> Callable[[], SendFuture]:
        return new_batch_group()

    def complete(
        self, futures: list[SendFuture], outcome: BatchOutcome | None, error: BaseException | None
    ) -> None:
        complete_batch(futures, outcome, error)


class AsyncioFutures(BatchFutures["asyncio.Future[SendResult]"]):
    """Futures of ``loop``; completed one by one on the loop's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def new_group(self) -> Callable[[], asyncio.Future[SendResult]]:
        return self._loop.create_future

    def complete(
        self,
        futures: list[asyncio.Future[SendResult]],
        outcome: BatchOutcome | None,
        error: BaseException | None,
    ) -> None:
        for i, f in enumerate(futures):
            if f.done():  # cancelled by its caller
                continue
            if error is not None:
                f.set_exception(error)
            else:
                assert outcome is not None
                f.set_result(outcome.nth(i))


class _TopicBatcher(Generic[_F]):
    """The queue of one key (messages and their futures) and its batches in flight."""

    __slots__ = ("futures", "in_flight", "msgs", "new_future", "queued_bytes")

    def __init__(self, new_future: Callable[[], _F]) -> None:
        #: batches of this key sent and not answered yet
        self.in_flight = 0
        self.msgs: list[Message] = []
        self.futures: list[_F] = []
        self.queued_bytes = 0
        #: makes the futures of this queue (BatchFutures.new_group)
        self.new_future = new_future


def _size(msg: Message) -> int:
    """What a message counts against ``max_bytes``: its body plus an entry's overhead."""
    return len(msg.body) + 64


class ProduceAccumulator(Generic[_F]):
    """Per-topic queues of asynchronous sends waiting for the topic's batch in flight.

    ``send_batch(msgs, done)`` sends one message or batch and calls ``done(result, error)``
    exactly once when it is answered (or raises, and then never calls it); ``futures`` makes
    and completes the per-message futures.
    """

    def __init__(
        self,
        send_batch: Callable[[list[Message], BatchDone], None],
        futures: BatchFutures[_F],
        *,
        max_messages: int = 256,
        max_bytes: int = 1024 * 1024,
        max_in_flight: int = 2,
        max_body: int = 4096,
    ) -> None:
        if max_messages < 1 or max_bytes < 1 or max_in_flight < 1:
            raise ValueError("max_messages, max_bytes and max_in_flight must be >= 1")
        self._send_batch = send_batch
        self._futures = futures
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        #: batches of one topic allowed in flight at once
        self.max_in_flight = max_in_flight
        #: :meth:`offer` takes bodies shorter than this (``auto_batch_body_limit``)
        self.max_body = max_body
        self._lock = threading.Lock()
        self._topics: dict[_Key, _TopicBatcher[_F]] = {}
        #: batches sent so far (for tests and stats)
        self.batches_sent = 0

    @staticmethod
    def eligible(msg: object) -> bool:
        """Only plain single messages: no delay, no retry topic (batches refuse both)."""
        if not isinstance(msg, Message):
            return False
        delay = msg.properties.get(_DELAY)
        if delay and msg.delay_time_level > 0:
            return False
        return not msg.topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))

    def add(self, msg: Message) -> _F:
        """Queue ``msg`` (an :meth:`eligible` one, checked by the producer); its future
        completes with its own SendResult."""
        fut = self._queue(msg, True)
        assert fut is not None
        return fut

    def offer(self, msg: object) -> _F | None:
        """:meth:`add` for a message of a key that :meth:`add` took before (so its topic passed
        the producer's checks, which are the same for every message of it: the topic's name)
        that is eligible, with a body of 1 to ``max_body - 1`` bytes; else None, and the caller
        takes its general path (which checks, and raises for a bad message). The producer's
        per-message fast path."""
        if not isinstance(msg, Message):
            return None
        body_len = len(msg.body)
        if body_len == 0 or body_len >= self.max_body:
            return None
        if msg.properties.get(_DELAY) and msg.delay_time_level > 0:
            return None
        return self._queue(msg, False)

    def _queue(self, msg: Message, new_key: bool) -> _F | None:
        """Append ``msg`` to its key's queue and send the queue if a slot is free; None when
        its key is unknown and not ``new_key``."""
        wait = msg.properties.get(_WAIT)
        key: _Key = msg.topic if wait is None or wait == "true" else (msg.topic, wait)
        size = len(msg.body) + 64
        with self._lock:
            batcher = self._topics.get(key)
            if batcher is None:
                if not new_key:
                    return None
                batcher = self._topics[key] = _TopicBatcher(self._futures.new_group())
            fut = batcher.new_future()
            batcher.msgs.append(msg)
            batcher.futures.append(fut)
            batcher.queued_bytes += size
            if batcher.in_flight >= self.max_in_flight:
                return fut
            batcher.in_flight += 1
            msgs, futures = self._take(batcher)
        self._launch(key, msgs, futures)
        return fut

    def _take(self, batcher: _TopicBatcher[_F]) -> tuple[list[Message], list[_F]]:
        """Up to max_messages / max_bytes from the front of the queue (lock held)."""
        msgs = batcher.msgs
        futures = batcher.futures
        if len(msgs) <= self.max_messages and batcher.queued_bytes <= self.max_bytes:
            # the whole queue fits (the usual case): swap it out, no per-message work under
            # the lock that every send_async takes; the next queue gets a new group
            batcher.msgs = []
            batcher.futures = []
            batcher.queued_bytes = 0
            batcher.new_future = self._futures.new_group()
            return msgs, futures
        n = 0
        size = 0
        while n < len(msgs) and n < self.max_messages:
            s = _size(msgs[n])
            if n and size + s > self.max_bytes:
                break
            size += s
            n += 1
        batcher.msgs = msgs[n:]
        batcher.futures = futures[n:]
        batcher.queued_bytes -= size
        return msgs[:n], futures[:n]

    def _launch(self, key: _Key, msgs: list[Message], futures: list[_F]) -> None:
        self.batches_sent += 1
        answered = False

        def done(result: SendResult | None, error: BaseException | None) -> None:
            nonlocal answered
            if answered:  # a send_batch answering twice must not free two slots
                log.error("batch of %s answered twice", key)
                return
            answered = True
            self._complete(key, futures, result, error)

        try:
            self._send_batch(msgs, done)
        except BaseException as exc:
            if answered:
                log.exception("batch of %s raised after it was answered", key)
            else:
                done(None, exc)

    def _complete(
        self, key: _Key, futures: list[_F], result: SendResult | None, error: BaseException | None
    ) -> None:
        try:
            if error is None and result is None:
                error = ClientError("a batch was answered without a result")
            outcome = None if result is None or error is not None else BatchOutcome(result, len(futures) == 1)
            self._futures.complete(futures, outcome, error)
        finally:
            self._next(key)

    def _next(self, key: _Key) -> None:
        """A batch of ``key`` was answered: send what queued meanwhile, or free its slot."""
        with self._lock:
            batcher = self._topics[key]
            if not batcher.msgs:
                batcher.in_flight -= 1
                return
            msgs, futures = self._take(batcher)
        self._launch(key, msgs, futures)
