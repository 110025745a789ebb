"""A real broker process on a full disk (issue #21 item 1): a fast producer filling a small
tmpfs gets refusals with Java's codes instead of killing the broker with SIGBUS; reads and
every acknowledged message survive; writes resume once space is freed; a restart on the
still-full disk comes up and serves reads.

Needs a tmpfs mount (root on Linux, as in CI). Where none can be mounted the test says so
(skip with the reason, visible in ``-ra``) and ``tests/unit/store/test_disk_full.py`` covers
the store on a simulated volume.
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import decode_records
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until
from tests.conftest import send_request

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_MIB = 1024 * 1024
_REFUSED = {int(ResponseCode.SERVICE_NOT_AVAILABLE), int(ResponseCode.SYSTEM_ERROR)}


@pytest.fixture
def volume(tmp_path: Path) -> Iterator[Path]:
    store = tmp_path / "cluster" / "broker-a"
    store.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={12 * _MIB}", "tmpfs", str(store)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs ({done.stderr.decode().strip()}); see tests/unit/store/test_disk_full.py"
        )
    try:
        yield store
    finally:
        subprocess.run(["umount", "-l", str(store)], check=False)


def _ballast(path: Path, nbytes: int | None) -> None:
    """An allocated file of ``nbytes``, or as large as the volume allows (None)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        done = 0
        while nbytes is None or done < nbytes:
            try:
                os.posix_fallocate(fd, done, 64 * 1024)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    return
                raise
            done += 64 * 1024
    finally:
        os.close(fd)


class _Producer:
    """Two threads sending 4 KiB messages as fast as they are answered."""

    def __init__(self, cluster: EmbeddedCluster, topic: str) -> None:
        self.cluster = cluster
        self.topic = topic
        self.acked: dict[tuple[int, int], bytes] = {}
        self.refused: dict[int, int] = {}
        self.lock = threading.Lock()
        self.seq = 0

    def fill(self, refusals: int = 40) -> None:
        """Send until ``refusals`` sends in a row were refused."""
        in_a_row = [0]

        def run(client: RemotingClient, qid: int) -> None:
            while in_a_row[0] < refusals:
                with self.lock:
                    self.seq += 1
                    body = f"{self.seq:08d}".encode() * 512
                response = client.invoke_sync(
                    self.cluster.broker_addrs[0], send_request(self.topic, body, queue_id=qid), 5000
                )
                with self.lock:
                    if response.code == ResponseCode.SUCCESS:
                        offset = int(response.ext("queueOffset") or -1)
                        self.acked[(qid, offset)] = body
                        in_a_row[0] = 0
                    else:
                        assert response.code in _REFUSED, (response.code, response.remark)
                        self.refused[response.code] = self.refused.get(response.code, 0) + 1
                        in_a_row[0] += 1

        clients = [RemotingClient() for _ in range(2)]
        for c in clients:
            c.start()
        threads = [
            threading.Thread(target=run, args=(c, q), name=f"filler-{q}") for q, c in enumerate(clients)
        ]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
        finally:
            for c in clients:
                c.close()

    def try_send(self) -> bool:
        response = self.cluster.invoke(
            self.cluster.broker_addrs[0], send_request(self.topic, b"again", queue_id=0)
        )
        if response.code == ResponseCode.SUCCESS:
            self.acked[(0, int(response.ext("queueOffset") or -1))] = b"again"
            return True
        assert response.code in _REFUSED, (response.code, response.remark)
        return False


def _stored(cluster: EmbeddedCluster, topic: str, qid: int) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    offset = 0
    while True:
        header = PullMessageRequestHeader(
            consumer_group="verify",
            topic=topic,
            queue_id=qid,
            queue_offset=offset,
            max_msg_nums=32,
            sys_flag=4,  # PullSysFlag.FLAG_SUBSCRIPTION: no heartbeat needed
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription="*",
            sub_version=0,
        )
        response = cluster.invoke(
            cluster.broker_addrs[0], RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        )
        if response.code != ResponseCode.SUCCESS:
            return out
        for msg in decode_records(response.body):
            out[msg.queue_offset] = msg.body
        offset = int(response.ext("nextBeginOffset") or offset)


def _assert_nothing_lost(cluster: EmbeddedCluster, topic: str, producer: _Producer) -> None:
    for qid in (0, 1):
        stored = _stored(cluster, topic, qid)
        mine = {o: b for (q, o), b in producer.acked.items() if q == qid}
        missing = [o for o, b in mine.items() if stored.get(o) != b]
        assert not missing, f"queue {qid}: {len(missing)} acknowledged messages lost"


def test_a_full_disk_refuses_sends_and_never_kills_the_broker(
    volume: Path, unique_name: Callable[..., str]
) -> None:
    topic = unique_name("Full")
    conf = {
        "mappedFileSizeConsumeQueue": str(20 * 1000),
        "maxHashSlotNum": "1000",
        "maxIndexNum": "4000",
        "cleanFileForciblyEnable": "false",  # forcible cleaning deletes data by design
        "autoCreateSubscriptionGroup": "true",
    }
    with EmbeddedCluster(
        store_dir=volume.parent, broker_conf=conf, mapped_file_size_commit_log=_MIB
    ) as cluster:
        cluster.create_topic(topic, 2)
        _ballast(volume / "ballast", 3 * _MIB)
        producer = _Producer(cluster, topic)
        producer.fill()
        assert producer.acked and producer.refused, producer.refused
        _assert_nothing_lost(cluster, topic, producer)
        # space comes back: writes are accepted again (the disk check runs every second)
        os.unlink(volume / "ballast")
        wait_until(producer.try_send, 15, "a send accepted after space was freed", interval_s=0.2)
        # full again, to the last block, then a restart on the full disk
        _ballast(volume / "ballast", 3 * _MIB)
        producer.fill()
        _ballast(volume / "filler", None)
        cluster.restart_broker(0)
        assert cluster.exit_codes.get("broker-a", 0) in (0, None)
        assert not producer.try_send()
        _assert_nothing_lost(cluster, topic, producer)
        os.unlink(volume / "filler")
        os.unlink(volume / "ballast")  # under the 85 % at which Java's disk check lets go
        wait_until(producer.try_send, 15, "a send accepted after restart and freed space", interval_s=0.2)
        _assert_nothing_lost(cluster, topic, producer)
        logs = "\n".join(p.read_text(errors="replace") for p in volume.parent.glob("*.log"))
    assert "Traceback" not in logs and "Fatal error" not in logs
