"""Transactional messages end to end: a real name server and broker, real producers.

The broker runs with a fast check (``transactionCheckInterval=1000``,
``transactionTimeOut=1000``, ``transactionCheckMax=3``) so every scenario settles within a
few seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketq.admin import Admin
from rocketq.admin.transactions import HalfMessageState, TransactionState
from rocketq.cli.main import main as cli_main
from rocketq.client import (
    ClientConfig,
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    PullConsumer,
    PullStatus,
    TransactionProducer,
)
from rocketq.errors import BrokerError, ClientError, IllegalArgumentError
from rocketq.protocol.message import MessageConst
from rocketq.protocol.message_id import decode_offset_msg_id
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import (
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    TRANSACTION_TOPICS,
)
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = [pytest.mark.integration]

HERE = Path(__file__).resolve().parent
#: A check round every second. As in Java, a half whose producer has not answered by the next
#: round is checked again (and may then be committed twice): the interval stays well above
#: the answer's latency on a loaded CI machine.
TX_CONF = {"transactionCheckInterval": "1000", "transactionTimeOut": "1000", "transactionCheckMax": "3"}
#: heartbeats every 300 ms: a (re)started broker learns the producer's channel quickly
FAST = ClientConfig(heartbeat_broker_interval_ms=300, poll_name_server_interval_ms=500)
S = LocalTransactionState


class Listener:
    """Answers by body: ``execute`` for the local transaction, ``check`` for checks."""

    def __init__(
        self,
        execute: Callable[[Message], LocalTransactionState],
        check: Callable[[MessageExt], LocalTransactionState] = lambda m: S.UNKNOW,
    ) -> None:
        self._execute = execute
        self._check = check
        self.lock = threading.Lock()
        self.checked: list[MessageExt] = []
        self.executed: list[bytes] = []

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        with self.lock:
            self.executed.append(msg.body)
        return self._execute(msg)

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        with self.lock:
            self.checked.append(msg)
        return self._check(msg)

    def checks_of(self, body: bytes) -> int:
        with self.lock:
            return sum(1 for m in self.checked if m.body == body)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(broker_conf=TX_CONF) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster: EmbeddedCluster) -> Iterator[Admin]:
    with Admin(cluster.namesrv_addr) as a:
        yield a


@pytest.fixture(scope="module")
def puller(cluster: EmbeddedCluster) -> Iterator[PullConsumer]:
    consumer = PullConsumer("tx-test-puller", namesrv_addr=cluster.namesrv_addr)
    consumer.start()
    yield consumer
    consumer.shutdown()


def _bodies(puller: PullConsumer, topic: str, queues: int = 4, broker: str = "broker-a") -> list[bytes]:
    out: list[bytes] = []
    for qid in range(queues):
        offset = 0
        while True:
            result = puller.pull(MessageQueue(topic, broker, qid), "*", offset, 32)
            if result.pull_status is not PullStatus.FOUND:
                break
            out += [m.body for m in result.msg_found_list]
            offset = result.next_begin_offset
    return out


def _wait_bodies(
    puller: PullConsumer, topic: str, expected: list[bytes], timeout_s: float, what: str
) -> None:
    """Wait until the topic holds exactly ``expected`` (any order); the error says what it held."""
    seen: list[bytes] = []

    def done() -> bool:
        seen[:] = _bodies(puller, topic)
        return sorted(seen) == sorted(expected)

    try:
        wait_until(done, timeout_s, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the topic holds {sorted(seen)}") from None


def _producer(cluster: EmbeddedCluster, group: str, listener: Listener) -> TransactionProducer:
    producer = TransactionProducer(
        group, namesrv_addr=cluster.namesrv_addr, transaction_listener=listener, client_config=FAST
    )
    producer.start()
    return producer


def _checked_marker(producer: TransactionProducer, listener: Listener, topic: str, body: bytes) -> None:
    """Send ``body`` as UNKNOW and wait until the broker checked it: the check scan, which
    walks the half queue in order, has then passed every half sent before it."""
    producer.send_message_in_transaction(Message(topic, body))
    wait_until(lambda: listener.checks_of(body) >= 1, 15, f"a check of {body!r}")


def test_commit_is_consumed_once_and_the_half_is_never_visible(
    cluster: EmbeddedCluster, puller: PullConsumer, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("tx")
    cluster.create_topic(topic, 4)
    cluster.wait_route(topic)
    seen_during_local_tx: list[list[bytes]] = []

    def execute(msg: Message) -> LocalTransactionState:
        seen_during_local_tx.append(_bodies(puller, topic))
        return S.COMMIT_MESSAGE if msg.body.startswith(b"commit") else S.UNKNOW

    listener = Listener(execute, check=lambda m: S.ROLLBACK_MESSAGE)
    producer = _producer(cluster, unique_name("txpg"), listener)
    try:
        msg = Message(topic, b"commit-1", tags="TagA", keys="order-1")
        result = producer.send_message_in_transaction(msg, arg="ignored")
        assert result.local_transaction_state is S.COMMIT_MESSAGE
        assert seen_during_local_tx == [[]]  # the half is not in the topic
        _wait_bodies(puller, topic, [b"commit-1"], 10, "the committed message")
        # the committed record keeps Java's properties: real topic/queue, TRAN_MSG, PGROUP
        (committed,) = [
            m
            for qid in range(4)
            for m in puller.pull(MessageQueue(topic, "broker-a", qid), "*", 0, 32).msg_found_list
        ]
        assert committed.properties[MessageConst.TRAN_MSG] == "true"
        assert committed.properties[MessageConst.PGROUP] == producer.producer_group
        assert committed.properties[MessageConst.REAL_TOPIC] == topic
        assert committed.queue_id == result.message_queue.queue_id
        assert committed.properties[MessageConst.UNIQ_KEY] == result.msg_id
        assert committed.tags == "TagA"
        assert committed.sys_flag & 0xC == 0x8  # TRANSACTION_COMMIT_TYPE
        # preparedTransactionOffset: the half's commit-log offset, which its send result named
        assert committed.prepared_transaction_offset == decode_offset_msg_id(result.offset_msg_id)[1]
        assert committed.commit_log_offset != committed.prepared_transaction_offset
        _checked_marker(producer, listener, topic, b"marker")
        assert listener.checks_of(b"commit-1") == 0
        assert sorted(_bodies(puller, topic)) == [b"commit-1"]  # once; the marker was rolled back
        state = admin.half_message_state(result.msg_id)
        assert state.state is TransactionState.COMMITTED
        assert (state.real_topic, state.producer_group, state.half_copies) == (
            topic,
            producer.producer_group,
            1,
        )
        assert state.resolved_msg_id == committed.offset_msg_id
    finally:
        producer.shutdown()


def test_rollback_is_never_consumed(
    cluster: EmbeddedCluster, puller: PullConsumer, admin: Admin, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("tx")
    cluster.create_topic(topic, 4)
    cluster.wait_route(topic)
    listener = Listener(
        lambda m: S.ROLLBACK_MESSAGE if m.body == b"rb" else S.UNKNOW, check=lambda m: S.COMMIT_MESSAGE
    )
    producer = _producer(cluster, unique_name("txpg"), listener)
    try:
        result = producer.send_message_in_transaction(Message(topic, b"rb"))
        assert result.local_transaction_state is S.ROLLBACK_MESSAGE
        _checked_marker(producer, listener, topic, b"marker")
        _wait_bodies(puller, topic, [b"marker"], 10, "the marker committed by its check")
        assert listener.checks_of(b"rb") == 0
        # the check has passed the rolled-back half (it checked the marker sent after it)
        assert admin.half_message_state(result.msg_id).state is TransactionState.ROLLED_BACK
        assert admin.half_message_state("0" * 32).state is TransactionState.UNKNOWN
    finally:
        producer.shutdown()


def test_unknown_then_the_check_commits(
    cluster: EmbeddedCluster, puller: PullConsumer, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("tx")
    cluster.create_topic(topic, 4)
    cluster.wait_route(topic)

    def execute(msg: Message) -> LocalTransactionState:
        raise RuntimeError("the database is down")  # a raising listener counts as UNKNOW

    listener = Listener(execute, check=lambda m: S.COMMIT_MESSAGE)
    producer = _producer(cluster, unique_name("txpg"), listener)
    try:
        result = producer.send_message_in_transaction(Message(topic, b"late", keys="k1"))
        assert result.local_transaction_state is S.UNKNOW
        _wait_bodies(puller, topic, [b"late"], 15, "the message committed by the check")
        first = listener.checked[0]
        assert first.topic == topic  # the check names the real topic, queue and ids
        assert first.queue_id == result.message_queue.queue_id
        assert first.msg_id == result.msg_id
        assert first.properties[MessageConst.TRANSACTION_CHECK_TIMES] == "1"
        _checked_marker(producer, listener, topic, b"marker")
        assert listener.checks_of(b"late") == 1
        assert sorted(_bodies(puller, topic)) == [b"late", b"marker"]
    finally:
        producer.shutdown()


def test_a_second_producer_of_the_group_answers_for_one_that_died(
    cluster: EmbeddedCluster, puller: PullConsumer, unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("tx"), unique_name("txpg")
    cluster.create_topic(topic, 4)
    cluster.wait_route(topic)
    victim = subprocess.run(
        [
            sys.executable,
            str(HERE / "transaction_producer_proc.py"),
            cluster.namesrv_addr,
            topic,
            group,
            "orphan",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert victim.returncode == 17, victim.stderr[-2000:]
    uniq = victim.stdout.split()[1]
    listener = Listener(lambda m: S.UNKNOW, check=lambda m: S.COMMIT_MESSAGE)
    survivor = _producer(cluster, group, listener)
    try:
        _wait_bodies(puller, topic, [b"orphan"], 15, "the orphan committed by the survivor")
        assert [m.msg_id for m in listener.checked] == [uniq]
    finally:
        survivor.shutdown()


def test_a_checker_that_never_knows_gets_the_half_discarded(
    cluster: EmbeddedCluster,
    puller: PullConsumer,
    admin: Admin,
    capsys: pytest.CaptureFixture[str],
    unique_name: Callable[..., str],
) -> None:
    topic = unique_name("tx")
    cluster.create_topic(topic, 4)
    cluster.wait_route(topic)
    listener = Listener(lambda m: S.UNKNOW, check=lambda m: S.UNKNOW)
    producer = _producer(cluster, unique_name("txpg"), listener)
    try:
        result = producer.send_message_in_transaction(Message(topic, b"undecided"))
        # A fresh broker has no RMQ_SYS_TRANS_HALF_TOPIC config, hence no route, until its first
        # check scan creates it (4.9.7's TransactionalMessageBridge.fetchMessageQueues; putting a
        # half does not): alone, this test is the one whose half is the broker's first.
        states: list[HalfMessageState] = []

        def known() -> bool:
            states.append(admin.half_message_state(result.msg_id))
            return states[-1].state is not TransactionState.UNKNOWN

        wait_until(known, 10, "the half topic's route (made by the first check scan)")
        # Usually seen within moments of that scan, before the half's first check (a scan
        # later, 1 s); on a loaded machine a check may come first: each check adds one copy
        # of the half whose TRANSACTION_CHECK_TIMES counts it.
        prepared = states[-1]
        assert prepared.state is TransactionState.PREPARED
        assert prepared.check_times < 3 and prepared.half_copies == prepared.check_times + 1, prepared

        def discarded() -> list[MessageExt]:
            try:
                found = puller.pull(
                    MessageQueue(RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, "broker-a", 0), "*", 0, 256
                )
            except (ClientError, BrokerError):  # no route, or no topic, before the discard
                return []
            return [
                m for m in found.msg_found_list if m.properties.get(MessageConst.UNIQ_KEY) == result.msg_id
            ]

        wait_until(lambda: bool(discarded()), 20, "the half in TRANS_CHECK_MAX_TIME_TOPIC")
        # the third check is a oneway request: on a loaded machine the producer's check thread
        # may record it after the discard a scan later is already visible
        wait_until(lambda: listener.checks_of(b"undecided") >= 3, 10, "the third check at the producer")
        assert listener.checks_of(b"undecided") == 3  # transactionCheckMax
        assert [m.properties[MessageConst.TRANSACTION_CHECK_TIMES] for m in listener.checked] == [
            "1",
            "2",
            "3",
        ]
        assert _bodies(puller, topic) == []
        assert discarded()[0].properties[MessageConst.REAL_TOPIC] == topic
        capsys.readouterr()
        assert (
            cli_main(["message", "tx-state", "-u", result.msg_id, "--json", "-n", cluster.namesrv_addr]) == 0
        )
        view = json.loads(capsys.readouterr().out)
        assert view["state"] == "DISCARDED" and view["halfCopies"] == 4 and view["checkTimes"] == 3
    finally:
        producer.shutdown()


def test_without_listener_the_producer_refuses(
    cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    producer = TransactionProducer(unique_name("txpg"), namesrv_addr=cluster.namesrv_addr)
    producer.start()
    try:
        with pytest.raises(ClientError, match="TransactionListener is null"):
            producer.send_message_in_transaction(Message("whatever", b"x"))
    finally:
        producer.shutdown()


def test_sending_to_the_half_topic_directly_is_refused(cluster: EmbeddedCluster) -> None:
    # TopicValidator.isNotAllowedSendTopic, checked by the client before anything is sent
    producer = Producer("tx-direct-pg", namesrv_addr=cluster.namesrv_addr)
    producer.start()
    try:
        with pytest.raises(IllegalArgumentError):
            producer.send(Message(RMQ_SYS_TRANS_HALF_TOPIC, b"x"))
    finally:
        producer.shutdown()


@pytest.mark.slow
def test_broker_sigkill_between_half_and_commit(tmp_path: Path, unique_name: Callable[..., str]) -> None:
    topic, group = unique_name("tx"), unique_name("txpg")
    release = threading.Event()
    in_local_tx = threading.Event()

    def execute(msg: Message) -> LocalTransactionState:
        if msg.body == b"in-flight":
            in_local_tx.set()
            release.wait(30)
        return S.UNKNOW if msg.body == b"marker" else S.COMMIT_MESSAGE

    listener = Listener(execute, check=lambda m: S.COMMIT_MESSAGE)
    with EmbeddedCluster(store_dir=tmp_path / "store", separate_namesrv=True, broker_conf=TX_CONF) as cluster:
        cluster.create_topic(topic, 4)
        cluster.wait_route(topic)
        producer = _producer(cluster, group, listener)
        puller = PullConsumer(unique_name("puller"), namesrv_addr=cluster.namesrv_addr)
        puller.start()
        try:
            assert producer.send_message_in_transaction(
                Message(topic, b"before")
            ).local_transaction_state is (S.COMMIT_MESSAGE)
            sender = threading.Thread(
                target=lambda: producer.send_message_in_transaction(Message(topic, b"in-flight")),
                name="tx-sender",
            )
            sender.start()
            assert in_local_tx.wait(15)
            cluster.kill_broker(0)  # the half is stored; END_TRANSACTION will find no broker
            release.set()
            sender.join(30)
            cluster.restart_broker(0)
            wait_until(
                lambda: sorted(_bodies(puller, topic)) == [b"before", b"in-flight"],
                30,
                "the check after the restart",
            )
            _checked_marker(producer, listener, topic, b"marker")
            assert sorted(_bodies(puller, topic)) == [b"before", b"in-flight", b"marker"]
            assert listener.checks_of(b"before") == 0
        finally:
            puller.shutdown()
            producer.shutdown()


def test_topic_list_hides_the_transaction_topics(
    cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    def listed(*extra: str) -> list[str]:
        capsys.readouterr()
        assert cli_main(["topic", "list", "--json", "-n", cluster.namesrv_addr, *extra]) == 0
        topics: list[str] = json.loads(capsys.readouterr().out)
        return topics

    # the check service creates the half topic on its first round and registers it
    wait_until(
        lambda: RMQ_SYS_TRANS_HALF_TOPIC in listed("--system"), 15, "the half topic in the route table"
    )
    assert not TRANSACTION_TOPICS & set(listed())
    assert "TBW102" in listed()  # only the transactional system topics are hidden
