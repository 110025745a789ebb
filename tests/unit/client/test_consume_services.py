"""Consume services against a fake host: results, send-back, offsets, orderly suspend and DLQ."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import pytest

from rocketq.client.consumer.consume_concurrently import ConsumeMessageConcurrentlyService
from rocketq.client.consumer.consume_orderly import ConsumeMessageOrderlyService
from rocketq.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeMessageContext,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeReturnType,
    classify_consume_result,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.stats import ConsumerStatsManager
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.waits import wait_until

MQ = MessageQueue("T", "broker-a", 0)


def _msgs(n: int, start: int = 0) -> list[MessageExt]:
    out = []
    for i in range(start, start + n):
        m = MessageExt(topic="T", body=f"m{i}".encode())
        m.queue_offset = i
        out.append(m)
    return out


class Hook:
    def __init__(self) -> None:
        self.before: list[int] = []
        self.after: list[tuple[int, bool, str]] = []

    def hook_name(self) -> str:
        return "test"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        self.before.append(len(context.msg_list))

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        self.after.append((len(context.msg_list), context.success, context.props["ConsumeContextType"]))


class FakeHost:
    consumer_group = "G"
    suspend_current_queue_time_millis = 10
    max_reconsume_times = 2

    def __init__(self, model: MessageModel = MessageModel.CLUSTERING, send_back_fails: bool = False) -> None:
        self.model = model
        self.stats = ConsumerStatsManager()
        self.hook = Hook()
        self.hooks = [self.hook]
        self.offsets: list[tuple[int, bool]] = []
        self.sent_back: list[tuple[int, int]] = []
        self.retried: list[int] = []
        self.send_back_fails = send_back_fails
        self.lock = threading.Lock()
        self.locks = 0
        self.pq = ProcessQueue()

    def message_model(self) -> MessageModel:
        return self.model

    def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> None:
        if self.send_back_fails:
            raise RuntimeError("broker down")
        with self.lock:
            self.sent_back.append((msg.queue_offset, delay_level))

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        with self.lock:
            self.offsets.append((offset, increase_only))

    def reset_retry_and_namespace(self, msgs: Sequence[MessageExt]) -> None:
        pass

    def schedule(self, task: Callable[[], None], delay_ms: int) -> None:
        timer = threading.Timer(min(delay_ms, 50) / 1000.0, task)
        timer.daemon = True
        timer.start()

    def process_queues(self) -> list[tuple[MessageQueue, ProcessQueue]]:
        return [(MQ, self.pq)]

    def lock_one(self, mq: MessageQueue) -> bool:
        self.locks += 1
        self.pq.locked = True
        return True

    def lock_all(self) -> None:
        self.locks += 1

    def unlock_all(self, *, oneway: bool) -> None:
        pass

    def send_to_retry_topic(self, msg: MessageExt, max_reconsume_times: int) -> None:
        with self.lock:
            self.retried.append(msg.queue_offset)


def _wait(cond: Callable[[], bool]) -> None:
    wait_until(cond, 5.0, interval_s=0.005)


def _consume_all(host: FakeHost, service: ConsumeMessageConcurrentlyService, msgs: list[MessageExt]) -> None:
    """Cache ``msgs``, submit them, wait until every one left the ProcessQueue, stop the service."""
    host.pq.put_messages(msgs)
    service.submit_consume_request(msgs, host.pq, MQ)
    _wait(lambda: host.pq.msg_count == 0)
    service.shutdown()


def test_concurrent_success_commits_and_counts() -> None:
    host = FakeHost()
    seen: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.extend(m.queue_offset for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    service = ConsumeMessageConcurrentlyService(host, listener, consume_message_batch_max_size=3)
    _consume_all(host, service, _msgs(7))
    assert sorted(seen) == list(range(7))
    assert max(o for o, _ in host.offsets) == 7
    assert all(inc for _, inc in host.offsets)
    assert sorted(n for n, _, _ in host.hook.after) == [1, 3, 3]
    assert host.stats.consume_ok_tps.get("T@G").total_sum == 7


@pytest.mark.parametrize("outcome", ["later", "none", "raise", "garbage"])
def test_concurrent_failures_are_sent_back(outcome: str) -> None:
    host = FakeHost()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> object:
        ctx.delay_level_when_next_consume = 5
        if outcome == "raise":
            raise ValueError("listener bug")
        return {"later": ConsumeConcurrentlyStatus.RECONSUME_LATER, "none": None, "garbage": 42}[outcome]

    service = ConsumeMessageConcurrentlyService(host, listener)  # type: ignore[arg-type]
    msgs = _msgs(2)
    host.pq.put_messages(msgs)
    service.submit_consume_request(msgs, host.pq, MQ)
    _wait(lambda: len(host.sent_back) == 2 and host.pq.msg_count == 0)
    service.shutdown()
    assert sorted(host.sent_back) == [(0, 5), (1, 5)]
    assert host.stats.consume_failed_tps.get("T@G").total_sum == 2
    expected = {"later": "FAILED", "none": "RETURNNULL", "raise": "EXCEPTION", "garbage": "RETURNNULL"}
    assert host.hook.after == [(1, False, expected[outcome])] * 2  # batch size 1


def test_classify_consume_result_like_consume_request_run() -> None:
    later = ConsumeConcurrentlyStatus.RECONSUME_LATER
    ok = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
    suspend = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT

    def classify(status: object, failed: object, exc: bool = False, rt: int = 5) -> tuple[object, object]:
        return classify_consume_result(  # type: ignore[type-var]
            status, failed, has_exception=exc, consume_rt_ms=rt, consume_timeout_ms=100
        )

    assert classify(None, later, exc=True) == (later, ConsumeReturnType.EXCEPTION)
    assert classify(None, suspend) == (suspend, ConsumeReturnType.RETURNNULL)
    assert classify(None, later, rt=500) == (later, ConsumeReturnType.RETURNNULL)  # no status wins
    assert classify(ok, later, rt=100) == (ok, ConsumeReturnType.TIME_OUT)  # >= the timeout
    assert classify(later, later, rt=100) == (later, ConsumeReturnType.TIME_OUT)
    assert classify(later, later) == (later, ConsumeReturnType.FAILED)
    assert classify(ok, later) == (ok, ConsumeReturnType.SUCCESS)
    assert classify(ConsumeOrderlyStatus.COMMIT, suspend) == (
        ConsumeOrderlyStatus.COMMIT,
        ConsumeReturnType.SUCCESS,
    )


@pytest.mark.parametrize(
    ("ack_index", "sent_back"),
    [(3, []), (2**31 - 1, []), (7, []), (2, [3]), (1, [2, 3]), (-1, [0, 1, 2, 3])],
)
def test_ack_index_acknowledges_a_prefix(ack_index: int, sent_back: list[int]) -> None:
    """CONSUME_SUCCESS acknowledges messages 0..ack_index and sends the rest back; at or past
    the last message (the all-acknowledged fast path of ``process_consume_result``) nothing is
    sent back, one below it retries the last message."""
    host = FakeHost()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        ctx.ack_index = ack_index
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    service = ConsumeMessageConcurrentlyService(host, listener, consume_message_batch_max_size=4)
    _consume_all(host, service, _msgs(4))
    assert sorted(o for o, _ in host.sent_back) == sent_back
    assert host.stats.consume_ok_tps.get("T@G").total_sum == 4 - len(sent_back)
    failed = host.stats.consume_failed_tps.find("T@G")
    assert (failed.total_sum if failed else 0) == len(sent_back)
    assert host.offsets == [(4, True)]


def test_failed_send_back_keeps_the_message_and_blocks_the_offset() -> None:
    host = FakeHost(send_back_fails=True)
    attempts: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        attempts.extend(m.queue_offset for m in msgs)
        if len(attempts) >= 3:
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    import rocketq.client.consumer.consume_concurrently as cc

    service = ConsumeMessageConcurrentlyService(host, listener)
    old = cc.RESUBMIT_DELAY_MS
    msgs = _msgs(1)
    host.pq.put_messages(msgs)
    try:
        cc.RESUBMIT_DELAY_MS = 10
        service.submit_consume_request(msgs, host.pq, MQ)
        _wait(lambda: host.pq.msg_count == 0)
    finally:
        cc.RESUBMIT_DELAY_MS = old
        service.shutdown()
    # the offset never moved past 0 until the message was finally consumed
    assert [o for o, _ in host.offsets] == [0, 0, 1]
    assert msgs[0].reconsume_times == 2


def test_broadcasting_failures_are_dropped() -> None:
    host = FakeHost(MessageModel.BROADCASTING)
    service = ConsumeMessageConcurrentlyService(host, lambda m, c: ConsumeConcurrentlyStatus.RECONSUME_LATER)
    msgs = _msgs(2)
    host.pq.put_messages(msgs)
    service.submit_consume_request(msgs, host.pq, MQ)
    _wait(lambda: host.pq.msg_count == 0)
    service.shutdown()
    assert host.sent_back == []


def test_dropped_queue_skips_result_processing() -> None:
    host = FakeHost()
    started = threading.Event()
    release = threading.Event()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        started.set()
        release.wait(5)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    service = ConsumeMessageConcurrentlyService(host, listener)
    msgs = _msgs(1)
    host.pq.put_messages(msgs)
    service.submit_consume_request(msgs, host.pq, MQ)
    assert started.wait(5)
    host.pq.dropped = True
    release.set()
    service.shutdown()
    assert host.offsets == []


def test_orderly_success_in_order_and_offsets_overwrite() -> None:
    host = FakeHost()
    host.pq.locked = True
    seen: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        seen.extend(m.queue_offset for m in msgs)
        return ConsumeOrderlyStatus.SUCCESS

    service = ConsumeMessageOrderlyService(host, listener, consume_message_batch_max_size=2)
    msgs = _msgs(5)
    dispatch = host.pq.put_messages(msgs)
    service.submit_consume_request(msgs, host.pq, MQ, dispatch)
    _wait(lambda: host.pq.msg_count == 0)
    service.shutdown()
    assert seen == [0, 1, 2, 3, 4]
    assert [o for o, _ in host.offsets] == [2, 4, 5]
    assert not any(inc for _, inc in host.offsets)


def test_orderly_suspend_retries_then_dlq_and_moves_on() -> None:
    host = FakeHost()
    host.pq.locked = True
    seen: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        seen.extend(m.queue_offset for m in msgs)
        if msgs[0].queue_offset == 1:
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    service = ConsumeMessageOrderlyService(host, listener)
    msgs = _msgs(3)
    service.submit_consume_request(msgs, host.pq, MQ, host.pq.put_messages(msgs))
    _wait(lambda: host.pq.msg_count == 0)
    service.shutdown()
    # offset 1 is tried max_reconsume_times + 1 times, in order, before 2 is ever seen
    assert seen == [0, 1, 1, 1, 2]
    assert host.retried == [1]
    assert service.dlq_count == 1
    assert [o for o, _ in host.offsets] == [1, 2, 3]


def test_orderly_without_lock_tries_to_lock_first() -> None:
    host = FakeHost()
    seen: list[int] = []
    service = ConsumeMessageOrderlyService(
        host, lambda msgs, ctx: (seen.extend(m.queue_offset for m in msgs), ConsumeOrderlyStatus.SUCCESS)[1]
    )
    msgs = _msgs(2)
    service.submit_consume_request(msgs, host.pq, MQ, host.pq.put_messages(msgs))
    _wait(lambda: host.pq.msg_count == 0)
    service.shutdown()
    assert host.locks >= 1
    assert seen == [0, 1]


def test_the_first_batch_runs_on_the_calling_thread_stamped_for_the_consume_timeout() -> None:
    """``submit_keeping_first`` + ``consume_here`` (the push consumer's consume thread that
    handled the pull answer): the first batch runs on the caller, the others on the pool;
    the caller's batch carries CONSUME_START_TIME while its listener runs (so cleanExpiredMsg
    sees it), and the offsets end past every message."""
    host = FakeHost()
    now = [1_000_000_000]
    threads: dict[int, int] = {}
    seen_expired: list[list[int]] = []
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        with lock:
            threads[msgs[0].queue_offset] = threading.get_ident()
        if msgs[0].queue_offset == 0:
            later = now[0] + 61_000
            seen_expired.append([m.queue_offset for m in host.pq.expired_messages(60_000, later)])
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    service = ConsumeMessageConcurrentlyService(
        host, listener, consume_message_batch_max_size=3, consume_timeout_ms=60_000, clock_ms=lambda: now[0]
    )
    msgs = _msgs(7)
    host.pq.put_messages(msgs)
    mine = service.submit_keeping_first(msgs, host.pq, MQ)
    assert [m.queue_offset for m in mine] == [0, 1, 2]
    service.consume_here(mine, host.pq, MQ)
    _wait(lambda: host.pq.msg_count == 0)
    assert threads[0] == threading.get_ident()
    assert threading.get_ident() not in (threads[3], threads[6])
    assert seen_expired and seen_expired[0][:3] == [0, 1, 2]
    assert max(o for o, _ in host.offsets) == 7
    service.shutdown()
    # after shutdown a kept batch is dropped like a queued one
    late = _msgs(1, 7)
    host.pq.put_messages(late)
    service.consume_here(late, host.pq, MQ)
    assert 7 not in threads


def test_consume_timeout_sends_back_and_removes_the_oldest_stuck_messages() -> None:
    host = FakeHost()
    now = [1_000_000_000]
    service = ConsumeMessageConcurrentlyService(
        host,
        lambda m, c: ConsumeConcurrentlyStatus.CONSUME_SUCCESS,
        consume_timeout_ms=60_000,
        clock_ms=lambda: now[0],
    )
    msgs = _msgs(3)
    host.pq.put_messages(msgs)
    msgs[0].put_properties_lazily({"CONSUME_START_TIME": str(now[0] - 61_000)})  # stuck for 61 s
    msgs[1].put_properties_lazily({"CONSUME_START_TIME": str(now[0] - 1_000)})
    service._clean_expired_messages()
    service.shutdown()
    assert host.sent_back == [(0, 3)]  # delay level 3, like cleanExpiredMsg
    assert host.pq.min_offset() == 1
    assert host.offsets == [(1, True)]


def test_a_hook_keeps_its_own_state_between_before_and_after() -> None:
    """``mq_trace_context`` (Java's ``mqTraceContext``) holds any object a hook puts there; the
    compiled ``ConsumeMessageContext`` keeps it from the before- to the after-call."""

    class TraceHook(Hook):
        def __init__(self) -> None:
            super().__init__()
            self.state: list[object] = []

        def consume_message_before(self, context: ConsumeMessageContext) -> None:
            assert context.mq_trace_context is None
            context.mq_trace_context = {"span": len(context.msg_list)}

        def consume_message_after(self, context: ConsumeMessageContext) -> None:
            self.state.append(context.mq_trace_context)

    host = FakeHost()
    hook = TraceHook()
    host.hooks = [hook]
    service = ConsumeMessageConcurrentlyService(
        host, lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS, consume_message_batch_max_size=2
    )
    _consume_all(host, service, _msgs(2))
    assert hook.state == [{"span": 2}]
