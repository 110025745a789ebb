"""Listener statuses, consume contexts and consume hooks of the push consumer.

Mirrors ``org.apache.rocketmq.client.consumer.listener`` (``ConsumeConcurrentlyStatus``,
``ConsumeOrderlyStatus``, ``ConsumeConcurrentlyContext``, ``ConsumeOrderlyContext``,
``ConsumeReturnType``) and ``org.apache.rocketmq.client.hook`` (``ConsumeMessageHook``,
``ConsumeMessageContext``). A listener is any callable ``(msgs, context) -> status``;
returning ``None`` or raising counts as a failure (RECONSUME_LATER for concurrent,
SUSPEND_CURRENT_QUEUE_A_MOMENT for orderly), exactly as Java treats a null status.

It also owns the threads listeners run on: one process-wide :class:`ConsumeWorkers` set, on
which every consume service (concurrent and orderly) has its own :class:`ConsumePool` lane
in place of Java's per-consumer ``consumeExecutor``; the lane keeps what a consumer
observes of its executor (its concurrency bound, thread names, shutdown). Why the threads
are shared: :class:`ConsumeWorkers`.
"""

from __future__ import annotations

import collections
import enum
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from rocketq._process_local import ProcessLocal
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
    "ConsumeWorkers",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "classify_consume_result",
    "run_after_hooks",
    "run_before_hooks",
    "run_hooks",
    "shared_consume_workers",
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
#: what a worker takes from the ready queue: the lane, its name slot, the call
_Task = tuple["ConsumePool", int, Callable[..., object], tuple[object, ...]]


class ConsumeWorkers:
    """The process-wide set of consume threads every consume service's :class:`ConsumePool`
    (one lane per consumer) runs its listener calls on.

    Java gives each consumer its own ``consumeExecutor``. Here one set serves them all: with
    several consumers in a process, a pool of its own only ever held its consumer's one pull
    answer in flight, so a thread finishing a batch found its queue empty and slept, and the
    next answer (another consumer's) had to wake a different thread; a shared set lets the
    finishing thread take whichever consumer's call is ready (benchmarks/README.md,
    speed4-sharedpool). What a consumer observes is kept by its lane: at most
    ``consume_thread_max`` of its calls run at once, its threads carry its names, its
    shutdown drops only its queued calls and waits only for its running ones.

    Invariants (all counts under ``_lock``):

    * ``_capacity`` is the sum of the caps of the lanes attached (a lane detaches once it is
      shut down and none of its calls runs); ``_live`` workers never exceed it except until
      a busy worker notices the drop: a worker that finishes while ``_live > _capacity``
      ends, and a detach tells idle workers beyond it to end. No lane left: no thread left.
    * ``_idle`` counts the waiting workers no queued task is promised to: a task put on the
      ready queue either claims one of them or starts a new worker. A lane's running calls
      (queued or running) never exceed its cap, so the running calls of all lanes never
      exceed ``_capacity``: a lane under its cap always finds a worker idle or startable,
      and one consumer's blocked listeners can never starve another.
    * an exception escaping a call is logged; it never kills a worker.

    Forking: like the remoting client's shared reactor, a forked child forgets the parent's
    set (its threads did not survive the fork); consumers started before the fork do not
    work in the child.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._threads: set[threading.Thread] = set()
        self._live = 0
        self._idle = 0
        self._capacity = 0
        self._started = 0

    def threads(self) -> list[threading.Thread]:
        """The worker threads alive (or starting) now."""
        with self._lock:
            return list(self._threads)

    @property
    def capacity(self) -> int:
        """The bound on workers: the sum of the attached lanes' caps."""
        return self._capacity

    def _attach(self, cap: int) -> None:
        with self._lock:
            self._capacity += cap

    def _detach_locked(self, cap: int) -> None:
        """A shut-down lane's last call ended: its cap leaves the bound, idle workers beyond
        the bound are told to end (a busy one ends when it finishes)."""
        self._capacity -= cap
        surplus = min(self._idle, self._live - self._capacity)
        if surplus > 0:
            self._idle -= surplus
            self._live -= surplus
            for _ in range(surplus):
                self._ready.put(None)

    def _dispatch_locked(self, task: _Task) -> None:
        """Queue a task that may run now: an idle worker takes it, else a new one (a thread
        that cannot be started raises RuntimeError, with nothing queued)."""
        if self._idle > 0:
            self._idle -= 1
        else:
            thread = threading.Thread(
                target=self._work, name=f"ConsumeMessageThread-{self._started}", daemon=True
            )
            # started under the lock: a thread threads() lists has always been started
            thread.start()
            self._started += 1
            self._live += 1
            self._threads.add(thread)
        self._ready.put(task)

    def _work(self) -> None:
        ready, lock = self._ready, self._lock
        me = threading.current_thread()
        named: ConsumePool | None = None  # the lane and slot whose name the thread carries
        named_slot = -1
        task = ready.get()
        while True:
            if task is None:  # told to end
                with lock:
                    self._threads.discard(me)
                return
            lane, slot = task[0], task[1]
            if not lane._closed:
                if lane is not named or slot != named_slot:
                    me.name = lane._names[slot]
                    named, named_slot = lane, slot
                _run(task[2], task[3])
            with lock:
                task = lane._next_locked(slot)
                if task is None:
                    if self._live > self._capacity:
                        self._live -= 1
                        self._threads.discard(me)
                        return
                    self._idle += 1
            if task is None:
                task = ready.get()


