"""The source's logic without Spark: offset planning on the driver, queue reads on executors.

Kept free of pyspark so it is unit-testable and so the pyspark classes in
:mod:`rocketq.spark.reader` stay thin. Mirrors what a Java pull consumer that owns its
offsets does (``DefaultMQPullConsumer`` + ``MQAdminImpl``, reference 6.2a and 7.2), with the
semantics of Spark's Kafka source (``KafkaMicroBatchStream``/``KafkaSource``):

* :class:`QueueRange` is one Spark partition: one message queue, ``[start, end)`` in queue
  offsets, plus everything an executor needs to connect (plain picklable data). ``start``
  may be :data:`~rocketq.spark.offsets.EARLIEST` for a queue first seen mid-stream.
* :func:`read_range` runs on an executor: its own :class:`SourceClient`, a synchronous
  pull loop that keeps requests in flight while answers are decoded (column-wise,
  :func:`rocketq.spark.columnar.decode_batch`), the client closed when the range is done.
* Deleted offsets (the broker answers PULL_OFFSET_MOVED, ``PullMessageProcessor`` for
  OFFSET_TOO_SMALL/OVERFLOW) raise :class:`DataLossError` with ``failOnDataLoss=true``, or
  are skipped with a warning.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import itertools
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from rocketq.client.api_results import PullResult, PullStatus
from rocketq.errors import ClientError, IllegalArgumentError
from rocketq.protocol.message_queue import MessageQueue
from rocketq.spark.client import SourceClient
from rocketq.spark.columnar import decode_batch
from rocketq.spark.offsets import EARLIEST, LATEST, OffsetMap
from rocketq.spark.options import ReadOptions

__all__ = [
    "DataLossError",
    "QueueRange",
    "plan_ranges",
    "read_range",
    "resolve_ending",
    "resolve_starting",
]

log = logging.getLogger(__name__)

#: Decode (and hand to Spark) once this many bytes of records are pending.
BATCH_BYTES: Final = 8 * 1024 * 1024
#: Pulls in flight per queue when there is no tag filter.
PULL_DEPTH: Final = 3


class DataLossError(ClientError):
    """Offsets that should have been read were deleted (``failOnDataLoss=true``)."""


@dataclass(frozen=True)
class QueueRange:
    """One partition of a read: queue ``topic/broker/queue_id``, offsets ``[start, end)``."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int
    options: ReadOptions

    @property
    def mq(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker, self.queue_id)


def _data_loss(options: ReadOptions, mq: MessageQueue, lost_from: int, lost_to: int, detail: str) -> None:
    message = (
        f"rocketmq source: offsets [{lost_from}, {lost_to}) of {mq} can no longer be read ({detail}). "
        "Some data may have been lost because they are not available in the broker any more: "
        "the messages were deleted (retention) or the queue was reset. If you want the query "
        "to continue, set option failOnDataLoss=false."
    )
    if options.fail_on_data_loss:
        raise DataLossError(message)
    log.warning("%s Skipping (failOnDataLoss=false).", message)


# ---------------------------------------------------------------------- driver side
def all_queues(client: SourceClient, topics: tuple[str, ...]) -> list[MessageQueue]:
    """Every readable queue of the topics, sorted."""
    out: list[MessageQueue] = []
    for topic in topics:
        out += client.queues(topic)
    return sorted(out)


def resolve_starting(client: SourceClient, options: ReadOptions, queues: list[MessageQueue]) -> OffsetMap:
    """Concrete start offsets from ``startingTimestamp``/``startingOffsets``.

    JSON -2/-1 become the queue's min/max offset; queues the JSON does not list start at
    the earliest offset.
    """
    if options.starting_timestamp_ms is not None:
        ts = options.starting_timestamp_ms
        return {mq: client.first_offset_at(mq, ts) for mq in queues}
    spec = options.starting_offsets
    out: OffsetMap = {}
    for mq in queues:
        if spec == "earliest":
            value = EARLIEST
        elif spec == "latest":
            value = LATEST
        else:
            assert isinstance(spec, dict)
            value = spec.get(mq.topic, {}).get(f"{mq.broker_name}:{mq.queue_id}", EARLIEST)
        if value == EARLIEST:
            value = client.min_offset(mq)
        elif value == LATEST:
            value = client.max_offset(mq)
        out[mq] = value
    return out


