"""PullMessageService: due-time ordering, delayed re-queueing, tasks, clean shutdown."""

from __future__ import annotations

import threading
import time

from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull_message_service import PullMessageService, PullRequest
from rocketq.protocol.message_queue import MessageQueue


def _req(qid: int) -> PullRequest:
    return PullRequest("G", MessageQueue("T", "b", qid), ProcessQueue(), 0)


def test_requests_run_in_due_order_and_tasks_share_the_thread() -> None:
    seen: list[object] = []
    done = threading.Event()
    service = PullMessageService(lambda pr: seen.append(pr.message_queue.queue_id))
    service.start()
    try:
        service.execute_pull_request_later(_req(2), 60)
        service.execute_pull_request_later(_req(1), 20)
        service.execute_pull_request_immediately(_req(0))
        service.execute_task_later(lambda: (seen.append("task"), done.set()), 100)
        assert done.wait(5)
        assert seen == [0, 1, 2, "task"]
    finally:
        service.shutdown()
    assert not service.is_alive


def test_a_failing_pull_does_not_kill_the_thread() -> None:
    calls: list[int] = []

    def pull(pr: PullRequest) -> None:
        calls.append(pr.message_queue.queue_id)
        if pr.message_queue.queue_id == 0:
            raise RuntimeError("boom")

    service = PullMessageService(pull)
    service.start()
    try:
        service.execute_pull_request_immediately(_req(0))
        service.execute_pull_request_later(_req(1), 10)
        deadline = time.monotonic() + 5
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls == [0, 1]
    finally:
        service.shutdown()


def test_shutdown_is_prompt_and_drops_pending_work() -> None:
    service = PullMessageService(lambda pr: None)
    service.start()
    service.execute_pull_request_later(_req(0), 60_000)
    start = time.monotonic()
    service.shutdown()
    assert time.monotonic() - start < 1.0
    assert service.pending() == 0
    assert not any(t.name == "PullMessageService" for t in threading.enumerate())
