"""``PullRequestHoldService`` (``longpolling.PullRequestHoldService``): which held pulls an
arrival wakes, when, and how their answers are written. Pure logic on a real event loop with
fake channels (the service only calls ``hold_writes``/``release_writes`` and the wake-up)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import cast

import pytest

from rocketq.broker.long_polling import PullRequest, PullRequestHoldService
from rocketq.protocol.frame import RemotingCommand
from rocketq.remoting.server import Channel

# fakes stand in for the compiled Channel
pytestmark = pytest.mark.pure_python


class _Channel:
    def __init__(self, log: list[str], name: str) -> None:
        self.log = log
        self.name = name
        self.closed = False

    def hold_writes(self) -> None:
        self.log.append(f"hold {self.name}")

    def release_writes(self) -> None:
        self.log.append(f"release {self.name}")


def _request(channel: _Channel, offset: int, timeout_ms: int = 10_000) -> PullRequest:
    return PullRequest(
        RemotingCommand.request(11),
        cast(Channel, channel),
        timeout_ms,
        0,
        offset,
        lambda tags_code: tags_code != 99,
    )


def _service(
    log: list[str], after_chunk: Callable[[Callable[[], None]], bool] | None = None
) -> PullRequestHoldService:
    def wakeup(pr: PullRequest) -> None:
        log.append(f"answer {cast(_Channel, pr.channel).name}@{pr.pull_from_this_offset}")

    return PullRequestHoldService(
        max_offset=lambda topic, queue_id: 0, wakeup=wakeup, after_chunk=after_chunk
    )


def test_arrivals_of_one_chunk_wake_after_it_and_answer_once_per_channel() -> None:
    async def scenario() -> list[str]:
        log: list[str] = []
        later: list[Callable[[], None]] = []

        def after_chunk(callback: Callable[[], None]) -> bool:
            later.append(callback)
            return True

        service = _service(log, after_chunk)
        await service.start()
        try:
            a, b = _Channel(log, "a"), _Channel(log, "b")
            service.suspend("T", 0, _request(a, 5))
            service.suspend("T", 1, _request(a, 7))
            service.suspend("T", 1, _request(b, 7))
            service.suspend("T", 2, _request(b, 3))
            # one chunk puts to queues 0 and 1, and a refused tag to queue 2
            service.on_message_arrived("T", 0, 6, 1, 0, {})
            service.on_message_arrived("T", 1, 8, 1, 0, {})
            service.on_message_arrived("T", 2, 4, 99, 0, {})
            assert log == [] and len(later) == 1  # nothing before the chunk's own answers
            later.pop()()
            assert service.held_count == 1  # queue 2's pull: its tag did not match
            await asyncio.sleep(0)
            return log
        finally:
            await service.stop()

    assert asyncio.run(scenario()) == [
        "hold a",
        "answer a@5",
        "answer a@7",
        "hold b",
        "answer b@7",
        "release a",
        "release b",
    ]


def test_without_a_chunk_the_wakeup_runs_on_the_next_iteration() -> None:
    async def scenario() -> list[str]:
        log: list[str] = []
        service = _service(log, lambda callback: False)
        await service.start()
        try:
            service.suspend("T", 0, _request(_Channel(log, "a"), 5))
            service.on_message_arrived("T", 0, 6, 1, 0, {})
            assert log == []
            await asyncio.sleep(0)
            return log
        finally:
            await service.stop()

    assert asyncio.run(scenario()) == ["hold a", "answer a@5", "release a"]


def test_an_arrival_from_another_thread_and_a_timeout_are_answered_too() -> None:
    async def scenario() -> list[str]:
        log: list[str] = []
        service = _service(log)
        await service.start()
        try:
            service.suspend("T", 0, _request(_Channel(log, "a"), 5))
            service.suspend("T", 1, _request(_Channel(log, "b"), 5, timeout_ms=50))
            putter = threading.Thread(target=service.on_message_arrived, args=("T", 0, 6, 1, 0, {}))
            putter.start()
            putter.join()
            for _ in range(200):
                if len(log) == 6:
                    break
                await asyncio.sleep(0.01)
            return log
        finally:
            await service.stop()

    log = asyncio.run(scenario())
    assert log == ["hold a", "answer a@5", "release a", "hold b", "answer b@5", "release b"]
