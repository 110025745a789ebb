"""Result types of the client API: send results, pull results, broker lookups.

Mirrors ``org.apache.rocketmq.client.producer.SendResult``/``SendStatus``,
``org.apache.rocketmq.client.consumer.PullResult``/``PullStatus``,
``org.apache.rocketmq.client.impl.consumer.PullResultExt`` and
``org.apache.rocketmq.client.impl.FindBrokerResult``.

Non-error outcomes are statuses here, never exceptions (STYLE habit 5): a send that was
stored but not flushed in time is ``SendStatus.FLUSH_DISK_TIMEOUT``; a pull that found
nothing is ``PullStatus.NO_NEW_MSG``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue

__all__ = [
    "SEND_STATUS_BY_CODE",
    "FindBrokerResult",
    "PullResult",
    "PullStatus",
    "SendResult",
    "SendStatus",
    "pull_status_of",
    "send_status_of",
]


class SendStatus(enum.Enum):
    """``SendStatus``: the broker stored the message; anything but SEND_OK is a warning."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


#: response code -> send status (``processSendResponse``); other codes are errors
SEND_STATUS_BY_CODE: Mapping[int, SendStatus] = {
    int(ResponseCode.SUCCESS): SendStatus.SEND_OK,
    int(ResponseCode.FLUSH_DISK_TIMEOUT): SendStatus.FLUSH_DISK_TIMEOUT,
    int(ResponseCode.FLUSH_SLAVE_TIMEOUT): SendStatus.FLUSH_SLAVE_TIMEOUT,
    int(ResponseCode.SLAVE_NOT_AVAILABLE): SendStatus.SLAVE_NOT_AVAILABLE,
}


def send_status_of(code: int) -> SendStatus | None:
    """``MQClientAPIImpl.processSendResponse``: 0/10/12/11 map to a status, others are errors."""
    return SEND_STATUS_BY_CODE.get(code)


class SendResult:
    """``SendResult``.

    ``msg_id`` is the client id (UNIQ_KEY; comma-joined for a batch), ``offset_msg_id`` the
    broker's id (store host + commit-log offset; comma-joined for a batch), ``queue_offset``
    the consume-queue offset of the (first) message.

    A plain slotted class with read-only properties and the constructor, equality, hash,
    repr and pickling the frozen dataclass it replaces had: that one's generated
    ``__init__`` set each field through ``object.__setattr__`` (~2.5 µs per blocking send,
    cold); this one stores eight slots.
    """

    __slots__ = (
        "_message_queue",
        "_msg_id",
        "_offset_msg_id",
        "_queue_offset",
        "_region_id",
        "_status",
        "_trace_on",
        "_transaction_id",
    )
    __match_args__ = (
        "status",
        "msg_id",
        "offset_msg_id",
        "message_queue",
        "queue_offset",
        "transaction_id",
        "region_id",
        "trace_on",
    )

    def __init__(
        self,
        status: SendStatus,
        msg_id: str,
        offset_msg_id: str,
        message_queue: MessageQueue,
        queue_offset: int,
        transaction_id: str | None = None,
        region_id: str | None = None,
        trace_on: bool = True,
    ) -> None:
        self._status = status
        self._msg_id = msg_id
        self._offset_msg_id = offset_msg_id
        self._message_queue = message_queue
        self._queue_offset = queue_offset
        self._transaction_id = transaction_id
        self._region_id = region_id
        self._trace_on = trace_on

    @property
    def status(self) -> SendStatus:
        return self._status

    @property
    def msg_id(self) -> str:
        return self._msg_id

    @property
    def offset_msg_id(self) -> str:
        return self._offset_msg_id

    @property
    def message_queue(self) -> MessageQueue:
        return self._message_queue

    @property
    def queue_offset(self) -> int:
        return self._queue_offset

    @property
    def transaction_id(self) -> str | None:
        return self._transaction_id

    @property
    def region_id(self) -> str | None:
        return self._region_id

    @property
    def trace_on(self) -> bool:
        return self._trace_on

    def _astuple(self) -> tuple[object, ...]:
        """The fields in constructor order (a subclass appends its own)."""
        return (
            self._status,
            self._msg_id,
            self._offset_msg_id,
            self._message_queue,
            self._queue_offset,
            self._transaction_id,
            self._region_id,
            self._trace_on,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, SendResult)
        return self._astuple() == other._astuple()

    def __hash__(self) -> int:
        return hash(self._astuple())

    def __repr__(self) -> str:
        values = ", ".join(
            f"{name}={value!r}" for name, value in zip(self.__match_args__, self._astuple(), strict=True)
        )
        return f"{type(self).__qualname__}({values})"

    def __reduce__(self) -> tuple[type[SendResult], tuple[object, ...]]:
        return (type(self), self._astuple())


class PullStatus(enum.Enum):
    """``PullStatus``."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS = {
    int(ResponseCode.SUCCESS): PullStatus.FOUND,
    int(ResponseCode.PULL_NOT_FOUND): PullStatus.NO_NEW_MSG,
    int(ResponseCode.PULL_RETRY_IMMEDIATELY): PullStatus.NO_MATCHED_MSG,
    int(ResponseCode.PULL_OFFSET_MOVED): PullStatus.OFFSET_ILLEGAL,
}


def pull_status_of(code: int) -> PullStatus | None:
    """``MQClientAPIImpl.processPullResponse``: 0/19/20/21 map to a status, others are errors."""
    return _PULL_STATUS.get(code)


@dataclass(slots=True)
class PullResult:
    """``PullResult`` (+ ``PullResultExt``'s raw body and broker suggestion).

    ``msg_found_list`` is filled by the consumer after decoding ``message_binary`` and the
    client-side tag re-filter; ``message_binary`` is then released (``b""``).
    """

    pull_status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0
    message_binary: bytes = b""
    #: the store's GetMessageStatus name the broker put in the remark (FOUND, OFFSET_OVERFLOW_ONE, ...)
    remark: str | None = None


@dataclass(frozen=True, slots=True)
class FindBrokerResult:
    """``FindBrokerResult``: a broker address, whether it is a slave, and its heartbeat version."""

    broker_addr: str
    slave: bool
    broker_version: int = 0
