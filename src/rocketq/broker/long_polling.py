"""Long polling: held PULL_MESSAGE requests, answered when a message arrives or at their timeout.

Mirrors ``org.apache.rocketmq.broker.longpolling.PullRequestHoldService`` and
``NotifyMessageArrivingListener``. Invariants:

* A held request is answered exactly once: on the first arrival of a *matching* message
  after its offset, at its suspend timeout, or never if its channel closed or the broker
  stopped (Java never answers those either).
* Everything runs on the broker's event loop. The store reports arrivals from whatever
  thread appended; :meth:`PullRequestHoldService.on_message_arrived` only hands them to the
  loop (``call_soon_threadsafe`` from another thread) and never touches the store under the
  append lock.
* A put on the loop (a send request) wakes its held pulls as soon as the chunk of requests
  it came in has written its answers (``RemotingServer.call_after_chunk``): the sends' acks
  leave first, then, in the same loop iteration, the woken pulls are re-run
  (``PullMessageProcessor.executeRequestWhenWakeup``) and answered with what the puts made
  available. A put outside a request chunk wakes them on the next iteration.
* The answers of one batch of wake-ups (one chunk's arrivals, one timeout, one scan) are
  written together at its end, one write per channel, with no further loop iteration.
* Improvement over Java, same observable contract: each request gets its own timer at its
  deadline instead of waiting for the 5 s scan, so a held pull lasts its suspend time, not
  up to 5 s more. The periodic scan (every 5 s, 1 s with short polling) is kept as a safety
  net that re-checks the queue's max offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.remoting.server import Channel

__all__ = ["PullRequest", "PullRequestHoldService"]


log = logging.getLogger(__name__)

#: ``PullRequestHoldService`` scan period with long polling on / off.
_SCAN_INTERVAL_LONG_S = 5.0
_SCAN_INTERVAL_SHORT_S = 1.0


@dataclass(eq=False)
class PullRequest:
    """One suspended pull (``longpolling.PullRequest``)."""

    request: RemotingCommand
    channel: Channel
    timeout_ms: int
    suspend_timestamp_ms: int
    pull_from_this_offset: int
    #: tagsCode -> matched; the same filter the pull used on the consume queue
    matches: Callable[[int], bool]
    #: properties -> matched: the SQL92 check of an arriving message (None: tags only;
    #: ``isMatchedByCommitLog(null, properties)``)
    matches_properties: Callable[[Mapping[str, str]], bool] | None = None
    #: the request's header as the first pass decoded it (the request does not change)
    header: PullMessageRequestHeader | None = field(default=None, repr=False)
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    done: bool = False


class PullRequestHoldService:
    """Holds suspended pulls per ``topic@queueId`` and wakes them."""

    def __init__(
        self,
        *,
        max_offset: Callable[[str, int], int],
        wakeup: Callable[[PullRequest], None],
        long_polling_enable: bool = True,
        clock_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
        after_chunk: Callable[[Callable[[], None]], bool] | None = None,
    ) -> None:
        self._max_offset = max_offset
        self._wakeup = wakeup
        self._after_chunk = after_chunk
        #: arrivals reported on the loop, not yet matched against the held requests
        self._arrivals: list[tuple[str, int, int, int, dict[str, str]]] = []
        #: while a batch of wake-ups runs: the channels whose answers leave at its end
        self._answering: dict[Channel, None] | None = None
        self._clock_ms = clock_ms
        self._scan_interval_s = _SCAN_INTERVAL_LONG_S if long_polling_enable else _SCAN_INTERVAL_SHORT_S
        self._table: dict[tuple[str, int], list[PullRequest]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_ident = 0  # the loop's thread
        self._scan_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_ident = threading.get_ident()
        self._scan_task = self._loop.create_task(self._scan_forever(), name="pull-request-hold")

    async def stop(self) -> None:
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
            self._scan_task = None
        for requests in self._table.values():
            for pr in requests:
                pr.done = True
                if pr.timer is not None:
                    pr.timer.cancel()
        self._table.clear()

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self._table.values())

    # ------------------------------------------------------------------ suspend / wake
    def suspend(self, topic: str, queue_id: int, pr: PullRequest) -> None:
        """Hold ``pr`` (called on the loop by the pull processor)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("PullRequestHoldService is not started")
        self._table.setdefault((topic, queue_id), []).append(pr)
        pr.timer = loop.call_later(pr.timeout_ms / 1000.0, self._expire, topic, queue_id, pr)

    def on_message_arrived(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tags_code: int,
        store_timestamp: int,
        properties: dict[str, str],
    ) -> None:
        """The store's arrival listener; may be called from any thread."""
        loop = self._loop
        if loop is None or (topic, queue_id) not in self._table:
            return
        if threading.get_ident() != self._loop_ident:
            loop.call_soon_threadsafe(self._wake_one, topic, queue_id, max_offset, tags_code, properties)
            return
        # A put on the loop (a send request): the held pulls are re-run once the request
        # chunk that put has written its own answers (the send's ack leaves first), in the
        # same loop iteration; outside a chunk, in the next iteration.
        arrivals = self._arrivals
        arrivals.append((topic, queue_id, max_offset, tags_code, properties))
        if len(arrivals) == 1:
            after = self._after_chunk
            if after is None or not after(self._wake_arrivals):
                loop.call_soon(self._wake_arrivals)

    def _wake_arrivals(self) -> None:
        """Wake the held requests the arrivals reported on the loop match, their answers
        written together at the end."""
        arrivals = self._arrivals
        if not arrivals:
            return
        self._arrivals = []
        answering = self._begin_answers()
        try:
            for topic, queue_id, max_offset, tags_code, properties in arrivals:
                self.notify_message_arriving(topic, queue_id, max_offset, tags_code, properties)
        finally:
            self._end_answers(answering)

    def _wake_one(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int, properties: dict[str, str]
    ) -> None:
        """An arrival reported from another thread (on the loop)."""
        answering = self._begin_answers()
        try:
            self.notify_message_arriving(topic, queue_id, max_offset, tags_code, properties)
        finally:
            self._end_answers(answering)

    def _begin_answers(self) -> dict[Channel, None] | None:
        """Start a batch of wake-ups: the answers written during it are held per channel and
        sent at its end, one write per channel, without a further loop iteration. Returns
        the batch to end, or None inside another batch (that one sends them)."""
        if self._answering is not None:
            return None
        answering: dict[Channel, None] = {}
        self._answering = answering
        return answering

    def _end_answers(self, answering: dict[Channel, None] | None) -> None:
        if answering is None:
            return
        self._answering = None
        for channel in answering:
            channel.release_writes()

    def notify_message_arriving(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tags_code: int | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        """Wake the held requests of one queue that now have a (matching) message to read."""
        key = (topic, queue_id)
        requests = self._table.get(key)
        if not requests:
            return
        keep: list[PullRequest] = []
        for pr in requests:
            if pr.done:
                continue
            newest = max_offset
            if newest <= pr.pull_from_this_offset:
                newest = self._max_offset(topic, queue_id)
            if (
                newest > pr.pull_from_this_offset
                and (tags_code is None or pr.matches(tags_code))
                and (properties is None or pr.matches_properties is None or pr.matches_properties(properties))
            ):
                self._fire(pr)
                continue
            keep.append(pr)
        if keep:
            self._table[key] = keep
        else:
            self._table.pop(key, None)

    def _expire(self, topic: str, queue_id: int, pr: PullRequest) -> None:
        pr.timer = None
        requests = self._table.get((topic, queue_id))
        if requests is not None and pr in requests:
            requests.remove(pr)
            if not requests:
                del self._table[(topic, queue_id)]
        answering = self._begin_answers()
        try:
            self._fire(pr)
        finally:
            self._end_answers(answering)

    def _fire(self, pr: PullRequest) -> None:
        if pr.done:
            return
        pr.done = True
        if pr.timer is not None:
            pr.timer.cancel()
            pr.timer = None
        channel = pr.channel
        if channel.closed:
            return
        answering = self._answering
        if answering is not None and channel not in answering:
            channel.hold_writes()
            answering[channel] = None
        try:
            self._wakeup(pr)
        except Exception:
            log.exception("executing a woken pull request failed")

    async def _scan_forever(self) -> None:
        while True:
            await asyncio.sleep(self._scan_interval_s)
            answering = self._begin_answers()
            try:
                for topic, queue_id in list(self._table):
                    try:
                        self.notify_message_arriving(topic, queue_id, self._max_offset(topic, queue_id))
                    except Exception:
                        log.exception("long-polling scan of %s@%d failed", topic, queue_id)
            finally:
                self._end_answers(answering)
