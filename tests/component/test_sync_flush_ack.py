"""SYNC_FLUSH acks: a send is answered only once the commit log is durable past it. The sends of
one loop iteration wait together (``flush_service.LoopGroupCommit``): on one request to Java's
``GroupCommitService`` thread (the default) or, with ``sync_flush_on_loop``, on one sync on the
broker's loop. Real frames through the server's protocol object, a real store, no socket I/O
(the broker listens on an OS-assigned loopback port but nothing connects); the group-commit
mechanics also against a duck-typed commit log."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from rocketq.broker.broker import BrokerController
from rocketq.broker.config import BrokerConfig
from rocketq.broker.store.aio_sync import AioSync
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.broker.store.flush_service import GroupCommitService, LoopGroupCommit
from rocketq.common.histogram import Histogram
from rocketq.protocol.codes import ResponseCode, SerializeType
from rocketq.protocol.frame import FrameDecoder, RemotingCommand
from rocketq.protocol.headers import SendMessageResponseHeader
from rocketq.protocol.message import MessageConst
from rocketq.protocol.message_id import decode_offset_msg_id
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


def _config(
    root: Path, flush_disk_type: str, on_loop: bool, timeout_ms: int = 5000, aio: bool = True
) -> BrokerConfig:
    return BrokerConfig(
        broker_ip1="127.0.0.1",
        listen_port=0,
        message_store=MessageStoreConfig(
            store_path_root_dir=str(root),
            mapped_file_size_commit_log=1 << 20,
            flush_disk_type=flush_disk_type,
            sync_flush_on_loop=on_loop,
            sync_flush_timeout_ms=timeout_ms,
            sync_flush_aio=aio,
        ),
    )


async def _send_chunk(
    tmp_path: Path,
    flush_disk_type: str,
    sends: int,
    serialize_type: int = SerializeType.JSON,
    *,
    on_loop: bool = True,
    aio: bool = True,
    timeout_ms: int = 5000,
    properties: str = "WAIT\x01true",
    before: Callable[[BrokerController], None] | None = None,
    after: Callable[[], None] | None = None,
) -> tuple[list[tuple[bytes, int]], int, int]:
    """``sends`` SEND_MESSAGE_V2 frames in one chunk; returns the writes, the store's max
    offset and how many group commits synced (either service observes ``flush_latency``).
    ``before`` runs on the started broker before the chunk arrives, ``after`` once every
    send was answered (or the wait failed), before the broker shuts down."""
    broker = BrokerController(_config(tmp_path, flush_disk_type, on_loop, timeout_ms, aio))
    await broker.start()
    protocol: _ServerProtocol | None = None
    try:
        if before is not None:
            before(broker)
        broker.topic_config_manager.update_topic_config(
            TopicConfig(topic_name="SyncAck", read_queue_nums=1, write_queue_nums=1)
        )
        protocol = _ServerProtocol(broker.server)
        transport = _RecordingTransport(broker)
        protocol.connection_made(transport)
        chunk = b""
        for opaque in range(sends):
            request = send_request("SyncAck", b"durable-%d" % opaque, properties=properties)
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
        if after is not None:
            after()
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


def _acked_durable(writes: list[tuple[bytes, int]], max_offset: int) -> int:
    """How many acks in ``writes`` left once the log was durable past the end of their
    record (each record ends where the next begins, the last at ``max_offset``); asserts
    that none left earlier."""
    starts = {}
    for data, flushed in writes:
        for answer in FrameDecoder().feed(data):
            starts[answer.opaque] = (decode_offset_msg_id(answer.ext("msgId") or "")[1], flushed)
    ordered = sorted(start for start, _ in starts.values())
    ends = dict(zip(ordered, [*ordered[1:], max_offset], strict=True))
    for opaque, (start, flushed) in starts.items():
        assert flushed >= ends[start], f"ack {opaque} left before its record was durable"
    return len(starts)


def _native_aio() -> bool:
    aio = AioSync.open()
    if aio is None:
        return False
    aio.close()
    return True


def _count_submissions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The files of each native AIO submission from now on (their count per submission)."""
    submitted: list[int] = []
    real_submit = AioSync.submit

    def counting(self: AioSync, fds: list[int]) -> int:
        submitted.append(len(fds))
        return real_submit(self, fds)

    monkeypatch.setattr(AioSync, "submit", counting)
    return submitted


