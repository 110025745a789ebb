"""Producer logic without a broker: configs, validation, send-result mapping, and the
request frames compared byte for byte with golden/producer.jsonl (language and version set
to the Java client's for the comparison)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from rocketq.client.api_results import SendStatus
from rocketq.client.config import (
    ClientConfig,
    LitePullConsumerConfig,
    ProducerConfig,
    PullConsumerConfig,
    change_instance_name_to_pid,
    parse_namesrv_addr,
    validate_group,
    validate_topic,
)
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.impl.topic_route import topic_route_to_publish_info, topic_route_to_subscribe_info
from rocketq.client.producer import Producer
from rocketq.client.send_prep import (
    PreparedSend,
    prepare_batch,
    prepare_message,
    send_header,
    send_request_of,
)
from rocketq.errors import BrokerError, ClientError, IllegalArgumentError
from rocketq.protocol.codes import LanguageCode
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import Message, decode_batch
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import TopicRouteData
from rocketq.remoting.client import RemotingClient
from tests.conftest import GoldenFrame, load_golden_frames

GOLDEN = {f.seq: f for f in load_golden_frames("producer.jsonl")}
MQ0 = MessageQueue("GoldenProducerTopic", "broker-a", 0)


@pytest.fixture
def api() -> Iterator[MQClientAPI]:
    """An API over a never-started remoting client: only request building is exercised."""
    remoting = RemotingClient(name="unit")
    try:
        yield MQClientAPI(remoting, ["127.0.0.1:9876"], language=LanguageCode.JAVA)
    finally:
        remoting.close()


def _as_java(cmd: RemotingCommand, golden: GoldenFrame) -> bytes:
    cmd.opaque = golden.opaque
    cmd.version = 407
    cmd.flag = golden.flag
    return cmd.encode()


def _golden_ext(golden: GoldenFrame) -> dict[str, str]:
    ext = json.loads(golden.header)["extFields"]
    assert isinstance(ext, dict)
    return ext


def _direct(
    prep: PreparedSend, mq: MessageQueue, p: Producer, api: MQClientAPI, born: str
) -> RemotingCommand:
    """The producer's own request (``send_request_of``, no header object) with the golden born time."""
    cmd = send_request_of(prep, mq, p.config, api.language, api.serialize_type)
    assert cmd.ext_fields is not None
    cmd.ext_fields["g"] = born  # keeps its place in the map
    return cmd


def _producer() -> Producer:
    return Producer("GoldenProducerGroup", namesrv_addr="127.0.0.1:9876")


def _golden_message(seq: int, body: bytes) -> Message:
    """Rebuild the Java message from the golden request's properties (UNIQ_KEY included)."""
    from rocketq.protocol.message import decode_properties

    props = decode_properties(_golden_ext(GOLDEN[seq])["i"])
    return Message("GoldenProducerTopic", body, properties=props)


# ---------------------------------------------------------------------- configs
def test_config_defaults_are_java_defaults() -> None:
    p = ProducerConfig()
    assert (p.producer_group, p.create_topic_key, p.default_topic_queue_nums) == (
        "DEFAULT_PRODUCER",
        "TBW102",
        4,
    )
    assert (p.send_msg_timeout_ms, p.compress_msg_body_over_howmuch, p.max_message_size) == (
        3000,
        4096,
        4194304,
    )
    assert (p.retry_times_when_send_failed, p.retry_times_when_send_async_failed) == (2, 2)
    c = ClientConfig()
    assert (c.poll_name_server_interval_ms, c.heartbeat_broker_interval_ms) == (30_000, 30_000)
    assert (c.persist_consumer_offset_interval_ms, c.mq_client_api_timeout_ms) == (5_000, 3_000)
    pc = PullConsumerConfig()
    assert (pc.broker_suspend_max_time_ms, pc.consumer_timeout_millis_when_suspend_ms) == (20_000, 30_000)
    assert pc.consumer_pull_timeout_ms == 10_000
    assert pc.message_model is MessageModel.CLUSTERING
    lc = LitePullConsumerConfig()
    assert (lc.pull_batch_size, lc.poll_timeout_ms, lc.auto_commit, lc.auto_commit_interval_ms) == (
        10,
        5000,
        True,
        5000,
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"producer_group": ""},
        {"producer_group": "bad group"},
        {"producer_group": "x" * 256},
        {"send_msg_timeout_ms": 0},
        {"compress_level": 10},
        {"retry_times_when_send_failed": -1},
    ],
)
def test_producer_config_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(IllegalArgumentError):
        ProducerConfig(**kwargs)  # type: ignore[arg-type]


