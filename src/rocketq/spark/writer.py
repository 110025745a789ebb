"""The Spark sink of the ``rocketmq`` format: batch and streaming Arrow writers.

Thin pyspark classes (``DataSourceArrowWriter``, ``DataSourceStreamArrowWriter`` of
pyspark 4.3) over :class:`rocketq.spark.sink.MessageSink`, shaped like the Kafka sink
(``KafkaWriter``): each task opens its own producer, sends its rows and shuts the
producer down (no thread outlives the task); the commit message carries the count.

Delivery is at-least-once. Each row carries ``SPARK_ROW_ID`` = ``<write id>-<partition>-
<row>``, the same on every attempt of a task, so the duplicates a retried task (or a
replayed micro-batch) produces can be dropped downstream. The write id is a random id per
batch write, and ``<query id>-<batch id>`` for a streaming query (stable across restarts
from the checkpoint, taken from Spark's task-local properties).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from rocketq.spark.options import WriteOptions
from rocketq.spark.sink import MessageSink

__all__ = ["RocketMQCommitMessage", "RocketMQStreamWriter", "RocketMQWriter"]

log = logging.getLogger(__name__)

#: Task-local properties Spark's StreamExecution sets (``StreamExecution.QUERY_ID_KEY``,
#: ``MicroBatchExecution.BATCH_ID_KEY``).
_QUERY_ID_KEY = "sql.streaming.queryId"
_BATCH_ID_KEY = "streaming.sql.batchId"


@dataclass(frozen=True)
class RocketMQCommitMessage(WriterCommitMessage):
    """What one task reports: its partition, attempt and the messages it sent."""

    partition_id: int
    attempt: int
    sent: int


def _task() -> tuple[int, int, TaskContext | None]:
    ctx = TaskContext.get()
    if ctx is None:
        return 0, 0, None
    return ctx.partitionId(), ctx.attemptNumber(), ctx


def _write(options: WriteOptions, write_id: str, iterator: Iterator[Any]) -> RocketMQCommitMessage:
    partition, attempt, _ = _task()
    with MessageSink(options, f"{write_id}-{partition}") as sink:
        sent = sink.write_all(iterator)
    return RocketMQCommitMessage(partition_id=partition, attempt=attempt, sent=sent)


def _total(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.sent for m in messages if isinstance(m, RocketMQCommitMessage))


class RocketMQWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options
        self.write_id = uuid.uuid4().hex[:16]

    def write(self, iterator: Iterator[Any]) -> RocketMQCommitMessage:
        return _write(self.options, self.write_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("rocketmq sink: write %s sent %d messages", self.write_id, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # Sent messages cannot be taken back: report what the successful tasks stored.
        log.warning(
            "rocketmq sink: write %s aborted; %d messages of finished tasks were stored "
            "(at-least-once: duplicates carry the same SPARK_ROW_ID)",
            self.write_id,
            _total(messages),
        )


class RocketMQStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rocketmq")``."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options
        self.fallback_id = uuid.uuid4().hex[:16]

    def write(self, iterator: Iterator[Any]) -> RocketMQCommitMessage:
        _, _, ctx = _task()
        query = ctx.getLocalProperty(_QUERY_ID_KEY) if ctx is not None else None
        batch = ctx.getLocalProperty(_BATCH_ID_KEY) if ctx is not None else None
        write_id = f"{query}-{batch}" if query and batch is not None else self.fallback_id
        return _write(self.options, write_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - pyspark API
        log.info("rocketmq sink: micro-batch %d sent %d messages", batchId, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - pyspark API
        log.warning(
            "rocketmq sink: micro-batch %d aborted; %d messages of finished tasks were stored",
            batchId,
            _total(messages),
        )
