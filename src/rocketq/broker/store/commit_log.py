"""``CommitLog``: the append-only log of every stored record, in fixed-size mapped segments.

Mirrors ``org.apache.rocketmq.store.CommitLog`` (4.9.7): segments of
``mapped_file_size_commit_log`` bytes named by their 20-digit start offset under
``<root>/commitlog``; records in the wire format of ``rocketq.protocol.message``.

Invariants:

* A record never spans segments. When the next record (or a whole batch) plus 8 bytes
  does not fit, an 8-byte BLANK filler ``{TOTALSIZE = bytes left, MAGIC = BLANK}`` closes
  the segment (``DefaultAppendMessageCallback.doAppend``, END_FILE_MIN_BLANK_LENGTH) and
  the record goes to the next one.
* Records are encoded outside the lock with placeholder QUEUEOFFSET, PHYSICALOFFSET and
  STORETIMESTAMP; under ``put_lock`` they are copied into the mapping and those three
  fields are patched in place (Java pre-encodes the same way). The store timestamp is
  taken under the lock, so store times never go backwards along the log.
* Consume-queue offsets come from ``topic_queue_table`` under ``put_lock``; prepared and
  rolled-back transactional records get queue offset 0 and do not advance it.
* Nothing is written before everything the append needs exists: ``reserve_dispatch``
  (the consume-queue files the units go to) and a new segment (allocated when created,
  after ``may_create_segment`` agreed) are obtained first, so a full disk refuses the
  put (CREATE_MAPEDFILE_FAILED / SERVICE_NOT_AVAILABLE) and never leaves a record
  half-dispatched or a store into an unbacked page (SIGBUS).
* ``wrote_position`` of the segment is published after the bytes, and the dispatcher runs
  for each record after its publication (for a batch: once, after the whole batch is
  published), still under the lock: consume-queue units are therefore appended in
  commit-log order and always point at readable bytes.
"""

from __future__ import annotations

import errno
import logging
import mmap
import struct
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence

from rocketq.broker.store.config import SYNC_FLUSH, MessageStoreConfig
from rocketq.broker.store.index import index_key_hashes
from rocketq.broker.store.mapped_file import MappedFile, MappedFileQueue, now_ms
from rocketq.broker.store.status import AppendResult, PutMessageStatus
from rocketq.common.log_limiter import LogLimiter
from rocketq.errors import MalformedFrameError
from rocketq.protocol.codes import TRANSACTION_TYPE_MASK, MessageSysFlag
from rocketq.protocol.message import (
    BLANK_MAGIC_CODE,
    MAGIC_CODE_V1,
    POS_QUEUE_OFFSET,
    POS_SYS_FLAG,
    MessageConst,
    MessageExt,
    decode_record,
    store_timestamp_pos,
    tags_code,
)
from rocketq.protocol.message_id import HostAddr, host_to_bytes
from rocketq.protocol.mixall import RMQ_SYS_SCHEDULE_TOPIC

__all__ = [
    "END_FILE_MIN_BLANK_LENGTH",
    "CommitLog",
    "CommitLogDispatcher",
    "DispatchRequest",
]

_log = logging.getLogger("rocketq.broker.store")
#: A full disk fails every put in a row: one line per 10 s, with the count.
_SEGMENT_LOG = LogLimiter(_log)

#: ``CommitLog.DefaultAppendMessageCallback.END_FILE_MIN_BLANK_LENGTH``.
END_FILE_MIN_BLANK_LENGTH = 8
_TRANSACTION_MASK = TRANSACTION_TYPE_MASK
_PREPARED = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
_ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)

_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)  # STORETIMESTAMP moves 12 bytes on
_STORE_TS_POS = store_timestamp_pos(0)
_STORE_TS_POS_V6 = store_timestamp_pos(_BORN_V6)
_QOFF_PHYS = struct.Struct(">qq")
_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_SIZE_MAGIC = struct.Struct(">ii")