def test_consumer_config_validation() -> None:
    with pytest.raises(IllegalArgumentError, match="greater than"):
        PullConsumerConfig(consumer_timeout_millis_when_suspend_ms=20_000)
    with pytest.raises(IllegalArgumentError, match="1000"):
        LitePullConsumerConfig(auto_commit_interval_ms=999)
    with pytest.raises(IllegalArgumentError):
        ClientConfig(heartbeat_broker_interval_ms=0)
    with pytest.raises(IllegalArgumentError):
        ClientConfig(instance_name="a@b")


def test_topic_and_group_names() -> None:
    validate_topic("%RETRY%G_1-x|y")
    validate_group("G_1-x")
    for bad in ("", "   ", "a b", "t/x", "x" * 128):
        with pytest.raises(IllegalArgumentError):
            validate_topic(bad)
    for forbidden in ("SCHEDULE_TOPIC_XXXX", "TBW102", "OFFSET_MOVED_EVENT"):
        validate_topic(forbidden)
        with pytest.raises(IllegalArgumentError, match="forbidden"):
            validate_topic(forbidden, for_send=True)


def test_namesrv_addr_from_argument_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_namesrv_addr("a:1; b:2;") == ["a:1", "b:2"]
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876")
    assert ClientConfig().namesrv_addr_list() == ["10.0.0.1:9876"]
    monkeypatch.delenv("NAMESRV_ADDR")
    with pytest.raises(ClientError, match="NAMESRV_ADDR"):
        ClientConfig().namesrv_addr_list()
    with pytest.raises(IllegalArgumentError):
        parse_namesrv_addr("nohost")


def test_client_id_and_instance_rename() -> None:
    cfg = ClientConfig(client_ip="192.0.2.2", instance_name="golden-producer")
    assert cfg.build_client_id() == "192.0.2.2@golden-producer"
    assert ClientConfig(client_ip="1.2.3.4", unit_name="u").build_client_id() == "1.2.3.4@DEFAULT@u"
    renamed = change_instance_name_to_pid("DEFAULT")
    assert renamed != "DEFAULT"
    assert "#" in renamed
    assert change_instance_name_to_pid("mine") == "mine"


# ---------------------------------------------------------------------- message checks
def test_message_validation_before_sending() -> None:
    p = Producer("G", namesrv_addr="127.0.0.1:9876", config=ProducerConfig(max_message_size=10))
    with pytest.raises(IllegalArgumentError, match="length is zero"):
        prepare_message(Message("T", b""), p.config)
    with pytest.raises(IllegalArgumentError, match="over max value"):
        prepare_message(Message("T", b"x" * 11), p.config)
    with pytest.raises(IllegalArgumentError, match="illegal characters"):
        prepare_message(Message("bad topic", b"x"), p.config)
    with pytest.raises(IllegalArgumentError, match="same"):
        prepare_batch([Message("A", b"x"), Message("B", b"x")], p.config)
    with pytest.raises(IllegalArgumentError, match="TimeDelayLevel"):
        prepare_batch([Message("A", b"x", delay_time_level=2)], p.config)
    with pytest.raises(IllegalArgumentError):
        prepare_batch([], p.config)
    with pytest.raises(ClientError, match="state not OK"):
        p.send(Message("T", b"x"))