@pytest.mark.parametrize("aio", [False, True], ids=["thread", "native-aio"])
def test_sync_flush_ack_waits_for_the_group_commit(
    tmp_path: Path, aio: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if aio and not _native_aio():
        pytest.skip("no native AIO here")
    submitted = _count_submissions(monkeypatch)
    writes, max_offset, syncs = asyncio.run(_send_chunk(tmp_path, "SYNC_FLUSH", 20, on_loop=False, aio=aio))
    # with AIO the loop submits the syncs itself: the first put's sync as soon as its bytes
    # are written, and one for the 19 stored while it ran; the thread never syncs
    assert submitted == ([1, 1] if aio else [])
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 20
    # Java's GroupCommitService: each ack leaves only once the log is durable past its record
    assert _acked_durable(writes, max_offset) == 20
    # the thread: the 20 sends of one loop iteration are one request, one sync serves them
    # (one request per put would let the thread wake at the first and sync more than once)
    assert syncs == (2 if aio else 1)


@pytest.mark.parametrize("aio", [False, True], ids=["thread", "native-aio"])
def test_a_half_message_ack_waits_for_the_group_commit_thread_future(tmp_path: Path, aio: bool) -> None:
    """A transactional half message is put without the loop's group commit (its put hands a
    request to ``GroupCommitService`` and waits on the thread's future): its ack too leaves
    only once the log is durable past its record, answered from that future."""
    if aio and not _native_aio():
        pytest.skip("no native AIO here")
    writes, max_offset, _syncs = asyncio.run(
        _send_chunk(
            tmp_path, "SYNC_FLUSH", 3, on_loop=False, aio=aio, properties="WAIT\x01true\x02TRAN_MSG\x01true"
        )
    )
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 3
    assert _acked_durable(writes, max_offset) == 3


def test_a_put_nobody_waits_for_starts_no_sync_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WAIT=false under SYNC_FLUSH: answered at once, its bytes left to the
    GroupCommitService's pass; the loop submits no sync for it."""
    if not _native_aio():
        pytest.skip("no native AIO here")
    submitted = _count_submissions(monkeypatch)
    writes, _max_offset, _syncs = asyncio.run(
        _send_chunk(tmp_path, "SYNC_FLUSH", 3, on_loop=False, properties="WAIT\x01false")
    )
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 3
    assert submitted == []


def test_aio_sync_starts_after_the_write_before_the_dispatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A durable put's sync is submitted once its bytes are in the commit log and before
    its consume-queue entry is written: the disk works while the dispatch runs."""
    if not _native_aio():
        pytest.skip("no native AIO here")
    seen: list[tuple[int, int]] = []  # (commit log written to, consume-queue entries) at submit
    broker_ref: list[BrokerController] = []
    real_submit = AioSync.submit

    def recording(self: AioSync, fds: list[int]) -> int:
        store = broker_ref[0].store
        cq = store.consume_queue_table.get(("SyncAck", 0))
        seen.append((store.get_max_phy_offset(), 0 if cq is None else cq.max_offset_in_queue))
        return real_submit(self, fds)

    monkeypatch.setattr(AioSync, "submit", recording)
    writes, max_offset, syncs = asyncio.run(
        _send_chunk(tmp_path, "SYNC_FLUSH", 1, on_loop=False, before=broker_ref.append)
    )
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS]
    assert seen == [(max_offset, 0)]  # the record written, its queue entry not yet
    assert syncs == 1 and all(flushed >= max_offset for _, flushed in writes)


def test_the_loop_group_commit_is_made_before_the_first_durable_put_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making the loop's group commit opens the AIO context, a call that lets other threads
    run: made between the first durable put's write and its sync, it let the
    GroupCommitService's idle pass sync those bytes first, so the put was answered by a sync
    nobody counted (``rocketmq_storage_flush_latency`` one short). It is made before the
    bytes are written."""
    if not _native_aio():
        pytest.skip("no native AIO here")
    opened_at: list[int] = []  # the commit log's max offset when the context was opened
    broker_ref: list[BrokerController] = []
    real_open = AioSync.open

    def recording() -> AioSync | None:
        opened_at.append(broker_ref[0].store.get_max_phy_offset())
        return real_open()

    monkeypatch.setattr(AioSync, "open", staticmethod(recording))
    writes, max_offset, syncs = asyncio.run(
        _send_chunk(tmp_path, "SYNC_FLUSH", 1, on_loop=False, before=broker_ref.append)
    )
    assert opened_at == [0]  # once, with nothing written yet
    assert _acked_durable(writes, max_offset) == 1
    assert syncs == 1


@pytest.mark.pure_python  # replaces CommitLog.flush, a compiled method
def test_sync_flush_ack_flush_disk_timeout_while_the_sync_hangs(tmp_path: Path) -> None:
    """FLUSH_DISK_TIMEOUT after ``syncFlushTimeout`` even while the flush thread is stuck in
    a sync that does not return (Java's waiter-side ``future.get(timeout)``)."""
    gate = threading.Event()

    def stick(broker: BrokerController) -> None:
        real_flush = broker.store.commit_log.flush

        def stuck_flush(least_pages: int = 0) -> bool:
            gate.wait(10)  # the disk hangs until the test lets it go
            return real_flush(least_pages)

        broker.store.commit_log.flush = stuck_flush  # type: ignore[method-assign]

    writes, _, _ = asyncio.run(
        _send_chunk(
            tmp_path, "SYNC_FLUSH", 2, on_loop=False, aio=False, timeout_ms=100, before=stick, after=gate.set
        )
    )
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.FLUSH_DISK_TIMEOUT] * 2


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

    def flush_unclaimed(self) -> bool:
        return self.flush(0)

    def flush(self, least_pages: int = 0) -> bool:
        self.flushes += 1
        if self.error is not None:
            raise self.error
        self.flushed_where = self.max_offset if self.durable_to is None else self.durable_to
        return True


def _durable(commit: LoopGroupCommit, next_offset: int) -> asyncio.Future[bool]:
    """``commit.on_durable`` as a loop future (resolved once; a cancelled one is left alone)."""
    fut: asyncio.Future[bool] = commit.loop.create_future()

    def done(durable: bool) -> None:
        if not fut.done():
            fut.set_result(durable)

    commit.on_durable(next_offset, done)
    return fut


async def _waits(log: _FakeCommitLog, offsets: list[int]) -> list[bool]:
    commit = LoopGroupCommit(log, asyncio.get_running_loop())  # type: ignore[arg-type]
    futures = [_durable(commit, offset) for offset in offsets]
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


