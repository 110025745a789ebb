"""The producer: DefaultMQProducer semantics over the shared client instance.

Mirrors ``org.apache.rocketmq.client.producer.DefaultMQProducer`` and
``org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl`` (4.9.7; reference 3.5-3.7,
7.3 and 10.1), plus ``MessageBatch`` and ``Validators.checkMessage``.

Behaviour:

* ``send`` (sync): up to ``1 + retry_times_when_send_failed`` attempts, each on a queue
  chosen round robin, skipping the broker that just failed; retried after transport errors
  and after the broker codes of ``retryResponseCodes``. The whole send, retries included,
  must finish within ``send_msg_timeout_ms``.
* ``send_async``: same queue choice and ``retry_times_when_send_async_failed`` retries;
  returns a :class:`concurrent.futures.Future` (with ``auto_batch``, an auto-batched
  message's is a :class:`~rocketq.client.batch_future.SendFuture`, a subclass: same API,
  lighter, completed a batch at a time). The optional ``callback(future)`` runs on the
  client's callback pool once the future is done (an auto-batched batch's callbacks run
  one after the other in one pool task). Without a callback the future is completed on the
  remoting I/O thread, so done-callbacks attached to it directly must be quick and must not
  block (pass ``callback=`` for real work).
* ``send_oneway``: one attempt, nothing awaited.
* ``queue=`` sends to that queue; ``selector=`` (+ ``arg``) picks one from the topic's
  publish list (see :mod:`rocketq.client.selectors`). Both make exactly one attempt, as
  ``sendSelectImpl``/``send(msg, mq)`` do, so ordered sends never jump queues.
* a list of messages is a batch (``MessageBatch``): one topic, no delay level, no retry
  topic, one WAIT value; each message gets its own UNIQ_KEY.
* bodies of ``compress_msg_body_over_howmuch`` (4 KiB) or more are zlib-compressed (sysFlag
  COMPRESSED | ZLIB = 0x301); batches never are. ``max_message_size`` is checked before.
* every message gets a UNIQ_KEY (``MessageClientIDSetter.setUniqID``) if it has none; it is
  ``SendResult.msg_id``.

Errors: invalid topic/group/empty or oversized body -> :class:`IllegalArgumentError` (raised
before anything is sent); no route -> :class:`ClientError`; broker refusal ->
:class:`BrokerError`; transport -> :class:`ConnectError`/:class:`RequestTimeoutError`.
**Timeout contract: a send that raised RequestTimeoutError may still have been stored** (and
a retried send may therefore be stored twice, as with the Java client).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal

from rocketq.client.api_results import SendResult, SendStatus
from rocketq.client.batch_future import PoolCallback, SendFuture
from rocketq.client.config import (
    CLIENT_INNER_PRODUCER_GROUP,
    ClientConfig,
    ProducerConfig,
    change_instance_name_to_pid,
    validate_topic,
    with_overrides,
)
from rocketq.client.instance import DEFAULT_MANAGER, MQClientInstance, MQClientManager
from rocketq.client.latency import MQFaultStrategy, TopicPublishInfo, now_ms
from rocketq.client.metrics import safely, topic_of
from rocketq.client.produce_accumulator import BatchDone, ProduceAccumulator, ThreadFutures
from rocketq.client.request_response import (
    RequestCallback,
    RequestFutureHolder,
    RequestResponseFuture,
    begin_request,
    send_request,
    wait_response,
)
from rocketq.client.selectors import SelectorLike
from rocketq.client.send_message_hook import SendMessageContext, SendMessageHook, hooks_after, hooks_before
from rocketq.client.send_prep import (
    PreparedSend,
    SendAttempts,
    auto_batch_body_limit,
    check_explicit_queue,
    check_message,
    prepare_checked_batch,
    prepare_message,
    prepare_send,
    select_with,
    send_frame_sync,
    send_request_of,
    send_result_of,
)
from rocketq.client.trace.async_trace_dispatcher import AsyncTraceDispatcher
from rocketq.client.trace.hooks import SendMessageTraceHookImpl
from rocketq.common.service_state import ServiceLifecycle, ServiceState
from rocketq.errors import (
    BrokerError,
    ClientError,
    ConnectError,
    IllegalArgumentError,
    RequestTimeoutError,
    RocketqError,
)
from rocketq.protocol.message import (
    Message,
    MessageExt,
)
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import TopicConfig
from rocketq.remoting.helper import host_addr_to_string

__all__ = ["Producer", "SendCallback", "SendResult", "SendStatus"]

log = logging.getLogger(__name__)

#: ``callback(future)``, run on the client's callback pool once the send is done.
SendCallback = Callable[["concurrent.futures.Future[SendResult]"], object]

_Mode = Literal["sync", "async", "oneway"]


def _guarded(callback: SendCallback) -> Callable[[concurrent.futures.Future[SendResult]], None]:
    """``callback`` with its exceptions logged, never propagated into the future machinery."""

    def run(f: concurrent.futures.Future[SendResult]) -> None:
        try:
            callback(f)
        except Exception:
            log.exception("send callback raised")

    return run


class Producer(ServiceLifecycle):
    """A message producer (``DefaultMQProducer``). Thread-safe; use as a context manager.

    ``producer_group`` and ``namesrv_addr`` override the fields of ``config`` /
    ``client_config``; without any name server address the ``NAMESRV_ADDR`` environment
    variable is used. ``manager`` defaults to :data:`rocketq.client.instance.DEFAULT_MANAGER`.
    """

    def __init__(
        self,
        producer_group: str | None = None,
        *,
        namesrv_addr: str | None = None,
        config: ProducerConfig | None = None,
        client_config: ClientConfig | None = None,
        manager: MQClientManager | None = None,
        clock_ms: Callable[[], int] = now_ms,
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
    ) -> None:
        cfg = with_overrides(config or ProducerConfig(), producer_group=producer_group)
        ccfg = with_overrides(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self.config = cfg
        self.client_config = ccfg
        self._manager = manager or DEFAULT_MANAGER
        self._clock_ms = clock_ms
        self._fault = MQFaultStrategy(enabled=cfg.send_latency_fault_enable, clock_ms=clock_ms)
        self._publish: dict[str, TopicPublishInfo] = {}
        self._publish_lock = threading.Lock()
        self._state = ServiceState.CREATE_JUST
        self._state_lock = threading.Lock()
        self._instance: MQClientInstance | None = None
        #: SendMessageHooks, called around every send attempt (``registerSendMessageHook``)
        self.send_hooks: list[SendMessageHook] = []
        #: message trace (``enableMsgTrace``/``customizedTraceTopic``): None when off
        self.trace_dispatcher: AsyncTraceDispatcher | None = None
        if enable_msg_trace:
            self.trace_dispatcher = AsyncTraceDispatcher(cfg.producer_group, "PRODUCE", custom_trace_topic)
            self.send_hooks.append(SendMessageTraceHookImpl(self.trace_dispatcher))
        self._accumulator: ProduceAccumulator[SendFuture] | None = None
        if cfg.auto_batch:
            self._accumulator = ProduceAccumulator(
                self._send_accumulated,
                ThreadFutures(),
                max_messages=cfg.auto_batch_max_messages,
                max_bytes=cfg.auto_batch_max_bytes,
                max_in_flight=cfg.auto_batch_max_in_flight,
                max_body=auto_batch_body_limit(cfg),
            )

    # ================================================================== lifecycle
    @property
    def producer_group(self) -> str:
        return self.config.producer_group

    @property
    def state(self) -> ServiceState:
        return self._state

    @property
    def client_id(self) -> str:
        """``ip@instanceName`` of the client instance (after :meth:`start`)."""
        return self._running_instance().client_id

    def start(self) -> None:
        """Join (or create) the client instance and start it. Raises ClientError if misused."""
        with self._state_lock:
            self._state.check_startable("producer")
            self._state = ServiceState.START_FAILED
            ccfg = self.client_config
            if self.config.producer_group != CLIENT_INNER_PRODUCER_GROUP:
                ccfg = dataclasses.replace(
                    ccfg, instance_name=change_instance_name_to_pid(ccfg.instance_name)
                )
                self.client_config = ccfg
            instance = self._manager.get_or_create_instance(ccfg)
            if not instance.register_producer(self.config.producer_group, self):
                raise ClientError(
                    f"the producer group[{self.config.producer_group}] has been created before, specify another name"
                )
            with self._publish_lock:
                self._publish[self.config.create_topic_key] = TopicPublishInfo(
                    [], have_topic_router_info=False
                )
            try:
                instance.start()
            except BaseException:
                instance.unregister_producer(self.config.producer_group)
                instance.shutdown()
                raise
            self._instance = instance
            self._state = ServiceState.RUNNING
        if self.trace_dispatcher is not None:
            try:
                self.trace_dispatcher.start(self.client_config)
            except Exception:
                log.exception("message trace of %s could not start", self.config.producer_group)

    def register_send_message_hook(self, hook: SendMessageHook) -> None:
        """Add a hook called around every send attempt (``registerSendMessageHook``)."""
        self.send_hooks.append(hook)

    def shutdown(self) -> None:
        """UNREGISTER_CLIENT everywhere, then stop the instance if this was its last user."""
        with self._state_lock:
            was_running = self._state is ServiceState.RUNNING
            self._state = ServiceState.SHUTDOWN_ALREADY
            if not was_running:
                return
            instance = self._instance
        if instance is not None:
            instance.unregister_producer(self.config.producer_group)
            instance.shutdown()
        if self.trace_dispatcher is not None:
            self.trace_dispatcher.shutdown()

    def _running_instance(self) -> MQClientInstance:
        instance = self._instance
        if self._state is not ServiceState.RUNNING or instance is None:
            raise ClientError(f"the producer service state not OK, {self._state.name}")
        return instance

    # ================================================================== MQProducerInner
    def publish_topics(self) -> set[str]:
        with self._publish_lock:
            return set(self._publish)

    def is_publish_topic_need_update(self, topic: str) -> bool:
        with self._publish_lock:
            info = self._publish.get(topic)
        return info is None or not info.ok()

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None:
        with self._publish_lock:
            self._publish[topic] = info

    # ================================================================== routes
    def _find_publish_info(self, topic: str) -> TopicPublishInfo:
        """``tryToFindTopicPublishInfo``: cache, then the name server, then the TBW102 template."""
        instance = self._running_instance()
        with self._publish_lock:
            info = self._publish.get(topic)
        if info is None or not info.ok():
            with self._publish_lock:
                self._publish.setdefault(topic, TopicPublishInfo([], have_topic_router_info=False))
            instance.update_topic_route_info_from_name_server(topic)
            with self._publish_lock:
                info = self._publish[topic]
        if info.have_topic_router_info or info.ok():
            return info
        instance.update_topic_route_info_from_name_server(
            topic,
            default_topic=self.config.create_topic_key,
            default_queue_nums=self.config.default_topic_queue_nums,
        )
        with self._publish_lock:
            return self._publish[topic]

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's publish queue list in route order (``fetchPublishMessageQueues``)."""
        validate_topic(topic)
        info = self._find_publish_info(topic)
        if not info.ok():
            raise ClientError(f"No route info of this topic: {topic}")
        return list(info.message_queue_list)

    # ================================================================== preparation
    def _check_message(self, msg: Message) -> None:
        check_message(msg, self.config)

    def _prepare_any(self, msg: Message | Sequence[Message]) -> PreparedSend:
        return prepare_send(msg, self.config)

    def _broker_addr(self, mq: MessageQueue) -> str:
        instance = self._running_instance()
        addr = instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            self._find_publish_info(mq.topic)
            addr = instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    # ================================================================== sync / oneway
    def send(
        self,
        msg: Message | Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> SendResult:
        """Send and wait for the broker (``DefaultMQProducer.send``); a list is a batch."""
        metrics = self.client_config.metrics
        if metrics is None:
            result = self._send(msg, "sync", queue, selector, arg, timeout_ms)
        else:
            started, ok = time.perf_counter(), False
            try:
                result = self._send(msg, "sync", queue, selector, arg, timeout_ms)
                ok = result is not None and result.status is SendStatus.SEND_OK
            finally:
                cost = (time.perf_counter() - started) * 1000.0
                safely(lambda: metrics.on_send(topic_of(msg), cost, ok))
        assert result is not None  # sync sends always produce a result
        return result

    def send_batch(
        self, msgs: Sequence[Message], *, queue: MessageQueue | None = None, timeout_ms: int | None = None
    ) -> SendResult:
        """Send a batch (same as ``send(list)``)."""
        return self.send(list(msgs), queue=queue, timeout_ms=timeout_ms)

    def send_oneway(
        self,
        msg: Message | Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
    ) -> None:
        """Send without waiting for any answer (``sendOneway``): one attempt, no result."""
        self._send(msg, "oneway", queue, selector, arg, None)

    def _send(
        self,
        msg: Message | Sequence[Message],
        mode: _Mode,
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        arg: object,
        timeout_ms: int | None,
    ) -> SendResult | None:
        if self._state is not ServiceState.RUNNING:
            self._running_instance()  # raises
        timeout = self.config.send_msg_timeout_ms if timeout_ms is None else timeout_ms
        begin = self._clock_ms()
        prep = prepare_send(msg, self.config)
        if queue is not None or selector is not None:
            chosen = self._choose_explicit(prep, queue, selector, arg, msg)
            if self._clock_ms() - begin >= timeout:
                raise RequestTimeoutError("sendSelectImpl call timeout")
            return self._send_kernel(prep, chosen, mode, timeout - (self._clock_ms() - begin))
        info = self._publish.get(prep.topic)  # (one dict read is atomic: writers hold _publish_lock)
        if info is None or not info.ok():  # (a known route is taken without the lookup's calls)
            info = self._find_publish_info(prep.topic)
        if not info.ok():
            raise ClientError(f"No route info of this topic: {prep.topic}")
        attempts = SendAttempts(
            self._fault,
            info,
            self.config,
            prep.topic,
            begin,
            timeout,
            self._clock_ms,
            retries=self.config.retry_times_when_send_failed if mode == "sync" else 0,
        )
        return attempts.run(prep, mode, self._send_kernel)

    def _choose_explicit(
        self,
        prep: PreparedSend,
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        arg: object,
        msg: Message | Sequence[Message],
    ) -> MessageQueue:
        mq = check_explicit_queue(prep.topic, queue, selector)
        if mq is not None:
            return mq
        assert selector is not None
        return select_with(self._find_publish_info(prep.topic), prep.topic, selector, msg, arg)

    def _send_kernel(
        self, prep: PreparedSend, mq: MessageQueue, mode: str, timeout_ms: int
    ) -> SendResult | None:
        """``sendKernelImpl``: one attempt to one queue (``mode`` "sync" or "oneway")."""
        instance = self._instance
        if self._state is not ServiceState.RUNNING or instance is None:
            instance = self._running_instance()  # raises
        addr = instance.find_broker_address_in_publish(mq.broker_name) or self._broker_addr(mq)
        api = instance.api
        remoting = api.remoting
        if not self.send_hooks and mode == "sync" and not remoting.signs_requests:
            # the hot path: the frame written straight from the prepared send (no header
            # object, no command object), the answer read straight into the SendResult
            result = send_frame_sync(
                remoting, addr, prep, mq, self.config, api.language, api.serialize_type, timeout_ms
            )
            if result is not None:
                return result
        # the request straight from the prepared send (no header object), the answer read
        # straight into the SendResult (send_prep.send_request_of / send_result_of)
        request = send_request_of(prep, mq, self.config, api.language, api.serialize_type)
        if not self.send_hooks:  # no hook context, no hook calls
            if mode == "oneway":
                remoting.invoke_oneway(addr, request)
                return None
            return send_result_of(remoting.invoke_sync(addr, request, timeout_ms), mq, prep.uniq_id, addr)
        hook_ctx = self._hooks_before(prep, mq, addr)
        try:
            if mode == "oneway":
                api.remoting.invoke_oneway(addr, request)
                result = None
            else:
                result = send_result_of(
                    api.remoting.invoke_sync(addr, request, timeout_ms), mq, prep.uniq_id, addr
                )
        except RocketqError as exc:
            if hook_ctx is not None:
                self._hooks_after(hook_ctx, None, exc)
            raise
        if hook_ctx is not None:
            self._hooks_after(hook_ctx, result, None)
        return result

    def _hooks_before(self, prep: PreparedSend, mq: MessageQueue, addr: str) -> SendMessageContext | None:
        return hooks_before(self.send_hooks, self.config.producer_group, prep, mq, addr)

    def _hooks_after(
        self, ctx: SendMessageContext | None, result: SendResult | None, exc: BaseException | None
    ) -> None:
        hooks_after(self.send_hooks, ctx, result, exc)

    # ================================================================== async
    def send_async(
        self,
        msg: Message | Sequence[Message],
        callback: SendCallback | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Send without blocking; the future gets the SendResult or the error.

        Invalid messages raise :class:`IllegalArgumentError` here at once; every other
        failure is delivered through the future (and the callback). A route lookup may
        block the caller on the first send to a topic. With ``config.auto_batch``, small
        single messages are batched while a batch of their topic is in flight.
        """
        metrics = self.client_config.metrics
        acc = self._accumulator
        if (
            acc is not None
            and metrics is None
            and queue is None
            and selector is None
            and timeout_ms is None
            and self._state is ServiceState.RUNNING
        ):
            # the per-message fast path of auto_batch: a message of a topic the accumulator
            # took before (its topic checked then), with a plain body; else the general path
            batched = acc.offer(msg)
            if batched is not None:
                instance = self._instance
                if callback is not None and instance is not None:
                    batched.add_done_callback(PoolCallback(_guarded(callback), instance.run_on_callback_pool))
                return batched
        if metrics is None:
            return self._send_async_any(msg, callback, queue, selector, arg, timeout_ms)
        started = time.perf_counter()
        fut = self._send_async_any(msg, callback, queue, selector, arg, timeout_ms)
        topic = topic_of(msg)

        def record(f: concurrent.futures.Future[SendResult]) -> None:
            ok = f.exception() is None and f.result().status is SendStatus.SEND_OK
            cost = (time.perf_counter() - started) * 1000.0
            safely(lambda: metrics.on_send(topic, cost, ok))

        fut.add_done_callback(record)
        return fut

    def _send_async_any(
        self,
        msg: Message | Sequence[Message],
        callback: SendCallback | None,
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        arg: object,
        timeout_ms: int | None,
    ) -> concurrent.futures.Future[SendResult]:
        acc = self._accumulator
        if (
            acc is not None
            and queue is None
            and selector is None
            and timeout_ms is None
            and isinstance(msg, Message)
            and ProduceAccumulator.eligible(msg)
            and len(msg.body) < acc.max_body
        ):
            check_message(msg, self.config)
            instance = self._running_instance()
            inner = acc.add(msg)
            if callback is not None:
                # callbacks never run on the I/O thread: a batch's go to the pool as one task
                inner.add_done_callback(PoolCallback(_guarded(callback), instance.run_on_callback_pool))
            return inner
        return self._send_async_now(
            msg, callback, queue=queue, selector=selector, arg=arg, timeout_ms=timeout_ms
        )

    def _send_accumulated(self, msgs: list[Message], done: BatchDone) -> None:
        """The accumulator's send: one message, or a batch of messages it took in (each checked
        by :meth:`send_async`, eligible, one topic, one WAIT value); ``done`` runs on the
        thread that completes the send (the remoting I/O thread, or this one on an error)."""
        begin = self._clock_ms()
        try:
            prep = (
                prepare_message(msgs[0], self.config)
                if len(msgs) == 1
                else prepare_checked_batch(msgs, self.config)
            )
        except RocketqError as exc:
            done(None, exc)
            return
        self._dispatch_async(prep, msgs, done, None, None, None, None, begin)

    def _send_async_now(
        self,
        msg: Message | Sequence[Message],
        callback: SendCallback | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        instance = self._running_instance()
        begin = self._clock_ms()
        prep = self._prepare_any(msg)
        out: concurrent.futures.Future[SendResult] = concurrent.futures.Future()
        if callback is not None:
            out.add_done_callback(_guarded(callback))

        def finish(result: SendResult | None, exc: BaseException | None) -> None:
            def complete() -> None:
                if exc is not None:
                    out.set_exception(exc)
                else:
                    assert result is not None
                    out.set_result(result)

            if callback is not None:
                instance.run_on_callback_pool(complete)  # callbacks never run on the I/O thread
            else:
                complete()

        self._dispatch_async(prep, msg, finish, queue, selector, arg, timeout_ms, begin)
        return out

    def _dispatch_async(
        self,
        prep: PreparedSend,
        msg: Message | Sequence[Message],
        finish: Callable[[SendResult | None, BaseException | None], None],
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        arg: object,
        timeout_ms: int | None,
        begin: int,
    ) -> None:
        """Choose the queue and start the first attempt; ``finish`` gets the outcome (an
        IllegalArgumentError of an explicit queue or selector raises here instead)."""
        timeout = self.config.send_msg_timeout_ms if timeout_ms is None else timeout_ms
        try:
            if queue is not None or selector is not None:
                mq = self._choose_explicit(prep, queue, selector, arg, msg)
                self._attempt_async(prep, mq, begin, timeout, 0, finish, explicit=True)
            else:
                info = self._find_publish_info(prep.topic)
                if not info.ok():
                    raise ClientError(f"No route info of this topic: {prep.topic}")
                mq = self._fault.select_one_message_queue(info, None)
                self._attempt_async(prep, mq, begin, timeout, 0, finish, explicit=False, info=info)
        except IllegalArgumentError:
            raise
        except RocketqError as exc:
            finish(None, exc)

    def _attempt_async(
        self,
        prep: PreparedSend,
        mq: MessageQueue,
        begin: int,
        timeout: int,
        retries: int,
        finish: Callable[[SendResult | None, BaseException | None], None],
        *,
        explicit: bool,
        info: TopicPublishInfo | None = None,
    ) -> None:
        remaining = timeout - (self._clock_ms() - begin)
        if remaining <= 0:
            finish(None, RequestTimeoutError(f"sendDefaultImpl call timeout after {timeout}ms"))
            return
        start = self._clock_ms()
        hook_ctx: SendMessageContext | None = None
        try:
            addr = self._broker_addr(mq)
            api = self._running_instance().api
            request = send_request_of(prep, mq, self.config, api.language, api.serialize_type)
            hook_ctx = self._hooks_before(prep, mq, addr)
            read = functools.partial(send_result_of, mq=mq, uniq_msg_id=prep.uniq_id, addr=addr)
            fut = api.send_request_async(addr, request, read, remaining)
        except RocketqError as exc:
            self._hooks_after(hook_ctx, None, exc)
            self._on_async_error(prep, mq, begin, timeout, retries, finish, explicit, info, exc, start)
            return

        def done(f: concurrent.futures.Future[SendResult]) -> None:
            exc = f.exception()
            if hook_ctx is not None:
                self._hooks_after(hook_ctx, None if exc is not None else f.result(), exc)
            if exc is None:
                self._fault.update_fault_item(mq.broker_name, self._clock_ms() - start, False)
                finish(f.result(), None)
            else:
                self._on_async_error(prep, mq, begin, timeout, retries, finish, explicit, info, exc, start)

        fut.add_done_callback(done)

    def _on_async_error(
        self,
        prep: PreparedSend,
        mq: MessageQueue,
        begin: int,
        timeout: int,
        retries: int,
        finish: Callable[[SendResult | None, BaseException | None], None],
        explicit: bool,
        info: TopicPublishInfo | None,
        exc: BaseException,
        start: int,
    ) -> None:
        """``onExceptionImpl``: retry on another broker from the callback pool, or give up."""
        self._fault.update_fault_item(mq.broker_name, self._clock_ms() - start, True)
        retriable = isinstance(exc, RocketqError) and exc.retriable
        can_retry = (
            not explicit
            and info is not None
            and retriable
            and retries < self.config.retry_times_when_send_async_failed
            and self._state is ServiceState.RUNNING
        )
        if not can_retry:
            finish(None, exc)
            return
        assert info is not None
        next_mq = self._fault.select_one_message_queue(info, mq.broker_name)
        log.warning("async send to %s failed (%s); retry on %s", mq, exc, next_mq)

        def retry() -> None:
            self._attempt_async(prep, next_mq, begin, timeout, retries + 1, finish, explicit=False, info=info)

        try:
            # off the I/O thread: a retry may need to connect to another broker
            self._running_instance().callback_executor().submit(retry)
        except (RuntimeError, ClientError):
            finish(None, exc)

    # ================================================================== request/reply
    def request(
        self,
        msg: Message,
        timeout_ms: int,
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
    ) -> Message:
        """Send ``msg`` and wait for its reply (``DefaultMQProducer.request``).

        See :mod:`rocketq.client.request_response`. Raises :class:`RequestTimeoutError` when
        no reply came within ``timeout_ms`` (the request may still be answered later; that
        answer is dropped) and :class:`ClientError` when the request could not be sent.
        """
        rf, holder, remaining = self._start_request(msg, timeout_ms, None, queue, selector, arg)
        try:
            return wait_response(rf, msg.topic, timeout_ms, remaining)
        finally:
            holder.remove(rf.correlation_id)

    def request_async(
        self,
        msg: Message,
        timeout_ms: int,
        callback: RequestCallback | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
    ) -> concurrent.futures.Future[Message]:
        """Send ``msg``; the future gets its reply, or RequestTimeoutError after ``timeout_ms``
        (found by the instance's request housekeeping, so up to a second late), or the send
        error. ``callback(future)`` runs on the client's callback pool. Unlike Java 4.9.7,
        the callback is not also called with no reply as soon as the request was sent.
        """
        out: concurrent.futures.Future[Message] = concurrent.futures.Future()
        if callback is not None:
            instance = self._running_instance()
            out.add_done_callback(lambda f: instance.run_on_callback_pool(lambda: callback(f)))
        self._start_request(msg, timeout_ms, out, queue, selector, arg)
        return out

    def _start_request(
        self,
        msg: Message,
        timeout_ms: int,
        future: concurrent.futures.Future[Message] | None,
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        arg: object,
    ) -> tuple[RequestResponseFuture, RequestFutureHolder, int]:
        """Register the request, then send it asynchronously (rocketq.client.request_response)."""
        self._check_message(msg)
        instance = self._running_instance()
        rf, holder, left = begin_request(
            instance, msg, timeout_ms, future, self._find_publish_info, self._clock_ms
        )
        send_request(
            holder,
            rf,
            lambda: self._send_async_now(msg, queue=queue, selector=selector, arg=arg, timeout_ms=left),
        )
        return rf, holder, left

    # ================================================================== admin helpers
    def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID from an offsetMsgId (``DefaultMQProducer.viewMessage``)."""
        host, offset = decode_offset_msg_id(offset_msg_id)
        instance = self._running_instance()
        return instance.api.view_message(
            host_addr_to_string(host), offset, self.client_config.mq_client_api_timeout_ms
        )

    def create_topic(self, key: str, new_topic: str, queue_num: int, topic_sys_flag: int = 0) -> None:
        """``MQAdminImpl.createTopic``: UPDATE_AND_CREATE_TOPIC on every master of ``key``'s route."""
        validate_topic(new_topic)
        instance = self._running_instance()
        route = instance.api.get_topic_route_info_from_name_server(
            key, self.client_config.mq_client_api_timeout_ms
        )
        if route is None or not route.broker_datas:
            raise ClientError(f"Not found broker, maybe key is wrong: {key}")
        config = TopicConfig(
            topic_name=new_topic,
            read_queue_nums=queue_num,
            write_queue_nums=queue_num,
            topic_sys_flag=topic_sys_flag,
        )
        created = False
        last: RocketqError | None = None
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(0)
            if addr is None:
                continue
            try:
                instance.api.create_topic(addr, key, config, self.client_config.mq_client_api_timeout_ms)
                created = True
            except (BrokerError, ConnectError, RequestTimeoutError) as exc:
                last = exc
        if not created:
            raise ClientError(f"create topic {new_topic} failed: {last}")
