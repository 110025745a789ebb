"""Results of the store's put and get paths: statuses and result objects.

Mirrors ``org.apache.rocketmq.store``'s ``PutMessageStatus``, ``GetMessageStatus``,
``AppendMessageResult``, ``PutMessageResult``, ``GetMessageResult`` and
``QueryMessageResult`` (4.9.7). Enum member names are the Java names (they travel as pull
response remarks). Non-error outcomes are statuses, never exceptions.

Invariants: ``GetMessageResult.buffers`` hold raw stored records (the wire format of a pull
body), ``message_count == len(buffers)`` and ``buffer_total_size == sum(len(b))``;
``message_queue_offsets[i]`` is the consume-queue offset of ``buffers[i]``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

__all__ = [
    "AppendResult",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageFilter",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "RecordFilter",
    "StoreStats",
]

#: Consume-queue level filter: ``tagsCode -> matched`` (``MessageFilter.isMatchedByConsumeQueue``).
MessageFilter = Callable[[int], bool]
#: Commit-log level filter: ``stored record -> matched`` (``MessageFilter.isMatchedByCommitLog``).
RecordFilter = Callable[[memoryview], bool]


class PutMessageStatus(enum.Enum):
    """``org.apache.rocketmq.store.PutMessageStatus``."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetMessageStatus(enum.Enum):
    """``org.apache.rocketmq.store.GetMessageStatus``; the name is the pull response remark."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class AppendResult:
    """``AppendMessageResult`` of a successful append (single message or batch).

    A plain slotted class, not a dataclass: it is made on every put, natively when compiled."""

    __slots__ = ("logics_offset", "msg_id", "msg_num", "store_timestamp", "wrote_bytes", "wrote_offset")

    def __init__(
        self,
        wrote_offset: int,
        wrote_bytes: int,
        msg_id: str,
        store_timestamp: int,
        logics_offset: int,
        msg_num: int = 1,
    ) -> None:
        #: Physical (commit-log) offset of the first record written.
        self.wrote_offset = wrote_offset
        #: Bytes written for the message(s), fillers excluded.
        self.wrote_bytes = wrote_bytes
        #: offsetMsgId of the record; comma-joined for a batch (the SEND_BATCH response ``msgId``).
        self.msg_id = msg_id
        #: Store timestamp (ms) stamped on the record(s).
        self.store_timestamp = store_timestamp
        #: Consume-queue offset of the (first) message; 0 for prepared/rollback transactional ones.
        self.logics_offset = logics_offset
        #: Number of messages appended.
        self.msg_num = msg_num

    def __repr__(self) -> str:
        return (
            f"AppendResult(wrote_offset={self.wrote_offset}, wrote_bytes={self.wrote_bytes}, "
            f"msg_id={self.msg_id!r}, store_timestamp={self.store_timestamp}, "
            f"logics_offset={self.logics_offset}, msg_num={self.msg_num})"
        )


class PutMessageResult:
    """``PutMessageResult``: status, the append result when written, and the flush future.

    ``flush_future`` is only set for ``SYNC_FLUSH`` puts that wait for the disk (the
    ``WAIT`` property is not ``false``): it resolves ``True`` once the bytes are durable
    and ``False`` after ``sync_flush_timeout_ms`` (then the broker answers
    FLUSH_DISK_TIMEOUT; the message *is* stored). None otherwise.

    ``flush_offset`` is set instead of the future for such a put made with
    ``defer_flush=True``: the commit-log offset that must be durable before the ack, which
    the caller waits for itself (``MessageStore.loop_group_commit``); -1 otherwise.

    A plain slotted class, not a dataclass: it is made on every put, natively when compiled.
    """

    __slots__ = ("append", "flush_future", "flush_offset", "status")

    def __init__(
        self,
        status: PutMessageStatus,
        append: AppendResult | None = None,
        flush_future: Future[bool] | None = None,
        flush_offset: int = -1,
    ) -> None:
        self.status = status
        self.append = append
        self.flush_future = flush_future
        self.flush_offset = flush_offset

    @property
    def ok(self) -> bool:
        """``PutMessageResult.isOk``: appended (the flush outcome is in ``flush_future``)."""
        return self.append is not None and self.status is PutMessageStatus.PUT_OK

    def __repr__(self) -> str:
        return (
            f"PutMessageResult(status={self.status}, append={self.append!r}, "
            f"flush_future={self.flush_future!r}, flush_offset={self.flush_offset})"
        )


@dataclass(slots=True)
class GetMessageResult:
    """``GetMessageResult``: raw records for one pull plus the offsets to report."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list[bytes | memoryview] = field(default_factory=list)
    message_count: int = 0
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False
    message_queue_offsets: list[int] = field(default_factory=list)

    def body(self) -> bytes:
        """The concatenated records: the PULL_MESSAGE response body."""
        return b"".join(self.buffers)


@dataclass(slots=True)
class QueryMessageResult:
    """``QueryMessageResult``: raw records matching an index query, oldest first."""

    buffers: list[bytes | memoryview] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0

    @property
    def buffer_total_size(self) -> int:
        return sum(len(b) for b in self.buffers)

    def body(self) -> bytes:
        """The concatenated records: the QUERY_MESSAGE response body."""
        return b"".join(self.buffers)


@dataclass
class StoreStats:
    """Counters for GET_BROKER_RUNTIME_INFO (``StoreStatsService``, the totals only).
    Put counters are exact (updated under the append lock); get counters are best effort."""

    put_message_times_total: int = 0
    put_message_size_total: int = 0
    put_message_failed_times: int = 0
    get_message_times_total_found: int = 0
    get_message_times_total_miss: int = 0
    get_message_transfered_msg_count: int = 0
