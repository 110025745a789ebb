"""SendAttempts: the attempt loop both producers share (``sendDefaultImpl``), without any I/O."""

from __future__ import annotations

import itertools

import pytest

from rocketq.client.api_results import SendResult, SendStatus
from rocketq.client.config import ProducerConfig
from rocketq.client.latency import MQFaultStrategy, TopicPublishInfo
from rocketq.client.send_prep import SendAttempts
from rocketq.errors import BrokerError, ConnectError, RequestTimeoutError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.message_queue import MessageQueue

QUEUES = [MessageQueue("T", b, q) for b in ("broker-a", "broker-b") for q in range(2)]


def _attempts(now: list[int], *, retries: int = 2, timeout: int = 3000, **cfg: object) -> SendAttempts:
    info = TopicPublishInfo(QUEUES, start=0)
    config = ProducerConfig(**cfg)  # type: ignore[arg-type]
    fault = MQFaultStrategy(clock_ms=lambda: now[0])
    return SendAttempts(fault, info, config, "T", now[0], timeout, lambda: now[0], retries=retries)


def _result(mq: MessageQueue, status: SendStatus) -> SendResult:
    return SendResult(status=status, msg_id="m", offset_msg_id="o", message_queue=mq, queue_offset=0)


def test_a_transport_failure_moves_to_another_broker_then_gives_up_with_the_count() -> None:
    now = [0]
    attempts = _attempts(now)
    tried = []
    while (mq := attempts.next_queue()) is not None:
        tried.append(mq.broker_name)
        attempts.failed(mq, now[0], ConnectError("down", addr="x"))
    assert len(tried) == 3
    assert all(a != b for a, b in itertools.pairwise(tried))  # never the broker that just failed
    err = attempts.give_up()
    assert isinstance(err, ConnectError)
    assert "Send [3] times" in str(err)


def test_a_non_retriable_broker_error_is_raised_at_once() -> None:
    now = [0]
    attempts = _attempts(now)
    mq = attempts.next_queue()
    assert mq is not None
    with pytest.raises(BrokerError):
        attempts.failed(mq, 0, BrokerError(ResponseCode.MESSAGE_ILLEGAL, "illegal"))


def test_the_timeout_bounds_the_whole_loop() -> None:
    now = [0]
    attempts = _attempts(now, timeout=100)
    mq = attempts.next_queue()
    assert mq is not None
    now[0] = 150
    attempts.failed(mq, 0, ConnectError("slow", addr="x"))
    assert attempts.next_queue() is None
    assert isinstance(attempts.give_up(), RequestTimeoutError)


@pytest.mark.parametrize("retry_another", [False, True])
def test_a_stored_but_not_ok_result_is_retried_only_when_configured(retry_another: bool) -> None:
    now = [0]
    attempts = _attempts(now, retry_another_broker_when_not_store_ok=retry_another)
    mq = attempts.next_queue()
    assert mq is not None
    final = attempts.succeeded(mq, 0, _result(mq, SendStatus.FLUSH_DISK_TIMEOUT))
    assert final is not retry_another
    if retry_another:
        nxt = attempts.next_queue()
        assert nxt is not None and nxt.broker_name != mq.broker_name
