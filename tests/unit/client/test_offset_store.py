"""Offset stores: the local file (a temp dir) and the broker store against a fake host."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.api_results import FindBrokerResult
from rocketq.client.consumer.offset_store import (
    LocalFileOffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from rocketq.client.consumer.rebalance import compute_pull_from_where
from rocketq.errors import BrokerError, ClientError, ConnectError
from rocketq.protocol import fastjson
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message_queue import MessageQueue

MQ0 = MessageQueue("T", "broker-a", 0)
MQ1 = MessageQueue("T", "broker-a", 1)
OTHER = MessageQueue("U", "broker-b", 0)


class FakeHost:
    """The OffsetBrokerHost of a RemoteBrokerOffsetStore, recording every call."""

    def __init__(self) -> None:
        self.brokers = {"broker-a": "10.0.0.1:10911"}
        self.stored: dict[MessageQueue, int] = {}
        self.updates: list[tuple[str, MessageQueue, int, bool]] = []
        self.route_updates: list[str] = []
        self.query_error: Exception | None = None

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None:
        addr = self.brokers.get(broker_name)
        return FindBrokerResult(addr, False) if addr else None

    def update_topic_route_info_from_name_server(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool:
        self.route_updates.append(topic)
        return False

    def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        if self.query_error is not None:
            raise self.query_error
        if mq not in self.stored:
            raise BrokerError(22, "not found", addr=addr)
        return self.stored[mq]

    def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> None:
        self.updates.append((addr, mq, offset, oneway))
        self.stored[mq] = offset


# ---------------------------------------------------------------------- remote
def test_remote_store_reads_memory_then_broker() -> None:
    host = FakeHost()
    store = RemoteBrokerOffsetStore(host, "G")
    assert store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == -1
    assert store.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -1  # broker: 22
    host.stored[MQ0] = 7
    assert store.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 7
    assert store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 7  # cached
    host.query_error = ConnectError("down")
    assert store.read_offset(MQ1, ReadOffsetType.READ_FROM_STORE) == -2


def test_remote_store_increase_only_and_persist_all() -> None:
    host = FakeHost()
    store = RemoteBrokerOffsetStore(host, "G")
    store.update_offset(MQ0, 10, False)
    store.update_offset(MQ0, 5, True)
    assert store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 10
    store.update_offset(MQ0, 5, False)
    assert store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 5
    store.update_offset(MQ1, 3, False)
    store.persist_all([MQ0])
    # oneway to the master, and the unassigned queue is forgotten (RemoteBrokerOffsetStore.persistAll)
    assert host.updates == [("10.0.0.1:10911", MQ0, 5, True)]
    assert store.clone_offset_table() == {MQ0: 5}


def test_remote_store_unknown_broker() -> None:
    host = FakeHost()
    store = RemoteBrokerOffsetStore(host, "G")
    with pytest.raises(ClientError, match="not exist"):
        store.update_consume_offset_to_broker(OTHER, 1, False)
    assert host.route_updates == ["U"]
    store.update_offset(OTHER, 1, False)
    store.persist(OTHER)  # logged, not raised
    assert host.updates == []


# ---------------------------------------------------------------------- local file
def test_local_store_round_trip(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("1.2.3.4@DEFAULT", "G", store_dir=tmp_path)
    store.load()  # nothing yet
    store.update_offset(MQ0, 42, False)
    store.update_offset(MQ1, 7, False)
    store.update_offset(OTHER, 9, False)
    store.persist_all([MQ0, MQ1])
    path = tmp_path / "1.2.3.4@DEFAULT" / "G" / "offsets.json"
    assert store.path == path
    text = path.read_text()
    # Java OffsetSerializeWrapper pretty JSON: MessageQueue objects as keys
    assert text.startswith('{\n\t"offsetTable":{')
    assert '\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n\t\t\t"topic":"T"\n\t\t}:42' in text
    assert "broker-b" not in text
    fresh = LocalFileOffsetStore("1.2.3.4@DEFAULT", "G", store_dir=tmp_path)
    fresh.load()
    assert fresh.clone_offset_table() == {MQ0: 42, MQ1: 7}
    assert fresh.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 42
    assert fresh.read_offset(OTHER, ReadOffsetType.READ_FROM_STORE) == -1


def test_local_store_falls_back_to_backup(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("cid", "G", store_dir=tmp_path)
    store.update_offset(MQ0, 1, False)
    store.persist_all([MQ0])
    store.update_offset(MQ0, 2, False)
    store.persist_all([MQ0])  # offsets.json.bak now holds 1
    store.path.write_text("{garbage")
    fresh = LocalFileOffsetStore("cid", "G", store_dir=tmp_path)
    fresh.load()
    assert fresh.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 1
    store.path.with_name("offsets.json.bak").write_text("{also garbage")
    with pytest.raises(ClientError, match="cannot load"):
        LocalFileOffsetStore("cid", "G", store_dir=tmp_path).load()


def test_local_store_never_talks_to_brokers(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("cid", "G", store_dir=tmp_path)
    store.update_consume_offset_to_broker(MQ0, 5, True)
    store.persist_all([])
    assert not store.path.exists()


@settings(max_examples=30, deadline=None)
@given(
    st.dictionaries(
        st.builds(
            MessageQueue,
            st.text(alphabet="abcXYZ_%-|0", min_size=1, max_size=12),
            st.text(alphabet="ab-c@1", min_size=1, max_size=8),
            st.integers(0, 1000),
        ),
        st.integers(0, 2**62),
        max_size=8,
    )
)
def test_local_store_format_round_trip(table: dict[MessageQueue, int]) -> None:
    text = LocalFileOffsetStore.encode(table)
    assert LocalFileOffsetStore.decode(text) == table
    assert isinstance(fastjson.loads(text), dict)


# ---------------------------------------------------------------------- start offsets
class FakeAdmin:
    def __init__(self) -> None:
        self.searched: list[int] = []

    def max_offset(self, mq: MessageQueue) -> int:
        return 100

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        self.searched.append(timestamp_ms)
        return 50


@pytest.mark.parametrize(
    ("where", "topic", "expected"),
    [
        (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, "T", 100),
        (ConsumeFromWhere.CONSUME_FROM_MAX_OFFSET, "T", 100),
        (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, "%RETRY%G", 0),
        (ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, "T", 0),
        (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, "T", 50),
        (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, "%RETRY%G", 100),
    ],
)
def test_compute_pull_from_where_without_stored_offset(
    where: ConsumeFromWhere, topic: str, expected: int
) -> None:
    store = RemoteBrokerOffsetStore(FakeHost(), "G")
    mq = MessageQueue(topic, "broker-a", 0)
    assert compute_pull_from_where(store, FakeAdmin(), mq, where, "20240102030405") == expected


def test_compute_pull_from_where_stored_offset_wins_and_errors_skip() -> None:
    host = FakeHost()
    host.stored[MQ0] = 3
    store = RemoteBrokerOffsetStore(host, "G")
    assert (
        compute_pull_from_where(store, FakeAdmin(), MQ0, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, None)
        == 3
    )
    host.query_error = ConnectError("down")  # -2: cannot tell -> skip the queue for now
    assert (
        compute_pull_from_where(store, FakeAdmin(), MQ1, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, None)
        == -1
    )
