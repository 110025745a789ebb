"""``PullMessageService``: the one thread that issues every pull of a push consumer.

Mirrors ``org.apache.rocketmq.client.impl.consumer.PullMessageService`` and ``PullRequest``.
PullRequests circulate: the thread takes a due request and hands it to the consumer, which
sends an *asynchronous* pull; the pull's callback puts the request back (at once, or after
a back-off) with its next offset. A request is therefore never in two places at once, and
one thread drives any number of queues without blocking on the network.

Delayed re-queueing (flow control 50 ms, suspended consumer 1 s, errors 1-3 s, orderly
lock retries) uses the one scheduler (:class:`rocketq.common.scheduler.ScheduledExecutor`,
one thread); tasks scheduled with :meth:`PullMessageService.execute_task_later` run on the
same thread. The push consumer of a concurrent listener may also run a request's next pull
on the consume thread that handled its previous answer (``PushConsumer._on_pull_done``):
requests of *different* queues can then be pulled on different threads at once, which is
safe because a pull touches only its own request and ProcessQueue plus thread-safe shared
state (offset store, route tables, the remoting client); one request is still pulled by
one thread at a time, since it is in one place only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.common.scheduler import ScheduledExecutor
from rocketq.protocol.message_queue import MessageQueue

__all__ = ["PullMessageService", "PullRequest"]


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

    def execute_task_later(self, task: Callable[[], None], delay_ms: int) -> None:
        """Run ``task`` on this thread after ``delay_ms`` (``executeTaskLater``)."""
        self.schedule(task, delay_ms)

    def execute_pull_request_immediately(self, request: PullRequest) -> None:
        self.schedule(lambda: self._pull(request), 0)

    def execute_pull_request_later(self, request: PullRequest, delay_ms: int) -> None:
        self.schedule(lambda: self._pull(request), delay_ms)
