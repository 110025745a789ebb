"""TopicConfigManager, SubscriptionGroupManager and ConsumerOffsetManager against golden files."""

from __future__ import annotations

import json
from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.broker.offsets import ConsumerOffsetManager
from rocketq.broker.outer_api import crc32
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.broker.subscriptions import SYSTEM_GROUPS, SubscriptionGroupManager
from rocketq.broker.topics import TopicConfigManager, validate_topic
from rocketq.protocol.route import RegisterBrokerBody
from tests.conftest import golden_dir, load_golden_frames

GOLDEN_BOOT_MS = 1795307988786  # dataVersion timestamp of the golden start-up registration


def _config(tmp_path: Path, **kw: object) -> BrokerConfig:
    return BrokerConfig(message_store=MessageStoreConfig(store_path_root_dir=str(tmp_path)), **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- topics
def test_default_topics_equal_golden_startup_registration(tmp_path: Path) -> None:
    frame = load_golden_frames("broker_register.jsonl")[0]
    assert frame.code == 103 and frame.body is not None
    tcm = TopicConfigManager(_config(tmp_path), wall_ms=lambda: GOLDEN_BOOT_MS)
    body = RegisterBrokerBody(topic_config_serialize_wrapper=tcm.build_serialize_wrapper()).to_json()
    assert body == frame.body  # same topics, same values, same ConcurrentHashMap order
    assert str(crc32(body)) == json.loads(frame.header)["extFields"]["bodyCrc32"]


def test_no_tbw102_without_auto_create(tmp_path: Path) -> None:
    tcm = TopicConfigManager(_config(tmp_path, auto_create_topic_enable=False))
    assert tcm.select_topic_config("TBW102") is None
    assert tcm.select_topic_config("SELF_TEST_TOPIC") is not None


def test_create_topic_in_send_message_method(tmp_path: Path) -> None:
    fired: list[int] = []
    clock = iter(range(1000, 2000))
    tcm = TopicConfigManager(
        _config(tmp_path), wall_ms=lambda: next(clock), register_hook=lambda: fired.append(1)
    )
    before = tcm.data_version.counter
    tc = tcm.create_topic_in_send_message_method("AutoT", "TBW102", "127.0.0.1:1", 4, 0)
    assert tc is not None
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (4, 4, 6)  # INHERIT removed
    assert tcm.data_version.counter == before + 1
    assert fired == [1]
    # existing topic: returned as is, nothing fired
    assert tcm.create_topic_in_send_message_method("AutoT", "TBW102", "x", 8, 0) is tc
    assert fired == [1]
    # capped by the default topic's queues
    big = tcm.create_topic_in_send_message_method("AutoBig", "TBW102", "x", 100, 0)
    assert big is not None and big.write_queue_nums == 8
    # default topic missing or without INHERIT
    assert tcm.create_topic_in_send_message_method("X1", "NoSuchDefault", "x", 4, 0) is None
    assert tcm.create_topic_in_send_message_method("X2", "SELF_TEST_TOPIC", "x", 4, 0) is None
    # persisted
    reloaded = TopicConfigManager(_config(tmp_path))
    assert reloaded.load()
    assert reloaded.select_topic_config("AutoT") == tc
    assert reloaded.data_version == tcm.data_version


def test_auto_create_off_strips_inherit_from_loaded_tbw102(tmp_path: Path) -> None:
    TopicConfigManager(_config(tmp_path)).persist()  # a topics.json holding TBW102
    tcm = TopicConfigManager(_config(tmp_path, auto_create_topic_enable=False))
    assert tcm.load()
    assert tcm.select_topic_config("TBW102") is not None
    assert tcm.create_topic_in_send_message_method("T", "TBW102", "x", 4, 0) is None
    tbw = tcm.select_topic_config("TBW102")
    assert tbw is not None and tbw.perm == 6


def test_send_back_topic_and_delete(tmp_path: Path) -> None:
    fired: list[int] = []
    tcm = TopicConfigManager(_config(tmp_path), register_hook=lambda: fired.append(1))
    tc = tcm.create_topic_in_send_message_back_method("%RETRY%g", 1, 6, 0)
    assert (tc.read_queue_nums, tc.perm) == (1, 6)
    assert tcm.create_topic_in_send_message_back_method("%RETRY%g", 3, 6, 0) is tc
    assert fired == [1]
    counter = tcm.data_version.counter
    tcm.delete_topic_config("%RETRY%g")
    assert tcm.select_topic_config("%RETRY%g") is None
    assert tcm.data_version.counter == counter + 1
    tcm.delete_topic_config("%RETRY%g")  # absent: no bump
    assert tcm.data_version.counter == counter + 1


def test_topic_validation() -> None:
    assert validate_topic("Good_topic-1%|x") is None
    assert validate_topic("") == "The specified topic is blank."
    assert validate_topic("bad topic") is not None and "illegal characters" in str(
        validate_topic("bad topic")
    )
    assert validate_topic("x" * 127) is None
    assert validate_topic("x" * 128) == "The specified topic is longer than topic max length."


def test_system_topics(tmp_path: Path) -> None:
    tcm = TopicConfigManager(_config(tmp_path, broker_name="bn", broker_cluster_name="cn"))
    for topic in (
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "cn",
        "bn",
        "cn_REPLY_TOPIC",
        "rmq_sys_x",
    ):
        assert tcm.is_system_topic(topic), topic
    assert not tcm.is_system_topic("UserTopic")


def test_golden_topics_json_round_trip(tmp_path: Path) -> None:
    text = (golden_dir() / "store" / "topics.json").read_text()
    tcm = TopicConfigManager(_config(tmp_path))
    tcm.decode(text)
    assert tcm.data_version.counter == 13
    assert tcm.encode(pretty=True) == text


# ---------------------------------------------------------------------- subscription groups
def test_subscription_groups(tmp_path: Path) -> None:
    sgm = SubscriptionGroupManager(_config(tmp_path))
    assert set(SYSTEM_GROUPS) <= set(sgm.subscription_group_table)
    assert sgm.data_version.counter == 0
    sgc = sgm.find_subscription_group_config("G1")
    assert sgc is not None and sgc.retry_queue_nums == 1 and sgc.retry_max_times == 16
    assert sgm.data_version.counter == 1
    assert sgm.find_subscription_group_config("G1") is sgc
    assert sgm.data_version.counter == 1
    off = SubscriptionGroupManager(_config(tmp_path, auto_create_subscription_group=False))
    assert off.find_subscription_group_config("G2") is None
    assert off.find_subscription_group_config("CID_RMQ_SYS_TRANS") is not None
    sgm.delete_subscription_group_config("G1")
    assert "G1" not in sgm.subscription_group_table
    reloaded = SubscriptionGroupManager(_config(tmp_path))
    assert reloaded.load() and "G1" not in reloaded.subscription_group_table


def test_golden_subscription_group_json_round_trip(tmp_path: Path) -> None:
    text = (golden_dir() / "store" / "subscriptionGroup.json").read_text()
    sgm = SubscriptionGroupManager(_config(tmp_path))
    sgm.decode(text)
    assert sgm.encode(pretty=True) == text


# ---------------------------------------------------------------------- offsets
def test_offsets(tmp_path: Path) -> None:
    com = ConsumerOffsetManager(_config(tmp_path))
    assert com.query_offset("g", "t", 0) == -1
    com.commit_offset("1.2.3.4:5", "g", "t", 0, 7)
    com.commit_offset("1.2.3.4:5", "g", "t", 0, 5)  # moving back is allowed
    com.commit_offset("1.2.3.4:5", "g", "t2", 1, 9)
    com.commit_offset("1.2.3.4:5", "h", "t", 3, 1)
    assert com.query_offset("g", "t", 0) == 5
    assert com.which_topic_by_consumer("g") == {"t", "t2"}
    assert com.which_group_by_topic("t") == {"g", "h"}
    com.persist()
    again = ConsumerOffsetManager(_config(tmp_path))
    assert again.load()
    assert again.query_offsets("g", "t2") == {1: 9}
    again.clean_offset_by_topic("t")
    assert again.which_group_by_topic("t") == set()
    again.remove_offset("g")
    assert again.which_topic_by_consumer("g") == set()


def test_golden_consumer_offset_json_round_trip(tmp_path: Path) -> None:
    text = (golden_dir() / "store" / "consumerOffset.json").read_text()
    com = ConsumerOffsetManager(_config(tmp_path))
    com.decode(text)
    assert com.query_offset("GoldenPushGroup", "GoldenPushTopic", 1) == 4
    assert com.encode(pretty=True) == text