def _run(fn: Callable[..., object], args: tuple[object, ...]) -> None:
    """One listener call; its messages are dropped when it returns."""
    try:
        fn(*args)
    except BaseException:
        log.exception("%s: a consume call failed", threading.current_thread().name)


#: the process's consume threads; a forked child makes a set of its own (ProcessLocal)
_shared: ProcessLocal[ConsumeWorkers] = ProcessLocal(ConsumeWorkers)


def shared_consume_workers() -> ConsumeWorkers:
    """The process's consume threads, made on first use."""
    return _shared.get()


class ConsumePool:
    """One consume service's lane on the shared :class:`ConsumeWorkers` (``consumeExecutor``).

    At most ``max_workers`` of its calls run at once; the calls beyond wait in its own
    backlog, and a worker finishing one of its calls runs the next backlog call itself (the
    thread stays hot). A running call's thread is named ``<thread_name_prefix>_<n>``, ``n``
    one of ``0..max_workers-1`` held for the call, as a pool of its own would name it. No
    Future per call: a consume request reports through its ProcessQueue and the offset
    store, never through a result. :meth:`shutdown` drops its calls not started yet; a
    later :meth:`submit` raises ``RuntimeError`` (what a shut-down executor raises).
    """

    def __init__(
        self, max_workers: int, thread_name_prefix: str, workers: ConsumeWorkers | None = None
    ) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        self._max = max_workers
        self.prefix = thread_name_prefix
        self._names = [f"{thread_name_prefix}_{i}" for i in range(max_workers)]
        self._free_slots = list(range(max_workers - 1, -1, -1))  # pop() hands out 0 first
        self._backlog: collections.deque[_Call] = collections.deque()
        self._running = 0  # calls queued on the shared set or running (<= max_workers)
        self._closed = False
        self._workers = workers if workers is not None else shared_consume_workers()
        #: notified, once closed, whenever one of its calls ends (on the set's lock)
        self._call_ended = threading.Condition(self._workers._lock)
        self._workers._attach(max_workers)

    def submit(self, fn: Callable[..., object], /, *args: object) -> None:
        """Queue ``fn(*args)``; raises RuntimeError after :meth:`shutdown`."""
        workers = self._workers
        with workers._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            if self._running >= self._max:
                self._backlog.append((fn, args))
                return
            self._start_locked(fn, args)

    def submit_if_free(self, fn: Callable[..., object], /, *args: object) -> bool:
        """Queue ``fn(*args)`` only if it can run now (fewer of this pool's calls running than
        its bound: a worker is then idle or can be started); False otherwise, or after
        :meth:`shutdown`."""
        workers = self._workers
        with workers._lock:
            if self._closed or self._running >= self._max:
                return False
            try:
                self._start_locked(fn, args)
            except RuntimeError:  # no thread could be started: the caller keeps the call
                return False
        return True

    def run_here(self, fn: Callable[..., object], /, *args: object) -> bool:
        """Run ``fn(*args)`` on the calling thread as one of this pool's calls, if it can run
        now: it holds a slot meanwhile, so the bound counts it. False (not run) when every
        slot is taken, or after :meth:`shutdown`. Once it returned, the slot runs the next
        backlog call (on a worker) or is free again."""
        workers = self._workers
        with workers._lock:
            if self._closed or self._running >= self._max:
                return False
            slot = self._free_slots.pop()
            self._running += 1
        try:
            _run(fn, args)
        finally:
            with workers._lock:
                task = self._next_locked(slot)
                if task is not None:
                    try:
                        workers._dispatch_locked(task)
                    except RuntimeError:  # no thread could be started: it waits for the next end
                        self._backlog.appendleft((task[2], task[3]))
                        self._running -= 1
                        self._free_slots.append(slot)
        return True

    def _start_locked(self, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        slot = self._free_slots.pop()
        try:
            self._workers._dispatch_locked((self, slot, fn, args))
        except BaseException:
            self._free_slots.append(slot)
            raise
        self._running += 1

    def _next_locked(self, slot: int) -> _Task | None:
        """A worker finished this pool's call in ``slot``: the next backlog call for it to
        run in the same slot, or None (the slot is released)."""
        if self._backlog and not self._closed:
            fn, args = self._backlog.popleft()
            return (self, slot, fn, args)
        self._running -= 1
        self._free_slots.append(slot)
        if self._closed:
            if self._running == 0:
                self._workers._detach_locked(self._max)
            self._call_ended.notify_all()
        return None

    def shutdown(self) -> None:
        """Refuse new calls and drop the queued ones; the running ones go on to their end."""
        workers = self._workers
        with workers._lock:
            if self._closed:
                return
            self._closed = True
            self._backlog.clear()
            if self._running == 0:
                workers._detach_locked(self._max)

    def wait_drained(self, timeout_s: float) -> bool:
        """After :meth:`shutdown`: wait until none of this pool's calls runs; False on timeout.
        Called from one of its own calls (a listener shutting its consumer down) it waits for
        the others only: that call cannot end while it waits."""
        own = 1 if self.runs_on_current_thread() else 0
        with self._call_ended:
            return self._call_ended.wait_for(lambda: self._running <= own, timeout_s)

    def runs_on_current_thread(self) -> bool:
        """Whether the calling thread is a worker running one of this pool's calls (a worker
        carries the name of the call it runs)."""
        me = threading.current_thread()
        return me.name in self._names and me in self._workers._threads

    @property
    def running(self) -> int:
        """This pool's calls queued to run or running now."""
        return self._running

    @property
    def backlog(self) -> int:
        """This pool's calls waiting for its bound."""
        return len(self._backlog)


def shutdown_consume_pool(executor: ConsumePool, await_termination_ms: int) -> None:
    """Stop a consume pool: queued requests are dropped, running listeners get a bounded wait."""
    wait_ms = await_termination_ms if await_termination_ms > 0 else DEFAULT_SHUTDOWN_WAIT_MS
    deadline = time.monotonic() + wait_ms / 1000.0
    executor.shutdown()
    if not executor.wait_drained(max(0.0, deadline - time.monotonic())):
        log.warning(
            "%d consume calls of %s still running after shutdown's %d ms wait",
            executor.running,
            executor.prefix,
            wait_ms,
        )
