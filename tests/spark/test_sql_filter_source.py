"""The Spark source's ``sqlFilter`` option: parsed and checked on the driver, evaluated on
the broker (issue #24)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from rocketq.client.producer import Producer
from rocketq.errors import BrokerError, IllegalArgumentError
from rocketq.filter import FilterParseError
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue
from rocketq.spark.options import parse_read_options
from rocketq.spark.source import QueueRange, read_range
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_sql_filter_option_is_checked() -> None:
    base = {"nameserver": "127.0.0.1:9876", "topic": "t"}
    opts = parse_read_options({**base, "SQLFILTER": "a > 1"}, streaming=False)
    assert opts.sql_filter == "a > 1" and opts.subscription == ("a > 1", "SQL92") and opts.filtered
    assert opts.tags == ()
    assert parse_read_options(base, streaming=False).subscription == ("*", "TAG")
    with pytest.raises(FilterParseError):
        parse_read_options({**base, "sqlFilter": "a >"}, streaming=False)
    with pytest.raises(IllegalArgumentError, match="exclude each other"):
        parse_read_options({**base, "sqlFilter": "a > 1", "subExpression": "TagA"}, streaming=False)
    with pytest.raises(IllegalArgumentError, match="empty"):
        parse_read_options({**base, "sqlFilter": " "}, streaming=False)


def _fill(cluster: EmbeddedCluster, topic: str, n: int) -> None:
    cluster.create_topic(topic, 1)
    mq = MessageQueue(topic, "broker-a", 0)
    with Producer(f"{topic}_p", namesrv_addr=cluster.namesrv_addr) as producer:
        producer.send(
            [
                Message(topic, b"x", properties={"n": str(i), "color": "red" if i % 3 else "blue"})
                for i in range(n)
            ],
            queue=mq,
        )


def test_read_range_gets_only_matching_rows_from_the_broker() -> None:
    with EmbeddedCluster(broker_conf={"enablePropertyFilter": "true"}) as cluster:
        _fill(cluster, "sqlsrc", 300)
        raw = {
            "nameserver": cluster.namesrv_addr,
            "topic": "sqlsrc",
            "sqlFilter": "color = 'blue' AND n >= 30",
            "pullBatchSize": "64",
        }
        options = parse_read_options(raw, streaming=False)
        offsets = [
            o
            for batch in read_range(QueueRange("sqlsrc", "broker-a", 0, 0, 300, options))
            for o in batch.column("queue_offset").to_pylist()
        ]
        assert offsets == [i for i in range(300) if i % 3 == 0 and i >= 30]


@pytest.mark.slow
def test_spark_read_with_sql_filter(spark: SparkSession) -> None:
    """``spark.read.format("rocketmq").option("sqlFilter", ...)``: only matching rows."""
    with EmbeddedCluster(broker_conf={"enablePropertyFilter": "true"}) as cluster:
        _fill(cluster, "sqlspark", 60)
        rows = (
            spark.read.format("rocketmq")
            .option("nameserver", cluster.namesrv_addr)
            .option("topic", "sqlspark")
            .option("sqlFilter", "color = 'blue' AND n BETWEEN 10 AND 40")
            .load()
            .select("queue_offset")
            .collect()
        )
    assert sorted(r.queue_offset for r in rows) == [i for i in range(60) if i % 3 == 0 and 10 <= i <= 40]


def test_a_broker_without_property_filter_refuses(embedded_cluster: EmbeddedCluster) -> None:
    _fill(embedded_cluster, "sqlsrc_off", 5)
    options = parse_read_options(
        {"nameserver": embedded_cluster.namesrv_addr, "topic": "sqlsrc_off", "sqlFilter": "n > 1"},
        streaming=False,
    )
    with pytest.raises(BrokerError, match="does not support consumer to filter message by SQL92"):
        list(read_range(QueueRange("sqlsrc_off", "broker-a", 0, 0, 5, options)))
