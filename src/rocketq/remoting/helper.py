"""Pure helpers of the remoting floor, shared by its client and server (Java's ``RemotingHelper``).

Mirrors ``org.apache.rocketmq.remoting.common.RemotingHelper`` / ``RemotingUtil`` and the
request-id counter of ``RemotingCommand``: address parsing and formatting, the remark of a
SYSTEM_ERROR answer, the answers the machinery writes itself, and the opaque counter.
No sockets, no threads: importable from every floor above ``protocol/``.
"""

from __future__ import annotations

import itertools
from typing import Final

from rocketq.errors import IllegalArgumentError, ProtocolError
from rocketq.protocol.codes import ResponseCode, SerializeType
from rocketq.protocol.frame import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand

__all__ = [
    "RequestIdCounter",
    "answer_frame",
    "exception_desc",
    "host_addr_to_string",
    "machinery_response",
    "parse_addr",
]

_INT32_SPAN: Final = 1 << 32
_INT32_MIN: Final = -(1 << 31)


class RequestIdCounter:
    """``RemotingCommand.requestId``: an ``AtomicInteger`` from 0 that wraps to
    ``Integer.MIN_VALUE``; one per remoting client and per server (thread-safe under the GIL:
    ``itertools.count`` advances atomically)."""

    def __init__(self, start: int = 0) -> None:
        self._count = itertools.count(start)

    def next(self) -> int:
        """The next opaque, within int32."""
        return (next(self._count) - _INT32_MIN) % _INT32_SPAN + _INT32_MIN


def parse_addr(addr: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``) -> ``(host, port)`` (``RemotingHelper.string2SocketAddress``)."""
    host, sep, port_text = addr.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise IllegalArgumentError(f"address {addr!r} is not host:port")
    port = int(port_text)
    if not 0 < port < 65536:
        raise IllegalArgumentError(f"address {addr!r} has an invalid port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def host_addr_to_string(host: tuple[str, int]) -> str:
    """``(ip, port)`` -> ``"ip:port"``, ``"[v6]:port"`` for IPv6: a store host or an offsetMsgId's
    address as a broker address to connect to, which :func:`parse_addr` reads back. (Java's
    ``RemotingUtil.socketAddress2String`` writes IPv6 without brackets; compare addresses as
    parsed ``(host, port)`` pairs, not as strings.)"""
    ip, port = host
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def exception_desc(exc: BaseException) -> str:
    """Remark for a SYSTEM_ERROR answer, like Java's ``RemotingHelper.exceptionSimpleDesc``
    (``Throwable.toString()``: the class name, then ``": message"`` when there is one)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def machinery_response(request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    """An answer the remoting machinery writes itself (no processor, or one that failed;
    the server's [REJECTREQUEST] too), on the client and the server side alike."""
    # RemotingCommand.createResponseCommand: written in the *default* serialize type (JSON),
    # not the request's: only the processor-callback path copies the request's type
    # (NettyRemotingAbstract.processRequestCommand, 4.9.x).
    return RemotingCommand(
        code=code,
        flag=FLAG_RESPONSE,
        opaque=request.opaque,
        remark=remark,
        serialize_type=SerializeType.JSON,
    )


def answer_frame(request: RemotingCommand, outcome: RemotingCommand | Exception | None) -> bytes | None:
    """The frame answering a request the other side sent, from its handler's ``outcome`` (an
    answer, the exception it raised, or ``None`` for no answer); ``None`` when nothing is
    written (a oneway request, or no answer). ``NettyRemotingAbstract.processRequestCommand``:
    the callback sets the opaque, the response flag and the request's serialize type; a failed
    handler is answered SYSTEM_ERROR; an answer that cannot be encoded too. Shared by the
    blocking and the asyncio remoting clients."""
    if request.flag & FLAG_ONEWAY or outcome is None:
        return None
    if isinstance(outcome, Exception):
        response = machinery_response(request, ResponseCode.SYSTEM_ERROR, exception_desc(outcome))
    else:
        response = outcome
        response.opaque = request.opaque
        response.flag |= FLAG_RESPONSE
        response.serialize_type = request.serialize_type
    try:
        return response.encode()
    except ProtocolError as exc:
        return machinery_response(request, ResponseCode.SYSTEM_ERROR, exception_desc(exc)).encode()
