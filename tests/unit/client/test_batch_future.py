"""SendFuture: the auto-batch accumulator's per-message future keeps the concurrent.futures contract."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable

import pytest

from rocketq.client.api_results import SendResult, SendStatus
from rocketq.client.batch_future import (
    BatchOutcome,
    PoolCallback,
    SendFuture,
    complete_batch,
    new_batch_group,
)
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.waits import wait_until

MQ = MessageQueue("T", "broker-a", 2)


def _batch_result(n: int, first_offset: int = 100) -> SendResult:
    return SendResult(
        status=SendStatus.SEND_OK,
        msg_id=",".join(f"U{i}" for i in range(n)),
        offset_msg_id=",".join(f"O{i}" for i in range(n)),
        message_queue=MQ,
        queue_offset=first_offset,
        region_id="DefaultRegion",
    )


def _batch(n: int) -> list[SendFuture]:
    new = new_batch_group()
    return [new() for _ in range(n)]


def test_a_send_future_is_a_concurrent_future_with_its_own_result_per_message() -> None:
    futures = _batch(3)
    assert all(isinstance(f, concurrent.futures.Future) for f in futures)
    assert not futures[0].done() and not futures[0].running() and not futures[0].cancelled()
    with pytest.raises(concurrent.futures.TimeoutError):
        futures[0].result(timeout=0)
    with pytest.raises(concurrent.futures.TimeoutError):
        futures[0].exception(timeout=0.01)
    complete_batch(futures, BatchOutcome(_batch_result(3), single=False), None)
    results = [f.result(0) for f in futures]
    assert [(r.msg_id, r.offset_msg_id, r.queue_offset) for r in results] == [
        ("U0", "O0", 100),
        ("U1", "O1", 101),
        ("U2", "O2", 102),
    ]
    assert {(r.status, r.message_queue, r.region_id) for r in results} == {
        (SendStatus.SEND_OK, MQ, "DefaultRegion")
    }
    assert all(f.done() and f.exception(0) is None for f in futures)
    # built once: every call (and every thread) gets the same object
    assert futures[1].result() is results[1]
    assert "finished returned SendResult" in repr(futures[0])


def test_a_single_message_gets_the_send_result_itself() -> None:
    (fut,) = _batch(1)
    result = _batch_result(1)
    complete_batch([fut], BatchOutcome(result, single=True), None)
    assert fut.result() is result


def test_a_failed_batch_fails_every_message_and_runs_each_callback_exactly_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    futures = _batch(4)
    calls: list[int] = []
    for i, f in enumerate(futures):
        f.add_done_callback(lambda _f, i=i: calls.append(i))

    def broken(_f: concurrent.futures.Future[SendResult]) -> None:
        raise RuntimeError("callback bug")

    futures[0].add_done_callback(broken)
    error = ConnectionError("broker down")
    with caplog.at_level(logging.ERROR, logger="concurrent.futures"):
        complete_batch(futures, None, error)
    assert sorted(calls) == [0, 1, 2, 3]  # a raising callback stops no other
    assert "exception calling callback" in caplog.text
    for f in futures:
        assert f.exception(0) is error
        with pytest.raises(ConnectionError, match="broker down"):
            f.result(0)
    # a callback added after completion runs at once, on the caller's thread
    late: list[concurrent.futures.Future[SendResult]] = []
    futures[2].add_done_callback(late.append)
    assert late == [futures[2]]
    # completing again changes nothing and calls nothing again
    complete_batch(futures, BatchOutcome(_batch_result(4), single=False), None)
    assert sorted(calls) == [0, 1, 2, 3]
    assert futures[3].exception(0) is error


def test_a_cancelled_message_stays_cancelled_and_the_rest_of_its_batch_completes() -> None:
    futures = _batch(3)
    calls: list[str] = []
    futures[1].add_done_callback(lambda f: calls.append("cancelled" if f.cancelled() else "done"))
    assert futures[1].cancel()
    assert futures[1].cancelled() and futures[1].done()
    complete_batch(futures, BatchOutcome(_batch_result(3), single=False), None)
    assert calls == ["cancelled"]
    with pytest.raises(concurrent.futures.CancelledError):
        futures[1].result(0)
    # the others keep their place in the batch
    assert futures[2].result(0).msg_id == "U2"
    assert not futures[2].cancel()  # a finished future cannot be cancelled


def test_a_waiter_woken_for_another_message_of_its_batch_keeps_waiting() -> None:
    # the futures of a batch share one condition: cancelling B notifies A's waiter too,
    # which must go back to waiting rather than give up early (the base class waits once)
    a, b = _batch(2)
    outcome: list[object] = []
    waiter = threading.Thread(target=lambda: outcome.append(a.result(timeout=20)))
    waiter.start()
    cond = a._condition
    wait_until(lambda: len(cond._waiters) == 1, 10, "the waiter blocked in result()")  # type: ignore[attr-defined]
    assert b.cancel()  # notify_all on the shared condition
    wait_until(lambda: len(cond._waiters) == 1, 10, "the waiter waiting again")  # type: ignore[attr-defined]
    assert waiter.is_alive() and outcome == []
    complete_batch([a, b], BatchOutcome(_batch_result(2), single=False), None)
    waiter.join(10)
    assert [r.msg_id for r in outcome] == ["U0"]  # type: ignore[attr-defined]


def test_concurrent_futures_wait_and_as_completed_see_batch_completion() -> None:
    first, second = _batch(2), _batch(2)
    done: list[set[concurrent.futures.Future[SendResult]]] = []
    waiter = threading.Thread(
        target=lambda: done.append(
            concurrent.futures.wait(
                [*first, *second], timeout=20, return_when=concurrent.futures.FIRST_COMPLETED
            ).done
        )
    )
    waiter.start()
    wait_until(lambda: len(first[0]._waiters) == 1, 10, "wait() registered")
    complete_batch(second, None, TimeoutError("late"))
    waiter.join(10)
    assert done == [set(second)]
    complete_batch(first, BatchOutcome(_batch_result(2), single=False), None)
    assert set(concurrent.futures.as_completed([*first, *second], timeout=0)) == {*first, *second}


def test_base_class_completion_and_asyncio_wrap_future_still_work() -> None:
    f, g = _batch(2)
    result = _batch_result(1)
    f.set_result(result)
    assert f.result(0) is result
    g.set_exception(ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        g.result(0)
    (h,) = _batch(1)

    async def main() -> SendResult:
        wrapped = asyncio.wrap_future(h)
        asyncio.get_running_loop().call_soon(
            lambda: complete_batch([h], BatchOutcome(result, single=True), None)
        )
        return await wrapped

    assert asyncio.run(main()) is result


class RecordingPool:
    """Runs each submitted task at once, counting submissions."""

    def __init__(self) -> None:
        self.tasks = 0

    def submit(self, task: Callable[[], object]) -> None:
        self.tasks += 1
        task()


def test_pool_callbacks_of_a_batch_reach_their_pool_as_one_task_each_called_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = RecordingPool()
    futures = _batch(5)
    calls: list[int] = []
    for i, f in enumerate(futures):
        f.add_done_callback(PoolCallback(lambda f, i=i: calls.append(i), pool.submit))

    def broken(_f: concurrent.futures.Future[SendResult]) -> None:
        raise RuntimeError("callback bug")

    futures[0].add_done_callback(PoolCallback(broken, pool.submit))
    assert futures[4].cancel()  # its callback goes to the pool alone, at once
    assert (pool.tasks, calls) == (1, [4])
    with caplog.at_level(logging.ERROR, logger="concurrent.futures"):
        complete_batch(futures, BatchOutcome(_batch_result(5), single=False), None)
    assert pool.tasks == 2  # the four others (and the broken one) in one task
    assert sorted(calls) == [0, 1, 2, 3, 4]
    assert "exception calling callback" in caplog.text
    # added once done: submitted alone
    futures[1].add_done_callback(PoolCallback(lambda f: calls.append(10), pool.submit))
    assert (pool.tasks, calls[-1]) == (3, 10)
