"""The real NamesrvController on 127.0.0.1:0 driven by the real RemotingClient over TCP."""

from __future__ import annotations

import json
import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.namesrv import NamesrvController, NamesrvThread
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.route import DataVersion, RegisterBrokerBody, TopicConfig
from rocketq.remoting.client import RemotingClient
from rocketq.testing.waits import wait_until
from tests.conftest import GoldenFrame, load_golden_frames

TIMEOUT_MS = 3000


class FakeClock:
    def __init__(self) -> None:
        self.now = 10_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def namesrv(tmp_path: Path, clock: FakeClock) -> Iterator[NamesrvThread]:
    cfg = NamesrvConfig(
        host="127.0.0.1",
        listen_port=0,
        kv_config_path=str(tmp_path / "kvConfig.json"),
        scan_not_active_broker_interval_ms=20,
    )
    thread = NamesrvThread(NamesrvController(cfg, clock_ms=clock))
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()


@pytest.fixture
def client() -> Iterator[RemotingClient]:
    c = RemotingClient(name="namesrv-test")
    c.start()
    try:
        yield c
    finally:
        c.close()


def register_request(
    name: str, addr: str, topics: dict[str, int], *, counter: int = 1, cluster: str = "DefaultCluster"
) -> RemotingCommand:
    body = RegisterBrokerBody()
    wrapper = body.topic_config_serialize_wrapper
    wrapper.data_version = DataVersion(timestamp=1700000000000, counter=counter)
    for topic, n in topics.items():
        wrapper.topic_config_table[topic] = TopicConfig(
            topic_name=topic, read_queue_nums=n, write_queue_nums=n
        )
    data = body.to_json()
    ext = {
        "brokerId": "0",
        "bodyCrc32": str(zlib.crc32(data) & 0x7FFFFFFF),
        "clusterName": cluster,
        "brokerAddr": addr,
        "haServerAddr": addr,
        "compressed": "false",
        "brokerName": name,
    }
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, data)


def get_route(client: RemotingClient, addr: str, topic: str) -> RemotingCommand:
    request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return client.invoke_sync(addr, request, TIMEOUT_MS)


def route_brokers(client: RemotingClient, addr: str, topic: str) -> list[str]:
    response = get_route(client, addr, topic)
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return []
    assert response.code == ResponseCode.SUCCESS
    return sorted(q["brokerName"] for q in json.loads(response.body)["queueDatas"])


# ---------------------------------------------------------------------------- golden replay
def _golden_namesrv_exchanges() -> list[tuple[GoldenFrame, GoldenFrame]]:
    """(request, response) pairs answered by the real name server, outside broker_register."""
    pairs: list[tuple[GoldenFrame, GoldenFrame]] = []
    requests: dict[tuple[str, int, int], GoldenFrame] = {}
    for f in load_golden_frames():
        if f.server != "namesrv" or f.file == "broker_register.jsonl":
            continue
        key = (f.file, f.conn, f.opaque)
        if not f.is_response:
            requests[key] = f
        elif key in requests:
            pairs.append((requests.pop(key), f))
    return pairs


def _replay_registrations(
    client: RemotingClient, addr: str, requests: list[GoldenFrame], frames: list[GoldenFrame]
) -> int:
    """Send golden REGISTER_BROKER requests; check sync answers against the golden ones."""
    answered = 0
    for f in requests:
        request = decode_frame(f.frame)
        if request.is_oneway:
            client.invoke_oneway(addr, request)
            continue
        response = client.invoke_sync(addr, request, TIMEOUT_MS)
        golden = next(g for g in frames if g.is_response and g.conn == f.conn and g.opaque == f.opaque)
        golden_response = decode_frame(golden.frame)
        assert response.code == golden_response.code, f.seq
        assert response.ext_fields is not None
        assert golden_response.ext_fields is not None
        assert sorted(response.ext_fields) == sorted(golden_response.ext_fields), f.seq
        assert response.remark == golden_response.remark
        assert response.body == golden_response.body
        answered += 1
    return answered


