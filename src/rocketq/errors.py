"""The one exception tree of rocketq.

Errors carry data (response code, remark, broker address) rather than only text, and
whether an operation may be retried is looked up in a registry by response code, the way
the Java producer's ``retryResponseCodes`` works. Non-error outcomes (no new message,
offset moved, flush timeout) are statuses on result objects, never exceptions.
"""

from __future__ import annotations

__all__ = [
    "BrokerError",
    "ClientError",
    "ConnectError",
    "FrameTooLargeError",
    "IllegalArgumentError",
    "MalformedFrameError",
    "ProtocolError",
    "RemotingError",
    "RequestTimeoutError",
    "RocketqError",
    "SendRequestError",
    "is_retriable_code",
]

#: Response codes after which the Java producer retries a send
#: (``DefaultMQProducer.retryResponseCodes``): TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE,
#: SYSTEM_ERROR, NO_PERMISSION, NO_BUYER_ID, NOT_IN_CURRENT_UNIT, plus SYSTEM_BUSY (5.x).
_RETRIABLE_CODES = frozenset({17, 14, 1, 16, 204, 205, 2})


def is_retriable_code(code: int) -> bool:
    """Whether a broker response code is worth retrying on another broker."""
    return code in _RETRIABLE_CODES


class RocketqError(Exception):
    """Base class of every error rocketq raises."""

    retriable: bool = False


class ProtocolError(RocketqError):
    """Bytes on the wire (or on disk) that do not follow the RocketMQ format."""


class FrameTooLargeError(ProtocolError):
    """A frame's declared length exceeds the 16 MiB limit (``NettyDecoder``)."""


class MalformedFrameError(ProtocolError):
    """A frame whose lengths, header or encoding are inconsistent."""


class IllegalArgumentError(RocketqError, ValueError):
    """An argument the caller can fix: an invalid topic, group, message or option."""


class RemotingError(RocketqError):
    """A transport failure: connect, send or timeout. Always retriable."""

    retriable = True

    def __init__(self, message: str, *, addr: str | None = None) -> None:
        super().__init__(message if addr is None else f"{message} [{addr}]")
        self.addr = addr


class ConnectError(RemotingError):
    """The connection to an address could not be made or was lost."""


class SendRequestError(RemotingError):
    """The request could not be written to the connection."""


class RequestTimeoutError(RemotingError):
    """No response arrived in time (``RemotingTimeoutException``).

    Contract: a request that timed out may still have been executed by the server; in
    particular a send that timed out may have been stored.
    """


class ClientError(RocketqError):
    """A client-side failure that is not a broker answer (``MQClientException``)."""


class BrokerError(RocketqError):
    """A broker or name server answered with an error code (``MQBrokerException``)."""

    def __init__(self, code: int, remark: str | None, *, addr: str | None = None) -> None:
        self.code = code
        self.remark = remark
        self.addr = addr
        where = f" [{addr}]" if addr else ""
        super().__init__(f"CODE: {code} DESC: {remark or ''}{where}")
        self.retriable = is_retriable_code(code)
