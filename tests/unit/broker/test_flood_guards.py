"""Guards against floods of auto-created names (issue #21 item 4): the auto-create bound and
the coalesced, off-thread config persistence."""

from __future__ import annotations

import threading
from pathlib import Path

from rocketq.broker.config import BrokerConfig
from rocketq.broker.config_persist_service import ConfigPersistService
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.broker.subscriptions import SubscriptionGroupManager
from rocketq.broker.topics import AUTO_CREATE_BURST, TopicConfigManager
from rocketq.common.token_bucket import TokenBucket
from rocketq.testing.waits import wait_until


def _config(tmp_path: Path) -> BrokerConfig:
    return BrokerConfig(message_store=MessageStoreConfig(store_path_root_dir=str(tmp_path)))


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    clock = _Clock()
    bucket = TokenBucket(10.0, 3, clock=clock)
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]
    clock.now += 0.15  # one and a half tokens back
    assert bucket.try_acquire() and not bucket.try_acquire()
    clock.now += 100  # never more than the burst
    assert sum(bucket.try_acquire() for _ in range(10)) == 3


def test_group_auto_creation_is_bounded_but_system_groups_are_not(tmp_path: Path) -> None:
    sgm = SubscriptionGroupManager(_config(tmp_path))
    sgm.persister = lambda _m: None  # persistence is not what this test is about
    created = [sgm.find_subscription_group_config(f"g{i}") for i in range(AUTO_CREATE_BURST + 50)]
    assert sum(c is not None for c in created) == AUTO_CREATE_BURST
    assert sgm.find_subscription_group_config("TOOLS_CONSUMER") is not None
    assert sgm.find_subscription_group_config("g0") is not None  # existing ones are found


def test_topic_auto_creation_is_bounded(tmp_path: Path) -> None:
    tcm = TopicConfigManager(_config(tmp_path))
    tcm.persister = lambda _m: None
    made = [
        tcm.create_topic_in_send_message_method(f"T{i}", "TBW102", "h", 4, 0)
        for i in range(AUTO_CREATE_BURST + 5)
    ]
    assert sum(t is not None for t in made) == AUTO_CREATE_BURST


def test_config_persistence_is_coalesced_and_flushed_at_shutdown(tmp_path: Path) -> None:
    sgm = SubscriptionGroupManager(_config(tmp_path))
    writes: list[str] = []
    real = sgm.persist

    def counting() -> None:
        writes.append(threading.current_thread().name)
        real()

    sgm.persist = counting  # type: ignore[method-assign]
    service = ConfigPersistService(interval_ms=200)
    sgm.persister = service.request
    service.start()
    try:
        for i in range(100):  # one request per new group, on the caller's thread
            sgm.find_subscription_group_config(f"flood{i}")
        wait_until(lambda: bool(writes), 5, "the coalesced write")
        assert len(writes) <= 3  # 100 changes, a handful of writes ...
        assert set(writes) == {"ConfigPersistService"}  # ... and none on the caller's thread
        sgm.find_subscription_group_config("last")
    finally:
        service.shutdown()  # writes what is still dirty
    reloaded = SubscriptionGroupManager(_config(tmp_path))
    assert reloaded.load()
    assert "last" in reloaded.subscription_group_table
    assert "flood99" in reloaded.subscription_group_table