def test_golden_broker_register_replay(namesrv: NamesrvThread, client: RemotingClient) -> None:
    frames = load_golden_frames("broker_register.jsonl")
    registrations = [f for f in frames if f.code == RequestCode.REGISTER_BROKER and not f.is_response]
    assert len(registrations) == 21

    # Phase 1: only the broker's start-up registration (its default topics). Every
    # TOPIC_NOT_EXIST the real name server gave (topics created later in the session)
    # is reproduced with the exact remark.
    _replay_registrations(client, namesrv.addr, registrations[:1], frames)
    exchanges = _golden_namesrv_exchanges()
    not_exist = [(q, r) for q, r in exchanges if r.code == ResponseCode.TOPIC_NOT_EXIST]
    assert len(not_exist) == 8
    for q, r in not_exist:
        response = client.invoke_sync(namesrv.addr, decode_frame(q.frame), TIMEOUT_MS)
        golden = decode_frame(r.frame)
        assert (response.code, response.remark, response.ext_fields, response.body) == (
            golden.code,
            golden.remark,
            golden.ext_fields,
            golden.body,
        ), (q.file, q.seq)

    # Phase 2: every registration of the session (sync ones answered like the golden
    # responses: code, extFields keys, no body; oneway ones unanswered).
    answered = _replay_registrations(client, namesrv.addr, registrations[1:], frames)
    assert answered == 13

    # Every successful answer of the real name server (routes for version-407 requests,
    # cluster info, topic list) is reproduced byte for byte: the route answers are fully
    # determined (MapSortField, one broker), and the Java HashMap/HashSet orders of the
    # cluster info and the 21-topic list are emulated.
    ok = [(q, r) for q, r in exchanges if r.code == ResponseCode.SUCCESS]
    codes = sorted({q.code for q, _ in ok})
    assert codes == [
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    ]
    assert len(ok) == 68
    for q, r in ok:
        response = client.invoke_sync(namesrv.addr, decode_frame(q.frame), TIMEOUT_MS)
        golden = decode_frame(r.frame)
        assert response.code == golden.code
        assert response.ext_fields == golden.ext_fields
        assert response.body == golden.body, (q.file, q.seq)


def test_golden_route_in_fastjson_style_for_old_clients(
    namesrv: NamesrvThread, client: RemotingClient
) -> None:
    frames = load_golden_frames("broker_register.jsonl")
    client.invoke_sync(namesrv.addr, decode_frame(frames[0].frame), TIMEOUT_MS)
    request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    request.version = 400  # before V4_9_4: bare Long keys
    body = client.invoke_sync(namesrv.addr, request, TIMEOUT_MS).body
    assert body == (
        b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a",'
        b'"perm":7,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}'
    )


# ---------------------------------------------------------------------------- brokers coming and going
def test_two_brokers_one_expires(namesrv: NamesrvThread, clock: FakeClock) -> None:
    with RemotingClient(name="broker-a") as broker_a, RemotingClient(name="broker-b") as broker_b:
        broker_a.start()
        broker_b.start()
        assert (
            broker_a.invoke_sync(
                namesrv.addr, register_request("broker-a", "a:10911", {"T": 4}), TIMEOUT_MS
            ).code
            == 0
        )
        clock.now += 60_000
        assert (
            broker_b.invoke_sync(
                namesrv.addr, register_request("broker-b", "b:10911", {"T": 2}), TIMEOUT_MS
            ).code
            == 0
        )
        assert route_brokers(broker_b, namesrv.addr, "T") == ["broker-a", "broker-b"]

        clock.now += 60_001  # broker-a silent for 120 001 ms: the 20 ms scan drops it
        wait_until(lambda: route_brokers(broker_b, namesrv.addr, "T") == ["broker-b"])
        # ... and closes its connection (RemotingUtil.closeChannel).
        wait_until(lambda: not broker_a.is_connected(namesrv.addr))
        assert broker_b.is_connected(namesrv.addr)

        clock.now += 120_001
        wait_until(lambda: route_brokers(broker_a, namesrv.addr, "T") == [])


