"""Request/reply end to end: requester, responder (a push consumer that replies) and broker.

The broker pushes each reply (PUSH_REPLY_MESSAGE_TO_CLIENT) over the requester's own
connection; the requester matches it to its request by CORRELATION_ID.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    PushConsumerConfig,
    TransactionProducer,
    create_reply_message,
)
from rocketq.errors import RequestTimeoutError
from rocketq.protocol.message import MessageConst
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import REPLY_MESSAGE_FLAG
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = [pytest.mark.integration]

FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=1000)


class Responder:
    """A push consumer on the request topic that answers ``re:<body>``."""

    def __init__(self, cluster: EmbeddedCluster, topic: str, group: str) -> None:
        self.producer = Producer(f"{group}-reply", namesrv_addr=cluster.namesrv_addr, client_config=FAST)
        self.producer.start()
        self.lock = threading.Lock()
        self.requests: list[MessageExt] = []
        cfg = PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        self.consumer = PushConsumer(config=cfg, namesrv_addr=cluster.namesrv_addr, client_config=FAST)
        self.consumer.subscribe(topic, "*")
        self.consumer.register_message_listener(self.on_messages)
        self.consumer.start()

    def on_messages(
        self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
    ) -> ConsumeConcurrentlyStatus:
        for msg in msgs:
            with self.lock:
                self.requests.append(msg)
            self.producer.send(create_reply_message(msg, b"re:" + msg.body))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def shutdown(self) -> None:
        self.consumer.shutdown()
        self.producer.shutdown()


@pytest.fixture
def requester(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> Iterator[Producer]:
    producer = Producer(unique_name("req"), namesrv_addr=embedded_cluster.namesrv_addr, client_config=FAST)
    producer.start()
    yield producer
    producer.shutdown()


@pytest.fixture
def topic(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> str:
    """A new request topic with 4 queues, routed."""
    name = unique_name("rr")
    embedded_cluster.create_topic(name, 4)
    embedded_cluster.wait_route(name)
    return name


def test_one_request_one_reply(
    embedded_cluster: EmbeddedCluster, requester: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    responder = Responder(embedded_cluster, topic, unique_name("rg"))
    try:
        reply = requester.request(Message(topic, b"ping", tags="T"), 15_000)
        assert reply.body == b"re:ping"
        props = reply.properties
        assert props[MessageConst.MSG_TYPE] == REPLY_MESSAGE_FLAG
        assert props[MessageConst.REPLY_TO_CLIENT] == requester.client_id
        assert props[MessageConst.TTL] == "15000"
        assert MessageConst.PUSH_REPLY_TIME in props and MessageConst.ARRIVE_TIME in props
        assert reply.topic == "DefaultCluster_REPLY_TOPIC"
        (request,) = responder.requests
        assert request.properties[MessageConst.CORRELATION_ID] == props[MessageConst.CORRELATION_ID]
        # the instance forgot the request once its reply came
        assert len(requester._running_instance().request_future_holder) == 0
        # a queue-targeted request works the same way
        mq = MessageQueue(topic, embedded_cluster.broker_names[0], 2)
        assert requester.request(Message(topic, b"pong"), 15_000, queue=mq).body == b"re:pong"
        assert responder.requests[-1].queue_id == 2
    finally:
        responder.shutdown()


def test_a_thousand_concurrent_requests_from_eight_threads_are_matched(
    embedded_cluster: EmbeddedCluster, requester: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    responder = Responder(embedded_cluster, topic, unique_name("rg"))
    futures: dict[bytes, concurrent.futures.Future[Message]] = {}
    lock = threading.Lock()
    try:
        requester.request(Message(topic, b"warm-up"), 15_000)

        def fire(thread: int) -> None:
            for i in range(125):
                body = f"req-{thread}-{i}".encode()
                fut = requester.request_async(
                    Message(topic, body), 30_000, selector=lambda mqs, m, a: mqs[a % len(mqs)], arg=i
                )
                with lock:
                    futures[body] = fut

        start = time.monotonic()
        threads = [threading.Thread(target=fire, args=(t,), name=f"requester-{t}") for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        replies = {body: fut.result(timeout=60) for body, fut in futures.items()}
        elapsed = time.monotonic() - start
        assert len(replies) == 1000
        crossed = [b for b, r in replies.items() if r.body != b"re:" + b]
        assert crossed == []
        ids = {r.properties[MessageConst.CORRELATION_ID] for r in replies.values()}
        assert len(ids) == 1000
        assert len(requester._running_instance().request_future_holder) == 0
        print(f"1000 requests from 8 threads answered in {elapsed:.2f} s")
    finally:
        responder.shutdown()


def test_a_request_nobody_answers_times_out(
    embedded_cluster: EmbeddedCluster, requester: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    holder = requester._running_instance().request_future_holder
    begin = time.monotonic()
    with pytest.raises(RequestTimeoutError, match="wait reply message timeout, 500 ms"):
        requester.request(Message(topic, b"anyone?"), 500)
    assert 0.4 <= time.monotonic() - begin < 5
    assert len(holder) == 0
    # an abandoned async request is failed by the instance's housekeeping and removed
    fut = requester.request_async(Message(topic, b"anyone at all?"), 300)
    with pytest.raises(RequestTimeoutError, match="request timeout, no reply message"):
        fut.result(timeout=10)
    wait_until(lambda: len(holder) == 0, 5, "the table to be empty")


def test_no_thread_outlives_the_producers(
    embedded_cluster: EmbeddedCluster, topic: str, unique_name: Callable[..., str]
) -> None:
    before = set(threading.enumerate())
    requester = Producer(unique_name("req"), namesrv_addr=embedded_cluster.namesrv_addr, client_config=FAST)
    requester.start()
    tx = TransactionProducer(
        unique_name("txpg"), namesrv_addr=embedded_cluster.namesrv_addr, client_config=FAST
    )
    tx.start()
    try:
        with pytest.raises(RequestTimeoutError):
            requester.request(Message(topic, b"x"), 200)  # starts the request housekeeping thread
        names = {t.name for t in threading.enumerate()}
        assert any(n.endswith("-request-housekeeping") for n in names)
    finally:
        tx.shutdown()
        requester.shutdown()

    def leftover() -> list[str]:
        return [t.name for t in threading.enumerate() if t not in before and t.is_alive()]

    wait_until(lambda: not leftover(), 10, "the producers' threads to end")
