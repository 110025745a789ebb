"""DefaultMQPullConsumer semantics against a real embedded cluster."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketq.client import (
    Message,
    MessageModel,
    MessageQueue,
    Producer,
    PullConsumer,
    PullConsumerConfig,
    PullStatus,
)
from rocketq.client.config import ClientConfig
from rocketq.errors import ClientError, IllegalArgumentError
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration


def _fill(
    cluster: EmbeddedCluster, topic: str, group: str, bodies: list[tuple[str, str]], queue_id: int = 0
) -> None:
    with Producer(group, namesrv_addr=cluster.namesrv_addr) as p:
        mq = MessageQueue(topic, "broker-a", queue_id)
        for body, tag in bodies:
            p.send(Message(topic, body.encode(), tags=tag), queue=mq)
            time.sleep(0.005)


@pytest.fixture
def topic(embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]) -> str:
    name = unique_name("T")
    embedded_cluster.create_topic(name, 2)
    _fill(
        embedded_cluster,
        name,
        unique_name("PG"),
        [(f"m{i}", "TagA" if i % 2 == 0 else "TagB") for i in range(5)],
    )
    return name


def test_pull_statuses_offsets_and_tag_filter(
    embedded_cluster: EmbeddedCluster, topic: str, unique_name: Callable[..., str]
) -> None:
    with PullConsumer(unique_name("CG"), namesrv_addr=embedded_cluster.namesrv_addr) as c:
        mqs = sorted(c.fetch_subscribe_message_queues(topic))
        assert [mq.queue_id for mq in mqs] == [0, 1]
        q0, q1 = mqs
        assert (c.min_offset(q0), c.max_offset(q0)) == (0, 5)
        first = c.pull(q0, "*", 0, 3)
        assert first.pull_status is PullStatus.FOUND
        assert [m.body for m in first.msg_found_list] == [b"m0", b"m1", b"m2"]
        assert (first.next_begin_offset, first.min_offset, first.max_offset) == (3, 0, 5)
        rest = c.pull(q0, "*", 3, 32)
        assert [m.queue_offset for m in rest.msg_found_list] == [3, 4]
        assert c.pull(q0, "*", 5, 32).pull_status is PullStatus.NO_NEW_MSG
        moved = c.pull(q0, "*", 1000, 32)
        assert moved.pull_status is PullStatus.OFFSET_ILLEGAL
        assert moved.next_begin_offset == 5
        assert c.pull(q1, "*", 0, 32).pull_status is PullStatus.NO_NEW_MSG
        tagged = c.pull(q0, "TagB", 0, 32)
        assert [m.tags for m in tagged.msg_found_list] == ["TagB", "TagB"]
        assert tagged.next_begin_offset == 5
        # store times -> offsets
        earliest = c.earliest_msg_store_time(q0)
        assert earliest == first.msg_found_list[0].store_timestamp
        third = first.msg_found_list[2]
        assert c.search_offset(q0, third.store_timestamp) == 2
        assert c.search_offset(q0, 0) == 0
        assert c.view_message(third.offset_msg_id).body == b"m2"
        with pytest.raises(IllegalArgumentError):
            c.pull(q0, "*", -1, 32)
        with pytest.raises(IllegalArgumentError):
            c.pull(q0, "*", 0, 0)


def test_blocking_pull_is_woken_by_a_send(
    embedded_cluster: EmbeddedCluster, topic: str, unique_name: Callable[..., str]
) -> None:
    with PullConsumer(unique_name("CG"), namesrv_addr=embedded_cluster.namesrv_addr) as c:
        q0 = MessageQueue(topic, "broker-a", 0)

        def late_send() -> None:
            time.sleep(0.5)
            _fill(embedded_cluster, topic, unique_name("PG2"), [("late", "TagA")])

        sender = threading.Thread(target=late_send)
        sender.start()
        start = time.monotonic()
        result = c.pull_block_if_not_found(q0, "*", 5, 32)
        elapsed = time.monotonic() - start
        sender.join()
        assert result.pull_status is PullStatus.FOUND
        assert [m.body for m in result.msg_found_list] == [b"late"]
        # woken by the arrival itself, not by the 5 s safety scan
        assert 0.3 < elapsed < 3.0, elapsed
        fut = c.pull_async(q0, "*", 0, 2)
        assert [m.body for m in fut.result(timeout=10).msg_found_list] == [b"m0", b"m1"]


def test_consume_offsets_persist_to_the_broker(
    embedded_cluster: EmbeddedCluster, topic: str, unique_name: Callable[..., str]
) -> None:
    group = unique_name("CG")
    q0 = MessageQueue(topic, "broker-a", 0)
    q1 = MessageQueue(topic, "broker-a", 1)
    fast = ClientConfig(namesrv_addr=embedded_cluster.namesrv_addr, persist_consumer_offset_interval_ms=200)
    with PullConsumer(group, client_config=fast) as c:
        c.update_consume_offset(q0, 3)
        assert c.fetch_consume_offset(q0) == 3  # memory
        # the periodic persist (first after 10 s) is not awaited here: shutdown persists too
    with PullConsumer(group, namesrv_addr=embedded_cluster.namesrv_addr) as c2:
        assert c2.fetch_consume_offset(q0, from_store=True) == 3
        c2.update_consume_offset(q1, 0)
        with pytest.raises(IllegalArgumentError):
            c2.update_consume_offset(q1, -5)


def test_broadcasting_offsets_live_in_a_local_file(
    embedded_cluster: EmbeddedCluster, topic: str, unique_name: Callable[..., str], tmp_path: Path
) -> None:
    group = unique_name("BG")
    cfg = PullConsumerConfig(
        consumer_group=group, message_model=MessageModel.BROADCASTING, offset_store_dir=str(tmp_path)
    )
    q0 = MessageQueue(topic, "broker-a", 0)
    ccfg = ClientConfig(namesrv_addr=embedded_cluster.namesrv_addr, instance_name="bcast")
    with PullConsumer(config=cfg, client_config=ccfg) as c:
        assert c.client_id.endswith("@bcast")  # broadcasting consumers keep their instance name
        c.update_consume_offset(q0, 4)
        client_id = c.client_id
    path = tmp_path / client_id / group / "offsets.json"
    assert path.is_file()
    assert '"queueId":0' in path.read_text()
    with PullConsumer(config=cfg, client_config=ccfg) as again:
        assert again.fetch_consume_offset(q0, from_store=True) == 4
    # the broker knows nothing about it
    with PullConsumer(group, namesrv_addr=embedded_cluster.namesrv_addr) as clustering:
        assert clustering.fetch_consume_offset(q0, from_store=True) != 4


def test_unknown_topic_and_lifecycle(
    embedded_cluster: EmbeddedCluster, unique_name: Callable[..., str]
) -> None:
    c = PullConsumer(unique_name("CG"), namesrv_addr=embedded_cluster.namesrv_addr)
    with pytest.raises(ClientError, match="state not OK"):
        c.pull(MessageQueue("T", "broker-a", 0), "*", 0, 1)
    with c, pytest.raises(ClientError, match="Can not find Message Queue"):
        c.fetch_subscribe_message_queues(unique_name("Missing"))
    with pytest.raises(IllegalArgumentError):
        PullConsumer("bad group")
