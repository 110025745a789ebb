"""``PeriodicService``: the first run after ``initial_s``, then every ``interval_s``; a failing
run is logged and the schedule goes on; ``shutdown`` ends it."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from rocketq.common.service_thread import PeriodicService


def test_runs_after_the_initial_delay_then_on_schedule_through_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs: list[float] = []
    third = threading.Event()

    def task() -> None:
        runs.append(time.monotonic())
        if len(runs) == 3:
            third.set()
        if len(runs) == 1:
            raise ValueError("first run fails")

    service = PeriodicService("periodic-test", 0.02, task, initial_s=0.2)
    started = time.monotonic()
    with caplog.at_level(logging.ERROR):
        service.start()
        try:
            assert third.wait(5.0)
        finally:
            service.shutdown()
    assert runs[0] - started >= 0.15  # not before the initial delay
    assert not service.is_alive
    assert any("first run fails" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)
    count = len(runs)
    # the thread is joined (not alive, asserted above): nothing can run after shutdown
    assert len(runs) == count


def test_shutdown_during_the_initial_delay_never_runs_the_task() -> None:
    runs: list[int] = []
    service = PeriodicService("periodic-idle", 0.01, lambda: runs.append(1), initial_s=10.0)
    service.start()
    service.shutdown()
    assert runs == []
    assert not service.is_alive
