"""Pure tests of rocketq.namesrv.route_info.RouteInfoManager (Java RouteInfoManager semantics)."""

from __future__ import annotations

import json

from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.protocol.java import hashmap_order
from rocketq.protocol.route import DataVersion, TopicConfig
from tests.conftest import load_golden_frames

CLUSTER = "DefaultCluster"


class FakeClock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def topics(*specs: tuple[str, int]) -> dict[str, TopicConfig]:
    return {
        name: TopicConfig(topic_name=name, read_queue_nums=n, write_queue_nums=n, perm=6) for name, n in specs
    }


def dv(counter: int, ts: int = 1700000000000) -> DataVersion:
    return DataVersion(timestamp=ts, counter=counter)


def register(
    rim: RouteInfoManager,
    name: str,
    addr: str,
    table: dict[str, TopicConfig] | None,
    *,
    version: DataVersion | None = None,
    broker_id: int = 0,
    cluster: str = CLUSTER,
    channel: object | None = None,
    ha: str | None = None,
) -> tuple[str | None, str | None]:
    result = rim.register_broker(
        cluster,
        addr,
        name,
        broker_id,
        ha or addr.replace("10911", "10912"),
        version or dv(1),
        table,
        [],
        channel,
    )
    return result.ha_server_addr, result.master_addr


def route_json(rim: RouteInfoManager, topic: str) -> object:
    route = rim.pickup_topic_route_data(topic)
    return None if route is None else json.loads(route.to_json(standard_json=True))


def test_register_master_serves_its_topics() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    assert register(rim, "broker-a", "10.0.0.1:10911", topics(("T", 4))) == (None, None)
    assert route_json(rim, "T") == {
        "brokerDatas": [
            {"brokerAddrs": {"0": "10.0.0.1:10911"}, "brokerName": "broker-a", "cluster": CLUSTER}
        ],
        "filterServerTable": {},
        "queueDatas": [
            {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
        ],
    }
    assert rim.pickup_topic_route_data("Nope") is None
    assert rim.live_broker_addrs() == ["10.0.0.1:10911"]


def test_topic_table_updates_only_when_data_version_changes() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    register(rim, "broker-a", "a:10911", topics(("T", 4)), version=dv(1))
    # Same DataVersion, different table: ignored (not the first registration).
    register(rim, "broker-a", "a:10911", topics(("T", 8), ("U", 2)), version=dv(1))
    assert rim.pickup_topic_route_data("U") is None
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert route.queue_datas[0].read_queue_nums == 4
    # A new counter (or a new timestamp) is a change.
    register(rim, "broker-a", "a:10911", topics(("T", 8), ("U", 2)), version=dv(2))
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert route.queue_datas[0].read_queue_nums == 8
    register(rim, "broker-a", "a:10911", topics(("V", 1)), version=dv(2, ts=5))
    assert rim.pickup_topic_route_data("V") is not None
    assert rim.is_broker_topic_config_changed("a:10911", dv(2, ts=5)) is False
    assert rim.is_broker_topic_config_changed("a:10911", dv(3, ts=5)) is True
    assert rim.is_broker_topic_config_changed("unknown:1", dv(2, ts=5)) is True
    stored = rim.query_broker_topic_config("a:10911")
    assert stored is not None
    assert (stored.timestamp, stored.counter) == (5, 2)
    assert rim.query_broker_topic_config("unknown:1") is None


def test_first_registration_of_an_address_updates_even_with_a_known_data_version() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    register(rim, "broker-a", "a:10911", topics(("T", 4)), version=dv(7))
    rim.unregister_broker(CLUSTER, "a:10911", "broker-a", 0)
    assert rim.pickup_topic_route_data("T") is None
    register(rim, "broker-a", "a:10911", topics(("T", 4)), version=dv(7))
    assert rim.pickup_topic_route_data("T") is not None


def test_only_the_master_updates_queue_data_and_slaves_learn_the_master() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    # A slave registering first: no queue data, no master known yet.
    assert register(rim, "broker-a", "s:10911", topics(("T", 4)), broker_id=1, ha="s:10912") == (None, None)
    assert rim.pickup_topic_route_data("T") is None
    assert register(rim, "broker-a", "m:10911", topics(("T", 4)), ha="m:10912") == (None, None)
    # The slave's next registration returns the master's HA and broker addresses.
    assert register(rim, "broker-a", "s:10911", topics(("T", 16)), broker_id=1, version=dv(9)) == (
        "m:10912",
        "m:10911",
    )
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert route.queue_datas[0].read_queue_nums == 4  # the slave's table never counts
    assert route.broker_datas[0].broker_addrs == {0: "m:10911", 1: "s:10911"}


def test_an_address_lives_under_one_broker_id_only() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    register(rim, "broker-a", "x:10911", topics(("T", 4)), broker_id=1)
    register(rim, "broker-a", "x:10911", topics(("T", 4)), broker_id=0)  # slave promoted
    info = rim.get_all_cluster_info()
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "x:10911"}


