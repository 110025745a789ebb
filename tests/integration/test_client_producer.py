"""The producer against a real embedded cluster (name server + broker processes on loopback)."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rocketq.client import (
    Message,
    MessageQueue,
    Producer,
    ProducerConfig,
    PullConsumer,
    PullStatus,
    SelectMessageQueueByHash,
    SendResult,
    SendStatus,
)
from rocketq.client.config import ClientConfig
from rocketq.client.send_message_hook import SendMessageContext
from rocketq.errors import ClientError, ConnectError, IllegalArgumentError, RemotingError, RequestTimeoutError
from rocketq.protocol.message import MessageExt
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration


def _client_threads() -> set[str]:
    return {
        t.name
        for t in threading.enumerate()
        if t.name.startswith(("192.", "10.", "127.", "172.", "rocketq["))
    }


@pytest.fixture
def topic(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> str:
    name = unique_name("T")
    embedded_cluster.create_topic(name, 4)
    return name


@pytest.fixture
def producer(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> Iterator[Producer]:
    with Producer(unique_name("PG"), namesrv_addr=embedded_cluster.namesrv_addr) as p:
        yield p


def _pull_all(cluster: EmbeddedCluster, topic: str, group: str, expr: str = "*") -> list[MessageExt]:
    out: list[MessageExt] = []
    with PullConsumer(group, namesrv_addr=cluster.namesrv_addr) as consumer:
        for mq in sorted(consumer.fetch_subscribe_message_queues(topic)):
            offset = 0
            while True:
                result = consumer.pull(mq, expr, offset, 32)
                out.extend(result.msg_found_list)
                if result.pull_status is not PullStatus.FOUND and result.next_begin_offset == offset:
                    break
                if result.next_begin_offset == offset:
                    break
                offset = result.next_begin_offset
    return out


def test_sync_send_result_and_round_trip(
    embedded_cluster: EmbeddedCluster, producer: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    msg = Message(topic, b"hello", tags="TagA", keys=["k1", "k2"])
    msg.put_user_property("color", "red")
    result = producer.send(msg)
    assert result.status is SendStatus.SEND_OK
    assert result.msg_id == msg.properties["UNIQ_KEY"]
    assert len(result.offset_msg_id) == 32
    assert result.message_queue.topic == topic
    assert result.message_queue.broker_name == "broker-a"
    assert result.queue_offset == 0
    got = _pull_all(embedded_cluster, topic, unique_name("CG"))
    assert len(got) == 1
    m = got[0]
    assert (m.body, m.tags, m.keys, m.properties["color"]) == (b"hello", "TagA", ["k1", "k2"], "red")
    assert m.msg_id == result.msg_id
    assert m.offset_msg_id == result.offset_msg_id
    assert m.queue_id == result.message_queue.queue_id
    assert producer.view_message(result.offset_msg_id).body == b"hello"


def test_compressed_body_and_size_limit(
    embedded_cluster: EmbeddedCluster, producer: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    big = bytes(range(256)) * 40  # 10 KiB: compressed on the wire, decompressed on receipt
    producer.send(Message(topic, big))
    got = _pull_all(embedded_cluster, topic, unique_name("CG"))
    assert [m.body for m in got] == [big]
    assert got[0].sys_flag & 0x1
    with pytest.raises(IllegalArgumentError, match="over max value"):
        producer.send(Message(topic, b"x" * (4 * 1024 * 1024 + 1)))
    with pytest.raises(IllegalArgumentError, match="length is zero"):
        producer.send(Message(topic, b""))
    with pytest.raises(IllegalArgumentError, match="illegal characters"):
        producer.send(Message("no spaces allowed", b"x"))


def test_async_sends_complete_and_callbacks_run(
    embedded_cluster: EmbeddedCluster, producer: Producer, topic: str
) -> None:
    n = 200
    seen: list[SendResult] = []
    threads: set[str] = set()
    lock = threading.Lock()
    all_done = threading.Event()

    def callback(f: concurrent.futures.Future[SendResult]) -> None:
        with lock:
            seen.append(f.result())
            threads.add(threading.current_thread().name)
            if len(seen) == n:
                all_done.set()

    futures = [producer.send_async(Message(topic, f"m{i}".encode()), callback) for i in range(n)]
    results = [f.result(timeout=10) for f in futures]
    assert all_done.wait(10)
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == n
    assert not any(name.endswith("-io") for name in threads)  # never on the I/O thread
    plain = producer.send_async(Message(topic, b"no callback")).result(timeout=10)
    assert plain.status is SendStatus.SEND_OK


def test_oneway_batch_queue_and_delay(
    embedded_cluster: EmbeddedCluster, producer: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    producer.send_oneway(Message(topic, b"oneway"))
    batch = [Message(topic, f"b{i}".encode(), tags="TagB") for i in range(5)]
    result = producer.send(batch)
    assert result.msg_id.count(",") == 4
    assert result.offset_msg_id.count(",") == 4
    mq = MessageQueue(topic, "broker-a", 3)
    assert producer.send(Message(topic, b"to q3"), queue=mq).message_queue == mq
    with pytest.raises(IllegalArgumentError, match="topic not equal"):
        producer.send(Message(topic, b"x"), queue=MessageQueue("other", "broker-a", 0))
    delayed = producer.send(Message(topic, b"later", delay_time_level=3))  # 10 s: not visible yet
    assert delayed.status is SendStatus.SEND_OK
    deadline = time.monotonic() + 5
    bodies: list[bytes] = []
    while time.monotonic() < deadline:
        bodies = sorted(m.body for m in _pull_all(embedded_cluster, topic, unique_name("CG")))
        if len(bodies) >= 7:
            break
        time.sleep(0.1)
    assert bodies == sorted([b"oneway", b"to q3", *(f"b{i}".encode() for i in range(5))])


class _RecordingHook:
    """A SendMessageHook recording what it sees."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, object]] = []

    def hook_name(self) -> str:
        return "recording"

    def send_message_before(self, context: SendMessageContext) -> None:
        self.seen.append(("before", context.topic, context.properties.get("UNIQ_KEY")))

    def send_message_after(self, context: SendMessageContext) -> None:
        self.seen.append(("after", context.topic, context.send_result))


