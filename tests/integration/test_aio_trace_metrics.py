"""Message trace, client metrics, flow control and suspend/resume of the asyncio classes.

The trace topic is read as :mod:`tests.integration.test_msg_trace` reads it (its independent
decoding of TraceDataEncoder's records); the metrics through the Prometheus registry as
:mod:`tests.integration.test_client_metrics` does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections import defaultdict
from collections.abc import Callable

import pytest

from rocketq.aio import AsyncProducer
from rocketq.aio.push import AsyncPushConsumer
from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    PullConsumer,
    PushConsumerConfig,
    SendStatus,
)
from rocketq.client.metrics import PrometheusClientMetrics
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import async_wait_until
from tests.integration.test_aio_producer import LOOPS, run
from tests.integration.test_msg_trace import TRACE_TOPIC, _read_topic, _records, trace_cluster

pytestmark = pytest.mark.integration

__all__ = ["trace_cluster"]  # the module-scoped fixture, shared

FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=1000)


@pytest.mark.parametrize("kind", LOOPS)
def test_async_trace_of_sends_and_consumes_reaches_the_trace_topic(
    kind: str, trace_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic, pgroup, cgroup = unique_name("atrt"), unique_name("atrpg"), unique_name("atrcg")
    trace_cluster.create_topic(topic, 2)
    trace_cluster.wait_route(topic)
    reader = PullConsumer(unique_name("atrr"), namesrv_addr=trace_cluster.namesrv_addr)
    reader.start()
    threads_before = threading.active_count()

    async def main() -> None:
        consumed: set[str] = set()

        async def listener(
            msgs: list[MessageExt], _ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            consumed.update(m.msg_id for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = AsyncPushConsumer(
            config=PushConsumerConfig(
                consumer_group=cgroup, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            ),
            namesrv_addr=trace_cluster.namesrv_addr,
            client_config=FAST,
            enable_msg_trace=True,
        )
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        producer = AsyncProducer(pgroup, namesrv_addr=trace_cluster.namesrv_addr, enable_msg_trace=True)
        async with producer as p, consumer:
            sent: dict[str, str] = {}
            for i in range(20):
                r = await p.send(Message(topic, f"b{i}".encode(), tags="TagT", keys=f"key{i}"))
                assert r.status is SendStatus.SEND_OK
                sent[r.msg_id] = r.offset_msg_id
            await async_wait_until(lambda: set(sent) <= consumed, 30, "all 20 consumed")
            # the trace work is tasks of this loop: no thread was started for it
            assert threading.active_count() == threads_before

            def complete() -> bool:
                kinds: dict[str, set[str]] = defaultdict(set)
                for rec in _records(_read_topic(trace_cluster, reader, TRACE_TOPIC)):
                    kinds[rec[2] if rec[0] == "SubAfter" else rec[5]].add(rec[0])
                return all(kinds[m] >= {"Pub", "SubBefore", "SubAfter"} for m in sent)

            await async_wait_until(complete, 30, "pub and sub records of every message")
            records = _records(_read_topic(trace_cluster, reader, TRACE_TOPIC))
            pubs = {r[5]: r for r in records if r[0] == "Pub"}
            for msg_id, offset_msg_id in sent.items():
                pub = pubs[msg_id]
                assert pub[3] == pgroup and pub[4] == topic and pub[6] == "TagT"
                assert pub[12] == offset_msg_id and pub[13] == "true"
            afters = [r for r in records if r[0] == "SubAfter" and r[2] in sent]
            assert all(r[8] == cgroup and r[4] == "true" for r in afters)
            assert p.trace_dispatcher is not None and p.trace_dispatcher.dropped == 0
            assert p.trace_dispatcher.sent >= 1 and p.trace_dispatcher.send_failures == 0

    try:
        run(kind, main())
    finally:
        reader.shutdown()


def test_async_metrics_flow_control_pauses_pulls_and_suspend_resume(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    pytest.importorskip("prometheus_client", reason="rocketq[metrics] (in dev) is not installed")
    from tests.integration.test_client_metrics import sample

    topic, group = unique_name("acmt"), unique_name("acmg")
    embedded_cluster.create_topic(topic, 1)
    embedded_cluster.wait_route(topic)
    metrics = PrometheusClientMetrics()
    config = dataclasses.replace(FAST, namesrv_addr=embedded_cluster.namesrv_addr, metrics=metrics)
    n = 20

    async def main() -> None:
        release = asyncio.Event()
        done: list[bytes] = []

        async def listener(
            msgs: list[MessageExt], _ctx: ConsumeConcurrentlyContext
        ) -> ConsumeConcurrentlyStatus:
            await release.wait()
            done.extend(m.body for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        async with AsyncProducer(unique_name("acmp"), client_config=config) as producer:
            for i in range(n):
                await producer.send(Message(topic, f"cm-{i}".encode()))
        assert sample(metrics, "rocketmq_send_cost_time_count", topic=topic, invocation_status="success") == n

        consumer = AsyncPushConsumer(
            config=PushConsumerConfig(
                consumer_group=group,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                pull_threshold_for_queue=1,
                pull_batch_size=4,
            ),
            client_config=dataclasses.replace(config, instance_name=unique_name("acmi")),
            consume_concurrency=1,
        )
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        async with consumer:
            # the listener holds: one pull's messages sit in the process queue, over the
            # threshold of 1, so the pull task pauses instead of pulling more
            await async_wait_until(lambda: consumer.queue_flow_control_times >= 3, 20, "flow-control pauses")
            table = consumer._rebalance.process_queue_table  # type: ignore[union-attr]
            (pq,) = [pq for mq, pq in table.items() if mq.topic == topic]  # not %RETRY%'s
            assert pq.msg_count == 4  # exactly one pull's worth: nothing was pulled past the threshold
            assert (
                sample(metrics, "rocketmq_consumer_flow_control_total", consumer_group=group, reason="count")
                > 0
            )
            assert (
                sample(metrics, "rocketmq_consumer_cached_messages", topic=topic, consumer_group=group) == 4
            )
            assert (
                sample(metrics, "rocketmq_consumer_rebalance_total", consumer_group=group, topic=topic) >= 1
            )
            # suspend: what is cached is consumed, nothing more is pulled until resume
            consumer.suspend()
            assert consumer.paused
            release.set()
            await async_wait_until(lambda: len(done) == 4, 10, "the cached batch consumed")
            await asyncio.sleep(1.5)  # a pull would have come within 50 ms; nothing may come
            assert len(done) == 4 and pq.msg_count == 0
            consumer.resume()
            await async_wait_until(lambda: len(done) == n, 30, "every message consumed after resume")
            await async_wait_until(
                lambda: (
                    sample(
                        metrics,
                        "rocketmq_consumer_messages_total",
                        topic=topic,
                        consumer_group=group,
                        invocation_status="success",
                    )
                    == n
                ),
                10,
                "consumed messages counted",
            )
        families = {f.name: f for f in metrics.registry.collect()}
        assert not families["rocketmq_consumer_cached_messages"].samples  # unwatched at shutdown

    asyncio.run(main())