def test_two_brokers_serve_a_topic_and_expiry_drops_one() -> None:
    clock = FakeClock()
    rim = RouteInfoManager(clock_ms=clock, broker_channel_expired_time_ms=120_000)
    register(rim, "broker-a", "a:10911", topics(("T", 4), ("A", 1)))
    clock.now += 60_000
    register(rim, "broker-b", "b:10911", topics(("T", 2)))
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert sorted(q.broker_name or "" for q in route.queue_datas) == ["broker-a", "broker-b"]
    assert sorted(b.broker_name or "" for b in route.broker_datas) == ["broker-a", "broker-b"]

    clock.now += 60_000  # a: exactly 120 s old -> not yet expired (strictly older only)
    assert rim.scan_not_active_broker() == []
    clock.now += 1
    expired = rim.scan_not_active_broker()
    assert [addr for addr, _ in expired] == ["a:10911"]
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert [q.broker_name for q in route.queue_datas] == ["broker-b"]
    assert [b.broker_name for b in route.broker_datas] == ["broker-b"]
    assert rim.pickup_topic_route_data("A") is None  # its only broker is gone
    assert rim.get_all_cluster_info().cluster_addr_table == {CLUSTER: ["broker-b"]}

    clock.now += 200_000
    assert [addr for addr, _ in rim.scan_not_active_broker()] == ["b:10911"]
    assert rim.pickup_topic_route_data("T") is None
    info = rim.get_all_cluster_info()
    assert info.broker_addr_table == {}
    assert info.cluster_addr_table == {}


def test_a_registration_or_an_unchanged_data_version_query_keeps_a_broker_alive() -> None:
    clock = FakeClock()
    rim = RouteInfoManager(clock_ms=clock)
    register(rim, "broker-a", "a:10911", topics(("T", 4)))
    clock.now += 100_000
    rim.update_broker_info_update_timestamp("a:10911")
    clock.now += 100_000
    assert rim.scan_not_active_broker() == []
    register(rim, "broker-a", "a:10911", topics(("T", 4)))
    clock.now += 119_000
    assert rim.scan_not_active_broker() == []
    live = rim.broker_live_info("a:10911")
    assert live is not None
    assert live.ha_server_addr == "a:10912"


def test_channel_destroy_removes_the_broker_registered_over_it() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    chan_a, chan_b = object(), object()
    register(rim, "broker-a", "a:10911", topics(("T", 4)), channel=chan_a)
    register(rim, "broker-b", "b:10911", topics(("T", 4)), channel=chan_b, cluster="Other")
    rim.on_channel_destroy("127.0.0.1:55555", object())  # an unrelated client connection
    assert sorted(rim.live_broker_addrs()) == ["a:10911", "b:10911"]
    rim.on_channel_destroy("127.0.0.1:55556", chan_a)  # found by channel, not by address
    assert rim.live_broker_addrs() == ["b:10911"]
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert [b.broker_name for b in route.broker_datas] == ["broker-b"]
    assert list(rim.get_all_cluster_info().cluster_addr_table) == ["Other"]
    # Unknown channel: Java falls back to the remote address as the broker address.
    rim.on_channel_destroy("b:10911", None)
    assert rim.live_broker_addrs() == []
    assert rim.pickup_topic_route_data("T") is None


def test_unregister_keeps_the_name_while_another_address_remains() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    register(rim, "broker-a", "m:10911", topics(("T", 4)))
    register(rim, "broker-a", "s:10911", topics(("T", 4)), broker_id=1)
    rim.unregister_broker(CLUSTER, "m:10911", "broker-a", 0)
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {1: "s:10911"}
    rim.unregister_broker(CLUSTER, "s:10911", "broker-a", 1)
    assert rim.pickup_topic_route_data("T") is None
    assert rim.get_all_cluster_info().cluster_addr_table == {}


