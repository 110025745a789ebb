"""The blocking producer's per-message future of an auto-batched send (``send_async`` with
``auto_batch``), and the per-message view of one batch's answer.

The auto-batch accumulator (:mod:`rocketq.client.produce_accumulator`) hands out one future per
message and completes a whole batch of them when the batch's SEND_BATCH_MESSAGE is answered. A
plain :class:`concurrent.futures.Future` costs a :class:`threading.Condition` (an ``RLock`` and
six bound methods) per message and a lock round trip per ``set_result``; at 1,000 sends in
flight that was a quarter of the client's CPU (``benchmarks`` workload 3). :class:`SendFuture`
is a :class:`concurrent.futures.Future` subclass that keeps its whole documented API (``result``,
``exception``, ``done``, ``cancel``, ``add_done_callback``, ``concurrent.futures.wait`` /
``as_completed``, ``asyncio.wrap_future``) and changes only how it is made and completed:

* **one condition per batch**: the futures that will leave in one batch share one
  ``Condition`` (the accumulator starts a new one with each new queue of a topic). A
  ``notify_all`` for one future may wake a thread waiting on another of the same batch, so
  ``result``/``exception`` wait in a loop until their own future is done or their deadline
  passed (the base class waits once);
* **one pass per batch**: :func:`complete_batch` takes that condition once, marks every
  future of the batch finished (waking ``wait``/``as_completed`` waiters as the base class
  does), notifies once, then runs each future's done-callbacks outside the lock, each
  exactly once, exceptions logged to ``concurrent.futures`` as the base class logs them;
* **one pool hand-off per batch**: done-callbacks that must run on a pool
  (:class:`PoolCallback`: the producer's ``callback=``) are handed to it as one task per
  batch, run one after the other there;
* **lazy results**: a message's own :class:`SendResult` (its UNIQ_KEY, the i-th offset msg id,
  queue offset ``first + i``) is built on the first ``result()`` from the batch's
  :class:`BatchOutcome`, and then kept: every call returns the same object.

Invariants: a future is completed at most once (a cancelled one stays cancelled: its message
still leaves with its batch, as with any future cancelled after its work began); the state is
written after the result or exception, so a lock-free read of a finished state sees them.
``set_result``/``set_exception`` of the base class still work on a :class:`SendFuture`.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures._base import (
    CANCELLED,
    CANCELLED_AND_NOTIFIED,
    FINISHED,
    PENDING,
    RUNNING,
)

from rocketq.client.api_results import SendResult

__all__ = ["BatchOutcome", "PoolCallback", "SendFuture", "complete_batch", "new_batch_group"]

#: the base class logs a done-callback's exception to this logger; so does complete_batch
_FUTURES_LOG = logging.getLogger("concurrent.futures")
_CANCELLED_STATES = (CANCELLED, CANCELLED_AND_NOTIFIED)
_DONE_STATES = (CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED)


class BatchOutcome:
    """One answered batch (or single message): its SendResult and, per message, its own.

    ``nth(i)`` is message ``i``'s SendResult: its own UNIQ_KEY and offset msg id (the i-th of
    the batch's comma-joined lists) and queue offset ``first + i`` (a batch is stored with
    consecutive offsets in one queue). An outcome of a single message (``single=True``)
    answers the batch's SendResult itself.
    """

    __slots__ = ("_msg_ids", "_offset_ids", "result", "single")

    def __init__(self, result: SendResult, single: bool) -> None:
        self.result = result
        self.single = single
        self._msg_ids: list[str] | None = None
        self._offset_ids: list[str] | None = None

    def nth(self, i: int) -> SendResult:
        """Message ``i``'s own SendResult (a new object on every call)."""
        r = self.result
        if self.single:
            return r
        msg_ids = self._msg_ids
        if msg_ids is None:
            # split once per batch (two threads may both split: the lists are equal)
            msg_ids = self._msg_ids = r.msg_id.split(",")
        offset_ids = self._offset_ids
        if offset_ids is None:
            offset_ids = self._offset_ids = r.offset_msg_id.split(",")
        # a direct construction: dataclasses.replace costs twice as much
        return SendResult(
            status=r.status,
            msg_id=msg_ids[i] if i < len(msg_ids) else r.msg_id,
            offset_msg_id=offset_ids[i] if i < len(offset_ids) else r.offset_msg_id,
            message_queue=r.message_queue,
            queue_offset=r.queue_offset + i,
            transaction_id=r.transaction_id,
            region_id=r.region_id,
            trace_on=r.trace_on,
        )


class PoolCallback:
    """A done-callback that runs ``fn(future)`` on a pool (``run_on_pool(task)`` submits a task).

    Called as a plain done-callback it submits one task; :func:`complete_batch` instead hands
    all the pool callbacks of a batch to their pool as one task, so 1,000 sends in flight cost
    a few pool hand-offs instead of 1,000 (Java's batched sends call the messages' callbacks
    one after the other too).
    """

    __slots__ = ("fn", "run_on_pool")

    def __init__(
        self,
        fn: Callable[[concurrent.futures.Future[SendResult]], object],
        run_on_pool: Callable[[Callable[[], object]], object],
    ) -> None:
        self.fn = fn
        self.run_on_pool = run_on_pool

    def __call__(self, future: concurrent.futures.Future[SendResult]) -> None:
        self.run_on_pool(lambda: self.fn(future))