# ---------------------------------------------------------------- GroupCommitService hand-off
@pytest.fixture
def group_commit() -> Iterator[tuple[_FakeCommitLog, GroupCommitService, Histogram]]:
    """A started GroupCommitService over a duck-typed commit log (timeout 200 ms)."""
    log = _FakeCommitLog()
    latency = Histogram()
    service = GroupCommitService(
        log,  # type: ignore[arg-type]
        MessageStoreConfig(store_path_root_dir="unused", sync_flush_timeout_ms=200),
        latency,
    )
    service.start()
    try:
        yield log, service, latency
    finally:
        service.shutdown()


class _RecordingService:
    """Stands between the loop's group commit and the flush thread: the offsets of the requests
    ``service`` is handed, in order (a ``CommitRequests``; the service itself may be compiled,
    so its methods cannot be replaced)."""

    def __init__(self, service: GroupCommitService) -> None:
        self.service = service
        self.requests: list[int] = []

    @property
    def timeout_s(self) -> float:
        return self.service.timeout_s

    def request(self, next_offset: int, done: Callable[[bool], None]) -> bool:
        self.requests.append(next_offset)
        return self.service.request(next_offset, done)


def test_loop_group_commit_hands_the_thread_one_request_per_iteration(
    group_commit: tuple[_FakeCommitLog, GroupCommitService, Histogram],
) -> None:
    log, service, latency = group_commit
    recorder = _RecordingService(service)

    async def run() -> list[bool]:
        commit = LoopGroupCommit(log, asyncio.get_running_loop(), thread=recorder)
        log.max_offset = 300
        first = [_durable(commit, offset) for offset in (100, 200, 300)]
        results = list(await asyncio.gather(*first))
        log.max_offset = 400
        results.append(await _durable(commit, 400))
        return results

    assert asyncio.run(run()) == [True, True, True, True]
    assert recorder.requests == [300, 400]  # one request per iteration, for its highest offset
    assert latency.snapshot().count == 2  # one sync per request


def test_loop_group_commit_answers_of_one_pass_wake_the_loop_once(
    group_commit: tuple[_FakeCommitLog, GroupCommitService, Histogram],
) -> None:
    """Several iterations' requests answered by one pass come back in one
    ``call_soon_threadsafe`` (not one per request, nor one per put)."""
    log, service, _latency = group_commit

    async def run() -> tuple[list[bool], int]:
        loop = asyncio.get_running_loop()
        wakeups = [0]
        real = loop.call_soon_threadsafe

        def counting(callback: Callable[..., object], *args: object) -> asyncio.Handle:
            wakeups[0] += 1
            return real(callback, *args)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        commit = LoopGroupCommit(log, loop, thread=service)  # type: ignore[arg-type]
        log.max_offset = 300
        gate = threading.Event()
        real_flush = log.flush

        def slow_flush(least_pages: int = 0) -> bool:
            gate.wait(5)  # the requests of three iterations queue up behind this sync
            return real_flush(least_pages)

        log.flush = slow_flush  # type: ignore[method-assign]
        futures = []
        for offset in (100, 200, 300):
            futures.append(_durable(commit, offset))
            await asyncio.sleep(0)  # the next put comes in a later iteration
            await asyncio.sleep(0)
        gate.set()
        results = list(await asyncio.gather(*futures))
        return results, wakeups[0]

    results, wakeups = asyncio.run(run())
    assert results == [True, True, True]
    # the first request may be answered by a pass of its own; the other two by one more
    assert 1 <= wakeups <= 2


def test_loop_group_commit_thread_timeout_answers_false_and_stays_stored() -> None:
    log = _FakeCommitLog(durable_to=0)  # the disk never gets anywhere
    config = MessageStoreConfig(store_path_root_dir="unused", sync_flush_timeout_ms=50)
    service = GroupCommitService(log, config)  # type: ignore[arg-type]
    service.start()
    try:

        async def run() -> tuple[bool, float]:
            commit = LoopGroupCommit(log, asyncio.get_running_loop(), thread=service)  # type: ignore[arg-type]
            log.max_offset = 100
            started = time.monotonic()
            durable = await _durable(commit, 100)
            return durable, time.monotonic() - started

        durable, waited = asyncio.run(run())
    finally:
        service.shutdown()
    assert durable is False
    assert waited >= 0.045  # not before syncFlushTimeout


def test_loop_group_commit_each_batch_times_out_at_its_own_deadline() -> None:
    """One timer serves every batch's FLUSH_DISK_TIMEOUT: batches made 60 ms apart while the disk
    gets nowhere are answered False each at its own deadline (the first does not take the
    second with it, nor does the second wait for a later sweep), and answered batches are not
    kept."""
    log = _FakeCommitLog(durable_to=0)  # the disk never gets anywhere
    config = MessageStoreConfig(store_path_root_dir="unused", sync_flush_timeout_ms=100)
    service = GroupCommitService(log, config)  # type: ignore[arg-type]
    service.start()
    try:

        async def run() -> tuple[list[tuple[bool, float]], int]:
            commit = LoopGroupCommit(log, asyncio.get_running_loop(), thread=service)  # type: ignore[arg-type]
            started = time.monotonic()

            async def put(offset: int, after_s: float) -> tuple[bool, float]:
                await asyncio.sleep(after_s)
                log.max_offset = offset
                durable = await _durable(commit, offset)
                return durable, time.monotonic() - started

            answers = await asyncio.wait_for(asyncio.gather(put(100, 0.0), put(200, 0.06)), 5)
            return answers, len(commit._deadlines)

        (first, second), left = asyncio.run(run())
    finally:
        service.shutdown()
    assert first[0] is False and second[0] is False
    assert first[1] >= 0.095  # not before its deadline, 100 ms after it was made
    # not answered with the first: 100 ms after it was made, 60 ms after the first
    assert second[1] >= 0.155
    assert left == 0


