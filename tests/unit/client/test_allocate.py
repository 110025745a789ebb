"""Allocation strategies: the reference's vectors and the invariants every strategy keeps."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.consumer.allocate import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
    allocate,
)
from rocketq.errors import IllegalArgumentError
from rocketq.protocol.message_queue import MessageQueue


def _mqs(n: int, broker: str = "broker-a", topic: str = "T") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def _ids(result: list[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in result]


@pytest.mark.parametrize(
    ("n_mq", "cids", "expected"),
    [
        (8, ["c0", "c1", "c2"], [[0, 1, 2], [3, 4, 5], [6, 7]]),
        (5, ["c0", "c1"], [[0, 1, 2], [3, 4]]),
        (2, ["c0", "c1", "c2"], [[0], [1], []]),
        (4, ["c0"], [[0, 1, 2, 3]]),
        (10, ["a", "b", "c", "d"], [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]),
    ],
)
def test_averagely_reference_vectors(n_mq: int, cids: list[str], expected: list[list[int]]) -> None:
    strategy = AllocateMessageQueueAveragely()
    got = [_ids(strategy.allocate("G", cid, _mqs(n_mq), cids)) for cid in cids]
    assert got == expected


def test_by_circle() -> None:
    strategy = AllocateMessageQueueAveragelyByCircle()
    cids = ["c0", "c1", "c2"]
    got = [_ids(strategy.allocate("G", cid, _mqs(8), cids)) for cid in cids]
    assert got == [[0, 3, 6], [1, 4, 7], [2, 5]]


def test_unknown_client_gets_nothing() -> None:
    assert AllocateMessageQueueAveragely().allocate("G", "zz", _mqs(4), ["a", "b"]) == []
    assert AllocateMessageQueueConsistentHash().allocate("G", "zz", _mqs(4), ["a", "b"]) == []
    with pytest.raises(ValueError, match="currentCID"):
        AllocateMessageQueueAveragely().allocate("G", "", _mqs(4), ["a"])


def test_allocate_sorts_like_rebalance_impl() -> None:
    mqs = [*_mqs(2, "broker-b"), *_mqs(2, "broker-a")]
    got = allocate(AllocateMessageQueueAveragely(), "G", "c0", reversed(mqs), ["c1", "c0"])
    assert got == [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)]


def test_consistent_hash_matches_a_hand_built_ring() -> None:
    cids = ["10.0.0.1@1", "10.0.0.2@2", "10.0.0.3@3"]
    mqs = _mqs(16)

    def h(key: str) -> int:
        return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")

    ring = sorted((h(f"{cid}-{i}"), cid) for cid in cids for i in range(10))
    expected: dict[str, list[int]] = {cid: [] for cid in cids}
    for mq in mqs:
        key = h(f"MessageQueue [topic=T, brokerName=broker-a, queueId={mq.queue_id}]")
        owner = next((cid for hv, cid in ring if hv >= key), ring[0][1])
        expected[owner].append(mq.queue_id)
    strategy = AllocateMessageQueueConsistentHash()
    for cid in cids:
        assert _ids(strategy.allocate("G", cid, mqs, cids)) == expected[cid]


def test_by_config_and_machine_room() -> None:
    fixed = [MessageQueue("T", "b", 3)]
    assert AllocateMessageQueueByConfig(fixed).allocate("G", "c", _mqs(4), ["c"]) == fixed
    mqs = [*_mqs(3, "hz@b1"), *_mqs(3, "sh@b2")]
    strategy = AllocateMessageQueueByMachineRoom({"hz"})
    got = [strategy.allocate("G", cid, mqs, ["c0", "c1"]) for cid in ["c0", "c1"]]
    assert [[mq.queue_id for mq in r] for r in got] == [[0, 2], [1]]
    assert all(mq.broker_name == "hz@b1" for r in got for mq in r)


def test_machine_room_nearby() -> None:
    mqs = [*_mqs(2, "hz@b1"), *_mqs(2, "sh@b2"), *_mqs(2, "bj@b3")]
    strategy = AllocateMachineRoomNearby(
        AllocateMessageQueueAveragely(),
        broker_room=lambda mq: mq.broker_name.split("@")[0],
        client_room=lambda cid: cid.split("-")[0],
    )
    cids = ["hz-1", "sh-1"]
    got = {cid: strategy.allocate("G", cid, mqs, cids) for cid in cids}
    assert {mq.broker_name for mq in got["hz-1"]} == {"hz@b1", "bj@b3"}
    assert {mq.broker_name for mq in got["sh-1"]} == {"sh@b2", "bj@b3"}
    assert sorted(got["hz-1"] + got["sh-1"]) == sorted(mqs)


def test_machine_room_nearby_takes_rooms_without_consumers_in_name_order() -> None:
    # AllocateMachineRoomNearby groups queues in a TreeMap: after the consumer's own room,
    # the consumer-less rooms are visited in room-name order, whatever the queue order.
    mqs = [*_mqs(1, "zz@b9"), *_mqs(1, "hz@b1"), *_mqs(1, "bj@b3"), *_mqs(1, "cd@b4")]
    strategy = AllocateMachineRoomNearby(
        AllocateMessageQueueAveragely(),
        broker_room=lambda mq: mq.broker_name.split("@")[0],
        client_room=lambda cid: cid.split("-")[0],
    )
    got = strategy.allocate("G", "hz-1", mqs, ["hz-1"])
    assert [mq.broker_name for mq in got] == ["hz@b1", "bj@b3", "cd@b4", "zz@b9"]


def test_machine_room_nearby_refuses_an_empty_room() -> None:
    strategy = AllocateMachineRoomNearby(
        AllocateMessageQueueAveragely(), broker_room=lambda mq: "", client_room=lambda cid: "hz"
    )
    with pytest.raises(IllegalArgumentError, match="Machine room is null"):
        strategy.allocate("G", "c0", _mqs(2), ["c0"])
    strategy = AllocateMachineRoomNearby(
        AllocateMessageQueueAveragely(), broker_room=lambda mq: "hz", client_room=lambda cid: ""
    )
    with pytest.raises(IllegalArgumentError, match="Machine room is null"):
        strategy.allocate("G", "c0", _mqs(2), ["c0"])


STRATEGIES: list[AllocateMessageQueueStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
]


@given(n_mq=st.integers(1, 40), n_cid=st.integers(1, 12))
def test_every_queue_has_exactly_one_owner(n_mq: int, n_cid: int) -> None:
    mqs = _mqs(n_mq)
    cids = sorted(f"cid-{i}" for i in range(n_cid))
    for strategy in STRATEGIES:
        owned = [mq for cid in cids for mq in strategy.allocate("G", cid, mqs, cids)]
        assert sorted(owned) == mqs, strategy.name
