"""Retention (age, delete hour, disk usage), disk-full refusal, topic deletion, config."""

from __future__ import annotations

import os
import time

import pytest

from rocketq.broker.store import GetMessageStatus, MessageStore, MessageStoreConfig, PutMessageStatus
from rocketq.broker.store.config import parse_delay_levels
from rocketq.errors import IllegalArgumentError
from tests.unit.store.conftest import T0, StoreFactory, make_msg

HOUR = 3_600_000


def _hour(ms: int) -> str:
    return f"{time.localtime(ms / 1000).tm_hour:02d}"


def _fill_segments(factory: StoreFactory, topic: str = "TopicA", n: int = 250) -> None:
    store = factory.stores[-1]
    for i in range(n):
        assert store.put_message(make_msg(topic=topic, body=b"%d" % i + b"r" * 800, keys=f"k{i}")).ok


def test_expired_files_deleted_at_delete_hour(factory: StoreFactory) -> None:
    later = T0 + 73 * HOUR
    store = factory(delete_when=_hour(later + HOUR))  # not the hour of `later`
    _fill_segments(factory)
    segments = len(store.commit_log.queue.files)
    assert segments >= 3
    assert store.clean_expired(later) == 0  # expired, but not the delete hour, disk fine
    assert store.clean_expired(T0 + HOUR + HOUR) == 0
    deleted = store.clean_expired(later + HOUR)  # the delete hour
    assert deleted == segments - 1  # never the last segment
    assert store.get_min_phy_offset() == store.commit_log.queue.files[0].file_from_offset > 0
    # consume queues and index follow the new minimum
    min_offset = store.get_min_offset_in_queue("TopicA", 0)
    assert min_offset > 0
    got = store.get_message("g", "TopicA", 0, min_offset, 1)
    assert got.status is GetMessageStatus.FOUND
    assert store.get_earliest_message_time("TopicA", 0) > 0
    assert store.query_message("TopicA", "k0", 32, 0, 2**62).buffers == []
    assert len(store.query_message("TopicA", "k249", 32, 0, 2**62).buffers) == 1
    assert len(os.listdir(factory.root / "commitlog")) == 1


def test_young_files_kept_even_at_delete_hour(factory: StoreFactory) -> None:
    now = T0 + 2 * HOUR
    store = factory(delete_when=_hour(now))
    _fill_segments(factory)
    assert store.clean_expired(now) == 0


def test_high_disk_usage_deletes_expired_files_at_any_hour(factory: StoreFactory) -> None:
    later = T0 + 73 * HOUR
    store = factory(delete_when=_hour(later + HOUR))
    _fill_segments(factory)
    factory.disk.usage = 0.80  # over diskMaxUsedSpaceRatio (75), under clean-forcibly (85)
    assert store.clean_expired(T0 + 10 * HOUR) == 0  # too young
    assert store.clean_expired(later) > 0
    assert not store.is_disk_full


def _full(store: MessageStore) -> bool:
    return store.is_disk_full


def test_disk_full_refuses_puts_until_space_is_back(factory: StoreFactory) -> None:
    store = factory()
    _fill_segments(factory)
    factory.disk.usage = 0.95  # over the warning level: disk full, clean immediately
    deleted = store.clean_expired(T0 + HOUR)  # young files go too
    assert deleted > 0
    assert _full(store)
    r = store.put_message(make_msg())
    assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert not r.ok
    factory.disk.usage = 0.87  # between the two levels: still full
    store.clean_expired(T0 + HOUR)
    assert _full(store)
    factory.disk.usage = 0.50
    store.clean_expired(T0 + HOUR)
    assert not _full(store)
    assert store.put_message(make_msg()).ok


def test_delete_topics(factory: StoreFactory) -> None:
    store = factory()
    for _ in range(3):
        store.put_message(make_msg(topic="Gone", queue_id=1))
        store.put_message(make_msg(topic="Kept"))
    store.delete_topics({"Gone"})
    assert store.find_consume_queue("Gone", 1) is None
    assert not os.path.exists(factory.root / "consumequeue" / "Gone")
    assert store.get_message("g", "Gone", 1, 0, 32).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    r = store.put_message(make_msg(topic="Gone", queue_id=1))
    assert r.append is not None and r.append.logics_offset == 0  # offsets start again
    assert store.get_max_offset_in_queue("Kept", 0) == 3


def test_config_defaults_are_java() -> None:
    c = MessageStoreConfig(store_path_root_dir="/x")
    assert c.commit_log_dir == "/x/commitlog"
    assert c.mapped_file_size_commit_log == 1 << 30
    assert c.mapped_file_size_consume_queue == 6_000_000
    assert c.max_transfer_count_on_message_in_memory == 32
    assert c.max_transfer_bytes_on_message_in_disk == 64 * 1024
    assert c.max_delay_level == 18
    assert c.delay_levels_ms[2] == 10_000
    assert c.delay_levels_ms[-1] == 7_200_000
    assert c.delete_hours() == frozenset({4})
    assert MessageStoreConfig(store_path_root_dir="/x", store_path_commit_log="/y").commit_log_dir == "/y"


@pytest.mark.parametrize(
    "bad",
    [
        {"mapped_file_size_consume_queue": 1001},
        {"flush_disk_type": "NEVER"},
        {"delete_when": "25"},
        {"delete_when": "4pm"},
        {"disk_max_used_space_ratio": 101},
        {"message_delay_level": "1x"},
        {"message_delay_level": ""},
        {"max_message_size": 0},
        {"store_path_root_dir": ""},
    ],
)
def test_config_validation(bad: dict[str, object]) -> None:
    kwargs: dict[str, object] = {"store_path_root_dir": "/x", **bad}
    with pytest.raises(IllegalArgumentError):
        MessageStoreConfig(**kwargs)  # type: ignore[arg-type]


def test_parse_delay_levels() -> None:
    assert parse_delay_levels("1s 2m 3h 1d") == (1000, 120_000, 10_800_000, 86_400_000)
