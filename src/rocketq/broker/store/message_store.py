"""``MessageStore``: the broker's message store (commit log + consume queues + index).

Mirrors ``org.apache.rocketmq.store.DefaultMessageStore`` (4.9.7). Layout under
``store_path_root_dir``: ``commitlog/<20-digit offset>``, ``consumequeue/<topic>/<queueId>/
<20-digit offset>``, ``index/<yyyyMMddHHmmssSSS>``, ``checkpoint`` and ``abort`` (present
while running: its presence at ``load()`` means the last run did not shut down cleanly).

Threading model: ``put_message``/``put_messages`` may be called from any thread; one lock
(``CommitLog.put_lock``) covers offset assignment, the copy into the mapping and the
dispatch (consume-queue unit + index entries), so a pull sees a message as soon as its put
returns. Reads (``get_message`` and friends) take no lock and run concurrently with puts.
Background threads: the commit-log flush (periodic, or group commit for SYNC_FLUSH; a put made
on the broker's loop with ``defer_flush`` is synced by ``loop_group_commit`` instead),
``FlushConsumeQueueService`` (consume queues, index, checkpoint) and ``CleanService``
(retention); all are joined by ``shutdown()``. Arrival listeners run on the putting
thread after the lock is released.

Full disk: every store file is allocated when created (``mapped_file.preallocate``), the
consume-queue files a put needs are obtained before its record is written, free space is
checked before each new commit-log segment and every ``disk_check_interval_ms``; puts are
then refused (SERVICE_NOT_AVAILABLE / CREATE_MAPEDFILE_FAILED, as Java answers them) while
reads go on. A store loaded on a full disk whose last files cannot be allocated comes up
read-only (``read_only_reason``) and becomes writable once they can.

Recovery (``load``): consume queues are cut at their last valid unit; the commit log is
scanned (BODYCRC checked) from the third segment from the end after a clean shutdown, or
from the checkpoint-selected segment after a crash, and cut (tail zeroed) at the first
invalid record; consume-queue units and index entries pointing past the valid end are
dropped; records missing from the consume queues/index are re-dispatched; the
topic-queue offset table is rebuilt from the consume queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import Final

from rocketq.broker.store.aio_sync import AioSync
from rocketq.broker.store.checkpoint import StoreCheckpoint
from rocketq.broker.store.clean_service import (
    CleanCommitLogService,
    CleanConsumeQueueService,
    default_disk_usage,
)
from rocketq.broker.store.commit_log import CommitLog, CommitLogDispatcher, DispatchRequest, delay_ms_for
from rocketq.broker.store.config import CQ_STORE_UNIT_SIZE, SYNC_FLUSH, MessageStoreConfig
from rocketq.broker.store.consume_queue import ConsumeQueue
from rocketq.broker.store.flush_service import FlushRealTimeService, GroupCommitService, LoopGroupCommit
from rocketq.broker.store.index import IndexService, index_key_hashes
from rocketq.broker.store.mapped_file import MappedFile, now_ms
from rocketq.broker.store.message_ext_broker_inner import (
    MessageExtBatch,
    MessageExtBrokerInner,
    delay_time_level,
    wait_store_msg_ok,
)
from rocketq.broker.store.read_path import contiguous_run
from rocketq.broker.store.status import (
    GetMessageResult,
    GetMessageStatus,
    MessageFilter,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    RecordFilter,
    StoreStats,
)
from rocketq.common.histogram import Histogram
from rocketq.common.service_thread import PeriodicService, ServiceThread
from rocketq.errors import IllegalArgumentError, MalformedFrameError
from rocketq.protocol.codes import TRANSACTION_TYPE_MASK, MessageSysFlag
from rocketq.protocol.message import (
    MAX_PROPERTIES_LENGTH,
    MAX_TOPIC_LENGTH,
    PROPERTY_SEPARATOR,
    MessageConst,
    MessageExt,
    RecordEncoder,
    batch_entry_at,
    decode_properties,
    decode_record,
    tags_code,
)
from rocketq.protocol.message_id import HostAddr
from rocketq.protocol.mixall import RMQ_SYS_SCHEDULE_TOPIC

__all__ = ["ArrivalListener", "MessageStore"]

_log = logging.getLogger("rocketq.broker.store")

#: ``(topic, queue_id, new max offset, tags_code, store_timestamp, properties)``.
ArrivalListener = Callable[[str, int, int, int, int, dict[str, str]], None]

_UNIT = struct.Struct(">qiq")
_TRANSACTION_MASK = TRANSACTION_TYPE_MASK
_TRANSACTION_COMMIT = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
_TRANSACTION_ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
#: Single-put record encoders kept at most (MessageStore._encoders).
_ENCODER_CACHE_MAX = 1024
# MessageExtEncoder: the record may exceed maxMessageSize (a body limit) by 64 KiB of headers.
_RECORD_OVERHEAD_ALLOWANCE = 64 * 1024
_SEPARATOR: Final = PROPERTY_SEPARATOR.encode()
_SEPARATOR_BYTE: Final = ord(PROPERTY_SEPARATOR)


def _encoder_for(
    encoders: dict[tuple[str, HostAddr, HostAddr, int], RecordEncoder] | None,
    topic: str,
    born_host: HostAddr,
    store_host: HostAddr,
    sys_flag: int,
) -> RecordEncoder | None:
    """The record encoder for this topic, hosts and sysFlag, from ``encoders`` or made (and
    kept there, the cache emptied first once it holds ``_ENCODER_CACHE_MAX``); None for a
    topic over 127 bytes (``DefaultMessageStore.checkMessage``) or a host that cannot be
    encoded."""
    key = (topic, born_host, store_host, sys_flag)
    encoder = encoders.get(key) if encoders is not None else None
    if encoder is None:
        topic_b = topic.encode()
        if len(topic_b) > MAX_TOPIC_LENGTH:
            return None
        try:
            encoder = RecordEncoder(topic_b, born_host, store_host, sys_flag)
        except IllegalArgumentError:
            return None
        if encoders is not None:
            if len(encoders) >= _ENCODER_CACHE_MAX:
                encoders.clear()
            encoders[key] = encoder
    return encoder


class MessageStore(CommitLogDispatcher):
    """The message store (``DefaultMessageStore``)."""

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        clock_ms: Callable[[], int] = now_ms,
        disk_usage: Callable[[str], float] = default_disk_usage,
    ) -> None:
        """``clock_ms`` gives store timestamps (wall-clock ms; inject it in tests);
        ``disk_usage(path)`` gives the used fraction of a partition (retention, disk full)."""
        self.config = config
        self._clock_ms = clock_ms
        self._disk_usage = disk_usage
        self.commit_log = CommitLog(config, clock_ms)
        self.consume_queue_table: dict[tuple[str, int], ConsumeQueue] = {}
        self.index_service = IndexService(
            config.index_dir,
            config.max_hash_slot_num,
            config.max_index_num,
            config.max_msgs_num_batch,
            clock_ms,
        )
        self.checkpoint: StoreCheckpoint | None = None
        self.stats = StoreStats()
        self._stats_lock = threading.Lock()
        self._listeners: list[ArrivalListener] = []
        #: Record encoders of single puts by (topic, born host, store host, sysFlag): one
        #: producer connection sending to one topic reuses its encoder (bounded, cleared when full).
        self._encoders: dict[tuple[str, HostAddr, HostAddr, int], RecordEncoder] = {}
        self._index_enabled = config.message_index_enable
        self._delay_levels = config.delay_levels_ms
        self._memory_bytes = int(
            config.total_physical_memory() * config.access_message_in_memory_max_ratio / 100
        )
        self._loaded = False
        self._running = False
        self._last_dispatch_ts = 0
        self._clean_commit_log = CleanCommitLogService(config, self.commit_log, disk_usage)
        self._clean_consume_queue = CleanConsumeQueueService(
            self.commit_log, self._all_consume_queues, self.index_service
        )
        self._group_commit: GroupCommitService | None = None
        self._loop_group_commit: LoopGroupCommit | None = None
        #: SYNC_FLUSH group-commit flush latency, ms (rocketmq_storage_flush_latency)
        self.flush_latency = Histogram()
        self._services: list[ServiceThread] = []
        #: Why puts are refused although the store runs (files not allocatable), or None.
        self.read_only_reason: str | None = None
        #: (file, first byte to allocate or None for its wrote position) still unbacked.
        self._unallocated: list[tuple[MappedFile, int | None]] = []
        self.commit_log.dispatcher = self

    def update_config(self, config: MessageStoreConfig) -> None:
        """Use ``config`` from now on (updateBrokerConfig). Only the settings read per call or
        per pass take effect (``maxMessageSize``, the transfer limits, ``defaultQueryMaxNum``,
        retention and the disk ratios: ``rocketq.broker.config.LIVE_UPDATE_KEYS``); the
        rest was fixed at construction and the broker refuses to change it."""
        self.config = config
        self._clean_commit_log.update_config(config)

    # ================================================================== lifecycle

    def load(self) -> bool:
        """Open the files and recover (``DefaultMessageStore.load``); False on failure."""
        last_exit_ok = not os.path.exists(self.config.abort_path)
        try:
            os.makedirs(self.config.store_path_root_dir, exist_ok=True)
            self.commit_log.queue.load()
            self._load_consume_queues()
            self.checkpoint = StoreCheckpoint(self.config.checkpoint_path)
            self.index_service.load()
            self._recover(last_exit_ok)
            self._secure_tails()
        except OSError:
            _log.exception("message store load failed")
            return False
        self._loaded = True
        _log.info(
            "store loaded (%s exit), max phy offset %d",
            "clean" if last_exit_ok else "unclean",
            self.get_max_phy_offset(),
        )
        return True

    def start(self) -> None:
        """Write the abort file and start the background threads (``DefaultMessageStore.start``)."""
        if not self._loaded and not self.load():
            raise OSError(f"cannot load the message store at {self.config.store_path_root_dir}")
        with open(self.config.abort_path, "w"):
            pass
        if self.config.flush_disk_type == SYNC_FLUSH:
            self._group_commit = GroupCommitService(self.commit_log, self.config, self.flush_latency)
            flush: ServiceThread = self._group_commit
        else:
            flush = FlushRealTimeService(self.commit_log, self.config)
        config = self.config
        self._services = [
            flush,
            PeriodicService(
                "FlushConsumeQueueService",
                config.flush_interval_consume_queue_ms / 1000,
                self._periodic_flush_logics,
            ),
            PeriodicService(
                "CleanResourceService", config.clean_resource_interval_ms / 1000, self.clean_expired
            ),
            PeriodicService("StoreSpaceCheckService", config.disk_check_interval_ms / 1000, self.check_space),
        ]
        self._last_thorough_logics_flush = time.monotonic()
        self._clean_commit_log.check_disk()  # a full disk refuses the very first put
        self.commit_log.queue.warm_next_file()  # warmMapedFileEnable: the next segment, ahead
        for service in self._services:
            service.start()
        self._running = True

    def shutdown(self) -> None:
        """Flush everything, write the checkpoint, remove the abort file, join the threads."""
        was_running = self._running
        self._running = False
        self.commit_log.close_for_writing()  # waits for the append in progress
        for service in reversed(self._services):
            service.shutdown()
        self._services = []
        self._group_commit = None
        lgc, self._loop_group_commit = self._loop_group_commit, None
        if lgc is not None:
            lgc.close()
        if not self._loaded:
            return
        self.commit_log.flush(0)
        self.flush_logics()
        if self.checkpoint is not None:
            self.checkpoint.shutdown()
            self.checkpoint = None
        self.commit_log.close()
        for cq in list(self.consume_queue_table.values()):
            cq.close()
        self.index_service.close()
        self._loaded = False
        if was_running:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.config.abort_path)

    @property
    def is_disk_full(self) -> bool:
        """True while puts are refused because the disk is over the warning level."""
        return self._clean_commit_log.disk_full

    def add_arrival_listener(self, cb: ArrivalListener) -> None:
        """Called after each dispatched (consumable) message on the putting thread with
        ``(topic, queue_id, queue_offset + 1, tags_code, store_timestamp, properties)``."""
        self._listeners.append(cb)

    # ================================================================== put path

    def _check_store_status(self) -> PutMessageStatus | None:
        # DefaultMessageStore.checkStoreStatus: shut down / not writeable (disk full)
        if not self._running or self._clean_commit_log.disk_full or self.read_only_reason is not None:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        return None

    def reserve_dispatch(self, requests: Sequence[DispatchRequest]) -> None:
        """``CommitLogDispatcher.reserve_dispatch``: the consume-queue file(s) the units of these
        requests (one record, or a batch of one topic-queue) go to, created now. Under the
        append lock; raises ``OSError`` when a file cannot be allocated."""
        first = requests[0]
        tran = first.sys_flag & _TRANSACTION_MASK
        if tran != 0 and tran != _TRANSACTION_COMMIT:  # noqa: PLR1714 - ints, hot path
            return
        key = (first.topic, first.queue_id)
        cq = self.consume_queue_table.get(key)
        if cq is None:
            cq = self._create_consume_queue(first.topic, first.queue_id)
        cq.reserve(self.commit_log.topic_queue_table.get(key, 0), len(requests), None)

    def may_create_segment(self) -> bool:
        """``CommitLogDispatcher.may_create_segment``: measure the disk before every new segment."""
        self._clean_commit_log.check_disk()
        return not self._clean_commit_log.disk_full

    def _secure_tails(self) -> None:
        """After recovery: allocate the unwritten tail of every file that will be written
        (the last commit-log segment and consume-queue file, the last index file); those
        that cannot be (a full disk) keep the store read-only until :meth:`check_space`
        allocates them."""
        files: list[tuple[MappedFile, int | None]] = []
        last = self.commit_log.queue.last_file()
        if last is not None:
            files.append((last, None))
        for cq in self.consume_queue_table.values():
            last = cq.queue.last_file()
            if last is not None:
                files.append((last, None))
        index_files = self.index_service.files
        if index_files:
            files.append((index_files[-1].file, 0))  # hash slots are written anywhere
        pending: list[tuple[MappedFile, int | None]] = []
        for mf, position in files:
            if mf.is_full and position is None:
                continue
            try:
                mf.ensure_allocated(position)
            except OSError as exc:
                _log.error("cannot allocate %s: %s", mf.path, exc)
                pending.append((mf, position))
        self._set_unallocated(pending)

    def _set_unallocated(self, pending: list[tuple[MappedFile, int | None]]) -> None:
        self._unallocated = pending
        if pending:
            reason = f"{len(pending)} store files cannot be allocated (disk full)"
            if reason != self.read_only_reason:  # logged when it changes, not every check
                _log.error("message store is read-only: %s", reason)
            self.read_only_reason = reason
        elif self.read_only_reason is not None:
            self.read_only_reason = None
            _log.info("message store files allocated: accepting puts again")

    def check_space(self) -> None:
        """Measure the disk (``is_disk_full``) and retry allocating the files that kept the
        store read-only; runs every ``disk_check_interval_ms``."""
        self._clean_commit_log.check_disk()
        if not self._unallocated:
            return
        pending: list[tuple[MappedFile, int | None]] = []
        for mf, position in self._unallocated:
            if not mf.available:
                continue  # deleted meanwhile (retention, a dropped topic)
            try:
                mf.ensure_allocated(position)
            except FileNotFoundError:
                continue
            except OSError:
                pending.append((mf, position))
        self._set_unallocated(pending)

    def _prepare(
        self,
        msg: MessageExtBrokerInner,
        encoders: dict[tuple[str, HostAddr, HostAddr, int], RecordEncoder] | None = None,
    ) -> tuple[bytes, DispatchRequest] | PutMessageStatus:
        """Validate, apply the delay rewrite and encode one message outside the lock.

        ``encoders``: record encoders by topic, hosts and sysFlag, so what the messages of a
        batch (or the single puts of one producer connection) share is worked out once."""
        topic = msg.topic
        encoder = _encoder_for(encoders, topic, msg.born_host, msg.store_host, msg.sys_flag)
        if encoder is None:
            return PutMessageStatus.MESSAGE_ILLEGAL
        body = msg.body
        if len(body) > self.config.max_message_size:
            return PutMessageStatus.MESSAGE_ILLEGAL  # MessageExtEncoder.encode: body limit
        props_b = msg.properties_string.encode()
        if len(props_b) > MAX_PROPERTIES_LENGTH:
            # MessageExtEncoder.encode: PROPERTIES_SIZE_EXCEEDED (Java checkMessage refuses
            # > 32767 *chars* first with MESSAGE_ILLEGAL; both map to the same response).
            return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
        try:
            record = encoder.encode(
                msg.queue_id, msg.flag, 0, 0, msg.born_timestamp, 0, msg.reconsume_times,
                msg.prepared_transaction_offset, body, props_b,
            )  # fmt: skip
        except IllegalArgumentError:
            return PutMessageStatus.MESSAGE_ILLEGAL
        size = len(record)
        if size > self.config.max_message_size + _RECORD_OVERHEAD_ALLOWANCE:
            return PutMessageStatus.MESSAGE_ILLEGAL
        if size + 8 > self.config.mapped_file_size_commit_log:
            return PutMessageStatus.MESSAGE_ILLEGAL  # could never fit a segment
        props = msg.properties
        request = DispatchRequest(
            topic=topic,
            queue_id=msg.queue_id,
            msg_size=size,
            tags_code=msg.tags_code,
            sys_flag=encoder.sys_flag,  # with the V6 host bits
            properties=props,
            key_hashes=index_key_hashes(topic, props) if self._index_enabled else [],
            delay_ms=delay_ms_for(topic, props, self._delay_levels)
            if topic == RMQ_SYS_SCHEDULE_TOPIC
            else -1,
        )
        return record, request

    def _apply_delay(self, msg: MessageExtBrokerInner) -> None:
        # CommitLog.asyncPutMessage: a non-transactional (or commit) message with a delay
        # level is parked in SCHEDULE_TOPIC_XXXX, queue level-1, with its real topic/queue
        # saved in REAL_TOPIC/REAL_QID; levels above the max are clamped (DELAY rewritten).
        tran = msg.sys_flag & _TRANSACTION_MASK
        if tran not in (0, _TRANSACTION_COMMIT):
            return
        level = msg.delay_time_level
        if level <= 0:
            return
        max_level = len(self._delay_levels)
        if level > max_level:
            level = max_level
            msg.put_property(MessageConst.DELAY, str(level))
        msg.put_property(MessageConst.REAL_TOPIC, msg.topic)
        msg.put_property(MessageConst.REAL_QID, str(msg.queue_id))
        msg.topic = RMQ_SYS_SCHEDULE_TOPIC
        msg.queue_id = level - 1

    def loop_group_commit(self, loop: asyncio.AbstractEventLoop) -> LoopGroupCommit:
        """The group commit that makes ``defer_flush`` puts made on ``loop`` durable (the
        broker's server loop; a put from another loop rebinds it, and the old one still
        serves its waiters). Its syncs go through native AIO when ``sync_flush_aio`` is set
        and the kernel offers it (``aio_sync``), else to the ``GroupCommitService`` thread,
        or are made on the loop with ``sync_flush_on_loop``."""
        lgc = self._loop_group_commit
        if lgc is None or lgc.loop is not loop:
            config = self.config
            thread = None if config.sync_flush_on_loop else self._group_commit
            aio = AioSync.open() if thread is not None and config.sync_flush_aio else None
            if lgc is not None:
                lgc.close()
            lgc = self._loop_group_commit = LoopGroupCommit(
                self.commit_log, loop, self.flush_latency, thread, aio, config.sync_flush_adaptive
            )
        return lgc

    def put_message(self, msg: MessageExtBrokerInner, *, defer_flush: bool = False) -> PutMessageResult:
        """Store one message (``DefaultMessageStore.putMessage``). Thread-safe.

        ``defer_flush``: under SYNC_FLUSH a put that waits for the disk gets
        ``flush_offset`` instead of ``flush_future`` and its caller makes it durable
        (:meth:`loop_group_commit`) before acknowledging it.

        Delayed messages are rewritten into SCHEDULE_TOPIC_XXXX (``msg`` is modified, as in
        Java). Statuses: PUT_OK; SERVICE_NOT_AVAILABLE (not started, shut down, or disk
        full -- see ``is_disk_full``); MESSAGE_ILLEGAL (topic over 127 bytes, body over
        ``max_message_size``, record larger than a segment); PROPERTIES_SIZE_EXCEEDED
        (property string over 32767 bytes); CREATE_MAPEDFILE_FAILED.
        """
        status = self._check_store_status()
        if status is not None:
            return PutMessageResult(status)
        self._apply_delay(msg)
        prepared = self._prepare(msg, self._encoders)
        if not isinstance(prepared, tuple):  # a status (a tuple check is native; an Enum one is not)
            self._count_failure()
            return PutMessageResult(prepared)
        record, request = prepared
        return self._append(record, [request], msg.store_host, msg.wait_store_msg_ok, defer_flush)

    def put_messages(
        self,
        batch: Sequence[MessageExtBrokerInner],
        *,
        batch_body_size: int | None = None,
        defer_flush: bool = False,
    ) -> PutMessageResult:
        """Store a batch (``DefaultMessageStore.putMessages``): one topic-queue, consecutive
        queue offsets, all records in one segment, one lock acquisition.

        MESSAGE_ILLEGAL for an empty batch, mixed topic/queue, transactional or delayed
        messages (``CommitLog.asyncPutMessages``), a batch over ``max_message_size``, or a
        batch larger than a segment. ``batch_body_size`` is the length of the encoded
        SEND_BATCH_MESSAGE body the batch came from, which is what Java's ``checkMessages``
        holds against ``max_message_size`` (entry headers and properties included); without
        it the sum of the bodies is. ``defer_flush`` as for :meth:`put_message`.
        """
        status = self._check_store_status()
        if status is not None:
            return PutMessageResult(status)
        if not batch:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        # DefaultMessageStore.checkMessages, before anything is encoded
        size = sum(len(msg.body) for msg in batch) if batch_body_size is None else batch_body_size
        if size > self.config.max_message_size:
            self._count_failure()
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        first = batch[0]
        encoders: dict[tuple[str, HostAddr, HostAddr, int], RecordEncoder] = {}
        records: list[bytes] = []
        requests: list[DispatchRequest] = []
        total = 0
        for msg in batch:
            if (
                msg.topic != first.topic
                or msg.queue_id != first.queue_id
                or msg.sys_flag & _TRANSACTION_MASK
                or msg.delay_time_level > 0
            ):
                self._count_failure()
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
            prepared = self._prepare(msg, encoders)
            if isinstance(prepared, PutMessageStatus):
                self._count_failure()
                return PutMessageResult(prepared)
            records.append(prepared[0])
            requests.append(prepared[1])
            total += len(prepared[0])
        if total + 8 > self.config.mapped_file_size_commit_log:
            self._count_failure()
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        return self._append(
            b"".join(records), requests, first.store_host, first.wait_store_msg_ok, defer_flush
        )

    def put_batch(self, batch: MessageExtBatch, *, defer_flush: bool = False) -> PutMessageResult:
        """Store a SEND_BATCH_MESSAGE as received (``putMessages`` of a ``MessageExtBatch``):
        what :meth:`put_messages` does, with the records encoded straight from the batch
        body into one buffer (``CommitLog.MessageExtBatchEncoder``), without a message
        object per entry. Sets ``batch.msgs`` and ``batch.body_size``.

        Raises :class:`MalformedFrameError` for a body that does not split into entries and
        :class:`IllegalArgumentError` for a delay level, the batch's or an entry's (nothing is
        stored then); the statuses are :meth:`put_messages`'s. Each record stores its entry's
        property bytes as sent, then the batch's (a separator between them when both are
        non-empty and the entry's do not already end with one).
        """
        status = self._check_store_status()
        if status is not None:
            return PutMessageResult(status)
        body = batch.body
        topic = batch.topic
        if (
            not body
            or len(body) > self.config.max_message_size  # checkMessages: the encoded body
            or batch.sys_flag & _TRANSACTION_MASK
        ):
            self._count_failure()
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        encoder = _encoder_for(self._encoders, topic, batch.born_host, batch.store_host, batch.sys_flag)
        if encoder is None:
            self._count_failure()
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        batch_props = batch.properties
        suffix = batch.properties_string.encode()
        queue_id = batch.queue_id
        born_timestamp = batch.born_timestamp
        reconsume_times = batch.reconsume_times
        sys_flag = encoder.sys_flag  # with the V6 host bits
        index = self._index_enabled
        schedule = topic == RMQ_SYS_SCHEDULE_TOPIC
        view = memoryview(body)
        data = bytearray()
        requests: list[DispatchRequest] = []
        wait = True
        body_size = 0
        pos = 0
        end = len(body)
        while pos < end:
            flag, ppos, entry_end = batch_entry_at(body, pos)
            raw = body[ppos + 2 : entry_end]
            props = decode_properties(raw.decode("utf-8", "replace"))
            tags = props.get(MessageConst.TAGS)
            if batch_props:
                props.update(batch_props)
            # the entry's or the batch's own (CommitLog.asyncPutMessages checks the batch's)
            if delay_time_level(props) > 0:
                raise IllegalArgumentError("Delay message is not supported in batch")
            if suffix:
                if raw and raw[-1] != _SEPARATOR_BYTE:
                    raw += _SEPARATOR
                raw += suffix
            if len(raw) > MAX_PROPERTIES_LENGTH:
                self._count_failure()
                return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
            if not requests:
                wait = wait_store_msg_ok(props)
            try:
                size = encoder.append_record(
                    data, queue_id, flag, born_timestamp, reconsume_times, view[pos + 20 : ppos], raw
                )
            except IllegalArgumentError:
                self._count_failure()
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
            body_size += ppos - pos - 20
            requests.append(
                DispatchRequest(
                    topic=topic,
                    queue_id=queue_id,
                    msg_size=size,
                    tags_code=tags_code(tags),
                    sys_flag=sys_flag,
                    properties=props,
                    key_hashes=index_key_hashes(topic, props) if index else [],
                    delay_ms=delay_ms_for(topic, props, self._delay_levels) if schedule else -1,
                )
            )
            pos = entry_end
        batch.msgs = len(requests)
        batch.body_size = body_size
        if len(data) + 8 > self.config.mapped_file_size_commit_log:
            self._count_failure()
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        return self._append(data, requests, batch.store_host, wait, defer_flush)

    def _count_failure(self) -> None:
        with self._stats_lock:
            self.stats.put_message_failed_times += 1

    def _append(
        self,
        data: bytes | bytearray,
        requests: list[DispatchRequest],
        store_host: HostAddr,
        wait: bool,
        defer_flush: bool,
    ) -> PutMessageResult:
        group_commit = self._group_commit
        # a put whose ack waits for its sync on the loop: the sync starts once the bytes are
        # written, while the dispatch runs (``written``)
        sync_now = group_commit is not None and wait and defer_flush
        if sync_now:
            loop = asyncio._get_running_loop()
            if loop is not None:
                # made before the bytes are: making it opens the AIO context (a call that
                # lets other threads run), and the GroupCommitService's idle pass must not
                # sync this put's bytes meanwhile, behind the sync it is about to start
                self.loop_group_commit(loop)
        result = self.commit_log.append(data, requests, store_host, sync_now)
        if isinstance(result, PutMessageStatus):
            self._count_failure()
            return PutMessageResult(result)
        future = None
        flush_offset = -1
        if group_commit is not None:
            # CommitLog.submitFlushRequest: wait only if the producer asked (WAIT=true)
            if not wait:
                group_commit.wakeup()
            elif defer_flush:
                flush_offset = result.wrote_offset + result.wrote_bytes
            else:
                future = group_commit.submit(result.wrote_offset + result.wrote_bytes)
        listeners = self._listeners
        if listeners:
            for request in requests:
                if request.in_consume_queue:
                    for cb in listeners:
                        cb(
                            request.topic,
                            request.queue_id,
                            request.consume_queue_offset + 1,
                            request.tags_code,
                            request.store_timestamp,
                            request.properties,
                        )
        return PutMessageResult(PutMessageStatus.PUT_OK, result, future, flush_offset)

    def written(self) -> None:
        """``CommitLogDispatcher.written``: the bytes of a put whose ack waits for the disk
        are written (under the append lock, before their dispatch): the loop's group commit
        starts a sync of them now if none is in flight, so the disk works while the consume
        queue and the index are written (as Java's put wakes ``GroupCommitService`` at once).
        Any failure leaves the put to the end-of-iteration path (``on_durable``)."""
        loop = asyncio._get_running_loop()
        if loop is None:  # (defer_flush puts are made on a loop)
            return
        try:
            self.loop_group_commit(loop).sync_early()
        except Exception:
            _log.exception("SYNC_FLUSH: starting a sync after the append failed")

    def appended(self, msgs: int, wrote_bytes: int) -> None:
        """``CommitLogDispatcher.appended``: the put counters, under the append lock."""
        stats = self.stats
        stats.put_message_times_total += msgs
        stats.put_message_size_total += wrote_bytes

    def dispatch_batch(self, requests: Sequence[DispatchRequest]) -> None:
        """:meth:`dispatch` for the records of one ``put_messages`` batch: the consume-queue
        units written together, the index entries with one header write.

        ``put_messages`` refused anything else, so the records are consecutive, of one
        topic-queue and not transactional (every one goes to the consume queue)."""
        first = requests[0]
        key = (first.topic, first.queue_id)
        cq = self.consume_queue_table.get(key)
        if cq is None:
            cq = self._create_consume_queue(first.topic, first.queue_id)
        cq.put_many(
            [(r.commit_log_offset, r.msg_size, r.tags_code) for r in requests],
            first.consume_queue_offset,
            requests[-1].store_timestamp,
        )
        if self._index_enabled:
            self.index_service.build_index_batch(
                [(r.key_hashes, r.commit_log_offset, r.store_timestamp) for r in requests]
            )
        self._last_dispatch_ts = requests[-1].store_timestamp

    def dispatch(self, request: DispatchRequest) -> None:
        """``CommitLogDispatcherBuildConsumeQueue`` + ``CommitLogDispatcherBuildIndex``.
        Runs under the append lock (or single-threaded during recovery)."""
        tran = request.sys_flag & _TRANSACTION_MASK
        if tran == 0 or tran == _TRANSACTION_COMMIT:  # noqa: PLR1714 - ints, hot path
            key = (request.topic, request.queue_id)
            cq = self.consume_queue_table.get(key)
            if cq is None:
                cq = self._create_consume_queue(request.topic, request.queue_id)
            cq.put(
                request.commit_log_offset,
                request.msg_size,
                request.tags_code,
                request.consume_queue_offset,
                request.store_timestamp,
            )
        if self._index_enabled and tran != _TRANSACTION_ROLLBACK:
            self.index_service.build_index(
                request.key_hashes, request.commit_log_offset, request.store_timestamp
            )
        self._last_dispatch_ts = request.store_timestamp

    # ================================================================== consume queues

    def _create_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = ConsumeQueue(
            topic, queue_id, self.config.consume_queue_dir, self.config.mapped_file_size_consume_queue
        )
        self.consume_queue_table = {**self.consume_queue_table, (topic, queue_id): cq}
        return cq

    def _load_consume_queues(self) -> None:
        root = self.config.consume_queue_dir
        table: dict[tuple[str, int], ConsumeQueue] = {}
        if os.path.isdir(root):
            for topic in sorted(os.listdir(root)):
                topic_dir = os.path.join(root, topic)
                if not os.path.isdir(topic_dir):
                    continue
                for qid in sorted(os.listdir(topic_dir)):
                    try:
                        queue_id = int(qid)
                    except ValueError:
                        continue
                    cq = ConsumeQueue(topic, queue_id, root, self.config.mapped_file_size_consume_queue)
                    cq.load()
                    table[(topic, queue_id)] = cq
        self.consume_queue_table = table

    def _all_consume_queues(self) -> list[ConsumeQueue]:
        return list(self.consume_queue_table.values())  # the table is replaced, never mutated

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The consume queue of (topic, queueId), None if it never received a message."""
        return self.consume_queue_table.get((topic, queue_id))

    def delete_topics(self, topics: set[str]) -> None:
        """``DefaultMessageStore.deleteTopics``: drop the topics' consume queues and their
        offsets in the topic-queue table (a re-created topic starts again at offset 0)."""
        with self.commit_log.put_lock:
            doomed = [cq for key, cq in self.consume_queue_table.items() if key[0] in topics]
            self.consume_queue_table = {
                k: v for k, v in self.consume_queue_table.items() if k[0] not in topics
            }
            for key in [k for k in self.commit_log.topic_queue_table if k[0] in topics]:
                del self.commit_log.topic_queue_table[key]
        for cq in doomed:
            cq.destroy()  # readers still holding slices keep the mapping until they drop them
        for topic in topics:
            shutil.rmtree(os.path.join(self.config.consume_queue_dir, topic), ignore_errors=True)

    # ================================================================== recovery

    def _recover(self, last_exit_ok: bool) -> None:
        checkpoint = self.checkpoint
        assert checkpoint is not None
        max_phy_in_cq = -1
        for cq in self.consume_queue_table.values():
            cq.recover()
            max_phy_in_cq = max(max_phy_in_cq, cq.max_physic_offset)
        commit_log = self.commit_log
        files = commit_log.queue.files
        if not files:
            # CommitLog.recoverNormally/Abnormally with no files: destroyLogics
            for cq in self.consume_queue_table.values():
                cq.destroy()
            self.consume_queue_table = {}
            self.index_service.destroy()
            commit_log.topic_queue_table = {}
            return
        # DefaultMessageStore.isMappedFileMatchedRecover: the index bounds the start only
        # when it is to be rebuilt safely (messageIndexSafe)
        safe_index = self._index_enabled and self.config.message_index_safe
        min_ts = checkpoint.min_timestamp_index() if safe_index else checkpoint.min_timestamp()
        start_index = commit_log.recovery_start_index(last_exit_ok, min_ts)
        valid_end = commit_log.scan_valid_end(start_index, self.config.check_crc_on_recover)
        _log.info("commit log valid up to offset %d (scan from segment %d)", valid_end, start_index)
        commit_log.truncate(valid_end)
        if max_phy_in_cq > valid_end:
            for cq in self.consume_queue_table.values():
                if cq.max_physic_offset > valid_end:
                    cq.truncate_dirty_logic_files(valid_end)
        self.index_service.rollback_to(valid_end, commit_log.pickup_store_timestamp)
        min_phy = max(commit_log.min_offset(), 0)
        if last_exit_ok:
            # DefaultMessageStore.start: reput from the furthest point the queues reached
            reput_from = max((cq.max_physic_offset for cq in self.consume_queue_table.values()), default=-1)
            if reput_from < 0:
                reput_from = min_phy
        else:
            # recoverAbnormally re-dispatches everything from the recovery segment on
            reput_from = commit_log.queue.files[start_index].file_from_offset if commit_log.queue.files else 0
        reput_from = max(reput_from, min_phy)
        redispatched = 0
        for msg in commit_log.iter_records(reput_from, valid_end):
            self.dispatch(commit_log.dispatch_request_for(msg, self._delay_levels))
            redispatched += 1
        if redispatched:
            _log.info("re-dispatched %d records from offset %d", redispatched, reput_from)
        # recoverTopicQueueTable
        table: dict[tuple[str, int], int] = {}
        for key, cq in self.consume_queue_table.items():
            table[key] = cq.max_offset_in_queue
            cq.correct_min_offset(min_phy)
        commit_log.topic_queue_table = table
        self._clean_consume_queue.last_physical_min_offset = min_phy
        checkpoint.logics_msg_timestamp = max(checkpoint.logics_msg_timestamp, self._last_dispatch_ts)

    # ================================================================== read path

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
        record_filter: RecordFilter | None = None,
    ) -> GetMessageResult:
        """``DefaultMessageStore.getMessage``: raw records of one queue from ``offset``.

        Statuses and ``next_begin_offset`` follow the 4.9.7 table: NO_MESSAGE_IN_QUEUE
        (empty or unknown queue: next 0), OFFSET_TOO_SMALL (next = min),
        OFFSET_OVERFLOW_ONE (next = offset), OFFSET_OVERFLOW_BADLY (next = max),
        OFFSET_FOUND_NULL (next = start of the next consume-queue file), else FOUND /
        NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING with next = offset + units scanned
        (filtered units count). NO_MATCHED_LOGIC_QUEUE only for a negative queue id: Java
        creates a missing consume queue on lookup and so answers NO_MESSAGE_IN_QUEUE.

        ``message_filter`` sees each unit's tags code (``isMatchedByConsumeQueue``);
        ``record_filter`` each stored record that passed it (``isMatchedByCommitLog``, the
        SQL92 filter). A record either refuses is skipped but counted as scanned, so
        ``next_begin_offset`` moves past it, and NO_MATCHED_MESSAGE is answered when
        nothing matched.
        """
        memory = self._memory_bytes
        max_offset_py = self.commit_log.max_offset()
        cq = self.consume_queue_table.get((topic, queue_id))
        min_offset = max_offset = 0
        result = GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        if cq is None:
            status = (
                GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
                if queue_id < 0
                else GetMessageStatus.NO_MESSAGE_IN_QUEUE
            )
            next_begin = 0
        else:
            min_offset = cq.min_offset_in_queue
            max_offset = cq.max_offset_in_queue
            if max_offset == 0:
                status, next_begin = GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0
            elif offset < min_offset:
                status, next_begin = GetMessageStatus.OFFSET_TOO_SMALL, min_offset
            elif offset == max_offset:
                status, next_begin = GetMessageStatus.OFFSET_OVERFLOW_ONE, offset
            elif offset > max_offset:
                status, next_begin = GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset
            else:
                buf = cq.get_index_buffer(offset)
                if buf is None:
                    status, next_begin = GetMessageStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset)
                else:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                    units = min(len(buf), max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE)) // CQ_STORE_UNIT_SIZE
                    next_phy_file_start = -1
                    max_phy_pulling = 0
                    scanned = 0
                    count = 0
                    total = 0
                    buffers = result.buffers
                    queue_offsets = result.message_queue_offsets
                    commit_log = self.commit_log
                    cfg = self.config
                    mem_bytes = cfg.max_transfer_bytes_on_message_in_memory
                    mem_count = cfg.max_transfer_count_on_message_in_memory
                    disk_bytes = cfg.max_transfer_bytes_on_message_in_disk
                    disk_count = cfg.max_transfer_count_on_message_in_disk
                    fast = None
                    if message_filter is None and record_filter is None:
                        fast = contiguous_run(
                            self.commit_log, self.config, buf, units, max_msg_nums, max_offset_py, memory
                        )
                    if fast is not None:
                        view, count, total, last_phy = fast
                        buffers.append(view)
                        queue_offsets.extend(range(offset, offset + count))
                        result.message_count = count
                        result.buffer_total_size = total
                        result.suggest_pulling_from_slave = max_offset_py - last_phy > memory
                        units = 0
                        scanned = count
                        status = GetMessageStatus.FOUND
                    # Hot path: the mapped file is resolved once per file, and records that lie
                    # back to back in the commit log leave as one slice (a run), not one each.
                    mf: MappedFile | None = None
                    file_lo = file_hi = -1
                    run_lo = run_hi = -1
                    for offset_py, size_py, tags_code in _UNIT.iter_unpack(buf[: units * CQ_STORE_UNIT_SIZE]):
                        max_phy_pulling = offset_py
                        if next_phy_file_start >= 0 and offset_py < next_phy_file_start:
                            scanned += 1
                            continue
                        if count:  # DefaultMessageStore.isTheBatchFull; the first message always goes
                            if count >= max_msg_nums:
                                break
                            if max_offset_py - offset_py > memory:
                                if total + size_py > disk_bytes or count > disk_count - 1:
                                    break
                            elif total + size_py > mem_bytes or count > mem_count - 1:
                                break
                        scanned += 1
                        if message_filter is not None and not message_filter(tags_code):
                            continue
                        end_py = offset_py + size_py
                        if not (file_lo <= offset_py and end_py <= file_hi):
                            if run_hi > run_lo and mf is not None:
                                buffers.append(mf.view[run_lo - file_lo : run_hi - file_lo])
                            run_lo = run_hi = -1
                            mf = commit_log.queue.find_by_offset(offset_py)
                            if mf is None or not mf.available:
                                mf = None
                                file_lo = file_hi = -1
                            else:
                                file_lo = mf.file_from_offset
                                file_hi = file_lo + mf.wrote_position
                            if mf is None or end_py > file_hi:
                                if total == 0:
                                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                                next_phy_file_start = commit_log.roll_next_file(offset_py)
                                continue
                        if (
                            record_filter is not None
                            and mf is not None
                            and not record_filter(mf.view[offset_py - file_lo : end_py - file_lo])
                        ):
                            continue
                        if offset_py != run_hi:
                            if run_hi > run_lo and mf is not None:
                                buffers.append(mf.view[run_lo - file_lo : run_hi - file_lo])
                            run_lo = offset_py
                        run_hi = end_py
                        queue_offsets.append(offset + scanned - 1)
                        count += 1
                        total += size_py
                        status = GetMessageStatus.FOUND
                        next_phy_file_start = -1
                    if run_hi > run_lo and mf is not None:
                        buffers.append(mf.view[run_lo - file_lo : run_hi - file_lo])
                    next_begin = offset + scanned
                    if fast is None:
                        result.message_count = count
                        result.buffer_total_size = total
                        result.suggest_pulling_from_slave = max_offset_py - max_phy_pulling > memory
        result.status = status
        result.next_begin_offset = next_begin
        result.min_offset = min_offset
        result.max_offset = max_offset
        with self._stats_lock:
            if status is GetMessageStatus.FOUND:
                self.stats.get_message_times_total_found += 1
                self.stats.get_message_transfered_msg_count += result.message_count
            else:
                self.stats.get_message_times_total_miss += 1
        return result

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """``getMaxOffsetInQueue``: the next offset to be written; 0 for an unknown queue."""
        cq = self.consume_queue_table.get((topic, queue_id))
        return cq.max_offset_in_queue if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """``getMinOffsetInQueue``: 0 for an unknown queue (Java creates it empty)."""
        cq = self.consume_queue_table.get((topic, queue_id))
        return cq.min_offset_in_queue if cq is not None else 0

    def _store_time_of_unit(self, cq: ConsumeQueue, index: int) -> int:
        unit = cq.get_unit(index)
        if unit is None:
            return -1
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1])

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        """``getMessageStoreTimeStamp``: store time of that queue entry, -1 if unreadable."""
        cq = self.consume_queue_table.get((topic, queue_id))
        return -1 if cq is None else self._store_time_of_unit(cq, consume_queue_offset)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """``getEarliestMessageTime(topic, queueId)``: store time of the first entry, -1 if none."""
        cq = self.consume_queue_table.get((topic, queue_id))
        return -1 if cq is None else self._store_time_of_unit(cq, cq.min_offset_in_queue)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """``getOffsetInQueueByTime`` (4.9): the entry stored at ``timestamp_ms``, else the
        nearer neighbour, else the only side; 0 for an unknown or unreadable queue."""
        cq = self.consume_queue_table.get((topic, queue_id))
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(
            timestamp_ms, max(self.commit_log.min_offset(), 0), self.commit_log.pickup_store_timestamp
        )

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        """``lookMessageByOffset``: the decoded record (body kept compressed), or None."""
        record = self.commit_log.get_record(commit_log_offset)
        if record is None:
            return None
        try:
            return decode_record(record, decompress=False)
        except MalformedFrameError:  # a torn or foreign record: treat as absent, like Java
            _log.warning("cannot decode the record at %d", commit_log_offset, exc_info=True)
            return None

    def select_one_message_by_offset(self, commit_log_offset: int) -> bytes | None:
        """``selectOneMessageByOffset``: the raw record (VIEW_MESSAGE_BY_ID body), or None."""
        record = self.commit_log.get_record(commit_log_offset)
        return bytes(record) if record is not None else None

    def query_message(
        self, topic: str, key: str, max_num: int, begin_timestamp: int, end_timestamp: int
    ) -> QueryMessageResult:
        """``DefaultMessageStore.queryMessage``: records indexed under ``topic#key`` (a KEYS
        entry or the UNIQ_KEY) stored within [begin, end]. Like Java, the newest ``max_num``
        (capped by ``max_msgs_num_batch``) are selected and returned in commit-log order."""
        result = QueryMessageResult()
        offsets, last_ts, last_phy = self.index_service.query_offsets(
            topic, key, max_num, begin_timestamp, end_timestamp
        )
        if not offsets:
            return result
        result.index_last_update_timestamp = last_ts
        result.index_last_update_phyoffset = last_phy
        for offset in sorted(offsets):
            record = self.commit_log.get_record(offset)
            if record is not None:
                result.buffers.append(record)
        return result

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, offset: int) -> bool:
        """``checkInDiskByConsumeOffset``: is that entry's record beyond the in-memory window?"""
        cq = self.consume_queue_table.get((topic, queue_id))
        unit = cq.get_unit(offset) if cq is not None else None
        if unit is None:
            return False
        return self.commit_log.max_offset() - unit[0] > self._memory_bytes

    def get_max_phy_offset(self) -> int:
        return self.commit_log.max_offset()

    def get_min_phy_offset(self) -> int:
        return self.commit_log.min_offset()

    def runtime_info(self) -> dict[str, str]:
        """A subset of ``DefaultMessageStore.getRuntimeInfo`` (GET_BROKER_RUNTIME_INFO)."""
        s = self.stats
        ratio = self._disk_usage(self.config.commit_log_dir)
        return {
            "commitLogMinOffset": str(self.get_min_phy_offset()),
            "commitLogMaxOffset": str(self.get_max_phy_offset()),
            "commitLogDiskRatio": str(ratio),
            f"commitLogDiskRatio_{self.config.commit_log_dir}": str(ratio),
            "consumeQueueDiskRatio": str(self._disk_usage(self.config.consume_queue_dir)),
            "putMessageTimesTotal": str(s.put_message_times_total),
            "putMessageSizeTotal": str(s.put_message_size_total),
            "getMessageTimesTotalFound": str(s.get_message_times_total_found),
            "getMessageTimesTotalMiss": str(s.get_message_times_total_miss),
            "getMessageTransferedMsgCount": str(s.get_message_transfered_msg_count),
        }

    # ================================================================== flush / retention

    def _periodic_flush_logics(self) -> None:
        # FlushConsumeQueueService: least pages, everything every thorough interval
        least = self.config.flush_consume_queue_least_pages
        now = time.monotonic()
        if (
            now - self._last_thorough_logics_flush
            >= self.config.flush_consume_queue_thorough_interval_ms / 1000
        ):
            self._last_thorough_logics_flush = now
            least = 0
        self._flush_logics(least, whole_index=False)

    def flush_logics(self) -> None:
        """Everything logical made durable (shutdown): consume queues, every index file, checkpoint."""
        self._flush_logics(0, whole_index=True)

    def _flush_logics(self, least_pages: int, *, whole_index: bool) -> None:
        """``FlushConsumeQueueService.doFlush``: the consume queues and the checkpoint. The index
        file being written is synced only with ``whole_index`` (shutdown): Java syncs an index
        file once, when it is full (``IndexService``'s FlushIndexFileThread); the periodic pass
        syncs the full files not synced yet (the same, within a flush interval). Syncing the
        file being written every second costs the loop millisecond stalls on ext4: its scattered
        hash-slot pages are allocated at writeback, so each sync commits the journal while the
        loop writes into the same file."""
        dispatched_ts = self._last_dispatch_ts
        for cq in list(self.consume_queue_table.values()):
            cq.flush(least_pages)
        index_ts = 0
        if self._index_enabled:
            index_ts = self.index_service.flush() if whole_index else self.index_service.flush_full()
        checkpoint = self.checkpoint
        if checkpoint is not None:
            checkpoint.physic_msg_timestamp = max(
                checkpoint.physic_msg_timestamp, self.commit_log.flushed_store_timestamp
            )
            if dispatched_ts:
                checkpoint.logics_msg_timestamp = max(checkpoint.logics_msg_timestamp, dispatched_ts)
                if whole_index or not self._index_enabled:
                    # the index received (and now holds durably) every record dispatched so far
                    index_ts = max(index_ts, dispatched_ts)
            checkpoint.index_msg_timestamp = max(checkpoint.index_msg_timestamp, index_ts)
            checkpoint.flush()

    def clean_expired(self, now_ms: int | None = None) -> int:
        """Retention, callable directly (the clean thread runs it every
        ``clean_resource_interval_ms``): delete expired commit-log segments (see
        ``clean_service``), then the consume-queue and index files that only point before
        the new minimum; updates ``is_disk_full``. Returns the number of segments deleted."""
        now = self._clock_ms() if now_ms is None else now_ms
        deleted = self._clean_commit_log.run(now)
        self._clean_consume_queue.run()
        return deleted
