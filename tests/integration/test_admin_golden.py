"""Every mqadmin request of golden/admin.jsonl, replayed against rocketq's name server and broker.

The golden requests (real mqadmin 4.9.7 frames, ACL fields included) are re-sent with the
scenario's names replaced by this test's topics, groups, keys and offsets. Each rocketq
answer must have Java's code, serialize type, extFields keys and body shape (the set of
JSON paths, map keys abstracted; where Java's container was empty ours may have content).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from rocketq.admin import Admin
from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.protocol import fastjson
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt, decode_records
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import committed_lag, wait_until
from tests.conftest import GoldenFrame, load_golden_frames

pytestmark = pytest.mark.integration

FAST = ClientConfig(
    poll_name_server_interval_ms=500, rebalance_interval_ms=1000, persist_consumer_offset_interval_ms=200
)
#: JSON fields whose keys are data (topic names, ids...), not bean properties
MAP_FIELDS = {
    "offsetTable",
    "mqTable",
    "properties",
    "statusTable",
    "subscriptionTable",
    "table",
    "brokerAddrTable",
    "clusterAddrTable",
    "brokerAddrs",
    "filterServerTable",
}
#: runtime-info keys that carry a store path or a delay level in their name
RUNTIME_KEY_PREFIXES = ("commitLogDiskRatio_", "scheduleMessageOffset_")


def shape(
    obj: object, prefix: str = "", out: set[str] | None = None, empty: set[str] | None = None
) -> set[str]:
    """The JSON paths of ``obj``; ``empty`` collects the paths of empty containers."""
    out = set() if out is None else out
    if isinstance(obj, dict):
        if not obj and empty is not None:
            empty.add(prefix)
        is_map = prefix.rsplit(".", 1)[-1] in MAP_FIELDS
        for key, value in obj.items():
            if isinstance(key, fastjson.ObjectKey):
                shape(key.thaw(), prefix + ".<key>", out, empty)
                name = "<value>"
            elif is_map or not isinstance(key, str):
                name = "<value>"
            else:
                name = key
            path = f"{prefix}.{name}"
            out.add(path)
            shape(value, path, out, empty)
    elif isinstance(obj, list):
        if not obj and empty is not None:
            empty.add(prefix)
        for value in obj:
            shape(value, prefix + "[]", out, empty)
    else:
        out.add(
            f"{prefix}:{'number' if isinstance(obj, int | float) and not isinstance(obj, bool) else type(obj).__name__}"
        )
    return out


def assert_same_shape(ours: bytes, java: bytes, where: str) -> None:
    empty: set[str] = set()
    theirs = shape(fastjson.loads(java), empty=empty)
    mine = shape(fastjson.loads(ours))
    missing = theirs - mine
    extra = {p for p in mine - theirs if not any(p.startswith(e) for e in empty)}
    assert not missing and not extra, (where, sorted(missing), sorted(extra))


class Scenario:
    """The names of the golden scenario mapped to this test's own."""

    def __init__(self, cluster: EmbeddedCluster, unique: Callable[..., str]) -> None:
        self.cluster = cluster
        self.admin_topic = unique("GAdminTopic")
        self.producer_topic = unique("GProducerTopic")
        self.push_group = unique("GPushGroup")
        self.live_group = unique("GLiveGroup")
        self.key = unique("GKey")
        self.subst: dict[str, str] = {}
        self.first_offset = 0

    def setup(self, admin: Admin) -> None:
        self.cluster.create_topic(self.producer_topic, 4)
        first = admin.send_messages(
            [
                Message(
                    self.producer_topic,
                    b"Hello golden sync 1",
                    tags="TagA",
                    keys=[self.key, self.key + "b"],
                    properties={"color": "red", "orderId": "1001"},
                )
            ]
        )[0]
        admin.send_messages([Message(self.producer_topic, f"m{i}".encode()) for i in range(5)])
        self.first_offset = decode_offset_msg_id(first.offset_msg_id)[1]
        self.subst = {
            "%RETRY%GoldenPushGroup": "%RETRY%" + self.push_group,
            "%RETRY%GoldenAdminLiveGroup": "%RETRY%" + self.live_group,
            "GoldenAdminTopic": self.admin_topic,
            "GoldenProducerTopic": self.producer_topic,
            "GoldenPushGroup": self.push_group,
            "GoldenAdminLiveGroup": self.live_group,
            "FD0000000000000000000000000000022AE05FFD2B276C4A4AD30000": first.msg_id,
            "GoldenKey-1": self.key,
        }

    def request(self, frame: GoldenFrame, live_client_id: str) -> RemotingCommand:
        cmd = decode_frame(frame.frame)
        ext = dict(cmd.ext_fields or {})
        for k, raw in ext.items():
            value = self.subst.get(raw, raw)
            if k == "clientId" and value == "192.0.2.2@admin-live-c1":
                value = live_client_id
            if cmd.code == RequestCode.VIEW_MESSAGE_BY_ID and k == "offset":
                value = str(self.first_offset)
            ext[k] = value
        return RemotingCommand(
            code=cmd.code, language=cmd.language, version=cmd.version, ext_fields=ext or None, body=cmd.body
        )


