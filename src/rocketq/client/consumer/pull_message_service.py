"""``PullMessageService``: the one thread that issues every pull of a push consumer.

Mirrors ``org.apache.rocketmq.client.impl.consumer.PullMessageService`` and ``PullRequest``.
PullRequests circulate: the thread takes a due request and hands it to the consumer, which
sends an *asynchronous* pull; the pull's callback puts the request back (at once, or after
a back-off) with its next offset. A request is therefore never in two places at once, and
one thread drives any number of queues without blocking on the network.

Delayed re-queueing (flow control 50 ms, suspended consumer 1 s, errors 1-3 s, orderly
lock retries) uses one heap ordered by due time; tasks scheduled with
:meth:`PullMessageService.execute_task_later` run on the same thread, so everything the
pull path does is serialized without extra locks.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.protocol.message_queue import MessageQueue
from rocketq.remoting.service_thread import ServiceThread

__all__ = ["PullMessageService", "PullRequest", "ScheduledExecutor"]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class PullRequest:
    """One queue's pull cursor (``PullRequest``): where to pull next and where to put it."""

    consumer_group: str
    message_queue: MessageQueue
    process_queue: ProcessQueue
    next_offset: int
    #: orderly: the queue was locked when the request was built (re-read the offset once)
    previously_locked: bool = False
    #: free slot for the consumer (e.g. the subscription used for the last pull)
    extra: dict[str, object] = field(default_factory=dict, repr=False)


class ScheduledExecutor(ServiceThread):
    """One named thread running callables at their due time (a ``ScheduledExecutorService``).

    Tasks run one at a time in due order; an exception in a task is logged and the thread
    goes on. ``shutdown()`` drops pending tasks and joins the thread promptly.
    """

    def __init__(self, name: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(name)
        self._clock = clock
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()

    def execute_task_later(self, task: Callable[[], None], delay_ms: int) -> None:
        """Run ``task`` on this thread after ``delay_ms`` (``executeTaskLater``)."""
        if self.stopped:
            return
        with self._cond:
            heapq.heappush(self._heap, (self._clock() + delay_ms / 1000.0, next(self._seq), task))
            self._cond.notify()

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._heap)

    def wakeup(self) -> None:
        super().wakeup()
        with self._cond:
            self._cond.notify_all()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        super().shutdown(timeout_s)
        with self._cond:
            self._heap.clear()

    def _take(self) -> Callable[[], None] | None:
        with self._cond:
            while not self.stopped:
                if self._heap:
                    due = self._heap[0][0] - self._clock()
                    if due <= 0:
                        return heapq.heappop(self._heap)[2]
                    self._cond.wait(min(due, 1.0))
                else:
                    self._cond.wait(1.0)
            return None

    def run(self) -> None:
        while not self.stopped:
            task = self._take()
            if task is None:
                break
            try:
                task()
            except Exception:
                log.exception("%s: a scheduled task failed", self.name)


class PullMessageService(ScheduledExecutor):
    """The thread that takes due PullRequests and hands them to the consumer's pull."""

    def __init__(
        self,
        pull: Callable[[PullRequest], None],
        *,
        name: str = "PullMessageService",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name, clock=clock)
        self._pull = pull

    def execute_pull_request_immediately(self, request: PullRequest) -> None:
        self.execute_task_later(lambda: self._pull(request), 0)

    def execute_pull_request_later(self, request: PullRequest, delay_ms: int) -> None:
        self.execute_task_later(lambda: self._pull(request), delay_ms)
