"""The asyncio concurrent consume service against a fake host: the consume timeout and the
CONSUME_START_TIME stamp.

The listener that overruns ``consume_timeout_ms`` (``consumeTimeout``, minutes in the
config, shortened here) is cancelled and counts as RECONSUME_LATER: its message goes back
(CONSUMER_SEND_MSG_BACK) and the committed offset moves past it; hooks see TIME_OUT.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence

from rocketq.aio.consume import ConcurrentConsumeService
from rocketq.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeMessageContext,
    ConsumeMessageHook,
)
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.stats import ConsumerStatsManager
from rocketq.protocol.heartbeat import MessageModel
from rocketq.protocol.message import MessageConst, MessageExt, decode_record
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.waits import async_wait_until
from tests.unit.client.test_consume_services import _msgs
from tests.unit.test_message import _plain_record

MQ = MessageQueue("T", "b", 0)


class OffsetHook:
    """Records (first offset, success, ConsumeContextType) of every listener call."""

    def __init__(self) -> None:
        self.after: list[tuple[int, bool, str]] = []

    def hook_name(self) -> str:
        return "offsets"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        pass

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        self.after.append(
            (context.msg_list[0].queue_offset, context.success, context.props["ConsumeContextType"])
        )


class FakeAsyncHost:
    consumer_group = "G"

    def __init__(self) -> None:
        self.stats = ConsumerStatsManager()
        self.hook = OffsetHook()
        self.hooks: list[ConsumeMessageHook] = [self.hook]
        self.sent_back: list[tuple[int, int]] = []
        self.offsets: list[tuple[int, bool]] = []
        self.tasks: list[asyncio.Task[None]] = []

    def message_model(self) -> MessageModel:
        return MessageModel.CLUSTERING

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> None:
        self.sent_back.append((msg.queue_offset, delay_level))

    async def send_to_dlq(self, msg: MessageExt, max_reconsume_times: int) -> None:
        raise AssertionError("not in concurrent mode")

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        self.offsets.append((offset, increase_only))

    def reset_retry_topic(self, msgs: Sequence[MessageExt]) -> None:
        pass

    async def lock(self, mq: MessageQueue) -> bool:
        return True

    def spawn(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            await coro

        self.tasks.append(asyncio.get_running_loop().create_task(run()))


def test_a_listener_overrunning_the_consume_timeout_is_cancelled_and_its_message_sent_back() -> None:
    async def main() -> None:
        host = FakeAsyncHost()
        cancelled: list[int] = []

        async def listener(
            msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            if msgs[0].queue_offset == 0:
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    cancelled.append(msgs[0].queue_offset)
                    raise
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        service = ConcurrentConsumeService(
            host, listener, concurrency=2, batch_size=1, consume_timeout_ms=200
        )
        service.start()
        pq = ProcessQueue()
        msgs = _msgs(3)
        pq.put_messages(msgs)
        loop = asyncio.get_running_loop()
        begin = loop.time()
        service.submit(msgs, pq, MQ)
        while pq.msg_count and loop.time() - begin < 10:
            await asyncio.sleep(0.01)
        elapsed = loop.time() - begin
        await service.shutdown(1000)
        assert pq.msg_count == 0
        assert 0.15 <= elapsed < 5
        assert cancelled == [0]  # the overrunning listener was cancelled
        assert host.sent_back == [(0, 0)]  # RECONSUME_LATER: back with the context's delay level
        assert max(o for o, _ in host.offsets) == 3  # every message is done: the offset passed them
        outcomes = {offset: (ok, kind) for offset, ok, kind in host.hook.after}
        assert outcomes[0] == (False, "TIME_OUT")
        assert outcomes[1][0] and outcomes[2][0]

    asyncio.run(main())


def test_transaction_checks_beyond_the_hold_max_are_dropped_and_shutdown_cancels_the_rest() -> None:
    """AsyncTransactionProducer.check_transaction_state: at most check_request_hold_max checks
    run at once (more are dropped: the broker asks again); shutdown cancels and awaits them."""
    from rocketq.aio import AsyncTransactionProducer
    from rocketq.client import LocalTransactionState
    from rocketq.protocol.headers import CheckTransactionStateRequestHeader
    from rocketq.protocol.message import Message

    async def main() -> None:
        gate = asyncio.Event()
        checked: list[str] = []

        class Listener:
            def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
                return LocalTransactionState.UNKNOW

            async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
                checked.append(msg.msg_id)
                await gate.wait()
                return LocalTransactionState.COMMIT_MESSAGE

        producer = AsyncTransactionProducer(
            "pg", namesrv_addr="127.0.0.1:9", transaction_listener=Listener(), check_request_hold_max=2
        )
        header = CheckTransactionStateRequestHeader(tran_state_table_offset=1, commit_log_offset=2)
        for i in range(3):
            producer.check_transaction_state("127.0.0.1:9", _msgs(1, i)[0], header)
        assert len(producer._checks) == 2  # the third was dropped
        await asyncio.sleep(0)
        assert len(checked) == 2
        await producer.shutdown()  # never started: only the checks to cancel
        assert not producer._checks

    asyncio.run(main())


def test_a_batch_is_stamped_with_one_consume_start_time_after_the_before_hooks() -> None:
    """``ConsumeRequest.run``: every message of a batch carries the same CONSUME_START_TIME
    (the blocking service's ``put_properties_lazily_each``), set after the before-hooks ran;
    properties the messages had are kept, parsed or still raw."""

    class StampHook(OffsetHook):
        def __init__(self) -> None:
            super().__init__()
            self.seen_before: list[str | None] = []

        def consume_message_before(self, context: ConsumeMessageContext) -> None:
            self.seen_before += [m.get_property(MessageConst.CONSUME_START_TIME) for m in context.msg_list]

    async def main() -> None:
        host = FakeAsyncHost()
        hook = StampHook()
        host.hook, host.hooks = hook, [hook]
        seen: list[tuple[str | None, str | None]] = []

        async def listener(
            msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            seen.extend((m.get_property(MessageConst.CONSUME_START_TIME), m.get_property("K")) for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        service = ConcurrentConsumeService(
            host, listener, concurrency=1, batch_size=4, consume_timeout_ms=60_000
        )
        service.start()
        msgs = _msgs(4)
        msgs[0].put_property("K", "parsed")  # parsed properties
        msgs[1] = decode_record(_plain_record("K\x01raw", queue_offset=1))  # properties still undecoded
        pq = ProcessQueue()
        pq.put_messages(msgs)
        before_ms = int(time.time() * 1000)
        service.submit(msgs, pq, MQ)
        await async_wait_until(lambda: pq.msg_count == 0, 10.0, "the batch consumed")
        after_ms = int(time.time() * 1000)
        await service.shutdown(1000)
        assert hook.seen_before == [None] * 4  # stamped after the before-hooks
        stamps = {stamp for stamp, _ in seen}
        assert len(seen) == 4 and len(stamps) == 1  # one stamp for the batch
        stamp = stamps.pop()
        assert stamp is not None and before_ms <= int(stamp) <= after_ms
        assert [k for _, k in seen] == ["parsed", "raw", None, None]

    asyncio.run(main())