def _listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def _consumer(cluster: EmbeddedCluster, group: str, topic: str) -> PushConsumer:
    cfg = PushConsumerConfig(
        consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer = PushConsumer(config=cfg, namesrv_addr=cluster.namesrv_addr, client_config=FAST)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(_listener)
    consumer.start()
    return consumer


@pytest.fixture
def scenario(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> Iterator[tuple[Scenario, str]]:
    sc = Scenario(embedded_cluster, unique_name)
    with Admin(embedded_cluster.namesrv_addr) as admin:
        sc.setup(admin)
        # GoldenPushGroup: consumed the topic, then went away (offsets + %RETRY% topic remain)
        push = _consumer(embedded_cluster, sc.push_group, sc.producer_topic)
        try:
            wait_until(
                lambda: (
                    committed_lag(admin, sc.push_group) == 0
                    and embedded_cluster.route("%RETRY%" + sc.push_group) is not None
                ),
                what="the push group to drain",
            )
        finally:
            push.shutdown()
        # GoldenAdminLiveGroup: a live consumer of the admin topic during the whole scenario
        embedded_cluster.create_topic(sc.admin_topic, 4)
        live = _consumer(embedded_cluster, sc.live_group, sc.admin_topic)
        try:
            wait_until(
                lambda: embedded_cluster.route("%RETRY%" + sc.live_group) is not None,
                what="the live group's retry topic",
            )
            wait_until(
                lambda: len(live.assigned_queues(sc.admin_topic)) == 4, what="the live consumer's queues"
            )
            yield sc, live.client_id
        finally:
            live.shutdown()


def _golden_pairs() -> list[tuple[GoldenFrame, GoldenFrame]]:
    frames = load_golden_frames("admin.jsonl")
    responses = {(f.conn, f.opaque): f for f in frames if f.is_response}
    return [
        (f, responses[(f.conn, f.opaque)])
        for f in frames
        if f.client.startswith("mqadmin") and not f.is_response and (f.conn, f.opaque) in responses
    ]


def test_every_golden_mqadmin_request(
    embedded_cluster: EmbeddedCluster, scenario: tuple[Scenario, str]
) -> None:
    sc, live_client_id = scenario
    pairs = _golden_pairs()
    assert len(pairs) >= 40
    checked: set[int] = set()
    lock = threading.Lock()
    with RemotingClient(name="golden-mqadmin") as client:
        for req_frame, resp_frame in pairs:
            addr = (
                embedded_cluster.namesrv_addr
                if req_frame.server == "namesrv"
                else embedded_cluster.broker_addrs[0]
            )
            request = sc.request(req_frame, live_client_id)
            response = decode_frame(client.invoke_sync(addr, request, 5000).encode())
            java = decode_frame(resp_frame.frame)
            where = f"admin.jsonl seq {req_frame.seq} {req_frame.client} code {req_frame.code}"
            assert response.code == java.code, (where, response.remark, java.remark)
            assert response.serialize_type == java.serialize_type, where
            assert (response.ext_fields is None) == (java.ext_fields is None), (where, response.ext_fields)
            assert set(response.ext_fields or {}) == set(java.ext_fields or {}), where
            if req_frame.code != RequestCode.GET_CONSUMER_RUNNING_INFO:
                # 307 relays the client's own remark (Java's client leaves "not set any response code")
                assert response.remark == java.remark, where
            assert bool(response.body) == bool(java.body), where
            if java.body and req_frame.code in (RequestCode.VIEW_MESSAGE_BY_ID, RequestCode.QUERY_MESSAGE):
                ours = decode_records(response.body)
                assert len(ours) == len(decode_records(java.body)) == 1, where
                assert set(decode_records(java.body)[0].properties) <= set(ours[0].properties) | {"TRACE_ON"}
            elif java.body and req_frame.code == RequestCode.GET_BROKER_RUNTIME_INFO:

                def keys(body: bytes) -> set[str]:
                    table = fastjson.loads(body)
                    assert isinstance(table, dict)
                    inner = table["table"]
                    assert isinstance(inner, dict)
                    return {
                        next((p for p in RUNTIME_KEY_PREFIXES if str(k).startswith(p)), str(k)) for k in inner
                    }

                # scheduleMessageOffset_<level> exists only once a delay level was used (state)
                java_keys = keys(java.body) - {"scheduleMessageOffset_"}
                assert java_keys <= keys(response.body), (where, java_keys - keys(response.body))
            elif java.body:
                assert_same_shape(response.body, java.body, where)
            with lock:
                checked.add(req_frame.code)
    assert checked >= {
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_CONSUME_STATS,
        RequestCode.VIEW_MESSAGE_BY_ID,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
        RequestCode.QUERY_MESSAGE,
        RequestCode.GET_BROKER_RUNTIME_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        RequestCode.HEART_BEAT,
        RequestCode.UNREGISTER_CLIENT,
    }


def test_shape_helper_sees_differences() -> None:
    java = (
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":1,"minOffset":0}},"l":[]}'
    )
    same = b'{"offsetTable":{{"brokerName":"x","queueId":3,"topic":"U"}:{"maxOffset":9,"minOffset":2}},"l":["a"]}'
    assert_same_shape(same, java, "same")
    for bad in (
        b'{"offsetTable":{{"brokerName":"b","queueId":0}:{"maxOffset":1,"minOffset":0}},"l":[]}',
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":1}},"l":[]}',
        b'{"offsetTable":{},"l":[],"extra":1}',
    ):
        with pytest.raises(AssertionError):
            assert_same_shape(bad, java, "bad")
