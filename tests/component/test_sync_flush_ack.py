"""SYNC_FLUSH acks: a send is answered only once the commit log is durable past it, by Java's
``GroupCommitService`` thread (the default) or, with ``sync_flush_on_loop``, by one sync on the
broker's loop shared by the sends of one loop iteration (``flush_service.LoopGroupCommit``). Real frames through the server's protocol object, a real store, no socket
I/O (the broker listens on an OS-assigned loopback port but nothing connects)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.broker.config import BrokerConfig
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.broker.store.flush_service import LoopGroupCommit
from rocketq.protocol.codes import ResponseCode, SerializeType
from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.protocol.headers import SendMessageResponseHeader
from rocketq.protocol.message import MessageConst
from rocketq.protocol.route import TopicConfig
from rocketq.remoting.server import _ServerProtocol
from tests.conftest import send_request


class _RecordingTransport(asyncio.Transport):
    """Stands in for the socket: keeps what is written and how far the commit log was
    durable at that moment."""

    def __init__(self, broker: BrokerController) -> None:
        super().__init__()
        self.broker = broker
        self.writes: list[tuple[bytes, int]] = []

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 50001) if name in ("peername", "sockname") else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append((bytes(data), self.broker.store.commit_log.flushed_where))

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _config(root: Path, flush_disk_type: str, on_loop: bool) -> BrokerConfig:
    return BrokerConfig(
        broker_ip1="127.0.0.1",
        listen_port=0,
        message_store=MessageStoreConfig(
            store_path_root_dir=str(root),
            mapped_file_size_commit_log=1 << 20,
            flush_disk_type=flush_disk_type,
            sync_flush_on_loop=on_loop,
        ),
    )


async def _send_chunk(
    tmp_path: Path,
    flush_disk_type: str,
    sends: int,
    serialize_type: int = SerializeType.JSON,
    *,
    on_loop: bool = True,
) -> tuple[list[tuple[bytes, int]], int, int]:
    """``sends`` SEND_MESSAGE_V2 frames in one chunk; returns the writes, the store's max
    offset and how many group commits synced (either service observes ``flush_latency``)."""
    broker = BrokerController(_config(tmp_path, flush_disk_type, on_loop))
    await broker.start()
    protocol: _ServerProtocol | None = None
    try:
        broker.topic_config_manager.update_topic_config(
            TopicConfig(topic_name="SyncAck", read_queue_nums=1, write_queue_nums=1)
        )
        protocol = _ServerProtocol(broker.server)
        transport = _RecordingTransport(broker)
        protocol.connection_made(transport)
        chunk = b""
        for opaque in range(sends):
            request = send_request("SyncAck", b"durable-%d" % opaque, properties="WAIT\x01true")
            request.opaque = opaque
            request.serialize_type = serialize_type
            chunk += request.encode()
        syncs_before = broker.store.flush_latency.snapshot().count
        protocol.data_received(chunk)
        deadline = time.monotonic() + 10
        while sum(len(FrameDecoder().feed(data)) for data, _ in transport.writes) < sends:
            assert time.monotonic() < deadline, "the sends were not answered"
            await asyncio.sleep(0.001)
        syncs = broker.store.flush_latency.snapshot().count - syncs_before
        return transport.writes, broker.store.get_max_phy_offset(), syncs
    finally:
        if protocol is not None:
            protocol.connection_lost(None)  # the server's stop waits for its connections
        await broker.shutdown()


def test_sync_flush_ack_leaves_only_after_the_sync_and_one_sync_serves_the_chunk(tmp_path: Path) -> None:
    writes, max_offset, syncs = asyncio.run(_send_chunk(tmp_path, "SYNC_FLUSH", 3))
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 3
    assert sorted(a.opaque for a in answers) == [0, 1, 2]
    # every ack was written when the commit log was already durable past all three records
    assert all(flushed >= max_offset for _, flushed in writes)
    assert syncs == 1  # three sends of one loop iteration, one sync


def test_sync_flush_ack_waits_for_the_group_commit_thread_by_default(tmp_path: Path) -> None:
    writes, max_offset, syncs = asyncio.run(_send_chunk(tmp_path, "SYNC_FLUSH", 3, on_loop=False))
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 3
    # Java's GroupCommitService: the acks still leave only once the log is durable past them
    assert all(flushed >= max_offset for _, flushed in writes)
    assert syncs >= 1


def test_async_flush_ack_does_not_wait_for_a_sync(tmp_path: Path) -> None:
    writes, max_offset, syncs = asyncio.run(_send_chunk(tmp_path, "ASYNC_FLUSH", 2))
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 2
    assert syncs == 0
    assert max_offset > 0


@dataclasses.dataclass
class _FakeCommitLog:
    """Duck-typed commit log: flushes to ``durable_to`` (a stuck disk stays behind)."""

    max_offset: int = 0
    durable_to: int | None = None
    flushed_where: int = 0
    flushes: int = 0
    error: Exception | None = None

    def flush(self, least_pages: int = 0) -> bool:
        self.flushes += 1
        if self.error is not None:
            raise self.error
        self.flushed_where = self.max_offset if self.durable_to is None else self.durable_to
        return True


async def _waits(log: _FakeCommitLog, offsets: list[int]) -> list[bool]:
    commit = LoopGroupCommit(log, asyncio.get_running_loop())  # type: ignore[arg-type]
    futures = [commit.wait_durable(offset) for offset in offsets]
    assert not any(f.done() for f in futures)  # nothing resolves before the sync ran
    return list(await asyncio.gather(*futures))


def test_loop_group_commit_one_sync_per_iteration() -> None:
    log = _FakeCommitLog(max_offset=300)
    assert asyncio.run(_waits(log, [100, 200, 300])) == [True, True, True]
    assert log.flushes == 1


def test_loop_group_commit_reports_what_the_sync_did_not_cover() -> None:
    log = _FakeCommitLog(max_offset=300, durable_to=200)
    assert asyncio.run(_waits(log, [100, 200, 300])) == [True, True, False]


@pytest.mark.parametrize("error", [OSError(5, "Input/output error"), ValueError("mmap closed")])
def test_loop_group_commit_failed_sync_is_not_durable(error: Exception) -> None:
    log = _FakeCommitLog(max_offset=300, error=error)
    assert asyncio.run(_waits(log, [100])) == [False]


def _codec_answer_map(answer: RemotingCommand) -> list[tuple[str, str]]:
    """The answer's map as the header codec builds it from the answer's own values."""
    ext = answer.ext_fields
    assert ext is not None
    header = SendMessageResponseHeader(
        msg_id=ext["msgId"], queue_id=int(ext["queueId"]), queue_offset=int(ext["queueOffset"])
    )
    pre_send = {MessageConst.MSG_REGION: "DefaultRegion", MessageConst.TRACE_ON: "true"}
    return list(header.to_ext_fields(pre_send, serialize_type=answer.serialize_type).items())


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_send_answer_map_is_the_header_codecs_in_its_order(tmp_path: Path, serialize_type: int) -> None:
    """The JSON answer's map is built without the header object: same keys, values and
    order as ``SendMessageResponseHeader.to_ext_fields`` over the preSend keys."""
    writes, _, _ = asyncio.run(_send_chunk(tmp_path, "ASYNC_FLUSH", 3, serialize_type))
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert len(answers) == 3
    for answer in answers:
        assert answer.serialize_type == serialize_type
        assert answer.ext_fields is not None
        assert list(answer.ext_fields.items()) == _codec_answer_map(answer)
    assert [int(a.ext_fields["queueOffset"]) for a in answers if a.ext_fields] == [0, 1, 2]
