"""ConsumePool lanes on the shared ConsumeWorkers: each consumer's bound, names and shutdown
kept while the threads are shared (calls run, a lane's calls beyond its bound wait in its own
backlog, another lane is never starved, failures logged, shutdown drops only its lane's queued
calls, the set grows to the sum of the bounds at most and ends when no lane is left)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator

import pytest

from rocketq.client.consumer.listener import (
    ConsumePool,
    ConsumeWorkers,
    shared_consume_workers,
    shutdown_consume_pool,
)
from rocketq.testing.waits import wait_until


class Recorder:
    """A lane whose calls note their thread's name and the lane's concurrency, and block until
    released."""

    def __init__(self, workers: ConsumeWorkers, cap: int, prefix: str) -> None:
        self.lane = ConsumePool(cap, prefix, workers)
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.started: list[str] = []
        self.threads: list[threading.Thread] = []
        self.done: list[int] = []
        self.running = 0
        self.max_running = 0

    def call(self, i: int) -> None:
        with self.lock:
            self.started.append(threading.current_thread().name)
            self.threads.append(threading.current_thread())
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        self.release.wait(10)
        with self.lock:
            self.running -= 1
            self.done.append(i)

    def submit(self, n: int) -> None:
        for i in range(n):
            self.lane.submit(self.call, i)


def _started(*recorders: tuple[Recorder, int]) -> None:
    """Wait until each recorder's lane has started (exactly, in the end) so many calls."""
    wait_until(lambda: all(len(r.started) >= n for r, n in recorders), 5.0, "the calls", interval_s=0.005)


@pytest.fixture
def workers() -> Iterator[ConsumeWorkers]:
    """A set of its own per test (the process-wide one may carry other tests' lanes)."""
    ws = ConsumeWorkers()
    yield ws
    for thread in ws.threads():
        thread.join(5)


def _all_end(ws: ConsumeWorkers) -> None:
    wait_until(lambda: not ws.threads(), 5.0, "every worker to end", interval_s=0.005)


def _close(ws: ConsumeWorkers, *lanes: ConsumePool) -> None:
    """Shut the lanes down (each waiting for its running calls); then no worker is left."""
    for lane in lanes:
        shutdown_consume_pool(lane, 5000)
    _all_end(ws)


def test_a_lanes_bound_holds_while_another_lane_runs(workers: ConsumeWorkers) -> None:
    a, b = Recorder(workers, 2, "ConsumeMessageThread_a"), Recorder(workers, 3, "ConsumeMessageThread_b")
    a.submit(6)
    _started((a, 2))
    assert a.lane.running == 2 and a.lane.backlog == 4  # the rest wait in a's own backlog
    b.release.set()  # b's listener does not block: all its calls run while a's are stuck
    b.submit(10)
    wait_until(lambda: len(b.done) == 10, 5.0, "every call of b", interval_s=0.005)
    assert len(a.started) == 2 and a.max_running == 2
    assert len(workers.threads()) <= workers.capacity == 5
    a.release.set()
    wait_until(lambda: len(a.done) == 6, 5.0, "every call of a", interval_s=0.005)
    assert a.max_running == 2 and b.max_running <= 3
    assert sorted(a.done) == list(range(6)) and sorted(b.done) == list(range(10))
    _close(workers, a.lane, b.lane)


def test_a_call_runs_under_its_consumers_thread_names(workers: ConsumeWorkers) -> None:
    a, b = Recorder(workers, 3, "ConsumeMessageThread_ga"), Recorder(workers, 1, "ConsumeMessageThread_gb")
    a.submit(3)
    b.submit(1)
    _started((a, 3), (b, 1))
    assert sorted(a.started) == [f"ConsumeMessageThread_ga_{i}" for i in range(3)]
    assert b.started == ["ConsumeMessageThread_gb_0"]
    a.release.set()
    b.release.set()
    wait_until(lambda: len(a.done) == 3 and len(b.done) == 1, 5.0, "the calls to end", interval_s=0.005)
    # the set's threads are reused across lanes: b's later calls carry b's name, no thread is added
    b.started.clear()
    b.done.clear()
    b.submit(5)
    wait_until(lambda: len(b.done) == 5, 5.0, "b's later calls", interval_s=0.005)
    assert set(b.started) == {"ConsumeMessageThread_gb_0"}
    assert len(workers.threads()) == 4  # no thread beyond the 4 calls that ran at once
    _close(workers, a.lane, b.lane)


