"""The rocketmq Spark format against a real broker and a real local SparkSession (issue #7).

Batch reads with every offset option, tag filters, streaming with maxOffsetsPerTrigger and
Trigger.AvailableNow, new queues mid-stream, restart from the checkpoint after a stop and
after a SIGKILL of the driver (exactly once into the file sink), failOnDataLoss both ways,
consumer progress on the broker, batch and streaming writes with sharding keys, and option
checking.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual Spark alias
from pyspark.sql.types import StructType

from rocketq.client.producer import Producer
from rocketq.client.selectors import SelectMessageQueueByHash
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue
from rocketq.spark.client import SourceClient
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]


def produce(
    cluster: EmbeddedCluster,
    topic: str,
    per_queue: list[int],
    *,
    prefix: str = "m",
    tags: Callable[[int], str | None] = lambda i: "A" if i % 2 else "B",
) -> list[str]:
    """Send ``per_queue[q]`` messages to queue q (batches); returns the bodies sent."""
    bodies: list[str] = []
    with Producer(f"pg_{topic}"[:100], namesrv_addr=cluster.namesrv_addr) as producer:
        for q, count in enumerate(per_queue):
            msgs = []
            for i in range(count):
                body = f"{prefix}-{q}-{i}"
                bodies.append(body)
                msgs.append(
                    Message(topic, body.encode(), tags=tags(i), keys=f"k{i}", properties={"seq": str(i)})
                )
            for start in range(0, len(msgs), 200):
                producer.send(msgs[start : start + 200], queue=MessageQueue(topic, "broker-a", q))
    return bodies


def reader(spark: SparkSession, cluster: EmbeddedCluster, topic: str, **options: str) -> DataFrame:
    r = spark.read.format("rocketmq").option("nameserver", cluster.namesrv_addr).option("topic", topic)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def bodies_of(df: DataFrame) -> list[str]:
    return sorted(bytes(r.body).decode() for r in df.select("body").collect())


def stream(spark: SparkSession, cluster: EmbeddedCluster, topic: str, **options: str) -> DataFrame:
    r = spark.readStream.format("rocketmq").option("nameserver", cluster.namesrv_addr).option("topic", topic)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


# ---------------------------------------------------------------------- batch reads
def test_batch_read_schema_columns_and_offset_options(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("sb")
    embedded_cluster.create_topic(topic, 3)
    t0 = int(time.time() * 1000)
    sent = produce(embedded_cluster, topic, [5, 3, 0])

    df = reader(spark, embedded_cluster, topic)
    assert df.columns == [
        "topic", "broker", "queue_id", "queue_offset", "msg_id", "keys", "tags", "body", "properties",
        "born_timestamp", "store_timestamp", "born_host", "reconsume_times",
    ]  # fmt: skip
    rows = df.collect()
    assert sorted(bytes(r.body).decode() for r in rows) == sorted(sent)
    first = next(r for r in rows if r.queue_id == 0 and r.queue_offset == 1)
    assert (first.topic, first.broker, first.keys, first.tags, first.reconsume_times) == (
        topic, "broker-a", "k1", "A", 0,
    )  # fmt: skip
    assert first.properties["seq"] == "1"
    assert first.properties["UNIQ_KEY"] == first.msg_id and len(first.msg_id) == 32
    assert first.born_host.startswith("127.0.0.1:")
    assert abs(first.store_timestamp.timestamp() * 1000 - t0) < 60_000
    assert len({r.msg_id for r in rows}) == 8

    # latest -> nothing; JSON start/end (-2 earliest, -1 latest; unlisted queues: earliest/latest)
    assert reader(spark, embedded_cluster, topic, startingOffsets="latest").count() == 0
    part = reader(
        spark,
        embedded_cluster,
        topic,
        startingOffsets=f'{{"{topic}": {{"broker-a:0": 2, "broker-a:1": -1}}}}',
        endingOffsets=f'{{"{topic}": {{"broker-a:0": 4}}}}',
    )
    assert sorted(
        (r.queue_id, r.queue_offset) for r in part.select("queue_id", "queue_offset").collect()
    ) == [
        (0, 2),
        (0, 3),
    ]
    # tag filter (broker hash match + client re-check)
    assert sorted(bodies_of(reader(spark, embedded_cluster, topic, subExpression="A"))) == sorted(
        b for b in sent if int(b.rsplit("-", 1)[1]) % 2
    )


def test_include_properties_false_drops_only_that_column(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    topic = unique_name("np")
    embedded_cluster.create_topic(topic, 2)
    sent = produce(embedded_cluster, topic, [6, 5])
    full = reader(spark, embedded_cluster, topic)
    bare = reader(spark, embedded_cluster, topic, includeProperties="false")
    assert bare.columns == [c for c in full.columns if c != "properties"]
    assert bare.schema == StructType([f for f in full.schema.fields if f.name != "properties"])
    assert sorted(bare.collect()) == sorted(full.drop("properties").collect())
    streamed = stream(spark, embedded_cluster, topic, startingOffsets="earliest", includeProperties="false")
    assert "properties" not in streamed.columns
    assert flat(run_available_now(streamed, tmp_path / "ckpt")) == sorted(sent)
    # a schema passed with .schema() must match the one the option selects
    with pytest.raises(Exception, match="fixed schema"):
        spark.read.format("rocketmq").schema(full.schema).option(
            "nameserver", embedded_cluster.namesrv_addr
        ).option("topic", topic).option("includeProperties", "false").load().collect()


def test_min_partitions_splits_queues_and_reads_the_same_rows(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("mp")
    embedded_cluster.create_topic(topic, 2)
    sent = produce(embedded_cluster, topic, [30, 10])
    split = reader(spark, embedded_cluster, topic, minPartitions="4")
    assert split.rdd.getNumPartitions() == 4  # 30/40*4 = 3 pieces of queue 0, 1 of queue 1
    assert reader(spark, embedded_cluster, topic).rdd.getNumPartitions() == 2
    rows = split.select("queue_id", "queue_offset", "body").collect()
    assert sorted((r.queue_id, r.queue_offset) for r in rows) == [(0, i) for i in range(30)] + [
        (1, i) for i in range(10)
    ]
    assert sorted(bytes(r.body).decode() for r in rows) == sorted(sent)


def test_batch_read_starting_timestamp(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("ts")
    embedded_cluster.create_topic(topic, 2)
    produce(embedded_cluster, topic, [4, 4], prefix="old")
    time.sleep(0.05)
    ts = int(time.time() * 1000)
    time.sleep(0.05)
    new = produce(embedded_cluster, topic, [3, 2], prefix="new")
    assert bodies_of(reader(spark, embedded_cluster, topic, startingTimestamp=str(ts))) == sorted(new)
    # endingTimestamp: each queue ends before its first message stored at or after it
    old = sorted(set(bodies_of(reader(spark, embedded_cluster, topic))) - set(new))
    assert bodies_of(reader(spark, embedded_cluster, topic, endingTimestamp=str(ts))) == old
    time.sleep(0.05)
    later = int(time.time() * 1000)
    assert bodies_of(reader(spark, embedded_cluster, topic, endingTimestamp=str(later))) == sorted(old + new)
    assert (
        reader(spark, embedded_cluster, topic, startingTimestamp=str(ts), endingTimestamp=str(later)).count()
        == 5
    )


def test_bad_options_are_rejected(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("bad")
    embedded_cluster.create_topic(topic, 1)
    with pytest.raises(Exception, match="unknown read option"):
        reader(spark, embedded_cluster, topic, startingOffset="earliest").count()
    with pytest.raises(Exception, match="streaming reads only"):
        reader(spark, embedded_cluster, topic, maxOffsetsPerTrigger="5").count()
    query = stream(spark, embedded_cluster, topic, endingOffsets="latest").writeStream.format("noop").start()
    try:
        with pytest.raises(Exception, match="batch reads only"):
            query.awaitTermination(60)
    finally:
        query.stop()
    with pytest.raises(Exception, match="nameserver is required"):
        spark.read.format("rocketmq").option("topic", topic).load().count()
    df = spark.createDataFrame([("x", "k")], "body string, shardingKey string")
    with pytest.raises(Exception, match="cannot be written"):
        df.write.format("rocketmq").option("nameserver", embedded_cluster.namesrv_addr).option(
            "topic", topic
        ).mode("append").save()


def test_fail_on_data_loss_both_ways(spark: SparkSession, tmp_path: Path) -> None:
    every_hour = ";".join(f"{h:02d}" for h in range(24))
    conf = {"fileReservedTime": "0", "deleteWhen": every_hour, "cleanResourceInterval": "200"}
    with EmbeddedCluster(
        broker_conf=conf, mapped_file_size_commit_log=64 * 1024, store_dir=tmp_path
    ) as cluster:
        cluster.create_topic("lossy", 1)
        produce(cluster, "lossy", [1500])
        mq = MessageQueue("lossy", "broker-a", 0)
        with SourceClient(cluster.namesrv_addr) as client:
            deadline = time.monotonic() + 30
            while client.min_offset(mq) == 0:
                assert time.monotonic() < deadline, "retention never deleted a segment"
                time.sleep(0.2)
            time.sleep(0.5)
            low, high = client.min_offset(mq), client.max_offset(mq)
        start = '{"lossy": {"broker-a:0": 0}}'
        with pytest.raises(Exception, match="failOnDataLoss=false"):
            reader(spark, cluster, "lossy", startingOffsets=start).count()
        rows = reader(spark, cluster, "lossy", startingOffsets=start, failOnDataLoss="false").select(
            "queue_offset"
        )
        assert sorted(r.queue_offset for r in rows.collect()) == list(range(low, high))


# ---------------------------------------------------------------------- streaming reads
def run_available_now(df: DataFrame, checkpoint: Path) -> list[list[str]]:
    """Run an availableNow query collecting each micro-batch's bodies."""
    batches: list[list[str]] = []

    def collect(batch: DataFrame, batch_id: int) -> None:
        batches.append(sorted(bytes(r.body).decode() for r in batch.select("body").collect()))

    query = (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    return [b for b in batches if b]


def flat(batches: list[list[str]]) -> list[str]:
    return sorted(b for batch in batches for b in batch)


def test_stream_max_offsets_per_trigger_available_now_and_consumer_group(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    topic, group = unique_name("mt"), unique_name("cg")
    embedded_cluster.create_topic(topic, 4)
    sent = produce(embedded_cluster, topic, [40, 30, 20, 10])
    df = stream(
        spark,
        embedded_cluster,
        topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger="30",
        consumerGroup=group,
    )
    batches = run_available_now(df, tmp_path / "ckpt")
    assert [len(b) for b in batches] == [30, 30, 30, 10]
    assert sorted(b for batch in batches for b in batch) == sorted(sent)
    # the processed offsets are on the broker for the group (consumer progress, lag 0)
    with SourceClient(embedded_cluster.namesrv_addr) as client:
        progress = {
            q: client.query_consumer_offset(group, MessageQueue(topic, "broker-a", q)) for q in range(4)
        }
    assert progress == {0: 40, 1: 30, 2: 20, 3: 10}


def test_stream_picks_up_new_queues_from_earliest(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    topic = unique_name("nq")
    embedded_cluster.create_topic(topic, 2)
    first = produce(embedded_cluster, topic, [3, 3], prefix="a")
    df = stream(spark, embedded_cluster, topic, startingOffsets="earliest")
    assert flat(run_available_now(df, tmp_path / "ckpt")) == sorted(first)
    embedded_cluster.create_topic(topic, 4)  # two more queues
    second = produce(embedded_cluster, topic, [1, 0, 2, 2], prefix="b")
    assert flat(run_available_now(df, tmp_path / "ckpt")) == sorted(second)


def test_restart_after_stop_and_after_sigkill_reads_exactly_once(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    topic = unique_name("eo")
    embedded_cluster.create_topic(topic, 4)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    sent = produce(embedded_cluster, topic, [25, 25, 25, 25], prefix="one")

    def run_to_parquet() -> None:
        q = (
            stream(spark, embedded_cluster, topic, startingOffsets="earliest", maxOffsetsPerTrigger="40")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        assert q.awaitTermination(180)
        assert q.exception() is None

    run_to_parquet()  # stop: the query ends after the available data
    sent += produce(embedded_cluster, topic, [100, 100, 100, 100], prefix="two")
    # a driver in another process, killed with SIGKILL in the middle of the stream
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.spark.stream_driver_proc",
            embedded_cluster.namesrv_addr,
            topic,
            str(out),
            str(ckpt),
        ],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    try:
        deadline = time.monotonic() + 120
        commits = ckpt / "commits"
        before = len(list(commits.iterdir()))
        while len([p for p in commits.iterdir() if not p.name.startswith(".")]) < before + 2:
            assert proc.poll() is None, "the streaming driver exited early"
            assert time.monotonic() < deadline, "the streaming driver made no progress"
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    run_to_parquet()  # restart from the checkpoint
    got = spark.read.parquet(str(out)).select("msg_id", "body").collect()
    assert len(got) == len(sent) == 500
    assert len({r.msg_id for r in got}) == 500
    assert sorted(bytes(r.body).decode() for r in got) == sorted(sent)


# ---------------------------------------------------------------------- writes
def check_sharding(
    spark: SparkSession, cluster: EmbeddedCluster, topic: str, users: int, per_user: int
) -> None:
    rows = reader(spark, cluster, topic).select("queue_id", "queue_offset", "body", "properties").collect()
    assert len(rows) == users * per_user
    queues = [MessageQueue(topic, "broker-a", q) for q in range(4)]
    by_user: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for r in rows:
        user, seq = bytes(r.body).decode().split(":")
        by_user[user].append((r.queue_offset, int(seq), r.queue_id))
        assert r.properties["SPARK_ROW_ID"]
    for user, items in by_user.items():
        assert {q for _, _, q in items} == {
            SelectMessageQueueByHash().select(queues, Message(topic), user).queue_id
        }
        assert [s for _, s, _ in sorted(items)] == list(range(per_user))  # order kept per key


def test_batch_write_with_sharding_keys(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("wb")
    embedded_cluster.create_topic(topic, 4)
    rows: list[tuple[Any, ...]] = [
        (f"u{u}:{s}".encode(), f"u{u}", "T", f"key{s}", {"origin": "spark"})
        for s in range(12)
        for u in range(7)
    ]
    df = spark.createDataFrame(
        rows, "body binary, sharding_key string, tags string, keys string, properties map<string,string>"
    )
    df.coalesce(1).write.format("rocketmq").option("nameserver", embedded_cluster.namesrv_addr).option(
        "topic", topic
    ).mode("append").save()
    check_sharding(spark, embedded_cluster, topic, 7, 12)
    back = reader(spark, embedded_cluster, topic).select("tags", "keys", "properties").first()
    assert back is not None
    assert back.tags == "T" and back.keys.startswith("key") and back.properties["origin"] == "spark"


def test_stream_write_with_sharding_keys(
    spark: SparkSession, embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    source, sink = unique_name("ws"), unique_name("wd")
    embedded_cluster.create_topic(source, 2)
    embedded_cluster.create_topic(sink, 4)
    with Producer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr) as producer:
        for s in range(10):
            for u in range(5):
                producer.send(
                    Message(source, f"u{u}:{s}".encode()), queue=MessageQueue(source, "broker-a", 0)
                )
    out = (
        stream(spark, embedded_cluster, source, startingOffsets="earliest")
        .select("body", F.split(F.col("body").cast("string"), ":").getItem(0).alias("sharding_key"))
        .writeStream.format("rocketmq")
        .option("nameserver", embedded_cluster.namesrv_addr)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert out.awaitTermination(180)
    assert out.exception() is None
    check_sharding(spark, embedded_cluster, sink, 5, 10)


def test_executor_side_read_and_write_leave_no_thread_behind(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    """What a Python worker runs per task: its own clients, closed (threads joined) at the end."""
    import threading

    import pyarrow as pa

    from rocketq.spark.options import parse_read_options, parse_write_options
    from rocketq.spark.sink import MessageSink
    from rocketq.spark.source import QueueRange, read_range

    topic = unique_name("th")
    embedded_cluster.create_topic(topic, 1)
    before = {t.ident for t in threading.enumerate()}
    batch = pa.RecordBatch.from_pydict({"body": [b"a", b"b", b"c"], "sharding_key": ["x", "y", "x"]})
    options = parse_write_options({"nameserver": embedded_cluster.namesrv_addr, "topic": topic})
    with MessageSink(options, "w-0") as sink:
        assert sink.write_all([batch]) == 3
    read = parse_read_options({"nameserver": embedded_cluster.namesrv_addr, "topic": topic}, streaming=False)
    rows = [r for b in read_range(QueueRange(topic, "broker-a", 0, 0, 3, read)) for r in b.to_pylist()]
    assert [r["body"] for r in rows] == [b"a", b"b", b"c"]
    assert [dict(r["properties"])["SPARK_ROW_ID"] for r in rows] == ["w-0-0", "w-0-1", "w-0-2"]
    deadline = time.monotonic() + 5
    while {t.ident for t in threading.enumerate()} - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.name for t in threading.enumerate() if t.ident not in before] == []
