"""The rocketmq Spark format against a broker with aclEnable=true: accessKey/secretKey sign
reads and writes, a missing or wrong secret is refused, and the secret never shows in the
query plan's string forms."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from rocketq.testing.cluster import EmbeddedCluster
from tests.integration.test_acl import APP
from tests.integration.test_acl import acl_cluster as start_acl_cluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with start_acl_cluster(tmp_path_factory.mktemp("rocketmq-home")) as cluster:
        cluster.create_topic("TopicOk", 2)
        yield cluster


def test_signed_write_and_read(spark: SparkSession, acl_cluster: EmbeddedCluster) -> None:
    creds = {"accessKey": APP.access_key, "secretKey": APP.secret_key}
    df = spark.createDataFrame([(f"s{i}".encode(),) for i in range(5)], "body binary")
    writer = (
        df.write.format("rocketmq").option("nameserver", acl_cluster.namesrv_addr).option("topic", "TopicOk")
    )
    writer.options(**creds).mode("append").save()
    read = (
        spark.read.format("rocketmq")
        .option("nameserver", acl_cluster.namesrv_addr)
        .option("topic", "TopicOk")
        .option("consumerGroup", "GroupOk")
        .options(**creds)
        .load()
    )
    assert sorted(bytes(r.body).decode() for r in read.select("body").collect()) == [
        f"s{i}" for i in range(5)
    ]
    plan = read._jdf.queryExecution().toString()
    assert APP.secret_key not in plan
    wrong = writer.option("secretKey", "wrongSecret")
    with pytest.raises(Exception, match="Check signature failed"):
        wrong.mode("append").save()
