"""Listener statuses, consume contexts and consume hooks of the push consumer.

Mirrors ``org.apache.rocketmq.client.consumer.listener`` (``ConsumeConcurrentlyStatus``,
``ConsumeOrderlyStatus``, ``ConsumeConcurrentlyContext``, ``ConsumeOrderlyContext``,
``ConsumeReturnType``) and ``org.apache.rocketmq.client.hook`` (``ConsumeMessageHook``,
``ConsumeMessageContext``). A listener is any callable ``(msgs, context) -> status``;
returning ``None`` or raising counts as a failure (RECONSUME_LATER for concurrent,
SUSPEND_CURRENT_QUEUE_A_MOMENT for orderly), exactly as Java treats a null status.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumePool",
    "ConsumeReturnType",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "classify_consume_result",
    "run_after_hooks",
    "run_before_hooks",
    "run_hooks",
    "shutdown_consume_pool",
]

log = logging.getLogger(__name__)

#: How long shutdown() waits for running listeners when no bound is configured (Java's
#: awaitTerminationMillisWhenShutdown=0 does not wait at all; rocketq waits this long so an
#: orderly batch can finish, yet a hung listener never blocks shutdown forever).
DEFAULT_SHUTDOWN_WAIT_MS = 10_000

_INT_MAX = 2**31 - 1


class ConsumeConcurrentlyStatus(enum.Enum):
    """What a concurrent listener returns."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener returns (COMMIT/ROLLBACK only matter with auto_commit off)."""

    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class ConsumeReturnType(enum.Enum):
    """How a listener call ended, reported to hooks (``ConsumeReturnType``)."""

    SUCCESS = "SUCCESS"
    TIME_OUT = "TIME_OUT"
    EXCEPTION = "EXCEPTION"
    RETURNNULL = "RETURNNULL"
    FAILED = "FAILED"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """Per-call context of a concurrent listener.

    ``delay_level_when_next_consume``: 0 lets the broker choose (3 + reconsume times), < 0
    sends the failed messages straight to the DLQ, > 0 picks a level. ``ack_index``: with
    CONSUME_SUCCESS, messages ``0..ack_index`` succeeded and the rest are retried.
    """

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = _INT_MAX


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """Per-call context of an orderly listener.

    ``suspend_current_queue_time_millis``: -1 uses the consumer's setting (1000 ms).
    """

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1


@dataclass(slots=True)
class ConsumeMessageContext:
    """What consume hooks see before and after a listener call."""

    consumer_group: str
    message_queue: MessageQueue
    msg_list: list[MessageExt]
    success: bool = False
    status: str = ""
    props: dict[str, str] = field(default_factory=dict)
    #: a hook's own state between before and after (Java's ``mqTraceContext``); typed
    #: ``object | None`` rather than the equivalent ``object``: mypyc resolves a dataclass
    #: field's bare ``object`` annotation as a module global and fails at import
    mq_trace_context: object | None = None


class ConsumeMessageHook(Protocol):
    """Before/after callbacks around every listener call (``ConsumeMessageHook``)."""

    def hook_name(self) -> str: ...

    def consume_message_before(self, context: ConsumeMessageContext) -> None: ...

    def consume_message_after(self, context: ConsumeMessageContext) -> None: ...


MessageListenerConcurrently = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext], "ConsumeConcurrentlyStatus | None"
]
MessageListenerOrderly = Callable[[list[MessageExt], ConsumeOrderlyContext], "ConsumeOrderlyStatus | None"]


def run_hooks(hooks: Sequence[ConsumeMessageHook], ctx: ConsumeMessageContext, *, before: bool) -> None:
    """Call every hook's before/after method; a failing hook is logged and skipped."""
    for hook in hooks:
        try:
            if before:
                hook.consume_message_before(ctx)
            else:
                hook.consume_message_after(ctx)
        except Exception:
            log.exception("consume hook %s failed", hook.hook_name())


def run_before_hooks(
    hooks: Sequence[ConsumeMessageHook], group: str, mq: MessageQueue, msgs: list[MessageExt]
) -> ConsumeMessageContext | None:
    """``executeHookBefore``: the context the after-hooks will get, or None without hooks."""
    if not hooks:
        return None
    ctx = ConsumeMessageContext(group, mq, msgs)
    run_hooks(hooks, ctx, before=True)
    return ctx


def run_after_hooks(
    hooks: Sequence[ConsumeMessageHook],
    ctx: ConsumeMessageContext | None,
    return_type: ConsumeReturnType,
    status: ConsumeConcurrentlyStatus | ConsumeOrderlyStatus,
    success: bool,
) -> None:
    """``executeHookAfter`` with the call's outcome; nothing when there were no before-hooks."""
    if ctx is None:
        return
    ctx.props["ConsumeContextType"] = return_type.name
    ctx.status = status.value
    ctx.success = success
    run_hooks(hooks, ctx, before=False)


