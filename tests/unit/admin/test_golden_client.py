"""The admin client against the golden mqadmin conversations (admin.jsonl), no sockets.

A fake remoting layer answers each request with the golden Java response to the same
mqadmin request; the Admin must parse every one of them, and the requests it sends must
carry the same extFields as mqadmin's (minus its ACL signing fields, golden caveat 5).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rocketq.admin import Admin
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.message_queue import MessageQueue
from tests.conftest import GoldenFrame, load_golden_frames

NAMESRV = "127.0.0.1:9876"
BROKER = "127.0.0.1:10911"
ACL = {"AccessKey", "Signature"}
UNIQ = "FD0000000000000000000000000000022AE05FFD2B276C4A4AD30000"
FIRST_OFFSET_MSG_ID = "7F00000100002A9F0000000000000000"


def _selector(cmd: RemotingCommand) -> str:
    """What tells two golden requests of the same code apart."""
    ext = cmd.ext_fields or {}
    return ext.get("topic", "") + "|" + ext.get("key", "")


class GoldenRemoting:
    """Answers like the golden name server / broker; records what it was asked."""

    def __init__(self) -> None:
        frames = load_golden_frames("admin.jsonl")
        responses = {(f.conn, f.opaque): f for f in frames if f.is_response}
        self.table: dict[tuple[str, int, str], tuple[GoldenFrame, GoldenFrame]] = {}
        for f in frames:
            if f.client.startswith("mqadmin") and not f.is_response and (f.conn, f.opaque) in responses:
                key = (f.server, f.code, _selector(decode_frame(f.frame)))
                self.table.setdefault(key, (f, responses[(f.conn, f.opaque)]))
        self.asked: list[tuple[str, RemotingCommand, GoldenFrame]] = []

    def invoke_sync(self, addr: str, request: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        server = "namesrv" if addr == NAMESRV else "broker"
        assert addr in (NAMESRV, BROKER), addr
        key = (server, request.code, _selector(request))
        if key not in self.table:
            raise AssertionError(f"no golden answer for {key}")
        req_frame, resp_frame = self.table[key]
        self.asked.append((server, request, req_frame))
        response = decode_frame(resp_frame.frame)
        response.opaque = request.opaque
        return response


@pytest.fixture
def admin() -> Iterator[tuple[Admin, GoldenRemoting]]:
    fake = GoldenRemoting()
    a = Admin(NAMESRV)
    a.client.remoting = fake  # type: ignore[assignment]
    try:
        yield a, fake
    finally:
        a.close()


def _same_request_as_mqadmin(fake: GoldenRemoting) -> None:
    """Each request has mqadmin's extFields keys (minus ACL) and, for the header fields, values."""
    assert fake.asked
    for _server, ours, golden in fake.asked:
        java = decode_frame(golden.frame)
        java_ext = {k: v for k, v in (java.ext_fields or {}).items() if k not in ACL}
        assert (ours.ext_fields or {}) == java_ext, golden.seq


def test_topic_status(admin: tuple[Admin, GoldenRemoting]) -> None:
    a, fake = admin
    status = a.topic_status("GoldenProducerTopic")
    assert [q.queue_id for q in status.queues] == [0, 1, 2, 3]
    q0 = status.queues[0]
    assert (q0.broker_name, q0.min_offset, q0.max_offset, q0.last_update_timestamp) == (
        "broker-a",
        0,
        4,
        1795308010058,
    )
    assert status.total_messages == sum(q.max_offset - q.min_offset for q in status.queues) > 4
    _same_request_as_mqadmin(fake)


def test_consumer_progress(admin: tuple[Admin, GoldenRemoting]) -> None:
    a, fake = admin
    progress = a.consumer_progress("GoldenPushGroup", with_clients=False)
    assert progress.consume_tps == pytest.approx(0.03333333333333333)
    q0 = next(q for q in progress.queues if q.topic == "GoldenPushTopic" and q.queue_id == 0)
    assert (q0.broker_offset, q0.consumer_offset, q0.lag, q0.last_timestamp) == (3, 3, 0, 1795308038296)
    assert progress.total_lag == sum(q.lag for q in progress.queues)
    _same_request_as_mqadmin(fake)


