"""The Spark source: batch reader and micro-batch stream reader of the ``rocketmq`` format.

Mirrors the shape of Spark's Kafka source (``KafkaBatch``, ``KafkaMicroBatchStream``) on
the Python Data Source API of pyspark 4.3: ``DataSourceReader`` and
``DataSourceStreamReader`` with ``latestOffset(start, limit)`` admission control and
``SupportsTriggerAvailableNow``. The RocketMQ side is the pull-consumer protocol of
:mod:`rocketq.spark.source` and :mod:`rocketq.spark.client`.

Invariants:

* Partitions are message queues (:class:`QueuePartition` wraps a plain, picklable
  :class:`~rocketq.spark.source.QueueRange`); executors open their own clients in
  ``read()`` and close them when the partition is done.
* Offsets are the JSON form of :mod:`rocketq.spark.offsets`; each micro-batch reads
  ``[start, end)`` per queue, so a query restarted from its checkpoint replays exactly the
  planned ranges (exactly-once into an idempotent sink). Queues that appear mid-stream are
  included from their earliest offset.
* ``maxOffsetsPerTrigger`` becomes ``ReadMaxRows``; the engine's limit is always obeyed
  (``ReadAllAvailable`` for Trigger.AvailableNow batches, which are capped by the offsets
  recorded in :meth:`RocketMQStreamReader.prepareForTriggerAvailableNow`).
* ``commit(end)`` writes ``end`` to the broker for ``consumerGroup`` (UPDATE_CONSUMER_OFFSET,
  ``RemoteBrokerOffsetStore.updateConsumeOffsetToBroker``) so consumer-progress tools show
  the pipeline's lag; so does ``latestOffset(start)``, whose ``start`` is always a
  completed batch (Spark does not call commit for the last batch of a query). Failures
  there are logged, never fatal.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import logging
import platform
from collections.abc import Iterator, Sequence
from typing import Any, Final

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from rocketq.errors import RocketqError
from rocketq.spark.client import SourceClient
from rocketq.spark.offsets import OffsetMap, from_json_obj, split_limit, to_json_obj
from rocketq.spark.options import ReadOptions
from rocketq.spark.source import (
    QueueRange,
    all_queues,
    check_start,
    plan_ranges,
    read_range,
    resolve_ending,
    resolve_starting,
)

__all__ = ["QueuePartition", "RocketMQReader", "RocketMQStreamReader", "tune_worker_allocator"]

log = logging.getLogger(__name__)

#: ``mallopt`` parameters of glibc's ``malloc.h``.
_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3
#: Blocks this large or larger are mmapped (glibc's dynamic threshold starts at 128 KiB and
#: tops out at 32 MiB): above the pull answers (at most ``maxTransferBytesOnMessageInMemory``,
#: 256 KiB by default, 4 MiB in bulk setups) and the joined bodies of a batch (8 MiB).
WORKER_MMAP_THRESHOLD: Final = 16 << 20
#: Free memory at the top of the heap kept, not returned to the OS, up to this much.
WORKER_TRIM_THRESHOLD: Final = 32 << 20


@functools.cache
def tune_worker_allocator() -> bool:
    """Keep the read's large buffers on the heap of this (Python worker) process: glibc
    only, once per process; returns whether the settings are in force.

    With glibc's defaults, the multi-MiB buffers of a bulk read that go through malloc
    (pull answers, joined bodies, numpy columns; pyarrow has its own allocator) are
    mmapped, or trimmed off the heap's top, when freed, so the
    next one of the same size faults every page in again and the kernel zeroes it: 5,761
    page faults per 500k messages of 100 bytes, and 14% of ``read_range``'s CPU
    (0.115 against 0.099 CPU s in-process; Spark's workers 0.30 against 0.28 CPU s per
    million rows). Fixed thresholds make freed blocks reusable; the price is up to
    :data:`WORKER_TRIM_THRESHOLD` of freed memory that the worker keeps.
    """
    applied = False
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        try:
            mallopt = ctypes.CDLL(None).mallopt
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            mallopt.restype = ctypes.c_int
            # mallopt returns 1 on success, 0 on error
            applied = bool(mallopt(_M_MMAP_THRESHOLD, WORKER_MMAP_THRESHOLD)) and bool(
                mallopt(_M_TRIM_THRESHOLD, WORKER_TRIM_THRESHOLD)
            )
        except (OSError, AttributeError):
            pass  # no mallopt after all: leave the allocator as it is
    log.debug("python worker allocator thresholds %s", "set" if applied else "left as they are")
    return applied


class QueuePartition(InputPartition):
    """One message queue's offset range (``range``: a :class:`QueueRange`)."""

    def __init__(self, range_: QueueRange) -> None:
        super().__init__(range_)
        self.range = range_

    def __repr__(self) -> str:
        r = self.range
        return f"QueuePartition({r.topic}@{r.broker}:{r.queue_id} [{r.start}, {r.end}))"


