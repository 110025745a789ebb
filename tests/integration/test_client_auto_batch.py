"""Producer auto_batch: asynchronous sends of one topic leave as batches while one is in flight."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketq.client import Message, Producer, ProducerConfig, PullConsumer, SendStatus
from rocketq.client.api_results import PullStatus
from rocketq.errors import ClientError, IllegalArgumentError, RocketqError
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = pytest.mark.integration


def test_auto_batched_async_sends_each_get_their_own_result(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 4)
    config = ProducerConfig(producer_group=unique_name("pg"), auto_batch=True, auto_batch_max_messages=64)
    n = 2000
    callbacks = threading.Semaphore(0)
    with Producer(config=config, namesrv_addr=embedded_cluster.namesrv_addr) as producer:
        futures = [
            producer.send_async(
                Message(topic, f"ab-{i}".encode(), tags="TagA"), lambda f: callbacks.release()
            )
            for i in range(n)
        ]
        results = [f.result(timeout=30) for f in futures]
        for _ in range(n):
            assert callbacks.acquire(timeout=10)
        accumulator = producer._accumulator
        assert accumulator is not None
        batches = accumulator.batches_sent
    assert {r.status for r in results} == {SendStatus.SEND_OK}
    assert len({r.msg_id for r in results}) == n
    assert len({r.offset_msg_id for r in results}) == n
    positions = {(r.message_queue.queue_id, r.queue_offset) for r in results}
    assert len(positions) == n
    assert batches < n / 4, f"{batches} requests for {n} messages: nothing was batched"
    # every message is stored where its own SendResult says
    by_position = {(r.message_queue.queue_id, r.queue_offset): f"ab-{i}" for i, r in enumerate(results)}
    with PullConsumer(unique_name("verify"), namesrv_addr=embedded_cluster.namesrv_addr) as puller:
        for qid in range(4):
            offset = 0
            while True:
                pulled = puller.pull(
                    MessageQueue(topic, embedded_cluster.broker_names[0], qid), "*", offset, 32
                )
                if pulled.pull_status is not PullStatus.FOUND:
                    break
                for m in pulled.msg_found_list:
                    assert by_position[(qid, m.queue_offset)] == m.body.decode()
                    assert m.tags == "TagA"
                offset = pulled.next_begin_offset


def test_auto_batch_leaves_ineligible_sends_alone(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 2)
    config = ProducerConfig(producer_group=unique_name("pg"), auto_batch=True)
    with Producer(config=config, namesrv_addr=embedded_cluster.namesrv_addr) as producer:
        delayed = producer.send_async(Message(topic, b"later", delay_time_level=1)).result(timeout=10)
        big = producer.send_async(Message(topic, b"x" * 5000)).result(timeout=10)
        assert delayed.status is SendStatus.SEND_OK
        assert big.status is SendStatus.SEND_OK
        accumulator = producer._accumulator
        assert accumulator is not None
        assert accumulator.batches_sent == 0


def test_a_batched_topic_still_refuses_bad_messages_at_send_async(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    # once a topic is batched, its messages take the fast path: an empty or oversized body
    # still raises IllegalArgumentError at once, a stopped producer still ClientError
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 2)
    config = ProducerConfig(producer_group=unique_name("pg"), auto_batch=True, max_message_size=10_000)
    producer = Producer(config=config, namesrv_addr=embedded_cluster.namesrv_addr)
    with producer:
        assert producer.send_async(Message(topic, b"ok")).result(timeout=10).status is SendStatus.SEND_OK
        with pytest.raises(IllegalArgumentError, match="body length is zero"):
            producer.send_async(Message(topic, b""))
        too_big = b"x" * 10_001  # past max_message_size (and the compression threshold)
        with pytest.raises(IllegalArgumentError, match="size over max"):
            producer.send_async(Message(topic, too_big))
        assert (
            producer.send_async(Message(topic, b"ok again")).result(timeout=10).status is SendStatus.SEND_OK
        )
    with pytest.raises(ClientError, match="state not OK"):
        producer.send_async(Message(topic, b"late"))


def test_batches_cut_off_by_a_dead_broker_complete_every_future_once(
    tmp_path: Path, unique_name: Callable[..., str]
) -> None:
    # the broker is SIGKILLed while batches are in flight and more messages queue: every
    # future still completes (a result or an error), every callback runs exactly once
    config = ProducerConfig(
        producer_group=unique_name("pg"),
        auto_batch=True,
        auto_batch_max_messages=50,
        send_msg_timeout_ms=5000,
    )
    n = 3000
    lock = threading.Lock()
    calls: dict[int, int] = {}

    def counted(i: int) -> Callable[[object], None]:
        def callback(_f: object) -> None:
            with lock:
                calls[i] = calls.get(i, 0) + 1

        return callback

    with EmbeddedCluster(separate_namesrv=True, store_dir=tmp_path) as cluster:
        topic = unique_name("T")
        cluster.create_topic(topic, 2)
        with Producer(config=config, namesrv_addr=cluster.namesrv_addr) as producer:
            futures = []
            for i in range(n):
                futures.append(producer.send_async(Message(topic, f"k-{i}".encode()), counted(i)))
                if i == n // 3:
                    wait_until(lambda: len(calls) > 0, 10, "the first answers")
                    cluster.kill_broker()
            outcomes = [f.exception(timeout=60) for f in futures]
            wait_until(lambda: len(calls) == n, 20, "every callback")
            accumulator = producer._accumulator
            assert accumulator is not None
            assert accumulator.batches_sent < n / 4  # they were batched
    assert set(calls.values()) == {1}
    failed = [e for e in outcomes if e is not None]
    assert failed, "the dead broker failed nothing"
    assert all(isinstance(e, RocketqError) for e in failed), {type(e) for e in failed}
    stored = [f.result() for f, e in zip(futures, outcomes, strict=True) if e is None]
    assert stored, "nothing was stored before the kill"
    assert len({(r.message_queue.queue_id, r.queue_offset) for r in stored}) == len(stored)