def test_group_commit_after_shutdown_answers_what_is_durable() -> None:
    log = _FakeCommitLog()
    service = GroupCommitService(log, MessageStoreConfig(store_path_root_dir="unused"))  # type: ignore[arg-type]
    service.start()
    service.shutdown()
    log.max_offset = 100  # appended after the final flush
    assert service.submit(100).result(timeout=5) is False  # never flushed by anyone
    log.flush()
    assert service.submit(100).result(timeout=5) is True

    async def run() -> bool:
        commit = LoopGroupCommit(log, asyncio.get_running_loop(), thread=service)  # type: ignore[arg-type]
        return await _durable(commit, 100)

    assert asyncio.run(run()) is True


def test_group_commit_shutdown_with_a_failing_disk_still_answers() -> None:
    """A flush that keeps failing neither strands a waiter at shutdown nor leaves the
    service accepting requests nobody will answer."""
    config = MessageStoreConfig(store_path_root_dir="unused")
    for with_waiter in (True, False):
        log = _FakeCommitLog(max_offset=100, error=OSError(5, "Input/output error"))
        service = GroupCommitService(log, config)  # type: ignore[arg-type]
        service.start()
        waiting = service.submit(100) if with_waiter else None
        service.shutdown()
        if waiting is not None:
            assert waiting.result(timeout=5) is False
        # refused after shutdown, so answered at once (not queued for a thread that is gone)
        assert service.submit(100).result(timeout=5) is False


def test_loop_group_commit_requests_the_highest_offset_of_the_iteration(
    group_commit: tuple[_FakeCommitLog, GroupCommitService, Histogram],
) -> None:
    """The iteration's one request covers its highest offset, whatever order its waiters came in
    (a request for the last waiter's offset would let an earlier, higher one be acked unsynced)."""
    log, service, _latency = group_commit
    recorder = _RecordingService(service)

    async def run() -> list[bool]:
        commit = LoopGroupCommit(log, asyncio.get_running_loop(), thread=recorder)
        log.max_offset = 300
        return list(await asyncio.gather(*(_durable(commit, o) for o in (200, 300, 100))))

    assert asyncio.run(run()) == [True, True, True]
    assert recorder.requests == [300]


def test_group_commit_pass_answers_the_covered_and_keeps_the_rest_until_their_deadline(
    group_commit: tuple[_FakeCommitLog, GroupCommitService, Histogram],
) -> None:
    """Requests queued together are taken in one pass: those the sync covered are answered
    True at once, the one it did not stays waiting and is answered False at its deadline
    (200 ms), not before."""
    log, service, _latency = group_commit
    log.max_offset, log.durable_to = 300, 200
    gate = threading.Event()
    real_flush = log.flush

    def held_flush(least_pages: int = 0) -> bool:
        gate.wait(5)  # the three requests queue up behind this pass
        return real_flush(least_pages)

    log.flush = held_flush  # type: ignore[method-assign]
    started = time.monotonic()
    first = service.submit(100)
    second, third = service.submit(200), service.submit(300)
    gate.set()
    assert first.result(timeout=5) is True
    assert second.result(timeout=5) is True
    assert not third.done() or time.monotonic() - started >= 0.19
    assert third.result(timeout=5) is False
    assert time.monotonic() - started >= 0.19


# ---------------------------------------------------------------- native AIO syncs
@dataclasses.dataclass
class _SyncedLog(_FakeCommitLog):
    """A duck-typed commit log for syncs made outside ``flush`` (``sync_targets`` /
    ``mark_synced``); ``fds`` is what a sync must cover."""

    fds: tuple[int, ...] = (7,)
    marked: list[int] = dataclasses.field(default_factory=list)
    #: ``sync_started`` targets: bytes the loop's syncs (in flight or next) cover
    claimed: list[int] = dataclasses.field(default_factory=list)

    def sync_targets(self) -> tuple[list[int], int, int] | None:
        if self.max_offset <= self.flushed_where:
            return None
        return list(self.fds), self.max_offset, 1000 + self.max_offset

    def mark_synced(self, target: int, ts: int) -> None:
        self.marked.append(target)
        self.flushed_where = max(self.flushed_where, target)

    def sync_started(self, target: int) -> None:
        self.claimed.append(target)


class _FakeAio:
    """Stands in for :class:`AioSync`: a real eventfd; the test completes the syncs."""

    def __init__(self, refuse: OSError | None = None) -> None:
        self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.refuse = refuse
        self.submitted: list[list[int]] = []
        self.results: list[int] = []
        self.closed = False

    def submit(self, fds: list[int]) -> int:
        if self.refuse is not None:
            raise self.refuse
        self.submitted.append(list(fds))
        return len(fds)

    def complete(self, *results: int) -> None:
        """The kernel finished syncs with these results (0, or -errno)."""
        self.results.extend(results)
        os.eventfd_write(self.fd, len(results))

    def reap(self, wait: int = 0) -> list[int]:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self.fd)
        out, self.results = self.results, []
        return out

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)


def _aio_commit(
    log: _SyncedLog,
    service: GroupCommitService,
    aio: _FakeAio,
    latency: Histogram | None = None,
    adaptive: bool = False,
) -> LoopGroupCommit:
    """A group commit on the running loop syncing ``log`` through the fake ``aio``."""
    return LoopGroupCommit(
        log,  # type: ignore[arg-type]
        asyncio.get_running_loop(),
        latency,
        thread=service,
        aio=aio,  # type: ignore[arg-type]
        adaptive=adaptive,
    )


