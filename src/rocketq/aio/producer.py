"""AsyncProducer: ``DefaultMQProducer`` semantics on the caller's event loop.

The asyncio counterpart of :class:`rocketq.client.producer.Producer` (Java's
``DefaultMQProducerImpl``). One implementation of the rules: message checks, UNIQ_KEY,
compression, batches, the request header, explicit-queue and selector choice, retry decisions
and the final error all come from :mod:`rocketq.client.send_prep`; queue choice and latency
fault tolerance from :class:`~rocketq.client.latency.MQFaultStrategy`; publish lists from
:func:`~rocketq.client.instance.topic_route_to_publish_info`.

Behaviour (as ``Producer``):

* ``await send(msg)``: up to ``1 + retry_times_when_send_failed`` attempts, each on a queue
  chosen round robin skipping the broker that just failed (or by latency with
  ``send_latency_fault_enable``); retried after transport errors and retriable broker codes.
  The whole send, retries included, must finish within ``send_msg_timeout_ms``.
* ``queue=`` / ``selector=`` (+ ``arg``): exactly one attempt, so ordered sends never jump queues.
* a list of messages is one batch; ``send_oneway``: one attempt, nothing awaited but the write.
* ``send_async`` returns the send's future at once (one future per auto-batched message, no
  task); ``request`` sends a request and awaits its reply (:mod:`rocketq.aio.request_response`).
* send hooks, message trace (``enable_msg_trace``, :mod:`rocketq.aio.trace`) and client metrics
  (``client_config.metrics``: each send's latency and outcome), as ``Producer``.
* ``auto_batch``: the blocking producer's :class:`~rocketq.client.produce_accumulator.ProduceAccumulator`
  (with asyncio futures) turns many concurrent small sends into SEND_BATCH_MESSAGE requests.

Timeout contract: a send that raised :class:`~rocketq.errors.RequestTimeoutError` may still have
been stored (and a retried send may then be stored twice, as with the Java client). Cancelling
an ``await send(...)`` has the same contract.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rocketq.aio.instance import AsyncClientInstance
from rocketq.aio.remoting import RequestHook, wait_for
from rocketq.client.api_results import SendResult, SendStatus
from rocketq.client.config import (
    ClientConfig,
    ProducerConfig,
    change_instance_name_to_pid,
    validate_topic,
    with_overrides,
)
from rocketq.client.latency import MQFaultStrategy, TopicPublishInfo
from rocketq.client.metrics import ClientMetrics, safely, topic_of
from rocketq.client.produce_accumulator import AsyncioFutures, BatchDone, ProduceAccumulator
from rocketq.client.request_response import reply_timeout_error, request_send_error, stamp_request
from rocketq.client.selectors import SelectorLike
from rocketq.client.send_message_hook import SendMessageHook, hooks_after, hooks_before
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
    send_frame_for,
    send_request_of,
    send_result_of,
)
from rocketq.client.trace.hooks import SendMessageTraceHookImpl
from rocketq.common.service_state import ServiceState
from rocketq.errors import BrokerError, ClientError, RemotingError, RequestTimeoutError, RocketqError
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue

if TYPE_CHECKING:
    from rocketq.aio.trace import AsyncioTraceDispatcher

__all__ = ["AsyncProducer"]

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class AsyncProducer:
    """A message producer on the running event loop; use ``async with``.

    ``producer_group`` and ``namesrv_addr`` override the fields of ``config`` /
    ``client_config``. ``request_hooks`` see every outgoing request before it is encoded
    (request signing).
    """

    def __init__(
        self,
        producer_group: str | None = None,
        *,
        namesrv_addr: str | None = None,
        config: ProducerConfig | None = None,
        client_config: ClientConfig | None = None,
        request_hooks: Sequence[RequestHook] = (),
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        cfg = with_overrides(config or ProducerConfig(), producer_group=producer_group)
        ccfg = with_overrides(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self.config = cfg
        self.client_config = ccfg
        self._hooks = tuple(request_hooks)
        self._clock_ms = clock_ms
        self._fault = MQFaultStrategy(enabled=cfg.send_latency_fault_enable, clock_ms=clock_ms)
        self._publish: dict[str, TopicPublishInfo] = {}
        self._state = ServiceState.CREATE_JUST
        self._instance: AsyncClientInstance | None = None
        self._accumulator: ProduceAccumulator[asyncio.Future[SendResult]] | None = None
        #: SendMessageHooks, called around every send attempt (``registerSendMessageHook``)
        self.send_hooks: list[SendMessageHook] = []
        #: message trace (``enableMsgTrace``/``customizedTraceTopic``): None when off
        self.trace_dispatcher: AsyncioTraceDispatcher | None = None
        if enable_msg_trace:
            from rocketq.aio.trace import AsyncioTraceDispatcher

            self.trace_dispatcher = AsyncioTraceDispatcher(cfg.producer_group, "PRODUCE", custom_trace_topic)
            self.send_hooks.append(SendMessageTraceHookImpl(self.trace_dispatcher))

    # ================================================================== lifecycle
    @property
    def state(self) -> ServiceState:
        return self._state

    @property
    def client_id(self) -> str:
        return self._running().client_id

    async def start(self) -> None:
        """Start the client instance's tasks on the running loop."""
        self._state.check_startable("producer")
        self._state = ServiceState.START_FAILED
        ccfg = dataclasses.replace(
            self.client_config, instance_name=change_instance_name_to_pid(self.client_config.instance_name)
        )
        self.client_config = ccfg
        instance = AsyncClientInstance(ccfg, ccfg.build_client_id(), request_hooks=self._hooks)
        instance.producer = (self.config.producer_group, self)
        self._publish[self.config.create_topic_key] = TopicPublishInfo([], have_topic_router_info=False)
        await instance.start()
        self._instance = instance
        cfg = self.config
        if cfg.auto_batch:
            loop = asyncio.get_running_loop()
            self._accumulator = ProduceAccumulator(
                lambda msgs, done: self._send_accumulated(loop, msgs, done),
                AsyncioFutures(loop),
                max_messages=cfg.auto_batch_max_messages,
                max_bytes=cfg.auto_batch_max_bytes,
                max_in_flight=cfg.auto_batch_max_in_flight,
                max_body=auto_batch_body_limit(cfg),
            )
        self._state = ServiceState.RUNNING
        if self.trace_dispatcher is not None:
            try:
                await self.trace_dispatcher.start(self.client_config)
            except RocketqError:
                log.exception("message trace of %s could not start", cfg.producer_group)

    async def shutdown(self) -> None:
        """Flush the message trace, UNREGISTER_CLIENT everywhere, cancel the tasks, close the
        connections."""
        was_running = self._state is ServiceState.RUNNING
        self._state = ServiceState.SHUTDOWN_ALREADY
        if was_running and self.trace_dispatcher is not None:
            await self.trace_dispatcher.shutdown()
        if was_running and self._instance is not None:
            await self._instance.close()

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()

    def _running(self) -> AsyncClientInstance:
        instance = self._instance
        if self._state is not ServiceState.RUNNING or instance is None:
            raise ClientError(f"the producer service state not OK, {self._state.name}")
        return instance

    def register_send_message_hook(self, hook: SendMessageHook) -> None:
        """Add a hook called around every send attempt (``registerSendMessageHook``); it runs
        on the loop, so it must not block."""
        self.send_hooks.append(hook)

    # ================================================================== AsyncProducerInner
    def publish_topics(self) -> set[str]:
        return set(self._publish)

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None:
        self._publish[topic] = info

    # ================================================================== routes
    async def _find_publish_info(self, topic: str) -> TopicPublishInfo:
        """``tryToFindTopicPublishInfo``: cache, then the name server, then the TBW102 template."""
        instance = self._running()
        info = self._publish.get(topic)
        if info is None or not info.ok():
            self._publish.setdefault(topic, TopicPublishInfo([], have_topic_router_info=False))
            await instance.update_route(topic)
            info = self._publish[topic]
        if info.have_topic_router_info or info.ok():
            return info
        await instance.update_route(
            topic,
            default_topic=self.config.create_topic_key,
            default_queue_nums=self.config.default_topic_queue_nums,
        )
        return self._publish[topic]

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's publish queue list in route order (``fetchPublishMessageQueues``)."""
        validate_topic(topic)
        info = await self._find_publish_info(topic)
        if not info.ok():
            raise ClientError(f"No route info of this topic: {topic}")
        return list(info.message_queue_list)

    async def _broker_addr(self, mq: MessageQueue) -> str:
        """The master of ``mq``'s broker, the route fetched once when it is unknown."""
        return await self._running().master_of(mq)

    # ================================================================== sending
    async def send(
        self,
        msg: Message | Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> SendResult:
        """Send and await the broker's answer (``DefaultMQProducer.send``); a list is a batch.

        With ``config.auto_batch``, single small messages sent while a batch of their topic is
        in flight leave together as the next batch (each still gets its own SendResult).
        ``client_config.metrics`` (when set) sees each send's latency and outcome.
        """
        metrics = self.client_config.metrics
        if metrics is not None:
            return await self._send_measured(metrics, msg, queue, selector, arg, timeout_ms)
        fut = self._accumulated(msg, queue, selector, timeout_ms)
        if fut is not None:  # one future per message: no coroutine of ours between
            return await fut
        result = await self._send(msg, False, queue, selector, arg, timeout_ms)
        assert result is not None
        return result

    def send_async(
        self,
        msg: Message | Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> asyncio.Future[SendResult]:
        """Start a send and return its future at once (``DefaultMQProducer.send`` with a
        ``SendCallback``: add a done-callback, or await it later). Same semantics as
        :meth:`send`; for many sends in flight it is the cheap form: an auto-batched message
        costs one future (no task), where ``create_task(send(...))`` costs a task more.

        A message that fails the message checks raises :class:`IllegalArgumentError` at once
        (as ``Producer.send_async``); every other error comes through the future. Cancelling
        the future stops waiting, not the send (see the timeout contract in the module
        docstring).
        """
        if self.client_config.metrics is None:
            fut = self._accumulated(msg, queue, selector, timeout_ms)
            if fut is not None:
                return fut
        if isinstance(msg, Message):
            check_message(msg, self.config)
        return asyncio.get_running_loop().create_task(
            self.send(msg, queue=queue, selector=selector, arg=arg, timeout_ms=timeout_ms)
        )

    def _accumulated(
        self,
        msg: Message | Sequence[Message],
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        timeout_ms: int | None,
    ) -> asyncio.Future[SendResult] | None:
        """The message's future in the auto-batch accumulator, or None when it does not go
        that way (no auto_batch, an explicit queue/selector/timeout, a batch, a delayed or
        retry message, or a body that would be compressed)."""
        acc = self._accumulator
        if acc is None or queue is not None or selector is not None or timeout_ms is not None:
            return None
        if self._state is ServiceState.RUNNING:
            fut = acc.offer(msg)  # a message of a topic batched before: its topic checked then
            if fut is not None:
                return fut
        if (
            not isinstance(msg, Message)
            or not ProduceAccumulator.eligible(msg)
            or len(msg.body) >= acc.max_body
        ):
            return None
        check_message(msg, self.config)
        self._running()
        return acc.add(msg)

    async def _send_measured(
        self,
        metrics: ClientMetrics,
        msg: Message | Sequence[Message],
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        arg: object,
        timeout_ms: int | None,
    ) -> SendResult:
        """:meth:`send` reporting its latency and outcome to ``metrics``."""
        started, ok = time.perf_counter(), False
        try:
            fut = self._accumulated(msg, queue, selector, timeout_ms)
            result = (
                await fut
                if fut is not None
                else await self._send(msg, False, queue, selector, arg, timeout_ms)
            )
            assert result is not None
            ok = result.status is SendStatus.SEND_OK
        finally:
            cost = (time.perf_counter() - started) * 1000.0
            safely(lambda: metrics.on_send(topic_of(msg), cost, ok))
        return result

    async def request(
        self,
        msg: Message,
        timeout_ms: int,
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
    ) -> Message:
        """Send ``msg`` and await its reply (``DefaultMQProducer.request``).

        The message gets ``CORRELATION_ID``, ``REPLY_TO_CLIENT`` and ``TTL``; the responder
        answers with :func:`rocketq.client.create_reply_message` sent by any producer, and the
        broker pushes the reply over this client's connection. Raises
        :class:`RequestTimeoutError` when no reply came within ``timeout_ms`` (the request
        may still be answered later; that answer is dropped) and :class:`ClientError` when
        the request could not be sent (the cause chained).
        """
        check_message(msg, self.config)
        instance = self._running()
        begin = self._clock_ms()
        cid = stamp_request(msg, instance.client_id, timeout_ms)
        if instance.topic_route_data(msg.topic) is None:
            # a reply is pushed over the connection the broker knows from our heartbeat
            await self._find_publish_info(msg.topic)
            await instance.send_heartbeat_to_all_brokers()
        reply = instance.requests.put(cid)
        try:
            try:
                await self._send(msg, False, queue, selector, arg, timeout_ms - (self._clock_ms() - begin))
            except RocketqError as exc:
                raise request_send_error(msg.topic, exc) from exc
            left_s = (timeout_ms - (self._clock_ms() - begin)) / 1000.0
            try:
                return await wait_for(reply, left_s)
            except asyncio.TimeoutError:
                raise reply_timeout_error(msg.topic, timeout_ms) from None
        finally:
            instance.requests.remove(cid)

    async def _send_now(self, msg: Message | Sequence[Message]) -> SendResult:
        """A send past the accumulator (a single message, no explicit queue)."""
        result = await self._send(msg, False, None, None, None, None)
        assert result is not None
        return result

    def _send_accumulated(
        self, loop: asyncio.AbstractEventLoop, msgs: list[Message], done: BatchDone
    ) -> None:
        """The accumulator's send of one message, or of a batch of messages it took in (each
        checked by :meth:`send_async`, eligible, one topic, one WAIT value); ``done`` gets the
        outcome on the loop."""
        prep = (
            prepare_message(msgs[0], self.config)
            if len(msgs) == 1
            else prepare_checked_batch(msgs, self.config)
        )
        task = loop.create_task(self._send(msgs, False, None, None, None, None, prep))

        def finished(t: asyncio.Task[SendResult | None]) -> None:
            if t.cancelled():
                done(None, asyncio.CancelledError())
            elif (exc := t.exception()) is not None:
                done(None, exc)
            else:
                done(t.result(), None)

        task.add_done_callback(finished)

    async def send_oneway(
        self,
        msg: Message | Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        selector: SelectorLike | None = None,
        arg: object = None,
    ) -> None:
        """Send without waiting for any answer (``sendOneway``): one attempt, no result."""
        await self._send(msg, True, queue, selector, arg, None)

    async def _send(
        self,
        msg: Message | Sequence[Message],
        oneway: bool,
        queue: MessageQueue | None,
        selector: SelectorLike | None,
        arg: object,
        timeout_ms: int | None,
        prep: PreparedSend | None = None,
    ) -> SendResult | None:
        """One send (``sendDefaultImpl``/``sendSelectImpl``) of ``msg``, prepared as ``prep``
        when the caller has done that already."""
        self._running()
        timeout = self.config.send_msg_timeout_ms if timeout_ms is None else timeout_ms
        begin = self._clock_ms()
        if prep is None:
            prep = prepare_send(msg, self.config)
        explicit = check_explicit_queue(prep.topic, queue, selector)
        if explicit is None and selector is not None:
            info = await self._find_publish_info(prep.topic)
            explicit = select_with(info, prep.topic, selector, msg, arg)
        if explicit is not None:
            if self._clock_ms() - begin >= timeout:
                raise RequestTimeoutError("sendSelectImpl call timeout")
            return await self._send_kernel(prep, explicit, oneway, timeout - (self._clock_ms() - begin))
        known = self._publish.get(prep.topic)  # known and usable on every send but the first
        info = known if known is not None and known.ok() else await self._find_publish_info(prep.topic)
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
            retries=0 if oneway else self.config.retry_times_when_send_failed,
        )
        # the async twin of SendAttempts.run (its kernel is awaited)
        while (mq := attempts.next_queue()) is not None:
            start = attempts.started_ms  # next_queue's clock read (beginTimestampPrev)
            try:
                result = await self._send_kernel(prep, mq, oneway, attempts.remaining_ms(start))
            except (RemotingError, BrokerError) as exc:
                attempts.failed(mq, start, exc)
                continue
            if attempts.succeeded(mq, start, result):
                return result
        raise attempts.give_up()

    async def _send_kernel(
        self, prep: PreparedSend, mq: MessageQueue, oneway: bool, timeout_ms: int
    ) -> SendResult | None:
        """``sendKernelImpl``: one attempt to one queue."""
        instance = self._running()
        # the route is known on every send but the first: no coroutine for the lookup then
        addr = instance.find_broker_address_in_publish(mq.broker_name) or await instance.master_of(mq)
        api = instance.api
        hooks = self.send_hooks
        remoting = api.remoting
        if not hooks and not oneway and not remoting.signs_requests:
            # as the blocking producer's hot path: the frame written straight from the
            # prepared send (send_prep.send_frame_of), the answer read straight into the
            # SendResult (send_prep.send_result_of)
            framed = send_frame_for(
                remoting.next_opaque, prep, mq, self.config, api.language, api.serialize_type
            )
            if framed is not None:
                frame, opaque, code = framed
                response = await remoting.invoke_frame(addr, frame, opaque, code, timeout_ms)
                return send_result_of(response, mq, prep.uniq_id, addr)
        # the request straight from the prepared send, the answer straight into the
        # SendResult (send_prep.send_request_of / send_result_of)
        request = send_request_of(prep, mq, self.config, api.language, api.serialize_type)
        hook_ctx = hooks_before(hooks, self.config.producer_group, prep, mq, addr) if hooks else None
        result: SendResult | None = None
        try:
            if not oneway:
                response = await api.remoting.invoke(addr, request, timeout_ms)
                result = send_result_of(response, mq, prep.uniq_id, addr)
            else:
                await api.remoting.invoke_oneway(addr, request)
        except RocketqError as exc:
            if hook_ctx is not None:
                hooks_after(hooks, hook_ctx, None, exc)
            raise
        if hook_ctx is not None:
            hooks_after(hooks, hook_ctx, result, None)
        return result
