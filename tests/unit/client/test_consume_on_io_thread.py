"""``consume_on_io_thread``: when a push consumer stops running its batches on the remoting I/O
thread, and for how long (the pause's growth and its end). Pure logic on an unstarted
consumer; the behaviour with a real broker is in tests/integration/test_push_consumer.py."""

from __future__ import annotations

import time

import pytest

from rocketq.client.consumer import push
from rocketq.client.consumer.push import PushConsumer


def _consumer() -> PushConsumer:
    return PushConsumer("g_inline", namesrv_addr="127.0.0.1:1")


def _pause(c: PushConsumer) -> float:
    """The pause now running, in seconds from now (0 when none)."""
    return max(0.0, c._inline_paused_until - time.monotonic())


def test_a_batch_that_did_not_wait_keeps_the_io_thread() -> None:
    c = _consumer()
    assert c.config.consume_on_io_thread is True  # the default
    c._inline_waited(push._INLINE_WAITED_S / 2)
    assert c._inline_now() and c._inline_pauses == 0


def test_a_batch_that_waited_pauses_growing_while_each_one_tried_after_waits_too() -> None:
    c = _consumer()
    waited = push._INLINE_WAITED_S * 5
    pauses = []
    for _ in range(12):
        c._inline_waited(waited)
        assert not c._inline_now()
        pauses.append(c._inline_pause_s)
    assert pauses[:5] == pytest.approx([0.1, 0.4, 1.6, 6.4, 25.6])
    assert pauses[-1] == push._INLINE_PAUSE_MAX_S and max(pauses) == push._INLINE_PAUSE_MAX_S
    assert _pause(c) == pytest.approx(push._INLINE_PAUSE_MAX_S, abs=1)
    assert c._inline_pauses == 12
    # the pause ends on its own; a batch tried then that did not wait ends the growth
    c._inline_paused_until = time.monotonic() - 1
    assert c._inline_now()
    c._inline_waited(0.0)
    c._inline_waited(waited)
    assert c._inline_pause_s == push._INLINE_PAUSE_MIN_S


def test_a_batch_still_running_when_the_next_answer_arrives_pauses_at_once() -> None:
    c = _consumer()
    c._inline_since = time.monotonic() - push._INLINE_OVERDUE_S / 4
    assert c._inline_now()  # running, not for long
    c._inline_since = time.monotonic() - push._INLINE_OVERDUE_S * 2
    assert not c._inline_now()
    assert c._inline_pauses == 1 and _pause(c) > 0
