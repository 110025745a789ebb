"""MQPullConsumerScheduleService: one repeating pull task per assigned queue.

Mirrors ``org.apache.rocketmq.client.consumer.MQPullConsumerScheduleService``,
``PullTaskCallback`` and ``PullTaskContext`` (4.9.7); Java's ``ScheduledThreadPoolExecutor``
is the project's one scheduler, :class:`rocketq.common.scheduler.ScheduledExecutor`.

Behaviour, as in Java:

* ``register_pull_task_callback(topic, callback)`` registers the topic for rebalancing;
* after every rebalance change (a :class:`MessageQueueListener`) the task table is made to
  match the queues this client owns (CLUSTERING: its share; BROADCASTING: all): tasks of
  queues no longer owned are cancelled and removed, new queues get a task started at once;
* each task calls ``callback(mq, context)`` and reschedules itself after
  ``context.pull_next_delay_time_millis`` (200 ms unless the callback changes it; 1000 ms
  after the callback raised). The callback does the pulling and offset bookkeeping with
  ``context.pull_consumer``.

Threading: ``pull_thread_nums`` (default 20) worker threads named
``<group>-pull-task-N`` run the callbacks; :meth:`MQPullConsumerScheduleService.shutdown`
cancels every task, shuts the consumer down (persisting its offsets; in-flight pulls fail
when the client instance closes) and joins the workers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rocketq.client.config import ClientConfig, PullConsumerConfig
from rocketq.client.consumer.allocate import AllocateMessageQueueStrategy
from rocketq.client.consumer.pull import PullConsumer
from rocketq.client.instance import MQClientManager
from rocketq.common.scheduler import ScheduledExecutor
from rocketq.common.service_state import ServiceLifecycle
from rocketq.errors import ClientError
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "MQPullConsumerScheduleService",
    "PullTaskCallback",
    "PullTaskCallbackLike",
    "PullTaskContext",
]

log = logging.getLogger(__name__)

#: ``PullTaskContext.pullNextDelayTimeMillis`` default.
DEFAULT_PULL_NEXT_DELAY_MS = 200
#: delay after a callback raised (``PullTaskImpl.run``).
_DELAY_AFTER_EXCEPTION_MS = 1000


@dataclass(slots=True)
class PullTaskContext:
    """``PullTaskContext``: what a pull task callback gets besides its queue."""

    pull_consumer: PullConsumer
    pull_next_delay_time_millis: int = DEFAULT_PULL_NEXT_DELAY_MS


@runtime_checkable
class PullTaskCallback(Protocol):
    """``PullTaskCallback.doPullTask(mq, context)``."""

    def do_pull_task(self, mq: MessageQueue, context: PullTaskContext) -> None: ...


#: A callback object or a plain function ``(mq, context) -> None``.
PullTaskCallbackLike = PullTaskCallback | Callable[[MessageQueue, PullTaskContext], object]


class _PullTask:
    """``PullTaskImpl``: runs the topic's callback for one queue, then reschedules itself."""

    def __init__(self, service: MQPullConsumerScheduleService, mq: MessageQueue) -> None:
        self.service = service
        self.mq = mq
        self.cancelled = False

    def run(self) -> None:
        if self.cancelled:
            log.debug("the pull task of %s is cancelled", self.mq)
            return
        callback = self.service.callback_for(self.mq.topic)
        if callback is None:
            log.warning("pull task callback of %s does not exist", self.mq.topic)
            return
        context = PullTaskContext(self.service.pull_consumer)
        try:
            if isinstance(callback, PullTaskCallback):
                callback.do_pull_task(self.mq, context)
            else:
                callback(self.mq, context)
        except Exception:
            context.pull_next_delay_time_millis = _DELAY_AFTER_EXCEPTION_MS
            if self.cancelled or not self.service.running:
                log.debug("pull task callback of %s raised during shutdown", self.mq, exc_info=True)
            else:
                log.exception("pull task callback of %s raised", self.mq)
        if not self.cancelled:
            self.service.scheduler.schedule(self.run, context.pull_next_delay_time_millis)