def test_uniq_key_compression_and_retry_headers() -> None:
    p = Producer("G", namesrv_addr="127.0.0.1:9876")
    msg = Message("T", b"a" * 5000)
    prep = prepare_message(msg, p.config)
    uniq = msg.properties["UNIQ_KEY"]
    assert prep.uniq_id == uniq
    assert len(uniq) in (32, 56)
    assert prep.sys_flag == 0x301  # COMPRESSED_FLAG | ZLIB type, as golden seq 15 ("f":"769")
    assert len(prep.body) < 100
    assert prepare_message(Message("T", b"a" * 4095), p.config).sys_flag == 0
    retry = Message("%RETRY%G", b"x", properties={"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16"})
    rp = prepare_message(retry, p.config)
    assert (rp.reconsume_times, rp.max_reconsume_times) == (3, 16)
    assert "RECONSUME_TIME" not in rp.properties
    assert retry.properties["RECONSUME_TIME"] == "3"  # the caller's message is left alone


# ---------------------------------------------------------------------- golden frames
def test_route_request_matches_golden(api: MQClientAPI) -> None:
    from rocketq.protocol.codes import RequestCode
    from rocketq.protocol.headers import GetRouteInfoRequestHeader

    cmd = api.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="GoldenProducerTopic")
    )
    assert _as_java(cmd, GOLDEN[5]) == GOLDEN[5].frame


@pytest.mark.parametrize("seq", [7, 13, 17, 22])
def test_send_request_matches_golden(seq: int, api: MQClientAPI) -> None:
    golden = GOLDEN[seq]
    ext = _golden_ext(golden)
    p = _producer()
    assert golden.body is not None
    prep = prepare_message(_golden_message(seq, golden.body), p.config)
    mq = MessageQueue("GoldenProducerTopic", "broker-a", int(ext["e"]))
    header = send_header(prep, mq, p.config)
    header.born_timestamp = int(ext["g"])
    cmd = api.build_send_request(header, prep.body)
    assert cmd.ext_fields == ext
    assert list(cmd.ext_fields) == list(ext)
    assert _as_java(cmd, golden) == golden.frame
    assert _as_java(_direct(prep, mq, p, api, ext["g"]), golden) == golden.frame


def test_compressed_send_request_matches_golden(api: MQClientAPI) -> None:
    golden = GOLDEN[15]
    ext = _golden_ext(golden)
    assert golden.body is not None
    import zlib

    body = zlib.decompress(golden.body)
    assert len(body) == 5023
    p = _producer()
    prep = prepare_message(_golden_message(15, body), p.config)
    header = send_header(prep, MessageQueue("GoldenProducerTopic", "broker-a", 2), p.config)
    header.born_timestamp = int(ext["g"])
    cmd = api.build_send_request(header, prep.body)
    assert cmd.ext_fields == ext
    assert zlib.decompress(cmd.body) == body
    direct = _direct(prep, MessageQueue("GoldenProducerTopic", "broker-a", 2), p, api, ext["g"])
    assert direct.encode() == cmd.encode()


def test_batch_request_matches_golden(api: MQClientAPI) -> None:
    golden = GOLDEN[20]
    ext = _golden_ext(golden)
    assert golden.body is not None
    msgs = []
    for entry in decode_batch(golden.body):
        msgs.append(
            Message("GoldenProducerTopic", entry.body, flag=entry.flag, properties=entry.property_map())
        )
    p = _producer()
    prep = prepare_batch(msgs, p.config)
    assert prep.body == golden.body
    header = send_header(prep, MQ0, p.config)
    header.born_timestamp = int(ext["g"])
    cmd = api.build_send_request(header, prep.body, batch=True)
    assert cmd.code == 320
    assert _as_java(cmd, golden) == golden.frame
    assert _as_java(_direct(prep, MQ0, p, api, ext["g"]), golden) == golden.frame
    assert prep.uniq_id == ",".join(m.properties["UNIQ_KEY"] for m in msgs)


def test_unregister_request_matches_golden(api: MQClientAPI) -> None:
    from rocketq.protocol.codes import RequestCode
    from rocketq.protocol.headers import UnregisterClientRequestHeader

    header = UnregisterClientRequestHeader(
        client_id="192.0.2.2@golden-producer", producer_group="GoldenProducerGroup"
    )
    cmd = api.request(RequestCode.UNREGISTER_CLIENT, header)
    assert _as_java(cmd, GOLDEN[30]) == GOLDEN[30].frame


