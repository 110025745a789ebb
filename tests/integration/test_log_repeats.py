"""A broker going away does not flood the client's log (issue #20): repeated pull failures and
"retry another broker" lines are rate-limited per broker (rocketq.common.log_limiter)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.client import Message, Producer
from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer
from rocketq.errors import RocketqError
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(store_dir=tmp_path / "store") as c:
        yield c


def test_a_dead_broker_logs_a_few_lines_not_hundreds(
    cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.create_topic("LogRepeats", 4)
    fast = ClientConfig(pull_time_delay_mills_when_exception_ms=100)
    producer = Producer("log_repeats_pg", namesrv_addr=cluster.namesrv_addr)
    consumer = PushConsumer("log_repeats_cg", namesrv_addr=cluster.namesrv_addr, client_config=fast)
    consumer.subscribe("LogRepeats", "*")
    consumer.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    producer.start()
    consumer.start()
    try:
        producer.send(Message("LogRepeats", b"route"))
        wait_until(lambda: len(consumer.assigned_queues("LogRepeats")) == 4, 15, "rebalance")
        with caplog.at_level(logging.WARNING, logger="rocketq"):
            cluster.stop_broker(0)
            with pytest.raises(RocketqError):
                producer.send(Message("LogRepeats", b"lost"))  # 3 attempts, all refused
            # every queue's pull fails every 100 ms for 2 s: ~80 failures
            time.sleep(2)
        sends = [r for r in caplog.records if "retry another broker" in r.getMessage()]
        pulls = [r for r in caplog.records if r.name.endswith("push") and "failed" in r.getMessage()]
        assert len(sends) == 1, [r.getMessage() for r in sends]
        assert 1 <= len(pulls) <= 4, [r.getMessage() for r in pulls]
    finally:
        consumer.shutdown()
        producer.shutdown()
