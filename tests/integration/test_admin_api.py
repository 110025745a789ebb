"""The admin API (issue #8) against the embedded rocketq cluster: every operation, end to end."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from rocketq.admin import Admin, ResendMethod, ResetMode, TrackType
from rocketq.client.api_results import SendResult
from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.errors import BrokerError, ClientError
from rocketq.protocol.bodies import GetConsumerStatusBody
from rocketq.protocol.codes import LanguageCode, RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import committed_lag, wait_until

pytestmark = pytest.mark.integration

FAST = ClientConfig(
    poll_name_server_interval_ms=500,
    rebalance_interval_ms=1000,
    persist_consumer_offset_interval_ms=200,
    heartbeat_broker_interval_ms=1000,
)


@pytest.fixture
def admin(embedded_cluster: EmbeddedCluster) -> Iterator[Admin]:
    with Admin(embedded_cluster.namesrv_addr) as a:
        yield a


Listener = Callable[[list[MessageExt], ConsumeConcurrentlyContext], ConsumeConcurrentlyStatus]


class Recorder:
    """A listener that records bodies; ``fail_once`` bodies go to the DLQ on first delivery."""

    def __init__(self, fail_once: set[str] | None = None) -> None:
        self.seen: Counter[str] = Counter()
        self.topics: dict[str, str] = {}
        self.fail_once = set(fail_once or ())
        self.lock = threading.Lock()

    def __call__(self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with self.lock:
            for m in msgs:
                body = m.body.decode()
                self.seen[body] += 1
                self.topics[body] = m.topic
                if body in self.fail_once:
                    self.fail_once.discard(body)
                    ctx.delay_level_when_next_consume = -1  # straight to %DLQ%<group>
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def count(self) -> int:
        with self.lock:
            return sum(self.seen.values())


def start_consumer(
    cluster: EmbeddedCluster, group: str, topic: str, listener: Listener, expr: str = "*"
) -> PushConsumer:
    cfg = PushConsumerConfig(
        consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer = PushConsumer(config=cfg, namesrv_addr=cluster.namesrv_addr, client_config=FAST)
    consumer.subscribe(topic, expr)
    consumer.register_message_listener(listener)
    consumer.start()
    return consumer


def send(admin: Admin, topic: str, n: int, prefix: str = "m", tags: str = "TagA") -> list[SendResult]:
    return admin.send_messages(
        [Message(topic, f"{prefix}-{i}".encode(), tags=tags, keys=f"{prefix}-k{i}") for i in range(n)]
    )


def test_topic_lifecycle(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("T")
    assert admin.create_topic(topic, read_queue_nums=3, write_queue_nums=3) == embedded_cluster.broker_addrs
    route = embedded_cluster.wait_route(topic, 3)
    assert admin.topic_route(topic).queue_datas[0].write_queue_nums == 3
    assert topic in admin.topic_list()
    assert topic in admin.topic_list("DefaultCluster")
    results = send(admin, topic, 7)
    status = admin.topic_status(topic)
    assert [q.queue_id for q in status.queues] == [0, 1, 2]
    assert status.total_messages == 7
    by_queue = Counter(r.message_queue.queue_id for r in results)
    assert {q.queue_id: q.max_offset for q in status.queues} == {q: by_queue.get(q, 0) for q in range(3)}
    assert all(q.last_update_timestamp > 0 for q in status.queues if q.max_offset)
    # update: more queues
    admin.create_topic(topic, read_queue_nums=5, write_queue_nums=5, cluster="DefaultCluster")
    embedded_cluster.wait_route(topic, 5)
    assert len(admin.topic_status(topic).queues) == 5
    assert route.broker_datas

    # the admin's own producer shows up as a producer connection (after its first heartbeat)
    def producers() -> list[str]:
        try:
            return [p.language for p in admin.producer_connections(admin.producer_group, topic)]
        except BrokerError:
            return []

    wait_until(lambda: producers() == ["PYTHON"], what="the producer's heartbeat")
    assert admin.delete_topic(topic) == embedded_cluster.broker_addrs
    assert embedded_cluster.route(topic) is None
    with pytest.raises(BrokerError) as err:
        admin.topic_status(topic)
    assert err.value.code == ResponseCode.TOPIC_NOT_EXIST


def test_create_topic_rejects_bad_input(admin: Admin) -> None:
    with pytest.raises(ValueError):
        admin.create_topic("bad topic")
    with pytest.raises(ValueError):
        admin.create_topic("okTopic", write_queue_nums=0)
    with pytest.raises(ClientError):
        admin.create_topic("okTopic", cluster="NoSuchCluster")


def test_cluster_list(embedded_cluster: EmbeddedCluster, admin: Admin) -> None:
    view = admin.cluster_list()
    assert view.clusters == {"DefaultCluster": ["broker-a"]}
    (broker,) = view.brokers
    assert (broker.broker_name, broker.broker_id, broker.addr) == (
        "broker-a",
        0,
        embedded_cluster.broker_addrs[0],
    )
    assert broker.error is None and broker.version.startswith("V4_9")
    assert {"putTps", "msgPutTotalTodayNow", "commitLogDiskRatio"} <= set(broker.runtime)


def test_progress_lag_drains_to_zero_then_online_reset_moves_consumer(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    send(admin, topic, 20)
    with pytest.raises(ClientError, match="consume stats"):
        admin.consumer_progress(group)
    # offline: no client yet, the offsets are written to the broker
    reset = admin.reset_offset_by_time(group, topic, 0)
    assert reset.mode is ResetMode.OFFLINE and len(reset.queues) == 4
    progress = admin.consumer_progress(group)
    assert progress.total_lag == 20 and {q.consumer_offset for q in progress.queues} == {0}

    recorder = Recorder()
    consumer = start_consumer(embedded_cluster, group, topic, recorder)
    try:
        lags = []

        def drained() -> bool:
            lags.append(admin.consumer_progress(group, topic, with_clients=False).total_lag)
            return lags[-1] == 0

        wait_until(drained, what="lag to reach 0")
        assert recorder.count() == 20 and max(recorder.seen.values()) == 1
        progress = admin.consumer_progress(group, topic)
        assert {q.client_id for q in progress.queues} == {consumer.client_id}
        assert progress.consume_tps > 0  # the broker's GROUP_GET_NUMS rate over the last minute

        conns = admin.consumer_connections(group)
        assert [c.client_id for c in conns.connections] == [consumer.client_id]
        assert conns.subscriptions[topic] == "*" and conns.consume_type == "CONSUME_PASSIVELY"
        status = admin.consumer_status(group)
        assert {mq.topic for mq in status[consumer.client_id].mq_table} >= {topic}

        # online reset back to the beginning: the live consumer jumps and consumes everything again
        online = admin.reset_offset_by_time(group, topic, 0)
        assert online.mode is ResetMode.ONLINE
        assert {q.new_offset for q in online.queues} == {0}
        assert sum(q.old_offset or 0 for q in online.queues) == 20
        wait_until(lambda: recorder.count() >= 40, what="the re-consumption after the reset")
        assert set(recorder.seen.values()) == {2}
        wait_until(lambda: admin.consumer_progress(group, topic, with_clients=False).total_lag == 0)
    finally:
        consumer.shutdown()
    # offline now: ONLINE is refused, AUTO resets offline to the end
    with pytest.raises(BrokerError) as err:
        admin.reset_offset_by_time(group, topic, 0, mode=ResetMode.ONLINE)
    assert err.value.code == ResponseCode.CONSUMER_NOT_ONLINE
    admin.reset_offset_by_time(group, topic, 0, mode=ResetMode.OFFLINE)
    assert admin.consumer_progress(group).total_lag == 20
    latest = admin.reset_offset_by_time(group, topic, -1)
    assert latest.mode is ResetMode.OFFLINE and admin.consumer_progress(group).total_lag == 0


def test_reset_without_force_only_rewinds(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    send(admin, topic, 6)
    admin.reset_offset_by_time(group, topic, 0)  # offsets 0
    kept = admin.reset_offset_by_time(group, topic, -1, force=False)
    assert {q.new_offset for q in kept.queues} == {0}
    moved = admin.reset_offset_by_time(group, topic, -1, force=True)
    assert sum(q.new_offset for q in moved.queues) == 6


def test_message_queries_and_track(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    results = send(admin, topic, 6, prefix="q")
    first = results[0]
    msg = admin.view_message(first.offset_msg_id)
    assert (msg.body, msg.keys, msg.msg_id) == (b"q-0", ["q-k0"], first.msg_id)
    # a unique key needs the topic
    assert admin.view_message(first.msg_id, topic).offset_msg_id == first.offset_msg_id
    assert admin.query_by_unique_key(topic, results[3].msg_id).body == b"q-3"
    assert [m.body for m in admin.query_by_key(topic, "q-k4")] == [b"q-4"]
    assert admin.query_by_key(topic, "no-such-key") == []
    r = results[5]
    at = admin.query_by_offset(topic, "broker-a", r.message_queue.queue_id, r.queue_offset)
    assert at.body == b"q-5"
    with pytest.raises(BrokerError):
        admin.query_by_offset(topic, "broker-a", 0, 999)
    pulled = admin.pull_messages(topic, count=100)
    assert sorted(m.body for m in pulled) == sorted(f"q-{i}".encode() for i in range(6))
    assert len(admin.pull_messages(topic, count=4)) == 4
    assert [
        m.body for m in admin.pull_messages(topic, queue_id=r.message_queue.queue_id, offset=r.queue_offset)
    ] == [b"q-5"]
    assert admin.message_track(msg) == []  # nobody consumes the topic yet

    recorder = Recorder()
    consumer = start_consumer(embedded_cluster, group, topic, recorder)
    try:
        wait_until(lambda: recorder.count() == 6, what="consumption")
        # the offsets reach the broker with the consumer's next persist (every 200 ms here)
        wait_until(lambda: committed_lag(admin, group) == 0, what="the committed lag to reach 0")
        assert group in admin.topic_consumed_by(topic)
        (track,) = admin.message_track(msg)
        assert (track.consumer_group, track.track_type) == (group, TrackType.CONSUMED)
    finally:
        consumer.shutdown()
    (track,) = admin.message_track(msg)
    assert track.track_type is TrackType.NOT_ONLINE and "206" in (track.exception_desc or "")


def test_track_not_consumed_yet_then_consumed_or_filtered(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    release = threading.Event()
    got: list[str] = []

    def blocking(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        got.extend(m.body.decode() for m in msgs)
        release.wait(20)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = start_consumer(embedded_cluster, group, topic, blocking, expr="TagA")
    try:
        wait_until(lambda: bool(consumer.assigned_queues(topic)), what="rebalance")
        (other,) = send(admin, topic, 1, prefix="b", tags="TagB")
        (slow,) = send(admin, topic, 1, prefix="s", tags="TagA")
        wait_until(lambda: got == ["s-0"], what="the TagA message to reach the listener")
        slow_msg, other_msg = admin.view_message(slow.offset_msg_id), admin.view_message(other.offset_msg_id)
        assert [t.track_type for t in admin.message_track(slow_msg)] == [TrackType.NOT_CONSUME_YET]
        release.set()
        # a new message wakes the held pull; the next pull commits the offsets (the periodic
        # persist would take 10 s)
        send(admin, topic, 1, prefix="n", tags="TagA")

        def state(msg: MessageExt) -> TrackType:
            (track,) = admin.message_track(msg)
            return track.track_type

        wait_until(lambda: state(slow_msg) is TrackType.CONSUMED, what="CONSUMED")
        # passed over by the TagA subscription: consumed, but never delivered
        assert state(other_msg) is TrackType.CONSUMED_BUT_FILTERED
        assert got[0] == "s-0" and "b-0" not in got
    finally:
        release.set()
        consumer.shutdown()


def test_dead_letter_found_resent_and_consumed(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    recorder = Recorder(fail_once={"d-1"})
    consumer = start_consumer(embedded_cluster, group, topic, recorder)
    try:
        send(admin, topic, 3, prefix="d")
        wait_until(lambda: recorder.count() == 3, what="the first deliveries")
        dlq = "%DLQ%" + group
        wait_until(lambda: embedded_cluster.route(dlq) is not None, what="the DLQ topic")
        dead = admin.pull_messages(dlq)
        assert [m.body for m in dead] == [b"d-1"]
        assert dead[0].properties["RETRY_TOPIC"] == topic
        # found by key in the DLQ too
        assert [m.body for m in admin.query_by_key(dlq, "d-k1")] == [b"d-1"]
        results = admin.resend_dlq(group)
        assert [(r.ok, r.method) for r in results] == [(True, ResendMethod.PRODUCE)]
        wait_until(lambda: recorder.seen["d-1"] == 2, what="the resent dead letter")
        assert recorder.topics["d-1"] == topic  # delivered under its original topic
        assert recorder.seen["d-0"] == recorder.seen["d-2"] == 1  # nobody else got anything
    finally:
        consumer.shutdown()


def test_resend_directly_to_a_live_client(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 1)
    recorder = Recorder()
    consumer = start_consumer(embedded_cluster, group, topic, recorder)
    try:
        (sent,) = send(admin, topic, 1, prefix="x")
        wait_until(lambda: recorder.count() == 1)
        result = admin.resend_message(sent.offset_msg_id, group)
        assert (result.ok, result.detail, result.client_id) == (True, "CR_SUCCESS", consumer.client_id)
        assert recorder.seen["x-0"] == 2
        # by unique key (needs the topic), through the produce path
        produced = admin.resend_message(sent.msg_id, group, topic=topic, method=ResendMethod.PRODUCE)
        assert produced.ok and produced.new_msg_id not in (None, sent.msg_id)
        wait_until(lambda: recorder.seen["x-0"] == 3)
    finally:
        consumer.shutdown()
    with pytest.raises(BrokerError) as err:
        admin.resend_message(sent.offset_msg_id, group)
    assert err.value.code == ResponseCode.CONSUMER_NOT_ONLINE


def test_topic_stats_in_and_out(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    send(admin, topic, 5)
    (row,) = admin.topic_stats(topic)
    assert (row.group, row.in_msg_24h) == (None, 5) and row.in_tps > 0
    recorder = Recorder()
    consumer = start_consumer(embedded_cluster, group, topic, recorder)
    try:
        wait_until(lambda: recorder.count() == 5)
        wait_until(lambda: admin.topic_stats(topic)[0].out_msg_24h == 5, what="GROUP_GET_NUMS")
        (row,) = admin.topic_stats(topic)
        assert (row.group, row.in_msg_24h, row.accumulation) == (group, 5, row.accumulation)
        assert row.out_tps > 0
    finally:
        consumer.shutdown()
    assert any(r.topic == topic for r in admin.topic_stats())


def test_consumer_status_from_clients_via_broker(
    embedded_cluster: EmbeddedCluster, admin: Admin, unique_name: Callable[..., str]
) -> None:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): the broker asks each client (221)."""
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 2)
    mq = MessageQueue(topic, "broker-a", 1)
    asked: list[dict[str, str] | None] = []

    def handler(request: RemotingCommand, addr: str) -> RemotingCommand | None:
        if request.code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
            asked.append(request.ext_fields)
            body = GetConsumerStatusBody(message_queue_table={mq: 42}).to_json()
            return request.make_response(ResponseCode.SUCCESS, body=body)
        return None

    client_id = "10.0.0.1@fake-java-client"
    with RemotingClient(name="fake-client", request_handler=handler) as fake:
        heartbeat = HeartbeatData(
            client_id=client_id,
            consumer_data_set=[
                ConsumerData(
                    group_name=group,
                    consume_type=ConsumeType.CONSUME_PASSIVELY,
                    message_model=MessageModel.CLUSTERING,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                    subscription_data_set=[SubscriptionData(topic=topic, sub_string="*")],
                )
            ],
        )
        request = RemotingCommand.request(RequestCode.HEART_BEAT, None, heartbeat.to_json())
        request.language = LanguageCode.JAVA
        response = fake.invoke_sync(embedded_cluster.broker_addrs[0], request, 3000)
        assert response.code == ResponseCode.SUCCESS
        table = admin.consumer_offsets_from_clients(group, topic)
        assert table == {client_id: {mq: 42}}
        assert asked and asked[0] is not None and asked[0]["group"] == group and asked[0]["topic"] == topic
    with pytest.raises(BrokerError):
        admin.consumer_offsets_from_clients(unique_name("nobody"), topic)


def test_admin_needs_a_name_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    with pytest.raises(ClientError, match="NAMESRV_ADDR"):
        Admin()
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:1")
    admin = Admin(timeout_ms=300, client_config=dataclasses.replace(FAST, connect_timeout_ms=300))
    try:
        assert admin.namesrv_addrs == ["127.0.0.1:1"]
        with pytest.raises(Exception, match="name server"):
            admin.topic_list()
    finally:
        admin.close()
    with pytest.raises(ClientError):
        admin.start()


def test_close_leaves_no_thread(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> None:
    before = {t.name for t in threading.enumerate()}
    topic = unique_name("T")
    embedded_cluster.create_topic(topic, 1)
    with Admin(embedded_cluster.namesrv_addr) as admin:
        send(admin, topic, 1)  # starts the producer and its client instance too
        assert admin.topic_status(topic).total_messages == 1
    wait_until(lambda: {t.name for t in threading.enumerate()} <= before, 5, "the admin's threads to end")
