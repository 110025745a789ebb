"""Rebalance bookkeeping with a fake host (no sockets), and the schedule-service task table."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from rocketq.client.api_results import FindBrokerResult
from rocketq.client.consumer.offset_store import ReadOffsetType, RemoteBrokerOffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.rebalance import PullRequest, RebalanceImpl, RebalancePullImpl
from rocketq.common.scheduler import ScheduledExecutor
from rocketq.protocol.heartbeat import MessageModel, build_subscription_data
from rocketq.protocol.message_queue import MessageQueue


def _mqs(n: int, topic: str = "T") -> set[MessageQueue]:
    return {MessageQueue(topic, "broker-a", i) for i in range(n)}


class FakeHost:
    """RebalanceHost + OffsetBrokerHost in memory."""

    def __init__(self, client_id: str, cids: list[str]) -> None:
        self._client_id = client_id
        self.cids: list[str] | None = cids
        self.locked_by_other: set[MessageQueue] = set()
        self.lock_calls: list[list[MessageQueue]] = []
        self.unlock_calls: list[tuple[list[MessageQueue], bool]] = []
        self.offset_updates: list[tuple[MessageQueue, int, bool]] = []

    @property
    def client_id(self) -> str:
        return self._client_id

    def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        return None if self.cids is None else list(self.cids)

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None:
        return FindBrokerResult("10.0.0.1:10911", False)

    def lock_batch_mq(
        self, addr: str, group: str, mqs: Iterable[MessageQueue], timeout_ms: int
    ) -> set[MessageQueue]:
        wanted = list(mqs)
        self.lock_calls.append(wanted)
        return {mq for mq in wanted if mq not in self.locked_by_other}

    def unlock_batch_mq(
        self, addr: str, group: str, mqs: Iterable[MessageQueue], timeout_ms: int, oneway: bool
    ) -> None:
        self.unlock_calls.append((list(mqs), oneway))

    def update_topic_route_info_from_name_server(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool:
        return False

    def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        return 0

    def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> None:
        self.offset_updates.append((mq, offset, oneway))


class Listener:
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[MessageQueue], set[MessageQueue]]] = []

    def message_queue_changed(
        self, topic: str, mq_all: set[MessageQueue], mq_divided: set[MessageQueue]
    ) -> None:
        self.calls.append((topic, set(mq_all), set(mq_divided)))


def _pull_rebalance(
    host: FakeHost, model: MessageModel = MessageModel.CLUSTERING
) -> tuple[RebalancePullImpl, Listener]:
    listener = Listener()
    store = RemoteBrokerOffsetStore(host, "G")
    reb = RebalancePullImpl(host, "G", model, store, listener=listener)
    reb.add_subscription(build_subscription_data("T", "*", sub_version=0))
    reb.set_subscribe_info("T", _mqs(4))
    return reb, listener


def test_clustering_split_and_takeover() -> None:
    host = FakeHost("c1", ["c2", "c1"])
    reb, listener = _pull_rebalance(host)
    reb.do_rebalance()
    mine = {mq.queue_id for mq in reb.owned_queues()}
    assert mine == {0, 1}  # sorted cids: c1 is index 0 -> queues 0-1 (AllocateMessageQueueAveragely)
    assert listener.calls == [("T", _mqs(4), {mq for mq in _mqs(4) if mq.queue_id in (0, 1)})]
    reb.do_rebalance()
    assert len(listener.calls) == 1  # nothing changed -> no listener call
    host.cids = ["c1"]  # c2 left: take over everything
    reb.do_rebalance()
    assert {mq.queue_id for mq in reb.owned_queues()} == {0, 1, 2, 3}
    assert listener.calls[-1][2] == _mqs(4)


def test_removed_queue_is_dropped_and_its_offset_persisted() -> None:
    host = FakeHost("c1", ["c1"])
    reb, _ = _pull_rebalance(host)
    reb.do_rebalance()
    q3 = MessageQueue("T", "broker-a", 3)
    pq3 = reb.process_queue_table[q3]
    reb.offset_store.update_offset(q3, 17, False)
    host.cids = ["c0", "c1"]  # c1 is now index 1 -> queues 2-3
    reb.do_rebalance()
    host.cids = ["c1", "c2"]  # index 0 -> queues 0-1: q3 goes away
    reb.do_rebalance()
    assert q3 not in reb.owned_queues()
    assert pq3.dropped
    assert (q3, 17, True) in host.offset_updates
    assert reb.offset_store.read_offset(q3, ReadOffsetType.READ_FROM_MEMORY) == -1


def test_broadcasting_owns_everything_and_needs_no_consumer_list() -> None:
    host = FakeHost("c1", [])
    host.cids = None
    reb, listener = _pull_rebalance(host, MessageModel.BROADCASTING)
    reb.do_rebalance()
    assert reb.owned_queues() == _mqs(4)
    assert listener.calls[0][1] == listener.calls[0][2] == _mqs(4)


def test_no_consumer_list_or_unknown_topic_changes_nothing() -> None:
    host = FakeHost("c1", ["c1"])
    host.cids = None
    reb, listener = _pull_rebalance(host)
    reb.do_rebalance()
    assert reb.owned_queues() == set()
    reb.add_subscription(build_subscription_data("U", "*"))
    host.cids = ["c1"]
    reb.do_rebalance()  # U has no subscribe info yet
    assert {mq.topic for mq in reb.owned_queues()} == {"T"}
    assert reb.is_subscribe_info_missing("U")
    assert listener.calls[-1][0] == "T"


def test_unsubscribed_topic_is_truncated() -> None:
    host = FakeHost("c1", ["c1"])
    reb, _ = _pull_rebalance(host)
    reb.do_rebalance()
    pqs = list(reb.process_queue_table.values())
    reb.remove_subscription("T")
    reb.do_rebalance()
    assert reb.owned_queues() == set()
    assert all(pq.dropped for pq in pqs)


class PushLike(RebalanceImpl):
    """A subclass as the push consumer writes one: start offsets and pull requests."""

    def __init__(self, host: FakeHost) -> None:
        super().__init__(host, "G", MessageModel.CLUSTERING)
        self.dispatched: list[PullRequest] = []
        self.skip: set[int] = set()

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return -1 if mq.queue_id in self.skip else 10 * mq.queue_id

    def dispatch_pull_request(self, requests: list[PullRequest]) -> None:
        self.dispatched.extend(requests)


def test_pull_requests_and_negative_start_offsets() -> None:
    host = FakeHost("c1", ["c1"])
    reb = PushLike(host)
    reb.add_subscription(build_subscription_data("T", "*"))
    reb.set_subscribe_info("T", _mqs(3))
    reb.skip = {2}
    reb.do_rebalance()
    assert sorted((r.message_queue.queue_id, r.next_offset) for r in reb.dispatched) == [(0, 0), (1, 10)]
    reb.skip = set()
    reb.do_rebalance()  # queue 2 is retried on the next round
    assert reb.dispatched[-1].message_queue.queue_id == 2
    assert reb.dispatched[-1].next_offset == 20


def test_orderly_adds_only_locked_queues_and_lock_all() -> None:
    host = FakeHost("c1", ["c1"])
    host.locked_by_other = {MessageQueue("T", "broker-a", 1)}
    reb = PushLike(host)
    reb.add_subscription(build_subscription_data("T", "*"))
    reb.set_subscribe_info("T", _mqs(2))
    reb.do_rebalance(is_order=True)
    assert {mq.queue_id for mq in reb.owned_queues()} == {0}
    assert reb.process_queue_table[MessageQueue("T", "broker-a", 0)].locked
    # Java's default: the first pull of a newly locked queue re-reads its offset
    assert [r.previously_locked for r in reb.dispatched] == [False]
    host.locked_by_other = {MessageQueue("T", "broker-a", 0)}
    reb.lock_all()
    assert not reb.process_queue_table[MessageQueue("T", "broker-a", 0)].locked
    reb.unlock_all(oneway=True)
    assert host.unlock_calls == [([MessageQueue("T", "broker-a", 0)], True)]


def test_pull_expired_queue_is_dropped_only_for_push_consumers() -> None:
    from rocketq.protocol.heartbeat import ConsumeType

    now = [0]

    class Passive(PushLike):
        def consume_type(self) -> ConsumeType:
            return ConsumeType.CONSUME_PASSIVELY

    host = FakeHost("c1", ["c1"])
    reb = Passive(host)
    reb._clock_ms = lambda: now[0]
    reb.add_subscription(build_subscription_data("T", "*"))
    reb.set_subscribe_info("T", _mqs(1))
    reb.do_rebalance()
    pq = next(iter(reb.process_queue_table.values()))
    now[0] += 120_001  # PULL_MAX_IDLE_TIME
    reb.do_rebalance()
    assert pq.dropped
    assert next(iter(reb.process_queue_table.values())) is not pq  # re-created fresh
    assert isinstance(next(iter(reb.process_queue_table.values())), ProcessQueue)


def test_task_scheduler_runs_in_due_order_and_shuts_down() -> None:
    sched = ScheduledExecutor("unit-sched", threads=2)
    sched.start()
    done = threading.Event()
    order: list[str] = []
    lock = threading.Lock()

    def record(name: str) -> None:
        with lock:
            order.append(name)
            if len(order) == 3:
                done.set()

    sched.schedule(lambda: record("late"), 80)
    sched.schedule(lambda: record("first"), 0)

    def boom() -> None:
        raise ZeroDivisionError

    sched.schedule(boom, 0)  # an exception never kills a worker
    sched.schedule(lambda: record("second"), 20)
    assert done.wait(5)
    assert order == ["first", "second", "late"]
    sched.schedule(lambda: record("never"), 10_000)
    sched.shutdown()
    assert sched.pending() == 0
    # shutdown joins the workers before it returns
    assert not [t for t in threading.enumerate() if t.name.startswith("unit-sched")]