def _run_each(calls: list[tuple[PoolCallback, SendFuture]]) -> None:
    """Run pool callbacks one after the other (one pool task); a raising one stops no other."""
    for callback, future in calls:
        try:
            callback.fn(future)
        except Exception:
            _FUTURES_LOG.exception("exception calling callback for %r", future)


def new_batch_group() -> Callable[[], SendFuture]:
    """A maker of futures that share one new condition (the futures of one batch)."""
    lock = threading.RLock()
    return functools.partial(SendFuture, threading.Condition(lock), lock)


class SendFuture(concurrent.futures.Future[SendResult]):
    """A :class:`concurrent.futures.Future` of one auto-batched message's SendResult.

    Made by the accumulator with the condition of the batch it will leave in, completed by
    :func:`complete_batch`. Behaves as its base class for every caller (see the module
    docstring for what differs inside).
    """

    # class-level defaults: a future sets only what differs from them (it is made per message)
    _result: SendResult | None = None
    _exception: BaseException | None = None
    #: the batch's answer and this message's place in it (set when completed by a batch)
    _outcome: BatchOutcome | None = None
    _index: int = 0

    def __init__(self, condition: threading.Condition, lock: threading.RLock) -> None:
        # not super().__init__(): that makes a Condition per future. ``lock`` is the
        # condition's own lock (taken directly where no wait is needed: a C call, where
        # ``with condition`` is two Python calls).
        self._condition = condition
        self._lock = lock
        self._state = PENDING
        self._waiters = []
        self._done_callbacks: list[Callable[[concurrent.futures.Future[SendResult]], object]] = []

    def __repr__(self) -> str:
        state = self._state
        text = f"<{type(self).__name__} at {id(self):#x} state={state.lower()}"
        if state == FINISHED:
            exc = self._exception
            text += f" raised {type(exc).__name__}" if exc is not None else " returned SendResult"
        return text + ">"

    def done(self) -> bool:
        return self._state in _DONE_STATES

    def cancelled(self) -> bool:
        return self._state in _CANCELLED_STATES

    def running(self) -> bool:
        return self._state == RUNNING

    def add_done_callback(self, fn: Callable[[concurrent.futures.Future[SendResult]], object]) -> None:
        with self._lock:
            if self._state not in _DONE_STATES:
                self._done_callbacks.append(fn)
                return
        try:
            fn(self)
        except Exception:
            _FUTURES_LOG.exception("exception calling callback for %r", self)

    def result(self, timeout: float | None = None) -> SendResult:
        if self._state != FINISHED:
            self._wait(timeout)
        exc = self._exception
        if exc is not None:
            raise exc
        result = self._result
        if result is None:
            with self._lock:  # one SendResult object per future, however many threads ask
                result = self._result
                if result is None:
                    outcome = self._outcome
                    assert outcome is not None  # finished without an exception: completed by a batch
                    result = self._result = outcome.nth(self._index)
        return result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state != FINISHED:
            self._wait(timeout)
        return self._exception

    def _wait(self, timeout: float | None) -> None:
        """Return once finished; CancelledError if cancelled, TimeoutError after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        cond = self._condition
        with cond:
            while True:
                state = self._state
                if state == FINISHED:
                    return
                if state in _CANCELLED_STATES:
                    raise concurrent.futures.CancelledError()
                if deadline is None:
                    cond.wait()
                else:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise concurrent.futures.TimeoutError()
                    cond.wait(left)


def complete_batch(
    futures: Sequence[SendFuture], outcome: BatchOutcome | None, error: BaseException | None
) -> None:
    """Complete the futures of one batch: message ``i`` gets ``outcome.nth(i)``, or every
    message ``error``. All share one condition (the accumulator's invariant); futures already
    done (cancelled by their caller) are left alone. Done-callbacks run after the lock is
    released, on the calling thread."""
    if not futures:
        return
    cond = futures[0]._condition
    finished: list[SendFuture] = []
    with cond:
        for i, f in enumerate(futures):
            if f._state in _DONE_STATES:
                continue
            if error is not None:
                f._exception = error
            else:
                f._outcome = outcome
                f._index = i
            f._state = FINISHED
            if f._waiters:
                for waiter in f._waiters:
                    if error is not None:
                        waiter.add_exception(f)
                    else:
                        waiter.add_result(f)
            finished.append(f)
        cond.notify_all()
    # by pool (a bound method: equal, and hashing alike, when bound to the same object)
    pooled: dict[Callable[[Callable[[], object]], object], list[tuple[PoolCallback, SendFuture]]] | None = (
        None
    )
    for f in finished:
        for callback in f._done_callbacks:
            if type(callback) is PoolCallback:
                # collected: one pool task per pool for the whole batch
                if pooled is None:
                    pooled = {}
                pooled.setdefault(callback.run_on_pool, []).append((callback, f))
                continue
            try:
                callback(f)
            except Exception:
                _FUTURES_LOG.exception("exception calling callback for %r", f)
    if pooled is not None:
        for run_on_pool, calls in pooled.items():
            run_on_pool(functools.partial(_run_each, calls))