def resolve_ending(client: SourceClient, options: ReadOptions, queues: list[MessageQueue]) -> OffsetMap:
    """Concrete end offsets from ``endingTimestamp`` (the first offset stored at or after
    it, exclusive) or ``endingOffsets`` (latest, or JSON with -1 = latest; queues the JSON
    does not list end at the latest offset)."""
    if options.ending_timestamp_ms is not None:
        ts = options.ending_timestamp_ms
        return {mq: client.first_offset_at(mq, ts) for mq in queues}
    spec = options.ending_offsets
    out: OffsetMap = {}
    for mq in queues:
        value = LATEST
        if isinstance(spec, dict):
            value = spec.get(mq.topic, {}).get(f"{mq.broker_name}:{mq.queue_id}", LATEST)
        out[mq] = client.max_offset(mq) if value == LATEST else value
    return out


def check_start(client: SourceClient, options: ReadOptions, start: OffsetMap) -> OffsetMap:
    """Start offsets below a queue's min offset are lost data: raise, or move to the min."""
    out = dict(start)
    for mq, offset in start.items():
        if offset == EARLIEST:
            continue
        low = client.min_offset(mq)
        if offset < low:
            _data_loss(options, mq, offset, low, f"the earliest offset is now {low}")
            out[mq] = low
    return out


def plan_ranges(
    options: ReadOptions, start: Mapping[MessageQueue, int], end: Mapping[MessageQueue, int]
) -> list[QueueRange]:
    """One :class:`QueueRange` per queue with something to read, in queue order (more with
    option ``minPartitions``, see :func:`_split`).

    A queue missing from ``start`` (first seen mid-stream) starts at EARLIEST. ``end``
    below ``start`` raises IllegalArgumentError (an ending offset before the start).
    """
    ranges: list[QueueRange] = []
    for mq in sorted(end):
        stop = end[mq]
        begin = start.get(mq, EARLIEST)
        if begin != EARLIEST and stop < begin:
            raise IllegalArgumentError(f"ending offset {stop} of {mq} is before its starting offset {begin}")
        if begin == EARLIEST and stop <= 0:
            continue
        if begin == stop:
            continue
        ranges.append(QueueRange(mq.topic, mq.broker_name, mq.queue_id, begin, stop, options))
    if options.min_partitions is not None and len(ranges) < options.min_partitions:
        return _split(ranges, options.min_partitions)
    return ranges


