"""ProcessQueue: the commit-offset rule (never skip an unconsumed message), counters, orderly use."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.consumer.process_queue import (
    PULL_MAX_IDLE_TIME_MS,
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    ProcessQueue,
)
from rocketq.protocol.message import MessageConst, MessageExt


def _msg(offset: int, body: bytes = b"xyz", props: dict[str, str] | None = None) -> MessageExt:
    msg = MessageExt(topic="T", body=body, properties=props or {})
    msg.queue_offset = offset
    return msg


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def test_seeds_example_commits_the_smallest_unconsumed_offset() -> None:
    pq = ProcessQueue()
    msgs = [_msg(i) for i in range(4)]
    pq.put_messages(msgs)
    assert pq.remove_messages([msgs[0]]) == 1
    assert pq.remove_messages([msgs[1]]) == 2
    # 3 finishes before 2: the commit offset must stay at 2, never 4
    assert pq.remove_messages([msgs[3]]) == 2
    assert pq.remove_messages([msgs[2]]) == 4
    assert pq.msg_count == 0
    assert pq.msg_size == 0


def test_remove_on_empty_queue_returns_minus_one() -> None:
    assert ProcessQueue().remove_messages([_msg(5)]) == -1


def test_counters_span_and_duplicates() -> None:
    pq = ProcessQueue()
    assert pq.put_messages([_msg(10, b"a" * 10), _msg(12, b"b" * 5)]) is True
    assert pq.put_messages([_msg(12, b"b" * 5), _msg(30, b"c")]) is False  # already consuming
    assert (pq.msg_count, pq.msg_size, pq.max_span()) == (3, 16, 20)
    assert pq.min_offset() == 10


def test_msg_acc_cnt_from_max_offset_property() -> None:
    pq = ProcessQueue()
    pq.put_messages([_msg(4, props={MessageConst.MAX_OFFSET: "10"})])
    assert pq.msg_acc_cnt == 6


def test_orderly_take_commit_rollback() -> None:
    pq = ProcessQueue()
    pq.put_messages([_msg(i) for i in range(5)])
    first = pq.take_messages(2)
    assert [m.queue_offset for m in first] == [0, 1]
    pq.rollback()
    again = pq.take_messages(3)
    assert [m.queue_offset for m in again] == [0, 1, 2]
    pq.make_message_to_consume_again(again[2:])
    assert pq.commit() == 2
    assert pq.msg_count == 3
    assert [m.queue_offset for m in pq.take_messages(10)] == [2, 3, 4]
    assert pq.commit() == 5
    assert pq.take_messages(1) == []
    # an empty take releases the consuming flag: the next put dispatches again
    assert pq.put_messages([_msg(5)]) is True


def test_lock_and_pull_expiry_use_the_injected_clock() -> None:
    clock = FakeClock()
    pq = ProcessQueue(clock_ms=clock)
    assert not pq.is_lock_expired()
    clock.now += REBALANCE_LOCK_MAX_LIVE_TIME_MS + 1
    assert pq.is_lock_expired()
    clock.now += PULL_MAX_IDLE_TIME_MS
    assert pq.is_pull_expired()


def test_expired_messages_stop_at_the_first_fresh_one() -> None:
    pq = ProcessQueue()
    now = 10_000_000
    pq.put_messages(
        [
            _msg(0, props={MessageConst.CONSUME_START_TIME: str(now - 20_000)}),
            _msg(1, props={MessageConst.CONSUME_START_TIME: str(now - 100)}),
            _msg(2, props={MessageConst.CONSUME_START_TIME: str(now - 20_000)}),
        ]
    )
    expired = pq.expired_messages(15_000, now)
    assert [m.queue_offset for m in expired] == [0]
    assert pq.remove_if_first(expired[0]) == 1
    assert pq.remove_if_first(expired[0]) == -1


@given(
    offsets=st.lists(st.integers(0, 500), min_size=1, max_size=60, unique=True),
    data=st.data(),
)
def test_commit_offset_never_passes_an_unconsumed_message(offsets: list[int], data: st.DataObject) -> None:
    pq = ProcessQueue()
    msgs = {o: _msg(o) for o in offsets}
    pq.put_messages(sorted(msgs.values(), key=lambda m: m.queue_offset))
    remaining = set(offsets)
    order = data.draw(st.permutations(offsets))
    for off in order:
        remaining.discard(off)
        commit = pq.remove_messages([msgs[off]])
        if remaining:
            assert commit == min(remaining)
        else:
            assert commit == max(offsets) + 1
        assert pq.msg_count == len(remaining)


@given(
    pulls=st.lists(st.lists(st.integers(0, 300), max_size=40), min_size=1, max_size=5),
    data=st.data(),
)
def test_batched_put_and_remove_agree_with_a_plain_model(pulls: list[list[int]], data: st.DataObject) -> None:
    """Pulls in and out of order (duplicates included), removed in random batches: the cache,
    its counters and the commit offset always match a set-based model."""
    pq = ProcessQueue()
    cached: dict[int, MessageExt] = {}
    last_put = 0
    for pull in pulls:
        msgs = [_msg(o, body=b"x" * (o % 7)) for o in pull]
        pq.put_messages(msgs)
        for m in msgs:
            if m.queue_offset not in cached:  # a new one: ProcessQueue.queueOffsetMax follows it
                cached[m.queue_offset] = m
                last_put = m.queue_offset
        assert pq.msg_count == len(cached)
        assert pq.msg_size == sum(len(m.body) for m in cached.values())
        assert pq.min_offset() == (min(cached) if cached else None)
        assert pq.max_span() == (max(cached) - min(cached) if cached else 0)
        if cached:
            batch = data.draw(st.lists(st.sampled_from(sorted(cached)), max_size=12))
            commit = pq.remove_messages([cached[o] for o in batch])
            for o in batch:
                cached.pop(o, None)
            assert commit == (min(cached) if cached else last_put + 1)
            assert pq.msg_count == len(cached)
            assert pq.min_offset() == (min(cached) if cached else None)