class DispatchRequest:
    """``DispatchRequest``: what the consume queue, the index and the listeners need to
    know about one appended record. Filled partly before the append (topic, tags, index key
    hashes) and partly under the lock (offsets, store time)."""

    __slots__ = (
        "commit_log_offset",
        "consume_queue_offset",
        "delay_ms",
        "key_hashes",
        "msg_size",
        "properties",
        "queue_id",
        "store_timestamp",
        "sys_flag",
        "tags_code",
        "topic",
    )

    def __init__(
        self,
        *,
        topic: str,
        queue_id: int,
        msg_size: int,
        tags_code: int,
        sys_flag: int,
        properties: dict[str, str],
        key_hashes: list[int],
        delay_ms: int = -1,
        commit_log_offset: int = 0,
        consume_queue_offset: int = 0,
        store_timestamp: int = 0,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.msg_size = msg_size
        self.tags_code = tags_code
        self.sys_flag = sys_flag
        self.properties = properties
        self.key_hashes = key_hashes
        #: >= 0 for a record parked in SCHEDULE_TOPIC_XXXX: tagsCode = store time + delay.
        self.delay_ms = delay_ms
        self.commit_log_offset = commit_log_offset
        self.consume_queue_offset = consume_queue_offset
        self.store_timestamp = store_timestamp

    @property
    def in_consume_queue(self) -> bool:
        """Prepared and rolled-back transactional records are never consumable."""
        tran = self.sys_flag & _TRANSACTION_MASK
        return tran != _PREPARED and tran != _ROLLBACK  # noqa: PLR1714 - ints, hot path


def delay_ms_for(topic: str, properties: Mapping[str, str], delay_levels_ms: Sequence[int]) -> int:
    """The delay of a record parked in SCHEDULE_TOPIC_XXXX, -1 for any other record.

    ``CommitLog.checkMessageAndReturnSize``: the level is clamped to the max level, and
    ``ScheduleMessageService.computeDeliverTimestamp`` adds the level's delay.
    """
    if topic != RMQ_SYS_SCHEDULE_TOPIC:
        return -1
    raw = properties.get(MessageConst.DELAY)
    if not raw:
        return -1
    try:
        level = min(int(raw), len(delay_levels_ms))
    except ValueError:
        return -1
    if level <= 0:
        return -1
    return delay_levels_ms[level - 1]


class CommitLogDispatcher:
    """What an append asks of the store it belongs to, under the append lock: room for the
    dispatch, leave to create a segment, and the dispatch itself
    (``CommitLogDispatcherBuildConsumeQueue`` + ``CommitLogDispatcherBuildIndex``).

    ``MessageStore`` is one: a compiled build calls these methods natively, without a
    callback object or an argument list per put. This base dispatches nothing (a bare log)."""

    def reserve_dispatch(self, requests: Sequence[DispatchRequest]) -> None:
        """Make room for the dispatch of ``requests`` (consume-queue files) before anything
        is written; raises ``OSError`` if it cannot."""

    def may_create_segment(self) -> bool:
        """Asked before a new segment is created (free space); False refuses the put."""
        return True

    def dispatch(self, request: DispatchRequest) -> None:
        """Dispatch one appended record (its offsets and store time are set)."""

    def dispatch_batch(self, requests: Sequence[DispatchRequest]) -> None:
        """Dispatch the records of one batch, in order."""

    def written(self) -> None:
        """The bytes of an append that asked for it (``sync_now``) are written, its dispatch
        not made yet: the moment a sync of them can start. Must not raise."""

    def appended(self, msgs: int, wrote_bytes: int) -> None:
        """Count a successful append of ``msgs`` records, ``wrote_bytes`` bytes (after its
        dispatch, still under the lock: the store's put counters are exact without a lock
        of their own)."""


class CommitLog:
    """The commit log: append, read, recover, retention (``CommitLog``)."""

    def __init__(self, config: MessageStoreConfig, clock_ms: Callable[[], int]) -> None:
        self.config = config
        self.file_size = config.mapped_file_size_commit_log
        self.queue = MappedFileQueue(
            config.commit_log_dir,
            self.file_size,
            keep_fd=True,
            write_through=config.flush_disk_type == SYNC_FLUSH,
            warm=config.warm_maped_file_enable,
        )
        self._clock_ms = clock_ms
        #: The default clock is called natively (a compiled build), an injected one through Python.
        self._default_clock = clock_ms is now_ms
        #: One lock for the whole append path (``putMessageLock``).
        self.put_lock = threading.Lock()
        #: Serialises :meth:`flush` (the flush thread and SYNC_FLUSH acks on the server's loop
        #: both flush): a slower flush must not move the flushed position back.
        self._flush_lock = threading.Lock()
        #: (topic, queueId) -> next consume-queue offset (``topicQueueTable``).
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self._msg_id_prefix: dict[HostAddr, str] = {}
        #: Store time of the last record known durable (checkpoint physicMsgTimestamp).
        self.flushed_store_timestamp = 0
        #: Durable up to here by a sync made outside :meth:`flush` (:meth:`mark_synced`).
        self._synced_where = 0
        #: Being synced up to here outside :meth:`flush` (:meth:`sync_started`).
        self._claimed_where = 0
        #: Cleared (under ``put_lock``) by ``close_for_writing`` at shutdown.
        self.writable = True
        #: Reserves, dispatches and vets new segments under ``put_lock`` (the store).
        self.dispatcher = CommitLogDispatcher()

    # -- append -------------------------------------------------------------------------

    def append(
        self,
        data: bytes | bytearray,
        requests: Sequence[DispatchRequest],
        store_host: HostAddr,
        sync_now: bool = False,
    ) -> AppendResult | PutMessageStatus:
        """Append the records in ``data`` (pre-encoded and back to back, one batch: each
        request's ``msg_size`` bytes in turn) in one segment, under one lock.

        Patches each record's queue offset, physical offset and store timestamp, publishes
        the bytes, calls ``dispatcher.written`` if ``sync_now`` (a sync can start while the
        dispatch runs), then (still under the lock) calls ``dispatcher.dispatch`` for a single
        record or ``dispatcher.dispatch_batch`` once for all the records of a batch, in order.
        A ``bytearray`` is patched in place and written as it is when the segment is written
        through its descriptor (the caller gives it up). Returns CREATE_MAPEDFILE_FAILED if
        no segment could be created, SERVICE_NOT_AVAILABLE once closed for writing. The
        caller checked that the batch fits a segment.
        """
        total = len(data)
        sizes = 0
        for req in requests:
            sizes += req.msg_size
        if sizes != total:
            raise ValueError("the records' sizes do not add up to the data")
        file_size = self.file_size
        dispatcher = self.dispatcher
        with self.put_lock:
            if not self.writable:
                return PutMessageStatus.SERVICE_NOT_AVAILABLE
            ts = now_ms() if self._default_clock else self._clock_ms()
            mf = self.queue.last_file()
            try:
                dispatcher.reserve_dispatch(requests)
                if (
                    mf is None
                    or mf.is_full
                    or mf.wrote_position + total + END_FILE_MIN_BLANK_LENGTH > file_size
                ):
                    if not dispatcher.may_create_segment():
                        return PutMessageStatus.SERVICE_NOT_AVAILABLE
                    if mf is not None and not mf.is_full:
                        # DefaultAppendMessageCallback.doAppend: END_OF_FILE -> BLANK filler,
                        # retry in a new file (only 8 bytes are written; the rest stays zero).
                        pos = mf.wrote_position
                        mf.write_at(pos, _SIZE_MAGIC.pack(file_size - pos, BLANK_MAGIC_CODE))
                        mf.wrote_position = file_size
                    mf = self.queue.create_next_file(0, ts)
            except OSError as exc:
                _SEGMENT_LOG.log(logging.ERROR, "segment", "cannot create a store file: %s", exc)
                return PutMessageStatus.CREATE_MAPEDFILE_FAILED
            base = mf.file_from_offset
            table = self.topic_queue_table
            start = mf.wrote_position
            first_phys = base + start
            first_qoff = -1
            # all bytes in one copy, then each record's offsets and store time patched in: in
            # a buffer written through the descriptor after (write_through: SYNC_FLUSH, see
            # rocketq.broker.store.mapped_file), else in place in the mapping
            through = mf.write_through
            target: bytearray | mmap.mmap
            if through:
                target = data if isinstance(data, bytearray) else bytearray(data)
                shift = start
            else:
                target = mf.mm
                target[start : start + total] = data
                shift = 0
            pos = start
            # bound once: a compiled call on a module-level Struct looks its method up each time
            pack_offsets = _QOFF_PHYS.pack_into
            pack_long = _LONG.pack_into
            for i in range(len(requests)):  # an index loop: native when compiled (zip is not)
                req = requests[i]
                phys = base + pos
                sys_flag = req.sys_flag
                tran = sys_flag & _TRANSACTION_MASK
                consumable = tran != _PREPARED and tran != _ROLLBACK  # noqa: PLR1714 - hot path
                if consumable:
                    key = (req.topic, req.queue_id)
                    qoff = table.get(key, 0)
                    table[key] = qoff + 1
                else:
                    qoff = 0  # prepared/rollback: not consumable, offset not advanced
                at = pos - shift
                pack_offsets(target, at + POS_QUEUE_OFFSET, qoff, phys)
                pack_long(target, at + (_STORE_TS_POS_V6 if sys_flag & _BORN_V6 else _STORE_TS_POS), ts)
                pos += req.msg_size
                if first_qoff < 0:
                    first_qoff = qoff
                req.commit_log_offset = phys
                req.consume_queue_offset = qoff
                req.store_timestamp = ts
                if req.delay_ms >= 0:
                    req.tags_code = ts + req.delay_ms
            if through and isinstance(target, bytearray):
                try:
                    mf.write_at(start, target)
                except OSError as exc:
                    # nothing published: the queue offsets handed out go back (each record
                    # holds the value its key had before it), the bytes past wrote_position
                    # stay unread
                    for i in range(len(requests) - 1, -1, -1):
                        req = requests[i]
                        tran = req.sys_flag & _TRANSACTION_MASK
                        if tran != _PREPARED and tran != _ROLLBACK:  # noqa: PLR1714 - as above
                            table[(req.topic, req.queue_id)] = req.consume_queue_offset
                    _SEGMENT_LOG.log(logging.ERROR, "write", "cannot write the commit log: %s", exc)
                    return PutMessageStatus.UNKNOWN_ERROR
            mf.wrote_position = pos
            if sync_now:
                dispatcher.written()
            if len(requests) == 1:
                dispatcher.dispatch(requests[0])
            else:
                dispatcher.dispatch_batch(requests)
            dispatcher.appended(len(requests), total)
            mf.last_modified_ms = ts
            mf.store_timestamp = ts
        # outside the lock: the offsetMsgIds (CommitLog's msgIdSupplier is lazy for the same reason)
        prefix = self._msg_id_prefix.get(store_host)
        if prefix is None:
            prefix = self._msg_id_prefix[store_host] = host_to_bytes(store_host).hex().upper()
        # the offset as 16 upper-case hex digits: to_bytes/hex, not a format spec (which a
        # compiled build runs through str.format)
        if len(requests) == 1:
            msg_id = prefix + first_phys.to_bytes(8, "big").hex().upper()
        else:
            msg_id = ",".join(
                [prefix + req.commit_log_offset.to_bytes(8, "big").hex().upper() for req in requests]
            )
        return AppendResult(
            wrote_offset=first_phys,
            wrote_bytes=total,
            msg_id=msg_id,
            store_timestamp=ts,
            logics_offset=first_qoff,
            msg_num=len(requests),
        )

    # -- read ---------------------------------------------------------------------------

    def get_message(self, offset: int, size: int) -> memoryview | None:
        """``CommitLog.getMessage``: ``size`` bytes at physical ``offset``, if still there."""
        mf = self.queue.find_by_offset(offset)
        if mf is None or not mf.available:
            return None
        return mf.select(offset % self.file_size, size)

    def get_record(self, offset: int) -> memoryview | None:
        """The whole record starting at ``offset`` (size read from its first field)."""
        head = self.get_message(offset, 8)
        if head is None:
            return None
        size, magic = _SIZE_MAGIC.unpack_from(head)
        if magic != MAGIC_CODE_V1 or size <= 0:
            return None
        return self.get_message(offset, size)

    def pickup_store_timestamp(self, offset: int, size: int = 0) -> int:
        """``CommitLog.pickupStoreTimestamp``: the STORETIMESTAMP of the record at ``offset``,
        -1 when it is gone."""
        if offset < self.min_offset():
            return -1
        head = self.get_message(offset, 76)
        if head is None:
            rec = self.get_record(offset)
            if rec is None:
                return -1
            head = rec
        sys_flag = _INT.unpack_from(head, POS_SYS_FLAG)[0]
        value: int = _LONG.unpack_from(head, store_timestamp_pos(sys_flag))[0]
        return value

    def min_offset(self) -> int:
        """``CommitLog.getMinOffset``: start of the first live segment, -1 when empty."""
        mf = self.queue.first_file()
        if mf is None:
            return -1
        if mf.available:
            return mf.file_from_offset
        return self.roll_next_file(mf.file_from_offset)

    def max_offset(self) -> int:
        """``CommitLog.getMaxOffset``: where the next record will be written."""
        return self.queue.max_offset()

    def roll_next_file(self, offset: int) -> int:
        """``CommitLog.rollNextFile``: start of the segment after the one holding ``offset``."""
        return offset + self.file_size - offset % self.file_size

    # -- recovery -----------------------------------------------------------------------

    def check_record(self, mf: MappedFile, pos: int, check_crc: bool) -> tuple[int, MessageExt | None]:
        """``checkMessageAndReturnSize``: (size, message) for a valid record, (0, None) for the
        BLANK filler (end of segment), (-1, None) for anything invalid: bad magic, size or
        lengths, a BODYCRC mismatch, or a PHYSICALOFFSET that is not where the record is."""
        if pos + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return -1, None
        size, magic = _SIZE_MAGIC.unpack_from(mf.view, pos)
        if magic == BLANK_MAGIC_CODE:
            return 0, None
        if magic != MAGIC_CODE_V1 or size <= 0 or pos + size > self.file_size:
            return -1, None
        try:
            msg = decode_record(mf.view[pos : pos + size], 0, decompress=False, verify_crc=check_crc)
        except MalformedFrameError:
            return -1, None
        if msg.store_size != size or msg.commit_log_offset != mf.file_from_offset + pos:
            return -1, None
        return size, msg

    def scan_valid_end(self, start_index: int, check_crc: bool) -> int:
        """``recoverNormally``/``recoverAbnormally`` scan: from segment ``start_index``, walk
        the records until the first invalid one; returns its physical offset (the valid
        end). A BLANK filler moves on to the next segment."""
        files = self.queue.files
        if not files:
            return 0
        index = max(0, min(start_index, len(files) - 1))
        mf = files[index]
        pos = 0
        while True:
            size, _msg = self.check_record(mf, pos, check_crc)
            if size > 0:
                pos += size
                continue
            if size == 0 and index + 1 < len(files):
                index += 1
                mf = files[index]
                pos = 0
                continue
            return mf.file_from_offset + pos

    def recovery_start_index(self, normal: bool, min_timestamp: int) -> int:
        """Where recovery starts: the third segment from the end after a clean shutdown
        (``recoverNormally``); after a crash the last segment whose first record is a
        message stored no later than ``min_timestamp`` (``isMappedFileMatchedRecover``),
        else the first segment."""
        files = self.queue.files
        if normal:
            return max(0, len(files) - 3)
        for index in range(len(files) - 1, -1, -1):
            mf = files[index]
            size, magic = _SIZE_MAGIC.unpack_from(mf.view, 0)
            if magic != MAGIC_CODE_V1 or size <= 0:
                continue
            sys_flag = _INT.unpack_from(mf.view, POS_SYS_FLAG)[0]
            store_ts = _LONG.unpack_from(mf.view, store_timestamp_pos(sys_flag))[0]
            if store_ts != 0 and store_ts <= min_timestamp:
                return index
        return 0

    def truncate(self, valid_end: int) -> None:
        """Cut the log at ``valid_end``: zero the rest of that segment, delete later ones
        (``truncateDirtyFiles``) and rebuild nothing else."""
        self.queue.truncate_dirty_files(valid_end)
        self.queue.flushed_where = valid_end
        self._synced_where = min(self._synced_where, valid_end)
        self._claimed_where = min(self._claimed_where, valid_end)

    def iter_records(self, start: int, end: int) -> Iterator[MessageExt]:
        """Decode the records in [start, end) (re-dispatch after recovery), skipping fillers."""
        offset = start
        while offset < end:
            mf = self.queue.find_by_offset(offset)
            if mf is None:
                offset = self.roll_next_file(offset)
                continue
            size, msg = self.check_record(mf, offset - mf.file_from_offset, False)
            if size > 0 and msg is not None:
                yield msg
                offset += size
            elif size == 0:
                offset = self.roll_next_file(offset)
            else:
                return

    def dispatch_request_for(self, msg: MessageExt, delay_levels_ms: Sequence[int]) -> DispatchRequest:
        """Rebuild the dispatch data of a stored record (re-dispatch after recovery)."""
        props = msg.properties
        delay = delay_ms_for(msg.topic, props, delay_levels_ms)
        return DispatchRequest(
            topic=msg.topic,
            queue_id=msg.queue_id,
            msg_size=msg.store_size,
            tags_code=(msg.store_timestamp + delay)
            if delay >= 0
            else tags_code(props.get(MessageConst.TAGS)),
            sys_flag=msg.sys_flag,
            properties=props,
            key_hashes=index_key_hashes(msg.topic, props),
            delay_ms=delay,
            commit_log_offset=msg.commit_log_offset,
            consume_queue_offset=msg.queue_offset,
            store_timestamp=msg.store_timestamp,
        )

    # -- retention / durability ---------------------------------------------------------

    def delete_expired_files(self, expired_ms: int, now_ms: int, clean_immediately: bool) -> int:
        """``CommitLog.deleteExpiredFile``: segments older than ``expired_ms`` (never the last)."""
        return self.queue.delete_expired_by_time(expired_ms, now_ms, clean_immediately)

    def flush(self, least_pages: int = 0) -> bool:
        """Flush the written bytes (``CommitLog.flush``); updates ``flushed_store_timestamp``
        once everything written before the call is durable. True if something was flushed.
        Thread-safe: concurrent calls are serialised."""
        with self._flush_lock:
            last = self.queue.last_file()
            ts = last.store_timestamp if last is not None else 0
            target = self.queue.max_offset()
            before = self.queue.flushed_where
            self.queue.flush(least_pages)
            if self.queue.flushed_where >= target:
                self.flushed_store_timestamp = max(self.flushed_store_timestamp, ts)
            return self.queue.flushed_where != before

    def close_for_writing(self) -> None:
        """Refuse further appends and wait for the one in progress (shutdown)."""
        with self.put_lock:
            self.writable = False

    def sync_targets(self) -> tuple[list[int], int, int] | None:
        """What a sync started now must cover, for a caller that syncs the files itself
        (:class:`~rocketq.broker.store.aio_sync.AioSync`): the descriptors of the segments
        holding bytes written but not yet durable, the offset below which everything is
        durable once they are synced, and the store time of the last record by then. None
        when everything written is durable already; ``OSError`` once a segment is closed
        (shutdown). Any thread; takes no lock."""
        queue = self.queue
        last = queue.last_file()
        if last is None:
            return None
        # the time first: a record's position is published before its store time, so every
        # record up to this time lies below the offset read after it
        ts = last.store_timestamp
        target = queue.max_offset()
        done = self.flushed_where
        if target <= done:
            return None
        fds: list[int] = []
        for mf in queue.files:
            start = mf.file_from_offset
            if start + mf.file_size <= done:
                continue
            if start >= target:
                break
            fd = mf.fileno()
            if fd is None:
                raise OSError(errno.EBADF, f"commit log segment {mf.path} is closed")
            fds.append(fd)
        return fds, target, ts

    def mark_synced(self, target: int, ts: int) -> None:
        """Record that a sync of :meth:`sync_targets`'s files completed: everything below
        ``target`` is durable, up to store time ``ts``. Called by one thread (the loop that
        owns the syncs). The flushed positions the flush methods keep move only when
        ``flush`` is not running; :attr:`flushed_where` counts ``target`` either way (a
        flushed store time left behind is a conservative checkpoint)."""
        self._synced_where = max(self._synced_where, target)
        if not self._flush_lock.acquire(blocking=False):
            return
        try:
            queue = self.queue
            for mf in queue.files:
                start = mf.file_from_offset
                if start >= target:
                    break
                pos = min(mf.wrote_position, target - start)
                mf.flushed_position = max(mf.flushed_position, pos)
            queue.flushed_where = max(queue.flushed_where, target)
            self.flushed_store_timestamp = max(self.flushed_store_timestamp, ts)
        finally:
            self._flush_lock.release()

    def sync_started(self, target: int) -> None:
        """A sync of :meth:`sync_targets`'s files up to ``target`` is under way elsewhere
        (the loop's native AIO), or queued there behind the one in flight:
        :meth:`flush_unclaimed` leaves those bytes to it."""
        self._claimed_where = max(self._claimed_where, target)

    def flush_unclaimed(self) -> bool:
        """:meth:`flush` unless every byte written is durable or being synced elsewhere
        (:meth:`sync_started`): the GroupCommitService's pass without waiters, which only
        has to cover puts nobody waits for (WAIT=false), must not sync the same bytes as a
        sync in flight, which would only make that one wait for the disk twice."""
        if self.queue.max_offset() <= max(self.flushed_where, self._claimed_where):
            return False
        return self.flush(0)

    @property
    def flushed_where(self) -> int:
        """The offset below which the commit log is durable."""
        synced = self._synced_where
        flushed = self.queue.flushed_where
        return synced if synced > flushed else flushed

    def close(self) -> None:
        self.queue.close()
