"""Queue allocation strategies, byte-for-byte the Java assignment.

Mirrors ``org.apache.rocketmq.client.consumer.rebalance.*`` (reference section 7.4). Every
strategy is a pure function of (consumer group, current client id, all queues, all client
ids); ``RebalanceImpl`` sorts both lists before calling, and so does :func:`allocate`. A
client that is not in the id list gets nothing (``AbstractAllocateMessageQueueStrategy``).
"""

from __future__ import annotations

import bisect
import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "AbstractAllocateMessageQueueStrategy",
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "allocate",
]

log = logging.getLogger(__name__)


class AllocateMessageQueueStrategy(Protocol):
    """``AllocateMessageQueueStrategy``: which of ``mq_all`` the client ``current_cid`` consumes."""

    name: str

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]: ...


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """``AbstractAllocateMessageQueueStrategy.check``: False when there is nothing to allocate."""
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all or not cid_all:
        return False
    if current_cid not in cid_all:
        log.info("client %s is not in the consumer id list %s", current_cid, list(cid_all))
        return False
    return True


class AbstractAllocateMessageQueueStrategy:
    """``AbstractAllocateMessageQueueStrategy``: the shared check, then the strategy's split.

    ``allocate`` returns nothing when there is nothing to allocate or ``current_cid`` is
    not in ``cid_all``; otherwise subclasses divide ``mq_all`` knowing the client's
    ``index`` in ``cid_all``.
    """

    name = "ABSTRACT"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        return self._divide(consumer_group, current_cid, mq_all, cid_all, list(cid_all).index(current_cid))

    def _divide(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
        index: int,
    ) -> list[MessageQueue]:
        raise NotImplementedError


class AllocateMessageQueueAveragely(AbstractAllocateMessageQueueStrategy):
    """``AllocateMessageQueueAveragely`` ("AVG"): contiguous blocks, the first ``mod`` clients get one more."""

    name = "AVG"

    def _divide(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
        index: int,
    ) -> list[MessageQueue]:
        n_mq, n_cid = len(mq_all), len(cid_all)
        mod = n_mq % n_cid
        if n_mq <= n_cid:
            average = 1
        elif mod > 0 and index < mod:
            average = n_mq // n_cid + 1
        else:
            average = n_mq // n_cid
        start = index * average if (mod > 0 and index < mod) else index * average + mod
        count = min(average, n_mq - start)
        return [mq_all[(start + i) % n_mq] for i in range(max(count, 0))]


class AllocateMessageQueueAveragelyByCircle(AbstractAllocateMessageQueueStrategy):
    """``AllocateMessageQueueAveragelyByCircle`` ("AVG_BY_CIRCLE"): queue i goes to client i mod n."""

    name = "AVG_BY_CIRCLE"

    def _divide(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
        index: int,
    ) -> list[MessageQueue]:
        return [mq for i, mq in enumerate(mq_all) if i % len(cid_all) == index]


def _md5_hash(key: str) -> int:
    """``ConsistentHashRouter.MD5Hash``: the first 4 MD5 bytes as an unsigned big-endian number."""
    return int.from_bytes(hashlib.md5(key.encode(), usedforsecurity=False).digest()[:4], "big")


class AllocateMessageQueueConsistentHash(AbstractAllocateMessageQueueStrategy):
    """``AllocateMessageQueueConsistentHash`` ("CONSISTENT_HASH"): a ring of virtual nodes per client.

    Virtual node keys are ``clientId + "-" + i`` (``VirtualNode.getKey``); a queue is routed
    by hashing ``MessageQueue.toString()`` to the first node at or after it on the ring.
    """

    name = "CONSISTENT_HASH"

    def __init__(
        self,
        virtual_node_count: int = 10,
        hash_function: Callable[[str], int] = _md5_hash,
    ) -> None:
        if virtual_node_count < 0:
            raise ValueError("virtual_node_count must be >= 0")
        self.virtual_node_count = virtual_node_count
        self.hash_function = hash_function

    def _divide(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
        index: int,
    ) -> list[MessageQueue]:
        ring: dict[int, str] = {}
        for cid in cid_all:
            for i in range(self.virtual_node_count):
                # a later node with the same hash replaces the earlier one (TreeMap.put)
                ring[self.hash_function(f"{cid}-{i}")] = cid
        if not ring:
            return []
        keys = sorted(ring)
        result = []
        for mq in mq_all:
            pos = bisect.bisect_left(keys, self.hash_function(str(mq)))
            owner = ring[keys[pos % len(keys)]]
            if owner == current_cid:
                result.append(mq)
        return result