@dataclasses.dataclass
class _AioRig:
    """A fake AIO and the commit log it syncs, beside the ``group_commit`` fixture's thread
    (timeout 200 ms) and histogram: :meth:`commit` builds the group commit on the running
    loop."""

    service: GroupCommitService
    latency: Histogram
    log: _SyncedLog = dataclasses.field(default_factory=_SyncedLog)
    aio: _FakeAio = dataclasses.field(default_factory=_FakeAio)

    def commit(self) -> LoopGroupCommit:
        return _aio_commit(self.log, self.service, self.aio, self.latency)


@pytest.fixture
def rig(group_commit: tuple[_FakeCommitLog, GroupCommitService, Histogram]) -> _AioRig:
    _log, service, latency = group_commit
    return _AioRig(service, latency)


async def _first_flight(rig: _AioRig) -> tuple[LoopGroupCommit, asyncio.Future[bool]]:
    """``rig``'s group commit on the running loop, with one put (offset 100) waiting on the
    sync it submitted."""
    commit = rig.commit()
    rig.log.max_offset = 100
    waiting = _durable(commit, 100)
    await _until(lambda: len(rig.aio.submitted) == 1)
    return commit, waiting


async def _until(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not predicate():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.001)


def test_aio_one_sync_per_flight_and_the_iterations_behind_it_share_the_next(
    rig: _AioRig,
) -> None:
    log, aio, latency = rig.log, rig.aio, rig.latency

    async def run() -> list[bool]:
        commit = rig.commit()
        log.max_offset = 100
        first = _durable(commit, 100)
        await _until(lambda: len(aio.submitted) == 1)
        # two more iterations while the first sync runs: they wait for the next one
        log.max_offset = 200
        second = _durable(commit, 200)
        await asyncio.sleep(0)
        log.max_offset = 300
        third = _durable(commit, 300)
        await asyncio.sleep(0.01)
        assert len(aio.submitted) == 1 and not first.done()
        aio.complete(0)
        assert await first is True
        await _until(lambda: len(aio.submitted) == 2)
        assert not second.done() and not third.done()
        aio.complete(0)
        results = [True, await second, await third]
        commit.close()
        return results

    assert asyncio.run(run()) == [True, True, True]
    assert log.marked == [100, 300]  # each sync covered everything stored when it started
    assert latency.snapshot().count == 2
    assert aio.closed


def test_aio_sync_early_starts_at_once_and_the_puts_it_covers_join_it(
    rig: _AioRig,
) -> None:
    """``sync_early`` (a durable put's bytes just written) submits a sync at once; the
    waiters whose records it covers join it (one submission for them), a put written after
    it waits for the next one; while one is in flight ``sync_early`` starts nothing."""
    log, aio, latency = rig.log, rig.aio, rig.latency

    async def run() -> list[bool]:
        commit = rig.commit()
        log.max_offset = 100
        commit.sync_early()
        assert aio.submitted == [[7]]  # at once, not at the end of the iteration
        first = _durable(commit, 100)  # covered: joins the sync in flight
        log.max_offset = 200
        commit.sync_early()  # one in flight: nothing more
        later = _durable(commit, 200)  # written after the sync started
        await asyncio.sleep(0.01)
        assert len(aio.submitted) == 1 and not first.done() and not later.done()
        aio.complete(0)
        assert await first is True
        await _until(lambda: len(aio.submitted) == 2)
        assert not later.done()
        aio.complete(0)
        results = [True, await later]
        commit.close()
        return results

    assert asyncio.run(run()) == [True, True]
    assert log.marked == [100, 200]
    assert latency.snapshot().count == 2


def test_aio_the_completion_answers_its_waiters_itself_after_starting_the_next_sync(
    rig: _AioRig, caplog: pytest.LogCaptureFixture
) -> None:
    """``on_durable``'s callbacks run in the completion's own callback (no future, no loop
    iteration before the ack), after the next sync was submitted for the batch queued behind
    (the disk works on it while the answers are written); a waiter that raises is logged and
    the others still get their answer."""
    log, aio = rig.log, rig.aio
    seen: list[tuple[str, bool, int]] = []

    def waiter(name: str) -> Callable[[bool], None]:
        return lambda durable: seen.append((name, durable, len(aio.submitted)))

    def bad(durable: bool) -> None:
        raise RuntimeError("a broken waiter")

    async def run() -> list[tuple[str, bool, int]]:
        commit = rig.commit()
        log.max_offset = 100
        commit.sync_early()
        commit.on_durable(100, bad)
        commit.on_durable(100, waiter("first"))
        log.max_offset = 200
        commit.on_durable(200, waiter("second"))
        await asyncio.sleep(0.01)  # the iteration ended: the second put waits for the next sync
        assert len(aio.submitted) == 1 and seen == []
        aio.complete(0)
        commit._on_synced()  # what the eventfd's reader runs
        answered_in_the_callback = list(seen)
        aio.complete(0)
        await _until(lambda: len(seen) == 2)
        commit.close()
        return answered_in_the_callback

    with caplog.at_level(logging.ERROR, logger="rocketq.broker.store"):
        assert asyncio.run(run()) == [("first", True, 2)]
    assert seen == [("first", True, 2), ("second", True, 2)]
    assert [r.getMessage() for r in caplog.records] == ["SYNC_FLUSH: answering a group commit request failed"]


