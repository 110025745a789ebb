"""Offsets of the Spark source: the JSON form, queue keys, and admission control.

Pure (no pyspark). A source offset is a JSON object per topic, per queue::

    {"wallet-events": {"broker-a:0": 1200, "broker-a:1": 1187, ...}, "other": {...}}

Each value is the *next* queue offset to read (exclusive end of what a micro-batch read,
inclusive start of the next), exactly the consumer offset RocketMQ stores for a group
(``ConsumerOffsetManager``), so :meth:`RocketMQStreamReader.commit` can write it to the
broker unchanged. The same form is accepted by the ``startingOffsets``/``endingOffsets``
options, where ``-2`` means earliest and ``-1`` latest (the Kafka connector's convention).

Invariants: keys are ``"<brokerName>:<queueId>"``; offsets are non-negative ints once
resolved; :func:`split_limit` never hands out more than the limit in total nor more than a
queue's backlog, and is deterministic (same input, same split), so a micro-batch replayed
from the checkpoint plans the same ranges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetMap",
    "OffsetSpec",
    "from_json_obj",
    "queue_key",
    "split_limit",
    "split_queue_key",
    "to_json_obj",
]

#: Offset placeholders inside JSON offsets (as in the Kafka connector).
EARLIEST: Final = -2
LATEST: Final = -1

#: ``{topic: {"broker:queueId": offset}}``: the JSON offsets form.
OffsetSpec = dict[str, dict[str, int]]
#: Resolved offsets by queue.
OffsetMap = dict[MessageQueue, int]


def queue_key(broker_name: str, queue_id: int) -> str:
    """The JSON key of a queue: ``"broker-a:3"``."""
    return f"{broker_name}:{queue_id}"


def split_queue_key(key: str) -> tuple[str, int]:
    """``"broker-a:3"`` -> ``("broker-a", 3)``; raises IllegalArgumentError otherwise."""
    broker, sep, qid = str(key).rpartition(":")
    if not sep or not broker or not qid.isdigit():
        raise IllegalArgumentError(f"queue key {key!r} is not brokerName:queueId")
    return broker, int(qid)


def to_json_obj(offsets: Mapping[MessageQueue, int]) -> OffsetSpec:
    """Resolved offsets -> the JSON form (topics, then queues, in sorted order)."""
    out: OffsetSpec = {}
    for mq in sorted(offsets):
        out.setdefault(mq.topic, {})[queue_key(mq.broker_name, mq.queue_id)] = int(offsets[mq])
    return out


def from_json_obj(obj: Mapping[str, Mapping[str, int]]) -> OffsetMap:
    """The JSON form -> offsets by queue (raises IllegalArgumentError when malformed)."""
    out: OffsetMap = {}
    if not isinstance(obj, Mapping):
        raise IllegalArgumentError(f"offsets must be a JSON object, got {type(obj).__name__}")
    for topic, per in obj.items():
        if not isinstance(per, Mapping):
            raise IllegalArgumentError(f"offsets of topic {topic!r} must be a JSON object")
        for key, value in per.items():
            broker, qid = split_queue_key(key)
            if not isinstance(value, int) or isinstance(value, bool):
                raise IllegalArgumentError(f"offset of {topic} {key} must be an integer, got {value!r}")
            out[MessageQueue(str(topic), broker, qid)] = value
    return out


def split_limit(
    start: Mapping[MessageQueue, int], latest: Mapping[MessageQueue, int], limit: int
) -> OffsetMap:
    """End offsets reading at most ``limit`` offsets in total (``maxOffsetsPerTrigger``).

    Each queue's share is proportional to its backlog ``latest - start`` (the Kafka
    connector's ``rateLimit``), rounded down; the remainder goes one by one to the queues
    with the largest fractional parts (ties: queue order). A queue missing from ``start``
    starts at 0. Queues without backlog keep their start.
    """
    if limit < 0:
        raise IllegalArgumentError(f"limit must be >= 0, got {limit}")
    backlog = {mq: max(latest[mq] - start.get(mq, 0), 0) for mq in sorted(latest)}
    total = sum(backlog.values())
    if total <= limit:
        return {mq: max(latest[mq], start.get(mq, 0)) for mq in latest}
    shares: dict[MessageQueue, int] = {}
    remainders: list[tuple[int, MessageQueue]] = []
    for mq, lag in backlog.items():
        whole, rest = divmod(lag * limit, total)
        shares[mq] = whole
        remainders.append((rest, mq))
    left = limit - sum(shares.values())
    remainders.sort(key=lambda item: (-item[0], item[1]))
    for _, mq in remainders[:left]:
        shares[mq] += 1
    return {mq: start.get(mq, 0) + shares[mq] for mq in latest}