_Status = TypeVar("_Status", ConsumeConcurrentlyStatus, ConsumeOrderlyStatus)


def classify_consume_result(
    status: _Status | None,
    failed: _Status,
    *,
    has_exception: bool,
    consume_rt_ms: int,
    consume_timeout_ms: int,
) -> tuple[_Status, ConsumeReturnType]:
    """The status to act on and the hooks' ``ConsumeReturnType`` (``ConsumeRequest.run``).

    No status (the listener raised or returned ``None``) becomes ``failed`` with EXCEPTION or
    RETURNNULL; otherwise a call that took ``consume_timeout_ms`` or longer is TIME_OUT, the
    ``failed`` status FAILED and any other SUCCESS.
    """
    if status is None:
        return failed, ConsumeReturnType.EXCEPTION if has_exception else ConsumeReturnType.RETURNNULL
    if consume_rt_ms >= consume_timeout_ms:
        return status, ConsumeReturnType.TIME_OUT
    if status == failed:
        return status, ConsumeReturnType.FAILED
    return status, ConsumeReturnType.SUCCESS


_Call = tuple[Callable[..., object], tuple[object, ...]]


class ConsumePool:
    """The bounded pool a consume service runs listeners on (``consumeExecutor``).

    A queue of calls and up to ``max_workers`` named daemon threads, one more started by a
    submit that finds no worker idle (``ThreadPoolExecutor``'s policy). Unlike an executor
    it makes no Future per call: a consume request reports through its ProcessQueue and
    the offset store, never through a result, and the Future's condition variables cost
    more than the rest of the hand-off. An exception escaping a call is logged; it never
    kills a worker. :meth:`shutdown` drops the calls not started yet; a later
    :meth:`submit` raises ``RuntimeError`` (what a shut-down executor raises).
    """

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._idle = 0  # workers waiting for a call (read without the lock: a hint)
        self._shutdown = False

    def submit(self, fn: Callable[..., object], /, *args: object) -> None:
        """Queue ``fn(*args)``; raises RuntimeError after :meth:`shutdown`."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new calls after shutdown")
        self._calls.put((fn, args))
        if self._idle == 0 and len(self._workers) < self._max_workers:
            with self._lock:
                if self._shutdown or len(self._workers) >= self._max_workers:
                    return
                thread = threading.Thread(
                    target=self._work, name=f"{self._prefix}_{len(self._workers)}", daemon=True
                )
                # started under the lock: a worker listed by workers() (which a shutdown
                # joins) has always been started
                thread.start()
                self._workers.append(thread)

    def submit_if_free(self, fn: Callable[..., object], /, *args: object) -> bool:
        """Queue ``fn(*args)`` only if a worker can take it now (more idle workers than queued
        calls, or room for one more worker); False otherwise, or after :meth:`shutdown`.

        The counts are read without the lock: a hint, so ``fn`` may still wait behind a call
        queued at the same moment, but it always runs (nothing queued is lost before shutdown).
        """
        if self._shutdown or (self._idle <= self._calls.qsize() and len(self._workers) >= self._max_workers):
            return False
        try:
            self.submit(fn, *args)
        except RuntimeError:  # shut down in between
            return False
        return True

    def _work(self) -> None:
        calls, lock = self._calls, self._lock
        while True:
            with lock:
                self._idle += 1
            call = calls.get()
            with lock:
                self._idle -= 1
            if call is None:
                return
            fn, args = call
            try:
                fn(*args)
            except BaseException:
                log.exception("%s: a consume call failed", threading.current_thread().name)
            del call, fn, args  # drop the messages before waiting for the next call

    def shutdown(self) -> None:
        """Refuse new calls, drop the queued ones and let every worker end after its current call."""
        with self._lock:
            self._shutdown = True
            workers = len(self._workers)
        try:
            while True:
                self._calls.get_nowait()
        except queue.Empty:
            pass
        for _ in range(workers):
            self._calls.put(None)

    def workers(self) -> list[threading.Thread]:
        """The worker threads started so far."""
        with self._lock:
            return list(self._workers)

    @property
    def idle_workers(self) -> int:
        """Workers waiting for a call right now."""
        return self._idle


def shutdown_consume_pool(executor: ConsumePool, await_termination_ms: int) -> None:
    """Stop a consume pool: queued requests are dropped, running listeners get a bounded wait."""
    wait_ms = await_termination_ms if await_termination_ms > 0 else DEFAULT_SHUTDOWN_WAIT_MS
    deadline = time.monotonic() + wait_ms / 1000.0
    executor.shutdown()
    for thread in executor.workers():
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            log.warning("consume thread %s still running after shutdown's %d ms wait", thread.name, wait_ms)
