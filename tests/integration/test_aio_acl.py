"""rocketq.aio against a broker with aclEnable: ClientConfig's keys sign every async request
(the shared AclClientRPCHook), and a refusal reaches the caller as the blocking client's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.aio import AsyncProducer
from rocketq.aio.lite_pull import AsyncLitePullConsumer
from rocketq.client import ConsumeFromWhere, LitePullConsumerConfig, Message, MessageQueue
from rocketq.errors import BrokerError
from rocketq.testing.cluster import EmbeddedCluster
from tests.integration.test_acl import APP, _client_config, acl_cluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    home: Path = tmp_path_factory.mktemp("rocketmq-home-aio")
    with acl_cluster(home) as c:
        c.create_topic("TopicOk", 1)
        c.create_topic("TopicSubOnly", 1)
        yield c


def test_signed_async_clients_produce_and_consume_and_refusals_are_typed(cluster: EmbeddedCluster) -> None:
    mq = MessageQueue("TopicOk", cluster.broker_names[0], 0)

    async def main() -> None:
        async with AsyncProducer("ProducerOk", client_config=_client_config(cluster, APP)) as producer:
            sent = [await producer.send(Message("TopicOk", f"a{i}".encode()), queue=mq) for i in range(3)]
            with pytest.raises(BrokerError) as info:
                await producer.send(
                    Message("TopicSubOnly", b"x"),
                    queue=MessageQueue("TopicSubOnly", cluster.broker_names[0], 0),
                )
            assert "No default permission for topic:TopicSubOnly" in (info.value.remark or "")
        cfg = LitePullConsumerConfig(
            consumer_group="GroupOk", consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        )
        async with AsyncLitePullConsumer(config=cfg, client_config=_client_config(cluster, APP)) as consumer:
            consumer.assign([mq])
            await consumer.seek(mq, sent[0].queue_offset)
            got: list[bytes] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 15
            while len(got) < 3 and loop.time() < deadline:
                got.extend(m.body for m in await consumer.poll(200))
        assert got == [b"a0", b"a1", b"a2"]

    asyncio.run(main())