def _split(ranges: list[QueueRange], min_partitions: int) -> list[QueueRange]:
    """Option ``minPartitions`` (the Kafka connector's ``KafkaOffsetRangeCalculator``): each
    range becomes ``max(Math.round(size / total * min_partitions), 1)`` consecutive pieces of
    near-equal size. A range starting at EARLIEST (a queue first seen mid-stream; its start
    is only known on the executor) stays whole."""
    # every range plan_ranges keeps is non-empty, so a range counted here makes total >= 1
    total = sum(r.end - r.start for r in ranges if r.start != EARLIEST)
    out: list[QueueRange] = []
    for r in ranges:
        size = r.end - r.start
        if r.start == EARLIEST:
            out.append(r)
            continue
        parts = min(max(int(size / total * min_partitions + 0.5), 1), size)  # Math.round
        bounds = [r.start + size * k // parts for k in range(parts + 1)]
        out += [dataclasses.replace(r, start=a, end=b) for a, b in itertools.pairwise(bounds)]
    return out


# ---------------------------------------------------------------------- executor side
def read_range(part: QueueRange, *, batch_bytes: int = BATCH_BYTES) -> Iterator[Any]:
    """Pull ``[start, end)`` of one queue and yield ``pyarrow.RecordBatch``es of the read schema.

    Runs on an executor with its own client, closed (I/O thread joined) when the range is
    done or the iterator is closed. Pulls stay in flight while answers are decoded. Only
    messages whose tag passes ``subExpression`` are yielded; with ``sqlFilter`` the broker
    evaluates the expression and only the matching messages arrive (a broker without
    ``enablePropertyFilter`` answers SYSTEM_ERROR, raised as a BrokerError).
    """
    options = part.options
    mq = part.mq
    end = part.end
    tags = options.tags
    subscription, expression_type = options.subscription
    with SourceClient(
        options.nameserver,
        group=options.consumer_group,
        timeout_ms=options.pull_timeout_ms,
        sub_expression=subscription,
        expression_type=expression_type,
        security=options.security,
    ) as client:
        offset = part.start
        if offset == EARLIEST:
            offset = client.min_offset(mq)
        batch = options.pull_batch_size
        pending: list[bytes] = []
        pending_bytes = 0

        def flush() -> Any:
            nonlocal pending, pending_bytes
            chunks, pending, pending_bytes = pending, [], 0
            # the pull bodies are joined once, inside decode_batch (with its read padding)
            return decode_batch(
                chunks,
                topic=mq.topic,
                broker=mq.broker_name,
                queue_id=mq.queue_id,
                tags=tags,
                end_offset=end,
                properties=options.include_properties,
            )

        # Requests in flight: (offset, count, future). Without a tag filter a full answer
        # of ``count`` messages ends exactly at ``offset + count``, so the next requests can
        # be sent before the answer arrives. An answer that ends elsewhere (a short one, or
        # with a tag filter one spanning more offsets than it holds) drops the guesses. Two
        # such answers in a row mean a transfer cap of the broker
        # (``maxTransferCountOnMessageInMemory``, 32 by default, or the byte caps): the
        # requests then ask for the size it delivers. A single one is the end of a
        # consume-queue file (300,000 entries by default), and the size stays: adopting it
        # would cut every later pull to that file's remainder (992 messages of 4,096 after
        # the first file: four times the pulls).
        depth = 1 if options.filtered else PULL_DEPTH
        step = batch
        missed_before = False  # the previous answer did not end at its request's guess
        inflight: collections.deque[tuple[int, int, concurrent.futures.Future[PullResult]]] = (
            collections.deque()
        )
        next_request = offset

        def fill() -> None:
            nonlocal next_request
            while len(inflight) < depth and next_request < end:
                count = min(step, end - next_request)
                inflight.append((next_request, count, client.pull_async(mq, next_request, count)))
                next_request += count

        fill()
        while inflight:
            requested, count, future = inflight.popleft()
            if requested != offset:
                continue  # a guess made stale by a short answer
            result = future.result()
            status = result.pull_status
            nxt = result.next_begin_offset
            if status is PullStatus.FOUND:
                new_offset = nxt
            elif status is PullStatus.OFFSET_ILLEGAL and nxt > offset:
                _data_loss(options, mq, offset, min(nxt, end), f"the earliest offset is now {nxt}")
                new_offset = nxt
            elif status is PullStatus.NO_MATCHED_MSG and nxt > offset:
                new_offset = nxt  # filtered out (by tag or SQL92) on the broker
            else:
                # NO_NEW_MSG (or OFFSET_ILLEGAL pointing back) below the planned end: the
                # queue holds fewer messages than when the range was planned.
                _data_loss(options, mq, offset, end, f"the queue ends at {nxt} now")
                new_offset = end
            missed = new_offset != requested + count
            if missed:
                if status is PullStatus.FOUND and new_offset > requested and missed_before:
                    # with a tag filter an answer spans more offsets than it holds messages:
                    # a request never asks for more than pullBatchSize
                    step = min(new_offset - requested, batch)
                inflight.clear()
                next_request = new_offset
            missed_before = missed
            offset = new_offset
            fill()  # keep the broker busy while this answer is decoded
            if status is PullStatus.FOUND and result.message_binary:
                pending.append(result.message_binary)
                pending_bytes += len(result.message_binary)
                if pending_bytes >= batch_bytes:
                    out = flush()
                    if out.num_rows:
                        yield out
        if pending:
            out = flush()
            if out.num_rows:
                yield out