def test_the_set_grows_to_the_sum_of_the_bounds_and_no_further(workers: ConsumeWorkers) -> None:
    a, b = Recorder(workers, 2, "A"), Recorder(workers, 3, "B")
    a.submit(8)
    b.submit(8)
    _started((a, 2), (b, 3))
    assert len(workers.threads()) == workers.capacity == 5
    assert a.lane.backlog == 6 and b.lane.backlog == 5
    a.release.set()
    b.release.set()
    wait_until(lambda: len(a.done) == 8 and len(b.done) == 8, 5.0, "every call", interval_s=0.005)
    assert len(workers.threads()) == 5
    shutdown_consume_pool(a.lane, 5000)
    # a's bound left the set: the idle workers beyond b's bound end
    wait_until(lambda: len(workers.threads()) == 3, 5.0, "workers beyond b's bound to end", interval_s=0.005)
    assert workers.capacity == 3
    _close(workers, b.lane)


def test_a_worker_runs_its_lanes_backlog_itself(workers: ConsumeWorkers) -> None:
    a = Recorder(workers, 1, "A")
    a.submit(5)
    a.release.set()
    wait_until(lambda: len(a.done) == 5, 5.0, "every call", interval_s=0.005)
    assert a.done == list(range(5))  # in order: one at a time
    assert len({id(t) for t in a.threads}) == 1  # the thread that ran the first ran the rest
    _close(workers, a.lane)


def test_an_idle_worker_is_reused_rather_than_a_new_one_started(workers: ConsumeWorkers) -> None:
    lane = ConsumePool(20, "P", workers)
    done = threading.Semaphore(0)
    for _ in range(50):
        lane.submit(done.release)
        assert done.acquire(timeout=5)
        wait_until(lambda: lane.running == 0, 5.0, interval_s=0.001)  # back waiting
    assert len(workers.threads()) == 1
    _close(workers, lane)


def test_a_failing_call_is_logged_and_the_worker_survives(
    workers: ConsumeWorkers, caplog: pytest.LogCaptureFixture
) -> None:
    lane = ConsumePool(1, "P", workers)
    ran = threading.Event()

    def boom() -> None:
        raise ValueError("listener bug")

    with caplog.at_level(logging.ERROR):
        lane.submit(boom)
        lane.submit(ran.set)
        assert ran.wait(5)
    assert any("P_0: a consume call failed" in r.getMessage() and r.exc_info for r in caplog.records)
    assert len(workers.threads()) == 1
    _close(workers, lane)


def test_shutdown_drops_only_its_lanes_queued_calls(workers: ConsumeWorkers) -> None:
    a, b = Recorder(workers, 1, "A"), Recorder(workers, 1, "B")
    lane_a, lane_b = a.lane, b.lane
    a.submit(4)
    b.submit(4)
    _started((a, 1), (b, 1))
    lane_a.shutdown()
    with pytest.raises(RuntimeError):
        lane_a.submit(a.call, 99)
    assert not lane_a.submit_if_free(a.call, 99)
    assert lane_a.backlog == 0 and lane_b.backlog == 3
    a.release.set()
    assert lane_a.wait_drained(5)
    assert a.done == [0]  # its running call ended, its queued ones were dropped
    b.release.set()
    wait_until(lambda: len(b.done) == 4, 5.0, "every call of b", interval_s=0.005)
    assert b.done == [0, 1, 2, 3]
    lane_b.submit(b.call, 4)  # b still takes calls
    wait_until(lambda: len(b.done) == 5, 5.0, "b's later call", interval_s=0.005)
    _close(workers, lane_b)


