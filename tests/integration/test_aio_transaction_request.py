"""AsyncTransactionProducer and AsyncProducer.request against the embedded broker.

Transactions: the broker runs the fast check of :mod:`tests.integration.test_transaction`
(a round every second), so a half left UNKNOW is checked within seconds; the check arrives as
CHECK_TRANSACTION_STATE over the async client's own connection and is answered on its loop.
Request/reply: an async responder (AsyncPushConsumer + AsyncProducer) answers with
``create_reply_message``; the broker pushes each reply (PUSH_REPLY_MESSAGE_TO_CLIENT) over the
requester's connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from rocketq.aio import AsyncProducer, AsyncTransactionProducer
from rocketq.aio.push import AsyncPushConsumer
from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageExt,
    PullConsumer,
    PushConsumerConfig,
    create_reply_message,
)
from rocketq.errors import ClientError, RequestTimeoutError
from rocketq.protocol.message import MessageConst
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import REPLY_MESSAGE_FLAG
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import async_wait_until
from tests.integration.test_aio_producer import LOOPS, run
from tests.integration.test_transaction import TX_CONF, _bodies

pytestmark = [pytest.mark.integration]

S = LocalTransactionState
FAST = ClientConfig(
    heartbeat_broker_interval_ms=300, poll_name_server_interval_ms=500, rebalance_interval_ms=1000
)


@pytest.fixture(scope="module")
def tx_cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(broker_conf=TX_CONF) as c:
        yield c


@pytest.fixture(scope="module")
def puller(tx_cluster: EmbeddedCluster) -> Iterator[PullConsumer]:
    consumer = PullConsumer("aio-tx-test-puller", namesrv_addr=tx_cluster.namesrv_addr)
    consumer.start()
    yield consumer
    consumer.shutdown()


class MixedListener:
    """Executes by body prefix (a plain method); checks with a coroutine."""

    def __init__(self, check: LocalTransactionState) -> None:
        self.check = check
        self.executed: list[bytes] = []
        self.checked: list[MessageExt] = []

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        self.executed.append(msg.body)
        if msg.body.startswith(b"commit"):
            return S.COMMIT_MESSAGE
        if msg.body.startswith(b"rollback"):
            return S.ROLLBACK_MESSAGE
        raise RuntimeError("the database is down")  # counts as UNKNOW

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        await asyncio.sleep(0)
        self.checked.append(msg)
        return self.check

    def checks_of(self, body: bytes) -> int:
        return sum(1 for m in self.checked if m.body == body)


@pytest.mark.parametrize("kind", LOOPS)
def test_commit_rollback_and_unknown_settled_by_the_broker_check(
    kind: str, tx_cluster: EmbeddedCluster, puller: PullConsumer, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("atx")
    tx_cluster.create_topic(topic, 4)
    tx_cluster.wait_route(topic)
    listener = MixedListener(check=S.COMMIT_MESSAGE)

    async def main() -> None:
        async with AsyncTransactionProducer(
            unique_name("atxpg"),
            namesrv_addr=tx_cluster.namesrv_addr,
            transaction_listener=listener,
            client_config=FAST,
        ) as producer:
            committed = await producer.send_message_in_transaction(Message(topic, b"commit-1", keys="k"), "a")
            assert committed.local_transaction_state is S.COMMIT_MESSAGE
            rolled = await producer.send_message_in_transaction(Message(topic, b"rollback-1"))
            assert rolled.local_transaction_state is S.ROLLBACK_MESSAGE
            late = await producer.send_message_in_transaction(Message(topic, b"late-1", delay_time_level=3))
            assert late.local_transaction_state is S.UNKNOW
            assert listener.executed == [b"commit-1", b"rollback-1", b"late-1"]
            # the broker checks the UNKNOW half over this client's connection; the answer commits
            await async_wait_until(
                lambda: sorted(_bodies(puller, topic)) == [b"commit-1", b"late-1"], 20, "commit + checked"
            )
            first = next(m for m in listener.checked if m.body == b"late-1")
            assert first.topic == topic and first.msg_id == late.msg_id
            assert first.queue_id == late.message_queue.queue_id
            assert first.properties[MessageConst.PGROUP] == producer.config.producer_group
            assert MessageConst.DELAY not in first.properties  # the delay level was dropped
            # the check scan walks the half queue in order: it passed the resolved halves
            assert listener.checks_of(b"commit-1") == listener.checks_of(b"rollback-1") == 0
            stored = [
                m
                for qid in range(4)
                for m in puller.pull(MessageQueue(topic, "broker-a", qid), "*", 0, 32).msg_found_list
            ]
            assert {m.properties[MessageConst.UNIQ_KEY] for m in stored} == {committed.msg_id, late.msg_id}
            assert all(m.properties[MessageConst.TRAN_MSG] == "true" for m in stored)

    run(kind, main())


def test_without_listener_the_async_producer_refuses(
    tx_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    async def main() -> None:
        async with AsyncTransactionProducer(unique_name("atxpg"), namesrv_addr=tx_cluster.namesrv_addr) as p:
            with pytest.raises(ClientError, match="TransactionListener is null"):
                await p.send_message_in_transaction(Message("any-topic", b"x"))

    asyncio.run(main())


@pytest.mark.parametrize("kind", LOOPS)
def test_request_reply_round_trip_concurrent_requests_and_timeout(
    kind: str, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("areq")
    embedded_cluster.create_topic(topic, 4)
    embedded_cluster.wait_route(topic)
    silent = unique_name("asilent")
    embedded_cluster.create_topic(silent, 2)
    embedded_cluster.wait_route(silent)
    seen: list[MessageExt] = []

    async def main() -> None:
        replier = AsyncProducer(unique_name("arep"), namesrv_addr=embedded_cluster.namesrv_addr)
        responder = AsyncPushConsumer(
            config=PushConsumerConfig(
                consumer_group=unique_name("arg"),
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            ),
            namesrv_addr=embedded_cluster.namesrv_addr,
            client_config=FAST,
        )

        async def on_messages(
            msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            for msg in msgs:
                seen.append(msg)
                await replier.send(create_reply_message(msg, b"re:" + msg.body))
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        responder.subscribe(topic, "*")
        responder.register_message_listener(on_messages)
        async with (
            replier,
            responder,
            AsyncProducer(unique_name("areqpg"), namesrv_addr=embedded_cluster.namesrv_addr) as requester,
        ):
            reply = await requester.request(Message(topic, b"ping", tags="T"), 15_000)
            assert reply.body == b"re:ping"
            props = reply.properties
            assert props[MessageConst.MSG_TYPE] == REPLY_MESSAGE_FLAG
            assert props[MessageConst.REPLY_TO_CLIENT] == requester.client_id
            assert props[MessageConst.TTL] == "15000"
            assert reply.topic == "DefaultCluster_REPLY_TOPIC"
            assert seen[0].properties[MessageConst.CORRELATION_ID] == props[MessageConst.CORRELATION_ID]
            # a queue-targeted request works the same way
            q2 = MessageQueue(topic, embedded_cluster.broker_names[0], 2)
            assert (await requester.request(Message(topic, b"pong"), 15_000, queue=q2)).body == b"re:pong"
            assert seen[-1].queue_id == 2
            # 200 concurrent requests, each matched to its own reply
            bodies = [f"req-{i}".encode() for i in range(200)]
            replies = await asyncio.gather(*(requester.request(Message(topic, b), 30_000) for b in bodies))
            assert [r.body for r in replies] == [b"re:" + b for b in bodies]
            table = requester._running().requests
            assert len(table) == 0  # every request left the table with its reply
            # nobody consumes `silent`: the request times out and leaves the table
            begin = asyncio.get_running_loop().time()
            with pytest.raises(RequestTimeoutError, match="wait reply message timeout, 500 ms"):
                await requester.request(Message(silent, b"anyone?"), 500)
            assert 0.4 <= asyncio.get_running_loop().time() - begin < 5
            assert len(table) == 0
            # a cancelled request leaves the table too
            pending = asyncio.ensure_future(requester.request(Message(silent, b"cancelled"), 30_000))
            await async_wait_until(lambda: len(table) == 1, 10, "the request registered")
            pending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pending
            assert len(table) == 0

    run(kind, main())