def test_aio_an_iterations_earlier_waiters_join_the_sync_that_covers_them(
    rig: _AioRig,
) -> None:
    """A put waiting since earlier in the iteration (no sync was in flight to join) is
    covered by the sync a later put of the same iteration started early: the iteration's
    batch joins that sync instead of waiting for another."""
    log, aio = rig.log, rig.aio

    async def run() -> list[bool]:
        commit = rig.commit()
        log.max_offset = 100
        earlier = _durable(commit, 100)  # e.g. its early start found a sync in flight
        log.max_offset = 200
        commit.sync_early()
        later = _durable(commit, 200)
        await asyncio.sleep(0.01)  # the iteration ended
        assert aio.submitted == [[7]]
        log.max_offset = 300  # a put nobody waits for (WAIT=false), after the sync started
        aio.complete(0)
        results = [await earlier, await later]
        await asyncio.sleep(0.01)
        assert aio.submitted == [[7]]  # one sync served both: no second one for the earlier
        commit.close()
        return results

    assert asyncio.run(run()) == [True, True]
    assert log.marked == [200]


def test_aio_a_batch_queued_behind_the_sync_in_flight_is_claimed_for_the_next(
    rig: _AioRig,
) -> None:
    """Puts that wait for the sync after the one in flight have their bytes claimed at once
    (``sync_started``), so the GroupCommitService's idle pass (``flush_unclaimed``) leaves
    them to that sync instead of syncing them a second time meanwhile."""
    log, aio = rig.log, rig.aio

    async def run() -> list[bool]:
        commit, first = await _first_flight(rig)  # a sync up to 100 in flight
        log.max_offset = 200
        queued = _durable(commit, 200)  # not covered by it: waits for the next sync
        await asyncio.sleep(0.01)  # the iteration ended
        assert aio.submitted == [[7]] and log.claimed == [100, 200]
        aio.complete(0)
        results = [await first]
        await _until(lambda: len(aio.submitted) == 2)  # the next sync, for the queued put
        aio.complete(0)
        results.append(await queued)
        commit.close()
        return results

    assert asyncio.run(run()) == [True, True]
    assert log.marked == [100, 200]


def test_aio_a_joined_put_gets_flush_disk_timeout_while_the_sync_hangs(
    rig: _AioRig,
) -> None:
    """A waiter that joined a sync in flight has the same FLUSH_DISK_TIMEOUT bound (200 ms
    here) as one that waits for the next sync."""
    log, aio = rig.log, rig.aio

    async def run() -> tuple[bool, float]:
        commit = rig.commit()
        log.max_offset = 100
        commit.sync_early()
        started = time.monotonic()
        durable = await _durable(commit, 100)  # the sync never completes
        waited = time.monotonic() - started
        aio.complete(0)
        commit.close()
        return durable, waited

    durable, waited = asyncio.run(run())
    assert durable is False and 0.15 <= waited < 5


def test_aio_a_failed_sync_answers_false_at_once(
    rig: _AioRig,
) -> None:
    log = rig.log = _SyncedLog(fds=(7, 8))  # a sync across a segment roll: two files
    aio = rig.aio

    async def run() -> bool:
        commit, waiting = await _first_flight(rig)
        assert aio.submitted == [[7, 8]]
        aio.complete(0)  # one file synced ...
        await asyncio.sleep(0.01)
        assert not waiting.done()  # ... the flight needs both
        aio.complete(-5)  # EIO
        durable = await waiting
        commit.close()
        return durable

    assert asyncio.run(run()) is False
    assert log.marked == []  # nothing is recorded durable


def test_aio_timeout_answers_false_while_the_sync_hangs(
    rig: _AioRig,
) -> None:
    log, aio = rig.log, rig.aio  # syncFlushTimeout 200 ms

    async def run() -> tuple[bool, float, bool]:
        commit = rig.commit()
        log.max_offset = 100
        started = time.monotonic()
        durable = await _durable(commit, 100)  # the sync never completes
        waited = time.monotonic() - started
        # the disk comes back: the late completion is counted, the next put syncs again
        aio.complete(0)
        log.max_offset = 200
        later = await _durable(commit, 200)
        assert len(aio.submitted) == 2
        aio.complete(0)
        commit.close()
        return durable, waited, later

    later_task: list[bool] = []

    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        task = loop.create_task(run())
        await _until(lambda: len(aio.submitted) == 2 or task.done())
        aio.complete(0)
        durable, waited, later = await task
        later_task.append(later)
        return durable, waited

    durable, waited = asyncio.run(main())
    assert durable is False
    assert waited >= 0.19  # not before syncFlushTimeout
    assert later_task == [True]


def test_aio_refused_falls_back_to_the_thread() -> None:
    log = _SyncedLog()
    aio = _FakeAio(refuse=OSError(22, "Invalid argument"))  # a kernel before 4.18
    service = GroupCommitService(log, MessageStoreConfig(store_path_root_dir="unused"))  # type: ignore[arg-type]
    service.start()

    async def run() -> list[bool]:
        commit = _aio_commit(log, service, aio)
        log.max_offset = 100
        first = await _durable(commit, 100)
        log.max_offset = 200
        second = await _durable(commit, 200)
        return [first, second]

    try:
        assert asyncio.run(run()) == [True, True]
    finally:
        service.shutdown()
    assert aio.closed  # given up at the first refusal
    assert log.flushes >= 2  # both synced by the thread
    assert log.marked == []


def test_aio_close_waits_for_the_sync_in_flight(
    rig: _AioRig,
) -> None:
    log, aio = rig.log, rig.aio

    async def run() -> bool:
        commit, waiting = await _first_flight(rig)
        aio.results.append(0)  # completes as close waits for it
        commit.close()
        assert aio.closed
        return await waiting

    assert asyncio.run(run()) is True
    assert log.marked == [100]


