"""ConsumePool: the consume services' bounded worker pool (calls run, bounded threads, failures
logged, shutdown drops what has not started and refuses new calls)."""

from __future__ import annotations

import logging
import threading

import pytest

from rocketq.client.consumer.listener import ConsumePool, shutdown_consume_pool
from rocketq.testing.waits import wait_until


def test_calls_run_on_at_most_max_workers_named_threads() -> None:
    pool = ConsumePool(3, "ConsumeMessageThread_g")
    release = threading.Event()
    started: list[str] = []
    lock = threading.Lock()

    def call(i: int) -> None:
        with lock:
            started.append(threading.current_thread().name)
        release.wait(5)

    for i in range(10):
        pool.submit(call, i)
    wait_until(lambda: len(started) == 3, 5.0, interval_s=0.005)
    assert len(pool.workers()) == 3  # the other 7 wait in the queue
    assert {t.name for t in pool.workers()} == {f"ConsumeMessageThread_g_{i}" for i in range(3)}
    release.set()
    wait_until(lambda: len(started) == 10, 5.0, interval_s=0.005)
    assert set(started) <= {t.name for t in pool.workers()}
    shutdown_consume_pool(pool, 5000)
    assert not any(t.is_alive() for t in pool.workers())


def test_an_idle_worker_is_reused_rather_than_a_new_one_started() -> None:
    pool = ConsumePool(20, "P")
    done = threading.Semaphore(0)
    for _ in range(50):
        pool.submit(done.release)
        assert done.acquire(timeout=5)
        wait_until(lambda: pool.idle_workers == len(pool.workers()), 5.0, interval_s=0.001)  # back waiting
    assert len(pool.workers()) == 1
    shutdown_consume_pool(pool, 5000)


def test_a_failing_call_is_logged_and_the_worker_survives(caplog: pytest.LogCaptureFixture) -> None:
    pool = ConsumePool(1, "P")
    ran = threading.Event()

    def boom() -> None:
        raise ValueError("listener bug")

    with caplog.at_level(logging.ERROR):
        pool.submit(boom)
        pool.submit(ran.set)
        assert ran.wait(5)
    assert any("a consume call failed" in r.getMessage() and r.exc_info for r in caplog.records)
    assert len(pool.workers()) == 1
    shutdown_consume_pool(pool, 5000)


def test_shutdown_drops_queued_calls_and_refuses_new_ones() -> None:
    pool = ConsumePool(1, "P")
    running = threading.Event()
    release = threading.Event()
    later: list[int] = []
    pool.submit(lambda: (running.set(), release.wait(5)))
    for i in range(5):
        pool.submit(later.append, i)
    assert running.wait(5)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(later.append, 99)
    release.set()
    shutdown_consume_pool(pool, 5000)  # joins the worker after its running call
    assert later == []
    assert not pool.workers()[0].is_alive()


def test_submit_if_free_takes_a_call_only_while_a_worker_can_run_it_now() -> None:
    """The push consumer hands a pull answer to a consume thread only when one is free;
    otherwise (every worker busy, the pool at its bound) the caller keeps the call."""
    pool = ConsumePool(1, "P")
    running = threading.Event()
    release = threading.Event()
    ran: list[str] = []
    assert pool.submit_if_free(lambda: (running.set(), release.wait(5)))  # room for a worker
    assert running.wait(5)
    assert not pool.submit_if_free(ran.append, "busy")  # the only worker is busy
    release.set()
    wait_until(lambda: pool.idle_workers == 1, 5.0, interval_s=0.001)
    assert pool.submit_if_free(ran.append, "idle")  # the idle worker takes it
    wait_until(lambda: ran == ["idle"], 5.0, interval_s=0.001)
    shutdown_consume_pool(pool, 5000)
    assert not pool.submit_if_free(ran.append, "after shutdown")
    assert ran == ["idle"]


def test_a_shutdown_racing_a_worker_start_never_joins_an_unstarted_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The window: submit made a worker and is starting it while a shutdown lists the workers
    # to join them ("cannot join thread before it is started" when the list came first).
    starting, go = threading.Event(), threading.Event()
    real_start = threading.Thread.start

    def slow_start(self: threading.Thread) -> None:
        if self.name.startswith("Racy_"):
            starting.set()
            go.wait(5)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", slow_start)
    pool = ConsumePool(1, "Racy")
    errors: list[BaseException] = []

    def shut() -> None:
        try:
            shutdown_consume_pool(pool, 5000)
        except BaseException as exc:  # the failure under test, reported below
            errors.append(exc)

    submitter = threading.Thread(target=pool.submit, args=(lambda: None,), name="submitter")
    submitter.start()
    assert starting.wait(5)
    shutter = threading.Thread(target=shut, name="shutter")
    shutter.start()
    shutter.join(0.2)  # the shutdown gets its chance to list the worker before it starts
    go.set()
    submitter.join(5)
    shutter.join(5)
    assert not shutter.is_alive() and errors == []
    assert [t.is_alive() for t in pool.workers()] == [False]
