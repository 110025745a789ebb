"""The sink's logic without Spark: rows of Arrow batches to RocketMQ messages.

Used by the writers of :mod:`rocketq.spark.writer` inside Spark tasks; pure of pyspark so
it is unit-testable. The messages are sent with the ordinary
:class:`~rocketq.client.producer.Producer` (``DefaultMQProducer``):

* A row with a ``sharding_key`` goes to the queue :class:`SelectMessageQueueByHash` picks
  from the topic's publish list (Java ``String.hashCode``/``Integer.hashCode``, so a Java
  producer with the same key lands in the same queue); rows of one key keep their order.
  Rows without a key are spread round robin over the queues.
* Rows for one queue are sent as SEND_BATCH_MESSAGE batches (``MessageBatch``) of at most
  ``batchSize`` messages / 1 MiB, in row order; a row with a ``delay_level`` is sent alone
  (``MessageBatch`` forbids delayed messages) after the rows buffered before it.
* At-least-once: a batch is sent again (up to :data:`SEND_ATTEMPTS` times, same queue)
  after a transport error; a task that fails anyway is retried by Spark and re-sends its
  rows. Every message carries :data:`ROW_ID_PROPERTY` = ``<write id>-<partition>-<row>``,
  identical on every attempt of the same task, so consumers can drop the duplicates of
  a retried task.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.producer import Producer
from rocketq.client.selectors import SelectMessageQueueByHash
from rocketq.errors import IllegalArgumentError, RemotingError
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue
from rocketq.spark.options import WriteOptions

__all__ = ["ROW_ID_PROPERTY", "SEND_ATTEMPTS", "WRITE_COLUMNS", "MessageSink", "check_write_columns"]

log = logging.getLogger(__name__)

#: User property naming each written row: ``<write id>-<partition id>-<row index>``.
ROW_ID_PROPERTY: Final = "SPARK_ROW_ID"
#: Attempts per batch (the first and the retries after transport errors).
SEND_ATTEMPTS: Final = 3
_BATCH_BYTES: Final = 1024 * 1024

#: Writable columns -> the Spark SQL type names accepted for them.
WRITE_COLUMNS: Final[Mapping[str, frozenset[str]]] = {
    "body": frozenset({"binary", "string"}),
    "topic": frozenset({"string"}),
    "tags": frozenset({"string"}),
    "keys": frozenset({"string", "array<string>"}),
    "properties": frozenset({"map<string,string>"}),
    "delay_level": frozenset({"tinyint", "smallint", "int", "bigint"}),
    "sharding_key": frozenset({"string", "tinyint", "smallint", "int", "bigint"}),
}


def check_write_columns(columns: Mapping[str, str], default_topic: str | None) -> None:
    """``columns``: name -> Spark ``simpleString`` type. Raises IllegalArgumentError for a
    missing ``body``, an unknown column, a wrong type, or no topic column and no option."""
    if "body" not in columns:
        raise IllegalArgumentError(
            "the DataFrame written to rocketmq needs a 'body' column (binary or string)"
        )
    for name, kind in columns.items():
        allowed = WRITE_COLUMNS.get(name)
        if allowed is None:
            raise IllegalArgumentError(
                f"column {name!r} cannot be written to rocketmq (columns: {', '.join(WRITE_COLUMNS)})"
            )
        if kind.replace(" ", "") not in allowed:
            raise IllegalArgumentError(f"column {name!r} must be {' or '.join(sorted(allowed))}, not {kind}")
    if "topic" not in columns and default_topic is None:
        raise IllegalArgumentError("set option 'topic' or write a 'topic' column")


class MessageSink:
    """Sends Arrow record batches as messages; a context manager around one Producer."""

    def __init__(self, options: WriteOptions, row_id_prefix: str) -> None:
        self.options = options
        self.row_id_prefix = row_id_prefix
        sec = options.security
        client_config = ClientConfig(
            instance_name=f"rocketq-spark-{uuid.uuid4().hex[:12]}",
            access_key=sec.access_key,
            secret_key=sec.secret_key,
            security_token=sec.security_token,
            use_tls=sec.use_tls,
            tls=sec.tls,
        )
        config = dataclasses.replace(ProducerConfig(), send_msg_timeout_ms=options.send_timeout_ms)
        self._producer = Producer(
            options.producer_group,
            namesrv_addr=options.nameserver,
            config=config,
            client_config=client_config,
        )
        self._queues: dict[str, list[MessageQueue]] = {}
        self._round_robin: dict[str, itertools.count[int]] = {}
        self._selector = SelectMessageQueueByHash()
        self._buffers: dict[MessageQueue, list[Message]] = {}
        self._buffer_bytes: dict[MessageQueue, int] = {}
        self._row = 0
        #: Messages the broker acknowledged so far.
        self.sent = 0

    def __enter__(self) -> MessageSink:
        self._producer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._producer.shutdown()

    def _queue_list(self, topic: str) -> list[MessageQueue]:
        queues = self._queues.get(topic)
        if queues is None:
            queues = self._queues[topic] = self._producer.fetch_publish_message_queues(topic)
            self._round_robin[topic] = itertools.count()
        return queues

    def _send(self, mq: MessageQueue, msgs: Message | list[Message]) -> None:
        for attempt in range(1, SEND_ATTEMPTS + 1):
            try:
                self._producer.send(msgs, queue=mq)
                break
            except RemotingError as exc:
                if attempt == SEND_ATTEMPTS:
                    raise
                log.warning("send to %s failed (%s), attempt %d of %d", mq, exc, attempt, SEND_ATTEMPTS)
        self.sent += 1 if isinstance(msgs, Message) else len(msgs)

    def _flush(self, mq: MessageQueue) -> None:
        msgs = self._buffers.pop(mq, None)
        self._buffer_bytes.pop(mq, None)
        if msgs:
            self._send(mq, msgs if len(msgs) > 1 else msgs[0])

    def flush(self) -> None:
        """Send everything buffered."""
        for mq in list(self._buffers):
            self._flush(mq)

    def write_batch(self, batch: Any) -> None:
        """Send the rows of one ``pyarrow.RecordBatch`` (buffered per queue, flushed at the end)."""
        names = set(batch.schema.names)

        def column(name: str) -> list[Any]:
            return batch.column(name).to_pylist() if name in names else [None] * batch.num_rows

        bodies = column("body")
        topics = column("topic")
        tags = column("tags")
        keys = column("keys")
        props = column("properties")
        delays = column("delay_level")
        shard = column("sharding_key")
        default_topic = self.options.topic
        for i in range(batch.num_rows):
            body = bodies[i]
            if body is None:
                raise IllegalArgumentError(f"row {self._row}: body is null")
            if isinstance(body, str):
                body = body.encode("utf-8")
            topic = topics[i] or default_topic
            if not topic:
                raise IllegalArgumentError(
                    f"row {self._row}: no topic (null topic column and no topic option)"
                )
            properties = dict(props[i]) if props[i] else {}
            properties[ROW_ID_PROPERTY] = f"{self.row_id_prefix}-{self._row}"
            delay = int(delays[i] or 0)
            msg = Message(
                topic, body, tags=tags[i], keys=keys[i], properties=properties, delay_time_level=max(delay, 0)
            )
            queues = self._queue_list(topic)
            key = shard[i]
            if key is not None:
                mq = self._selector.select(queues, msg, key)
            else:
                mq = queues[next(self._round_robin[topic]) % len(queues)]
            self._row += 1
            if delay > 0:
                self._flush(mq)  # keep the row order within the queue
                self._send(mq, msg)
                continue
            buf = self._buffers.setdefault(mq, [])
            buf.append(msg)
            size = self._buffer_bytes.get(mq, 0) + len(body)
            self._buffer_bytes[mq] = size
            if len(buf) >= self.options.batch_size or size >= _BATCH_BYTES:
                self._flush(mq)
        self.flush()

    def write_all(self, batches: Iterable[Any]) -> int:
        """Send every batch; returns the number of messages sent."""
        for batch in batches:
            self.write_batch(batch)
        self.flush()
        return self.sent
