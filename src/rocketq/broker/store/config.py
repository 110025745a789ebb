"""``MessageStoreConfig``: the typed, frozen settings of the broker's message store.

Mirrors ``org.apache.rocketmq.store.config.MessageStoreConfig`` (4.9.7): every field is the
Java field name in snake_case with the Java default, units in the name (``_ms``, ``_hours``,
``_bytes``). Two Java *system properties* of ``DefaultMessageStore.CleanCommitLogService``
(``rocketmq.broker.diskSpaceWarningLevelRatio`` = 0.90 and
``rocketmq.broker.diskSpaceCleanForciblyRatio`` = 0.85) are fields here, in percent like
``disk_max_used_space_ratio``.

Invariants (checked in ``__post_init__``, violations raise ``IllegalArgumentError``):
sizes are positive, the consume-queue file size is a multiple of the 20-byte unit, the index
sizes are positive, ratios are percentages, ``delete_when`` is ``HH`` or ``HH;HH;...``,
``flush_disk_type`` is ``ASYNC_FLUSH`` or ``SYNC_FLUSH`` and ``message_delay_level`` parses
(``parse_delay_levels``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rocketq.errors import IllegalArgumentError

__all__ = [
    "ASYNC_FLUSH",
    "CQ_STORE_UNIT_SIZE",
    "SYNC_FLUSH",
    "MessageStoreConfig",
    "parse_delay_levels",
]

#: ``FlushDiskType.ASYNC_FLUSH``: a flush thread msyncs every ``flush_interval_commit_log_ms``.
ASYNC_FLUSH = "ASYNC_FLUSH"
#: ``FlushDiskType.SYNC_FLUSH``: group commit; a put is acknowledged once durable.
SYNC_FLUSH = "SYNC_FLUSH"

#: ``ConsumeQueue.CQ_STORE_UNIT_SIZE``: commit-log offset (long), size (int), tagsCode (long).
CQ_STORE_UNIT_SIZE = 20

# ScheduleMessageService.parseDelayLevel: the unit suffixes and their length in ms.
_DELAY_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str) -> tuple[int, ...]:
    """Delay of each level in ms, index 0 = level 1 (``ScheduleMessageService.parseDelayLevel``).

    ``"1s 5s 1m"`` -> ``(1000, 5000, 60000)``. Raises ``IllegalArgumentError`` on a bad item.
    """
    levels: list[int] = []
    for item in spec.split():
        unit = item[-1:]
        number = item[:-1]
        if unit not in _DELAY_UNITS_MS or not number.isdigit():
            raise IllegalArgumentError(f"bad messageDelayLevel item {item!r} in {spec!r}")
        levels.append(int(number) * _DELAY_UNITS_MS[unit])
    if not levels:
        raise IllegalArgumentError("messageDelayLevel must name at least one level")
    return tuple(levels)


@dataclass(frozen=True, kw_only=True)
class MessageStoreConfig:
    """Store settings; Java ``MessageStoreConfig`` names and defaults (4.9.7)."""

    #: storePathRootDir (Java default ``~/store``; required here).
    store_path_root_dir: str
    #: storePathCommitLog; None -> ``<root>/commitlog``.
    store_path_commit_log: str | None = None
    #: mappedFileSizeCommitLog: 1 GiB per commit-log segment.
    mapped_file_size_commit_log: int = 1 << 30
    #: mappedFileSizeConsumeQueue: 300 000 units of 20 bytes.
    mapped_file_size_consume_queue: int = 300_000 * CQ_STORE_UNIT_SIZE
    #: flushDiskType: ``ASYNC_FLUSH`` or ``SYNC_FLUSH``.
    flush_disk_type: str = ASYNC_FLUSH
    #: flushIntervalCommitLog.
    flush_interval_commit_log_ms: int = 500
    #: flushCommitLogLeastPages (4 KiB pages).
    flush_commit_log_least_pages: int = 4
    #: flushCommitLogThoroughInterval: flush whatever is dirty at least this often.
    flush_commit_log_thorough_interval_ms: int = 10_000
    #: syncFlushTimeout: a SYNC_FLUSH future resolves False after this long.
    sync_flush_timeout_ms: int = 5000
    #: rocketq only (``syncFlushOnLoop``), off by default: under SYNC_FLUSH the sends the broker's
    #: loop receives in one iteration share one ``fdatasync`` made on the loop thread before their
    #: acks (``flush_service.LoopGroupCommit``, as Redis syncs under ``appendfsync always``) instead
    #: of one request per loop iteration to the ``GroupCommitService`` thread: no thread hand-off,
    #: but the loop serves no one while the disk syncs, and a disk that stalls stalls
    #: every connection instead of answering FLUSH_DISK_TIMEOUT after ``sync_flush_timeout_ms``
    #: (Java's behaviour, kept by default).
    sync_flush_on_loop: bool = False
    #: rocketq only (``syncFlushAio``), on by default: under SYNC_FLUSH (and without
    #: ``sync_flush_on_loop``) the loop submits each group commit's ``fdatasync`` itself through
    #: Linux native AIO and is woken by its completion (``aio_sync``), instead of handing it to
    #: the ``GroupCommitService`` thread: no thread wake-up or GIL hand-off per sync, the loop
    #: keeps serving while the disk works, and FLUSH_DISK_TIMEOUT still comes after
    #: ``sync_flush_timeout_ms``. Where native AIO is not available (not Linux, a kernel before
    #: 4.18, a seccomp policy) the thread is used.
    sync_flush_aio: bool = True
    #: rocketq only (``syncFlushAdaptive``), on by default, with ``sync_flush_aio``: while the
    #: durable sends come one per sync (each waits for its ack before the next) and the disk
    #: syncs within 2 ms, the loop makes the sync itself as ``sync_flush_on_loop`` does,
    #: sparing each send a kernel worker's hop and a second wake-up; native AIO takes over
    #: as soon as sends overlap a sync or a sync is slower, and is tried again every 32 inline
    #: syncs (``flush_service.LoopGroupCommit``). A disk that stalls during an inline sync
    #: stalls the loop for that sync; ``false`` keeps every sync on native AIO.
    sync_flush_adaptive: bool = True
    #: warmMapedFileEnable (Java's spelling), off by default as in Java: each new commit-log
    #: segment is prepared ahead of use on a thread (``AllocateMappedFileService``): created,
    #: written with zeros and synced while the one before it fills (the first one from the
    #: store's start), so that a SYNC_FLUSH sync only writes the data back (a block that was
    #: only reserved is converted to written by a journal commit in the first sync after a
    #: write into it: 85 against 117 µs per sync of 8 KiB on this project's machine). Costs a
    #: second write of every segment (its zeros) and one segment of disk space ahead. Java also
    #: ``mlock``s the file; rocketq does not. A roll that needs the segment still being warmed
    #: waits for it up to 5 s, as Java's does.
    warm_maped_file_enable: bool = False
    #: flushIntervalConsumeQueue (consume queues, index, checkpoint).
    flush_interval_consume_queue_ms: int = 1000
    #: flushConsumeQueueLeastPages.
    flush_consume_queue_least_pages: int = 2
    #: flushConsumeQueueThoroughInterval.
    flush_consume_queue_thorough_interval_ms: int = 60_000
    #: cleanResourceInterval: how often retention runs.
    clean_resource_interval_ms: int = 10_000
    #: maxMessageSize: largest body accepted (the record may add up to 64 KiB of headers).
    max_message_size: int = 4 * 1024 * 1024
    #: checkCRCOnRecover: verify BODYCRC of every record scanned by recovery.
    check_crc_on_recover: bool = True
    #: fileReservedTime: commit-log files older than this are deleted.
    file_reserved_time_hours: int = 72
    #: deleteWhen: hours of the day (local time) when expired files are deleted, ``;``-separated.
    delete_when: str = "04"
    #: diskMaxUsedSpaceRatio: above this usage expired files are deleted at any hour.
    disk_max_used_space_ratio: int = 75
    #: system property rocketmq.broker.diskSpaceWarningLevelRatio (0.90): above it the disk is
    #: marked full and puts are refused.
    disk_space_warning_level_ratio: int = 90
    #: system property rocketmq.broker.diskSpaceCleanForciblyRatio (0.85): above it files are
    #: deleted even if not expired ("clean immediately").
    disk_space_clean_forcibly_ratio: int = 85
    #: rocketq only: how often free space is measured (Java: with retention, every 10 s,
    #: too slow for a fast writer) and files a full disk left unallocated are retried.
    disk_check_interval_ms: int = 1000
    #: cleanFileForciblyEnable.
    clean_file_forcibly_enable: bool = True
    #: maxTransferBytesOnMessageInMemory.
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    #: maxTransferCountOnMessageInMemory.
    max_transfer_count_on_message_in_memory: int = 32
    #: maxTransferBytesOnMessageInDisk.
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    #: maxTransferCountOnMessageInDisk.
    max_transfer_count_on_message_in_disk: int = 8
    #: accessMessageInMemoryMaxRatio: % of physical RAM behind the head still "in memory".
    access_message_in_memory_max_ratio: int = 40
    #: messageIndexEnable.
    message_index_enable: bool = True
    #: messageIndexSafe: recovery after a crash starts early enough to rebuild the index too
    #: (bounded by the checkpoint's index timestamp, which moves only when an index file is
    #: flushed: when it is full, and at shutdown); off, the index is best-effort, as in Java.
    message_index_safe: bool = False
    #: maxHashSlotNum: hash slots per index file.
    max_hash_slot_num: int = 5_000_000
    #: maxIndexNum: entries per index file.
    max_index_num: int = 5_000_000 * 4
    #: maxMsgsNumBatch: cap on the results of one index query.
    max_msgs_num_batch: int = 64
    #: defaultQueryMaxNum: used by the broker for UNIQ_KEY queries.
    default_query_max_num: int = 32
    #: messageDelayLevel.
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    #: rocketq only: physical RAM used by the in-memory/on-disk split (Java
    #: ``StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE``); None = ask the OS.
    total_physical_memory_bytes: int | None = None

    _delay_levels_ms: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.store_path_root_dir:
            raise IllegalArgumentError("store_path_root_dir is required")
        positive = {
            "mapped_file_size_commit_log": self.mapped_file_size_commit_log,
            "mapped_file_size_consume_queue": self.mapped_file_size_consume_queue,
            "flush_interval_commit_log_ms": self.flush_interval_commit_log_ms,
            "sync_flush_timeout_ms": self.sync_flush_timeout_ms,
            "flush_interval_consume_queue_ms": self.flush_interval_consume_queue_ms,
            "clean_resource_interval_ms": self.clean_resource_interval_ms,
            "disk_check_interval_ms": self.disk_check_interval_ms,
            "max_message_size": self.max_message_size,
            "max_transfer_bytes_on_message_in_memory": self.max_transfer_bytes_on_message_in_memory,
            "max_transfer_count_on_message_in_memory": self.max_transfer_count_on_message_in_memory,
            "max_transfer_bytes_on_message_in_disk": self.max_transfer_bytes_on_message_in_disk,
            "max_transfer_count_on_message_in_disk": self.max_transfer_count_on_message_in_disk,
            "max_hash_slot_num": self.max_hash_slot_num,
            "max_index_num": self.max_index_num,
            "max_msgs_num_batch": self.max_msgs_num_batch,
            "default_query_max_num": self.default_query_max_num,
        }
        for name, value in positive.items():
            if value <= 0:
                raise IllegalArgumentError(f"{name} must be > 0, got {value}")
        if self.mapped_file_size_consume_queue % CQ_STORE_UNIT_SIZE:
            raise IllegalArgumentError("mapped_file_size_consume_queue must be a multiple of 20")
        if self.mapped_file_size_commit_log < 64:
            raise IllegalArgumentError("mapped_file_size_commit_log must be at least 64 bytes")
        if self.flush_disk_type not in (ASYNC_FLUSH, SYNC_FLUSH):
            raise IllegalArgumentError(
                f"flush_disk_type must be ASYNC_FLUSH or SYNC_FLUSH: {self.flush_disk_type!r}"
            )
        if self.file_reserved_time_hours < 0:
            raise IllegalArgumentError("file_reserved_time_hours must be >= 0")
        for name in (
            "disk_max_used_space_ratio",
            "disk_space_warning_level_ratio",
            "disk_space_clean_forcibly_ratio",
            "access_message_in_memory_max_ratio",
        ):
            ratio = getattr(self, name)
            if not 0 <= ratio <= 100:
                raise IllegalArgumentError(f"{name} must be a percentage, got {ratio}")
        for hour in self.delete_when.split(";"):
            if not (hour.strip().isdigit() and 0 <= int(hour) <= 23):
                raise IllegalArgumentError(f"delete_when must be HH[;HH...]: {self.delete_when!r}")
        if self.total_physical_memory_bytes is not None and self.total_physical_memory_bytes <= 0:
            raise IllegalArgumentError("total_physical_memory_bytes must be > 0")
        object.__setattr__(self, "_delay_levels_ms", parse_delay_levels(self.message_delay_level))

    # -- derived values -------------------------------------------------------------------

    @property
    def commit_log_dir(self) -> str:
        """``storePathCommitLog`` or ``<root>/commitlog``."""
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        """``StorePathConfigHelper.getStorePathConsumeQueue``: ``<root>/consumequeue``."""
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        """``StorePathConfigHelper.getStorePathIndex``: ``<root>/index``."""
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def checkpoint_path(self) -> str:
        """``StorePathConfigHelper.getStoreCheckpoint``: ``<root>/checkpoint``."""
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        """``StorePathConfigHelper.getAbortFile``: ``<root>/abort`` (present = unclean exit)."""
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def delay_levels_ms(self) -> tuple[int, ...]:
        """Delay per level in ms; index 0 is level 1."""
        return self._delay_levels_ms

    @property
    def max_delay_level(self) -> int:
        """``ScheduleMessageService.getMaxDelayLevel``."""
        return len(self._delay_levels_ms)

    def delete_hours(self) -> frozenset[int]:
        """The hours of ``delete_when`` (``UtilAll.isItTimeToDo``)."""
        return frozenset(int(h) for h in self.delete_when.split(";"))

    def total_physical_memory(self) -> int:
        """RAM used for the in-memory test (``StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE``)."""
        if self.total_physical_memory_bytes is not None:
            return self.total_physical_memory_bytes
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
            return 24 * 1024 * 1024 * 1024
