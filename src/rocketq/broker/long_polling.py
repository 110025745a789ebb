"""Long polling: held PULL_MESSAGE requests, answered when a message arrives or at their timeout.

Mirrors ``org.apache.rocketmq.broker.longpolling.PullRequestHoldService`` and
``NotifyMessageArrivingListener``. Invariants:

* A held request is answered exactly once: on the first arrival of a *matching* message
  after its offset, at its suspend timeout, or never if its channel closed or the broker
  stopped (Java never answers those either).
* Everything runs on the broker's event loop. The store reports arrivals from whatever
  thread appended; :meth:`PullRequestHoldService.on_message_arrived` only hands them to the
  loop (``call_soon`` from the loop's own thread, ``call_soon_threadsafe`` from any other)
  and never touches the store under the append lock.
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
    ) -> None:
        self._max_offset = max_offset
        self._wakeup = wakeup
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
        if threading.get_ident() == self._loop_ident:
            # a send on the loop itself: no self-pipe wakeup needed, and the send's own
            # response leaves first (this runs in the next iteration)
            loop.call_soon(self.notify_message_arriving, topic, queue_id, max_offset, tags_code, properties)
        else:
            loop.call_soon_threadsafe(
                self.notify_message_arriving, topic, queue_id, max_offset, tags_code, properties
            )

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
        self._fire(pr)

    def _fire(self, pr: PullRequest) -> None:
        if pr.done:
            return
        pr.done = True
        if pr.timer is not None:
            pr.timer.cancel()
            pr.timer = None
        if pr.channel.closed:
            return
        try:
            self._wakeup(pr)
        except Exception:
            log.exception("executing a woken pull request failed")

    async def _scan_forever(self) -> None:
        while True:
            await asyncio.sleep(self._scan_interval_s)
            for topic, queue_id in list(self._table):
                try:
                    self.notify_message_arriving(topic, queue_id, self._max_offset(topic, queue_id))
                except Exception:
                    log.exception("long-polling scan of %s@%d failed", topic, queue_id)