class AllocateMessageQueueByConfig:
    """``AllocateMessageQueueByConfig`` ("CONFIG"): a fixed, configured list of queues."""

    name = "CONFIG"

    def __init__(self, message_queues: Iterable[MessageQueue]) -> None:
        self.message_queues = list(message_queues)

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        return list(self.message_queues)


class AllocateMessageQueueByMachineRoom(AbstractAllocateMessageQueueStrategy):
    """``AllocateMessageQueueByMachineRoom`` ("MACHINE_ROOM"): brokers named ``<idc>@<name>``."""

    name = "MACHINE_ROOM"

    def __init__(self, consumeridcs: Iterable[str]) -> None:
        self.consumeridcs = set(consumeridcs)

    def _divide(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
        index: int,
    ) -> list[MessageQueue]:
        premq = [
            mq
            for mq in mq_all
            if len(parts := mq.broker_name.split("@")) == 2 and parts[0] in self.consumeridcs
        ]
        mod = len(premq) // len(cid_all)
        rem = len(premq) % len(cid_all)
        result = premq[index * mod : index * mod + mod]
        if rem > index:
            result.append(premq[index + mod * len(cid_all)])
        return result


class AllocateMachineRoomNearby(AbstractAllocateMessageQueueStrategy):
    """``AllocateMachineRoomNearby``: allocate per machine room with a delegate strategy.

    ``resolver(mq)`` and ``client_room(cid)`` name the machine room of a queue and of a
    client. Queues of rooms without any consumer are shared by all consumers.
    """

    name = "MACHINE_ROOM_NEARBY"

    def __init__(
        self,
        delegate: AllocateMessageQueueStrategy,
        broker_room: Callable[[MessageQueue], str],
        client_room: Callable[[str], str],
    ) -> None:
        self.delegate = delegate
        self.broker_room = broker_room
        self.client_room = client_room

    def _divide(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
        index: int,
    ) -> list[MessageQueue]:
        # Java groups into TreeMaps: the rooms without consumers are taken in name order
        mq_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.broker_room(mq)
            if not room:
                raise IllegalArgumentError(f"Machine room is null for mq {mq}")
            mq_by_room.setdefault(room, []).append(mq)
        cid_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.client_room(cid)
            if not room:
                raise IllegalArgumentError(f"Machine room is null for consumer id {cid}")
            cid_by_room.setdefault(room, []).append(cid)
        current_room = self.client_room(current_cid)
        result: list[MessageQueue] = []
        same_room = mq_by_room.pop(current_room, [])
        if same_room:
            result += self.delegate.allocate(
                consumer_group, current_cid, same_room, cid_by_room[current_room]
            )
        for room, queues in sorted(mq_by_room.items()):
            if room not in cid_by_room:
                result += self.delegate.allocate(consumer_group, current_cid, queues, cid_all)
        return result


def allocate(
    strategy: AllocateMessageQueueStrategy,
    consumer_group: str,
    current_cid: str,
    mq_all: Iterable[MessageQueue],
    cid_all: Iterable[str],
) -> list[MessageQueue]:
    """Sort the inputs as ``RebalanceImpl.rebalanceByTopic`` does, then allocate."""
    return strategy.allocate(consumer_group, current_cid, sorted(set(mq_all)), sorted(set(cid_all)))
