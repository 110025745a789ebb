"""DefaultRequestProcessor handlers, driven without sockets (processor.handle)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.namesrv import NamesrvController
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.java_properties import parse_properties
from rocketq.protocol.route import DataVersion, KVTable, RegisterBrokerBody, TopicConfig, TopicList
from tests.conftest import load_golden_frames


class FakeClock:
    def __init__(self) -> None:
        self.now = 5_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def controller(tmp_path: Path) -> NamesrvController:
    cfg = NamesrvConfig(host="127.0.0.1", listen_port=0, kv_config_path=str(tmp_path / "kv.json"))
    return NamesrvController(cfg, clock_ms=FakeClock())


def call(
    c: NamesrvController,
    code: int,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
    *,
    version: int | None = None,
) -> RemotingCommand:
    request = RemotingCommand.request(code, ext, body)
    request.opaque = 42
    if version is not None:
        request.version = version
    response = c.processor.handle(None, request)
    assert response.is_response
    assert response.opaque == 42
    return response


def reg_ext(
    name: str = "broker-a",
    addr: str = "127.0.0.1:10911",
    *,
    broker_id: int = 0,
    cluster: str = "DefaultCluster",
    body: bytes = b"",
    compressed: bool = False,
    crc: int | None = None,
) -> dict[str, str]:
    return {
        "brokerId": str(broker_id),
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF if crc is None else crc),
        "clusterName": cluster,
        "brokerAddr": addr,
        "haServerAddr": addr.rsplit(":", 1)[0] + ":10912",
        "compressed": "true" if compressed else "false",
        "brokerName": name,
    }


def reg_body(*topics: tuple[str, int], counter: int = 1) -> RegisterBrokerBody:
    body = RegisterBrokerBody()
    wrapper = body.topic_config_serialize_wrapper
    wrapper.data_version = DataVersion(timestamp=1700000000000, counter=counter)
    for name, n in topics:
        wrapper.topic_config_table[name] = TopicConfig(topic_name=name, read_queue_nums=n, write_queue_nums=n)
    return body


#: The header of UNREGISTER_BROKER / QUERY_DATA_VERSION for the broker ``register`` adds.
_BROKER_A = {
    "brokerId": "0",
    "clusterName": "DefaultCluster",
    "brokerAddr": "127.0.0.1:10911",
    "brokerName": "broker-a",
}


def register(c: NamesrvController, *topics: tuple[str, int], **kw: object) -> RemotingCommand:
    body = reg_body(*topics).to_json()
    return call(c, RequestCode.REGISTER_BROKER, reg_ext(body=body, **kw), body)  # type: ignore[arg-type]


def route(c: NamesrvController, topic: str, **kw: object) -> RemotingCommand:
    return call(c, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, **kw)  # type: ignore[arg-type]


def test_register_golden_first_registration(controller: NamesrvController) -> None:
    frames = load_golden_frames("broker_register.jsonl")
    request = decode_frame(frames[0].frame)
    golden_response = decode_frame(frames[1].frame)
    response = controller.processor.handle(None, request)
    assert response.code == golden_response.code == ResponseCode.SUCCESS
    assert response.ext_fields == golden_response.ext_fields == {}
    assert response.remark is None
    assert response.body == b""
    assert (
        "TBW102"
        in json.loads(call(controller, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)["topicList"]
    )


def test_register_checks_the_body_crc_only_when_non_zero(controller: NamesrvController) -> None:
    body = reg_body(("T", 4)).to_json()
    bad = call(controller, RequestCode.REGISTER_BROKER, reg_ext(body=body, crc=12345), body)
    assert (bad.code, bad.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert route(controller, "T").code == ResponseCode.TOPIC_NOT_EXIST
    ok = call(controller, RequestCode.REGISTER_BROKER, reg_ext(body=body, crc=0), body)
    assert ok.code == ResponseCode.SUCCESS
    assert route(controller, "T").code == ResponseCode.SUCCESS


def test_register_compressed_body(controller: NamesrvController) -> None:
    body = reg_body(("T", 4), ("U", 2)).encode(compress=True)
    response = call(controller, RequestCode.REGISTER_BROKER, reg_ext(body=body, compressed=True), body)
    assert response.code == ResponseCode.SUCCESS
    queue = json.loads(route(controller, "U").body)["queueDatas"][0]
    assert (queue["readQueueNums"], queue["writeQueueNums"], queue["perm"]) == (2, 2, 6)


def test_register_bad_bodies(controller: NamesrvController) -> None:
    garbage = b"\x00not json"
    response = call(controller, RequestCode.REGISTER_BROKER, reg_ext(body=garbage), garbage)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None
    assert response.remark.startswith("Failed to decode RegisterBrokerBody")
    not_zlib = b"plain text"
    response = call(
        controller, RequestCode.REGISTER_BROKER, reg_ext(body=not_zlib, compressed=True), not_zlib
    )
    assert response.code == ResponseCode.SYSTEM_ERROR


def test_register_without_body_and_old_broker_versions(controller: NamesrvController) -> None:
    # No body: the broker is registered with an empty topic table (DataVersion 0/0).
    assert call(controller, RequestCode.REGISTER_BROKER, reg_ext(crc=0)).code == ResponseCode.SUCCESS
    info = json.loads(
        call(controller, RequestCode.GET_BROKER_CLUSTER_INFO).body.decode().replace("{0:", '{"0":')
    )
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    # Brokers older than V3_0_11 send a bare TopicConfigSerializeWrapper.
    wrapper = reg_body(("Old", 3), counter=2).topic_config_serialize_wrapper.to_json()
    response = call(
        controller,
        RequestCode.REGISTER_BROKER,
        reg_ext("broker-old", "o:1", body=wrapper),
        wrapper,
        version=30,
    )
    assert response.code == ResponseCode.SUCCESS
    assert json.loads(route(controller, "Old").body)["queueDatas"][0]["brokerName"] == "broker-old"


def test_register_response_tells_a_slave_its_master(controller: NamesrvController) -> None:
    assert register(controller, ("T", 4)).ext_fields == {}
    slave = register(controller, ("T", 4), addr="127.0.0.2:10911", broker_id=1)
    assert slave.ext_fields == {"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:10912"}


def test_order_topic_config(tmp_path: Path) -> None:
    cfg = NamesrvConfig(listen_port=0, kv_config_path=str(tmp_path / "kv.json"), order_message_enable=True)
    c = NamesrvController(cfg, clock_ms=FakeClock())
    put = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
    assert call(c, RequestCode.PUT_KV_CONFIG, put).code == ResponseCode.SUCCESS
    # The register response body is the ORDER_TOPIC_CONFIG namespace as a KVTable.
    response = register(c, ("T", 4), ("U", 4))
    assert KVTable.from_json(response.body).table == {"T": "broker-a:4"}
    assert json.loads(route(c, "T").body)["orderTopicConf"] == "broker-a:4"
    assert "orderTopicConf" not in json.loads(route(c, "U").body)
    # Without orderMessageEnable the KV entry is not consulted.
    c.update_config({"orderMessageEnable": "false"})
    assert "orderTopicConf" not in json.loads(route(c, "T").body)


def test_route_json_flavour_follows_version_and_accept_standard_json_only(
    controller: NamesrvController,
) -> None:
    register(controller, ("T", 4))
    register(controller, ("T", 4), addr="127.0.0.2:10911", broker_id=1)
    bare = route(controller, "T", version=400).body
    assert b'"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"}' in bare
    standard = route(controller, "T", version=401).body
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"}' in standard
    asked = call(
        controller,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        {"topic": "T", "acceptStandardJsonOnly": "true"},
        version=100,
    )
    assert asked.body == standard
    assert json.loads(standard)["queueDatas"] == [
        {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
    ]


def test_topic_not_exist_has_the_java_remark(controller: NamesrvController) -> None:
    response = route(controller, "Missing")
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.remark == (
        "No topic route info in name server for the topic: Missing\n"
        "See http://rocketmq.apache.org/docs/faq/ for further details."
    )
    assert response.ext_fields is None
    assert response.body == b""


def test_missing_required_headers_and_unknown_codes(controller: NamesrvController) -> None:
    response = call(controller, RequestCode.GET_ROUTEINFO_BY_TOPIC, {})
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "the custom field <topic> is null")
    response = call(controller, RequestCode.REGISTER_BROKER, {"brokerName": "b"})
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None
    for name in ("brokerAddr", "clusterName", "haServerAddr", "brokerId"):
        assert f"<{name}>" in response.remark
    response = call(controller, RequestCode.PUT_KV_CONFIG, {"namespace": "NS"})
    assert response.code == ResponseCode.SYSTEM_ERROR
    response = call(controller, 9999)
    assert (response.code, response.remark) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        " request type 9999 not supported",
    )
    # A broker-only code is not the name server's either.
    assert call(controller, RequestCode.PULL_MESSAGE).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_unregister_broker(controller: NamesrvController) -> None:
    register(controller, ("T", 4))
    ext = dict(_BROKER_A)
    response = call(controller, RequestCode.UNREGISTER_BROKER, ext)
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields is None  # createResponseCommand(null)
    assert route(controller, "T").code == ResponseCode.TOPIC_NOT_EXIST


def test_query_data_version(controller: NamesrvController) -> None:
    ext = dict(_BROKER_A)
    v1 = DataVersion(timestamp=1700000000000, counter=1).to_json()
    unknown = call(controller, RequestCode.QUERY_DATA_VERSION, ext, v1)
    assert (unknown.code, unknown.ext_fields, unknown.body) == (
        ResponseCode.SUCCESS,
        {"changed": "true"},
        b"",
    )
    register(controller, ("T", 4))
    same = call(controller, RequestCode.QUERY_DATA_VERSION, ext, v1)
    assert same.ext_fields == {"changed": "false"}
    assert same.body == v1
    v2 = DataVersion(timestamp=1700000000000, counter=2).to_json()
    changed = call(controller, RequestCode.QUERY_DATA_VERSION, ext, v2)
    assert changed.ext_fields == {"changed": "true"}
    assert changed.body == v1
    no_body = call(controller, RequestCode.QUERY_DATA_VERSION, ext)
    assert no_body.code == ResponseCode.SYSTEM_ERROR


def test_query_data_version_keeps_an_unchanged_broker_alive(controller: NamesrvController) -> None:
    clock = controller.clock_ms
    assert isinstance(clock, FakeClock)
    register(controller, ("T", 4))
    ext = dict(_BROKER_A)
    clock.now += 100_000
    call(
        controller,
        RequestCode.QUERY_DATA_VERSION,
        ext,
        DataVersion(timestamp=1700000000000, counter=1).to_json(),
    )
    clock.now += 100_000
    assert controller.scan_not_active_broker() == 0
    clock.now += 30_000
    assert controller.scan_not_active_broker() == 1
    assert route(controller, "T").code == ResponseCode.TOPIC_NOT_EXIST


def test_kv_config_requests(controller: NamesrvController) -> None:
    key = {"namespace": "NS", "key": "k"}
    missing = call(controller, RequestCode.GET_KV_CONFIG, key)
    assert (missing.code, missing.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        "No config item, Namespace: NS Key: k",
    )
    assert call(controller, RequestCode.PUT_KV_CONFIG, {**key, "value": "v"}).code == ResponseCode.SUCCESS
    found = call(controller, RequestCode.GET_KV_CONFIG, key)
    assert (found.code, found.ext_fields) == (ResponseCode.SUCCESS, {"value": "v"})
    listed = call(controller, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS"})
    assert listed.body == b'{"table":{"k":"v"}}'
    none = call(controller, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "Other"})
    assert (none.code, none.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: Other")
    assert call(controller, RequestCode.DELETE_KV_CONFIG, key).code == ResponseCode.SUCCESS
    assert call(controller, RequestCode.GET_KV_CONFIG, key).code == ResponseCode.QUERY_NOT_FOUND
    path = controller.config.kv_config_path
    assert path is not None
    assert json.loads(Path(path).read_text()) == {"configTable": {"NS": {}}}


def test_write_perm_requests(controller: NamesrvController) -> None:
    register(controller, ("T", 4), ("U", 4))
    wiped = call(controller, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wiped.ext_fields == {"wipeTopicCount": "2"}
    assert json.loads(route(controller, "T").body)["queueDatas"][0]["perm"] == 4
    added = call(controller, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert added.ext_fields == {"addTopicCount": "2"}
    assert json.loads(route(controller, "T").body)["queueDatas"][0]["perm"] == 6


def test_topic_lists_and_delete(controller: NamesrvController) -> None:
    register(controller, ("T", 4), ("DefaultCluster", 1), ("broker-a", 1))
    register(controller, ("X", 1), name="broker-x", addr="x:1", cluster="Other")
    all_topics = TopicList.from_json(call(controller, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)
    assert sorted(all_topics.topic_list) == ["DefaultCluster", "T", "X", "broker-a"]
    assert all_topics.broker_addr is None
    by_cluster = call(controller, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "Other"})
    assert TopicList.from_json(by_cluster.body).topic_list == ["X"]
    system = TopicList.from_json(call(controller, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body)
    assert sorted(system.topic_list) == ["DefaultCluster", "Other", "broker-a", "broker-x"]
    assert system.broker_addr in {"127.0.0.1:10911", "x:1"}
    for code in (
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ):
        assert call(controller, code).body == b'{"topicList":[]}'

    assert call(controller, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"}).code == ResponseCode.SUCCESS
    assert route(controller, "T").code == ResponseCode.TOPIC_NOT_EXIST
    deleted = call(
        controller, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "X", "clusterName": "DefaultCluster"}
    )
    assert deleted.code == ResponseCode.SUCCESS
    assert route(controller, "X").code == ResponseCode.SUCCESS  # X lives on the other cluster


def test_namesrv_config_requests(controller: NamesrvController) -> None:
    text = call(controller, RequestCode.GET_NAMESRV_CONFIG).body.decode()
    props = parse_properties(text)
    assert props["orderMessageEnable"] == "false"
    assert props["listenPort"] == "0"
    update = b"orderMessageEnable=true\nscanNotActiveBrokerInterval=5000\n"
    assert call(controller, RequestCode.UPDATE_NAMESRV_CONFIG, None, update).code == ResponseCode.SUCCESS
    assert controller.config.order_message_enable is True
    assert controller.config.scan_not_active_broker_interval_ms == 5000
    refused = call(controller, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"kvConfigPath=/tmp/x\n")
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "Can not update config path")
    bad = call(controller, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"scanNotActiveBrokerInterval=0\n")
    assert bad.code == ResponseCode.SYSTEM_ERROR
    assert call(controller, RequestCode.UPDATE_NAMESRV_CONFIG).code == ResponseCode.SUCCESS
    expired = call(controller, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"brokerChannelExpiredTime=1000\n")
    assert expired.code == ResponseCode.SUCCESS
    assert controller.route_info_manager.broker_channel_expired_time_ms == 1000
