"""ProduceAccumulator's batching rules, with a stub in place of the producer's batch send."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.client.api_results import SendResult, SendStatus
from rocketq.client.produce_accumulator import AsyncioFutures, BatchDone, ProduceAccumulator, ThreadFutures
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue


class StubSend:
    """Records each batch and leaves its answer for the test to give."""

    def __init__(self) -> None:
        self.batches: list[tuple[list[Message], BatchDone]] = []

    def __call__(self, msgs: list[Message], done: BatchDone) -> None:
        self.batches.append((list(msgs), done))

    def fail(self, index: int, error: BaseException) -> None:
        self.batches[index][1](None, error)

    def complete(self, index: int, first_offset: int) -> None:
        msgs, done = self.batches[index]
        done(
            SendResult(
                status=SendStatus.SEND_OK,
                msg_id=",".join(f"U{first_offset + i}" for i in range(len(msgs))),
                offset_msg_id=",".join(f"O{first_offset + i}" for i in range(len(msgs))),
                message_queue=MessageQueue("T", "b", 1),
                queue_offset=first_offset,
                region_id="r",
            ),
            None,
        )


def _bodies(msgs: list[Message]) -> list[bytes]:
    return [m.body for m in msgs]


@pytest.mark.parametrize("max_in_flight", [1, 2, 3])
def test_at_most_max_in_flight_batches_and_queued_messages_leave_together(max_in_flight: int) -> None:
    send = StubSend()
    acc = ProduceAccumulator(send, ThreadFutures(), max_in_flight=max_in_flight)
    futures = [acc.add(Message("T", f"m{i}".encode())) for i in range(10)]
    # the first max_in_flight messages leave alone at once; the rest wait for a free slot
    assert [_bodies(b) for b, _ in send.batches] == [[f"m{i}".encode()] for i in range(max_in_flight)]
    send.complete(0, 100)
    queued = [f"m{i}".encode() for i in range(max_in_flight, 10)]
    assert _bodies(send.batches[-1][0]) == queued  # the queue left as one batch
    assert len(send.batches) == max_in_flight + 1
    assert futures[0].result(0).queue_offset == 100
    send.complete(len(send.batches) - 1, 200)
    for i, msg_body in enumerate(queued):
        result = futures[max_in_flight + i].result(0)
        assert (result.msg_id, result.offset_msg_id, result.queue_offset) == (
            f"U{200 + i}",
            f"O{200 + i}",
            200 + i,
        )
        assert result.region_id == "r"
        assert msg_body == f"m{max_in_flight + i}".encode()
    for i in range(1, max_in_flight):
        send.complete(i, 300 + i)
    # every slot is free again: the next message leaves at once
    acc.add(Message("T", b"again"))
    assert _bodies(send.batches[-1][0]) == [b"again"]


def test_a_failed_batch_fails_each_of_its_messages_and_frees_its_slot() -> None:
    send = StubSend()
    acc = ProduceAccumulator(send, ThreadFutures(), max_in_flight=1)
    first = acc.add(Message("T", b"a"))
    queued = [acc.add(Message("T", b"b")), acc.add(Message("T", b"c"))]
    send.fail(0, RuntimeError("broker down"))
    assert isinstance(first.exception(0), RuntimeError)
    send.fail(1, RuntimeError("still down"))
    assert [str(f.exception(0)) for f in queued] == ["still down", "still down"]
    acc.add(Message("T", b"d"))
    assert _bodies(send.batches[-1][0]) == [b"d"]


def test_max_in_flight_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_in_flight"):
        ProduceAccumulator(StubSend(), ThreadFutures(), max_in_flight=0)


def test_a_queue_over_the_limits_leaves_in_several_batches() -> None:
    send = StubSend()
    acc = ProduceAccumulator(send, ThreadFutures(), max_in_flight=1, max_messages=3, max_bytes=10_000)
    acc.add(Message("T", b"first"))
    for i in range(7):
        acc.add(Message("T", f"q{i}".encode()))
    big = acc.add(Message("T", b"x" * 9_000))
    last = acc.add(Message("T", b"l" * 1_000))
    n = 0
    while n < len(send.batches):
        send.complete(n, n * 10)
        n += 1
    # 3 by count, 3 by count, then q6 + the 9,000-byte body (each message counts its body
    # + 64: 66 + 9,064 <= 10,000); the 1,000-byte one would pass max_bytes, so it waits
    assert [_bodies(b) for b, _ in send.batches[1:]] == [
        [b"q0", b"q1", b"q2"],
        [b"q3", b"q4", b"q5"],
        [b"q6", b"x" * 9_000],
        [b"l" * 1_000],
    ]
    assert big.done() and last.done()


def test_messages_with_different_wait_values_never_share_a_batch() -> None:
    send = StubSend()
    acc = ProduceAccumulator(send, ThreadFutures(), max_in_flight=1)
    acc.add(Message("T", b"w0"))
    acc.add(Message("T", b"n0", wait_store_msg_ok=False))  # its own queue: leaves at once
    acc.add(Message("T", b"w1"))
    acc.add(Message("T", b"n1", wait_store_msg_ok=False))
    acc.add(Message("T", b"w2"))
    assert [_bodies(b) for b, _ in send.batches] == [[b"w0"], [b"n0"]]
    send.complete(0, 0)
    send.complete(1, 10)
    assert [_bodies(b) for b, _ in send.batches[2:]] == [[b"w1", b"w2"], [b"n1"]]
    assert {m.wait_store_msg_ok for m in send.batches[3][0]} == {False}


def test_a_send_that_raises_fails_its_messages_and_frees_its_slot() -> None:
    calls = 0

    def send(msgs: list[Message], done: BatchDone) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("no route")
        done(
            SendResult(
                status=SendStatus.SEND_OK,
                msg_id="U",
                offset_msg_id="O",
                message_queue=MessageQueue("T", "b", 0),
                queue_offset=7,
            ),
            None,
        )

    acc = ProduceAccumulator(send, ThreadFutures(), max_in_flight=1)
    failed = acc.add(Message("T", b"a"))
    assert isinstance(failed.exception(0), RuntimeError)
    assert acc.add(Message("T", b"b")).result(0).queue_offset == 7


def test_a_batch_answered_twice_completes_once_and_frees_one_slot(caplog: pytest.LogCaptureFixture) -> None:
    send = StubSend()
    acc = ProduceAccumulator(send, ThreadFutures(), max_in_flight=2)
    first = acc.add(Message("T", b"a"))
    acc.add(Message("T", b"b"))  # the second slot
    queued = acc.add(Message("T", b"c"))
    send.complete(0, 100)
    send.fail(0, RuntimeError("again"))  # ignored (and logged)
    assert "answered twice" in caplog.text
    assert first.result(0).queue_offset == 100
    assert _bodies(send.batches[-1][0]) == [b"c"]  # sent once, when the first answer came
    acc.add(Message("T", b"d"))  # both slots busy (b, c): d waits
    assert len(send.batches) == 3
    send.complete(2, 300)
    assert queued.result(0).queue_offset == 300


def test_asyncio_futures_complete_on_the_loop() -> None:
    async def main() -> list[int]:
        send = StubSend()
        acc = ProduceAccumulator(send, AsyncioFutures(asyncio.get_running_loop()), max_in_flight=1)
        futures = [acc.add(Message("T", f"m{i}".encode())) for i in range(3)]
        futures[2].cancel()  # its caller gave up: the message still leaves with its batch
        send.complete(0, 10)
        assert _bodies(send.batches[1][0]) == [b"m1", b"m2"]
        send.complete(1, 20)
        assert futures[2].cancelled()
        return [(await f).queue_offset for f in futures[:2]]

    assert asyncio.run(main()) == [10, 20]


def test_offer_takes_only_eligible_messages_of_a_key_added_before() -> None:
    send = StubSend()
    limit = 100
    acc = ProduceAccumulator(send, ThreadFutures(), max_in_flight=1, max_body=limit)
    # an unknown key: the producer's general path (which checks the topic) must add it first
    assert acc.offer(Message("T", b"a")) is None
    acc.add(Message("T", b"first"))
    assert acc.offer(Message("T", b"b")) is not None
    assert acc.offer(Message("T", b"")) is None  # the general path refuses it
    assert acc.offer(Message("T", b"x" * limit)) is None  # compressed or refused there
    assert acc.offer(Message("T", b"x" * (limit - 1))) is not None
    assert acc.offer(Message("T", b"d", delay_time_level=3)) is None
    assert acc.offer(Message("T", b"w", wait_store_msg_ok=False)) is None  # another key
    assert acc.offer(Message("U", b"u")) is None
    assert acc.offer([Message("T", b"list")]) is None
    send.complete(0, 0)
    assert [_bodies(b) for b, _ in send.batches] == [[b"first"], [b"b", b"x" * (limit - 1)]]