def test_several_clusters() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    register(
        rim, "a1", "a1:1", topics(("Shared", 4), ("OnlyA", 2), ("ClusterA", 1), ("a1", 1)), cluster="ClusterA"
    )
    register(rim, "a2", "a2:1", topics(("Shared", 4)), cluster="ClusterA")
    register(rim, "b1", "b1:1", topics(("Shared", 8), ("OnlyB", 2)), cluster="ClusterB")
    info = rim.get_all_cluster_info()
    assert {k: sorted(v) for k, v in info.cluster_addr_table.items()} == {
        "ClusterA": ["a1", "a2"],
        "ClusterB": ["b1"],
    }
    assert {k: v.cluster for k, v in info.broker_addr_table.items()} == {
        "a1": "ClusterA",
        "a2": "ClusterA",
        "b1": "ClusterB",
    }
    assert sorted(rim.get_topics_by_cluster("ClusterA").topic_list) == ["ClusterA", "OnlyA", "Shared", "a1"]
    assert sorted(rim.get_topics_by_cluster("ClusterB").topic_list) == ["OnlyB", "Shared"]
    assert rim.get_topics_by_cluster("NoSuchCluster").topic_list == []
    assert sorted(rim.get_all_topic_list().topic_list) == ["ClusterA", "OnlyA", "OnlyB", "Shared", "a1"]
    route = rim.pickup_topic_route_data("Shared")
    assert route is not None
    assert len(route.queue_datas) == 3
    # System topics: cluster names plus their broker names, and one broker address.
    system = rim.get_system_topic_list()
    assert sorted(system.topic_list) == ["ClusterA", "ClusterB", "a1", "a2", "b1"]
    assert system.broker_addr in {"a1:1", "a2:1", "b1:1"}

    rim.delete_topic("Shared", "ClusterA")
    route = rim.pickup_topic_route_data("Shared")
    assert route is not None
    assert [q.broker_name for q in route.queue_datas] == ["b1"]
    rim.delete_topic("Shared", "NoSuchCluster")
    assert rim.pickup_topic_route_data("Shared") is not None
    rim.delete_topic("OnlyB", "ClusterB")  # last broker -> the topic goes
    assert rim.pickup_topic_route_data("OnlyB") is None
    rim.delete_topic("Shared")
    assert rim.pickup_topic_route_data("Shared") is None


def test_wipe_and_add_write_perm() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    table = topics(("T", 4), ("U", 4))
    table["U"].perm = 7  # PERM_INHERIT | READ | WRITE
    register(rim, "broker-a", "a:1", table)
    register(rim, "broker-b", "b:1", topics(("T", 4)))
    assert rim.wipe_write_perm_of_broker("broker-a") == 2
    perms = {
        t: {q.broker_name: q.perm for q in r.queue_datas}
        for t in ("T", "U")
        if (r := rim.pickup_topic_route_data(t)) is not None
    }
    assert perms == {"T": {"broker-a": 4, "broker-b": 6}, "U": {"broker-a": 5}}
    assert rim.wipe_write_perm_of_broker("nobody") == 0
    assert rim.add_write_perm_of_broker("broker-a") == 2
    route = rim.pickup_topic_route_data("U")
    assert route is not None
    assert route.queue_datas[0].perm == 6  # ADD sets READ|WRITE outright, INHERIT is lost


def test_unit_topic_lists() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    table = topics(("Plain", 1), ("Unit", 1), ("UnitSub", 1), ("Both", 1))
    table["Unit"].topic_sys_flag = 1
    table["UnitSub"].topic_sys_flag = 2
    table["Both"].topic_sys_flag = 3
    register(rim, "broker-a", "a:1", table)
    assert sorted(rim.get_unit_topics().topic_list) == ["Both", "Unit"]
    assert sorted(rim.get_has_unit_sub_topic_list().topic_list) == ["Both", "UnitSub"]
    assert rim.get_has_unit_sub_un_unit_topic_list().topic_list == ["UnitSub"]


def test_pickup_returns_copies() -> None:
    rim = RouteInfoManager(clock_ms=FakeClock())
    register(rim, "broker-a", "a:1", topics(("T", 4)))
    route = rim.pickup_topic_route_data("T")
    assert route is not None
    route.queue_datas[0].perm = 0
    route.broker_datas[0].broker_addrs[5] = "x"
    again = rim.pickup_topic_route_data("T")
    assert again is not None
    assert again.queue_datas[0].perm == 6
    assert again.broker_datas[0].broker_addrs == {0: "a:1"}


def test_java_hash_order_reproduces_the_golden_topic_list() -> None:
    # admin.jsonl: GET_ALL_TOPIC_LIST_FROM_NAMESERVER answered by a real 4.9.7 name server.
    # TopicList.topicList is a HashSet filled from topicQueueTable (HashMap(1024)).
    frame = next(
        f for f in load_golden_frames("admin.jsonl") if f.is_response and f.body and b'"topicList"' in f.body
    )
    assert frame.body is not None
    golden = json.loads(frame.body)["topicList"]
    for start in (golden, sorted(golden), sorted(golden, reverse=True)):
        assert hashmap_order(hashmap_order(start, 1024)) == golden
    assert hashmap_order(["a"], 1000) == ["a"]


def test_a_topic_config_without_its_name_is_filed_under_its_key() -> None:
    # REGISTER_BROKER bodies come from the network: a config lacking topicName must not
    # trip an assert (issue #21); it is registered under its map key, a nameless one not at all
    rim = RouteInfoManager(clock_ms=lambda: 0)
    table = {"Named": TopicConfig(read_queue_nums=2, write_queue_nums=2), "": TopicConfig()}
    rim.register_broker(CLUSTER, "a:10911", "broker-a", 0, "a:10912", dv(1), table, [], None)
    route = rim.pickup_topic_route_data("Named")
    assert route is not None and route.queue_datas[0].read_queue_nums == 2
    assert rim.pickup_topic_route_data("") is None
