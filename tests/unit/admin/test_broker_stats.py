"""Per-key statistics of the broker (VIEW_BROKER_STATS_DATA, consume TPS) with an injected clock."""

from __future__ import annotations

from rocketq.broker.stats import GROUP_GET_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStats


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def test_unknown_item_is_none() -> None:
    stats = BrokerStats(clock_ms=Clock())
    assert stats.stats_item(TOPIC_PUT_NUMS, "T") is None
    assert stats.tps_group_get_nums("G", "T") == 0.0


def test_minute_window_rate_and_day_sum() -> None:
    clock = Clock()
    stats = BrokerStats(clock_ms=clock)
    stats.sample()
    for _ in range(12):  # two minutes: 10 messages (2 puts) every 10 s
        clock.ms += 10_000
        stats.inc_topic_put("T", 5, 50)
        stats.inc_topic_put("T", 5, 50)
        stats.sample()
    item = stats.stats_item(TOPIC_PUT_NUMS, "T")
    assert item is not None
    # the minute tier keeps 7 snapshots 10 s apart: the last 60 s, 60 messages
    assert item["minute"].sum == 60
    assert item["minute"].tps == 1.0
    assert item["minute"].avgpt == 5.0
    # hour and day tiers start at the first sample: everything
    assert item["hour"].sum == item["day"].sum == 120
    size = stats.stats_item(TOPIC_PUT_SIZE, "T")
    assert size is not None and size["day"].sum == 1200
    # live counters count at once, before the next sample
    stats.inc_topic_put("T", 10, 1)
    again = stats.stats_item(TOPIC_PUT_NUMS, "T")
    assert again is not None and again["day"].sum == 130


def test_group_get_tps() -> None:
    clock = Clock()
    stats = BrokerStats(clock_ms=clock)
    stats.sample()
    clock.ms += 4000
    stats.inc_group_get("G", "T", 8, 100)
    assert stats.tps_group_get_nums("G", "T") == 2.0
    item = stats.stats_item(GROUP_GET_NUMS, "T@G")
    assert item is not None and item["minute"].sum == 8
    stats.on_group_deleted("G")
    assert stats.stats_item(GROUP_GET_NUMS, "T@G") is None