def test_query_message_by_id_with_track(admin: tuple[Admin, GoldenRemoting]) -> None:
    a, fake = admin
    msg = a.view_message(FIRST_OFFSET_MSG_ID)
    assert (msg.topic, msg.body, msg.tags, msg.keys) == (
        "GoldenProducerTopic",
        b"Hello golden sync 1",
        "TagA",
        ["GoldenKey-1", "GoldenKey-1b"],
    )
    assert msg.msg_id == UNIQ and msg.offset_msg_id == FIRST_OFFSET_MSG_ID
    assert a.message_track(msg) == []  # golden: QUERY_TOPIC_CONSUME_BY_WHO -> {"groupList":[]}
    _same_request_as_mqadmin(fake)


def test_query_by_unique_key_and_by_key(admin: tuple[Admin, GoldenRemoting]) -> None:
    a, fake = admin
    assert a.query_by_unique_key("GoldenProducerTopic", UNIQ).body == b"Hello golden sync 1"
    (by_key,) = a.query_by_key("GoldenProducerTopic", "GoldenKey-1")
    assert by_key.properties["color"] == "red" and by_key.properties["orderId"] == "1001"
    # golden: 22 QUERY_NOT_FOUND "can not find message, maybe time range not correct"
    assert a.query_by_key("GoldenProducerTopic", "GoldenNoSuchKey") == []
    _same_request_as_mqadmin(fake)


def test_cluster_and_topic_list(admin: tuple[Admin, GoldenRemoting]) -> None:
    a, fake = admin
    view = a.cluster_list()
    assert view.clusters == {"DefaultCluster": ["broker-a"]}
    (broker,) = view.brokers
    assert (broker.addr, broker.version, broker.in_today) == (BROKER, "V4_9_7", broker.in_today)
    assert broker.runtime["msgPutTotalTodayNow"] == "44"
    assert broker.commit_log_disk_ratio == broker.runtime["commitLogDiskRatio"]
    topics = a.topic_list()
    assert {"GoldenAdminTopic", "GoldenPullTopic", "%RETRY%GoldenPushGroup"} <= set(topics)
    assert topics == sorted(topics)
    _same_request_as_mqadmin(fake)


def test_consumer_connection_and_status(admin: tuple[Admin, GoldenRemoting]) -> None:
    a, fake = admin
    conns = a.consumer_connections("GoldenAdminLiveGroup")
    (conn,) = conns.connections
    assert (conn.client_id, conn.client_addr, conn.language, conn.version_desc) == (
        "192.0.2.2@admin-live-c1",
        "127.0.0.1:54342",
        "JAVA",
        "V4_9_7",
    )
    assert conns.subscriptions == {"%RETRY%GoldenAdminLiveGroup": "*", "GoldenAdminTopic": "*"}
    assert (conns.consume_type, conns.message_model) == ("CONSUME_PASSIVELY", "CLUSTERING")
    status = a.consumer_status("GoldenAdminLiveGroup")
    info = status["192.0.2.2@admin-live-c1"]
    mq = MessageQueue("GoldenAdminTopic", "broker-a", 0)
    assert info.mq_table[mq].locked and info.mq_table[mq].last_pull_timestamp == 1795308166596
    assert info.properties["PROP_CLIENT_VERSION"] == "V4_9_7"
    assert {sd.topic for sd in info.subscription_set} == {"GoldenAdminTopic", "%RETRY%GoldenAdminLiveGroup"}
    _same_request_as_mqadmin(fake)


def test_update_topic_sends_mqadmins_header(admin: tuple[Admin, GoldenRemoting]) -> None:
    a, fake = admin
    assert a.create_topic(
        "GoldenAdminTopic", read_queue_nums=4, write_queue_nums=4, cluster="DefaultCluster"
    ) == [BROKER]
    codes = [(server, req.code) for server, req, _ in fake.asked]
    assert codes == [
        ("namesrv", RequestCode.GET_BROKER_CLUSTER_INFO),
        ("broker", RequestCode.UPDATE_AND_CREATE_TOPIC),
    ]
    _same_request_as_mqadmin(fake)
