"""The executor's pull pipeline (``rocketq.spark.source.read_range``) against a real broker:
how many pulls a range costs and what each asks for, around consume-queue file ends and the
broker's transfer caps."""

from __future__ import annotations

import pytest

from rocketq.client.producer import Producer
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue
from rocketq.spark.client import SourceClient
from rocketq.spark.options import parse_read_options
from rocketq.spark.source import QueueRange, read_range
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]

TOPIC = "pulls"
MESSAGES = 1000


def _read_all(
    cluster: EmbeddedCluster,
    pull_batch_size: int,
    monkeypatch: pytest.MonkeyPatch,
    *,
    sub_expression: str | None = None,
) -> list[int]:
    """Fill queue 0 with MESSAGES messages (tags A and B in turn), read them all with
    read_range; returns the count each pull request asked for (after checking every offset
    wanted arrived once, in order)."""
    cluster.create_topic(TOPIC, 1)
    mq = MessageQueue(TOPIC, "broker-a", 0)
    with Producer("pulls_producer", namesrv_addr=cluster.namesrv_addr) as producer:
        for _ in range(MESSAGES // 250):
            producer.send([Message(TOPIC, b"x" * 100, tags="AB"[i % 2]) for i in range(250)], queue=mq)
    requests: list[tuple[int, int]] = []
    pull_async = SourceClient.pull_async

    def counted(self: SourceClient, queue: MessageQueue, offset: int, count: int) -> object:
        requests.append((offset, count))
        return pull_async(self, queue, offset, count)

    monkeypatch.setattr(SourceClient, "pull_async", counted)
    raw = {"nameserver": cluster.namesrv_addr, "topic": TOPIC, "pullBatchSize": str(pull_batch_size)}
    if sub_expression is not None:
        raw["subExpression"] = sub_expression
    options = parse_read_options(raw, streaming=False)
    offsets = [
        o
        for batch in read_range(QueueRange(TOPIC, "broker-a", 0, 0, MESSAGES, options))
        for o in batch.column("queue_offset").to_pylist()
    ]
    assert offsets == list(range(0, MESSAGES, 1 if sub_expression is None else 2))  # tag A: the even ones
    return [count for _, count in requests]


def test_a_consume_queue_file_end_does_not_shrink_later_pulls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Consume-queue files of 250 entries and pulls of 100: the answer from 200 stops at the
    file's end (50 messages). That one short answer drops the guesses in flight, but the
    pulls keep asking for 100 (adopting 50 would double the pulls for the rest of the read)."""
    conf = {"mappedFileSizeConsumeQueue": str(250 * 20), "maxTransferCountOnMessageInMemory": "100"}
    with EmbeddedCluster(broker_conf=conf) as cluster:
        counts = _read_all(cluster, 100, monkeypatch)
    assert set(counts) == {100, 50}  # 50: the last request, from 950 to the end
    assert counts[-1] == 50
    assert counts.count(50) == 1
    # 10 full answers, and each of the 3 file ends (250, 500, 750) costs at most its own
    # short answer and the 2 guesses it drops
    assert len(counts) <= 10 + 3 * 3


def test_a_transfer_cap_sets_the_size_of_later_pulls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker's default maxTransferCountOnMessageInMemory (32) against pulls of 100:
    after two short answers in a row the requests ask for 32, and every later one is
    answered in full (no guesses dropped)."""
    with EmbeddedCluster() as cluster:
        counts = _read_all(cluster, 100, monkeypatch)
    first_32 = counts.index(32)
    assert set(counts[:first_32]) == {100}
    assert first_32 <= 6  # two rounds of 3 requests in flight, each dropped by a short answer
    assert set(counts[first_32:-1]) == {32}
    remaining = MESSAGES - 2 * 32  # what the two short answers did not deliver
    assert len(counts) - first_32 == -(-remaining // 32)


def test_a_tag_filter_never_asks_for_more_than_pull_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """With subExpression, an answer of 100 matching messages spans about 200 offsets; the
    requests keep asking for at most pullBatchSize (100), never for the span."""
    with EmbeddedCluster(broker_conf={"maxTransferCountOnMessageInMemory": "100"}) as cluster:
        counts = _read_all(cluster, 100, monkeypatch, sub_expression="A")
    assert max(counts) == 100
    assert len(counts) <= MESSAGES // 200 + 1