class MQPullConsumerScheduleService(ServiceLifecycle):
    """``MQPullConsumerScheduleService`` over a :class:`PullConsumer` it owns.

    Pass ``pull_consumer`` to supply a configured (not started) consumer; otherwise one is
    built from ``consumer_group``/``namesrv_addr``/``message_model``/``config``.
    """

    def __init__(
        self,
        consumer_group: str | None = None,
        *,
        namesrv_addr: str | None = None,
        message_model: MessageModel | None = None,
        pull_thread_nums: int = 20,
        config: PullConsumerConfig | None = None,
        client_config: ClientConfig | None = None,
        manager: MQClientManager | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        pull_consumer: PullConsumer | None = None,
    ) -> None:
        if pull_consumer is None:
            pull_consumer = PullConsumer(
                consumer_group,
                namesrv_addr=namesrv_addr,
                message_model=message_model,
                config=config,
                client_config=client_config,
                manager=manager,
                allocate_strategy=allocate_strategy,
            )
        self.pull_consumer = pull_consumer
        self.message_model = pull_consumer.config.message_model
        self.scheduler = ScheduledExecutor(
            f"{pull_consumer.consumer_group}-pull-task", threads=pull_thread_nums, join_timeout_s=60.0
        )
        self._lock = threading.Lock()
        self._callbacks: dict[str, PullTaskCallbackLike] = {}
        self._tasks: dict[MessageQueue, _PullTask] = {}
        self._running = False

    # ------------------------------------------------------------------ API
    def register_pull_task_callback(self, topic: str, callback: PullTaskCallbackLike) -> None:
        """Pull ``topic``'s owned queues with ``callback`` (``registerPullTaskCallback``)."""
        with self._lock:
            self._callbacks[topic] = callback
        self.pull_consumer.register_message_queue_listener(topic, self)

    @property
    def running(self) -> bool:
        return self._running

    def callback_for(self, topic: str) -> PullTaskCallbackLike | None:
        with self._lock:
            return self._callbacks.get(topic)

    @property
    def task_table(self) -> dict[MessageQueue, bool]:
        """Queue -> cancelled flag of every task in the table (a snapshot)."""
        with self._lock:
            return {mq: task.cancelled for mq, task in self._tasks.items()}

    def start(self) -> None:
        with self._lock:
            if self._running:
                raise ClientError("the schedule service has been started before")
            self._running = True
        self.scheduler.start()
        try:
            self.pull_consumer.start()
        except BaseException:
            self.scheduler.shutdown()
            raise

    def shutdown(self) -> None:
        with self._lock:
            was_running = self._running
            self._running = False
            tasks = list(self._tasks.values())
            self._tasks.clear()
        for task in tasks:
            task.cancelled = True
        if not was_running:
            return
        try:
            self.pull_consumer.shutdown()
        finally:
            self.scheduler.shutdown()

    # ------------------------------------------------------------------ MessageQueueListener
    def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        """``MessageQueueListenerImpl``: BROADCASTING takes every queue, CLUSTERING its share."""
        if self.message_model is MessageModel.BROADCASTING:
            self.put_task(topic, mq_all)
        else:
            self.put_task(topic, mq_divided)

    def put_task(self, topic: str, mq_new_set: set[MessageQueue]) -> None:
        """``putTask``: cancel tasks of queues no longer owned, start the new ones."""
        started: list[_PullTask] = []
        with self._lock:
            if not self._running:
                return
            for mq in [m for m in self._tasks if m.topic == topic and m not in mq_new_set]:
                self._tasks.pop(mq).cancelled = True
                log.info("pull task of %s cancelled (rebalance)", mq)
            for mq in sorted(mq_new_set):
                if mq not in self._tasks:
                    task = _PullTask(self, mq)
                    self._tasks[mq] = task
                    started.append(task)
        for task in started:
            self.scheduler.schedule(task.run, 0)