def test_shutdowns_bounded_wait_covers_only_its_lanes_running_calls(
    workers: ConsumeWorkers, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = Recorder(workers, 1, "ConsumeMessageThread_stuck"), Recorder(workers, 1, "B")
    lane_a, lane_b = a.lane, b.lane
    a.submit(1)
    b.submit(1)
    _started((a, 1), (b, 1))
    b.release.set()  # b's running call ends: its shutdown does not wait for a's
    wait_until(lambda: b.done == [0], 5.0, "b's call", interval_s=0.005)
    with caplog.at_level(logging.WARNING):
        shutdown_consume_pool(lane_b, 60_000)
        assert not caplog.records
        shutdown_consume_pool(lane_a, 50)  # a's listener is stuck: the wait gives up
    assert any(
        "1 consume calls of ConsumeMessageThread_stuck still running" in r.getMessage()
        for r in caplog.records
    )
    a.release.set()
    assert lane_a.wait_drained(5)
    _all_end(workers)


def test_a_listener_shutting_its_own_consumer_down_waits_for_the_others_only(workers: ConsumeWorkers) -> None:
    other = Recorder(workers, 2, "Self")
    lane = other.lane
    other.submit(1)  # a call of the same lane, blocked until released
    _started((other, 1))
    running_after: list[int] = []
    returned = threading.Event()

    def call() -> None:
        shutdown_consume_pool(lane, 60_000)
        running_after.append(lane.running)
        returned.set()

    lane.submit(call)
    # the shutdown waits (for the other call): one waiter on the lane's condition
    wait_until(lambda: len(lane._call_ended._waiters) == 1, 5.0, "the shutdown to wait", interval_s=0.005)
    assert not returned.is_set()
    other.release.set()
    assert returned.wait(5)  # not after 60 s: it does not wait for itself
    assert running_after == [1] and other.done == [0]
    assert lane.wait_drained(5)
    _all_end(workers)


def test_submit_if_free_takes_a_call_only_under_the_lanes_bound(workers: ConsumeWorkers) -> None:
    """The push consumer hands a pull answer to a consume thread only when its lane can run it
    now; otherwise the caller keeps the call."""
    lane = ConsumePool(1, "P", workers)
    other = ConsumePool(4, "O", workers)  # room in the set, not in P's lane
    running = threading.Event()
    release = threading.Event()
    ran: list[str] = []
    assert lane.submit_if_free(lambda: (running.set(), release.wait(5)))
    assert running.wait(5)
    assert not lane.submit_if_free(ran.append, "busy")  # P's one call runs
    assert other.submit_if_free(ran.append, "other")
    release.set()
    wait_until(lambda: lane.running == 0, 5.0, interval_s=0.001)
    assert lane.submit_if_free(ran.append, "idle")
    wait_until(lambda: sorted(ran) == ["idle", "other"], 5.0, interval_s=0.001)
    shutdown_consume_pool(lane, 5000)
    shutdown_consume_pool(other, 5000)
    assert not lane.submit_if_free(ran.append, "after shutdown")
    assert sorted(ran) == ["idle", "other"]
    _all_end(workers)


def test_workers_end_once_the_last_lane_is_shut_down(workers: ConsumeWorkers) -> None:
    lanes = [ConsumePool(3, f"L{i}", workers) for i in range(3)]
    started: list[threading.Thread] = []
    release = threading.Event()

    def call() -> None:
        started.append(threading.current_thread())
        release.wait(5)

    for lane in lanes:
        for _ in range(3):
            lane.submit(call)
    wait_until(lambda: len(started) == 9, 5.0, "every call", interval_s=0.005)
    release.set()
    shutdown_consume_pool(lanes[0], 5000)
    shutdown_consume_pool(lanes[1], 5000)
    assert workers.threads()  # lanes[2] still holds its bound
    shutdown_consume_pool(lanes[2], 5000)
    _all_end(workers)
    for thread in started:
        thread.join(5)
        assert not thread.is_alive()
    assert workers.capacity == 0
    # a later lane starts the set again
    ran = threading.Event()
    later = ConsumePool(1, "Later", workers)
    later.submit(ran.set)
    assert ran.wait(5)
    _close(workers, later)


def test_every_consumer_shares_the_process_wide_set() -> None:
    one, two = ConsumePool(1, "One"), ConsumePool(1, "Two")
    try:
        assert one._workers is two._workers is shared_consume_workers()
    finally:
        shutdown_consume_pool(one, 5000)
        shutdown_consume_pool(two, 5000)


def test_concurrent_submitters_lose_no_call_and_stay_within_the_bound(workers: ConsumeWorkers) -> None:
    """Many lanes submitting at once: every call runs, the set never exceeds its bound, and
    everything ends after the shutdowns."""
    lanes = [ConsumePool(2, f"R{i}", workers) for i in range(6)]
    counts = [0] * len(lanes)
    lock = threading.Lock()
    peak = [0]

    def bump(i: int) -> None:
        with lock:
            counts[i] += 1
            peak[0] = max(peak[0], len(workers.threads()))

    def submitter(i: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(200):
                lanes[i].submit(bump, i)

        return run

    threads = [threading.Thread(target=submitter(i)) for i in range(len(lanes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    wait_until(lambda: sum(counts) == 200 * len(lanes), 10.0, "every call", interval_s=0.005)
    assert peak[0] <= 12
    _close(workers, *lanes)


def test_a_worker_that_cannot_start_leaves_nothing_queued(
    workers: ConsumeWorkers, monkeypatch: pytest.MonkeyPatch
) -> None:
    lane = ConsumePool(2, "NoThread", workers)
    ran: list[int] = []

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patch:
        patch.setattr(threading.Thread, "start", refuse)
        with pytest.raises(RuntimeError):
            lane.submit(ran.append, 1)  # the consume service resubmits it later
        assert not lane.submit_if_free(ran.append, 2)  # the caller keeps it
        assert lane.running == 0 and not workers.threads()
    lane.submit(ran.append, 3)
    wait_until(lambda: ran == [3], 5.0, interval_s=0.005)
    _close(workers, lane)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (3.12: fork of a threaded process)
def test_a_forked_child_runs_calls_on_threads_of_its_own() -> None:
    """The parent's idle workers do not exist in a forked child: a consumer the child makes
    gets a set of its own (with the parent's, its call would wait for a worker forever)."""
    parent = ConsumePool(2, "Parent")
    ran = threading.Event()
    parent.submit(ran.set)
    assert ran.wait(5)
    wait_until(lambda: parent.running == 0, 5.0, interval_s=0.005)  # its worker idle
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if a fresh lane's call runs
        code = 1
        try:
            child_ran = threading.Event()
            child = ConsumePool(1, "Child")
            child.submit(child_ran.set)
            code = 0 if child_ran.wait(5) else 2
        finally:
            os._exit(code)
    statuses: list[int] = []

    def reaped() -> bool:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            statuses.append(status)
        return bool(done)

    try:
        wait_until(reaped, 20.0, "the forked child to exit", interval_s=0.02)
    finally:
        if not statuses:  # it hung: do not leave it behind
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(statuses[0]) == 0
    again = threading.Event()
    parent.submit(again.set)  # the parent's set is undisturbed
    assert again.wait(5)
    shutdown_consume_pool(parent, 5000)


def test_a_call_run_here_holds_a_slot_of_the_lanes_bound(workers: ConsumeWorkers) -> None:
    """``run_here`` (a batch run on the remoting I/O thread): it runs on the caller's thread
    only while the lane has a free slot, and holds it meanwhile (the bound counts it); once
    it returns, the slot runs the lane's next backlog call on a worker."""
    lane = Recorder(workers, 2, "ConsumeMessageThread_h")
    lane.submit(1)
    _started((lane, 1))
    here: list[str] = []
    ran_here = threading.Event()
    blocked_here = threading.Event()

    def call_here() -> None:
        here.append(threading.current_thread().name)
        ran_here.set()
        blocked_here.wait(10)

    caller = threading.Thread(target=lambda: here.append(str(lane.lane.run_here(call_here))), name="io")
    caller.start()
    assert ran_here.wait(5)
    assert here == ["io"]
    # both slots taken (one worker call, one call here): the next call is refused, a submit waits
    assert lane.lane.run_here(lambda: here.append("refused")) is False
    lane.submit(1)
    assert len(lane.started) == 1
    blocked_here.set()
    caller.join(5)
    assert here == ["io", "True"]
    _started((lane, 2))  # the slot freed by the call here ran the backlog call
    assert lane.started[1].startswith("ConsumeMessageThread_h_")
    lane.release.set()
    wait_until(lambda: len(lane.done) == 2, 5.0, "the calls to end")
    # free again: the call runs here at once
    assert lane.lane.run_here(lambda: here.append(threading.current_thread().name)) is True
    assert here[-1] == threading.current_thread().name
    _close(workers, lane.lane)
    assert lane.lane.run_here(lambda: here.append("closed")) is False
