"""Pull-consumer logic without a broker: requests vs golden/pull.jsonl, result mapping, the
client-side tag re-filter, and the heartbeat body of a pull consumer."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from rocketq.client.api_results import FindBrokerResult, PullStatus
from rocketq.client.config import ClientConfig
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper, build_pull_sys_flag, filter_by_tags
from rocketq.client.instance import MQClientInstance
from rocketq.errors import BrokerError
from rocketq.protocol.codes import LanguageCode, RequestCode
from rocketq.protocol.frame import decode_frame
from rocketq.protocol.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.remoting.client import RemotingClient
from tests.conftest import GoldenFrame, load_golden_frames

GOLDEN = {f.seq: f for f in load_golden_frames("pull.jsonl")}
MQ0 = MessageQueue("GoldenPullTopic", "broker-a", 0)
#: The 4.9.7 pull consumer's stream-request extra (``ReqT``); rocketq does not send it.
JAVA_ONLY_KEYS = {"ReqT"}


def _golden_ext(golden: GoldenFrame) -> dict[str, str]:
    ext = json.loads(golden.header)["extFields"]
    return {k: v for k, v in ext.items() if k not in JAVA_ONLY_KEYS}


@pytest.fixture
def api() -> Iterator[MQClientAPI]:
    remoting = RemotingClient(name="unit")
    try:
        yield MQClientAPI(remoting, ["127.0.0.1:9876"], language=LanguageCode.JAVA)
    finally:
        remoting.close()


@pytest.fixture
def instance() -> Iterator[MQClientInstance]:
    inst = MQClientInstance(ClientConfig(namesrv_addr="127.0.0.1:9876"), "192.0.2.2@pull-c1@STREAM")
    try:
        yield inst
    finally:
        inst.shutdown()


class _FixedBroker:
    """A PullAPIHost whose route table answers one broker (PullAPIWrapper is compiled: its
    methods cannot be replaced, so the host is)."""

    def __init__(self, instance: MQClientInstance, found: FindBrokerResult) -> None:
        self.api = instance.api
        self.found = found

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None:
        return self.found

    def update_topic_route_info_from_name_server(self, topic: str) -> bool:
        return False


@pytest.mark.parametrize("seq", [13, 23, 25, 27, 29, 31, 33, 38])
def test_pull_requests_match_golden(seq: int, instance: MQClientInstance) -> None:
    golden = GOLDEN[seq]
    ext = _golden_ext(golden)
    mq = MessageQueue(ext["topic"], ext["bname"], int(ext["queueId"]))
    block = int(ext["sysFlag"]) & 2 != 0
    sd = build_subscription_data(mq.topic, ext["subscription"], sub_version=0)
    wrapper = PullAPIWrapper(
        _FixedBroker(instance, FindBrokerResult("127.0.0.1:10911", False)), "GoldenPullGroup"
    )
    addr, header = wrapper.build_request(
        mq,
        sd.sub_string,
        sd.expression_type,
        0,
        int(ext["queueOffset"]),
        int(ext["maxMsgNums"]),
        build_pull_sys_flag(commit_offset=False, suspend=block, subscription=True),
        0,
        20_000,
    )
    assert addr == "127.0.0.1:10911"
    cmd = instance.api.build_pull_request(header)
    assert cmd.code == RequestCode.PULL_MESSAGE
    assert cmd.ext_fields == ext


def test_pull_from_slave_never_commits(instance: MQClientInstance) -> None:
    wrapper = PullAPIWrapper(_FixedBroker(instance, FindBrokerResult("h:1", True)), "G")
    flag = build_pull_sys_flag(commit_offset=True, suspend=True, subscription=False)
    assert flag == 3
    _, header = wrapper.build_request(MQ0, "*", "TAG", 0, 0, 32, flag, 5, 15_000)
    assert header.sys_flag == 2
    assert build_pull_sys_flag(commit_offset=False, suspend=True, subscription=True, lite_pull=True) == 0x16


@pytest.mark.parametrize(
    ("seq", "code", "header_cls", "kwargs"),
    [
        (7, RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader, {}),
        (9, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader, {}),
        (11, RequestCode.GET_EARLIEST_MSG_STORETIME, GetEarliestMsgStoretimeRequestHeader, {}),
        (15, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader, {"timestamp": 1795308039889}),
        (
            35,
            RequestCode.QUERY_CONSUMER_OFFSET,
            QueryConsumerOffsetRequestHeader,
            {"consumer_group": "GoldenPullGroup"},
        ),
        (
            37,
            RequestCode.UPDATE_CONSUMER_OFFSET,
            UpdateConsumerOffsetRequestHeader,
            {"consumer_group": "GoldenPullGroup", "commit_offset": 5},
        ),
    ],
)
def test_offset_requests_match_golden(
    seq: int, code: int, header_cls: type, kwargs: dict[str, object], api: MQClientAPI
) -> None:
    header = header_cls(topic="GoldenPullTopic", queue_id=0, bname="broker-a", **kwargs)
    cmd = api.request(code, header)
    assert cmd.ext_fields == _golden_ext(GOLDEN[seq])
    assert GOLDEN[seq].code == code


def test_update_offset_oneway_builder_matches_golden(api: MQClientAPI) -> None:
    cmd = api._update_offset_request("GoldenPullGroup", "GoldenPullTopic", 0, 5, "broker-a")
    assert cmd.ext_fields == _golden_ext(GOLDEN[37])


def test_pull_responses_map_to_statuses() -> None:
    expected = {
        14: (PullStatus.FOUND, 3, 3),
        24: (PullStatus.FOUND, 5, 2),
        26: (PullStatus.NO_NEW_MSG, 5, 0),
        28: (PullStatus.OFFSET_ILLEGAL, 5, 0),
        30: (PullStatus.NO_NEW_MSG, 0, 0),
        32: (PullStatus.OFFSET_ILLEGAL, 0, 0),
    }
    for seq, (status, next_begin, count) in expected.items():
        result = MQClientAPI.process_pull_response(decode_frame(GOLDEN[seq].frame), "a")
        assert result.pull_status is status, seq
        assert result.next_begin_offset == next_begin
        assert result.suggest_which_broker_id == 0
        sd = build_subscription_data("GoldenPullTopic", "*", sub_version=0)

        class _Inst:  # process_pull_result touches no instance state
            pass

        wrapper = PullAPIWrapper(_Inst(), "G")  # type: ignore[arg-type]
        done = wrapper.process_pull_result(MQ0, result, sd)
        assert len(done.msg_found_list) == count
        assert done.message_binary == b""
        for msg in done.msg_found_list:
            assert msg.broker_name == "broker-a"
            assert msg.properties["MAX_OFFSET"] == str(result.max_offset)
            assert msg.properties["MIN_OFFSET"] == "0"


def test_pull_error_codes_raise() -> None:
    resp = decode_frame(GOLDEN[14].frame)
    resp.code = 24  # SUBSCRIPTION_NOT_EXIST
    with pytest.raises(BrokerError) as err:
        MQClientAPI.process_pull_response(resp, "10.0.0.1:10911")
    assert err.value.code == 24


def _msg(tags: str | None) -> MessageExt:
    msg = MessageExt("T", b"x")
    msg.tags = tags
    return msg


def test_client_side_tag_refilter() -> None:
    msgs = [_msg("TagA"), _msg("TagB"), _msg(None), _msg("TagC")]
    assert filter_by_tags(msgs, build_subscription_data("T", "*")) == msgs
    kept = filter_by_tags(msgs, build_subscription_data("T", "TagA || TagC"))
    assert [m.tags for m in kept] == ["TagA", "TagC"]
    # a hash collision passes the broker; the client drops it ("Aa" and "BB" share a Java hash)
    colliding = [_msg("Aa"), _msg("BB")]
    assert [m.tags for m in filter_by_tags(colliding, build_subscription_data("T", "Aa"))] == ["Aa"]
    class_filter = build_subscription_data("T", "TagA")
    class_filter.class_filter_mode = True
    assert filter_by_tags(msgs, class_filter) == msgs


def test_golden_tag_filtered_pull_keeps_only_tagb() -> None:
    result = MQClientAPI.process_pull_response(decode_frame(GOLDEN[34].frame), "a")

    class _Inst:
        pass

    wrapper = PullAPIWrapper(_Inst(), "G")  # type: ignore[arg-type]
    done = wrapper.process_pull_result(MQ0, result, build_subscription_data("GoldenPullTopic", "TagB"))
    assert [m.tags for m in done.msg_found_list] == ["TagB", "TagB"]
    assert [m.queue_offset for m in done.msg_found_list] == [1, 3]


class FakeConsumer:
    """An MQConsumerInner as the pull consumer reports itself in heartbeats."""

    def group_name(self) -> str:
        return "GoldenPullGroup"

    def message_model(self) -> MessageModel:
        return MessageModel.CLUSTERING

    def consume_type(self) -> ConsumeType:
        return ConsumeType.CONSUME_ACTIVELY

    def consume_from_where(self) -> ConsumeFromWhere:
        return ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET

    def subscriptions(self) -> list[SubscriptionData]:
        return [build_subscription_data("GoldenPullTopic", "*", sub_version=0)]

    def do_rebalance(self) -> None: ...

    def persist_consumer_offset(self) -> None: ...

    def update_topic_subscribe_info(self, topic: str, info: set[MessageQueue]) -> None: ...

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        return False


def test_heartbeat_body_matches_golden_consumer_data(instance: MQClientInstance) -> None:
    assert instance.register_consumer("GoldenPullGroup", FakeConsumer())
    data = instance.prepare_heartbeat_data()
    body = GOLDEN[39].body
    assert body is not None
    golden = HeartbeatData.from_json(body)
    assert data.client_id == golden.client_id
    assert data.consumer_data_set == golden.consumer_data_set
    # Java adds its inner producer group; rocketq has none, otherwise the body is identical
    golden.producer_data_set = []
    assert data.to_json() == golden.to_json()
    instance.unregister_consumer("GoldenPullGroup")  # no broker known: nothing is sent
