"""Crash safety (issue #3): SIGKILL the broker in the middle of a SYNC_FLUSH send stream.

After a restart on the same store every acknowledged message must be pullable at the queue
offset its acknowledgement named, with its body, in send order per queue, and the store must
keep accepting writes with dense offsets (no torn tail, no gap, no duplicate).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rocketq.client import PullConsumer, PullStatus
from rocketq.client.producer import Producer
from rocketq.errors import RocketqError
from rocketq.protocol.message import Message
from rocketq.protocol.message_queue import MessageQueue
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _pull_all(puller: PullConsumer, mq: MessageQueue) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    offset = 0
    while True:
        result = puller.pull(mq, "*", offset, 32)
        if result.pull_status is not PullStatus.FOUND:
            return out
        out += [(m.queue_offset, m.body) for m in result.msg_found_list]
        offset = result.next_begin_offset


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({}, id="fallocated"),
        # warmMapedFileEnable: each next segment zero-filled and synced on a thread while the
        # stream rolls segments every few hundred sends (the kill may land during a warm)
        pytest.param({"warmMapedFileEnable": "true"}, id="warm"),
        # one send at a time on a quick disk: by default the loop syncs them itself
        # (syncFlushAdaptive); this keeps every sync on native AIO, as with overlapping sends
        pytest.param({"syncFlushAdaptive": "false"}, id="aio-only"),
    ],
)
def test_sigkill_during_sync_flush_sends_loses_no_acknowledged_message(
    tmp_path: Path, unique_name: Callable[..., str], extra: dict[str, str]
) -> None:
    topic = unique_name("crash")
    acked: dict[tuple[int, int], bytes] = {}
    stop = threading.Event()
    with EmbeddedCluster(
        store_dir=tmp_path / "store",
        separate_namesrv=True,
        broker_conf={"flushDiskType": "SYNC_FLUSH", **extra},
        mapped_file_size_commit_log=256 * 1024,  # many segment switches during the stream
    ) as cluster:
        cluster.create_topic(topic, 4)
        producer = Producer(unique_name("pg"), namesrv_addr=cluster.namesrv_addr)
        producer.start()

        def stream() -> None:
            i = 0
            while not stop.is_set():
                body = f"msg-{i:06d}-".encode() + b"x" * 200
                i += 1
                try:
                    result = producer.send(Message(topic, body), timeout_ms=1000)
                except RocketqError:
                    time.sleep(0.01)
                    continue
                acked[(result.message_queue.queue_id, result.queue_offset)] = body

        sender = threading.Thread(target=stream, name="crash-sender")
        sender.start()
        try:
            deadline = time.monotonic() + 30
            while len(acked) < 1500 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(acked) >= 1500
            cluster.kill_broker(0)  # SIGKILL mid-stream: sends in flight fail
            before_restart = len(acked)
            time.sleep(0.3)
            cluster.restart_broker(0)
            deadline = time.monotonic() + 30
            while len(acked) < before_restart + 200 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            stop.set()
            sender.join(30)
            producer.shutdown()
        assert len(acked) >= before_restart + 200, "the broker must accept writes again after recovery"

        puller = PullConsumer(unique_name("verify"), namesrv_addr=cluster.namesrv_addr)
        puller.start()
        try:
            for qid in range(4):
                stored = _pull_all(puller, MessageQueue(topic, cluster.broker_names[0], qid))
                offsets = [o for o, _ in stored]
                assert offsets == list(range(len(offsets))), f"queue {qid}: offsets not dense"
                bodies = dict(stored)
                mine = {o: b for (q, o), b in acked.items() if q == qid}
                for offset, body in mine.items():
                    assert bodies.get(offset) == body, (
                        f"queue {qid} offset {offset}: acknowledged message lost"
                    )
                # send order per queue: the sequence numbers embedded in the bodies only grow
                seqs = [int(b.split(b"-")[1]) for _, b in stored]
                assert seqs == sorted(seqs), f"queue {qid}: out of order after recovery"
        finally:
            puller.shutdown()
