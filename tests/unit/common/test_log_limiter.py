from __future__ import annotations

import logging

import pytest

from rocketq.common.log_limiter import LogLimiter


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_repeats_within_the_interval_are_counted_and_reported_on_the_next_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    limiter = LogLimiter(logging.getLogger("rocketq.test.limiter"), interval_s=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="rocketq.test.limiter"):
        assert limiter.warning("bad-frame", "bad frame from %s", "a")
        for _ in range(5):
            clock.now += 1.0
            assert not limiter.warning("bad-frame", "bad frame from %s", "a")
        clock.now += 10.0
        assert limiter.warning("bad-frame", "bad frame from %s", "b")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["bad frame from a", "bad frame from b (5 similar suppressed)"]
    assert limiter.suppressed_total == 5


def test_keys_are_limited_separately_and_the_table_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    limiter = LogLimiter(logging.getLogger("rocketq.test.limiter2"), max_keys=2, clock=clock)
    with caplog.at_level(logging.WARNING, logger="rocketq.test.limiter2"):
        assert limiter.warning("a", "a")
        assert limiter.warning("b", "b")
        assert not limiter.warning("a", "a")
        assert limiter.warning("c", "c")  # forgets "a", the oldest let through
        assert not limiter.warning("b", "b")
        assert limiter.warning("a", "a")  # forgotten: logged again, its old count gone with it
    assert [r.getMessage() for r in caplog.records] == ["a", "b", "c", "a"]


def test_a_disabled_level_is_neither_logged_nor_counted() -> None:
    logger = logging.getLogger("rocketq.test.limiter3")
    logger.setLevel(logging.ERROR)
    try:
        limiter = LogLimiter(logger)
        assert not limiter.info("k", "x")
        assert limiter.suppressed_total == 0
    finally:
        logger.setLevel(logging.NOTSET)


@pytest.mark.parametrize(("interval", "keys"), [(-1.0, 1), (1.0, 0)])
def test_bad_settings_are_refused(interval: float, keys: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        LogLimiter(logging.getLogger("x"), interval_s=interval, max_keys=keys)
