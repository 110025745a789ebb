"""The demo pipeline behind ``rocketq demo``: wallet events end to end, checked.

Stages (each timed; see :class:`DemoResult`):

1. an :class:`~rocketq.testing.cluster.EmbeddedCluster` (temporary store, free ports) with
   the topics ``wallet-events`` (8 queues) and ``wallet-alerts`` (4 queues);
2. a :class:`~rocketq.client.producer.Producer` sends the events of
   :func:`~rocketq.demo.wallet.generate_events`, sharded by user id with
   :class:`~rocketq.client.selectors.SelectMessageQueueByHash`;
3. meanwhile an orderly :class:`~rocketq.client.consumer.push.PushConsumer` (group
   ``wallet-sms``) plays the SMS notifier: one line per event in ``notifications.txt``,
   and an :class:`~rocketq.demo.wallet.OrderChecker` that counts any user shown an older
   balance after a newer one;
4. a Spark Structured Streaming query reads ``wallet-events`` with the ``rocketmq``
   connector (Trigger.AvailableNow, checkpointed, consumer group ``wallet-spark``) into a
   Parquet event table; Spark then computes per-user final balances and event counts and
   per-minute volumes (Parquet), and writes one alert per user whose balance ever went
   below the threshold to ``wallet-alerts`` through the connector's sink;
5. a concurrent :class:`PushConsumer` (group ``wallet-alert-reader``) reads the alerts back.

The checks (all must pass for exit status 0): every event produced, notified and read by
Spark exactly once; no order violation; Spark's balances equal the notifier's (and the
generator's); the alerts expected were written and received; both groups' consumer
progress equals the queues' max offsets (lag 0).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
)
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.producer import Producer
from rocketq.client.selectors import SelectMessageQueueByHash
from rocketq.demo.wallet import OrderChecker, WalletEvent, generate_events
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster

__all__ = [
    "ALERT_TOPIC",
    "EVENT_TOPIC",
    "NOTIFIER_GROUP",
    "SPARK_GROUP",
    "Check",
    "DemoConfig",
    "DemoResult",
    "QueueProgress",
    "Stage",
    "run_demo",
]

EVENT_TOPIC = "wallet-events"
ALERT_TOPIC = "wallet-alerts"
NOTIFIER_GROUP = "wallet-sms"
SPARK_GROUP = "wallet-spark"
ALERT_GROUP = "wallet-alert-reader"
_FAST = ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=1000)


@dataclass(frozen=True)
class DemoConfig:
    """Sizes and places of a demo run (defaults: a few hundred users, ~20 events each)."""

    users: int = 300
    events_per_user: int = 20
    #: alert when a user's balance ever went below this many cents
    threshold_cents: int = 0
    event_queues: int = 8
    alert_queues: int = 4
    #: micro-batch size of the Spark stream (maxOffsetsPerTrigger)
    max_offsets_per_trigger: int = 2500
    #: where the outputs go; None: a temporary folder, removed unless ``keep``
    workdir: Path | None = None
    keep: bool = False
    #: give up waiting for a consumer after this long
    timeout_s: float = 180.0
    seed: int = 7

    def __post_init__(self) -> None:
        if self.users < 1 or self.events_per_user < 1:
            raise ValueError("users and events_per_user must be >= 1")


@dataclass(frozen=True)
class Stage:
    """A timed stage: ``count`` items in ``seconds``."""

    name: str
    count: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class QueueProgress:
    """One queue of ``wallet-events``: its max offset and each group's committed offset."""

    queue_id: int
    max_offset: int
    notifier_offset: int
    spark_offset: int

    @property
    def lag(self) -> int:
        return max(self.max_offset - self.notifier_offset, self.max_offset - self.spark_offset)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class DemoResult:
    """Everything the report shows."""

    config: DemoConfig
    workdir: Path
    stages: list[Stage] = field(default_factory=list)
    produced: int = 0
    notified: int = 0
    spark_rows: int = 0
    alerts_written: int = 0
    alerts_received: int = 0
    progress: list[QueueProgress] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    outputs: dict[str, Path] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


