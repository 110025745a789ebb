"""The README's Spark block runs as pasted against a real local SparkSession and a real
embedded cluster (issue #20): the batch read, the availableNow stream into Parquet, and the
keyed write of the alerts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from rocketq.admin import Admin
from rocketq.client import Message, Producer
from rocketq.testing.cluster import EmbeddedCluster
from tests.integration.test_readme import readme_blocks, run_blocks

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_readme_spark_block_runs(spark: SparkSession, tmp_path: Path) -> None:
    # the block's relative out/ and chk/ would land in the Spark JVM's working directory
    blocks = [
        b.replace('"out/"', repr(str(tmp_path / "out"))).replace('"chk/"', repr(str(tmp_path / "chk")))
        for b in readme_blocks(spark=True)
    ]
    assert len(blocks) == 1 and str(tmp_path / "chk") in blocks[0]
    with EmbeddedCluster(store_dir=tmp_path / "store") as cluster:
        with Producer("readme-spark", namesrv_addr=cluster.namesrv_addr) as producer:
            for event in ("alice: balance is 100", "bob: balance is 20", "alice: balance is 50"):
                producer.send(Message("wallet-events", event.encode()))
        ns: dict[str, Any] = {"spark": spark}
        run_blocks(blocks, cluster.namesrv_addr, ns)
        assert ns["df"].count() == 3
        assert spark.read.parquet(str(tmp_path / "out")).count() == 3
        with Admin(cluster.namesrv_addr) as admin:
            assert admin.topic_status("wallet-alerts").total_messages == 1