def _read(partition: InputPartition) -> Iterator[Any]:
    """What both readers' ``read()`` do, on an executor's Python worker."""
    # Spark's worker daemon runs gc.collect() after every task of a reused worker, and a
    # full collection walks every tracked object: the imported modules of pyspark, pyarrow,
    # numpy and rocketq included: about a sixth of the workers' CPU in a bulk read
    # (0.07 of 0.45 CPU s per million rows, benchmarks/spark_bench.py).
    # gc.freeze (made for pre-fork servers) moves the objects alive now to the permanent
    # generation, which collections skip; the read's own objects are collected as usual,
    # and frozen objects are still freed by reference counting (only a reference cycle
    # among them would stay). At the start of a task the daemon has just collected.
    gc.freeze()
    tune_worker_allocator()
    if isinstance(partition, QueuePartition):  # Spark reads one empty partition when there is none
        yield from read_range(partition.range)


def _client(options: ReadOptions) -> SourceClient:
    return SourceClient(
        options.nameserver,
        group=options.consumer_group,
        timeout_ms=options.pull_timeout_ms,
        security=options.security,
    )


class RocketMQReader(DataSourceReader):
    """Batch reads: ``startingOffsets``/``startingTimestamp`` to ``endingOffsets``."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        with _client(self.options) as client:
            queues = all_queues(client, self.options.topics)
            start = check_start(client, self.options, resolve_starting(client, self.options, queues))
            end = resolve_ending(client, self.options, queues)
        return [QueuePartition(r) for r in plan_ranges(self.options, start, end)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads with admission control and Trigger.AvailableNow."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._client: SourceClient | None = None
        self._target: OffsetMap | None = None
        self._committed: OffsetMap = {}

    @property
    def client(self) -> SourceClient:
        if self._client is None:
            self._client = _client(self.options)
        return self._client

    def _latest(self) -> OffsetMap:
        client = self.client
        return {mq: client.max_offset(mq) for mq in all_queues(client, self.options.topics)}

    def initialOffset(self) -> dict[str, dict[str, int]]:  # noqa: N802 - pyspark API
        client = self.client
        queues = all_queues(client, self.options.topics)
        start = check_start(client, self.options, resolve_starting(client, self.options, queues))
        return to_json_obj(start)

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 - pyspark API
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - pyspark API
        self._target = self._latest()
        log.info("rocketmq source: Trigger.AvailableNow target %s", to_json_obj(self._target))

    def latestOffset(self, start: dict[str, dict[str, int]], limit: ReadLimit) -> dict[str, dict[str, int]]:  # noqa: N802 - pyspark API
        begin = from_json_obj(start)
        # MicroBatchExecution asks for the next batch only once the batch ending at
        # ``start`` is committed, but calls commit(end) only when it constructs a batch:
        # the last batch of a query (e.g. AvailableNow) would never reach the broker.
        self._commit_group(begin)
        latest = self._latest()
        if self._target is not None:
            # never past the offsets recorded when the AvailableNow query began; queues
            # created since then are not read by this query
            latest = {mq: min(off, self._target.get(mq, begin.get(mq, 0))) for mq, off in latest.items()}
        latest = {mq: max(off, begin.get(mq, 0)) for mq, off in latest.items()}
        for mq, off in begin.items():
            latest.setdefault(mq, off)  # a queue that vanished from the route keeps its offset
        if isinstance(limit, ReadMaxRows):
            end = split_limit(begin, latest, int(limit.max_rows))
        else:
            end = latest
        return to_json_obj(end)

    def partitions(
        self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
    ) -> Sequence[InputPartition]:
        return [
            QueuePartition(r) for r in plan_ranges(self.options, from_json_obj(start), from_json_obj(end))
        ]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        self._commit_group(from_json_obj(end))

    def _commit_group(self, offsets: OffsetMap) -> None:
        """UPDATE_CONSUMER_OFFSET for ``consumerGroup`` (only the offsets that moved)."""
        group = self.options.consumer_group
        if group is None:
            return
        client = self.client
        for mq, offset in offsets.items():
            if self._committed.get(mq) == offset:
                continue
            try:
                client.update_consumer_offset(group, mq, offset)
                self._committed[mq] = offset
            except RocketqError as exc:
                log.warning(
                    "rocketmq source: could not commit offset %d of %s for %s: %s", offset, mq, group, exc
                )

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