def test_native_aio_syncs_a_real_file(tmp_path: Path) -> None:
    aio = AioSync.open()
    if aio is None:
        pytest.skip("no native AIO here")
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"x" * 4096)
        assert aio.submit([fd, fd]) == 2
        results: list[int] = []
        while len(results) < 2:
            results += aio.reap(wait=2 - len(results))
        assert results == [0, 0]
        assert aio.reap() == []  # nothing more completed
        with pytest.raises(OSError):
            aio.submit([1_000_000])  # not a descriptor: refused by io_submit
    finally:
        os.close(fd)
        aio.close()


# ---------------------------------------------------------------------- syncFlushAdaptive


@dataclasses.dataclass
class _SlowLog(_SyncedLog):
    """A :class:`_SyncedLog` whose inline sync (``flush``) takes ``delay_s``."""

    delay_s: float = 0.0

    def flush(self, least_pages: int = 0) -> bool:
        if self.delay_s:
            time.sleep(self.delay_s)
        return super().flush(least_pages)


async def _put(commit: LoopGroupCommit, rig: _AioRig, offset: int, aio_delay_s: float = 0.0) -> str:
    """One durable put as the broker makes it (bytes written, ``sync_early``, ``on_durable``),
    waited for; an AIO sync it starts completes after ``aio_delay_s``. Returns how it was
    synced (``"aio"`` or ``"inline"``); asserts that its answer came once the log was durable
    past it."""
    log, aio = rig.log, rig.aio
    submissions, flushes = len(aio.submitted), log.flushes
    log.max_offset = offset
    commit.sync_early()
    answered: list[tuple[bool, int]] = []
    fut = _durable(commit, offset)
    fut.add_done_callback(lambda f: answered.append((f.result(), log.flushed_where)))
    if len(aio.submitted) > submissions:
        await asyncio.sleep(aio_delay_s)
        aio.complete(0)
    assert await fut is True
    await asyncio.sleep(0)
    assert answered == [(True, answered[0][1])] and answered[0][1] >= offset
    if len(aio.submitted) > submissions:
        assert log.flushes == flushes
        return "aio"
    assert log.flushes == flushes + 1
    return "inline"


def _adaptive_run(
    rig: _AioRig, body: Callable[[LoopGroupCommit], Awaitable[list[str]]], adaptive: bool = True
) -> list[str]:
    async def run() -> list[str]:
        commit = _aio_commit(rig.log, rig.service, rig.aio, rig.latency, adaptive)
        try:
            return await body(commit)
        finally:
            commit.close()

    return asyncio.run(run())


def test_adaptive_syncs_inline_after_eight_calm_aio_syncs(rig: _AioRig) -> None:
    """Puts one per sync on a quick disk: eight native AIO syncs in a row that each answered
    one put with nothing queued behind, then the loop syncs the puts itself (no submission,
    one ``flush`` each), every ack after its own sync."""

    async def body(commit: LoopGroupCommit) -> list[str]:
        return [await _put(commit, rig, 100 * (i + 1)) for i in range(12)]

    assert _adaptive_run(rig, body) == ["aio"] * 8 + ["inline"] * 4
    assert len(rig.aio.submitted) == 8 and rig.log.flushes == 4


def test_adaptive_off_keeps_every_sync_on_native_aio(rig: _AioRig) -> None:
    async def body(commit: LoopGroupCommit) -> list[str]:
        return [await _put(commit, rig, 100 * (i + 1)) for i in range(12)]

    assert _adaptive_run(rig, body, adaptive=False) == ["aio"] * 12
    assert rig.log.flushes == 0


def test_adaptive_puts_that_overlap_a_sync_stay_on_native_aio(rig: _AioRig) -> None:
    """Each sync has the next put queued behind it (a client with two in flight): never
    calm, never inline."""
    log, aio = rig.log, rig.aio

    async def body(commit: LoopGroupCommit) -> list[str]:
        log.max_offset = 100
        commit.sync_early()
        pending = [_durable(commit, 100)]
        for i in range(2, 14):
            log.max_offset = 100 * i  # the next put, written while the sync runs
            commit.sync_early()
            pending.append(_durable(commit, 100 * i))
            await asyncio.sleep(0)
            submitted = len(aio.submitted) + 1
            aio.complete(0)
            assert await pending.pop(0) is True
            await _until(lambda n=submitted: len(aio.submitted) == n)  # its sync, next
            assert not commit.syncs_on_loop
        aio.complete(0)
        assert await pending.pop() is True
        return []

    _adaptive_run(rig, body)
    assert log.flushes == 0 and len(aio.submitted) == 13


def test_adaptive_slow_aio_syncs_do_not_count_as_calm(rig: _AioRig) -> None:
    async def body(commit: LoopGroupCommit) -> list[str]:
        return [await _put(commit, rig, 100 * (i + 1), aio_delay_s=0.004) for i in range(10)]

    assert _adaptive_run(rig, body) == ["aio"] * 10