def _wait(cond: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class _Notifier:
    """The orderly SMS notifier: one line per event, order checked per user."""

    def __init__(self, path: Path) -> None:
        self.checker = OrderChecker()
        self._file = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self.first = 0.0
        self.last = 0.0

    def __call__(self, msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        for msg in msgs:
            event = WalletEvent.from_json(msg.body)
            if self.checker.observe(event):
                with self._lock:
                    self._file.write(
                        f"SMS to {event.user}: {event.kind} of {event.amount / 100:.2f}, "
                        f"balance {event.balance / 100:.2f}\n"
                    )
        now = time.monotonic()
        self.first = self.first or now
        self.last = now
        return ConsumeOrderlyStatus.SUCCESS

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _produce(cluster: EmbeddedCluster, events: list[WalletEvent], console: Console) -> float:
    selector = SelectMessageQueueByHash()
    start = time.monotonic()
    with (
        Producer("wallet-producer", namesrv_addr=cluster.namesrv_addr) as producer,
        Progress(
            TextColumn("[bold]producing wallet events"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as bar,
    ):
        task = bar.add_task("produce", total=len(events))
        for i, event in enumerate(events):
            msg = Message(EVENT_TOPIC, event.to_json(), tags=event.kind, keys=event.user)
            producer.send(msg, selector=selector, arg=event.user)
            if i % 50 == 49 or i == len(events) - 1:
                bar.update(task, completed=i + 1)
    return time.monotonic() - start


def run_demo(config: DemoConfig, console: Console, spark_factory: Callable[[], Any]) -> DemoResult:
    """Run every stage and the checks; ``spark_factory()`` returns a SparkSession with the
    ``rocketmq`` format registered (the caller owns stopping it)."""
    temp = config.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="rocketq-demo-")) if config.workdir is None else config.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    result = DemoResult(config=config, workdir=workdir)
    try:
        _run(config, console, spark_factory, result)
    finally:
        if temp and not config.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def _run(config: DemoConfig, console: Console, spark_factory: Callable[[], Any], result: DemoResult) -> None:
    workdir = result.workdir
    events = generate_events(
        config.users, config.events_per_user, seed=config.seed, start_ms=int(time.time() * 1000)
    )
    truth_balance: dict[str, int] = {}
    truth_min: dict[str, int] = {}
    for e in events:
        truth_balance[e.user] = e.balance
        truth_min[e.user] = min(truth_min.get(e.user, e.balance), e.balance)
    expected_alerts = {u for u, low in truth_min.items() if low < config.threshold_cents}

    console.rule("[bold]1. embedded cluster")
    t0 = time.monotonic()
    with EmbeddedCluster(store_dir=workdir / "store") as cluster:
        cluster.create_topic(EVENT_TOPIC, config.event_queues)
        cluster.create_topic(ALERT_TOPIC, config.alert_queues)
        console.print(
            f"name server {cluster.namesrv_addr}, broker {cluster.broker_addrs[0]}; topics "
            f"{EVENT_TOPIC} ({config.event_queues} queues), {ALERT_TOPIC} ({config.alert_queues} queues) "
            f"in {time.monotonic() - t0:.1f} s"
        )

        console.rule("[bold]2-3. producer and orderly SMS notifier")
        notifier = _Notifier(workdir / "notifications.txt")
        result.outputs["notifications"] = workdir / "notifications.txt"
        sms = PushConsumer(
            config=PushConsumerConfig(
                consumer_group=NOTIFIER_GROUP, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            ),
            namesrv_addr=cluster.namesrv_addr,
            client_config=_FAST,
        )
        sms.subscribe(EVENT_TOPIC, "*")
        sms.register_message_listener_orderly(notifier)
        sms.start()
        try:
            seconds = _produce(cluster, events, console)
            result.produced = len(events)
            result.stages.append(Stage("produce (hash selector on user id)", len(events), seconds))
            done = _wait(lambda: _distinct_notified(notifier) >= len(events), config.timeout_s)
            if not done:
                console.print("[red]the notifier did not receive every event in time")
        finally:
            sms.shutdown()  # persists its consumer offsets
            notifier.close()
        result.notified = _distinct_notified(notifier)
        span = max(notifier.last - notifier.first, 1e-3)
        result.stages.append(Stage("notify (orderly push consumer)", notifier.checker.notified, span))
        console.print(
            f"{notifier.checker.notified} notifications, {notifier.checker.violations} order violations "
            f"-> {result.outputs['notifications']}"
        )

        console.rule("[bold]4. Spark Structured Streaming job")
        alerts_seen: set[str] = set()
        alerts_lock = threading.Lock()

        def on_alert(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
            with alerts_lock:
                for msg in msgs:
                    alerts_seen.add(json.loads(msg.body)["user"])
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        reader = PushConsumer(
            config=PushConsumerConfig(
                consumer_group=ALERT_GROUP, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            ),
            namesrv_addr=cluster.namesrv_addr,
            client_config=_FAST,
        )
        reader.subscribe(ALERT_TOPIC, "*")
        reader.register_message_listener(on_alert)
        reader.start()
        try:
            spark_balances, alerts_sent_at = _spark_job(config, console, spark_factory, cluster, result)
            console.rule("[bold]5. alert reader (concurrent push consumer)")
            _wait(
                lambda: len(alerts_seen) >= len(expected_alerts), config.timeout_s if expected_alerts else 0
            )
            result.stages.append(
                Stage(
                    "alerts sent by Spark and read back", len(alerts_seen), time.monotonic() - alerts_sent_at
                )
            )
        finally:
            reader.shutdown()
        result.alerts_received = len(alerts_seen)
        console.print(f"{len(alerts_seen)} alerts received")

        result.progress = _progress(cluster, config)
    _checks(result, notifier, truth_balance, spark_balances, expected_alerts, alerts_seen)


def _distinct_notified(notifier: _Notifier) -> int:
    """Events notified at least once (each user's seqs arrive in order: last seq + 1)."""
    return sum(seq + 1 for seq in list(notifier.checker.last_seq.values()))


def _spark_job(
    config: DemoConfig,
    console: Console,
    spark_factory: Callable[[], Any],
    cluster: EmbeddedCluster,
    result: DemoResult,
) -> tuple[dict[str, int], float]:
    """The Spark stage; returns the final balance per user and when the alert write began."""
    from pyspark.sql import functions as F  # noqa: N812 - the usual Spark alias

    t0 = time.monotonic()
    spark = spark_factory()
    console.print(
        f"SparkSession {spark.version} ({spark.sparkContext.master}) up in {time.monotonic() - t0:.1f} s"
    )
    workdir = result.workdir
    events_dir, checkpoint = workdir / "events.parquet", workdir / "checkpoint"
    schema = "user string, seq int, type string, amount long, balance long, ts long"
    t0 = time.monotonic()
    query = (
        spark.readStream.format("rocketmq")
        .option("nameserver", cluster.namesrv_addr)
        .option("topic", EVENT_TOPIC)
        .option("startingOffsets", "earliest")
        .option("consumerGroup", SPARK_GROUP)
        .option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
        .load()
        .select(
            F.from_json(F.col("body").cast("string"), schema).alias("e"),
            "queue_id",
            "queue_offset",
            "msg_id",
            "store_timestamp",
        )
        .select("e.*", "queue_id", "queue_offset", "msg_id", "store_timestamp")
        .writeStream.format("parquet")
        .option("path", str(events_dir))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the streaming query failed: {query.exception()}")
    batches = len(query.recentProgress)
    events = spark.read.parquet(str(events_dir))
    rows = events.count()
    result.spark_rows = rows
    result.stages.append(
        Stage(f"Spark stream read ({batches} micro-batches, availableNow)", rows, time.monotonic() - t0)
    )
    distinct = events.select("msg_id").distinct().count()
    console.print(f"read {rows} events ({distinct} distinct) in {batches} micro-batches -> {events_dir}")

    t0 = time.monotonic()
    balances = events.groupBy("user").agg(
        F.max_by("balance", "seq").alias("final_balance"),
        F.count("*").alias("events"),
        F.min("balance").alias("min_balance"),
    )
    balances.write.mode("overwrite").parquet(str(workdir / "balances.parquet"))
    volumes = (
        events.withColumn("minute", F.date_trunc("minute", F.timestamp_millis("ts")))
        .groupBy("minute", "type")
        .agg(F.count("*").alias("events"), F.sum("amount").alias("amount_cents"))
        .orderBy("minute", "type")
    )
    volumes.write.mode("overwrite").parquet(str(workdir / "volumes.parquet"))
    result.outputs.update(
        events=events_dir, balances=workdir / "balances.parquet", volumes=workdir / "volumes.parquet"
    )
    alerts = balances.filter(F.col("min_balance") < config.threshold_cents).select(
        F.to_json(F.struct("user", "min_balance", "final_balance")).alias("body"),
        F.col("user").alias("sharding_key"),
        F.col("user").alias("keys"),
        F.lit("low-balance").alias("tags"),
    )
    alerts_sent_at = time.monotonic()
    alerts.write.format("rocketmq").option("nameserver", cluster.namesrv_addr).option(
        "topic", ALERT_TOPIC
    ).mode("append").save()
    result.alerts_written = alerts.count()
    result.stages.append(Stage("Spark aggregates (balances, volumes, alerts)", rows, time.monotonic() - t0))
    console.print(f"balances, volumes -> Parquet; {result.alerts_written} alerts -> {ALERT_TOPIC}")
    final = {r.user: int(r.final_balance) for r in balances.select("user", "final_balance").collect()}
    return final, alerts_sent_at


def _progress(cluster: EmbeddedCluster, config: DemoConfig) -> list[QueueProgress]:
    from rocketq.spark.client import SourceClient

    out = []
    with SourceClient(cluster.namesrv_addr) as client:
        for q in range(config.event_queues):
            mq = MessageQueue(EVENT_TOPIC, cluster.broker_names[0], q)
            out.append(
                QueueProgress(
                    q,
                    client.max_offset(mq),
                    client.query_consumer_offset(NOTIFIER_GROUP, mq),
                    client.query_consumer_offset(SPARK_GROUP, mq),
                )
            )
    return out


def _checks(
    result: DemoResult,
    notifier: _Notifier,
    truth: dict[str, int],
    spark_balances: dict[str, int],
    expected_alerts: set[str],
    alerts_seen: set[str],
) -> None:
    checker = notifier.checker
    n = result.produced
    result.checks = [
        Check(
            "order violations", checker.violations == 0, f"{checker.violations} users saw an older balance"
        ),
        Check(
            "every message notified",
            result.notified == n,
            f"{result.notified} of {n} distinct events notified ({checker.notified} deliveries)",
        ),
        Check(
            "every message read by Spark once",
            result.spark_rows == n,
            f"{result.spark_rows} rows for {n} messages",
        ),
        Check(
            "Spark balances = notifier balances",
            spark_balances == checker.balance == truth,
            f"{sum(spark_balances.get(u) == b for u, b in checker.balance.items())} of {len(truth)} users agree",
        ),
        Check(
            "alerts written and read back",
            result.alerts_written == len(expected_alerts) and alerts_seen == expected_alerts,
            f"{result.alerts_written} written, {len(alerts_seen)} received, {len(expected_alerts)} expected",
        ),
        Check(
            "consumer progress lag 0",
            bool(result.progress) and all(p.lag == 0 for p in result.progress),
            f"total lag {sum(p.lag for p in result.progress)}",
        ),
    ]