def test_hooks_see_every_sync_and_oneway_attempt(producer: Producer, topic: str) -> None:
    """With a hook the attempt takes the hook path (no hook: the fast path, other tests):
    the hook sees the UNIQ_KEY before and the very SendResult ``send`` returns after."""
    hook = _RecordingHook()
    producer.register_send_message_hook(hook)
    msg = Message(topic, b"hooked")
    result = producer.send(msg)
    producer.send_oneway(Message(topic, b"hooked oneway"))
    assert hook.seen[:2] == [("before", topic, msg.properties["UNIQ_KEY"]), ("after", topic, result)]
    assert [(kind, t) for kind, t, _ in hook.seen[2:]] == [("before", topic), ("after", topic)]
    assert hook.seen[3][2] is None  # a oneway send has no result


def test_ordered_sends_keep_key_order_in_one_queue(
    embedded_cluster: EmbeddedCluster, producer: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    keys = [f"order-{i}" for i in range(6)]
    sent: dict[str, MessageQueue] = {}
    for step in range(5):
        for key in keys:
            r = producer.send(
                Message(topic, f"{key}:{step}".encode(), keys=key),
                selector=SelectMessageQueueByHash(),
                arg=key,
            )
            assert sent.setdefault(key, r.message_queue) == r.message_queue
    got = _pull_all(embedded_cluster, topic, unique_name("CG"))
    for key in keys:
        mine = [m for m in got if m.keys == [key]]
        assert {m.queue_id for m in mine} == {sent[key].queue_id}
        assert [m.body for m in sorted(mine, key=lambda m: m.queue_offset)] == [
            f"{key}:{s}".encode() for s in range(5)
        ]
    # a plain callable selector works too
    r = producer.send(Message(topic, b"x"), selector=lambda mqs, msg, arg: mqs[-1])
    assert r.message_queue.queue_id == 3


def test_publish_queues_and_auto_created_topic(
    embedded_cluster: EmbeddedCluster, producer: Producer, topic: str, unique_name: Callable[..., str]
) -> None:
    assert [mq.queue_id for mq in producer.fetch_publish_message_queues(topic)] == [0, 1, 2, 3]
    auto = unique_name("Auto")
    r = producer.send(Message(auto, b"created by TBW102"))
    assert r.status is SendStatus.SEND_OK
    assert r.message_queue.topic == auto


def test_lifecycle_errors_and_no_thread_left(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    before = _client_threads()
    p = Producer(unique_name("PG"), namesrv_addr=embedded_cluster.namesrv_addr)
    with pytest.raises(ClientError, match="state not OK"):
        p.send(Message("T", b"x"))
    p.start()
    with pytest.raises(ClientError, match="maybe started once"):
        p.start()
    assert _client_threads() - before
    p.shutdown()
    p.shutdown()  # idempotent
    deadline = time.monotonic() + 5
    while _client_threads() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _client_threads() - before
    with pytest.raises(ClientError, match="state not OK"):
        p.send(Message("T", b"x"))


def test_missing_or_unreachable_name_server(
    monkeypatch: pytest.MonkeyPatch, unique_name: Callable[..., str]
) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    with pytest.raises(ClientError, match="NAMESRV_ADDR"):
        Producer(unique_name("PG")).start()
    with (
        Producer(
            unique_name("PG"),
            namesrv_addr="127.0.0.1:1",
            client_config=ClientConfig(connect_timeout_ms=500),
        ) as p,
        pytest.raises(ConnectError, match="name server"),
    ):
        p.send(Message("SomeTopic", b"x"))


def test_unknown_topic_without_auto_create_and_timeouts(
    embedded_cluster: EmbeddedCluster, producer: Producer, topic: str
) -> None:
    # the tiniest budget: the send times out (the timeout contract: it may still be stored)
    with pytest.raises(RequestTimeoutError):
        producer.send(Message(topic, b"x" * 3_000_000), timeout_ms=1)


def test_broker_down_then_restart_producer_recovers(unique_name: Callable[..., str]) -> None:
    with EmbeddedCluster() as cluster:
        topic = unique_name("T")
        cluster.create_topic(topic, 2)
        cfg = ProducerConfig(producer_group=unique_name("PG"), send_msg_timeout_ms=2000)
        with Producer(namesrv_addr=cluster.namesrv_addr, config=cfg) as p:
            assert p.send(Message(topic, b"before")).status is SendStatus.SEND_OK
            cluster.kill_broker(0)
            with pytest.raises(RemotingError):
                p.send(Message(topic, b"while down"))
            cluster.restart_broker(0)
            deadline = time.monotonic() + 20
            result: SendResult | None = None
            while result is None and time.monotonic() < deadline:
                try:
                    result = p.send(Message(topic, b"after"))
                except RemotingError:
                    time.sleep(0.2)
            assert result is not None
            assert result.status is SendStatus.SEND_OK
