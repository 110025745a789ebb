"""RouteBackoff: 1 s, 2 s, 4 s then every 8 s; one chain per topic; stops when the route is known
or the consumer stops. Driven by a fake scheduler (no threads, no sleeping)."""

from __future__ import annotations

from collections.abc import Callable

from rocketq.client.consumer.route_backoff import RouteBackoff


class _Instance:
    def __init__(self) -> None:
        self.heartbeats = 0
        self.rebalances = 0

    def send_heartbeat_to_all_broker_with_lock(self) -> None:
        self.heartbeats += 1

    def rebalance_immediately(self) -> None:
        self.rebalances += 1


def test_backoff_doubles_to_8s_and_ends_with_a_rebalance() -> None:
    pending: list[tuple[Callable[[], None], int]] = []
    missing = {"T"}
    refreshed: list[str] = []
    instance = _Instance()
    running = [True]
    backoff = RouteBackoff(
        schedule=lambda task, delay: pending.append((task, delay)),
        is_missing=lambda topic: topic in missing,
        refresh=refreshed.append,
        instance=lambda: instance,  # type: ignore[arg-type, return-value]
        running=lambda: running[0],
        group="G",
    )
    backoff.watch("T")
    backoff.watch("T")  # one chain per topic
    backoff.watch("known")  # has a route: nothing to do
    delays = []
    for _ in range(6):
        assert len(pending) == 1
        task, delay = pending.pop()
        delays.append(delay)
        task()
    assert delays == [1000, 2000, 4000, 8000, 8000, 8000]
    assert refreshed == ["T"] * 6
    missing.clear()  # the route poll found it
    task, _ = pending.pop()
    task()
    assert pending == [] and (instance.heartbeats, instance.rebalances) == (1, 1)
    missing.add("T")
    backoff.watch("T")  # a finished chain can start again
    running[0] = False
    task, _ = pending.pop()
    task()
    assert pending == [] and refreshed == ["T"] * 6
