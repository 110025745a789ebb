"""RebalanceLockManager: grant, renew, refuse, expire and unlock with an injected clock."""

from __future__ import annotations

from rocketq.broker.locks import REBALANCE_LOCK_MAX_LIVE_TIME_MS, RebalanceLockManager
from rocketq.protocol.message_queue import MessageQueue

Q = [MessageQueue("T", "broker-a", i) for i in range(4)]


class Clock:
    def __init__(self) -> None:
        self.now = 5_000

    def __call__(self) -> int:
        return self.now


def test_free_queues_are_granted_and_held_ones_refused() -> None:
    locks = RebalanceLockManager(clock_ms=Clock())
    assert locks.try_lock_batch("G", Q[:2], "c1") == set(Q[:2])
    assert locks.try_lock_batch("G", Q, "c2") == set(Q[2:])
    assert locks.holder("G", Q[0]) == "c1"
    # another group is independent
    assert locks.try_lock_batch("G2", Q[:1], "c2") == {Q[0]}


def test_renewal_keeps_the_lease_and_expiry_transfers_it() -> None:
    clock = Clock()
    locks = RebalanceLockManager(clock_ms=clock)
    locks.try_lock_batch("G", [Q[0]], "c1")
    clock.now += REBALANCE_LOCK_MAX_LIVE_TIME_MS - 1
    assert locks.try_lock_batch("G", [Q[0]], "c1") == {Q[0]}  # renewed
    clock.now += REBALANCE_LOCK_MAX_LIVE_TIME_MS
    assert locks.try_lock_batch("G", [Q[0]], "c2") == set()  # exactly at the limit: still c1's
    assert locks.is_locked("G", Q[0], "c1")
    clock.now += 1
    assert not locks.is_locked("G", Q[0], "c1")
    assert locks.holder("G", Q[0]) is None
    assert locks.try_lock_batch("G", [Q[0]], "c2") == {Q[0]}
    assert locks.holder("G", Q[0]) == "c2"


def test_unlock_releases_only_the_requesters_queues() -> None:
    locks = RebalanceLockManager(clock_ms=Clock())
    locks.try_lock_batch("G", Q[:2], "c1")
    locks.try_lock_batch("G", Q[2:], "c2")
    locks.unlock_batch("G", Q, "c1")
    assert locks.holder("G", Q[0]) is None
    assert locks.holder("G", Q[2]) == "c2"
    locks.unlock_batch("nope", Q, "c1")
    assert locks.try_lock_batch("G", Q, "c3") == set(Q[:2])