def test_closing_the_connection_unregisters_the_broker(
    namesrv: NamesrvThread, client: RemotingClient
) -> None:
    with RemotingClient(name="broker") as broker:
        broker.start()
        broker.invoke_oneway(namesrv.addr, register_request("broker-a", "a:10911", {"T": 4}))
        wait_until(lambda: route_brokers(client, namesrv.addr, "T") == ["broker-a"])
        broker.close_connection(namesrv.addr)
        wait_until(lambda: route_brokers(client, namesrv.addr, "T") == [])
    cluster = client.invoke_sync(
        namesrv.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), TIMEOUT_MS
    )
    assert cluster.body == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'


def test_unregister_and_several_clusters(namesrv: NamesrvThread, client: RemotingClient) -> None:
    addr = namesrv.addr
    client.invoke_sync(addr, register_request("a", "a:1", {"T": 4, "A": 1}, cluster="C1"), TIMEOUT_MS)
    client.invoke_sync(addr, register_request("b", "b:1", {"T": 4, "B": 1}, cluster="C2"), TIMEOUT_MS)
    by_cluster = client.invoke_sync(
        addr, RemotingCommand.request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "C2"}), TIMEOUT_MS
    )
    assert sorted(json.loads(by_cluster.body)["topicList"]) == ["B", "T"]
    ext = {"brokerId": "0", "clusterName": "C1", "brokerAddr": "a:1", "brokerName": "a"}
    response = client.invoke_sync(
        addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, ext), TIMEOUT_MS
    )
    assert response.code == ResponseCode.SUCCESS
    assert route_brokers(client, addr, "T") == ["b"]
    assert route_brokers(client, addr, "A") == []


# ---------------------------------------------------------------------------- bad input
def test_garbage_on_one_connection_does_not_disturb_others(
    namesrv: NamesrvThread, client: RemotingClient
) -> None:
    client.invoke_sync(namesrv.addr, register_request("broker-a", "a:10911", {"T": 4}), TIMEOUT_MS)
    host, port = namesrv.addr.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as bad:
        # A frame whose header claims to be 4 KiB in a 12-byte frame, then junk.
        bad.sendall(struct.pack(">iI", 8, 4096) + b"junk" + b"\xff" * 64)
        bad.settimeout(5)
        assert bad.recv(1024) == b""  # the server closed this connection only
    for _ in range(20):
        assert route_brokers(client, namesrv.addr, "T") == ["broker-a"]


def test_missing_headers_and_unknown_codes_get_answers(
    namesrv: NamesrvThread, client: RemotingClient
) -> None:
    response = client.invoke_sync(
        namesrv.addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {}), TIMEOUT_MS
    )
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "the custom field <topic> is null")
    response = client.invoke_sync(
        namesrv.addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2), TIMEOUT_MS
    )
    assert (response.code, response.remark) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        " request type 310 not supported",
    )


def test_binary_header_requests_get_binary_answers(namesrv: NamesrvThread, client: RemotingClient) -> None:
    request = register_request("broker-a", "a:10911", {"T": 4})
    request.serialize_type = SerializeType.ROCKETMQ
    assert client.invoke_sync(namesrv.addr, request, TIMEOUT_MS).serialize_type == SerializeType.ROCKETMQ
    lookup = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, serialize_type=SerializeType.ROCKETMQ
    )
    response = client.invoke_sync(namesrv.addr, lookup, TIMEOUT_MS)
    assert response.serialize_type == SerializeType.ROCKETMQ
    assert json.loads(response.body)["queueDatas"][0]["brokerName"] == "broker-a"


def test_kv_config_over_the_wire_is_persisted(namesrv: NamesrvThread, client: RemotingClient) -> None:
    put = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
    assert (
        client.invoke_sync(
            namesrv.addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put), TIMEOUT_MS
        ).code
        == 0
    )
    path = namesrv.controller.config.kv_config_path
    assert path is not None
    assert Path(path).read_text() == '{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}}}'
    # The broker learns the ordered topics from its registration response.
    response = client.invoke_sync(namesrv.addr, register_request("broker-a", "a:10911", {"T": 4}), TIMEOUT_MS)
    assert response.body == b'{"table":{"T":"broker-a:4"}}'