def test_adaptive_leaves_inline_when_one_sync_answers_two_puts(rig: _AioRig) -> None:
    """Two puts in one iteration while inline: one sync answers both (after it), and the
    next puts go through native AIO until eight calm ones in a row."""
    log = rig.log

    async def body(commit: LoopGroupCommit) -> list[str]:
        ways = [await _put(commit, rig, 100 * (i + 1)) for i in range(9)]
        flushes = log.flushes
        log.max_offset = 1000
        first = _durable(commit, 1000)
        log.max_offset = 1100
        second = _durable(commit, 1100)
        assert await first is True and await second is True
        assert log.flushes == flushes + 1 and log.flushed_where >= 1100
        assert not commit.syncs_on_loop
        return ways + [await _put(commit, rig, 1200 + 100 * i) for i in range(9)]

    assert _adaptive_run(rig, body) == ["aio"] * 8 + ["inline"] + ["aio"] * 8 + ["inline"]


def test_adaptive_leaves_inline_after_a_slow_sync() -> None:
    """An inline sync that took longer than 2 ms: the next puts go through native AIO."""
    log = _SlowLog()
    service = GroupCommitService(_FakeCommitLog(), MessageStoreConfig(store_path_root_dir="unused"))  # type: ignore[arg-type]
    service.start()
    rig = _AioRig(service, Histogram(), log=log)

    async def body(commit: LoopGroupCommit) -> list[str]:
        ways = [await _put(commit, rig, 100 * (i + 1)) for i in range(9)]
        log.delay_s = 0.005
        ways.append(await _put(commit, rig, 1000))
        log.delay_s = 0.0
        return [*ways, await _put(commit, rig, 1100)]

    try:
        assert _adaptive_run(rig, body) == ["aio"] * 8 + ["inline"] * 2 + ["aio"]
    finally:
        service.shutdown()


def test_adaptive_probes_native_aio_every_32_inline_syncs(rig: _AioRig) -> None:
    """Inline, every 33rd put goes through native AIO (the loop cannot see puts arrive while
    it syncs itself): calm, the loop is back inline at once; with a put queued behind it,
    native AIO stays until eight calm syncs in a row."""
    log, aio = rig.log, rig.aio

    async def body(commit: LoopGroupCommit) -> list[str]:
        ways = [await _put(commit, rig, 100 * (i + 1)) for i in range(8 + 32 + 1 + 32)]
        # the second probe finds the next put queued behind it
        offset = 100 * (len(ways) + 1)
        log.max_offset = offset
        commit.sync_early()
        probe = _durable(commit, offset)
        assert len(aio.submitted) == 10  # 8 + the first probe + this one
        log.max_offset = offset + 100
        behind = _durable(commit, offset + 100)
        await asyncio.sleep(0)
        aio.complete(0)
        assert await probe is True
        await _until(lambda: len(aio.submitted) == 11)
        aio.complete(0)
        assert await behind is True
        assert not commit.syncs_on_loop
        return [*ways, await _put(commit, rig, offset + 200)]

    ways = _adaptive_run(rig, body)
    assert ways == ["aio"] * 8 + ["inline"] * 32 + ["aio"] + ["inline"] * 32 + ["aio"]


def test_adaptive_sync_flush_acks_one_by_one_go_inline_on_a_quick_disk(tmp_path: Path) -> None:
    """The real broker and store (on tmpfs, where a sync takes microseconds), durable sends
    answered one by one: after the calm native AIO syncs the loop syncs inline, and every ack
    still leaves only once the commit log is durable past its record."""
    if not _native_aio():
        pytest.skip("no native AIO here")
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no tmpfs at /dev/shm")

    async def main(root: Path) -> tuple[list[tuple[bytes, int]], int, bool]:
        broker = BrokerController(_config(root, "SYNC_FLUSH", on_loop=False))
        await broker.start()
        protocol = _ServerProtocol(broker.server)
        try:
            broker.topic_config_manager.update_topic_config(
                TopicConfig(topic_name="SyncAck", read_queue_nums=1, write_queue_nums=1)
            )
            transport = _RecordingTransport(broker)
            protocol.connection_made(transport)
            for opaque in range(20):
                request = send_request("SyncAck", b"one-by-one-%d" % opaque, properties="WAIT\x01true")
                request.opaque = opaque
                protocol.data_received(request.encode())
                await _until(
                    lambda n=opaque: sum(len(FrameDecoder().feed(data)) for data, _ in transport.writes) > n
                )
            inline = broker.store.loop_group_commit(asyncio.get_running_loop()).syncs_on_loop
            return transport.writes, broker.store.get_max_phy_offset(), inline
        finally:
            protocol.connection_lost(None)
            await broker.shutdown()

    with tempfile.TemporaryDirectory(dir=shm, prefix="rocketq-adaptive-") as root:
        writes, max_offset, inline = asyncio.run(main(Path(root)))
    answers = [cmd for data, _ in writes for cmd in FrameDecoder().feed(data)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 20
    assert _acked_durable(writes, max_offset) == 20
    assert inline


def test_adaptive_a_failed_inline_sync_answers_false_and_goes_back_to_native_aio(
    rig: _AioRig, caplog: pytest.LogCaptureFixture
) -> None:
    log = rig.log

    async def body(commit: LoopGroupCommit) -> list[str]:
        ways = [await _put(commit, rig, 100 * (i + 1)) for i in range(9)]
        log.error = OSError(5, "Input/output error")
        log.max_offset = 1000
        assert await _durable(commit, 1000) is False  # FLUSH_DISK_TIMEOUT, the bytes stay stored
        assert not commit.syncs_on_loop
        log.error = None
        return [*ways, await _put(commit, rig, 1100)]

    with caplog.at_level(logging.ERROR, logger="rocketq.broker.store"):
        assert _adaptive_run(rig, body) == ["aio"] * 8 + ["inline", "aio"]
    assert any("syncing the commit log failed" in r.getMessage() for r in caplog.records)
