"""The one scheduler of delayed one-off tasks: a heap of callables by due time on N named threads.

Mirrors what Java gets from a ``ScheduledExecutorService`` (``ScheduledThreadPoolExecutor``):
``PullMessageService.executeTaskLater``, ``DefaultMQPushConsumerImpl``'s consume-scheduled
executor, ``DefaultLitePullConsumerImpl``'s and ``MQPullConsumerScheduleService``'s pull-task
pools. Fixed-rate loops with a wakeup are :class:`rocketq.common.service_thread.PeriodicService`.

Invariants:

* Tasks run in due order; tasks due at the same time run in submission order (a sequence
  number breaks ties). With one thread every task is serialized; with N threads up to N
  run at once.
* An exception in a task is logged with its traceback and never kills a worker.
* :meth:`ScheduledExecutor.shutdown` drops the pending tasks and joins the workers (a worker
  busy in a task finishes that task first); a task scheduled after shutdown is dropped.
* The clock is injected (``time.monotonic`` by default).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["ScheduledExecutor"]

log = logging.getLogger(__name__)


class ScheduledExecutor:
    """``schedule(fn, delay_ms)`` on ``threads`` named workers (``name``, or ``name-i`` when
    there are several); ``join_timeout_s`` bounds :meth:`shutdown`'s join of each worker."""

    def __init__(
        self,
        name: str,
        *,
        threads: int = 1,
        clock: Callable[[], float] = time.monotonic,
        join_timeout_s: float = 5.0,
    ) -> None:
        if threads <= 0:
            raise ValueError(f"threads must be > 0, got {threads}")
        self.name = name
        self.join_timeout_s = join_timeout_s
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._started = False
        names = [name] if threads == 1 else [f"{name}-{i}" for i in range(threads)]
        self._threads = [threading.Thread(target=self._worker, name=n, daemon=True) for n in names]

    @property
    def stopped(self) -> bool:
        """True once :meth:`shutdown` was called."""
        return self._stopped

    @property
    def is_alive(self) -> bool:
        """True while any worker thread runs."""
        return any(t.is_alive() for t in self._threads)

    def start(self) -> None:
        """Start the workers; a second call does nothing."""
        with self._cond:
            if self._started or self._stopped:
                return
            self._started = True
        for t in self._threads:
            t.start()

    def schedule(self, task: Callable[[], None], delay_ms: int = 0) -> None:
        """Run ``task`` on a worker after ``delay_ms`` (``schedule(task, delay, MILLISECONDS)``)."""
        with self._cond:
            if self._stopped:
                return
            due = self._clock() + max(delay_ms, 0) / 1000.0
            heapq.heappush(self._heap, (due, next(self._seq), task))
            self._cond.notify()

    def pending(self) -> int:
        """How many tasks wait for their time or a free worker."""
        with self._cond:
            return len(self._heap)

    def _take(self) -> Callable[[], None] | None:
        with self._cond:
            while not self._stopped:
                if self._heap:
                    wait = self._heap[0][0] - self._clock()
                    if wait <= 0:
                        return heapq.heappop(self._heap)[2]
                    # bounded: an injected clock may move faster than the condition's timer
                    self._cond.wait(min(wait, 1.0))
                else:
                    self._cond.wait()
            return None

    def _worker(self) -> None:
        while True:
            task = self._take()
            if task is None:
                return
            try:
                task()
            except Exception:
                log.exception("%s: a scheduled task failed", self.name)

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Drop pending tasks, stop the workers and join them (not the calling worker)."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify_all()
        timeout = self.join_timeout_s if timeout_s is None else timeout_s
        current = threading.current_thread()
        for t in self._threads:
            if t is not current and t.is_alive():
                t.join(timeout)
                if t.is_alive():
                    log.warning("worker %s did not stop within %.1f s", t.name, timeout)

    def __repr__(self) -> str:
        return f"<ScheduledExecutor {self.name} stopped={self._stopped} pending={self.pending()}>"