# ---------------------------------------------------------------------- responses
def test_send_response_mapping_from_golden() -> None:
    resp = decode_frame(GOLDEN[8].frame)
    result = MQClientAPI.process_send_response("broker-a", "GoldenProducerTopic", 0, "UNIQ", resp, "addr")
    assert result.status is SendStatus.SEND_OK
    assert result.offset_msg_id == "7F00000100002A9F0000000000000000"
    assert result.msg_id == "UNIQ"
    assert result.message_queue == MQ0
    assert result.queue_offset == 0
    assert result.region_id == "DefaultRegion"
    assert result.trace_on
    batch = MQClientAPI.process_send_response(
        "broker-a", "GoldenProducerTopic", 0, "A,B,C", decode_frame(GOLDEN[21].frame), "x"
    )
    assert batch.offset_msg_id.count(",") == 2
    assert batch.queue_offset == 1


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (10, SendStatus.FLUSH_DISK_TIMEOUT),
        (12, SendStatus.FLUSH_SLAVE_TIMEOUT),
        (11, SendStatus.SLAVE_NOT_AVAILABLE),
    ],
)
def test_send_response_warning_statuses(code: int, status: SendStatus) -> None:
    resp = decode_frame(GOLDEN[8].frame)
    resp.code = code
    assert MQClientAPI.process_send_response("b", "T", 0, "U", resp, "a").status is status


def test_send_response_errors_are_typed() -> None:
    resp = RemotingCommand(code=17, flag=1, remark="topic not exist")
    with pytest.raises(BrokerError) as err:
        MQClientAPI.process_send_response("b", "T", 0, "U", resp, "1.2.3.4:10911")
    assert err.value.code == 17
    assert err.value.retriable
    assert err.value.addr == "1.2.3.4:10911"
    resp.code = 13
    with pytest.raises(BrokerError) as err2:
        MQClientAPI.process_send_response("b", "T", 0, "U", resp, "a")
    assert not err2.value.retriable


# ---------------------------------------------------------------------- routes
def test_route_to_publish_and_subscribe_info() -> None:
    route = TopicRouteData.from_json(
        b'{"brokerDatas":[{"brokerAddrs":{"0":"h1:1"},"brokerName":"b-b","cluster":"c"},'
        b'{"brokerAddrs":{"0":"h2:1"},"brokerName":"b-a","cluster":"c"},'
        b'{"brokerAddrs":{"1":"h3:1"},"brokerName":"b-c","cluster":"c"}],"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"b-b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2},'
        b'{"brokerName":"b-a","perm":6,"readQueueNums":3,"topicSysFlag":0,"writeQueueNums":1},'
        b'{"brokerName":"b-c","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}'
    )
    pub = topic_route_to_publish_info("T", route)
    # sorted by broker name; b-c has no master -> not writable here
    assert [(m.broker_name, m.queue_id) for m in pub.message_queue_list] == [
        ("b-a", 0),
        ("b-b", 0),
        ("b-b", 1),
    ]
    sub = topic_route_to_subscribe_info("T", route)
    assert len(sub) == 6
    route.queue_datas[0].perm = 4  # read-only
    assert all(m.broker_name != "b-b" for m in topic_route_to_publish_info("T", route).message_queue_list)
    route.order_topic_conf = "b-x:2;b-y:1"
    ordered = topic_route_to_publish_info("T", route)
    assert ordered.order_topic
    assert [(m.broker_name, m.queue_id) for m in ordered.message_queue_list] == [
        ("b-x", 0),
        ("b-x", 1),
        ("b-y", 0),
    ]


def test_golden_route_body_parses_to_the_publish_list() -> None:
    body = GOLDEN[6].body
    assert body is not None
    pub = topic_route_to_publish_info("GoldenProducerTopic", TopicRouteData.from_json(body))
    assert [m.queue_id for m in pub.message_queue_list] == [0, 1, 2, 3]
